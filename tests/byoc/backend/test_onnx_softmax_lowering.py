"""The CPU lowering of ``qnn.softmax(rounding="ONNX")`` (onnxruntime's QLinearSoftmax) against onnxruntime itself,
bit for bit: long rows whose float32 row sum must be taken in element order (the test shows that any other order
changes outputs), middle axes, two threads; the optimised kernel keeps the sum a scalar chain. Lowerings refuse
attribute values they do not implement instead of computing another variant's arithmetic (qnn.softmax,
qnn.requantize), and ``qnn.requantize(rounding="ONNX")`` rounds half to even in float32 as onnxruntime does.
"""
from __future__ import annotations

import dataclasses

import llvmlite.binding as llvm
import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc import relay
from byoc.errors import CodegenError, ExecutionError, IRError, TypeInferenceError

ort = pytest.importorskip("onnxruntime")

TT = {"int8": TP.INT8, "uint8": TP.UINT8}


def _ort_softmax(x, xs, ys, yz, axis):
    """onnxruntime's com.microsoft QLinearSoftmax (opset-13 semantics) on x."""
    dt = x.dtype.name
    inits = [nh.from_array(np.asarray(xs, np.float32), "xs"), nh.from_array(np.asarray(0, dt), "xz"),
             nh.from_array(np.asarray(ys, np.float32), "ys"), nh.from_array(np.asarray(yz, dt), "yz")]
    node = h.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft", axis=axis,
                       opset=13)
    vi = [h.make_tensor_value_info(n, TT[dt], list(x.shape)) for n in ("x", "y")]
    model = h.make_model(h.make_graph([node], "g", vi[:1], vi[1:], inits),
                         opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)])
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _softmax_mod(shape, dtype, xs, ys, yz, axis, rounding="ONNX"):
    x = relay.var("x", shape=shape, dtype=dtype)
    y = relay.qnn.op.softmax(x, relay.const(np.float32(xs)), relay.const(np.int32(0)), relay.const(np.float32(ys)),
                             relay.const(np.int32(yz)), axis=axis, rounding=rounding)
    return byoc.IRModule.from_expr(relay.Function([x], y))


def _orders_differ(x, xs, ys, yz, ref) -> int:
    """Outputs that change when the row sum is taken in any other order (reversed, numpy's pairwise, double)."""
    from byoc.quant import onnxrt
    info = np.iinfo(x.dtype)
    table = onnxrt.qlinear_softmax_table(xs, x.shape[-1])
    t = table[x.astype(np.int64) - x.max(-1, keepdims=True).astype(np.int64) + 255]
    k = np.float64(onnxrt.qlinear_softmax_output_scale(ys))
    sums = [np.add.accumulate(t[..., ::-1], -1, dtype=np.float32)[..., -1:], t.sum(-1, np.float32, keepdims=True),
            t.astype(np.float64).sum(-1, keepdims=True).astype(np.float32)]
    outs = [np.clip(np.rint(t * k / s.astype(np.float64)) + yz, info.min, info.max) for s in sums]
    return min(int((o != ref).sum()) for o in outs)


# ------------------------------------------------------------------------------------------ bit exactness
@pytest.mark.parametrize("dtype, seed", [("uint8", 11), ("int8", 1)])
def test_long_rows_need_the_sum_in_element_order(dtype, seed):
    # Rows of 2000 near-equal exponentials and an output scale that spreads them over ~100 steps: the last bits of
    # the float32 sum decide some roundings.
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.max - 55, info.max + 1, (64, 2000)).astype(dtype)
    xs = np.float32(0.01)
    ys = np.float32(1 / (150 * 2000 * 0.76)) if dtype == "uint8" else np.float32(1 / (240 * 2000 * 0.76))
    yz = int(info.min)
    ref = _ort_softmax(x, xs, ys, yz, 1)
    assert _orders_differ(x, xs, ys, yz, ref) > 0  # so agreement below is not luck
    mod = _softmax_mod(x.shape, dtype, xs, ys, yz, 1)
    exe = byoc.build(mod, target="llvm", num_threads=2)
    np.testing.assert_array_equal(exe.run({"x": x})[0], ref)
    np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ref)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_middle_axes_short_rows_and_saturation(dtype):
    rng = np.random.default_rng(29)
    info = np.iinfo(dtype)
    cases = [((2, 7, 3, 5), 1), ((3, 4, 6), -2), ((4, 1, 5), 1), ((2, 2), 0), ((5, 3), -1)]
    mismatches = total = 0
    for shape, axis in cases:
        for xs, ys, yz in [(0.3, 1 / 256, info.min), (0.05, 0.001, 0), (2.0, 1 / 300, 3)]:
            x = rng.integers(info.min, info.max + 1, shape).astype(dtype)
            x.reshape(-1)[::4] = info.max  # repeated maxima and dominant elements (saturating outputs)
            ref = _ort_softmax(x, xs, ys, yz, axis)
            exe = byoc.build(_softmax_mod(shape, dtype, xs, ys, yz, axis), target="llvm")
            mismatches += int((exe.run({"x": x})[0] != ref).sum())
            total += ref.size
    assert mismatches == 0, f"{mismatches} of {total} outputs differ"


def test_short_rows_with_small_output_scales_do_not_overflow():
    # T·floor(1/s_y) exceeds FLT_MAX for these rows, yet onnxruntime gives the finite quotient (150, 250): the
    # product is formed in double.
    for dtype, d, ys, expect in [("uint8", 2, 1 / 300, 150), ("uint8", 4, 0.001, 250), ("int8", 4, 0.001, 122)]:
        x = np.zeros((1, d), dtype)
        yz = -128 if dtype == "int8" else 0
        ref = _ort_softmax(x, 0.5, ys, yz, 1)
        assert ref.tolist() == [[expect] * d]
        exe = byoc.build(_softmax_mod(x.shape, dtype, 0.5, ys, yz, 1), target="llvm")
        np.testing.assert_array_equal(exe.run({"x": x})[0], ref)


def test_the_optimised_kernel_keeps_the_row_sum_a_sequential_scalar_chain():
    exe = byoc.build(_softmax_mod((4, 64), "int8", 0.1, 1 / 256, -128, 1), target="llvm")
    (text,) = exe.ir_texts.values()
    fadds = [ln for ln in text.splitlines() if " fadd float " in ln]
    assert len(fadds) == 1 and not any(f in fadds[0] for f in ("fast", "reassoc", "nnan", "contract"))
    from byoc.backend.llvm.codegen import get_codegen
    codegen = get_codegen()
    mod = llvm.parse_assembly(text)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)  # the backend's pipeline (CpuCodegen.compile_object)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(codegen.target_machine, pto)
    pb.getModulePassManager().run(mod, pb)
    opt = str(mod)
    assert "reduce.fadd" not in opt and not any(" fadd <" in ln and "float" in ln for ln in opt.splitlines())
    assert any(" fadd float " in ln for ln in opt.splitlines())


# ------------------------------------------------------------------------------------------ refusing variants
def _tamper(mod, op_name: str, **fields):
    """Give the (validated) attrs of the op's call other field values, as a future or foreign variant would."""
    from byoc.ir.expr import Call
    from byoc.ir.traversal import post_order
    (call,) = [n for n in post_order(mod["main"]) if isinstance(n, Call) and n.op.name == op_name]
    for k, v in fields.items():
        object.__setattr__(call.attrs, k, v)
    return mod


def test_softmax_lowering_refuses_a_rounding_it_does_not_implement():
    mod = _tamper(_softmax_mod((2, 8), "int8", 0.1, 1 / 256, -128, 1), "qnn.softmax", rounding="TFLM")
    with pytest.raises(CodegenError, match=r"qnn\.softmax: the CPU backend has no lowering for rounding='TFLM'"):
        byoc.build(mod, target="llvm")


def test_requantize_lowering_refuses_a_rounding_it_does_not_implement():
    x = relay.var("x", shape=(1, 8), dtype="int32")
    y = relay.qnn.op.requantize(x, relay.const(np.float32(0.5)), relay.const(np.int32(0)),
                                relay.const(np.float32(1.0)), relay.const(np.int32(0)), out_dtype="int8")
    mod = _tamper(byoc.IRModule.from_expr(relay.Function([x], y)), "qnn.requantize", rounding="DOWNWARD")
    with pytest.raises(CodegenError, match=r"qnn\.requantize: the CPU backend has no lowering for "
                                           r"rounding='DOWNWARD'"):
        byoc.build(mod, target="llvm")


def test_requantize_onnx_rounds_half_to_even_in_float32():
    # Halves: onnxruntime (MlasRequantizeOutput) gives 2 for 1.5 and 2.5; a fixed-point round-up would give 2, 3.
    x = relay.var("x", shape=(1, 64), dtype="int32")
    rng = np.random.default_rng(5)
    for si, so, zp in [(1.0, 2.0, 0), (0.75, 1.5, -3), (np.float32(0.0123), np.float32(0.1), 7)]:
        y = relay.qnn.op.requantize(x, relay.const(np.float32(si)), relay.const(np.int32(0)),
                                    relay.const(np.float32(so)), relay.const(np.int32(zp)), rounding="ONNX",
                                    out_dtype="int8")
        mod = byoc.IRModule.from_expr(relay.Function([x], y))
        xv = np.concatenate([np.arange(-31, 33, 2)[:32], rng.integers(-20000, 20000, 32)]).astype(np.int32)[None]
        ratio = np.float32(np.float32(si) / np.float32(so))
        want = np.clip(np.rint(xv.astype(np.float32) * ratio) + zp, -128, 127).astype(np.int8)
        np.testing.assert_array_equal(byoc.build(mod, target="llvm").run({"x": xv})[0], want)
        np.testing.assert_array_equal(byoc.evaluate(mod, {"x": xv})[0], want)


# ------------------------------------------------------------------------------------------ the op's contract
def test_softmax_rounding_is_validated():
    with pytest.raises(IRError, match="unknown rounding 'TFLM' for qnn.softmax"):
        _softmax_mod((2, 8), "int8", 0.1, 1 / 256, -128, 1, rounding="TFLM")
    x = relay.var("x", shape=(2, 8), dtype="int8")
    args = (x, relay.const(np.float32(0.1)), relay.const(np.int32(0)), relay.const(np.float32(1 / 256)),
            relay.const(np.int32(-128)))
    for kw, what in [(dict(out_dtype="int16"), "out_dtype"), (dict(beta=2.0), "beta")]:
        with pytest.raises(TypeInferenceError, match=f"qnn.softmax: argument '{what}' expected .*rounding ONNX"):
            relay.transform.InferType()(
                byoc.IRModule.from_expr(relay.Function([x], relay.qnn.op.softmax(*args, rounding="ONNX", **kw))))
    with pytest.raises(TypeInferenceError, match="qnn.softmax: argument 'data' expected a non-empty axis 1"):
        relay.transform.InferType()(_softmax_mod((2, 0), "int8", 0.1, 1 / 256, -128, 1))
    assert dataclasses.fields(type(relay.qnn.op.softmax(*args).attrs))[-1].default == "TFLITE"


def test_softmax_onnx_refuses_scales_without_a_finite_table_or_multiplier():
    mod = _softmax_mod((1, 4), "uint8", 0.1, 1e-39, 0, 1)
    with pytest.raises(ExecutionError, match="output scale .* has no finite float32 reciprocal"):
        byoc.evaluate(mod, {"x": np.zeros((1, 4), np.uint8)})
    with pytest.raises(CodegenError, match="output scale .* has no finite float32 reciprocal"):
        byoc.build(mod, target="llvm")
