"""Quantized LOGISTIC / TANH / SOFTMAX / HARD_SWISH / LEAKY_RELU / MEAN import in the op forms TVM's TFLite
frontend emitted (read from apache/tvm 21095b98bb python/tvm/relay/frontend/tflite.py: convert_logistic,
convert_tanh, convert_softmax, convert_hard_swish, convert_leaky_relu, _convert_reduce), and every executor still
computes LiteRT's reference kernels (BUILTIN_REF) bit for bit: the reference interpreter, the LLVM CPU build and
the NPU simulator run the intact chain as its exact integer op (byoc/transform/canonicalize_qnn.py). A chain
broken apart computes its float ops."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc.frontend import from_tflite
from byoc.ir.expr import Call, Op
from byoc.ir.traversal import post_order
from byoc.testing import TFLiteWriter
from byoc.transform.canonicalize_qnn import CanonicalizeQnnChains

from tflite_oracles import litert_run

# The op sequence TVM's frontend emitted for each quantized operator (post order), and byoc's exact integer op.
TVM_FORMS = {
    "LOGISTIC": (["qnn.dequantize", "sigmoid", "qnn.quantize"], "qnn.sigmoid"),
    "TANH": (["qnn.dequantize", "tanh", "qnn.quantize"], "qnn.tanh"),
    "SOFTMAX": (["qnn.dequantize", "nn.softmax", "qnn.quantize"], "qnn.softmax"),
    "HARD_SWISH": (["qnn.dequantize", "add", "clip", "multiply", "divide", "qnn.quantize"], "qnn.hardswish"),
    "LEAKY_RELU": (["qnn.dequantize", "nn.leaky_relu", "qnn.quantize"], "qnn.leaky_relu"),
    "MEAN": (["cast", "mean", "qnn.requantize"], "qnn.mean"),
}


def _model(opcode: str, dtype: str = "int8", shape=(1, 6, 5, 8)) -> bytes:
    w = TFLiteWriter()
    zp = -3 if dtype == "int8" else 125
    x = w.input("x", shape, dtype, scale=0.06, zero_point=zp)
    y = {"LOGISTIC": lambda: w.logistic(x), "TANH": lambda: w.tanh(x), "SOFTMAX": lambda: w.softmax(x),
         "HARD_SWISH": lambda: w.hard_swish(x, out_scale=0.05, out_zp=zp + 4),
         "LEAKY_RELU": lambda: w.leaky_relu(x, 0.3, out_scale=0.04, out_zp=zp - 5),
         "MEAN": lambda: w.mean(x, [1, 2], keep_dims=True, out_scale=0.03, out_zp=zp + 1)}[opcode]()
    w.output(y)
    return w.finish()


def _ops(expr) -> list[str]:
    return [n.op.name for n in post_order(expr) if isinstance(n, Call) and isinstance(n.op, Op)]


def _full_range(dtype: str, shape) -> np.ndarray:
    info = np.iinfo(dtype)
    v = np.arange(int(np.prod(shape))) % (int(info.max) - int(info.min) + 1) + int(info.min)
    return v.astype(dtype).reshape(shape)


@pytest.mark.parametrize("opcode", sorted(TVM_FORMS))
def test_each_operator_imports_as_tvms_op_sequence(opcode):
    mod, _ = from_tflite(_model(opcode))
    want, _ = TVM_FORMS[opcode]
    assert _ops(mod["main"].body) == want
    text = mod.astext()
    for op in want:
        assert f"{op}(" in text
    end = mod["main"].body
    assert end.attrs.out_dtype == "int8"
    if opcode == "HARD_SWISH":  # x · clip(x + 3, 0, 6) / 6 with the dequantized x read twice
        div = end.args[0]
        mul = div.args[0]
        clip = mul.args[1]
        assert float(div.args[1].data) == 6.0 and float(clip.args[0].args[1].data) == 3.0
        assert (clip.attrs.a_min, clip.attrs.a_max) == (0.0, 6.0) and clip.args[0].args[0] is mul.args[0]
    if opcode == "LEAKY_RELU":
        assert end.args[0].attrs.alpha == pytest.approx(0.3)
    if opcode == "SOFTMAX":
        assert end.args[0].attrs.axis == -1
    if opcode == "MEAN":
        assert tuple(end.args[0].attrs.axis) == (1, 2) and end.args[0].attrs.keepdims
        assert end.args[0].args[0].attrs.dtype == "int32"


@pytest.mark.parametrize("opcode", sorted(TVM_FORMS))
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_interpreter_and_cpu_build_equal_litert_on_every_input_value(opcode, dtype):
    shape = (1, 8, 4, 8)
    data = _model(opcode, dtype, shape)
    mod, params = from_tflite(data)
    x = _full_range(dtype, shape)
    (ref,), _ = litert_run(data, [x])
    got = byoc.evaluate(mod, {"x": x}, params)[0]
    assert got.dtype == ref.dtype and np.array_equal(got, ref), int(np.count_nonzero(got != ref))
    cpu = byoc.build(mod, target="llvm", params=params).run({"x": x})[0]
    assert np.array_equal(cpu, ref), int(np.count_nonzero(cpu != ref))


def test_canonicalize_turns_each_intact_chain_into_the_integer_op():
    for opcode, (_, integer) in TVM_FORMS.items():
        mod, _ = from_tflite(_model(opcode))
        assert _ops(CanonicalizeQnnChains()(mod)["main"].body) == [integer], opcode


def test_a_broken_chain_evaluates_its_float_ops():
    """A user pass that drops the kernel attribute (or rewrites the middle) leaves float ops: the result is then
    quantize(sigmoid(dequantize(x))) in float32 — not LiteRT's LUT — and nothing pretends otherwise."""
    from byoc.ir.expr import Function
    data = _model("LOGISTIC")
    mod, _ = from_tflite(data)
    main = mod["main"]
    end = main.body
    attrs = {k: v for k, v in end.attrs.items() if k not in ("kernel", "kernel_rounding")}
    broken = byoc.IRModule.from_expr(Function(main.params, Call(end.op, end.args, attrs, end.span)))
    assert _ops(CanonicalizeQnnChains()(broken)["main"].body) == ["qnn.dequantize", "sigmoid", "qnn.quantize"]
    x = _full_range("int8", (1, 6, 5, 8))
    got = byoc.evaluate(broken, {"x": x})[0]
    f = (np.float32(0.06) * (x.astype(np.float32) + 3)).astype(np.float32)   # dequantize (zp −3)
    s = (1 / (1 + np.exp(-f.astype(np.float64)))).astype(np.float32)
    want = np.clip(np.sign(s / np.float32(1 / 256)) * np.floor(np.abs(s / np.float32(1 / 256)) + 0.5) - 128,
                   -128, 127).astype(np.int8)
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1   # the float path (exp rounding aside)
    (ref,), _ = litert_run(data, [x])
    assert np.array_equal(byoc.evaluate(mod, {"x": x})[0], ref)


def test_tflm_semantics_carries_tflite_micros_fixed_point_kernel():
    pytest.importorskip("tflite_micro")
    from tflite_oracles import tflm_run
    for opcode in ("LOGISTIC", "TANH"):
        data = _model(opcode, shape=(1, 8, 4, 8))
        mod, params = from_tflite(data, semantics="tflm")
        assert mod["main"].body.attrs.kernel_rounding == "TFLM"
        x = _full_range("int8", (1, 8, 4, 8))
        ref = tflm_run(data, [x])[0]
        assert np.array_equal(byoc.evaluate(mod, {"x": x}, params)[0], ref), opcode


@pytest.mark.parametrize("target, opcodes", [("npu", ("LOGISTIC", "TANH", "MEAN")),
                                             ("ethos-u", ("LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU", "MEAN"))])
def test_npu_tables_offload_the_tvm_forms_and_the_simulator_is_exact(target, opcodes):
    shape = (1, 8, 4, 8)
    for opcode in opcodes:
        data = _model(opcode, "int8", shape)
        mod, params = from_tflite(data, semantics="tflm" if target == "ethos-u" else "litert")
        pmod, report = byoc.partition_for(target, mod, params, return_report=True)
        assert [p.composites for p in report.partitions] and not report.cpu_ops(), (opcode, report.cpu_ops())
        x = _full_range("int8", shape)
        ref = byoc.evaluate(mod, {"x": x}, params)[0]
        got = byoc.build(pmod, target=f"{target},llvm", params=params).run({"x": x})[0]
        assert np.array_equal(got, ref), (opcode, int(np.count_nonzero(got != ref)))
        if target == "npu":
            (lit,), _ = litert_run(data, [x])
            assert np.array_equal(got, lit), opcode


@pytest.mark.parametrize("opcode, fold_qnn", [("LOGISTIC", True), ("SOFTMAX", True), ("MEAN", True),
                                              ("MEAN", False)])
def test_fold_constant_folds_a_chain_on_a_constant_to_the_exact_kernel(opcode, fold_qnn):
    """Regression: folding op by op computed the float chain (and, without fold_qnn, folded MEAN's cast and mean
    alone, breaking the chain); the folded value must be LiteRT's."""
    from byoc.ir.expr import Constant, Function
    from byoc.transform import FoldConstant, InferType
    shape = (1, 8, 4, 8)
    data = _model(opcode, "int8", shape)
    mod, _ = from_tflite(data)
    x = _full_range("int8", shape)
    (ref,), _ = litert_run(data, [x])
    main = mod["main"]
    const = byoc.relay.const(x)
    body = byoc.ir.expr.Call(main.body.op, main.body.args, main.body.attrs, main.body.span)
    from byoc.transform.bind import bind
    folded = FoldConstant(fold_qnn=fold_qnn)(InferType()(byoc.IRModule.from_expr(
        Function([], bind(body, {main.params[0]: const})))))
    out = folded["main"].body
    assert isinstance(out, Constant) and np.array_equal(out.data, ref), opcode
