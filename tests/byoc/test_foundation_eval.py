"""byoc.evaluate on Let, If, closures and global functions, against values computed here in numpy."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.ir.verify import verify
from byoc.transform import DeadCodeElimination, InferType, ToGraphNormalForm

X = np.array([0.5, -1.0, 2.0, 3.5], "float32")


def _f32(shape=(4,), name="x"):
    return relay.var(name, shape=shape, dtype="float32")


def _eval(mod_or_func, **inputs):
    mod = mod_or_func if isinstance(mod_or_func, byoc.IRModule) else byoc.IRModule.from_expr(mod_or_func)
    verify(mod)
    return byoc.evaluate(mod, inputs)


def test_let_binding_is_evaluated_once_and_reused():
    x, v = _f32(), relay.var("v")
    f = relay.Function([x], relay.Let(v, relay.exp(x), relay.add(relay.multiply(v, v), v)))
    e = np.exp(X)
    np.testing.assert_array_equal(_eval(f, x=X)[0], e * e + e)


def test_if_takes_the_branch_the_condition_selects():
    c, x = relay.var("c", shape=(), dtype="bool"), _f32()
    f = relay.Function([c, x], relay.If(c, relay.negative(x), relay.abs(x)))
    np.testing.assert_array_equal(_eval(f, c=np.array(True), x=X)[0], -X)
    np.testing.assert_array_equal(_eval(f, c=np.array(False), x=X)[0], np.abs(X))


def test_closure_captures_its_environment():
    x, y, g = _f32(), _f32(name="y"), relay.var("g")
    scale = relay.var("scale")
    body = relay.Let(scale, relay.add(x, relay.const(1.0)), relay.Let(
        g, relay.Function([y], relay.multiply(y, scale)),
        relay.Call(g, [relay.Call(g, [x])])))
    np.testing.assert_array_equal(_eval(relay.Function([x], body), x=X)[0], (X * (X + 1)) * (X + 1))


def test_closures_made_by_two_calls_keep_their_own_environment():
    y, z = relay.var("y", shape=(), dtype="int32"), relay.var("z", shape=(), dtype="int32")
    f, g1, g2 = relay.var("f"), relay.var("g1"), relay.var("g2")
    make_adder = relay.Function([y], relay.Function([z], relay.add(y, z)))
    one, two, ten = (relay.const(v, "int32") for v in (1, 2, 10))
    body = relay.Let(f, make_adder, relay.Let(g1, relay.Call(f, [one]), relay.Let(
        g2, relay.Call(f, [two]), relay.Tuple([relay.Call(g1, [ten]), relay.Call(g2, [ten])]))))
    assert [int(v) for v in _eval(relay.Function([], body))] == [11, 12]


def test_if_choosing_between_closures():
    c, x, y1, y2, h = relay.var("c", shape=(), dtype="bool"), _f32(), _f32(name="y1"), _f32(name="y2"), \
        relay.var("h")
    inc = relay.Function([y1], relay.add(y1, relay.const(1.0)))
    dec = relay.Function([y2], relay.subtract(y2, relay.const(1.0)))
    f = relay.Function([c, x], relay.Let(h, relay.If(c, inc, dec), relay.Call(h, [x])))
    InferType()(byoc.IRModule.from_expr(f))
    np.testing.assert_array_equal(_eval(f, c=np.array(True), x=X)[0], X + 1)
    np.testing.assert_array_equal(_eval(f, c=np.array(False), x=X)[0], X - 1)


def test_calls_between_global_functions():
    a, b, x = _f32(name="a"), _f32(name="b"), _f32()
    mod = byoc.IRModule()
    mod["double"] = relay.Function([a], relay.add(a, a))
    mod["quad_plus"] = relay.Function([b], relay.add(relay.Call(relay.GlobalVar("double"), [
        relay.Call(relay.GlobalVar("double"), [b])]), b))
    mod["main"] = relay.Function([x], relay.Tuple([relay.Call(relay.GlobalVar("quad_plus"), [x]),
                                                   relay.Call(relay.GlobalVar("double"), [x])]))
    InferType()(mod)
    quad, dbl = _eval(mod, x=X)
    np.testing.assert_array_equal(quad, 4 * X + X)
    np.testing.assert_array_equal(dbl, 2 * X)


def test_tuples_and_items():
    x = _f32()
    t = relay.Tuple([relay.negative(x), relay.Tuple([x, relay.exp(x)])])
    f = relay.Function([x], relay.add(relay.TupleGetItem(relay.TupleGetItem(t, 1), 1), relay.TupleGetItem(t, 0)))
    np.testing.assert_array_equal(_eval(f, x=X)[0], np.exp(X) + -X)


@pytest.fixture(scope="module")
def deep_let_chain():
    """let %v1 = %x + 1; let %v2 = %v1 + 1; ... 100,000 deep, body %v100000 (int32: exact)."""
    assert sys.getrecursionlimit() <= 1000, "these tests must run under the default recursion limit"
    n = 100_000
    x = relay.var("x", shape=(3,), dtype="int32")
    one = relay.const(1, "int32")
    vs = [relay.var(f"v{i}") for i in range(1, n + 1)]
    body = vs[-1]
    prev = [x] + vs[:-1]
    for v, p in zip(reversed(vs), reversed(prev)):
        body = relay.Let(v, relay.add(p, one), body)
    return byoc.IRModule.from_expr(relay.Function([x], body)), n


def test_100k_deep_let_chain_evaluates(deep_let_chain):
    mod, n = deep_let_chain
    xv = np.array([0, -5, 7], "int32")
    np.testing.assert_array_equal(byoc.evaluate(mod, {"x": xv})[0], xv + n)


def test_100k_deep_let_chain_passes(deep_let_chain):
    mod, n = deep_let_chain
    typed = InferType()(mod)
    assert typed["main"].checked_type.ret_type == relay.TensorType((3,), "int32")
    verify(mod)
    assert DeadCodeElimination()(mod)["main"].body is mod["main"].body  # every binding is used
    gnf = ToGraphNormalForm()(mod)
    xv = np.array([1, 2, 3], "int32")
    np.testing.assert_array_equal(byoc.evaluate(gnf, {"x": xv})[0], xv + n)
    text = mod.astext()
    assert text.count("let %v") == n
    np.testing.assert_array_equal(byoc.evaluate(byoc.parse(text), {"x": xv})[0], xv + n)
