"""InferType types Relay's while-loop idiom: a let-bound function that calls itself, with no annotation on the
let variable or the function's return type (TVM's test_pass_annotate_target.py::test_while_let builds it)."""
from __future__ import annotations

import numpy as np
import pytest

import byoc as tvm
from byoc import relay
from byoc.errors import TypeInferenceError


def _while_loop(limit=10, body=None):
    var1 = relay.var("var1", shape=(2,))
    var2 = relay.var("var2", shape=(), dtype="int32")
    var3 = relay.var("var3", shape=(2,))
    loop = relay.var("while_loop")
    cond = relay.less(var2, relay.const(limit, dtype="int32"))
    recur = loop(var2 + relay.const(1, dtype="int32"), var3 + var1)
    ife = relay.If(cond, body(recur) if body else recur, var3)
    let = relay.Let(loop, relay.Function([var2, var3], ife),
                    loop(relay.const(0, dtype="int32"), relay.zeros_like(var1)))
    return tvm.IRModule.from_expr(relay.Function([var1], let)), loop


def test_while_let_is_typed_and_runs():
    mod, loop = _while_loop()
    mod = relay.transform.InferType()(mod)
    t2 = relay.TensorType((2,), "float32")
    assert mod["main"].checked_type == relay.FuncType([t2], t2)
    assert loop.type_annotation == relay.FuncType([relay.TensorType((), "int32"), t2], t2)   # as Relay annotates
    x = np.array([1.5, -2.0], "float32")
    acc = np.zeros(2, "float32")
    for _ in range(10):                     # the loop, written out
        acc = acc + x
    np.testing.assert_array_equal(tvm.evaluate(mod, {"var1": x})[0], acc)


def test_recursive_result_through_region_markers_is_typed():
    mod, _ = _while_loop(body=lambda r: relay.annotation.compiler_end(r, "default"))
    mod = relay.transform.InferType()(mod)
    assert mod["main"].checked_type.ret_type == relay.TensorType((2,), "float32")


def test_recursive_result_used_by_an_op_is_reported_with_a_hint():
    mod, _ = _while_loop(body=lambda r: relay.add(r, relay.const(1.0)))
    with pytest.raises(TypeInferenceError, match=r"recursive function %while_loop is used as argument 0 of add") \
            as err:
        relay.transform.InferType()(mod)
    assert "ret_type" in str(err.value)


def test_a_declared_return_type_types_any_use():
    var2 = relay.var("n", shape=(), dtype="int32")
    loop = relay.var("countdown")
    t = relay.TensorType((), "int32")
    body = relay.If(relay.less(var2, relay.const(1, "int32")), var2,
                    relay.add(loop(relay.subtract(var2, relay.const(1, "int32"))), relay.const(0, "int32")))
    f = relay.Function([var2], body, ret_type=t)
    x = relay.var("x", shape=(), dtype="int32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Let(loop, f, loop(x))))
    mod = relay.transform.InferType()(mod)
    assert mod["main"].checked_type.ret_type == t
    assert tvm.evaluate(mod, {"x": np.array(5, "int32")})[0] == 0


def test_a_loop_without_a_base_case_is_reported():
    n = relay.var("n", shape=(), dtype="int32")
    loop = relay.var("forever")
    f = relay.Function([n], loop(n))
    x = relay.var("x", shape=(), dtype="int32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Let(loop, f, loop(x))))
    with pytest.raises(TypeInferenceError, match="never returns a value of known type"):
        relay.transform.InferType()(mod)


def test_typed_while_let_prints_and_parses_back():
    mod, _ = _while_loop()
    mod = relay.transform.InferType()(mod)
    from byoc.text import astext, parse
    back = relay.transform.InferType()(parse(astext(mod)))
    tvm.ir.assert_structural_equal(back, mod)
