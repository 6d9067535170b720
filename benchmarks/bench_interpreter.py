"""Reference interpreter: A-normal-form chains of let-bound closure calls, ``v_i = f(v_{i-1})`` with
``f = fn (y) { y + k }`` capturing ``k``, at 2k/20k/100k calls.

Peer, measured in the same run: the same chain with the closure inlined (``v_i = v_{i-1} + k``: the same adds,
no calls), so "ratio" reads "a closure call costs N inlined adds". Growth rows compare each size with the
previous one: linear interpretation gives about 10× the time for 10× the calls (it was quadratic when every
call copied the caller's environment). CPU seconds of this process, best of a few runs.
"""
from __future__ import annotations

import time

import numpy as np

SIZES = (2_000, 20_000, 100_000)


def chain(n: int, closures: bool):
    import byoc
    from byoc import relay
    x = relay.var("x", shape=(4,))
    k = relay.var("k", shape=(4,))
    y = relay.var("y", shape=(4,))
    f = relay.var("f")
    binds = [(k, relay.multiply(x, relay.const(0.5)))]
    if closures:
        binds.append((f, relay.Function([y], relay.add(y, k))))
    prev = x
    for i in range(n):
        v = relay.var(f"v{i}", shape=(4,))
        binds.append((v, relay.Call(f, [prev]) if closures else relay.add(prev, k)))
        prev = v
    body = prev
    for var, val in reversed(binds):
        body = relay.Let(var, val, body)
    return byoc.IRModule.from_expr(relay.Function([x], body))


def _best_eval_s(mod, repeats: int) -> float:
    import byoc
    inputs = {"x": np.arange(4, dtype=np.float32)}
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        byoc.evaluate(mod, inputs)
        best = min(best, time.process_time() - t0)
    return best


def run() -> list[dict]:
    rows: list[dict] = []
    previous = None
    for n in SIZES:
        repeats = 3 if n <= 20_000 else 1
        calls = _best_eval_s(chain(n, closures=True), repeats)
        inlined = _best_eval_s(chain(n, closures=False), repeats)
        rows.append({"name": f"{n} let-bound closure calls", "value": calls * 1e3, "unit": "ms",
                     "peer": "the same chain, closure inlined", "peer_value": inlined * 1e3,
                     "ratio": calls / inlined})
        if previous is not None:
            rows.append({"name": f"closure calls growth {previous[0]}→{n}", "value": calls / previous[1],
                         "unit": f"× time for {n // previous[0]}× calls", "target": f"<= {1.2 * n / previous[0]:g}"})
        previous = (n, calls)
    return rows


def main() -> None:
    for r in run():
        extra = f"  (peer {r['peer_value']:.1f} ms, ratio {r['ratio']:.2f})" if "peer" in r else ""
        print(f"{r['name']:<36} {r['value']:10.3f} {r['unit']}{extra}")


if __name__ == "__main__":
    main()
