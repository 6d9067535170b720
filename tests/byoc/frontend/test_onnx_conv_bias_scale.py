"""Whether onnxruntime fuses a QDQ Conv depends on its bias: it fuses (QLinearConv, the int32 bias added as it is)
when the bias DequantizeLinear's scale is within 1.5 % of s_x · s_w, and runs the Conv in float otherwise; a bias
behind Identity nodes (torch's legacy exporter shares the zero biases of folded BatchNorms that way) is judged
the same way, since onnxruntime removes the Identity first. Models built with onnx.helper; expected values:
onnxruntime (ORT_ENABLE_ALL, one thread), interpreter and CPU backend bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.frontend import from_onnx

ort = pytest.importorskip("onnxruntime")

SX, SW = np.float32(0.02), np.float32(0.01)


def _model(scale_factor: float, identity: bool, seed=0):
    rng = np.random.default_rng(seed)
    sb = np.float32(SX * SW * np.float32(scale_factor))
    inits = [nh.from_array(SX, "sx"), nh.from_array(np.uint8(128), "zx"), nh.from_array(np.float32(0.05), "sy"),
             nh.from_array(np.uint8(128), "zy"), nh.from_array(SW, "sw"), nh.from_array(np.int8(0), "zw"),
             nh.from_array(rng.integers(-127, 128, (8, 8, 3, 3)).astype(np.int8), "wq"),
             nh.from_array(rng.integers(-3000, 3000, 8).astype(np.int32), "bq"), nh.from_array(sb, "sb"),
             nh.from_array(np.int32(0), "zb")]
    nodes = [h.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             h.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
             h.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"]),
             h.make_node("DequantizeLinear", ["bq", "sb", "zb"], ["b0"])]
    if identity:
        nodes.append(h.make_node("Identity", ["b0"], ["b"]))
    nodes += [h.make_node("Conv", ["xd", "w", "b" if identity else "b0"], ["t"], pads=[1, 1, 1, 1]),
              h.make_node("QuantizeLinear", ["t", "sy", "zy"], ["yq"]),
              h.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
    g = h.make_graph(nodes, "cb", [h.make_tensor_value_info("x", TP.FLOAT, (1, 8, 9, 9))],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)], inits)
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()
    return data, {"x": rng.normal(0, 1, (1, 8, 9, 9)).astype(np.float32)}


def _ort(data, feeds, level=None):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    if level is not None:
        so.graph_optimization_level = level
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


@pytest.mark.parametrize("factor", [1.0, 1.01, 0.99, 1.1, 0.9, 2.0])
@pytest.mark.parametrize("identity", [False, True], ids=["dq-bias", "identity-bias"])
def test_conv_fuses_by_bias_scale_as_onnxruntime(factor, identity):
    data, feeds = _model(factor, identity)
    ref = _ort(data, feeds)
    mod, _ = from_onnx(data)
    assert ("qnn.conv2d" in str(mod)) == (abs(factor - 1) < 0.015)
    got = np.asarray(byoc.evaluate(mod, feeds)[0])
    cpu = np.asarray(byoc.build(mod, target="llvm").run(feeds)[0])
    assert np.array_equal(got, ref), f"interpreter: {int(np.sum(got != ref))} of {ref.size} differ"
    assert np.array_equal(cpu, ref), f"CPU backend: {int(np.sum(cpu != ref))} of {ref.size} differ"


def test_the_two_paths_differ():
    """The check above can fail: fused (int32 bias as it is) and float results differ on these models."""
    for factor in (1.01, 1.1):
        data, feeds = _model(factor, False)
        plain = _ort(data, feeds, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        fused = _ort(data, feeds)
        assert np.array_equal(plain, fused) == (factor == 1.1)
