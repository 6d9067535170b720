"""FoldConstant: values checked against numpy written here, TVM's skip rules, Let/If/TupleGetItem folding."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.ir.analysis import count_ops
from byoc.transform import FoldConstant


def _main(mod):
    return mod["main"]


def _fold(expr, **kw):
    return FoldConstant(**kw)(byoc.IRModule.from_expr(expr))["main"]


def test_arithmetic_on_constants_folds_to_numpy_value():
    c = np.array([1.5, -2.0, 3.25], "float32")
    x = relay.var("x", shape=(3,))
    y = relay.add(x, relay.multiply(relay.add(relay.const(c), relay.const(c)), relay.const(2.0)))
    f = _fold(relay.Function([x], y))
    assert count_ops(f) == {"add": 1}
    folded = f.body.args[1]
    assert isinstance(folded, relay.Constant)
    np.testing.assert_array_equal(folded.data, (c + c) * np.float32(2.0))
    assert folded.data.dtype == np.float32


def test_nothing_to_fold_keeps_the_function_object():
    x = relay.var("x", shape=(3,))
    f = relay.Function([x], relay.nn.relu(relay.add(x, relay.const(1.0))))
    mod = byoc.IRModule.from_expr(f)
    assert FoldConstant()(mod)["main"] is f


def test_let_bound_constant_is_substituted_and_binding_removed():
    x = relay.var("x", shape=(2,))
    v = relay.var("v")
    c = np.array([3.0, 4.0], "float32")
    body = relay.Let(v, relay.negative(relay.const(c)), relay.add(x, v))
    f = _fold(relay.Function([x], body))
    assert isinstance(f.body, relay.Call) and f.body.op.name == "add"
    np.testing.assert_array_equal(f.body.args[1].data, -c)


def test_let_with_non_constant_value_is_kept():
    x = relay.var("x", shape=(2,))
    v = relay.var("v")
    f = _fold(relay.Function([x], relay.Let(v, relay.negative(x), relay.add(v, v))))
    assert isinstance(f.body, relay.Let)


def test_multi_output_op_folds_to_tuple_then_item():
    # batch_norm(consts)[0]: the call folds to a Tuple of constants, TupleGetItem of a Tuple folds to the field.
    rng = np.random.default_rng(3)
    data = rng.normal(size=(1, 2, 3, 3)).astype("float32")
    gamma, beta, mean = (rng.normal(size=2).astype("float32") for _ in range(3))
    var = rng.uniform(0.5, 2.0, 2).astype("float32")
    bn = relay.nn.batch_norm(*(relay.const(a) for a in (data, gamma, beta, mean, var)), epsilon=1e-3)
    f = _fold(relay.Function([], bn[0]))
    assert isinstance(f.body, relay.Constant)
    scale = (np.float32(1) / np.sqrt(var + np.float32(1e-3))) * gamma
    shift = -mean * scale + beta
    expected = data * scale.reshape(1, 2, 1, 1) + shift.reshape(1, 2, 1, 1)
    np.testing.assert_array_equal(f.body.data, expected)


def test_tuple_of_constants_operand_is_constant():
    a = np.arange(4, dtype="int32").reshape(2, 2)
    b = np.arange(4, 8, dtype="int32").reshape(2, 2)
    cat = relay.concatenate(relay.Tuple([relay.const(a), relay.const(b)]), axis=1)
    f = _fold(relay.Function([], relay.add(cat, relay.const(1, "int32"))))
    assert isinstance(f.body, relay.Constant)
    np.testing.assert_array_equal(f.body.data, np.concatenate([a, b], axis=1) + 1)


def test_qnn_ops_fold_only_with_fold_qnn():
    x = np.array([0.5, -1.25, 3.0, 100.0, -100.0], "float32")
    q = relay.qnn.op.quantize(relay.const(x), relay.const(0.5), relay.const(3, "int32"), out_dtype="int8")
    f = relay.Function([], q)
    assert count_ops(_fold(f)) == {"qnn.quantize": 1}  # TVM's default keeps qnn ops
    folded = _fold(f, fold_qnn=True)
    assert isinstance(folded.body, relay.Constant)
    # TFLite quantize: float32 x / scale, round half away from zero, + zero point, saturate to int8.
    # x / 0.5 = 1, -2.5, 6, 200, -200 -> 1, -3, 6, 200, -200 -> +3 -> 4, 0, 9, 127, -128
    np.testing.assert_array_equal(folded.body.data, np.array([4, 0, 9, 127, -128], "int8"))


def test_no_folding_inside_primitive_or_composite_functions():
    c = relay.const(np.ones(2, "float32"))
    for attr in ("Primitive", "Composite"):
        p = relay.var("p", shape=(2,))
        inner = relay.Function([p], relay.add(p, relay.add(c, c)))
        inner = inner.with_attr(attr, 1 if attr == "Primitive" else "npu.add")
        x = relay.var("x", shape=(2,))
        f = _fold(relay.Function([x], relay.Tuple([relay.Call(inner, [x]), relay.add(c, c)])))
        callee = f.body.fields[0].op
        assert count_ops(callee) == {"add": 2}, attr  # body untouched
        assert isinstance(f.body.fields[1], relay.Constant), attr  # folded outside


def test_compiler_functions_are_skipped():
    c = relay.const(np.ones(2, "float32"))
    p = relay.var("p", shape=(2,))
    ext = relay.Function([p], relay.add(p, relay.add(c, c))).with_attr("Compiler", "npu")
    x = relay.var("x", shape=(2,))
    mod = byoc.IRModule({"ext": ext, "main": relay.Function([x], relay.Call(relay.GlobalVar("ext"), [x]))})
    out = FoldConstant()(mod)
    assert out["ext"] is ext


def test_if_with_constant_condition_takes_the_branch():
    x = relay.var("x", shape=(2,))
    then, other = relay.negative(x), relay.abs(x)
    for cond, expected in ((True, then), (False, other)):
        f = _fold(relay.Function([x], relay.If(relay.const(cond, "bool"), then, other)))
        assert f.body is expected


def test_failing_constant_evaluation_is_left_for_runtime():
    zero_div = relay.divide(relay.const(np.array([1, 2], "int32")), relay.const(np.array([0, 1], "int32")))
    f = _fold(relay.Function([], zero_div))
    assert count_ops(f) == {"divide": 1}
    with pytest.raises(byoc.ExecutionError, match="division by zero"):
        byoc.evaluate(byoc.IRModule.from_expr(f))


def test_shared_constant_subexpression_is_folded_once():
    c = relay.const(np.array([2.0], "float32"))
    shared = relay.multiply(c, c)
    x = relay.var("x", shape=(1,))
    f = _fold(relay.Function([x], relay.Tuple([relay.add(x, shared), relay.subtract(x, shared)])))
    a, b = f.body.fields
    assert a.args[1] is b.args[1]
    np.testing.assert_array_equal(a.args[1].data, [4.0])
