"""Gelu (opset 20, exact and tanh forms) and Erf: float within 1e-5 of onnxruntime, and in a QDQ model
(DequantizeLinear → Gelu/Erf → QuantizeLinear, which onnxruntime runs in float, 8- and 16-bit) equal to
onnxruntime on the interpreter and the CPU backend (onnxruntime, one thread, gives the expected values)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.errors import ByocError
from byoc.frontend import from_onnx

ort = pytest.importorskip("onnxruntime")

OPS = [("Erf", {}), ("Gelu", {}), ("Gelu", {"approximate": "tanh"})]


def _run_ort(data, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _x():
    return np.random.default_rng(0).normal(0, 1.5, (2, 2048)).astype(np.float32)


@pytest.mark.parametrize("op, kw", OPS, ids=["erf", "gelu", "gelu-tanh"])
def test_float_matches_onnxruntime(op, kw):
    g = h.make_graph([h.make_node(op, ["x"], ["y"], **kw)], "g", [h.make_tensor_value_info("x", TP.FLOAT, (2, 2048))],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)])
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 20)]).SerializeToString()
    x = _x()
    ref = _run_ort(data, x)
    mod, _ = from_onnx(data)
    np.testing.assert_allclose(byoc.evaluate(mod, {"x": x})[0], ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(byoc.build(mod, target="llvm").run({"x": x})[0], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt", ["int8", "int16"])
@pytest.mark.parametrize("op, kw", OPS, ids=["erf", "gelu", "gelu-tanh"])
def test_qdq_group_matches_onnxruntime_bit_for_bit(op, kw, dt):
    npdt = np.int8 if dt == "int8" else np.int16
    k = 1.0 if dt == "int8" else 0.01
    inits = [nh.from_array(np.float32(0.02 * k), "s"), nh.from_array(npdt(3), "z"),
             nh.from_array(np.float32(0.015 * k), "s2"), nh.from_array(npdt(-2), "z2")]
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]), h.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             h.make_node(op, ["d"], ["g"], **kw), h.make_node("QuantizeLinear", ["g", "s2", "z2"], ["q2"]),
             h.make_node("DequantizeLinear", ["q2", "s2", "z2"], ["y"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, (2, 2048))],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)], inits)
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 21)]).SerializeToString()
    x = _x()
    ref = _run_ort(data, x)
    mod, _ = from_onnx(data)
    np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ref)
    np.testing.assert_array_equal(byoc.build(mod, target="llvm").run({"x": x})[0], ref)


def test_unknown_gelu_approximation_is_named():
    g = h.make_graph([h.make_node("Gelu", ["x"], ["y"], approximate="erf")], "g",
                     [h.make_tensor_value_info("x", TP.FLOAT, (4,))], [h.make_tensor_value_info("y", TP.FLOAT, None)])
    with pytest.raises(ByocError, match="Gelu approximate='erf'"):
        from_onnx(h.make_model(g, opset_imports=[h.make_opsetid("", 20)]).SerializeToString())
