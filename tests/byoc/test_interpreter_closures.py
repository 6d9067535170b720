"""Closures in the reference interpreter: lexical capture (nested closures, shadowing, closures returned from
functions, recursion through a let) and O(1) calls (a closure holds its free variables only), so a program
with tens of thousands of let-bound closure calls evaluates in linear time. Expected values are plain numpy
written here."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import ExecutionError
from byoc.interpreter import Closure, Interpreter

HEADER = '#[version = "0.0.5"]\n'
X = np.array([1.5, -2.0, 4.0], "float32")
T = "Tensor[(3), float32]"


def run(text: str, **inputs):
    return byoc.evaluate(byoc.parse(HEADER + text), inputs)


def test_nested_closures_see_every_enclosing_scope():
    out = run(f"""def @main(%x: {T}) {{
  let %a = multiply(%x, 2f);
  let %outer = fn (%b: {T}) {{
    let %c = add(%b, 1f);
    let %inner = fn (%d: {T}) {{
      subtract(add(%a, %c), %d)
    }};
    %inner(%x)
  }};
  %outer(%a)
}}""", x=X)
    a = X * 2
    np.testing.assert_array_equal(out[0], (a + (a + 1)) - X)


def test_shadowing_a_closure_keeps_the_value_it_captured():
    # The closure captures the first %x; the later %x (a different variable of the same name) does not leak in.
    out = run(f"""def @main(%x: {T}) {{
  let %f = fn (%y: {T}) {{
    add(%y, %x)
  }};
  let %x = multiply(%x, %x);
  let %g = fn (%x: {T}) {{
    %f(%x)
  }};
  (%f(%x), %g(%x), %x)
}}""", x=X)
    sq = X * X
    np.testing.assert_array_equal(out[0], sq + X)
    np.testing.assert_array_equal(out[1], sq + X)
    np.testing.assert_array_equal(out[2], sq)


def test_closures_returned_from_a_function_keep_their_own_captures():
    out = run(f"""def @make_adder(%k: {T}) {{
  let %scaled = multiply(%k, 10f);
  fn (%v: {T}) {{
    add(%v, %scaled)
  }}
}}

def @main(%x: {T}) {{
  let %add_x = @make_adder(%x);
  let %add_neg = @make_adder(negative(%x));
  let %twice = fn (%h, %v: {T}) {{
    %h(%h(%v))
  }};
  (%add_x(%x), %add_neg(%x), %twice(%add_x, %x))
}}""", x=X)
    np.testing.assert_array_equal(out[0], X + X * 10)
    np.testing.assert_array_equal(out[1], X + (-X) * 10)
    np.testing.assert_array_equal(out[2], (X + X * 10) + X * 10)


def test_closure_chosen_by_an_if_and_called_afterwards():
    text = f"""def @main(%c: bool, %x: {T}) {{
  let %a = add(%x, 3f);
  let %f = if (%c) {{
    fn (%y: {T}) {{ multiply(%y, %a) }}
  }} else {{
    fn (%y: {T}) {{ subtract(%y, %a) }}
  }};
  %f(%x)
}}"""
    np.testing.assert_array_equal(run(text, c=np.array(True), x=X)[0], X * (X + 3))
    np.testing.assert_array_equal(run(text, c=np.array(False), x=X)[0], X - (X + 3))


def test_a_let_bound_closure_can_call_itself():
    # let %count = fn (%i, %s) { if (%i) { %count(%i - 1, %s + %i) } else { %s } }: acc + n + (n - 1) + ... + 1,
    # by recursion through the let variable, 1,000 calls deep (an int32 condition is true when non-zero).
    n, acc = relay.var("n", shape=(), dtype="int32"), relay.var("acc", shape=(), dtype="int32")
    i, s = relay.var("i", shape=(), dtype="int32"), relay.var("s", shape=(), dtype="int32")
    count = relay.var("count")
    step = relay.Call(count, [relay.subtract(i, relay.const(1)), relay.add(s, i)])
    func = relay.Function([i, s], relay.If(i, step, s))
    main = relay.Function([n, acc], relay.Let(count, func, relay.Call(count, [n, acc])))
    out = byoc.evaluate(byoc.IRModule({"main": main}), {"n": np.array(1000, "int32"), "acc": np.array(7, "int32")})
    assert int(out[0]) == 7 + sum(range(1, 1001))


def test_a_closure_captures_only_its_free_variables():
    """The O(1) call: the captured environment does not grow with the caller's bindings."""
    x = relay.var("x", shape=(3,))
    y = relay.var("y", shape=(3,))
    # main(x) = let t0 = x + 1; ...; let t999 = t998 + 1; fn (y) { y + t500 }
    ts = [relay.var(f"t{i}", shape=(3,)) for i in range(1000)]
    k = ts[500]
    body = relay.Function([y], relay.add(y, k))
    for i in reversed(range(len(ts))):
        body = relay.Let(ts[i], relay.add(ts[i - 1] if i else x, relay.const(1.0)), body)
    mod = byoc.IRModule.from_expr(relay.Function([x], body))
    value = Interpreter(mod).call_function(mod["main"], [X])
    assert isinstance(value, Closure) and list(value.env) == [id(k)]
    np.testing.assert_array_equal(value.env[id(k)], X + 501)


def test_twenty_thousand_let_bound_closure_calls():
    """An A-normal-form chain v_i = f(v_{i-1}) with f = fn(y) { y + k }: 20,000 closure calls, each O(1)
    (copying the caller's environment per call made this quadratic: about 2.5 s here, 12 s at 40,000)."""
    n = 20_000
    x = relay.var("x", shape=(3,))
    k = relay.var("k", shape=(3,))
    y = relay.var("y", shape=(3,))
    f = relay.var("f")
    binds = [(k, relay.multiply(x, relay.const(0.5))), (f, relay.Function([y], relay.add(y, k)))]
    prev = x
    for i in range(n):
        v = relay.var(f"v{i}", shape=(3,))
        binds.append((v, relay.Call(f, [prev])))
        prev = v
    body = prev
    for var, val in reversed(binds):
        body = relay.Let(var, val, body)
    (out,) = byoc.evaluate(byoc.IRModule.from_expr(relay.Function([x], body)), {"x": X})
    expected = X.copy()
    half = X * np.float32(0.5)
    for _ in range(n):  # float32 additions in the same order as the program
        expected = expected + half
    np.testing.assert_array_equal(out, expected)


def test_an_unbound_variable_is_still_reported():
    x = relay.var("x", shape=(3,))
    ghost = relay.var("ghost", shape=(3,))
    y = relay.var("y", shape=(3,))
    call = relay.Call(relay.Function([y], relay.add(y, ghost)), [x])
    mod = byoc.IRModule({"main": relay.Function([x], call)})
    with pytest.raises(ExecutionError, match="%ghost is not bound"):
        byoc.evaluate(mod, {"x": X})
