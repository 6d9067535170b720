"""SimplifyExpr (TVM's scenarios: reshape chains, transpose / layout_transform chains, identities, zeros/ones
operands, same and consecutive casts, clip with casts, constant folding across add/multiply, rsqrt, argmax of a
dequantize, add(x, x), binomials) and CanonicalizeCast. Every rewrite is checked against the unoptimized module
(float allclose 1e-5, integers exact) and, for a few, against numpy; a 100,000-node chain runs."""
from __future__ import annotations

import numpy as np
import pytest

import byoc as tvm
from byoc import relay
from byoc.interpreter import evaluate
from byoc.ir.expr import Call, Op, Var
from byoc.ir.traversal import post_order

transform = relay.transform
RNG = np.random.default_rng(5)


def _fn(e):
    return tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(e), e))


def _ops(mod):
    return [n.op.name for n in post_order(mod["main"]) if isinstance(n, Call) and isinstance(n.op, Op)]


def _random(t):
    if np.dtype(t.dtype).kind in "iu":
        info = np.iinfo(t.dtype)
        return RNG.integers(max(info.min, -1000), min(info.max, 1000), size=t.shape).astype(t.dtype)
    return RNG.uniform(0.5, 2.0, size=t.shape).astype(t.dtype)


def _simplify(e, p=None):
    before = _fn(e)
    after = (p or transform.SimplifyExpr())(before)
    typed = transform.InferType()(before)
    inputs = {v.name_hint: _random(v.checked_type) for v in typed["main"].params}
    want, got = evaluate(before, inputs), evaluate(after, inputs)
    for w, g in zip(want, got):
        assert w.dtype == g.dtype and w.shape == g.shape
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return after, inputs, got


def test_consecutive_reshapes_become_one():
    x = relay.var("x", shape=(1, 16, 16, 16))
    y = relay.reshape(relay.reshape(relay.reshape(x, (1, 16, -1)), (1, 16, 16, -1)), (1, 4096))
    after, inputs, got = _simplify(relay.nn.relu(y))
    assert _ops(after) == ["reshape", "nn.relu"]
    np.testing.assert_array_equal(got[0], np.maximum(inputs["x"].reshape(1, 4096), 0))


def test_transpose_chains():
    x = relay.var("x", shape=(1, 3, 8, 8))
    y = relay.transpose(relay.layout_transform(relay.transpose(x, (0, 2, 3, 1)), "NHWC", "HWCN"), (3, 0, 1, 2))
    after, inputs, got = _simplify(y)
    assert _ops(after) == ["transpose"] and after["main"].body.attrs.axes == (0, 2, 3, 1)
    np.testing.assert_array_equal(got[0], inputs["x"].transpose(0, 2, 3, 1))
    # three transposes back to the start: nothing left; reversing twice is nothing
    y = relay.transpose(relay.transpose(relay.transpose(relay.nn.relu(x), (0, 2, 3, 1)), (1, 2, 3, 0)), (3, 2, 0, 1))
    assert _ops(_simplify(y)[0]) == ["nn.relu"]
    y = relay.transpose(relay.transpose(relay.nn.relu(x)), axes=(0, 2, -1, 1))
    assert _ops(_simplify(relay.transpose(relay.transpose(y)))[0]) == ["nn.relu", "transpose"]


def test_layout_transform_chains_with_blocked_layouts():
    x = relay.var("x", shape=(1, 8, 8, 16))
    y = relay.layout_transform(relay.transpose(x, (0, 3, 1, 2)), "NCHW", "NCHW4c")
    y = relay.transpose(relay.layout_transform(relay.nn.relu(y), "NCHW4c", "NCHW"), (0, 2, 3, 1))
    after, _, _ = _simplify(y)
    lts = [n for n in post_order(after["main"]) if isinstance(n, Call) and n.op.name == "layout_transform"]
    assert _ops(after) == ["layout_transform", "nn.relu", "layout_transform"]
    assert (lts[0].attrs.src_layout, lts[0].attrs.dst_layout) == ("NHWC", "NCHW4c")
    assert (lts[1].attrs.src_layout, lts[1].attrs.dst_layout) == ("NCHW4c", "NHWC")
    z = relay.var("z", shape=(1, 8, 8, 8, 4))
    y = relay.layout_transform(relay.layout_transform(z, "NCHW4c", "NCHW"), "NCHW", "NCHW8c")
    after, _, _ = _simplify(relay.nn.relu(y))
    assert _ops(after) == ["layout_transform", "nn.relu"]
    y = relay.layout_transform(relay.layout_transform(z, "NCHW4c", "NCHW8c"), "NCHW8c", "NCHW4c")
    assert _ops(_simplify(relay.nn.relu(y))[0]) == ["nn.relu"]


@pytest.mark.parametrize("op,maker,like,value", [(relay.add, relay.zeros, relay.zeros_like, 0),
                                                 (relay.multiply, relay.ones, relay.ones_like, 1)])
def test_identities_on_either_side(op, maker, like, value):
    x = relay.var("x", shape=(2, 3, 4))
    for e in (op(like(x), x), op(x, maker((2, 3, 4), "float32")), op(relay.const(float(value)), x),
              op(x, maker((3, 4), "float32")), op(x, relay.const(float(value)))):
        after, _, _ = _simplify(e)
        assert isinstance(after["main"].body, Var)
    # an identity that broadcasts the result to a bigger shape stays (as a scalar operand)
    after, _, _ = _simplify(op(x, maker((2, 2, 3, 4), "float32")))
    assert after["main"].body.op.name == op(x, x).op.name


def test_subtract_and_divide_identities_only_on_the_right():
    x = relay.var("x", shape=(2, 3, 4))
    assert isinstance(_simplify(relay.subtract(x, relay.zeros_like(x)))[0]["main"].body, Var)
    assert isinstance(_simplify(relay.divide(x, relay.const(1.0)))[0]["main"].body, Var)
    after, inputs, got = _simplify(relay.subtract(relay.zeros((2, 3, 4), "float32"), x))
    body = after["main"].body
    assert body.op.name == "subtract" and float(body.args[0].data) == 0.0  # zeros became a scalar
    np.testing.assert_array_equal(got[0], -inputs["x"])


def test_casts():
    x = relay.var("x", shape=(3, 4), dtype="int8")
    assert isinstance(_simplify(relay.cast(relay.cast(x, "int8"), "int8"))[0]["main"].body, Var)
    after, _, _ = _simplify(relay.cast(relay.cast(x, "int16"), "int32"))
    assert _ops(after) == ["cast"] and after["main"].body.attrs.dtype == "int32"
    after, _, _ = _simplify(relay.cast(relay.cast(x, "int16"), "float32"))
    assert _ops(after) == ["cast"]
    f = relay.var("f", shape=(3, 4))
    # a narrowing first cast stays: float -> int32 -> float truncates
    assert _ops(_simplify(relay.cast(relay.cast(f, "int32"), "float32"))[0]) == ["cast", "cast"]
    # int8 -> uint8 wraps negatives: TVM folds this one, here it stays
    assert _ops(_simplify(relay.cast(relay.cast(x, "uint8"), "int32"))[0]) == ["cast", "cast"]
    i = relay.var("i", shape=(3, 4), dtype="int32")
    assert _ops(_simplify(relay.cast(relay.cast(i, "float32"), "float64"))[0]) == ["cast", "cast"]


def test_clip_with_casts():
    i = relay.var("i", shape=(4, 8), dtype="int32")
    f = relay.var("f", shape=(4, 8))
    clip_i = relay.clip(i, 0.0, 255.0)
    assert _ops(_simplify(relay.cast(relay.cast(clip_i, "uint8"), "int32"))[0]) == ["clip"]
    assert _ops(_simplify(relay.cast(relay.cast(relay.cast(clip_i, "uint8"), "int16"), "int32"))[0]) == ["clip"]
    clip_f = relay.clip(relay.multiply(f, relay.const(200.0)), 0.0, 255.0)
    after, _, _ = _simplify(relay.cast(relay.cast(relay.cast(clip_f, "uint8"), "int16"), "int32"))
    assert _ops(after) == ["multiply", "clip", "cast"]
    after, _, _ = _simplify(relay.cast(relay.cast(relay.cast(clip_f, "int8"), "int16"), "int32"))
    assert _ops(after) == ["multiply", "clip", "cast", "cast"]
    # the truncation to integers must stay when the chain goes back to float
    assert _ops(_simplify(relay.cast(relay.cast(clip_f, "uint8"), "float32"))[0]) == ["multiply", "clip", "cast",
                                                                                     "cast"]
    # a wrapping cast followed by one that holds the range: values change, nothing is dropped
    small = relay.clip(i, -1.0, 1.0)
    after, _, _ = _simplify(relay.cast(relay.cast(relay.cast(small, "uint8"), "int8"), "int32"))
    assert _ops(after).count("cast") == 3
    # a clip over the whole dtype goes; one after a cast to uint8 with bounds 0..255 too
    assert _ops(_simplify(relay.clip(relay.cast(i, "uint8"), 0.0, 255.0))[0]) == ["cast"]
    u = relay.var("u", shape=(4,), dtype="uint8")
    assert isinstance(_simplify(relay.clip(u, 0.0, 255.0))[0]["main"].body, Var)


def test_constants_fold_across_add_and_multiply():
    x = relay.var("x", shape=(2, 3))
    c1 = relay.const(RNG.uniform(1, 2, (3,)).astype("float32"))
    c2 = relay.const(RNG.uniform(1, 2, (2, 1)).astype("float32"))
    after, inputs, got = _simplify(relay.multiply(relay.add(x, c1), c2))
    assert _ops(after) == ["multiply", "add"]
    np.testing.assert_allclose(got[0], (inputs["x"] + c1.data) * c2.data, rtol=1e-5)
    after, _, _ = _simplify(relay.multiply(c2, relay.multiply(c1, x)))
    assert _ops(after) == ["multiply"]
    after, _, _ = _simplify(relay.add(relay.add(x, c1), c2))
    assert _ops(after) == ["add"]
    xi = relay.var("xi", shape=(4,), dtype="int32")
    after, _, _ = _simplify(relay.multiply(relay.add(xi, relay.const(3)), relay.const(5)))
    assert _ops(after) == ["multiply", "add"]


def test_rsqrt_add_self_and_dequantize_argmax():
    x = relay.var("x", shape=(2, 3))
    after, inputs, got = _simplify(relay.divide(relay.const(np.float32(2.0)), relay.sqrt(x)))
    assert _ops(after) == ["rsqrt", "multiply"]
    np.testing.assert_allclose(got[0], 2.0 / np.sqrt(inputs["x"]), rtol=1e-5)
    assert _ops(_simplify(relay.add(x, x))[0]) == ["multiply"]
    q = relay.var("q", shape=(4, 10), dtype="int8")
    dq = relay.qnn.op.dequantize(q, relay.const(np.float32(0.5)), relay.const(np.int32(3)))
    after, inputs, got = _simplify(relay.argmax(dq, axis=[1]))
    assert _ops(after) == ["argmax"]
    np.testing.assert_array_equal(got[0], np.argmax(inputs["q"], axis=1))
    negative = relay.qnn.op.dequantize(q, relay.const(np.float32(-0.5)), relay.const(np.int32(3)))
    assert "qnn.dequantize" in _ops(_simplify(relay.argmin(negative, axis=[1]))[0])


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
@pytest.mark.parametrize("abc", [(1, 2, 1), (6, 5, 1), (1, 1, 1), (1, 4, 4)])
def test_binomials(dtype, abc):
    x, y = relay.var("x", shape=(5,), dtype=dtype), relay.var("y", shape=(5,), dtype=dtype)
    a, b, c = (relay.const(v, dtype) for v in abc)
    e = relay.add(relay.add(relay.multiply(relay.multiply(a, x), x), relay.multiply(y, relay.multiply(b, x))),
                  relay.multiply(c, relay.multiply(y, y)))
    after, inputs, got = _simplify(e)
    a_, b_, c_ = abc
    if b_ * b_ < 4 * a_ * c_:  # no real roots: only the multiplications by 1 go
        assert _ops(after).count("add") == 2 and _ops(after).count("multiply") == 3
    else:  # a product of two sums (one shared sum when the roots coincide)
        assert _ops(after)[-1] == "multiply" and _ops(after).count("add") == (1 if b_ * b_ == 4 * a_ * c_ else 2)
    xv, yv = inputs["x"].astype("float64"), inputs["y"].astype("float64")
    want = abc[0] * xv * xv + abc[1] * xv * yv + abc[2] * yv * yv
    np.testing.assert_allclose(got[0].astype("float64"), want, rtol=1e-5)


def test_post_alter_op_subset_and_100k_chain():
    x = relay.var("x", shape=(2, 3))
    e = relay.add(relay.add(x, relay.const(1.0)), relay.const(2.0))
    assert _ops(_simplify(e, transform.SimplifyExprPostAlterOp())[0]) == ["add", "add"]
    y = x
    for _ in range(25_000):  # 100,000 ops deep
        y = relay.reshape(relay.nn.relu(relay.multiply(y, relay.const(1.0))), (6,))
        y = relay.reshape(y, (2, 3))
    after = transform.SimplifyExpr()(_fn(y))
    ops = _ops(after)
    assert ops.count("multiply") == 0 and ops.count("nn.relu") == 25_000 and ops.count("reshape") == 25_000


def test_canonicalize_cast_copies_a_shared_upcast():
    x = relay.var("x", shape=(4,), dtype="int8")
    up = relay.cast(x, "float32")
    e = relay.Tuple([relay.exp(up), relay.log(relay.abs(up)), relay.nn.softmax(up)])
    before = _fn(e)
    after = transform.CanonicalizeCast()(before)
    casts = [n for n in post_order(after["main"]) if isinstance(n, Call) and n.op.name == "cast"]
    assert len(casts) == 2  # exp keeps the original; abs gets a copy; softmax (not element-wise) shares one
    inputs = {"x": np.array([-3, 0, 5, 100], dtype="int8")}
    for w, g in zip(evaluate(before, inputs), evaluate(after, inputs)):
        np.testing.assert_array_equal(g, w)
    down = relay.cast(relay.var("y", shape=(4,)), "int8")  # a down-cast is never copied
    after = transform.CanonicalizeCast()(_fn(relay.Tuple([relay.abs(down), relay.negative(down)])))
    assert _ops(after).count("cast") == 1


def test_canonicalize_cast_on_a_100k_node_chain():
    x = relay.var("x", shape=(4,), dtype="int8")
    y = x
    for _ in range(33_334):  # three ops each
        up = relay.cast(y, "int16")
        y = relay.cast(relay.add(up, up), "int8")
    before = _fn(y)
    after = transform.CanonicalizeCast()(before)
    assert _ops(after).count("cast") == 3 * 33_334  # each add now reads two copies of its up-cast
