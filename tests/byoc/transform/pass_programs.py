"""Random well-scoped programs for pass property tests: sharing, duplicate calls, constant sub-expressions,
Lets (some dead), Ifs, closures and batch norms, over float32[3] tensors. Deterministic per seed."""
from __future__ import annotations

import random

import numpy as np

from byoc import relay

INPUTS = {"c": np.array(True), "x": np.array([1.0, -2.0, 0.25], "float32")}


def random_program(seed: int) -> relay.Function:
    rng = random.Random(seed)
    x = relay.var("x", shape=(3,))
    c = relay.var("c", shape=(), dtype="bool")
    k = relay.const(np.array([0.5, -1.5, 2.0], "float32"))
    pool: list = [x, k]

    def pick(p):
        return p[rng.randrange(len(p))]

    def expr(p, depth):
        kind = rng.randrange(10)
        a, b = pick(p), pick(p)
        if kind == 0:
            return relay.add(a, b)
        if kind == 1:
            return relay.multiply(a, relay.const(0.5))
        if kind == 2:
            return relay.negative(a)
        if kind == 3 and depth < 2:
            return relay.If(c, expr(p, depth + 1), expr(p, depth + 1))
        if kind == 4 and depth < 2:
            y = relay.var("y", shape=(3,))
            return relay.Call(relay.Function([y], expr(p + [y], depth + 1)), [b])
        if kind == 5:
            v, dead = relay.var("v"), relay.var("dead")
            inner = relay.Let(dead, relay.exp(a), relay.add(v, b)) if rng.random() < 0.5 else relay.add(v, b)
            return relay.Let(v, a, inner)
        if kind == 6:  # a constant sub-expression FoldConstant can evaluate
            return relay.add(a, relay.multiply(k, relay.const(np.array([2.0, 0.0, -1.0], "float32"))))
        if kind == 7:  # a duplicate of an earlier call EliminateCommonSubexpr can merge
            calls = [e for e in p if isinstance(e, relay.Call) and isinstance(e.op, relay.Op)]
            if calls:
                e = pick(calls)
                return relay.Call(e.op, e.args, e.attrs)
        if kind == 8:
            vec = [relay.const(np.array(v, "float32")) for v in ([1.5, 0.5, 2.0], [0.1, -0.2, 0.3],
                                                                  [0.0, 1.0, -1.0], [0.5, 1.0, 2.0])]
            return relay.reshape(relay.nn.batch_norm(relay.reshape(a, (1, 3)), *vec, axis=1)[0], (3,))
        return relay.subtract(a, b)

    for _ in range(rng.randrange(3, 14)):
        pool.append(expr(pool, 0))
    return relay.Function([c, x], relay.Tuple([pool[-1]] + [pick(pool) for _ in range(2)]))

