"""DeadCodeElimination and EliminateCommonSubexpr."""
from __future__ import annotations

import numpy as np

import byoc
from byoc import relay
from byoc.ir.analysis import count_ops
from byoc.ir.traversal import post_order
from byoc.transform import DeadCodeElimination, EliminateCommonSubexpr


def _lets(expr):
    return [n for n in post_order(expr) if isinstance(n, relay.Let)]


def _run(p, func):
    return p(byoc.IRModule.from_expr(func))["main"]


X = np.array([1.0, -2.0, 3.0], "float32")


# ------------------------------------------------------------------------------------------ dead code

def test_unused_let_is_removed_and_used_let_kept():
    x = relay.var("x", shape=(3,))
    dead, live = relay.var("dead"), relay.var("live")
    body = relay.Let(dead, relay.exp(x), relay.Let(live, relay.negative(x), relay.add(live, live)))
    f = _run(DeadCodeElimination(), relay.Function([x], body))
    assert [lt.var for lt in _lets(f)] == [live]
    np.testing.assert_array_equal(byoc.evaluate(byoc.IRModule.from_expr(f), {"x": X})[0], -X + -X)


def test_chain_used_only_by_dead_bindings_is_removed():
    x = relay.var("x", shape=(3,))
    a, b = relay.var("a"), relay.var("b")
    body = relay.Let(a, relay.exp(x), relay.Let(b, relay.negative(a), relay.abs(x)))
    f = _run(DeadCodeElimination(), relay.Function([x], body))
    assert _lets(f) == []
    assert count_ops(f) == {"abs": 1}


def test_pure_dataflow_is_untouched():
    x = relay.var("x", shape=(3,))
    f = relay.Function([x], relay.add(relay.exp(x), relay.negative(x)))
    assert _run(DeadCodeElimination(), f) is f


def test_inline_once_inlines_single_use_but_not_into_closures():
    x = relay.var("x", shape=(3,))
    once, twice, in_fn = relay.var("once"), relay.var("twice"), relay.var("in_fn")
    y = relay.var("y", shape=(3,))
    closure = relay.Function([y], relay.add(y, in_fn))
    body = relay.Let(once, relay.exp(x), relay.Let(twice, relay.negative(x), relay.Let(
        in_fn, relay.abs(x), relay.Tuple([relay.add(once, twice), twice, relay.Call(closure, [x])]))))
    f = relay.Function([x], body)
    out = _run(DeadCodeElimination(inline_once=True), f)
    assert {lt.var.name_hint for lt in _lets(out)} == {"twice", "in_fn"}
    assert {lt.var.name_hint for lt in _lets(_run(DeadCodeElimination(), f))} == {"once", "twice", "in_fn"}
    got = byoc.evaluate(byoc.IRModule.from_expr(out), {"x": X})
    expected = [np.exp(X) + -X, -X, X + np.abs(X)]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


# ---------------------------------------------------------------------------------------------- CSE

def test_identical_calls_merge_and_different_attrs_do_not():
    x = relay.var("x", shape=(3,))
    a1, a2 = relay.add(x, relay.const(1.0)), relay.add(x, relay.const(1.0))  # constants equal by value
    c1, c2 = relay.clip(x, 0.0, 1.0), relay.clip(x, 0.0, 2.0)
    f = _run(EliminateCommonSubexpr(), relay.Function([x], relay.Tuple([
        relay.multiply(a1, c1), relay.multiply(a2, c2), relay.multiply(a2, c1)])))
    m1, m2, m3 = f.body.fields
    assert m1.args[0] is m2.args[0] is m3.args[0]
    assert m1.args[1] is not m2.args[1]
    assert m3 is m1  # merged after its operands merged
    assert count_ops(f) == {"add": 1, "clip": 2, "multiply": 2}
    got = byoc.evaluate(byoc.IRModule.from_expr(f), {"x": X})
    np.testing.assert_array_equal(got[1], (X + 1) * np.clip(X, 0, 2))


def test_constants_with_different_values_or_dtypes_do_not_merge():
    x = relay.var("x", shape=(3,), dtype="int32")
    f = _run(EliminateCommonSubexpr(), relay.Function([x], relay.Tuple([
        relay.add(x, relay.const(1, "int32")), relay.add(x, relay.const(2, "int32"))])))
    assert count_ops(f) == {"add": 2}


def test_fskip_keeps_calls_apart_and_tuple_items_merge():
    x = relay.var("x", shape=(3,))
    e1, e2 = relay.exp(x), relay.exp(x)
    skip_exp = EliminateCommonSubexpr(fskip=lambda call: call.op.name == "exp")
    assert count_ops(_run(skip_exp, relay.Function([x], relay.Tuple([e1, e2])))) == {"exp": 2}
    t = relay.Tuple([x, x])
    f = _run(EliminateCommonSubexpr(), relay.Function([x], relay.add(relay.TupleGetItem(t, 1),
                                                                      relay.TupleGetItem(t, 1))))
    assert f.body.args[0] is f.body.args[1]


def test_composite_bodies_are_not_merged():
    p = relay.var("p", shape=(3,))
    comp = relay.Function([p], relay.add(relay.exp(p), relay.exp(p))).with_attr("Composite", "npu.x")
    x = relay.var("x", shape=(3,))
    f = _run(EliminateCommonSubexpr(), relay.Function([x], relay.Call(comp, [x])))
    assert f.body.op is comp
