"""onnxruntime's WeightBiasQuantization: a float Conv / ConvTranspose / Gemm between a DequantizeLinear and a
QuantizeLinear gets an int8 weight and an int32 bias before it runs (byoc/frontend/onnx/ort_weight_bias.py).
Each model below is built with onnx.helper and must match onnxruntime (ORT_ENABLE_ALL, one thread) bit for bit
on the interpreter and the CPU backend; the last test shows the float parameters would not."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.frontend import from_onnx
from byoc.frontend.onnx.ort_weight_bias import apply_weight_bias_quantization

ort = pytest.importorskip("onnxruntime")


def _ort(model: bytes, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _q(name, scale, zp, dtype):
    return [nh.from_array(np.asarray(scale, np.float32), name + "_s"),
            nh.from_array(np.asarray(zp, dtype), name + "_z")]


def _model(op: str, qtype: str, tail: str = "", identity: bool = False, dq_weight: str = "", seed: int = 0):
    """x (float) → Q → DQ → op(float or DQ weight, float bias) [→ tail] → Q → DQ → y."""
    rng = np.random.default_rng(seed)
    dt = np.uint8 if qtype == "u8" else np.int8
    zx = 128 if qtype == "u8" else 0
    cin, cout = 8, 6
    if op == "Gemm":
        xshape, wshape = (4, cin), (cout, cin)
        attrs = {"transB": 1}
    elif op == "Conv":
        xshape, wshape = (1, cin, 7, 7), (cout, cin, 3, 3)
        attrs = {"pads": [1, 1, 1, 1]}
    else:
        xshape, wshape = (1, cin, 5, 5), (cin, cout, 2, 2)
        attrs = {"strides": [2, 2]}
    w = rng.normal(0, .3, wshape).astype(np.float32)
    b = rng.normal(0, .2, cout).astype(np.float32)
    inits = _q("x", 0.02, zx, dt) + _q("y", 0.05, zx, dt) + [nh.from_array(b, "b")]
    nodes = [h.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
             h.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"])]
    if dq_weight:
        ws = np.full(cout, 0.01, np.float32) if dq_weight == "pc" else np.float32(0.01)
        inits += [nh.from_array(np.clip(np.rint(w / 0.01), -127, 127).astype(np.int8), "wq"),
                  nh.from_array(ws, "ws"), nh.from_array(np.zeros(np.shape(ws), np.int8), "wz")]
        kw = {"axis": 0} if dq_weight == "pc" else {}  # Conv's output channels
        nodes.append(h.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], **kw))
    elif identity:  # the legacy exporter's shared weight
        inits.append(nh.from_array(w, "w0"))
        nodes.append(h.make_node("Identity", ["w0"], ["w"]))
    else:
        inits.append(nh.from_array(w, "w"))
    nodes.append(h.make_node(op, ["xd", "w", "b"], ["t"], **attrs))
    last = "t"
    if tail == "relu":
        nodes.append(h.make_node("Relu", ["t"], ["t2"]))
        last = "t2"
    elif tail == "reshape":
        inits.append(nh.from_array(np.array([-1], np.int64), "shp"))
        nodes.append(h.make_node("Reshape", ["t", "shp"], ["t2"]))
        last = "t2"
    elif tail == "branch":  # a second consumer: onnxruntime leaves the node alone
        nodes.append(h.make_node("Relu", ["t"], ["t3"]))
    nodes += [h.make_node("QuantizeLinear", [last, "y_s", "y_z"], ["yq"]),
              h.make_node("DequantizeLinear", ["yq", "y_s", "y_z"], ["y"])]
    outs = [h.make_tensor_value_info("y", TP.FLOAT, None)]
    if tail == "branch":
        outs.append(h.make_tensor_value_info("t3", TP.FLOAT, None))
    g = h.make_graph(nodes, "wbq", [h.make_tensor_value_info("x", TP.FLOAT, xshape)], outs, inits)
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    return model, {"x": rng.normal(0, 1, xshape).astype(np.float32)}


CASES = [("Gemm", "u8", "", True, ""), ("Gemm", "s8", "reshape", False, ""), ("Gemm", "u8", "relu", False, ""),
         ("Conv", "u8", "relu", False, ""), ("Conv", "s8", "", False, ""), ("ConvTranspose", "u8", "", False, ""),
         ("ConvTranspose", "s8", "relu", True, ""), ("Conv", "u8", "", False, "pt"), ("Conv", "u8", "", False, "pc"),
         ("Conv", "s8", "branch", False, "")]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(x or "_" for x in map(str, c)))
def test_weight_bias_quantization_matches_onnxruntime(case):
    op, qtype, tail, identity, dq_weight = case
    model, feeds = _model(op, qtype, tail, identity, dq_weight)
    data = model.SerializeToString()
    ref = _ort(data, feeds)
    mod, _ = from_onnx(data)
    got = byoc.evaluate(mod, feeds)
    got = np.asarray(got[0] if isinstance(got, (list, tuple)) else got)
    assert np.array_equal(got, ref), f"interpreter: {int(np.sum(got != ref))} of {ref.size} differ"
    cpu = byoc.build(mod, target="llvm").run(feeds)
    cpu = np.asarray(cpu[0] if isinstance(cpu, (list, tuple)) else cpu)
    assert np.array_equal(cpu, ref), f"CPU backend: {int(np.sum(cpu != ref))} of {ref.size} differ"


def test_rewrite_applies_only_where_onnxruntime_does():
    for case, applies in ((("Gemm", "u8", "", True, ""), True), (("Conv", "s8", "branch", False, ""), False),
                          (("Conv", "u8", "", False, "pt"), True)):
        model, _ = _model(*case)
        out = apply_weight_bias_quantization(model)
        names = {i.name for i in out.graph.initializer}
        assert any(n.endswith("_bias_int32") for n in names) == applies, case


def test_float_parameters_would_differ():
    """The check above can fail: running the Gemm and the ConvTranspose with their float parameters (the model
    without the rewrite, as onnxruntime's unoptimized session does) is not onnxruntime's optimized result."""
    for op in ("Gemm", "ConvTranspose"):
        model, feeds = _model(op, "u8", seed=3)
        data = model.SerializeToString()
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        plain = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        assert not np.array_equal(plain, _ort(data, feeds)), op
