"""SimplifyInference: batch_norm becomes multiply/add, bit-exact against numpy written here."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.ir.analysis import count_ops
from byoc.transform import InferType, SimplifyInference


def _bn_numpy(x, gamma, beta, mean, var, axis, eps, scale, center):
    """TVM's BatchNormToInferUnpack in float32 numpy: each op rounds to float32."""
    s = np.float32(1) / np.sqrt(var + np.float32(eps))
    if scale:
        s = s * gamma
    shift = -mean * s
    if center:
        shift = shift + beta
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return x * s.reshape(shape) + shift.reshape(shape)


@pytest.mark.parametrize("shape,axis,scale,center", [
    ((2, 4, 5, 3), 1, True, True),      # NCHW: expand_dims to (4, 1, 1)
    ((2, 5, 3, 4), 3, True, True),      # NHWC: last axis, no expand_dims
    ((2, 5, 3, 4), -1, False, True),
    ((3, 4), 1, True, False),
])
def test_batch_norm_rewrite_is_bit_exact(shape, axis, scale, center):
    rng = np.random.default_rng(7)
    c = shape[axis]
    x = rng.normal(size=shape).astype("float32")
    gamma, beta, mean = (rng.normal(size=c).astype("float32") for _ in range(3))
    var = rng.uniform(0.1, 3.0, c).astype("float32")
    names = ("x", "gamma", "beta", "mean", "var")
    vs = [relay.var("x", shape=shape)] + [relay.var(n, shape=(c,)) for n in names[1:]]
    out = relay.nn.batch_norm(*vs, axis=axis, epsilon=1e-3, scale=scale, center=center)[0]
    mod = byoc.IRModule.from_expr(relay.Function(vs, relay.nn.relu(out)))
    simplified = SimplifyInference()(mod)
    ops = count_ops(simplified["main"])
    assert "nn.batch_norm" not in ops
    assert ops.get("expand_dims", 0) == (2 if (axis % len(shape)) != len(shape) - 1 else 0)
    InferType()(simplified)
    inputs = dict(zip(names, (x, gamma, beta, mean, var)))
    expected = np.maximum(_bn_numpy(x, gamma, beta, mean, var, axis % len(shape), 1e-3, scale, center), 0)
    got_after = byoc.evaluate(simplified, inputs)[0]
    got_before = byoc.evaluate(mod, inputs)[0]
    np.testing.assert_array_equal(got_after, expected)
    np.testing.assert_array_equal(got_before, expected)


def test_other_tuple_fields_keep_the_batch_norm_call():
    x = relay.var("x", shape=(1, 2, 2, 2))
    params = [relay.var(n, shape=(2,)) for n in ("g", "b", "m", "v")]
    bn = relay.nn.batch_norm(x, *params)
    mod = byoc.IRModule.from_expr(relay.Function([x] + params, relay.Tuple([bn[0], bn[1]])))
    ops = count_ops(SimplifyInference()(mod)["main"])
    assert ops["nn.batch_norm"] == 1 and ops["multiply"] >= 1
