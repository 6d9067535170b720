"""Printing and parsing 100,000-node graphs under Python's default recursion limit."""
from __future__ import annotations

import sys

import numpy as np

import byoc
from byoc import relay
from byoc.ir.module import IRModule
from byoc.text import parse_expr

N = 100_000


def _check(mod: IRModule) -> str:
    assert sys.getrecursionlimit() <= 1000 + 50  # the default (pytest may add a little), never raised
    text = mod.astext()
    parsed = byoc.parse(text)
    assert byoc.structural_equal(parsed, mod)
    return text


def test_chain_of_100k_ops():
    x = relay.var("x", shape=(2,), dtype="int8")
    y = x
    one = relay.const(np.array([1, -1], np.int8))
    for i in range(N):
        y = relay.add(y, one) if i % 2 else relay.nn.relu(y)
    text = _check(IRModule.from_expr(relay.Function([x], y)))
    assert text.count("\n") >= N


def test_node_with_100k_users():
    x = relay.var("x", shape=(2,))
    shared = relay.nn.relu(x)
    users = [relay.add(shared, relay.const(float(i))) for i in range(N)]
    mod = IRModule.from_expr(relay.Function([x], relay.Tuple(users)))
    parsed = byoc.parse(mod.astext())
    # Checked directly (cheaper than structural_equal at this size): one relu object shared by every user.
    func = parsed["main"]
    fields = func.body.fields
    assert len(fields) == N
    relu = fields[0].args[0]
    assert relu.op.name == "nn.relu" and relu.args[0] is func.params[0]
    for i, call in enumerate(fields):
        assert call.op.name == "add" and call.args[0] is relu
        assert call.args[1].data.dtype == np.float32 and call.args[1].data.item() == float(i)


def test_let_chain_100k_deep():
    x = relay.var("x", shape=(2,), dtype="int32")
    vs = [relay.var(f"v{i}", shape=(2,), dtype="int32") for i in range(N)]
    body = vs[-1]
    for i in reversed(range(N)):
        prev = x if i == 0 else vs[i - 1]
        body = relay.Let(vs[i], relay.add(prev, relay.const(i)), body)
    text = IRModule.from_expr(relay.Function([x], body)).astext()
    assert text.count("let %") == N
    func = byoc.parse(text)["main"]
    # Walk the parsed chain (checked directly; structural_equal at this size is covered by the op chain).
    expr, prev = func.body, func.params[0]
    for i in range(N):
        assert type(expr).__name__ == "Let" and expr.var.type_annotation == vs[i].type_annotation
        assert expr.value.op.name == "add" and expr.value.args[0] is prev and expr.value.args[1].data.item() == i
        prev, expr = expr.var, expr.body
    assert expr is prev


def test_deeply_nested_blocks():
    """fn literals and ifs nested 3,000 deep: blocks are parsed and printed without recursion."""
    depth = 3000
    x = relay.var("x", shape=())
    c = relay.var("c", shape=(), dtype="bool")
    body = x
    for i in range(depth):
        p = relay.var(f"p{i}", shape=())
        if i % 2:
            body = relay.Call(relay.Function([p], relay.add(body, p)), [x])
        else:
            body = relay.If(c, relay.negative(body), x)
    _check(IRModule.from_expr(relay.Function([x, c], body)))


def test_parse_long_hand_written_let_chain():
    """Parsing text not produced by the printer: 20k lets without annotations, each value inline."""
    n = 20_000
    lines = ["free_var %x: int32;"] + [f"let %v{i} = add(%{'x' if i == 0 else f'v{i - 1}'}, 1);" for i in range(n)]
    expr = parse_expr("\n".join(lines + [f"%v{n - 1}"]))
    depth = 0
    while type(expr).__name__ == "Let":
        assert expr.var.name_hint == f"v{depth}" and expr.value.args[0].name_hint == ("x" if depth == 0 else
                                                                                       f"v{depth - 1}")
        depth, expr = depth + 1, expr.body
    assert depth == n and expr.name_hint == f"v{n - 1}"
