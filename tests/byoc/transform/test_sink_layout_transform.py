"""SinkLayoutTransform moves the transform back to NCHW below bias_add / requantize / clip (their axis permuted),
cancels inverse transform pairs, and leaves values unchanged (reference interpreter before and after)."""
from __future__ import annotations

import numpy as np

import byoc
from byoc import relay
from byoc.ir.expr import Call, Op
from byoc.ir.traversal import post_order
from byoc.transform.convert_layout import ConvertLayout
from byoc.transform.sink_layout_transform import SinkLayoutTransform


def _chain():
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(1, 3, 6, 6), dtype="uint8")
    w = relay.const(rng.integers(0, 256, (4, 3, 3, 3)).astype("uint8"))
    y = relay.qnn.op.conv2d(x, w, relay.const(120), relay.const(128), relay.const(0.02), relay.const(0.01),
                            padding=(1, 1), channels=4, kernel_size=(3, 3), out_dtype="int32")
    y = relay.nn.bias_add(y, relay.const(rng.integers(-500, 500, 4).astype("int32")), axis=1)
    y = relay.qnn.op.requantize(y, relay.const(np.array([2e-4, 3e-4, 1e-4, 5e-4], "float32")), relay.const(0),
                                relay.const(0.05), relay.const(100), axis=1, out_dtype="uint8", rounding="ONNX")
    y = relay.clip(y, 100, 255)
    return byoc.IRModule.from_expr(relay.Function([x], y))


def _ops(mod):
    return [n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)]


def test_nhwc_chain_stays_together_with_the_same_values():
    mod = _chain()
    x = np.random.default_rng(1).integers(0, 256, (1, 3, 6, 6)).astype("uint8")
    before = byoc.evaluate(mod, {"x": x})[0]
    with byoc.transform.PassContext(opt_level=3):
        out = byoc.transform.Sequential([ConvertLayout({"qnn.conv2d": ["NHWC", "default"]}),
                                         SinkLayoutTransform()])(mod)
    assert _ops(out) == ["layout_transform", "qnn.conv2d", "nn.bias_add", "qnn.requantize", "clip",
                         "layout_transform"]
    rq = next(n for n in post_order(out["main"].body) if isinstance(n, Call) and n.op.name == "qnn.requantize")
    assert rq.attrs.axis == 3
    np.testing.assert_array_equal(byoc.evaluate(out, {"x": x})[0], before)


def test_inverse_pair_cancels():
    x = relay.var("x", shape=(1, 2, 3, 4), dtype="int8")
    y = relay.layout_transform(relay.layout_transform(x, "NCHW", "NHWC"), "NHWC", "NCHW")
    mod = byoc.IRModule.from_expr(relay.Function([x], relay.clip(y, -5, 5)))
    out = byoc.transform.Sequential([SinkLayoutTransform()])(mod)
    assert _ops(out) == ["clip"]


def _evaluate_same(mod, x):
    before = byoc.evaluate(mod, {"x": x})[0]
    out = byoc.transform.Sequential([SinkLayoutTransform()])(mod)
    np.testing.assert_array_equal(byoc.evaluate(out, {"x": x})[0], before)
    return out


def test_sinks_through_an_onnx_hardswish_group_and_a_nearest_resize():
    """dequantize → x·clip(x/6 + 0.5, 0, 1) → quantize (ONNX's HardSwish) and a nearest resize run on the NHWC
    tensor; the one transform back to NCHW ends up last."""
    x = relay.var("x", shape=(1, 4, 5, 3), dtype="int8")
    d = relay.qnn.op.dequantize(relay.layout_transform(x, "NHWC", "NCHW"), relay.const(0.05), relay.const(-3))
    hs = relay.multiply(d, relay.clip(relay.add(relay.multiply(d, relay.const(np.float32(1 / 6))),
                                                relay.const(np.float32(0.5))), 0.0, 1.0))
    r = relay.image.resize2d(hs, size=(8, 10), method="nearest_neighbor",
                             coordinate_transformation_mode="asymmetric", rounding_method="floor")
    y = relay.qnn.op.quantize(r, relay.const(0.03), relay.const(5), out_dtype="int8")
    mod = byoc.IRModule.from_expr(relay.Function([x], y))
    xv = np.random.default_rng(2).integers(-128, 128, (1, 4, 5, 3)).astype("int8")
    out = _evaluate_same(mod, xv)
    ops = _ops(out)
    assert ops.count("layout_transform") == 1 and ops[-1] == "layout_transform", ops
    rs = next(n for n in post_order(out["main"].body) if isinstance(n, Call) and n.op.name == "image.resize2d")
    assert rs.attrs.layout == "NHWC"


def test_sinks_through_an_integer_sum_only():
    """QLinearGlobalAveragePool's integer sum moves (its axes permuted); a float sum's order would change, so the
    transform stays above it."""
    x = relay.var("x", shape=(1, 4, 5, 3), dtype="int8")
    nchw = relay.layout_transform(x, "NHWC", "NCHW")
    s = relay.sum(relay.cast(nchw, "int32"), axis=[2, 3], keepdims=True)
    mod = byoc.IRModule.from_expr(relay.Function([x], s))
    xv = np.random.default_rng(3).integers(-128, 128, (1, 4, 5, 3)).astype("int8")
    out = _evaluate_same(mod, xv)
    assert _ops(out) == ["cast", "sum", "layout_transform"]
    total = next(n for n in post_order(out["main"].body) if isinstance(n, Call) and n.op.name == "sum")
    assert list(total.attrs.axis) == [1, 2]
    f = relay.sum(relay.cast(nchw, "float32"), axis=[2, 3], keepdims=True)
    out = _evaluate_same(byoc.IRModule.from_expr(relay.Function([x], f)), xv)
    assert _ops(out) == ["cast", "layout_transform", "sum"]


def test_sinks_through_max_pool_and_an_integer_average_pool_only():
    x = relay.var("x", shape=(1, 6, 6, 3), dtype="int8")
    nchw = relay.layout_transform(x, "NHWC", "NCHW")
    mp = relay.nn.max_pool2d(nchw, pool_size=(2, 2), strides=(2, 2))
    xv = np.random.default_rng(4).integers(-128, 128, (1, 6, 6, 3)).astype("int8")
    out = _evaluate_same(byoc.IRModule.from_expr(relay.Function([x], mp)), xv)
    assert _ops(out) == ["nn.max_pool2d", "layout_transform"]
    ap = relay.nn.avg_pool2d(relay.cast(nchw, "int32"), pool_size=(2, 2), strides=(2, 2))
    out = _evaluate_same(byoc.IRModule.from_expr(relay.Function([x], ap)), xv)
    assert _ops(out) == ["cast", "nn.avg_pool2d", "layout_transform"]
    fp = relay.nn.avg_pool2d(relay.cast(nchw, "float32"), pool_size=(2, 2), strides=(2, 2))
    out = _evaluate_same(byoc.IRModule.from_expr(relay.Function([x], fp)), xv)
    assert _ops(out) == ["cast", "layout_transform", "nn.avg_pool2d"]
