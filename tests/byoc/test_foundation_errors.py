"""Bad input raises the project's own errors (ByocError subclasses) whose messages name the op or node."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import (ByocError, ExecutionError, IRError, ParseError, PartitionError, PassError,
                         PatternError, TypeInferenceError)
from byoc.ir.verify import verify
from byoc.transform import InferType


def _x():
    return relay.var("x", shape=(1, 3, 8, 8))


def _w(shape=(4, 3, 3, 3)):
    return relay.var("w", shape=shape)


def _typecheck(expr):
    return InferType()(byoc.IRModule.from_expr(expr))


def _relu_mod():
    return byoc.IRModule.from_expr(relay.nn.relu(_x()))


MAIN = "def @main(%x: Tensor[(3), float32]) {{ {} }}"

# (case name, action, expected error type, fragments the message must contain)
CASES = [
    ("wrong arity", lambda: relay.op.make_call("add", (_x(),)), IRError, ["add takes 2 arguments", "got 1"]),
    ("unknown op", lambda: relay.op.make_call("nn.conv2", (_x(), _w())), IRError,
     ["unknown op 'nn.conv2'", "did you mean 'nn.conv2d'"]),
    ("unknown attribute", lambda: relay.op.make_call("nn.conv2d", (_x(), _w()), {"stride": (1, 1)}), IRError,
     ["nn.conv2d", "'stride'", "did you mean 'strides'"]),
    ("bad attribute value", lambda: relay.nn.conv2d(_x(), _w(), padding=(1, 2, 3)), IRError, ["padding"]),
    ("attribute of the wrong type", lambda: relay.nn.conv2d(_x(), _w(), groups="two"), IRError,
     ["nn.conv2d", "'groups' must be int", "str 'two'"]),
    ("zero stride", lambda: _typecheck(relay.nn.conv2d(_x(), _w(), strides=(0, 1))), TypeInferenceError,
     ["nn.conv2d", "positive strides", "(0, 1)"]),
    ("fractional dimension", lambda: relay.var("x", shape=(1.5, 2)), IRError, ["shape", "(1.5, 2)"]),
    ("NaN quantization scale", lambda: byoc.evaluate(byoc.IRModule.from_expr(relay.qnn.op.requantize(
        relay.var("q", shape=(4,), dtype="int8"), relay.const(float("nan")), relay.const(0), relay.const(0.5),
        relay.const(0))), {"q": np.zeros(4, "int8")}), IRError, ["qnn.requantize", "input scale", "nan"]),
    ("zero output scale", lambda: byoc.evaluate(byoc.IRModule.from_expr(relay.qnn.op.requantize(
        relay.var("q", shape=(4,), dtype="int8"), relay.const(0.5), relay.const(0), relay.const(0.0),
        relay.const(0))), {"q": np.zeros(4, "int8")}), IRError, ["qnn.requantize", "output scale", "positive"]),
    ("AnnotateTarget without a target list", lambda: relay.transform.AnnotateTarget(None), PassError,
     ["AnnotateTarget", "list of strings", "NoneType"]),
    ("Sequential of non-passes", lambda: relay.transform.Sequential([relay.transform.InferType(), 2]), PassError,
     ["Sequential", "1: int 2"]),
    ("partition_for params not a dict", lambda: byoc.partition_for("npu", _relu_mod(), params=5), PartitionError,
     ["params must be a dict", "int"]),
    ("rewrite without callbacks", lambda: relay.dataflow_pattern.rewrite(5, _x()), PatternError,
     ["DFPatternCallback", "int"]),
    ("evaluate of nothing", lambda: byoc.evaluate(None, {}), ExecutionError, ["IRModule", "NoneType"]),
    ("param of the wrong shape", lambda: byoc.evaluate(_relu_mod(), {}, params={"x": np.zeros(3, "float32")}),
     IRError, ["%x", "Tensor[(1, 3, 8, 8), float32]", "float32[3]"]),
    ("string where a float goes", lambda: relay.op.make_call("nn.leaky_relu", (_x(),), {"alpha": "a"}), IRError,
     ["nn.leaky_relu", "'alpha'", "float"]),
    ("wrong dtype", lambda: _typecheck(relay.add(_x(), relay.var("y", shape=(1, 3, 8, 8), dtype="int8"))),
     TypeInferenceError, ["add", "rhs", "float32", "int8"]),
    ("shape mismatch", lambda: _typecheck(relay.add(_x(), relay.var("y", shape=(2, 3)))), TypeInferenceError,
     ["add", "(1, 3, 8, 8)", "(2, 3)", "broadcast"]),
    ("conv weight channels", lambda: _typecheck(relay.nn.conv2d(_x(), _w((4, 2, 3, 3)))), TypeInferenceError,
     ["nn.conv2d", "weight"]),
    ("batch_norm vector length", lambda: _typecheck(relay.nn.batch_norm(
        _x(), *(relay.var(n, shape=(4,)) for n in ("g", "b", "m", "v")))[0]), TypeInferenceError,
     ["nn.batch_norm", "gamma"]),
    ("tuple index out of range", lambda: _typecheck(relay.TupleGetItem(relay.Tuple([_x()]), 3)),
     TypeInferenceError, ["index 3", "1 fields"]),
    ("untyped variable", lambda: _typecheck(relay.nn.relu(relay.var("u"))), TypeInferenceError, ["%u"]),
    ("unknown dtype", lambda: relay.var("x", shape=(1,), dtype="floot32"), IRError, ["floot32"]),
    ("bad shape", lambda: relay.var("x", shape="abc"), IRError, ["shape"]),
    ("negative dimension", lambda: relay.var("x", shape=(2, -1)), IRError, ["negative dimension"]),
    ("ragged constant", lambda: relay.const([[1, 2], [3]]), IRError, ["constant", "[[1, 2], [3]]"]),
    ("string operand", lambda: relay.add(_x(), "a"), IRError, ["constant", "'a'"]),
    ("non-Var parameter", lambda: relay.Function([relay.const(1)], _x()), IRError, ["parameter 0", "Constant"]),
    ("bad rounding mode", lambda: relay.qnn.op.requantize(_x(), relay.const(1.0), relay.const(0), relay.const(1.0),
                                                         relay.const(0), rounding="BAD"), IRError,
     ["qnn.requantize", "'BAD'"]),
    ("malformed text", lambda: byoc.parse(MAIN.format("add(%x, }")), ParseError, ["1:", "expected an expression"]),
    ("unknown op in text", lambda: byoc.parse(MAIN.format("nn.rleu(%x)")), ParseError, ["nn.rleu"]),
    ("unknown attribute in text", lambda: byoc.parse(MAIN.format("clip(%x, a_mn=0f, a_max=1f)")), ParseError,
     ["clip", "a_mn"]),
    ("undefined variable in text", lambda: byoc.parse(MAIN.format("add(%x, %y)")), ParseError, ["%y"]),
    ("binary garbage", lambda: byoc.parse("\x00\x01\x02"), ParseError, ["1:1"]),
    ("missing input", lambda: byoc.evaluate(_relu_mod(), {}), ExecutionError, ["missing input %x"]),
    ("wrong input shape", lambda: byoc.evaluate(_relu_mod(), {"x": np.zeros(2, "float32")}), ExecutionError,
     ["%x", "(1, 3, 8, 8)", "(2,)"]),
    ("wrong input dtype", lambda: byoc.evaluate(_relu_mod(), {"x": np.zeros((1, 3, 8, 8), "int8")}),
     ExecutionError, ["%x", "int8"]),
    ("unknown function", lambda: byoc.IRModule()["main"], IRError, ["@main"]),
    ("pass on an expression", lambda: relay.transform.FoldConstant()(_x()), PassError, ["FoldConstant"]),
    ("ill-formed module", lambda: verify(byoc.IRModule({"main": relay.Function([], _x())})), IRError,
     ["%x", "never bound"]),
]


@pytest.mark.parametrize("name,action,error,fragments", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_a_named_project_error(name, action, error, fragments):
    with pytest.raises(error) as info:
        action()
    text = str(info.value)
    for f in fragments:
        assert f in text, f"{name}: {f!r} not in {text!r}"


def test_no_other_exception_type_escapes():
    escaped = []
    for name, action, _, _ in CASES:
        try:
            action()
            escaped.append(f"{name}: no error")
        except ByocError:
            pass
        except Exception as e:  # noqa: BLE001 - this is what the test looks for
            escaped.append(f"{name}: {type(e).__name__}: {e}")
    assert escaped == []
