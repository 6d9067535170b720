"""The IR verifier: each rule has a failing case whose message names the node, and valid IR passes."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import IRError
from byoc.ir.verify import verify, verify_problems


def _x(name="x", shape=(3,)):
    return relay.var(name, shape=shape)


def _one_problem(mod_or_expr, *fragments):
    problems = verify_problems(mod_or_expr)
    assert len(problems) == 1, problems
    for f in fragments:
        assert f in problems[0], problems[0]


def _partitioned_module(symbol="ext_0", primitive=1):
    y = _x("y")
    ext = relay.Function([y], relay.nn.relu(y)).with_attr("Compiler", "npu").with_attr("Primitive", primitive)
    if symbol is not None:
        ext = ext.with_attr("global_symbol", symbol)
    x = _x()
    return byoc.IRModule({"ext_0": ext, "main": relay.Function([x], relay.Call(relay.GlobalVar("ext_0"), [x]))})


def test_well_formed_programs_pass():
    x = _x()
    v = relay.var("v")
    y = _x("y")
    comp = relay.Function([y], relay.nn.relu(y)).with_attr("Composite", "npu.relu")
    f = relay.Function([x], relay.Let(v, relay.exp(x), relay.Tuple([relay.Call(comp, [v]), v])))
    verify(byoc.IRModule.from_expr(f))
    verify(_partitioned_module())
    verify(relay.add(_x(), relay.const(np.ones(3, "float32"))))  # a bare expression may have free vars


def test_unbound_variable_in_a_module():
    x, y = _x(), _x("y")
    _one_problem(byoc.IRModule({"main": relay.Function([x], relay.add(x, y))}), "%y", "never bound", "@main")


def test_variable_bound_twice():
    x = _x()
    inner = relay.Function([x], x)
    _one_problem(byoc.IRModule({"main": relay.Function([x], relay.Call(inner, [x]))}),
                 "%x is bound more than once", "@main")


def test_let_variable_used_outside_its_body():
    x, v = _x(), relay.var("v")
    f = relay.Function([x], relay.Tuple([relay.Let(v, relay.exp(x), v), relay.add(v, x)]))
    _one_problem(byoc.IRModule({"main": f}), "%v is used outside the scope")


def test_parameter_used_outside_its_function():
    x, y = _x(), _x("y")
    inner = relay.Function([y], relay.negative(y))
    f = relay.Function([x], relay.Tuple([relay.Call(inner, [x]), relay.add(y, x)]))
    _one_problem(byoc.IRModule({"main": f}), "%y is used outside the scope")


def test_wrong_arity_and_attrs_after_unsafe_mutation():
    x = _x()
    call = relay.add(x, x)
    object.__setattr__(call, "args", (x,))
    clip = relay.clip(x, 0.0, 1.0)
    object.__setattr__(clip, "attrs", relay.nn.conv2d(relay.var("d", shape=(1, 1, 3, 3)),
                                                      relay.var("w", shape=(1, 1, 1, 1))).attrs)
    problems = verify_problems(byoc.IRModule({"main": relay.Function([x], relay.Tuple([call, clip]))}))
    assert any("add takes 2 argument(s)" in p for p in problems), problems
    assert any("clip attributes are Conv2DAttrs" in p for p in problems), problems


def test_function_call_arity_and_unknown_global():
    x, y = _x(), _x("y")
    inner = relay.Function([y], y)
    bad_local = relay.Call(inner, [x, x])
    bad_global = relay.Call(relay.GlobalVar("nowhere"), [x])
    problems = verify_problems(byoc.IRModule({"main": relay.Function([x], relay.Tuple([bad_local, bad_global]))}))
    assert len(problems) == 2, problems
    assert "passes 2 argument(s), it has 1" in problems[0]
    assert "unknown global function @nowhere" in problems[1]


def test_type_errors_are_reported_with_the_op():
    x, z = _x(), _x("z", (4,))
    _one_problem(byoc.IRModule({"main": relay.Function([x, z], relay.add(x, z))}), "type error", "add",
                 "do not broadcast")


def test_composite_rules():
    x, y = _x(), _x("y")
    comp = relay.Function([y], relay.nn.relu(y)).with_attr("Composite", "npu.relu")
    _one_problem(byoc.IRModule({"main": relay.Function([x], relay.Tuple([relay.Call(comp, [x]), comp]))}),
                 "'npu.relu' is used as a value")
    y2 = _x("y2")
    open_comp = relay.Function([y2], relay.add(y2, x)).with_attr("Composite", "npu.add")
    _one_problem(byoc.IRModule({"main": relay.Function([x], relay.Call(open_comp, [x]))}), "must be closed")
    y3, y4 = _x("y3"), _x("y4")
    inner = relay.Function([y4], relay.nn.relu(y4)).with_attr("Composite", "npu.relu")
    outer = relay.Function([y3], relay.Call(inner, [y3])).with_attr("Composite", "npu.outer")
    _one_problem(byoc.IRModule({"main": relay.Function([x], relay.Call(outer, [x]))}), "nested composite")


def test_partitioned_function_rules():
    _one_problem(_partitioned_module(symbol=None), "@ext_0", "no global_symbol")
    _one_problem(_partitioned_module(symbol="other"), "global_symbol is 'other'")
    _one_problem(_partitioned_module(primitive=0), "needs Primitive=1")
    x, y = _x(), _x("y")
    local = relay.Function([y], y).with_attr("Compiler", "npu")
    _one_problem(byoc.IRModule({"main": relay.Function([x], relay.Call(local, [x]))}), "must be global")


def test_call_graph_cycle():
    a, b, x = _x("a"), _x("b"), _x()
    mod = byoc.IRModule({
        "f": relay.Function([a], relay.Call(relay.GlobalVar("g"), [a])),
        "g": relay.Function([b], relay.Call(relay.GlobalVar("f"), [b])),
        "main": relay.Function([x], relay.Call(relay.GlobalVar("f"), [x])),
    })
    _one_problem(mod, "cycle", "@f -> @g -> @f")


def test_all_problems_are_reported_at_once_in_one_ir_error():
    x, y, z = _x(), _x("y"), _x("z")
    f = relay.Function([x], relay.Tuple([relay.add(x, y), relay.add(x, z)]))
    with pytest.raises(IRError) as info:
        verify(byoc.IRModule({"main": f}))
    text = str(info.value)
    assert "2 problem(s)" in text and "%y" in text and "%z" in text


def test_verify_rejects_non_ir():
    assert verify_problems(42) == ["verify expects an IRModule or an Expr, got int"]
