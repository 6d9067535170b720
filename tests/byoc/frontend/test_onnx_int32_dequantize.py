"""DequantizeLinear of a constant int32 tensor (a QDQ bias) is float32(q − zp) · scale in onnxruntime: the int32
rounds to float32 before the multiply. With a 16-bit activation the bias scale is tiny and |q| passes 2^24, where
one rounding (qnn.dequantize's) differs; the importer folds such a DequantizeLinear as onnxruntime computes it.
Expected values: onnxruntime (ORT_ENABLE_ALL, one thread), interpreter and CPU backend bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.frontend import from_onnx

ort = pytest.importorskip("onnxruntime")


def _model(seed=0):
    rng = np.random.default_rng(seed)
    cin, cout, hw = 16, 32, 12
    sx, sw = np.float32(1.3e-4), np.float32(2.1e-5)
    bias = rng.integers(-2 ** 28, 2 ** 28, cout).astype(np.int32)   # far above 2^24
    inits = [nh.from_array(sx, "sx"), nh.from_array(np.int16(0), "zx"),
             nh.from_array(np.float32(3e-3), "sy"), nh.from_array(np.int16(0), "zy"),
             nh.from_array(rng.integers(-127, 128, (cout, cin, 3, 3)).astype(np.int8), "wq"),
             nh.from_array(sw, "sw"), nh.from_array(np.int8(0), "zw"),
             nh.from_array(bias, "bq"), nh.from_array(np.float32(sx * sw), "sb"), nh.from_array(np.int32(0), "zb")]
    nodes = [h.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             h.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
             h.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"]),
             h.make_node("DequantizeLinear", ["bq", "sb", "zb"], ["b"]),
             h.make_node("Conv", ["xd", "w", "b"], ["t"], pads=[1, 1, 1, 1]),
             h.make_node("QuantizeLinear", ["t", "sy", "zy"], ["yq"]),
             h.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
    g = h.make_graph(nodes, "i32", [h.make_tensor_value_info("x", TP.FLOAT, (1, cin, hw, hw))],
                     [h.make_tensor_value_info("y", TP.FLOAT, None), h.make_tensor_value_info("t", TP.FLOAT, None)],
                     inits)
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 21)]).SerializeToString()
    return data, {"x": rng.normal(0, 1, (1, cin, hw, hw)).astype(np.float32)}, bias, sx * sw


def test_int32_bias_dequantize_matches_onnxruntime():
    data, feeds, _, _ = _model()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    refs = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    mod, _ = from_onnx(data)
    for got in (byoc.evaluate(mod, feeds), byoc.build(mod, target="llvm").run(feeds)):
        for r, g in zip(refs, got):
            g = np.asarray(g)
            assert np.array_equal(g.view(np.int32), r.view(np.int32)), f"{int(np.sum(g != r))} of {r.size} differ"


def test_one_rounding_would_differ():
    """The check above can fail: the single-rounding dequantization differs from onnxruntime's on this bias."""
    _, _, bias, scale = _model()
    once = (bias.astype(np.float64) * np.float64(np.float32(scale))).astype(np.float32)
    twice = (bias.astype(np.float32) * np.float32(scale)).astype(np.float32)
    assert np.any(once != twice)
