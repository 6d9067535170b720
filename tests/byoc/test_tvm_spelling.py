"""TVM module paths and spellings that TVM programs import: relay.op.op/nn/annotation/_make, relay.expr,
relay.testing, relay.analysis.AnnotatedRegionSet, tvm.ir.make_node/register_op_attr, tvm.tir immediates,
tvm.cpu, Call's type_args, and a named error (never AttributeError) for what is deliberately not provided."""
from __future__ import annotations

import pytest

import byoc as tvm
from byoc import relay
from byoc.errors import ByocError, IRError, UnsupportedAPIError


def test_module_paths():
    from byoc.relay.expr_functor import ExprMutator
    from byoc.relay.op.annotation import compiler_begin, compiler_end
    assert relay.ExprMutator is ExprMutator
    assert relay.op.op.get("add") is relay.op.get("add") is tvm.ir.Op.get("add")
    x = relay.var("x", shape=(1, 2, 4, 4))
    w = relay.var("w", shape=(2, 2, 1, 1))
    assert relay.op.nn.conv2d(x, w).op.name == "nn.conv2d"
    assert relay.expr.Tuple is relay.Tuple and relay.expr.Var is relay.Var
    b = relay.annotation.compiler_begin(x, "t")
    assert b.attrs.compiler == "t" and compiler_end(compiler_begin(x, "t"), "t").op.name == "annotation.compiler_end"
    assert relay.op._make.concatenate(relay.Tuple([x, x]), 1).attrs.axis == 1


def test_attribute_values_and_devices():
    assert tvm.tir.IntImm("int32", 1) == 1 and tvm.tir.FloatImm("float32", 0.5) == 0.5
    with pytest.raises(IRError):
        tvm.tir.IntImm("float32", 1)
    f = relay.Function([], relay.const(1.0)).with_attr("Primitive", tvm.tir.IntImm("int32", 1))
    assert f.attrs["Primitive"] == 1
    assert tvm.ir.make_node("DictAttrs", a=1)["a"] == 1
    assert str(tvm.cpu(0)) == "cpu(0)"


def test_call_accepts_an_empty_type_args_position():
    x = relay.var("x", shape=(2,))
    c = relay.Call(relay.op.get("nn.relu"), [x], None, [])
    assert c.type_args == () and c.span is None
    with pytest.raises(IRError, match="type arguments"):
        relay.Call(relay.op.get("nn.relu"), [x], None, [relay.TensorType((2,), "float32")])
    v = relay.var("f")
    assert isinstance(v(x), relay.Call) and v(x).op is v  # calling a variable


def test_run_opt_pass_returns_the_function_or_its_body():
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], relay.nn.relu(x))
    assert isinstance(relay.testing.run_opt_pass(f, relay.transform.InferType()), relay.Function)
    body = relay.testing.run_opt_pass(relay.nn.relu(x), relay.transform.InferType())
    assert body.checked_type == relay.TensorType((2,), "float32")


def test_what_is_not_provided_raises_a_named_error():
    with pytest.raises(UnsupportedAPIError, match="relay.prelude") as e:
        relay.prelude  # noqa: B018
    assert isinstance(e.value, ByocError) and "porting-from-tvm" in str(e.value)
    with pytest.raises(UnsupportedAPIError, match="Prelude"):
        relay.testing.run_opt_pass(relay.const(1.0), relay.transform.InferType(), import_prelude=True)
    with pytest.raises(UnsupportedAPIError, match="DictAttrs"):
        tvm.ir.make_node("relay.attrs.Conv2DAttrs")
    with pytest.raises(UnsupportedAPIError, match="Match"):
        relay.expr.Match  # noqa: B018
