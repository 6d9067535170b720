"""TFLite's integer arithmetic helpers, vectorised over numpy arrays (quant-semantics.md §1).

All functions take and return int64 numpy arrays (or Python ints) holding int32 values; callers cast at the end.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = [
    "INT32_MIN", "INT32_MAX", "wrap32", "quantize_multiplier", "quantize_multipliers", "srdhm", "rdbpot",
    "mbqm", "rha", "multiply_by_quantized_multiplier_float",
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
    """Round half away from zero (std::round) of a float array, as float."""
    x = np.asarray(x)
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


def multiply_by_quantized_multiplier_float(acc, scale):
    """LiteRT REF FULLY_CONNECTED requantization: round(double(acc)·scale), half away from zero."""
    v = np.asarray(acc, dtype=np.float64) * np.asarray(scale, dtype=np.float64)
    return rha(v).astype(np.int64)
