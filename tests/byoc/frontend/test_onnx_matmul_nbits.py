"""DequantizeLinear(constant weight) → MatMul / Gemm: onnxruntime (ORT_ENABLE_ALL, x86) rewrites some of these
into com.microsoft MatMulNBits, which quantizes the float activation to int8 per block of 32 inside the kernel;
byoc does not reproduce that kernel and must refuse exactly those nodes (never run them as a plain float
MatMul, a silent wrong answer), and run the others as onnxruntime does. The oracle for "rewritten" is
onnxruntime's own optimized graph (``SessionOptions.optimized_model_filepath``)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.errors import UnsupportedOpsError
from byoc.frontend import from_onnx

ort = pytest.importorskip("onnxruntime")

_RNG = np.random.default_rng(0)
_W8 = _RNG.integers(-128, 128, (16, 4)).astype(np.int8)
_W8T = _RNG.integers(-128, 128, (4, 16)).astype(np.int8)
_WU8 = _RNG.integers(0, 256, (16, 4)).astype(np.uint8)
_W16 = _RNG.integers(-300, 300, (16, 4)).astype(np.int16)
_B = _RNG.normal(size=4).astype(np.float32)


def _t(name, arr):
    return nh.from_array(np.asarray(arr), name)


def _dq(axis=None, zp=True, **kw):
    attrs = {} if axis is None else {"axis": axis}
    return h.make_node("DequantizeLinear", ["w", "ws", "wz"] if zp else ["w", "ws"], ["wf"], **attrs, **kw)


def _act(t, npt):
    """x → QuantizeLinear(t) → DequantizeLinear, the activation also read by a Relu (a fanned-out tensor, as in a
    residual stream: onnxruntime's S8→U8 rewrite leaves it int8)."""
    return ([h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"]), h.make_node("Relu", ["xf"], ["r"]),
             h.make_node("ReduceSum", ["r"], ["rf"], keepdims=1)],
            [_t("xs", np.float32(0.02)), _t("xz", npt(0))])


def _cases():
    w8 = [_t("w", _W8), _t("ws", np.float32(0.01)), _t("wz", np.int8(0))]
    mm = h.make_node("MatMul", ["x", "wf"], ["y"])
    c = {
        "float_x": ([_dq(), mm], w8, [8, 16]),
        "float_x_3d": ([_dq(), mm], w8, [2, 8, 16]),
        "no_zero_point": ([_dq(zp=False), mm], w8[:2], [8, 16]),
        "uint8_weight": ([_dq(), mm], [_t("w", _WU8), _t("ws", np.float32(0.01)), _t("wz", np.uint8(128))], [8, 16]),
        "per_column": ([_dq(axis=1), mm], [_t("w", _W8), _t("ws", np.full(4, 0.01, np.float32)),
                                           _t("wz", np.zeros(4, np.int8))], [8, 16]),
        # not rewritten: per-row scales (axis 0), axis -1, a [1]-shaped scale, an int16 weight, a shared weight
        "per_row": ([_dq(axis=0), mm], [_t("w", _W8), _t("ws", np.full(16, 0.01, np.float32)),
                                        _t("wz", np.zeros(16, np.int8))], [8, 16]),
        "axis_minus_1": ([_dq(axis=-1), mm], [_t("w", _W8), _t("ws", np.full(4, 0.01, np.float32)),
                                              _t("wz", np.zeros(4, np.int8))], [8, 16]),
        "scale_shape_1": ([_dq(), mm], [_t("w", _W8), _t("ws", np.array([0.01], np.float32)),
                                        _t("wz", np.array([0], np.int8))], [8, 16]),
        "int16_weight": ([_dq(), mm], [_t("w", _W16), _t("ws", np.float32(0.01)), _t("wz", np.int16(0))], [8, 16]),
        "shared_weight": ([_dq(), h.make_node("MatMul", ["x", "wf"], ["m1"]), h.make_node("MatMul", ["x", "wf"], ["m2"]),
                           h.make_node("Sub", ["m1", "m2"], ["y"])], w8, [8, 16]),
        "gemm_bias": ([_dq(), h.make_node("Gemm", ["x", "wf", "b"], ["y"])], w8 + [_t("b", _B)], [8, 16]),
        "gemm_no_bias": ([_dq(), h.make_node("Gemm", ["x", "wf"], ["y"])], w8, [8, 16]),
        "gemm_transB": ([_dq(), h.make_node("Gemm", ["x", "wf", "b"], ["y"], transB=1)],
                        [_t("w", _W8T)] + w8[1:] + [_t("b", _B)], [8, 16]),
        "gemm_alpha": ([_dq(), h.make_node("Gemm", ["x", "wf", "b"], ["y"], alpha=0.5)], w8 + [_t("b", _B)], [8, 16]),
    }
    for t, npt in (("int8", np.int8), ("uint8", np.uint8), ("int16", np.int16), ("uint16", np.uint16)):
        nodes, inits = _act(t, npt)
        c[f"qdq_{t}_activation"] = (nodes + [_dq(), h.make_node("MatMul", ["xf", "wf"], ["m"]),
                                             h.make_node("Add", ["m", "rf"], ["y"])], w8 + inits, [8, 4])
    return c


CASES = _cases()


def _model(nodes, inits, shape):
    out_shape = [8, 4] if shape != [2, 8, 16] else [2, 8, 4]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, shape)],
                     [h.make_tensor_value_info("y", TP.FLOAT, out_shape)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    return m


@pytest.mark.parametrize("case", sorted(CASES))
def test_matmul_nbits_rewrite_is_refused_exactly_where_onnxruntime_applies_it(tmp_path, case):
    nodes, inits, shape = CASES[case]
    if case.startswith("qdq_"):
        shape = [8, 16]
    m = _model(nodes, inits, shape)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    rewritten = any(n.op_type == "MatMulNBits" for n in onnx.load(tmp_path / "opt.onnx").graph.node)
    if rewritten:
        with pytest.raises(UnsupportedOpsError, match="MatMulNBits") as e:
            from_onnx(m)
        assert "MatMul" in str(e.value) or "Gemm" in str(e.value)
        return
    mod, _ = from_onnx(m)
    x = np.random.default_rng(1).normal(0, 1, shape).astype(np.float32)
    ref = sess.run(None, {"x": x})[0]
    np.testing.assert_allclose(byoc.evaluate(mod, {"x": x})[0], ref, rtol=1e-5, atol=1e-5)


def test_16bit_qdq_mlp_is_refused_naming_every_rewritten_node(tmp_path):
    # before: imported and ran as float MatMuls; 95 of 96 outputs differed from onnxruntime, silently
    from onnx_ort_nets import NETS, quantize
    for act, weight in (("int16", "int8"), ("uint16", "uint8")):
        q = quantize(NETS["mlp_skip"](), tmp_path, act=act, weight=weight)
        matmuls = [n.name or n.output[0] for n in q.graph.node if n.op_type == "MatMul"]
        with pytest.raises(UnsupportedOpsError) as e:
            from_onnx(q)
        assert f"{len(matmuls)} MatMul/Gemm node(s)" in str(e.value)
        assert all(name in str(e.value) for name in matmuls)
