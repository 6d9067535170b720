"""gemmlowp's fixed-point transcendental functions, vectorised over int64 arrays holding int32 raw values.

These are the building blocks of TFLite's integer SOFTMAX (exp on negative values, 1/(1+x)) and of
TFLite-Micro's integer LOGISTIC / TANH (quant-semantics.md §3.8, §3.9). A value with ``k`` integer bits is the
raw int32 r meaning r / 2^(31−k). Plain ``+``/``−`` on FixedPoint<int32> wrap; ``*`` is SRDHM.
"""
from __future__ import annotations

import numpy as np

from .fixedpoint import INT32_MAX, INT32_MIN, rdbpot, srdhm, tdiv, wrap32

__all__ = ["rounding_half_sum", "saturating_rounding_mul_by_pot", "exp_on_negative_values",
           "one_over_one_plus_x_for_x_in_0_1", "one_minus_x_over_one_plus_x_for_x_in_0_1", "logistic", "tanh",
           "get_reciprocal", "count_leading_zeros32"]

# exp(−2^k) for k = −2..4 in Q0.31, the barrel shifter of exp_on_negative_values.
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
               (3, 720401), (4, 242))
_EXP_MINUS_ONE_EIGHTH = 1895147668
_ONE_THIRD = 715827883
_48_OVER_17 = 1515870810
_NEG_32_OVER_17 = -1010580540


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def rounding_half_sum(a, b):
    """(a + b)/2 rounded half away from zero, computed in 64 bits."""
    s = _i64(a) + _i64(b)
    return tdiv(s + np.where(s >= 0, 1, -1), 2)


def saturating_rounding_mul_by_pot(x, exponent: int):
    """x·2^exponent: a saturating left shift for exponent > 0, RDBPOT for exponent < 0."""
    x = _i64(x)
    if exponent == 0:
        return x
    if exponent < 0:
        return rdbpot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    r = wrap32(x << exponent)
    r = np.where(x > threshold, INT32_MAX, r)
    return np.where(x < -threshold, INT32_MIN, r)


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a):
    x = wrap32(_i64(a) + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rdbpot(x4, 2)
    poly = rdbpot(wrap32(srdhm(wrap32(x4_over_4 + x3), _ONE_THIRD) + x2), 1)
    return wrap32(_EXP_MINUS_ONE_EIGHTH + srdhm(_EXP_MINUS_ONE_EIGHTH, wrap32(x + poly)))


def exp_on_negative_values(a, integer_bits: int):
    """exp(a) in Q0.31 for a ≤ 0 given with ``integer_bits`` integer bits (gemmlowp)."""
    a = _i64(a)
    frac = 31 - integer_bits
    quarter = 1 << (frac - 2)
    a_mod_quarter_minus_quarter = wrap32((a & (quarter - 1)) - quarter)
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_rounding_mul_by_pot(a_mod_quarter_minus_quarter, integer_bits))
    remainder = wrap32(a_mod_quarter_minus_quarter - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = (remainder >> (frac + exponent)) & 1
            result = np.where(bit != 0, srdhm(result, multiplier), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, INT32_MAX, result)


def _newton_reciprocal_half(half_denominator):
    # Three Newton-Raphson steps for 1/half_denominator in Q2.29.
    x = wrap32(_48_OVER_17 + srdhm(half_denominator, _NEG_32_OVER_17))
    for _ in range(3):
        one_minus = wrap32((1 << 29) - srdhm(half_denominator, x))
        x = wrap32(x + saturating_rounding_mul_by_pot(srdhm(x, one_minus), 2))
    return x


def one_over_one_plus_x_for_x_in_0_1(a):
    """1/(1 + a) in Q0.31 for a in [0, 1) in Q0.31."""
    x = _newton_reciprocal_half(rounding_half_sum(a, INT32_MAX))
    return saturating_rounding_mul_by_pot(x, 1)


def one_minus_x_over_one_plus_x_for_x_in_0_1(a):
    """(1 − a)/(1 + a) in Q0.31 for a in [0, 1) in Q0.31."""
    x = _newton_reciprocal_half(rounding_half_sum(a, INT32_MAX))
    return saturating_rounding_mul_by_pot(wrap32(x - (1 << 29)), 2)


def logistic(a, integer_bits: int):
    """gemmlowp::logistic: 1/(1 + exp(−a)) in Q0.31."""
    a = _i64(a)
    positive = a > 0
    abs_a = np.where(positive, a, wrap32(-a))
    if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(wrap32(-abs_a), integer_bits))
    if_negative = wrap32(INT32_MAX - if_positive)
    return np.where(a == 0, 1 << 30, np.where(positive, if_positive, if_negative))


def tanh(a, integer_bits: int):
    """gemmlowp::tanh in Q0.31."""
    a = _i64(a)
    negative = a < 0
    n = np.where(negative, a, wrap32(-a))
    # ExactMulByPot<1>: the same raw value read with one more integer bit, i.e. exp(2n).
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, wrap32(-t), t))


def count_leading_zeros32(x):
    """CountLeadingZeros of uint32 values (32 for 0)."""
    u = _i64(x) & 0xFFFFFFFF
    out = np.full(u.shape, 32, dtype=np.int64)
    nz = u != 0
    # float64 holds every uint32 exactly, so frexp's exponent is the bit length.
    _, e = np.frexp(u[nz].astype(np.float64))
    out[nz] = 32 - e
    return out


def get_reciprocal(x, x_integer_digits: int):
    """TFLite GetReciprocal: (1/x in Q0.31 scaled, num_bits_over_unit) for positive x with the given digits."""
    x = _i64(x)
    headroom_plus_one = count_leading_zeros32(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted_minus_one = wrap32(((x & 0xFFFFFFFF) << headroom_plus_one) - (1 << 31))
    return one_over_one_plus_x_for_x_in_0_1(shifted_minus_one), num_bits_over_unit
