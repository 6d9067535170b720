"""Long graphs: no recursion over graph depth, and compile / simulate / decode stay near-linear."""
from __future__ import annotations

import numpy as np

import byoc
import npu_sim
from byoc import relay

from npu_builders import composite, partition


def test_two_thousand_chained_layers():
    n = 2000
    p = relay.var("p0", shape=(1, 3, 3, 4), dtype="int8")
    cur = p
    for i in range(n):
        x = relay.var("x", shape=(1, 3, 3, 4), dtype="int8")
        cur = composite("npu.qnn_clip", [x], relay.clip(x, -120 + i % 60, 120 - i % 7))(cur)
    fn = partition([p], cur)
    prog = npu_sim.compile(fn, "ethos-n78-like")
    assert len(prog.layers) == n
    x = np.random.default_rng(0).integers(-128, 128, (1, 3, 3, 4)).astype(np.int8)
    (out,), st = npu_sim.simulate(npu_sim.Program.from_bytes(prog.to_bytes()), {"p0": x})
    assert np.array_equal(out, byoc.evaluate(fn, {"p0": x})[0])
    assert len(st.per_layer) == n and sum(s.exclusive_cycles for s in st.per_layer) == st.total_cycles
