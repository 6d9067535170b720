"""BYOC_GUARD_BUFFERS: guard zones around every buffer name the step that wrote outside its buffer."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.backend.llvm import executor
from byoc.errors import ExecutionError


def test_guard_zones_catch_an_out_of_bounds_write(monkeypatch):
    monkeypatch.setattr(executor, "GUARD_BYTES", 64)
    monkeypatch.setattr(executor, "_GUARDS", executor._Guards())
    x = relay.var("x", shape=(2, 3), dtype="int8")
    y = relay.clip(relay.add(x, x), -5, 5)
    m = byoc.build(byoc.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    data = np.arange(6, dtype=np.int8).reshape(2, 3)
    (out,) = m.run({"x": data})
    np.testing.assert_array_equal(out, np.clip(data * 2, -5, 5))
    assert executor._GUARDS.regions, "buffers were not allocated with guards"
    raw, lo, hi = executor._GUARDS.regions[-1]
    raw[hi] = 0  # what a kernel writing one byte past the end would do
    with pytest.raises(ExecutionError, match="wrote outside a buffer"):
        m.run({"x": data})
