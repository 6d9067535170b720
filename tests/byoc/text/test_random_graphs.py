"""Hypothesis: random graphs of every construct (shared values, lets, ifs, closures, globals, constants)."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import byoc
from byoc import relay
from byoc.ir.module import IRModule

T = relay.TensorType((2, 3), "float32")
UNARY = ["nn.relu", "negative", "abs", "exp", "tanh", "sigmoid", "floor", "copy"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "divide"]
NAMES = ["x", "x_1", "0", "a b", "let", "v"]
CAST_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float64", "float16"]

index = st.integers(0, 10**6)
f32 = st.floats(width=32, allow_nan=True, allow_infinity=True)
instruction = st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(UNARY), index),
    st.tuples(st.just("binary"), st.sampled_from(BINARY), index, index),
    st.tuples(st.just("scalar"), st.sampled_from(BINARY), index, f32, st.booleans()),
    st.tuples(st.just("tensor"), st.sampled_from(CAST_DTYPES), st.integers(0, 2**32 - 1)),
    st.tuples(st.just("clip"), index, st.floats(allow_nan=False), st.floats(allow_nan=False)),
    st.tuples(st.just("tuple"), index, index, st.integers(0, 1)),
    st.tuples(st.just("let"), index, st.sampled_from(NAMES)),
    st.tuples(st.just("if"), index, index, st.booleans()),
    st.tuples(st.just("fn"), index, index, st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("global"), index, st.sampled_from(UNARY)),
)


def build(program) -> IRModule:
    x, y = relay.var("x", T), relay.var("x", T)  # two distinct variables with one name
    c = relay.var("c", shape=(), dtype="bool")
    pool = [x, y]
    lets = []
    shared_scalar = None
    mod = IRModule()
    for ins in program:
        kind = ins[0]
        pick = lambda i: pool[i % len(pool)]  # noqa: E731
        if kind == "unary":
            pool.append(relay.op.make_call(ins[1], [pick(ins[2])]))
        elif kind == "binary":
            pool.append(relay.op.make_call(ins[1], [pick(ins[2]), pick(ins[3])]))
        elif kind == "scalar":
            if ins[4] and shared_scalar is not None:
                const = shared_scalar  # the same Constant object used again
            else:
                const = shared_scalar = relay.const(np.float32(ins[3]))
            pool.append(relay.op.make_call(ins[1], [pick(ins[2]), const]))
        elif kind == "tensor":
            rng = np.random.default_rng(ins[2])
            raw = rng.integers(0, 256, 6 * np.dtype(ins[1]).itemsize, dtype=np.uint8).view(ins[1]).reshape(2, 3)
            if ins[1] == "bool":
                raw = raw.view(np.uint8) % 2 == 1
            pool.append(relay.cast(relay.const(raw), "float32"))
        elif kind == "clip":
            lo, hi = sorted((ins[2], ins[3]))
            pool.append(relay.clip(pick(ins[1]), lo, hi))
        elif kind == "tuple":
            t = relay.Tuple([pick(ins[1]), pick(ins[2])])
            pool.append(relay.TupleGetItem(t, ins[3]))
        elif kind == "let":
            v = relay.var(ins[2], T)
            lets.append((v, pick(ins[1])))
            pool.append(v)
        elif kind == "if":
            then = pick(ins[1])
            other = relay.nn.relu(pick(ins[2])) if ins[3] else pick(ins[2])  # a branch-local node, or shared
            pool.append(relay.If(c, then, other))
        elif kind == "fn":
            p = relay.var(ins[3], T)
            f = relay.Function([p], relay.add(p, pick(ins[1])))  # captures an outer value
            if ins[4]:
                fv = relay.var("f", relay.FuncType([T], T))
                lets.append((fv, f))
                pool.append(relay.Call(fv, [pick(ins[2])]))
            else:
                pool.append(relay.Call(f, [pick(ins[2])]))
        elif kind == "global":
            name = f"g{len(mod)}"
            p = relay.var("p", T)
            mod[name] = relay.Function([p], relay.op.make_call(ins[2], [p]))
            pool.append(relay.Call(mod.get_global_var(name), [pick(ins[1])]))
    body = relay.Tuple(pool[-3:])
    for v, value in reversed(lets):
        body = relay.Let(v, value, body)
    mod["main"] = relay.Function([x, y, c], body)
    return mod


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(instruction, min_size=1, max_size=30))
def test_random_graph_round_trip(program):
    mod = build(program)
    text = mod.astext()
    parsed = byoc.parse(text)
    assert byoc.structural_equal(parsed, mod), text
    assert parsed.astext() == text
    typed = relay.transform.InferType()(mod)
    typed_text = typed.astext()
    reparsed = byoc.parse(typed_text)
    assert byoc.structural_equal(reparsed, mod)
    assert relay.transform.InferType()(reparsed).astext() == typed_text
