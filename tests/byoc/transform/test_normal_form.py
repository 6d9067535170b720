"""ToANormalForm / ToGraphNormalForm: shape of the output, Let scoping, and evaluation on random programs."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import byoc
from byoc import relay
from byoc.ir.structural import structural_equal
from byoc.ir.traversal import children, post_order
from byoc.ir.verify import verify
from byoc.transform import ToANormalForm, ToGraphNormalForm
from byoc.transform.normal_form import has_let, require_graph_normal_form
from pass_programs import INPUTS, random_program


def _atomic(e) -> bool:
    if isinstance(e, relay.Function):
        return "Composite" in e.attrs or "Primitive" in e.attrs
    return isinstance(e, (relay.Var, relay.Constant, relay.GlobalVar, relay.Op))


def _assert_anf(expr):
    for n in post_order(expr):
        if isinstance(n, (relay.Call, relay.Tuple, relay.TupleGetItem)):
            assert all(_atomic(c) for c in children(n)), n
        elif isinstance(n, relay.If):
            assert _atomic(n.cond)
        elif isinstance(n, relay.Function) and not _atomic(n):
            assert _atomic(n.body) or isinstance(n.body, relay.Let)


def _bindings(expr):
    """name of let var -> let, for the Lets directly in a function body's chain (not nested)."""
    out = []
    e = expr
    while isinstance(e, relay.Let):
        out.append(e)
        e = e.body
    return out


def _anf(func):
    return ToANormalForm()(byoc.IRModule.from_expr(func))["main"]


def test_shared_values_are_bound_once_in_evaluation_order():
    x = relay.var("x", shape=(3,))
    a = relay.exp(x)
    b = relay.multiply(a, a)
    f = relay.Function([x], relay.Tuple([relay.add(b, a), b]))
    out = _anf(f)
    _assert_anf(out.body)
    chain = _bindings(out.body)
    values = [lt.value for lt in chain]
    assert [v.op.name for v in values if isinstance(v, relay.Call)] == ["exp", "multiply", "add"]
    assert isinstance(values[-1], relay.Tuple)
    verify(out)


def test_closure_scoping():
    """exp(x) is used only inside the closure: bound inside. neg(x) is also used outside: bound outside."""
    x = relay.var("x", shape=(3,))
    y = relay.var("y", shape=(3,))
    only_inside = relay.exp(x)
    shared = relay.negative(x)
    closure = relay.Function([y], relay.add(relay.add(y, only_inside), shared))
    f = relay.Function([x], relay.Tuple([relay.Call(closure, [x]), shared]))
    out = _anf(f)
    outer = _bindings(out.body)
    outer_ops = [lt.value.op.name for lt in outer if isinstance(lt.value, relay.Call)
                 and isinstance(lt.value.op, relay.Op)]
    assert outer_ops == ["negative"]
    fn = next(lt.value for lt in outer if isinstance(lt.value, relay.Function))
    inner_ops = [lt.value.op.name for lt in _bindings(fn.body)]
    assert inner_ops == ["exp", "add", "add"]
    got = byoc.evaluate(byoc.IRModule.from_expr(out), {"x": np.array([1, 2, 3], "float32")})
    xv = np.array([1, 2, 3], "float32")
    np.testing.assert_array_equal(got[0], (xv + np.exp(xv)) + -xv)
    verify(out)


def test_if_branch_scoping():
    c = relay.var("c", shape=(), dtype="bool")
    x = relay.var("x", shape=(2,))
    in_then = relay.exp(x)
    both = relay.negative(x)
    f = relay.Function([c, x], relay.If(c, relay.add(in_then, both), relay.abs(both)))
    out = _anf(f)
    outer = _bindings(out.body)
    assert [lt.value.op.name for lt in outer if isinstance(lt.value, relay.Call)] == ["negative"]
    if_node = next(lt.value for lt in outer if isinstance(lt.value, relay.If))
    assert [lt.value.op.name for lt in _bindings(if_node.true_branch)] == ["exp", "add"]
    assert [lt.value.op.name for lt in _bindings(if_node.false_branch)] == ["abs"]
    for cond in (True, False):
        xv = np.array([0.5, -1.0], "float32")
        got = byoc.evaluate(byoc.IRModule.from_expr(out), {"c": np.array(cond), "x": xv})[0]
        np.testing.assert_array_equal(got, np.exp(xv) + -xv if cond else np.abs(-xv))


def test_existing_lets_keep_their_variables_and_graph_form_removes_them():
    x = relay.var("x", shape=(2,))
    v, w = relay.var("v"), relay.var("w")
    prog = relay.Function([x], relay.Let(v, relay.exp(x), relay.Let(w, v, relay.add(w, relay.negative(v)))))
    out = _anf(prog)
    assert [lt.var for lt in _bindings(out.body)][:2] == [v, w]
    gnf = ToGraphNormalForm()(byoc.IRModule.from_expr(prog))["main"]
    assert not has_let(gnf)
    e = relay.exp(x)
    assert structural_equal(gnf, relay.Function([x], relay.add(e, relay.negative(e))))


def test_round_trip_restores_the_graph():
    x = relay.var("x", shape=(2,))
    a = relay.exp(x)
    p = relay.var("p", shape=(2,))
    comp = relay.Function([p], relay.nn.relu(p)).with_attr("Composite", "npu.relu")
    f = relay.Function([x], relay.Tuple([relay.Call(comp, [relay.add(a, a)]), a]))
    anf = ToANormalForm()(byoc.IRModule.from_expr(f))
    # the composite stays a direct call target with an untouched body
    call = next(n for n in post_order(anf["main"]) if isinstance(n, relay.Call) and n.op is comp)
    assert call is not None
    assert structural_equal(ToGraphNormalForm()(anf)["main"], f)
    assert structural_equal(_anf(anf["main"]), anf["main"])  # idempotent


def test_recursive_binding_is_kept_by_graph_normal_form():
    f = relay.var("f")
    y = relay.var("y", shape=(2,))
    rec = relay.Function([y], relay.Call(f, [y]))
    x = relay.var("x", shape=(2,))
    prog = relay.Function([x], relay.Let(f, rec, relay.Call(f, [x])))
    gnf = ToGraphNormalForm()(byoc.IRModule.from_expr(prog))["main"]
    assert isinstance(gnf.body, relay.Let) and gnf.body.var is f


def test_require_graph_normal_form_is_a_no_op_without_lets():
    x = relay.var("x", shape=(2,))
    mod = byoc.IRModule.from_expr(relay.Function([x], relay.exp(x)))
    assert require_graph_normal_form(mod) is mod
    v = relay.var("v")
    mod2 = byoc.IRModule.from_expr(relay.Function([x], relay.Let(v, relay.exp(x), v)))
    assert not has_let(require_graph_normal_form(mod2))


# ---------------------------------------------------------------------------------- random programs

@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(0, 10**6), st.booleans())
def test_normal_forms_preserve_evaluation(seed, cond):
    mod = byoc.IRModule.from_expr(random_program(seed))
    inputs = dict(INPUTS, c=np.array(cond))
    expected = byoc.evaluate(mod, inputs)
    anf = ToANormalForm()(mod)
    _assert_anf(anf["main"].body)
    verify(anf)
    gnf = ToGraphNormalForm()(anf)
    assert not has_let(gnf)
    verify(gnf)
    for m in (anf, gnf):
        for got, exp in zip(byoc.evaluate(m, inputs), expected):
            np.testing.assert_array_equal(got, exp)
