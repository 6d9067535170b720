"""TFLite's integer arithmetic helpers, vectorised over numpy arrays (quant-semantics.md §1).

All functions take and return int64 numpy arrays (or Python ints) holding int32 values; callers cast at the end.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = [
    "INT32_MIN", "INT32_MAX", "wrap32", "wrap16", "quantize_multiplier", "quantize_multipliers", "srdhm",
    "rdbpot", "mbqm", "rha", "multiply_by_quantized_multiplier_float", "quantize_multiplier_smaller_than_one_exp",
    "quantize_multiplier_greater_than_one", "mbqm_smaller_than_one_exp", "mbqm_greater_than_one", "srdhm16",
    "saturating_left_shift", "downscale_int32_to_int16_multiplier", "calculate_input_radius", "tdiv",
    "reduce_multiplier_int64", "mbqm64",
]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def wrap32(x):
    """Two's-complement wrap to int32 (returned as int64)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def quantize_multiplier(d: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier (double-rounding build): real ≈ M·2^(shift−31)."""
    d = float(d)
    if d == 0.0 or not math.isfinite(d):
        return 0, 0
    q, shift = math.frexp(d)
    m = _round_half_away(q * (1 << 31))
    if m == (1 << 31):
        m //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return int(m), int(shift)


def quantize_multipliers(reals) -> tuple[np.ndarray, np.ndarray]:
    """Per-element QuantizeMultiplier of a float64 array."""
    reals = np.atleast_1d(np.asarray(reals, dtype=np.float64))
    ms = np.empty(reals.shape, np.int64)
    ss = np.empty(reals.shape, np.int64)
    for i, r in enumerate(reals.flat):
        ms.flat[i], ss.flat[i] = quantize_multiplier(float(r))
    return ms, ss


def _round_half_away(x: float) -> int:
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def rha(x):
    """Round half away from zero (std::round) of a float array, as float64.

    Evaluated in float64: float32 values plus 0.5 are exact there (in float32, 0.49999997 + 0.5 rounds to 1).
    """
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def srdhm(a, b):
    """SaturatingRoundingDoublingHighMul: (a·b + 2^30) >> 31, saturating only MIN·MIN."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    p = a * b
    r = (p + (1 << 30)) >> 31
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    if np.any(overflow):
        r = np.where(overflow, INT32_MAX, r)
    return r


def rdbpot(x, e):
    """RoundingDivideByPOT: x / 2^e rounded half away from zero, 0 ≤ e ≤ 31."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(e, dtype=np.int64)
    mask = (np.int64(1) << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (x < 0)
    return (x >> e) + (rem > thr)


def mbqm(x, m, shift):
    """MultiplyByQuantizedMultiplier, double rounding: RDBPOT(SRDHM(wrap32(x·2^left), M), right)."""
    x = np.asarray(x, dtype=np.int64)
    m = np.asarray(m, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    return rdbpot(srdhm(wrap32(x << left), m), right)


def reduce_multiplier_int64(m):
    """The Q15 multiplier of the int64 MultiplyByQuantizedMultiplier: (M + 2^15) >> 16, or 0x7FFF from
    0x7FFF0000 on (quant-semantics §1.6)."""
    m = np.asarray(m, dtype=np.int64)
    return np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)


def mbqm64(x, m16, total_shift):
    """MultiplyByQuantizedMultiplier of an int64 x (16x8 CONV/DEPTHWISE): int32((x·M16 + 2^(t−1)) >> t) with
    t = 15 − shift ≥ 1, a single rounding with ties toward +∞; the int64 product and sum wrap as in C."""
    x = np.asarray(x, dtype=np.int64)
    m16 = np.asarray(m16, dtype=np.int64)
    t = np.asarray(total_shift, dtype=np.int64)
    with np.errstate(over="ignore"):
        v = np.atleast_1d(x) * m16 + (np.int64(1) << (t - 1))
    return wrap32(v >> t).reshape(np.broadcast_shapes(x.shape, m16.shape, t.shape))


def multiply_by_quantized_multiplier_float(acc, scale):
    """LiteRT REF FULLY_CONNECTED requantization: round(double(acc)·scale), half away from zero."""
    v = np.asarray(acc, dtype=np.float64) * np.asarray(scale, dtype=np.float64)
    return rha(v).astype(np.int64)


def wrap16(x):
    """Two's-complement wrap to int16 (returned as int64): what a C store into an int16_t does."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 15)) & 0xFFFF) - (1 << 15)


def tdiv(a, b):
    """C signed division (truncates toward zero) of int64 arrays."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def quantize_multiplier_smaller_than_one_exp(d: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplierSmallerThanOneExp: QuantizeMultiplier of 0 < d < 1 (shift ≤ 0).

    TFLite CHECK-fails (aborts) outside that range; here that is a ValueError for the caller to report.
    """
    if not 0.0 < float(d) < 1.0:
        raise ValueError(f"multiplier {d!r} is not in (0, 1)")
    return quantize_multiplier(d)


def quantize_multiplier_greater_than_one(d: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplierGreaterThanOne: QuantizeMultiplier of d > 1 (shift ≥ 0)."""
    if not float(d) > 1.0:
        raise ValueError(f"multiplier {d!r} is not greater than 1")
    return quantize_multiplier(d)


def mbqm_smaller_than_one_exp(x, m, left_shift):
    """MultiplyByQuantizedMultiplierSmallerThanOneExp (double rounding): RDBPOT(SRDHM(x, M), −ls), ls ≤ 0."""
    return rdbpot(srdhm(x, m), -np.asarray(left_shift, dtype=np.int64))


def mbqm_greater_than_one(x, m, left_shift):
    """MultiplyByQuantizedMultiplierGreaterThanOne: SRDHM(wrap32(x·2^ls), M), ls ≥ 0 (no final shift)."""
    x = np.asarray(x, dtype=np.int64)
    return srdhm(wrap32(x << np.asarray(left_shift, dtype=np.int64)), m)


def srdhm16(a, b):
    """The int16 SaturatingRoundingDoublingHighMul: tdiv(a·b + nudge, 2^15), saturating only −32768²."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    p = a * b
    nudge = np.where(p >= 0, 1 << 14, 1 - (1 << 14))
    r = wrap16(tdiv(p + nudge, 1 << 15))
    return np.where((a == -32768) & (b == -32768), 32767, r)


def saturating_left_shift(x, amount: int, bits: int = 32):
    """x·2^amount saturated to a signed ``bits``-wide integer."""
    x = np.asarray(x, dtype=np.int64)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return np.clip(x * (1 << int(amount)), lo, hi)


def downscale_int32_to_int16_multiplier(m: int) -> int:
    """TFLite DownScaleInt32ToInt16Multiplier: round an int32 Q31 multiplier to Q15, saturating at 32767."""
    m = int(m)
    if m >= INT32_MAX - (1 << 15):
        return 32767
    return (m + (1 << 15)) >> 16


def calculate_input_radius(input_integer_bits: int, input_left_shift: int, total_signed_bits: int = 31) -> int:
    """TFLite CalculateInputRadius: floor((2^ib − 1)·2^(total−ib) / 2^ls), evaluated in double."""
    v = (1.0 * ((1 << input_integer_bits) - 1) * float(1 << (total_signed_bits - input_integer_bits))
         / float(1 << input_left_shift) if input_left_shift >= 0 else
         1.0 * ((1 << input_integer_bits) - 1) * float(1 << (total_signed_bits - input_integer_bits))
         * float(1 << -input_left_shift))
    return int(math.floor(v))
