"""Float Erf, Gelu and LayerNormalization (what a quantized transformer keeps in float between
DequantizeLinear and QuantizeLinear) must give onnxruntime's float32 outputs bit for bit on the interpreter and
the CPU backend (byoc/ops/mlas_math.py; expected values: onnxruntime, one intra-op thread)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.frontend import from_onnx

ort = pytest.importorskip("onnxruntime")


def _run_ort(model: bytes, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)


def _model(nodes, x_shape, inits=(), opset=17, outputs=("y",)):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, x_shape)],
                     [h.make_tensor_value_info(o, TP.FLOAT, None) for o in outputs], list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)]).SerializeToString()


def _assert_bits(model: bytes, feeds, op: str):
    ref = _run_ort(model, feeds)
    mod, _ = from_onnx(model)
    assert op in str(mod)
    got = byoc.evaluate(mod, feeds)
    got = got if isinstance(got, (list, tuple)) else [got]
    cpu = byoc.build(mod, target="llvm").run(feeds)
    cpu = cpu if isinstance(cpu, (list, tuple)) else [cpu]
    for r, g, c in zip(ref, got, cpu):
        g, c = np.asarray(g), np.asarray(c)
        assert np.array_equal(g.view(np.int32), r.view(np.int32)), \
            f"interpreter: {int(np.sum(g.view(np.int32) != r.view(np.int32)))} of {r.size} differ"
        assert np.array_equal(c.view(np.int32), r.view(np.int32)), \
            f"CPU backend: {int(np.sum(c.view(np.int32) != r.view(np.int32)))} of {r.size} differ"


def _erf_inputs(n: int = 60000) -> np.ndarray:
    rng = np.random.default_rng(3)
    edges = np.array([0.0, -0.0, 0.921875, -0.921875, np.nextafter(np.float32(0.921875), np.float32(0)), 3.925,
                      -3.925, 3.9, 4.0, 12.0, -30.0, 1e-30, -1e-30, 1e30, np.inf, -np.inf], np.float32)
    return np.concatenate([rng.normal(0, 2, n).astype(np.float32), np.linspace(-5, 5, 20001, dtype=np.float32),
                           edges]).astype(np.float32)


def test_erf_matches_onnxruntime_bit_for_bit():
    x = _erf_inputs()
    _assert_bits(_model([h.make_node("Erf", ["x"], ["y"])], [x.size]), {"x": x}, "mlas_erf")


def test_gelu_matches_onnxruntime_bit_for_bit():
    x = _erf_inputs()
    _assert_bits(_model([h.make_node("Gelu", ["x"], ["y"])], [x.size], opset=20), {"x": x}, "mlas_erf")


def test_correctly_rounded_erf_would_differ():
    """The check above can fail: the correctly rounded erf (byoc's ``erf``) is not MLAS's on these inputs."""
    x = _erf_inputs()
    ref = _run_ort(_model([h.make_node("Erf", ["x"], ["y"])], [x.size]), {"x": x})[0]
    exact = np.array([math.erf(float(v)) for v in x], np.float64).astype(np.float32)
    assert int(np.sum(exact != ref)) > 1000


def _layer_norm(d: int, rows: int, bias: bool, lead=(), seed=0, axis=-1):
    rng = np.random.default_rng(seed)
    shape = (*lead, rows, d)
    x = (rng.normal(0, 3, shape) + rng.normal(0, 2, (*lead, rows, 1))).astype(np.float32)
    norm_shape = shape[axis:] if axis != -1 else (d,)
    inits = [nh.from_array(rng.normal(1, .3, norm_shape).astype(np.float32), "s")]
    ins = ["x", "s"]
    if bias:
        inits.append(nh.from_array(rng.normal(0, .3, norm_shape).astype(np.float32), "b"))
        ins.append("b")
    node = h.make_node("LayerNormalization", ins, ["y"], axis=axis, epsilon=1e-5)
    return _model([node], list(shape), inits), {"x": x}


# rows of 8 (the kernel's smallest), 8-lane blocks with tails of 1..7 (the 4-wide block, the FMA remainder),
# four-lane float64 mean tails, a transformer width
@pytest.mark.parametrize("d", [8, 9, 12, 13, 15, 16, 20, 23, 32, 64, 100])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_layer_norm_matches_onnxruntime_bit_for_bit(d, bias):
    model, feeds = _layer_norm(d, 300, bias)
    _assert_bits(model, feeds, "nn.mlas_layer_norm")


def test_layer_norm_over_two_axes_matches_onnxruntime():
    model, feeds = _layer_norm(6, 5, True, lead=(40,), axis=-2)  # 5 × 6 = 30 normalized elements per row
    _assert_bits(model, feeds, "nn.mlas_layer_norm")


def test_function_body_layer_norm_would_differ():
    """The check above can fail: ONNX's function body in float32 steps is not onnxruntime's kernel."""
    model, feeds = _layer_norm(32, 300, True)
    ref = _run_ort(model, feeds)[0]
    x = feeds["x"]
    rng = np.random.default_rng(0)
    rng.normal(0, 3, x.shape), rng.normal(0, 2, (300, 1))
    s = rng.normal(1, .3, 32).astype(np.float32)
    b = rng.normal(0, .3, 32).astype(np.float32)
    mean = x.mean(axis=-1, keepdims=True, dtype=np.float32)
    d = x - mean
    var = (d * d).mean(axis=-1, keepdims=True, dtype=np.float32)
    y = (d * (np.float32(1) / np.sqrt(var + np.float32(1e-5))) * s + b).astype(np.float32)
    assert int(np.sum(y != ref)) > 100


@pytest.mark.parametrize("d", [5, 12, 16, 17, 48, 100])
def test_softmax_matches_onnxruntime_bit_for_bit(d):
    rng = np.random.default_rng(d)
    x = rng.normal(0, 3, (200, d)).astype(np.float32)
    x[0, :] = -200.0  # exp underflows to subnormals and zero after the clamp at -103.97
    x[0, 0] = 0.0
    _assert_bits(_model([h.make_node("Softmax", ["x"], ["y"], axis=-1)], [200, d], opset=13), {"x": x},
                 "nn.mlas_softmax")


def test_softmax_opset11_flattens_the_tail():
    x = np.random.default_rng(1).normal(0, 2, (6, 4, 5)).astype(np.float32)
    _assert_bits(_model([h.make_node("Softmax", ["x"], ["y"], axis=1)], [6, 4, 5], opset=11), {"x": x},
                 "nn.mlas_softmax")


def test_exact_softmax_would_differ():
    """The check above can fail: a float64 softmax rounded once is not MLAS's on these rows."""
    x = np.random.default_rng(12).normal(0, 3, (200, 12)).astype(np.float32)
    ref = _run_ort(_model([h.make_node("Softmax", ["x"], ["y"], axis=-1)], [200, 12], opset=13), {"x": x})[0]
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert int(np.sum((e / e.sum(axis=1, keepdims=True)).astype(np.float32) != ref)) > 100


def test_softmax_on_a_middle_axis_matches_onnxruntime():
    x = np.random.default_rng(2).normal(0, 2, (3, 20, 7)).astype(np.float32)
    _assert_bits(_model([h.make_node("Softmax", ["x"], ["y"], axis=1)], [3, 20, 7], opset=13), {"x": x},
                 "nn.mlas_softmax")
