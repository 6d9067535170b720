"""Quantized ONNX models on the ``npu`` target: ONNX's float32 requantization (``qnn.requantize(rounding="ONNX")``)
runs on the simulator's float32 output stage (PPU rounding FLOAT32_HALF_EVEN, config ``ppu.float_scale``), NCHW
convolutions are converted to NHWC chains by ``partition_for``, and the partitioned build (npu_sim + LLVM) gives
onnxruntime's outputs bit for bit. Ethos-U's fixed-point output stage refuses it."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import byoc
import npu_sim
from byoc.errors import NPUError
from byoc.frontend import from_onnx
from byoc.ir.expr import Call
from byoc.ir.traversal import post_order

import onnx_ort_nets
from onnx_ort_nets import ARCHS, quantize
from onnx_ort_nets import ort_session as _sess

ort = pytest.importorskip("onnxruntime")

_MAC = ("qnn.conv2d", "qnn.dense")


def _mac_ops(mod) -> int:
    return sum(1 for gv, f in mod.items() if not f.attrs.get("Compiler")
               for n in post_order(f) if isinstance(n, Call) and getattr(n.op, "name", "") in _MAC)


def _arch(name):
    return ARCHS[name]() if name in ARCHS else getattr(onnx_ort_nets, name)()


# (arch, activation dtype, per-channel, quantized MAC layers onnxruntime runs as integer kernels, all offloaded):
# with int8 activations onnxruntime runs some convolutions as float Conv between DequantizeLinear and
# QuantizeLinear (the importer follows it: nn.conv2d, accumulation "mlas"), which stay on the CPU.
_CASES = [("mobilenet_v3_block", "uint8", False), ("mobilenet_v3_block", "uint8", True),
          ("mobilenet_v3_block", "int8", False), ("mobilenet_v3_block", "int8", True),
          ("residual", "uint8", True), ("residual", "int8", False),
          ("concat_branches", "uint8", False), ("swish", "uint8", True), ("unet_up", "uint8", False)]


@pytest.mark.parametrize("arch, act, pc", _CASES)
def test_qdq_architecture_partitions_for_npu_bit_exact(tmp_path, arch, act, pc):
    q = quantize(_arch(arch), tmp_path, fmt="QDQ", act=act, per_channel=pc)
    mod, _ = from_onnx(q)
    part = byoc.partition_for("npu", mod)
    before, left = _mac_ops(mod), _mac_ops(part)
    assert before > 0 and left < before            # quantized convolutions / dense layers went to the NPU
    if act == "uint8":
        assert left == 0                            # u8 QDQ: every one is an integer kernel, every one offloaded
    assert any(f.attrs.get("Compiler") == "npu" for _, f in part.items())
    exe_npu = byoc.build(part, target="npu,llvm")
    exe_cpu = byoc.build(mod, target="llvm")
    sess = _sess(q)
    shape = [d.dim_value for d in q.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(5)
    for _ in range(3):
        x = rng.normal(0, 1, shape).astype(np.float32)
        ref = sess.run(None, {"x": x})[0]
        np.testing.assert_array_equal(exe_npu.run({"x": x})[0], ref)
        np.testing.assert_array_equal(exe_cpu.run({"x": x})[0], ref)


def _qlinear_conv_ties() -> onnx.ModelProto:
    """A uint8 QLinearConv whose real multiplier is exactly 0.5 (x_scale·w_scale / y_scale = 1·1 / 2): every odd
    accumulator lands on a tie, which onnxruntime rounds to even."""
    rng = np.random.default_rng(0)
    w = rng.integers(100, 157, (6, 4, 3, 3)).astype(np.uint8)
    b = rng.integers(-301, 301, 6).astype(np.int32)
    inits = [helper.make_tensor("xs", TensorProto.FLOAT, [], [1.0]),
             helper.make_tensor("xz", TensorProto.UINT8, [], [120]),
             helper.make_tensor("w", TensorProto.UINT8, list(w.shape), w.reshape(-1).tolist()),
             helper.make_tensor("ws", TensorProto.FLOAT, [], [1.0]),
             helper.make_tensor("wz", TensorProto.UINT8, [], [128]),
             helper.make_tensor("ys", TensorProto.FLOAT, [], [2.0]),
             helper.make_tensor("yz", TensorProto.UINT8, [], [128]),
             helper.make_tensor("b", TensorProto.INT32, [6], b.tolist())]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "ties", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 6, 6, 6])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _acc(x, m):
    """The int32 accumulators of ``_qlinear_conv_ties`` in numpy (zero points subtracted, padding = zero point)."""
    init = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    xi = np.pad(x.astype(np.int64) - 120, ((0, 0), (0, 0), (1, 1), (1, 1)))
    w = init["w"].astype(np.int64) - 128
    out = np.zeros((1, 6, 6, 6), np.int64)
    for ky in range(3):
        for kx in range(3):
            out += np.einsum("nchw,oc->nohw", xi[:, :, ky:ky + 6, kx:kx + 6], w[:, :, ky, kx])
    return out + init["b"].astype(np.int64)[None, :, None, None]


def test_float32_output_stage_rounds_ties_to_even_like_onnxruntime():
    import onnx.numpy_helper  # noqa: F401
    m = _qlinear_conv_ties()
    mod, _ = from_onnx(m)
    part = byoc.partition_for("npu", mod)
    assert _mac_ops(part) == 0
    exe = byoc.build(part, target="npu,llvm")
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = rng.integers(0, 256, (1, 4, 6, 6)).astype(np.uint8)
        ref = _sess(m).run(None, {"x": x})[0]
        np.testing.assert_array_equal(exe.run({"x": x})[0], ref)
        # the ties are real: rounding them half away from zero would give other bytes somewhere
        acc = _acc(x, m)
        away = np.clip(np.sign(acc) * ((np.abs(acc) + 1) // 2) + 128, 0, 255)
        assert np.count_nonzero(acc % 2) > 20 and np.count_nonzero(away != ref) > 0


def test_fixed_point_configs_refuse_onnx_requantization(tmp_path):
    q = quantize(ARCHS["mobilenet_v3_block"](), tmp_path, fmt="QDQ", act="uint8")
    mod, _ = from_onnx(q)
    part = byoc.partition_for("npu", mod)
    func = next(f for _, f in part.items() if f.attrs.get("Compiler") == "npu")
    assert npu_sim.compile(func, "ethos-n78-like").commands
    with pytest.raises(NPUError, match="float_scale"):
        npu_sim.compile(func, "ethos-u55-256")
    # the ethos-u table (on the model in NHWC) says why it keeps ONNX's requantization on the CPU
    from byoc.transform.convert_layout import ConvertLayout
    from byoc.transform.pass_infra import PassContext, Sequential
    from byoc.transform.sink_layout_transform import SinkLayoutTransform
    with PassContext(opt_level=3):
        nhwc = Sequential([ConvertLayout({"qnn.conv2d": ["NHWC", "default"]}), SinkLayoutTransform()])(mod)
    _, rep = byoc.partition_for("ethos-u", nhwc, return_report=True)
    reasons = [n.reason for n in rep.cpu_ops() if n.op == "qnn.conv2d"]
    assert sum("rounding 'ONNX' is not one the NPU's fixed-point PPU implements" in r for r in reasons) >= 3
    assert all(not set(_MAC) & set(p.ops) for p in rep.partitions)


def test_program_validator_refuses_float_rounding_without_a_float_stage(tmp_path):
    import dataclasses
    from npu_sim.program import Program
    q = quantize(ARCHS["mobilenet_v3_block"](), tmp_path, fmt="QDQ", act="uint8")
    part = byoc.partition_for("npu", from_onnx(q)[0])
    func = next(f for _, f in part.items() if f.attrs.get("Compiler") == "npu")
    prog = npu_sim.compile(func, "ethos-u55-256-like")
    assert Program.from_bytes(prog.to_bytes()).commands == prog.commands
    cfg = dataclasses.replace(prog.config, ppu=dataclasses.replace(prog.config.ppu, float_scale=False))
    with pytest.raises(NPUError, match="FLOAT32_HALF_EVEN"):
        Program.from_bytes(dataclasses.replace(prog, config=cfg).to_bytes())


def test_compare_says_match_on_a_quantized_onnx_model(tmp_path, capsys):
    from byoc.cli import main as cli_main
    q = quantize(ARCHS["mobilenet_v3_block"](), tmp_path, fmt="QDQ", act="uint8", per_channel=True)
    path = tmp_path / "mnv3.onnx"
    onnx.save(q, str(path))
    rc = cli_main(["compare", str(path), "--target", "npu"])
    out = capsys.readouterr().out
    assert rc == 0 and "MATCH" in out


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dt", [TensorProto.UINT8, TensorProto.INT8])
def test_qlinear_add_and_mul_on_the_float32_stage_over_all_input_pairs(op, dt):
    """com.microsoft QLinearAdd / QLinearMul over every pair of 8-bit inputs, on the NPU, against onnxruntime."""
    npdt = np.uint8 if dt == TensorProto.UINT8 else np.int8
    zps = (131, 97, 118) if dt == TensorProto.UINT8 else (3, -31, -10)
    inits = [helper.make_tensor("sa", TensorProto.FLOAT, [], [0.0371]), helper.make_tensor("za", dt, [], [zps[0]]),
             helper.make_tensor("sb", TensorProto.FLOAT, [], [0.0213]), helper.make_tensor("zb", dt, [], [zps[1]]),
             helper.make_tensor("sc", TensorProto.FLOAT, [], [0.0459 if op == "QLinearAdd" else 0.21]),
             helper.make_tensor("zc", dt, [], [zps[2]])]
    node = helper.make_node(op, ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["c"], domain="com.microsoft")
    shape = [1, 256, 256, 1]
    g = helper.make_graph([node], "pairs", [helper.make_tensor_value_info(n, dt, shape) for n in ("a", "b")],
                          [helper.make_tensor_value_info("c", dt, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    mod, _ = from_onnx(m)
    part = byoc.partition_for("npu", mod)
    assert any(f.attrs.get("Compiler") == "npu" for _, f in part.items())
    info = np.iinfo(npdt)
    v = np.arange(info.min, info.max + 1)
    a = np.broadcast_to(v[:, None], (256, 256)).reshape(shape).astype(npdt)
    b = np.broadcast_to(v[None, :], (256, 256)).reshape(shape).astype(npdt)
    ref = _sess(m).run(None, {"a": a, "b": b})[0]
    np.testing.assert_array_equal(byoc.build(part, target="npu,llvm").run({"a": a, "b": b})[0], ref)
