"""Sequential, PassContext (opt_level, disabled_pass, instruments) and error reporting by pass name."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import PassError, TypeInferenceError
from byoc.ir.analysis import count_ops
from byoc.transform import (DeadCodeElimination, EliminateCommonSubexpr, FoldConstant, InferType, PassContext,
                            PassTimingInstrument, PrintAfter, Sequential, SimplifyInference, ToANormalForm,
                            ToGraphNormalForm, module_pass)


def _mod():
    x = relay.var("x", shape=(2,))
    c = relay.const(np.array([1.0, 2.0], "float32"))
    return byoc.IRModule.from_expr(relay.Function([x], relay.Tuple([
        relay.add(x, relay.add(c, c)), relay.add(x, relay.add(c, c))])))


def test_pass_names_match_tvm():
    expected = {FoldConstant(): "FoldConstant", DeadCodeElimination(): "DeadCodeElimination",
                EliminateCommonSubexpr(): "EliminateCommonSubexpr", SimplifyInference(): "SimplifyInference",
                ToANormalForm(): "ToANormalForm", ToGraphNormalForm(): "ToGraphNormalForm"}
    for p, name in expected.items():
        assert p.info.name == name
        assert getattr(relay.transform, name) is type(p)


def test_sequential_filters_by_opt_level_and_disabled_pass():
    seq = Sequential([FoldConstant(), EliminateCommonSubexpr()])
    with PassContext(opt_level=2):
        out = seq(_mod())
    assert count_ops(out["main"]) == {"add": 2}  # CSE is opt_level 3
    with PassContext(opt_level=3):
        out = seq(_mod())
    assert count_ops(out["main"]) == {"add": 1}
    with PassContext(opt_level=3, disabled_pass=["FoldConstant"]):
        out = seq(_mod())
    assert count_ops(out["main"]) == {"add": 2}  # merged but not folded: add(c, c) and add(x, .)
    # Called directly, a pass runs whatever the opt_level (as in TVM).
    with PassContext(opt_level=0):
        assert count_ops(EliminateCommonSubexpr()(_mod())["main"]) == {"add": 2}


def test_instruments_time_and_print_every_pass():
    timing = PassTimingInstrument()
    printed: list[str] = []
    seq = Sequential([InferType(), FoldConstant(), DeadCodeElimination()])
    with PassContext(opt_level=3, instruments=[timing, PrintAfter(("FoldConstant",), out=printed.append)]):
        seq(_mod())
    names = [n for n, _ in timing.timings]
    assert names[:3] == ["InferType", "FoldConstant", "DeadCodeElimination"]
    assert all(t >= 0 for _, t in timing.timings)
    assert len(printed) == 1 and printed[0].startswith("// after FoldConstant")
    assert "add(%x" in printed[0]


def test_a_failing_pass_is_reported_by_name():
    @module_pass(opt_level=0, name="BrokenPass")
    def broken(mod, ctx):
        raise KeyError("oops")

    with pytest.raises(PassError) as info:
        Sequential([InferType(), broken])(_mod())
    msg = str(info.value)
    assert "BrokenPass" in msg and "KeyError" in msg and "InferType" in msg
    assert isinstance(info.value.__cause__, KeyError)


def test_a_byoc_error_keeps_its_type_and_gains_the_pass_name():
    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(3,))
    bad = byoc.IRModule.from_expr(relay.Function([x, y], relay.add(x, y)))
    with pytest.raises(TypeInferenceError, match="in pass InferType"):
        Sequential([FoldConstant(), InferType()])(bad)


def test_pass_on_non_module_is_a_pass_error():
    with pytest.raises(PassError, match="expects an IRModule"):
        FoldConstant()(relay.var("x"))


def test_function_pass_decorator_visits_each_function_but_not_external_ones():
    import byoc
    from byoc import relay
    from byoc.transform import function_pass

    x = relay.var("x", shape=(2,), dtype="float32")
    mod = byoc.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    y = relay.var("y", shape=(2,), dtype="float32")
    mod["ext"] = relay.Function([y], relay.nn.relu(y)).with_attr("Compiler", "npu")
    seen = []

    @function_pass(opt_level=0, name="Negate")
    def negate(func, mod, ctx):
        seen.append(func)
        return func.replace(body=relay.negative(func.body))

    out = negate(mod)
    assert negate.info.name == "Negate"
    assert seen == [mod["main"]]
    assert out["ext"] is mod["ext"]
    got = byoc.evaluate(out, {"x": np.array([1.0, -2.0], "float32")})[0]
    np.testing.assert_array_equal(got, np.array([-1.0, -0.0], "float32"))
