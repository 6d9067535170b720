"""stack, take, nn.depth_to_space, nn.space_to_depth, argmax, argmin: named type errors and semantics against
loops written independently here (TFLite's index formulas)."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import ByocError


def _eval(params, body, inputs):
    mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function(params, body)))
    return byoc.evaluate(mod, {p.name_hint: v for p, v in zip(params, inputs)})[0]


def _infer(params, body):
    return relay.transform.InferType()(relay.IRModule.from_expr(relay.Function(params, body)))


@pytest.mark.parametrize("build,message", [
    (lambda a, b: relay.stack([a, b], 0), "stack: argument 'data\\[1\\]' expected int8\\[2, 3\\]"),
    (lambda a, b: relay.stack([a, a], 3), "stack: argument 'axis'"),
    (lambda a, b: relay.take(a, relay.const(np.zeros(2, np.float32)), axis=0), "take: argument 'indices'"),
    (lambda a, b: relay.take(a, relay.const(np.zeros((3,), np.int32)), axis=1, batch_dims=1),
     "take: argument 'indices' expected leading batch dimensions"),
    (lambda a, b: relay.argmax(a, axis=(0, 1)), "argmax: argument 'axis' expected exactly one"),
    (lambda a, b: relay.nn.depth_to_space(a, 2, layout="NHWC"), "nn.depth_to_space: argument 'data'"),
])
def test_type_errors_name_the_op_and_argument(build, message):
    a = relay.var("a", shape=(2, 3), dtype="int8")
    b = relay.var("b", shape=(2, 4), dtype="int8")
    with pytest.raises(ByocError, match=message):
        _infer([a, b], build(a, b))


def test_depth_to_space_and_back_follow_tflite_index_formula():
    rng = np.random.default_rng(0)
    bs, n, h, w, co = 2, 1, 2, 3, 3
    x = rng.integers(-128, 128, (n, h, w, co * bs * bs)).astype(np.int8)
    v = relay.var("x", shape=x.shape, dtype="int8")
    got = _eval([v], relay.nn.depth_to_space(v, bs, layout="NHWC"), [x])
    want = np.zeros((n, h * bs, w * bs, co), np.int8)
    for y in range(h * bs):
        for xx in range(w * bs):
            for c in range(co):
                want[0, y, xx, c] = x[0, y // bs, xx // bs, ((y % bs) * bs + xx % bs) * co + c]
    assert np.array_equal(got, want)
    u = relay.var("y", shape=want.shape, dtype="int8")
    assert np.array_equal(_eval([u], relay.nn.space_to_depth(u, bs, layout="NHWC"), [want]), x)


def test_argmax_ties_take_the_first_index_and_nan_never_wins():
    x = np.array([[1, 3, 3, 0], [2, 2, 2, 2]], np.int8)
    v = relay.var("x", shape=x.shape, dtype="int8")
    assert _eval([v], relay.argmax(v, axis=1), [x]).tolist() == [1, 0]
    assert _eval([v], relay.argmax(v, axis=1, select_last_index=True), [x]).tolist() == [2, 3]
    assert _eval([v], relay.argmin(v, axis=1, keepdims=True), [x]).tolist() == [[3], [0]]
    f = np.array([[0.5, np.nan, 2.0, 1.0]], np.float32)
    u = relay.var("f", shape=f.shape, dtype="float32")
    assert _eval([u], relay.argmax(u, axis=1), [f]).tolist() == [2]


def test_take_batch_dims_and_modes():
    x = np.arange(2 * 4 * 3, dtype=np.int32).reshape(2, 4, 3)
    idx = np.array([[3, 0], [1, 5]], np.int32)
    v = relay.var("x", shape=x.shape, dtype="int32")
    got = _eval([v], relay.take(v, relay.const(idx), axis=1, batch_dims=1, mode="clip"), [x])
    assert np.array_equal(got, np.stack([x[0, [3, 0]], x[1, [1, 3]]]))
    got = _eval([v], relay.take(v, relay.const(idx), axis=1, batch_dims=1, mode="wrap"), [x])
    assert np.array_equal(got, np.stack([x[0, [3, 0]], x[1, [1, 1]]]))
    with pytest.raises(byoc.ExecutionError, match="index 5 is out of range"):
        _eval([v], relay.take(v, relay.const(idx), axis=1, batch_dims=1, mode="fast"), [x])


@pytest.mark.parametrize("transpose_a,transpose_b", [(False, True), (True, False), (True, True), (False, False)])
def test_batch_matmul_macs_count_every_dot_product(transpose_a, transpose_b):
    from byoc.ops.macs import macs_of
    from byoc.transform.infer_type import InferType
    b, m, k, n = 2, 3, 5, 7
    a = relay.var("a", shape=(b, k, m) if transpose_a else (b, m, k))
    w = relay.var("w", shape=(b, n, k) if transpose_b else (b, k, n))
    mod = InferType()(byoc.IRModule.from_expr(relay.nn.batch_matmul(a, w, transpose_a=transpose_a,
                                                                      transpose_b=transpose_b)))
    assert macs_of(mod["main"].body) == b * m * n * k
