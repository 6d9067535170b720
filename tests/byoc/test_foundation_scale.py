"""Scale: a 100,000-op chain and a node with 100,000 users build, type-check, print, parse and evaluate, and
every standard pass and the verifier run on them, under Python's default recursion limit."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.ir.analysis import count_ops
from byoc.ir.verify import verify
from byoc.transform import (DeadCodeElimination, EliminateCommonSubexpr, FoldConstant, InferType, SimplifyInference,
                            ToANormalForm, ToGraphNormalForm)

N = 100_000
X = np.array([0.75, -3.5], "float32")


@pytest.fixture(autouse=True, scope="module")
def _default_recursion_limit():
    assert sys.getrecursionlimit() <= 1000, "scale tests must run under the default recursion limit"


def _chain():
    """x -> add 1.5 -> multiply 0.5 -> negative -> ... ; every 1000th add uses add(2, 2) (foldable)."""
    x = relay.var("x", shape=(2,), dtype="float32")
    one_half, half, two = relay.const(1.5), relay.const(0.5), relay.const(2.0)
    e = x
    for i in range(N):
        k = i % 3
        if k == 0:
            e = relay.add(e, relay.add(two, two) if i % 1000 == 0 else one_half)
        elif k == 1:
            e = relay.multiply(e, half)
        else:
            e = relay.negative(e)
    return byoc.IRModule.from_expr(relay.Function([x], e))


def _chain_expected(x):
    v = x.copy()
    for i in range(N):
        k = i % 3
        if k == 0:
            v = v + (np.float32(4.0) if i % 1000 == 0 else np.float32(1.5))
        elif k == 1:
            v = v * np.float32(0.5)
        else:
            v = -v
    return v


def _wide():
    """One negative(x) used by 100,000 adds, all returned in a tuple."""
    x = relay.var("x", shape=(2,), dtype="float32")
    base = relay.negative(x)
    return byoc.IRModule.from_expr(relay.Function([x], relay.Tuple([relay.add(base, relay.const(float(i)))
                                                                   for i in range(N)])))


def _wide_expected(x):
    return -x[None, :] + np.arange(N, dtype=np.float32)[:, None]


@pytest.fixture(scope="module", params=["chain", "wide"])
def big(request):
    build, expected = {"chain": (_chain, _chain_expected), "wide": (_wide, _wide_expected)}[request.param]
    mod = build()
    return request.param, mod, expected(X)


def _assert_evaluates(mod, expected):
    got = byoc.evaluate(mod, {"x": X})
    np.testing.assert_array_equal(np.stack(got) if len(got) > 1 else got[0], expected)


def test_build_type_print_parse_evaluate(big):
    kind, mod, expected = big
    typed = InferType()(mod)
    ret = typed["main"].checked_type.ret_type
    assert ret == relay.TensorType((2,), "float32") if kind == "chain" else len(ret.fields) == N
    text = typed.astext()
    assert text.count("\n") > N
    parsed = byoc.parse(text)
    assert byoc.structural_equal(parsed, mod, map_free_vars=True)
    _assert_evaluates(mod, expected)
    verify(mod)


def test_every_pass_runs(big):
    kind, mod, expected = big
    main = mod["main"]
    ops = count_ops(main)
    folded = FoldConstant()(mod)
    cse = EliminateCommonSubexpr()(mod)
    if kind == "chain":
        assert count_ops(folded["main"])["add"] == ops["add"] - 34  # the 34 add(2, 2) operands fold
        assert count_ops(cse["main"])["add"] == ops["add"] - 33  # ... or merge into one
        _assert_evaluates(folded, expected)
    else:
        assert folded["main"] is main and count_ops(cse["main"]) == ops
    assert DeadCodeElimination()(mod)["main"] is main  # no Let, nothing dead
    assert SimplifyInference()(mod)["main"].body is main.body
    anf = ToANormalForm()(mod)
    _assert_evaluates(anf, expected)
    assert byoc.structural_equal(ToGraphNormalForm()(anf)["main"], main)
    if kind == "chain":  # every binding is used once: inlining them all restores the graph
        assert byoc.structural_equal(DeadCodeElimination(inline_once=True)(anf)["main"], main)
    else:  # the shared negative(x) stays bound; its 100,000 users inside one Let chain stress scoping
        verify(anf)
