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


@pytest.mark.parametrize("cin,channels", [(1, 1), (4, 1), (1, 3), (4, 17)])
def test_fused_conv_with_a_partial_channel_block_writes_only_its_output(monkeypatch, cin, channels):
    """Regression (differential fuzzer): a 1-channel uint8 conv → bias → requantize kernel stored its single lane
    with a 4-byte ``vmovd`` after LLVM folded the masked store, writing 3 bytes past the output buffer."""
    monkeypatch.setattr(executor, "GUARD_BYTES", 64)
    monkeypatch.setattr(executor, "_GUARDS", executor._Guards())
    rng = np.random.default_rng(channels)
    x = relay.var("x", shape=(1, 1, 1, cin), dtype="uint8")
    w = relay.const(rng.integers(0, 256, (channels, 1, 1, cin)).astype("uint8"))
    conv = relay.qnn.op.conv2d(x, w, relay.const(0), relay.const(0), relay.const(1.0), relay.const(0.0009765625),
                               kernel_size=(1, 1), channels=channels, dilation=(2, 2), data_layout="NHWC",
                               kernel_layout="OHWI")
    bias = relay.nn.bias_add(conv, relay.const(rng.integers(-100, 100, channels).astype("int32")), axis=3)
    out = relay.qnn.op.requantize(bias, relay.const(0.0009765625, "float64"), relay.const(0), relay.const(0.0019378662),
                                  relay.const(0), axis=3, out_dtype="uint8")
    mod = byoc.IRModule.from_expr(relay.Function([x], out))
    data = rng.integers(0, 256, (1, 1, 1, cin)).astype("uint8")
    m = byoc.build(mod, target="llvm")
    (got,) = m.run({"x": data})  # raises ExecutionError if any guard byte changed
    np.testing.assert_array_equal(got, byoc.evaluate(mod, {"x": data})[0])
