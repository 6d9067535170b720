"""QDQ MatMul / Gemm with a float output (no QuantizeLinear after it): onnxruntime runs MatMulIntegerToFloat /
QGemm (float32(int32 product) · s_a·s_b), a float Gemm (after its MatMulAddFusion) or a float MatMul depending
on the element types; byoc must give the same float32 bits on the interpreter and the CPU backend. The graph
onnxruntime runs is read from its optimized model (the test asserts the kernel, so a case cannot pass by
testing another path)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.errors import ModelError
from byoc.frontend import from_onnx

ort = pytest.importorskip("onnxruntime")

K, N = 40, 6


def _build(act="uint8", weight="int8", per_column=False, tail="none", fan_out=False, op="MatMul", bias=None,
           a_shape=(8, K), fed_weight=False):
    rng = np.random.default_rng(hash((act, weight, per_column, tail, op, str(bias))) % 2**32)
    npt = {"int8": np.int8, "uint8": np.uint8}
    lo = -128 if weight == "int8" else 0
    inits = [nh.from_array(np.float32(0.0213), "xs"), nh.from_array(npt[act](3 if act == "int8" else 100), "xz")]
    if not fed_weight:
        inits.append(nh.from_array(rng.integers(lo, lo + 256, (K, N)).astype(npt[weight]), "w"))
    if per_column:
        inits += [nh.from_array(rng.uniform(.005, .02, N).astype(np.float32), "ws"),
                  nh.from_array(rng.integers(0, 5, N).astype(npt[weight]), "wz")]
    else:
        inits += [nh.from_array(np.float32(0.0137), "ws"), nh.from_array(npt[weight](2), "wz")]
    nodes = [h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"]),
             h.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=1)]
    ins = ["xf", "wf"]
    if bias == "dq_int32":
        inits += [nh.from_array(rng.integers(-500, 500, N).astype(np.int32), "bq"),
                  nh.from_array(np.float32(0.0213 * 0.0137), "bs"), nh.from_array(np.int32(0), "bz")]
        nodes.append(h.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["b"]))
    elif bias == "float":
        inits.append(nh.from_array(rng.normal(0, 1, N).astype(np.float32), "b"))
    if op == "Gemm":
        nodes.append(h.make_node("Gemm", ins + (["b"] if bias else []), ["m"]))
    else:
        nodes.append(h.make_node("MatMul", ins, ["m"]))
        if bias:
            nodes.append(h.make_node("Add", ["m", "b"], ["m2"]))
    last = "m2" if bias and op == "MatMul" else "m"
    nodes.append(h.make_node("Relu", [last], ["y"]))
    outs = [h.make_tensor_value_info("y", TP.FLOAT, None)]
    if fan_out:  # a second reader keeps the activation's int8 pair out of onnxruntime's S8→U8 rewrite
        nodes.append(h.make_node("Relu", ["xf"], ["z"]))
        outs.append(h.make_tensor_value_info("z", TP.FLOAT, None))
    inputs = [h.make_tensor_value_info("x", TP.FLOAT, a_shape)]
    if fed_weight:
        inputs.append(h.make_tensor_value_info("w", {"int8": TP.INT8, "uint8": TP.UINT8}[weight], (K, N)))
    g = h.make_graph(nodes, "g", inputs, outs, inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)], ir_version=10)


# case → (builder arguments, the kernel onnxruntime runs for the product)
CASES = {
    "u8_s8": (dict(), "MatMulIntegerToFloat"),
    "u8_u8": (dict(weight="uint8"), "MatMulIntegerToFloat"),
    "u8_s8_per_column": (dict(per_column=True), "MatMulIntegerToFloat"),
    "u8_s8_3d": (dict(a_shape=(2, 4, K)), "MatMulIntegerToFloat"),
    "s8_single_reader": (dict(act="int8"), "MatMulIntegerToFloat"),  # rewritten to uint8 by S8→U8
    "s8_fanned_out": (dict(act="int8", fan_out=True), "MatMul"),
    "matmul_add_float_bias": (dict(bias="float"), "Gemm"),
    "matmul_add_int32_bias": (dict(bias="dq_int32"), "QGemm"),
    "gemm_u8": (dict(op="Gemm"), "QGemm"),
    "gemm_s8_fanned_out": (dict(op="Gemm", act="int8", fan_out=True), "QGemm"),
    "gemm_int32_bias": (dict(op="Gemm", bias="dq_int32", per_column=True), "QGemm"),
    "gemm_float_bias": (dict(op="Gemm", bias="float"), "Gemm"),
}


def _session(model, tmp_path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess, [n.op_type for n in onnx.load(tmp_path / "opt.onnx").graph.node]


@pytest.mark.parametrize("case", sorted(CASES))
def test_qdq_matmul_with_float_output_bit_exact(tmp_path, case):
    """Before: byoc ran MatMulIntegerToFloat groups as a float MatMul (68 to 90 of 96 outputs off)."""
    kwargs, kernel = CASES[case]
    m = _build(**kwargs)
    sess, ops = _session(m, tmp_path)
    assert any(op.endswith(kernel) for op in ops), ops  # FusedGemm: Gemm + Relu
    mod, _ = from_onnx(m)
    exe = byoc.build(mod, target="llvm")
    shape = kwargs.get("a_shape", (8, K))
    for seed in range(3):
        x = np.random.default_rng(seed).normal(0, 1, shape).astype(np.float32)
        ref = sess.run(None, {"x": x})
        for name, got in (("interpreter", byoc.evaluate(mod, {"x": x})), ("CPU backend", exe.run({"x": x}))):
            for g_, r in zip(got, ref):
                assert np.array_equal(g_.view(np.int32), r.view(np.int32)), \
                    f"{name}: {int(np.sum(g_ != r))} of {r.size} differ"


def test_run_time_weight_matmul_integer_to_float_is_refused(tmp_path):
    m = _build(fed_weight=True)
    _, ops = _session(m, tmp_path)
    assert "MatMulIntegerToFloat" in ops
    with pytest.raises(ModelError, match="MatMulIntegerToFloat"):
        from_onnx(m)
