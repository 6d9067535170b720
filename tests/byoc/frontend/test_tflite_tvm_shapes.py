"""The TFLite importer emits TVM's graph shapes for convolutions (CONV_2D HWIO, DEPTHWISE_CONV_2D HWOI
[KH, KW, Cin, M], HWIO for one input channel, padding inside the conv), and every executor reads them bit-exactly:
the reference interpreter and the LLVM CPU build against LiteRT's reference kernels, the npu table's depth
multiplier rule against the kernel's real multiplier."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc.frontend import from_tflite
from byoc.ir.traversal import post_order
from byoc.testing import TFLiteWriter

from tflite_oracles import litert_run


def _model(cin: int, dm: int, padding: str = "SAME"):
    rng = np.random.default_rng(cin * 10 + dm)
    w = TFLiteWriter()
    x = w.input("x", (1, 7, 6, cin), "int8", scale=0.05, zero_point=-3)
    c = w.conv2d(x, rng.integers(-127, 128, (cin, 3, 3, cin)).astype(np.int8), rng.integers(-900, 900, cin),
                 weight_scale=rng.uniform(0.002, 0.02, cin).astype(np.float32), padding=padding,
                 out_scale=0.1, out_zp=2, activation="RELU")
    y = w.depthwise_conv2d(c, rng.integers(-127, 128, (1, 3, 3, cin * dm)).astype(np.int8),
                           rng.integers(-900, 900, cin * dm),
                           weight_scale=rng.uniform(0.002, 0.02, cin * dm).astype(np.float32), padding=padding,
                           strides=(2, 2), out_scale=0.08, out_zp=-1, activation="RELU6")
    w.output(y)
    return w.finish()


def _convs(mod):
    return [n for n in post_order(mod["main"].body) if getattr(getattr(n, "op", None), "name", "") == "qnn.conv2d"]


@pytest.mark.parametrize("cin, dm", [(4, 1), (4, 3), (1, 2)])
def test_conv_shapes_are_tvms_and_every_cpu_executor_is_exact(cin, dm):
    data = _model(cin, dm)
    mod, _ = from_tflite(data)
    conv, dw = _convs(mod)
    assert conv.attrs.kernel_layout == "HWIO" and conv.args[1].data.shape == (3, 3, cin, cin)
    assert tuple(conv.attrs.padding) == (1, 1, 1, 1) and not any(
        getattr(getattr(n, "op", None), "name", "") == "nn.pad" for n in post_order(mod["main"].body))
    if cin == 1:  # TVM: one input channel is an ordinary HWIO convolution
        assert dw.attrs.kernel_layout == "HWIO" and dw.args[1].data.shape == (3, 3, 1, dm)
        assert dw.attrs.groups == 1
    else:
        assert dw.attrs.kernel_layout == "HWOI" and dw.args[1].data.shape == (3, 3, cin, dm)
        assert dw.attrs.groups == cin and dw.attrs.channels == cin * dm
    x = np.random.default_rng(7).integers(-128, 128, (1, 7, 6, cin)).astype(np.int8)
    ref, _ = litert_run(data, [x])
    name = mod["main"].params[0].name_hint
    got = byoc.evaluate(mod, {name: x})
    cpu = byoc.build(mod, target="llvm").run({name: x})
    assert got[0].tobytes() == ref[0].tobytes()
    assert np.asarray(cpu[0]).tobytes() == ref[0].tobytes()


@pytest.mark.parametrize("dm, offloaded", [(1, True), (3, False)])
def test_npu_depth_multiplier_rule_reads_tvms_depthwise_form(dm, offloaded):
    """The HWOI kernel's O axis holds Cin (not Cin·M): the rule must still see multiplier 3 and refuse it."""
    mod, params = from_tflite(_model(4, dm))
    part, report = byoc.partition_for("npu", mod, params, return_report=True)
    dw_cpu = [n for n in report.cpu_ops() if n.op == "qnn.conv2d"]
    assert (not dw_cpu) == offloaded
    if not offloaded:
        assert "found multiplier 3" in dw_cpu[0].reason
    x = np.random.default_rng(3).integers(-128, 128, (1, 7, 6, 4)).astype(np.int8)
    name = mod["main"].params[0].name_hint
    want = byoc.evaluate(mod, {name: x})[0]
    built = byoc.build(part, target="npu,llvm")
    assert np.asarray(built.run({name: x})[0]).tobytes() == want.tobytes()
