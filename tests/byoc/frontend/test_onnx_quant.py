"""Quantized ONNX (QDQ and QLinear*) against onnxruntime, bit for bit where its integer kernels run.

onnxruntime requantizes in float32 (round half to even); the importer emits ``rounding="ONNX"`` qnn ops that
reproduce those kernels (``byoc.quant.onnxrt``). The one op whose onnxruntime kernel is not reproduced is
QLinearSoftmax (a lookup-table exp in float): the importer runs Softmax in float between qnn.dequantize and
qnn.quantize, and ``test_qdq_softmax_deviation_is_bounded`` bounds the difference at one quantization step.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.errors import ModelError
from byoc.frontend import from_onnx
from byoc.ir.expr import Call
from byoc.ir.traversal import post_order
from byoc.quant import onnxrt

from onnx_models import (cnn, make_model, ort_fused_op_types, ort_run, quantize_qdq,
                         scale_init as _sc, value_info as _vi, zp_init as _zp)

pytest.importorskip("onnxruntime")


def _host_has_fma() -> bool:
    # MLAS's QLinearAdd uses fused multiply-adds on AVX2/FMA hosts (what byoc.quant.onnxrt reproduces); on
    # SSE2-only hosts it multiplies and adds separately, which can move a rounding tie by one unit.
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return " avx2" in flags and " fma" in flags


def _ops(mod) -> list[str]:
    return [n.op.name for n in post_order(mod["main"]) if isinstance(n, Call) and hasattr(n.op, "name")]


def _inputs(n, seed=11, scale=1.2):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, scale, (1, 3, 16, 16)).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("output, fused", [
    ("c3", ["QLinearConv"]),
    ("logits", ["QLinearConv", "QLinearGlobalAveragePool", "QGemm"]),
])
def test_qdq_cnn_bit_exact(tmp_path, per_channel, output, fused):
    q = quantize_qdq(cnn(batch_norm=False, output=output), tmp_path, per_channel)
    executed = ort_fused_op_types(q, tmp_path)
    for op in fused:  # onnxruntime really ran its integer kernels for these groups
        assert op in executed
    mod, _ = from_onnx(q)
    for x in _inputs(6):
        ref = ort_run(q, {"x": x})[0]
        got = byoc.evaluate(mod, {"x": x})[0]
        np.testing.assert_array_equal(got, ref)
    # The residual conv and add run in float inside onnxruntime (their DQ inputs fan out); the integer IR
    # agrees with that float path as well on these inputs, and with onnxruntime's unoptimized QDQ graph.
    x = _inputs(1, seed=12)[0]
    np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ort_run(q, {"x": x}, optimize=False)[0])


def test_qdq_cnn_imports_to_tflite_style_qnn_chains(tmp_path):
    q = quantize_qdq(cnn(batch_norm=False, output="logits"), tmp_path, per_channel=True)
    mod, _ = from_onnx(q)
    nodes = [n for n in post_order(mod["main"]) if isinstance(n, Call)]
    ops = [n.op.name for n in nodes]
    assert ops.count("qnn.conv2d") == 4 and ops.count("qnn.dense") == 1
    assert "nn.conv2d" not in ops and "nn.dense" not in ops and "qnn.dequantize" not in ops[:-1]
    for n in nodes:  # every conv feeds bias_add → requantize(ONNX), in NCHW/OIHW
        if n.op.name == "qnn.requantize":
            assert n.attrs.rounding == "ONNX"
        if n.op.name == "qnn.conv2d":
            assert (n.attrs.data_layout, n.attrs.kernel_layout) == ("NCHW", "OIHW")
    chains = [(a.op.name, b.op.name) for b in nodes for a in b.args[:1] if isinstance(a, Call)]
    assert chains.count(("qnn.conv2d", "nn.bias_add")) == 4
    assert chains.count(("nn.bias_add", "qnn.requantize")) == 5
    # the residual Add is an integer qnn.add (on onnxruntime's uint8 view, q + 128 by a cast, where its S8→U8
    # rewrite makes the group uint8: ort_u8_view)
    assert any(b == "qnn.add" and a in ("qnn.requantize", "nn.max_pool2d", "cast") for a, b in chains)


def test_qdq_softmax_is_fused_like_onnxruntime_and_exact(tmp_path):
    # onnxruntime fuses DQ → Softmax → Q into QLinearSoftmax; the importer folds it into qnn.softmax(ONNX)
    q = quantize_qdq(cnn(batch_norm=False), tmp_path, per_channel=False, exclude=())
    assert "QLinearSoftmax" in ort_fused_op_types(q, tmp_path)
    mod, _ = from_onnx(q)
    assert "qnn.softmax" in _ops(mod) and "nn.softmax" not in _ops(mod)
    exe = byoc.build(mod, "llvm")
    for x in _inputs(8):
        ref = ort_run(q, {"x": x})[0]
        np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ref)
        np.testing.assert_array_equal(exe.run({"x": x})[0], ref)


def test_qdq_bn_relu_model_runs_in_float_where_onnxruntime_does(tmp_path):
    # BatchNormalization has no QDQ kernel: DQ → BN → Q stays float in both.
    q = quantize_qdq(cnn(batch_norm=True, output="dwc"), tmp_path, per_channel=False)
    mod, _ = from_onnx(q)
    assert "nn.batch_norm" in _ops(mod)
    for x in _inputs(3):
        np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ort_run(q, {"x": x})[0])


# ------------------------------------------------------------------------------------------ QLinear* ops


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_binary_exhaustive(op, dtype):
    rng = np.random.default_rng(21)
    info = np.iinfo(dtype)
    vals = np.arange(info.min, info.max + 1)
    a = np.repeat(vals, 256).reshape(1, 256, 256).astype(dtype)
    b = np.tile(vals, 256).reshape(1, 256, 256).astype(dtype)
    tt = TP.INT8 if dtype == "int8" else TP.UINT8
    for _ in range(4):
        sa, sb, sc = rng.uniform(0.002, 0.08, 3)
        za, zb, zc = rng.integers(info.min, info.max + 1, 3)
        inits = [_sc("sa", sa), _zp("za", za, dtype), _sc("sb", sb), _zp("zb", zb, dtype), _sc("sc", sc),
                 _zp("zc", zc, dtype)]
        node = h.make_node(op, ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["y"], domain="com.microsoft")
        model = make_model([node], [_vi("a", a.shape, tt), _vi("b", b.shape, tt)], [_vi("y", a.shape, tt)],
                           inits, ms=True)
        mod, _ = from_onnx(model)
        assert _ops(mod) == ["qnn.add" if op == "QLinearAdd" else "qnn.mul"]
        got = byoc.evaluate(mod, {"a": a, "b": b})[0]
        ref = ort_run(model, {"a": a, "b": b}, optimize=False)[0]
        if op == "QLinearMul" or _host_has_fma():
            np.testing.assert_array_equal(got, ref)
        else:  # pragma: no cover - depends on the host CPU
            diff = np.abs(got.astype(np.int32) - ref.astype(np.int32))
            assert diff.max() <= 1 and np.mean(diff > 0) < 1e-3


@pytest.mark.parametrize("dtype, per_channel, group", [("uint8", False, 1), ("int8", True, 1), ("int8", True, 4),
                                                       ("uint8", True, 2)])
def test_qlinear_conv(dtype, per_channel, group):
    rng = np.random.default_rng(31)
    tt = TP.INT8 if dtype == "int8" else TP.UINT8
    info = np.iinfo(dtype)
    cout, cin = 8, 4
    w = rng.integers(-127, 128, (cout, cin // group, 3, 3)).astype(np.int8)
    ws = rng.uniform(0.002, 0.02, cout if per_channel else 1).astype(np.float32)
    bias = rng.integers(-3000, 3000, cout).astype(np.int32)
    inits = [_sc("xs", 0.05), _zp("xz", (info.min + info.max) // 2 + 7, dtype), nh.from_array(w, "w"),
             nh.from_array(ws, "ws"), nh.from_array(np.zeros(ws.shape, np.int8), "wz"), _sc("ys", 0.11),
             _zp("yz", info.min + 20, dtype), nh.from_array(bias, "b")]
    node = h.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                       pads=[1, 0, 2, 1], strides=[2, 1], group=group)
    model = make_model([node], [_vi("x", [2, cin, 9, 7], tt)], [_vi("y", None, tt)], inits)
    x = rng.integers(info.min, info.max + 1, (2, cin, 9, 7)).astype(dtype)
    mod, _ = from_onnx(model)
    assert _ops(mod) == ["qnn.conv2d", "nn.bias_add", "qnn.requantize"]
    np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ort_run(model, {"x": x})[0])


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qlinear_matmul_and_global_avg_pool(dtype):
    rng = np.random.default_rng(41)
    tt = TP.INT8 if dtype == "int8" else TP.UINT8
    info = np.iinfo(dtype)
    b = rng.integers(-127, 128, (12, 5)).astype(np.int8)
    inits = [_sc("as", 0.04), _zp("az", info.min + 100, dtype), nh.from_array(b, "b"), _sc("bs", 0.01),
             _zp("bz", 0, np.int8), _sc("ys", 0.2), _zp("yz", info.min + 60, dtype),
             _sc("gs", 0.07), _zp("gz", info.min + 9, dtype)]
    nodes = [h.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["m"]),
             h.make_node("QLinearGlobalAveragePool", ["img", "as", "az", "gs", "gz"], ["g"],
                         domain="com.microsoft", channels_last=0)]
    model = make_model(nodes, [_vi("a", [2, 3, 12], tt), _vi("img", [1, 5, 6, 7], tt)],
                       [_vi("m", None, tt), _vi("g", None, tt)], inits, ms=True)
    feeds = {"a": rng.integers(info.min, info.max + 1, (2, 3, 12)).astype(dtype),
             "img": rng.integers(info.min, info.max + 1, (1, 5, 6, 7)).astype(dtype)}
    mod, _ = from_onnx(model)
    got = byoc.evaluate(mod, feeds)
    for g, r in zip(got, ort_run(model, feeds)):
        np.testing.assert_array_equal(g, r)


def test_quantize_linear_rounds_half_to_even_like_onnxruntime():
    s = np.float32(0.25)
    x = (np.arange(-600, 600, dtype=np.float32) * np.float32(0.125))  # many exact .5 ties of x / s
    model = make_model([h.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])], [_vi("x", x.shape, TP.FLOAT)],
                       [_vi("y", x.shape, TP.INT8)], [_sc("s", s), _zp("z", 3, np.int8)])
    mod, _ = from_onnx(model)
    got = byoc.evaluate(mod, {"x": x})[0]
    np.testing.assert_array_equal(got, ort_run(model, {"x": x})[0])
    assert got[np.where(x == np.float32(0.125))[0][0]] == 3  # 0.5 rounds to 0, not away from zero


def test_fma_f32_is_a_single_rounding():
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, 4000).astype(np.float32)
    b = rng.uniform(-3, 3, 4000).astype(np.float32)
    c = (rng.uniform(-300, 300, 4000) * (2.0 ** rng.integers(-40, 5, 4000))).astype(np.float32)
    got = onnxrt.fma_f32(a, b, c)
    for i in range(0, 4000, 7):  # exact rational arithmetic, then one round-to-nearest-even to float32
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        lo = np.float32(float(exact))
        cands = [lo, np.nextafter(lo, np.float32(-np.inf)), np.nextafter(lo, np.float32(np.inf))]
        best = min(cands, key=lambda v: (abs(Fraction(float(v)) - exact), int(v.view(np.int32)) & 1))
        assert got[i] == best, (a[i], b[i], c[i])


def test_quantized_errors_name_the_node():
    w = nh.from_array(np.ones((2, 2, 3, 3), np.int8), "w")
    inits = [_sc("xs", 0.1), _zp("xz", 0, np.int8), w, _sc("ws", [0.1, 0.2, 0.3]), _zp("wz", [0, 0, 0], np.int8),
             _sc("ys", 0.1), _zp("yz", 0, np.int8)]
    node = h.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qc")
    model = make_model([node], [_vi("x", [1, 2, 5, 5], TP.INT8)], [_vi("y", None, TP.INT8)], inits)
    with pytest.raises(ModelError, match="'qc'.*3 weight scales for 2 output channels"):
        from_onnx(model)
    bad = make_model([h.make_node("QuantizeLinear", ["x", "s"], ["y"], name="q")], [_vi("x", [4], TP.FLOAT)],
                     [_vi("y", [4], TP.UINT8)], [_sc("s", -1.0)])
    with pytest.raises(ModelError, match="'q'.*positive"):
        from_onnx(bad)
    dyn = make_model([h.make_node("QuantizeLinear", ["x", "x"], ["y"], name="qd")], [_vi("x", [4], TP.FLOAT)],
                     [_vi("y", [4], TP.UINT8)], [])
    with pytest.raises(ModelError, match="'qd'.*scale of shape \\[4\\] must be a scalar"):
        from_onnx(dyn)
