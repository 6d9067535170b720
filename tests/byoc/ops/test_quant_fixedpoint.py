"""byoc.quant.fixedpoint / gemmlowp against the big-integer transcription of quant-semantics.md §1 (qnn_oracle.py)."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings, strategies as st

import qnn_oracle as O
from byoc.quant import fixedpoint as fp
from byoc.quant import gemmlowp as gl

I32 = st.integers(O.INT32_MIN, O.INT32_MAX)
EDGES = [O.INT32_MIN, O.INT32_MIN + 1, -(2**30), -3, -2, -1, 0, 1, 2, 3, 2**30, O.INT32_MAX - 1, O.INT32_MAX]
FAST = settings(max_examples=300, deadline=None, derandomize=True)


def test_documented_examples():
    # quant-semantics §1.1-§1.4, verbatim.
    assert fp.quantize_multiplier(0.3) == (1288490189, -1)
    assert fp.quantize_multiplier(1.0) == (2**30, 1)
    assert fp.quantize_multiplier(0.9999999999) == (2**30, 1)
    assert fp.quantize_multiplier(2.0**-32) == (2**30, -31)
    assert fp.quantize_multiplier(1e-12) == (0, 0)
    assert fp.quantize_multiplier(2.0**40) == (2**30, 41)
    assert int(fp.srdhm(1, 2**30)) == 1
    assert int(fp.srdhm(-1, 2**30)) == 0
    assert int(fp.srdhm(-3, 2**30)) == -1
    assert int(fp.srdhm(O.INT32_MIN, O.INT32_MIN)) == O.INT32_MAX
    assert int(fp.rdbpot(3, 1)) == 2
    assert int(fp.rdbpot(-3, 1)) == -2
    assert int(fp.rdbpot(O.INT32_MIN, 31)) == -1
    assert int(fp.mbqm(-199998, 1288490189, -1)) == -60000  # the artificial tie of double rounding
    assert int(fp.mbqm(O.INT32_MIN, 2**31 - 1, 0)) == -2147483647
    assert int(fp.mbqm(O.INT32_MIN, 2**30, 1)) == 0


def test_edge_values_exhaustively():
    a = np.array(EDGES, np.int64)
    for x in EDGES:
        got = fp.srdhm(x, a)
        assert [int(g) for g in got] == [O.srdhm(x, b) for b in EDGES]
        for e in (0, 1, 2, 15, 30, 31):
            assert int(fp.rdbpot(x, e)) == O.rdbpot(x, e)
        for m in (0, 1, 2**30, 1288490189, 2**31 - 1):
            for shift in (-31, -20, -1, 0, 1, 5):
                assert int(fp.mbqm(x, m, shift)) == O.mbqm(x, m, shift), (x, m, shift)


@FAST
@given(I32, I32)
def test_srdhm(a, b):
    assert int(fp.srdhm(a, b)) == O.srdhm(a, b)


@FAST
@given(I32, st.integers(0, 31))
def test_rdbpot_is_round_half_away(x, e):
    got = int(fp.rdbpot(x, e))
    assert got == O.rdbpot(x, e)
    assert got == O.rha(O.Fraction(x, 2**e))


@FAST
@given(I32, st.integers(0, O.INT32_MAX), st.integers(-31, 10))
def test_mbqm(x, m, shift):
    assert int(fp.mbqm(x, m, shift)) == O.mbqm(x, m, shift)


@FAST
@given(st.floats(min_value=1e-14, max_value=1e12, allow_nan=False, allow_infinity=False))
def test_quantize_multiplier(d):
    assert fp.quantize_multiplier(d) == O.quantize_multiplier(d)
    assert fp.quantize_multiplier(-d) == O.quantize_multiplier(-d)


def test_quantize_multiplier_rounding_boundaries():
    # Values whose mantissa·2^31 lands exactly on .5 or just beside it.
    for k in (1, 3, 12345, 2**30 - 1):
        base = (2**31 + 2 * k + 1) / 2**32  # q·2^31 = 2^30 + k + 0.5
        for d in (base, math.nextafter(base, 0), math.nextafter(base, 1), base / 1024):
            assert fp.quantize_multiplier(d) == O.quantize_multiplier(d)


def test_vectorised_multipliers_match_scalar():
    reals = np.array([0.3, 1e-12, 2.0**-31, 0.75, 3.5, 1.0 - 2.0**-40])
    ms, ss = fp.quantize_multipliers(reals)
    assert [(int(m), int(s)) for m, s in zip(ms, ss)] == [O.quantize_multiplier(float(r)) for r in reals]


def test_smaller_than_one_and_greater_than_one():
    assert fp.quantize_multiplier_smaller_than_one_exp(0.3) == (1288490189, -1)
    assert fp.quantize_multiplier_greater_than_one(3.0) == O.quantize_multiplier(3.0)
    for bad in (0.0, 1.0, 1.5):
        try:
            fp.quantize_multiplier_smaller_than_one_exp(bad)
        except ValueError:
            pass
        else:
            raise AssertionError(f"{bad} accepted")
    x = np.array(EDGES[3:-3], np.int64)
    assert [int(v) for v in fp.mbqm_smaller_than_one_exp(x, 1288490189, -3)] == \
        [O.rdbpot(O.srdhm(int(v), 1288490189), 3) for v in x]
    assert [int(v) for v in fp.mbqm_greater_than_one(x, 1288490189, 4)] == \
        [O.srdhm(O.wrap32(int(v) * 16), 1288490189) for v in x]


@FAST
@given(st.integers(-32768, 32767), st.integers(-32768, 32767))
def test_srdhm16(a, b):
    if a == b == -32768:
        expect = 32767
    else:
        p = a * b
        expect = O.tdiv(p + (2**14 if p >= 0 else 1 - 2**14), 2**15)
    assert int(fp.srdhm16(a, b)) == expect


def test_downscale_and_radius():
    assert fp.downscale_int32_to_int16_multiplier(2**31 - 1) == 32767
    assert fp.downscale_int32_to_int16_multiplier(2**30) == 2**14
    assert fp.downscale_int32_to_int16_multiplier((2**30) + 2**15 - 1) == 2**14
    assert fp.downscale_int32_to_int16_multiplier((2**30) + 2**15) == 2**14 + 1
    # floor((2^5 − 1)·2^26 / 2^ls)
    for ls in (0, 1, 7, 20, 30):
        assert fp.calculate_input_radius(5, ls, 31) == (31 * 2**26) >> ls


@FAST
@given(st.integers(-(2**31), 0))
def test_exp_on_negative_values(a):
    assert int(gl.exp_on_negative_values(a, 5)) == O.expn(a, 5)
    assert int(gl.exp_on_negative_values(a, 4)) == O.expn(a, 4)


@FAST
@given(st.integers(0, O.INT32_MAX))
def test_one_over_one_plus_x(x):
    assert int(gl.one_over_one_plus_x_for_x_in_0_1(x)) == O.recip(x)
    assert int(gl.one_minus_x_over_one_plus_x_for_x_in_0_1(x)) == O.one_minus_over_one_plus(x)


def test_exp_and_reciprocal_accuracy():
    # Sanity against the real functions: gemmlowp's exp and 1/(1+x) are accurate to a few ulp of Q0.31.
    a = np.array([-(2**26) * k // 4 for k in range(0, 64)], np.int64)  # Q5.26: 0, −1/4, ..., −15.75
    e = gl.exp_on_negative_values(a, 5) / 2**31
    assert np.allclose(e, np.exp(a / 2**26), atol=2e-8)
    x = np.linspace(0, 2**31 - 1, 50).astype(np.int64)
    r = gl.one_over_one_plus_x_for_x_in_0_1(x) / 2**31
    assert np.allclose(r, 1 / (1 + x / 2**31), atol=4e-9)


def test_count_leading_zeros():
    vals = [0, 1, 2, 3, 2**19, 2**31 - 1, -1, O.INT32_MIN]
    assert [int(v) for v in gl.count_leading_zeros32(np.array(vals))] == [O.clz32(v) for v in vals]
