"""Bad input never crashes: unsupported constructs are NPUErrors that list every problem, at build time."""
from __future__ import annotations

import numpy as np
import pytest

import npu_sim
from byoc import relay
from byoc.errors import ExecutionError, NPUError

from npu_builders import binary_composite, composite, conv_composite, dense_composite, partition, requant_scales


def _conv(rng, **kw):
    w = rng.integers(-128, 128, size=(4, 3, 3, 3)).astype(np.int8)
    return conv_composite((1, 6, 6, 3), w, s_w=requant_scales(rng, 4), **kw)


def test_tflite_float_requantize_is_refused_with_a_reason():
    rng = np.random.default_rng(0)
    p, body = dense_composite((1, 8), rng.integers(-128, 128, (4, 8)).astype(np.int8), rounding="TFLITE_FLOAT")
    with pytest.raises(NPUError, match="TFLITE_FLOAT.*not fixed-point"):
        npu_sim.compile(partition([p], body), "vta-default")


def test_every_unsupported_construct_is_listed_at_once():
    rng = np.random.default_rng(1)
    p, conv = _conv(rng)
    x = relay.var("x", shape=(1, 4, 4, 4), dtype="int8")
    odd = composite("npu.qnn_softmax", [x], relay.clip(x, -10, 10))(conv)     # unknown composite
    tanh = relay.tanh(relay.cast(odd, "float32"))                             # bare ops the NPU does not run
    fn = partition([p], tanh)
    with pytest.raises(NPUError) as e:
        npu_sim.compile(fn, "ethos-u55-256-like")
    msg = str(e.value)
    assert "composite 'npu.qnn_softmax' is not supported" in msg
    assert "bare op cast is not supported" in msg and "bare op tanh is not supported" in msg
    assert "hint:" in msg


def test_wrong_compiler_and_grouped_conv_and_broadcast_add():
    rng = np.random.default_rng(2)
    p, body = _conv(rng)
    fn = relay.Function([p], body).with_attr("Compiler", "ethos-n")
    with pytest.raises(NPUError, match="for compiler 'ethos-n', not 'npu'"):
        npu_sim.compile(fn, "vta-default")
    w = rng.integers(-128, 128, size=(4, 3, 3, 2)).astype(np.int8)
    x = relay.var("x", shape=(1, 6, 6, 4), dtype="int8")
    conv = relay.qnn.op.conv2d(x, relay.const(w), relay.const(0), relay.const(0), relay.const(np.float32(0.1)),
                               relay.const(np.full(4, 0.1, np.float32)), groups=2, data_layout="NHWC",
                               kernel_layout="OHWI", kernel_size=(3, 3), channels=4)
    y = relay.qnn.op.requantize(conv, relay.const(np.full(4, 0.01)), relay.const(0), relay.const(np.float32(0.2)),
                                relay.const(0), axis=3)
    q = relay.var("q", shape=(1, 6, 6, 4), dtype="int8")
    fn = partition([q], composite("npu.qnn_conv2d", [x], y)(q))
    with pytest.raises(NPUError, match=r"grouped convolution \(groups=2"):
        npu_sim.compile(fn, "vta-default")


def test_non_constant_weights_are_rejected():
    x = relay.var("x", shape=(1, 4, 4, 3), dtype="int8")
    wv = relay.var("w", shape=(2, 1, 1, 3), dtype="int8")
    conv = relay.qnn.op.conv2d(x, wv, relay.const(0), relay.const(0), relay.const(np.float32(0.1)),
                               relay.const(np.full(2, 0.1, np.float32)), data_layout="NHWC", kernel_layout="OHWI",
                               kernel_size=(1, 1), channels=2)
    y = relay.qnn.op.requantize(conv, relay.const(np.full(2, 0.01)), relay.const(0), relay.const(np.float32(0.2)),
                                relay.const(0), axis=3)
    p, pw = relay.var("p", shape=(1, 4, 4, 3), dtype="int8"), relay.var("pw", shape=(2, 1, 1, 3), dtype="int8")
    fn = partition([p, pw], composite("npu.qnn_conv2d", [x, wv], y)(p, pw))
    with pytest.raises(NPUError, match="weight must be a constant"):
        npu_sim.compile(fn, "vta-default")


def test_bad_simulation_inputs_are_listed():
    ps, body = binary_composite("add", (1, 3, 3, 4))
    prog = npu_sim.compile(partition(ps, body), "ethos-n78-like")
    with pytest.raises(ExecutionError) as e:
        npu_sim.simulate(prog, {"p0": np.zeros((1, 3, 3, 5), np.int8), "zz": np.zeros(1)})
    msg = str(e.value)
    assert "missing input 'p1'" in msg and "expected int8[1, 3, 3, 4]" in msg and "unknown input(s) zz" in msg
    with pytest.raises(NPUError, match="takes an npu_sim Program"):
        npu_sim.simulate(b"not a program", {})
