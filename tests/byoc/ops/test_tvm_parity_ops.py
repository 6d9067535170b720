"""Ops TVM programs use (log, erf, power, shifts, fixed_point_multiply, zeros/ones, einsum, nn.matmul,
layout_transform, variance): types from their relations, values from byoc.evaluate against numpy/math code
written here independently of the op registry."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import ExecutionError, TypeInferenceError


def _run(expr, **inputs):
    mod = relay.transform.InferType()(byoc.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr)))
    return mod["main"].body.checked_type, byoc.evaluate(mod, inputs)[0]


def test_log_erf_power_match_math():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 3.0, (3, 4)).astype("float32")
    y = rng.uniform(-2.0, 2.0, (4,)).astype("float32")
    a, b = relay.var("a", shape=(3, 4)), relay.var("b", shape=(4,))
    t, out = _run(relay.log(a), a=x)
    assert t == relay.TensorType((3, 4), "float32")
    # computed in double and rounded to float32 (as C's logf / TVM's llvm.log.f32 nearly always round), not
    # numpy's float32 SIMD log, which is off by an ulp on some inputs
    want = np.array([[math.log(float(v)) for v in row] for row in x], dtype=np.float64).astype("float32")
    np.testing.assert_array_equal(out, want)
    _, out = _run(relay.erf(a), a=x)
    want = np.array([[math.erf(float(v)) for v in row] for row in x], dtype=np.float64).astype("float32")
    np.testing.assert_array_equal(out, want)
    t, out = _run(relay.power(a, b), a=x, b=y)
    assert t.shape == (3, 4)
    want = np.array([[math.pow(float(v), float(e)) for v, e in zip(row, y)] for row in x]).astype("float32")
    np.testing.assert_array_equal(out, want)
    with pytest.raises(TypeInferenceError, match="float"):
        _run(relay.log(relay.var("i", shape=(2,), dtype="int32")), i=np.ones(2, "int32"))


def test_shifts_wrap_and_refuse_out_of_range_amounts():
    x = np.array([1, -8, 2 ** 30, 7], dtype="int32")
    s = np.array([1, 2, 2, 31], dtype="int32")
    a, b = relay.var("a", shape=(4,), dtype="int32"), relay.var("b", shape=(4,), dtype="int32")
    _, out = _run(relay.left_shift(a, b), a=x, b=s)
    want = [((int(v) << int(k)) + 2 ** 31) % 2 ** 32 - 2 ** 31 for v, k in zip(x, s)]  # C int32 wrap
    assert out.tolist() == want
    _, out = _run(relay.right_shift(a, b), a=x, b=s)
    assert out.tolist() == [int(v) >> int(k) for v, k in zip(x, s)]  # arithmetic shift, as Python's
    with pytest.raises(ExecutionError, match="shift amounts"):
        _run(relay.left_shift(a, b), a=x, b=np.array([0, 0, 0, 32], "int32"))


@pytest.mark.parametrize("multiplier,shift", [(1395864371, -2), (1 << 30, 1), (1 << 30, -3), (2 ** 31 - 1, 0),
                                              (1288490189, 3)])
def test_fixed_point_multiply_rounds_half_up(multiplier, shift):
    x = np.array([0, 1, -1, 100, -100, 12345, -12345, 77, -77, 2 ** 20], dtype="int32")
    a = relay.var("a", shape=x.shape, dtype="int32")
    _, out = _run(relay.fixed_point_multiply(a, multiplier, shift), a=x)
    for v, o in zip(x.tolist(), out.tolist()):
        exact = Fraction(v * multiplier) * Fraction(2) ** (shift - 31)
        assert o == math.floor(exact + Fraction(1, 2)), (v, o, exact)


def test_zeros_ones_and_likes():
    t, out = _run(relay.zeros((2, 3), "int8"))
    assert t == relay.TensorType((2, 3), "int8") and out.dtype == np.int8 and not out.any()
    t, out = _run(relay.ones(4, "float32"))
    assert t.shape == (4,) and (out == 1).all()
    a = relay.var("a", shape=(2, 2), dtype="int32")
    _, z = _run(relay.zeros_like(a), a=np.full((2, 2), 9, "int32"))
    _, o = _run(relay.ones_like(a), a=np.full((2, 2), 9, "int32"))
    assert z.tolist() == [[0, 0], [0, 0]] and o.tolist() == [[1, 1], [1, 1]] and o.dtype == np.int32


@pytest.mark.parametrize("eq,shapes", [("...ab,...cb->...ac", [(20, 5), (20, 5)]), ("ij,jk", [(2, 3), (3, 4)]),
                                       ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ii->i", [(3, 3)]),
                                       ("i,j->ij", [(2,), (3,)])])
def test_einsum_matches_numpy(eq, shapes):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype("float32") for s in shapes]
    vs = [relay.var(f"v{i}", shape=s) for i, s in enumerate(shapes)]
    t, out = _run(relay.einsum(vs, eq), **{f"v{i}": a for i, a in enumerate(arrays)})
    want = np.einsum(eq, *arrays)
    assert t.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_nn_matmul_with_transposes():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4)).astype("float32")
    b = rng.standard_normal((5, 4)).astype("float32")
    x, w = relay.var("x", shape=(3, 4)), relay.var("w", shape=(5, 4))
    t, out = _run(relay.nn.matmul(x, w, transpose_b=True), x=a, w=b)
    assert t.shape == (3, 5)
    np.testing.assert_allclose(out, a @ b.T, rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeInferenceError, match="reduction size"):
        _run(relay.nn.matmul(x, w), x=a, w=b)


def test_layout_transform_between_nchw_nhwc_and_blocked():
    x = np.arange(2 * 8 * 3 * 5, dtype="float32").reshape(2, 8, 3, 5)
    v = relay.var("x", shape=x.shape)
    t, out = _run(relay.layout_transform(v, "NCHW", "NHWC"), x=x)
    assert t.shape == (2, 3, 5, 8)
    np.testing.assert_array_equal(out, np.transpose(x, (0, 2, 3, 1)))
    t, out = _run(relay.layout_transform(v, "NCHW", "NCHW4c"), x=x)
    # channel c = 4·outer + inner lands at [n, outer, h, w, inner]
    want = np.empty((2, 2, 3, 5, 4), "float32")
    for c in range(8):
        want[:, c // 4, :, :, c % 4] = x[:, c]
    assert t.shape == want.shape
    np.testing.assert_array_equal(out, want)
    blocked = relay.var("b", shape=want.shape)
    _, back = _run(relay.layout_transform(blocked, "NCHW4c", "NHWC"), b=want)
    np.testing.assert_array_equal(back, np.transpose(x, (0, 2, 3, 1)))
    with pytest.raises(TypeInferenceError, match="divisible"):
        _run(relay.layout_transform(v, "NCHW", "NCHW3c"), x=x)


@pytest.mark.parametrize("unbiased", [False, True])
def test_variance_matches_numpy(unbiased):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6)).astype("float64")
    v = relay.var("x", shape=x.shape, dtype="float64")
    t, out = _run(relay.variance(v, axis=1, unbiased=unbiased), x=x)
    assert t.shape == (4,)
    np.testing.assert_allclose(out, np.var(x, axis=1, ddof=1 if unbiased else 0), rtol=1e-12)


def test_split_is_iterable_and_comparisons_build_calls():
    x, y = relay.var("x", shape=(4,)), relay.var("y", shape=(4,))
    a, b = relay.split(x, 2)
    assert isinstance(a, relay.TupleGetItem) and (a.index, b.index) == (0, 1)
    for expr, name in ((x < y, "less"), (x > y, "greater"), (x <= y, "less_equal"), (x >= y, "greater_equal"),
                       (-x, "negative"), (x.astype("int32"), "cast")):
        assert isinstance(expr, relay.Call) and expr.op.name == name
