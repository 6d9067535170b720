"""int16 sigmoid / tanh as TFLite's integer LSTM computes its gates (Q3.12 or a power-of-two scale → Q0.15).

Two different kernels, one per runtime (they disagree by one unit on some inputs):

* TFLite Micro (and TFLite's int16 LOGISTIC / TANH reference kernels): ``reference_integer_ops::Logistic`` /
  ``Tanh`` on int16: the input times 3 (x·3·2^k rounded down by 2^k for a power-of-two scale), then a linear
  interpolation in a 256-entry uint16 table of sigmoid(i/24) in Q0.16 (tanh(x) = 2·sigmoid(2x) − 1 reads the
  same table with 8 fractional bits instead of 9). ``tflm_sigmoid16`` / ``tflm_tanh16``.
* LiteRT's LSTM kernel (``lstm_eval.cc`` ApplySigmoid / ApplyTanh): gemmlowp's fixed-point logistic / tanh on
  ``FixedPoint<int16_t, k>`` (k integer bits) into ``FixedPoint<int16_t, 0>``. ``gemmlowp_sigmoid16`` /
  ``gemmlowp_tanh16``, the int16 counterparts of ``byoc.quant.gemmlowp``: every operation on int16 raw values
  (wrapping ``+``/``−``, the int16 SaturatingRoundingDoublingHighMul, constants rounded from their Q0.31 form
  by RoundingDivideByPOT(·, 16)).

The table is not a closed formula: it equals min(round(65536·sigmoid(i/24)), 65535) except at the entries in
``_TABLE_PLUS_ONE``, which are one larger (measured against TFLite Micro's kernels; the LSTM tests check it).
"""
from __future__ import annotations

import numpy as np

from .fixedpoint import rdbpot, srdhm16, tdiv, wrap16

__all__ = ["sigmoid_table_uint16", "lut16_input_params", "interpolated_sigmoid16", "interpolated_tanh16",
           "tflm_sigmoid16", "tflm_tanh16", "gemmlowp_sigmoid16", "gemmlowp_tanh16"]

_TABLE_PLUS_ONE = (4, 8, 12, 14, 15, 16, 17, 19, 20, 21, 22, 25, 27, 28, 29, 30, 31, 33, 34, 35, 37, 39, 40, 41,
                   43, 44, 45, 46, 49, 50, 54, 62, 63, 64, 66, 82, 86, 93, 100, 103, 112, 116, 135, 255)


def sigmoid_table_uint16() -> np.ndarray:
    """The 256-entry Q0.16 table of sigmoid(i/24) (int64 array)."""
    i = np.arange(256, dtype=np.float64)
    t = np.minimum(np.floor(65536.0 / (1.0 + np.exp(-i / 24.0)) + 0.5), 65535).astype(np.int64)
    t[list(_TABLE_PLUS_ONE)] += 1
    return t


_TABLE = sigmoid_table_uint16()


def lut16_input_params(scale_log2: int) -> tuple[int, int]:
    """(input multiplier, right shift) of the interpolating kernels for an input scale 2^scale_log2: TFLM's
    LSTM Tanh(cell_state_scale_power) — left shift (15 + log2 s) − 3, or multiplier 3 with that many right
    shifts when negative; a zero multiplier means 3·2^shift (the power-of-two case)."""
    left = 15 + scale_log2 - 3
    if left < 0:
        return 3, -left
    return 3 << left, 0


def _scaled_input(x, multiplier: int, shift: int) -> np.ndarray:
    v = np.asarray(x, dtype=np.int64) * multiplier
    return (v + ((1 << (shift - 1)) if shift > 0 else 0)) >> shift


def interpolated_sigmoid16(x, multiplier: int, shift: int) -> np.ndarray:
    """reference_integer_ops::Logistic on int16 given its input multiplier and right shift (Q0.15, int64)."""
    v = _scaled_input(x, multiplier, shift)
    a = np.abs(v)
    uh = np.minimum(a >> 9, 254)
    ua, ub = _TABLE[uh], _TABLE[uh + 1]
    r = np.where((a >> 9) >= 255, 0x7FFF << 10, (ua << 9) + (a & 0x1FF) * (ub - ua))
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return wrap16(r >> 10)


def interpolated_tanh16(x, multiplier: int, shift: int) -> np.ndarray:
    """reference_integer_ops::Tanh on int16 given its input multiplier and right shift (Q0.15, int64)."""
    v = _scaled_input(x, multiplier, shift)
    a = np.abs(v)
    uh = np.minimum(a >> 8, 254)
    ua, ub = _TABLE[uh], _TABLE[uh + 1]
    r = np.where((a >> 8) >= 255, 0xFFFF << 8, (ua << 8) + (a & 0xFF) * (ub - ua))
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return wrap16(r >> 8)


def tflm_sigmoid16(x, scale_log2: int = -12) -> np.ndarray:
    """TFLite Micro's int16 sigmoid of an input with scale 2^scale_log2 (Q0.15 result, int64 array)."""
    return interpolated_sigmoid16(x, *lut16_input_params(scale_log2))


def tflm_tanh16(x, scale_log2: int = -12) -> np.ndarray:
    """TFLite Micro's int16 tanh of an input with scale 2^scale_log2 (Q0.15 result, int64 array)."""
    return interpolated_tanh16(x, *lut16_input_params(scale_log2))


# ----------------------------------------------------------------------------------- gemmlowp on int16 raws
_ONE = 32767  # FixedPoint<int16_t, 0>::One()


def _c16(q31: int) -> int:
    """A gemmlowp constant given in its 32-bit form, as the int16 raw value (RescaleConstantInitializer)."""
    return int(rdbpot(np.int64(q31), 16))


def _sat_mul_pot(x, exponent: int) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT on int16 raws."""
    x = np.asarray(x, dtype=np.int64)
    if exponent == 0:
        return x
    if exponent < 0:
        return rdbpot(x, -exponent)
    threshold = (1 << (15 - exponent)) - 1
    r = wrap16(x << exponent)
    return np.where(x > threshold, 32767, np.where(x < -threshold, -32768, r))


def _rounding_half_sum16(a, b) -> np.ndarray:
    s = np.asarray(a, dtype=np.int64) + np.asarray(b, dtype=np.int64)
    return wrap16(tdiv(s + np.where(s >= 0, 1, -1), 2))


def _exp_quarter(a) -> np.ndarray:
    """exp(a) for a in [−1/4, 0), FixedPoint<int16_t, 0>."""
    c = _c16(1895147668)
    x = wrap16(np.asarray(a, dtype=np.int64) + (1 << 12))
    x2 = srdhm16(x, x)
    x3 = srdhm16(x2, x)
    x4 = srdhm16(x2, x2)
    poly = _sat_mul_pot(wrap16(srdhm16(wrap16(_sat_mul_pot(x4, -2) + x3), _c16(715827883)) + x2), -1)
    return np.clip(c + srdhm16(c, wrap16(x + poly)), -32768, 32767)


_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
           (4, 242))


def _exp_on_negative_values(a, integer_bits: int) -> np.ndarray:
    a = np.asarray(a, dtype=np.int64)
    frac = 15 - integer_bits
    quarter = 1 << (frac - 2)
    a_mod = wrap16((a & (quarter - 1)) - quarter)
    result = _exp_quarter(_sat_mul_pot(a_mod, integer_bits))
    remainder = wrap16(a_mod - a)
    for exponent, multiplier in _BARREL:
        if integer_bits > exponent:
            bit = (remainder >> (frac + exponent)) & 1
            result = np.where(bit != 0, srdhm16(result, _c16(multiplier)), result)
    if integer_bits > 5:
        result = np.where(a < _c16(-(1 << (36 - integer_bits))), 0, result)
    return np.where(a == 0, _ONE, result)


def _newton_half_reciprocal(a) -> np.ndarray:
    """x ≈ 1/half_denominator in FixedPoint<int16_t, 2> for a in [0, 1), and half_denominator (a + 1)/2."""
    half = _rounding_half_sum16(a, _ONE)
    x = wrap16(_c16(1515870810) + srdhm16(half, _c16(-1010580540)))
    for _ in range(3):
        one_minus = wrap16((1 << 13) - srdhm16(half, x))
        x = wrap16(x + _sat_mul_pot(srdhm16(x, one_minus), 2))
    return x


def gemmlowp_sigmoid16(x, integer_bits: int = 3) -> np.ndarray:
    """gemmlowp::logistic(FixedPoint<int16_t, integer_bits>) raw Q0.15 (int64 array)."""
    a = np.asarray(x, dtype=np.int64)
    positive = a > 0
    abs_a = np.where(positive, a, wrap16(-a))
    if_positive = _sat_mul_pot(_newton_half_reciprocal(_exp_on_negative_values(wrap16(-abs_a), integer_bits)), 1)
    if_negative = wrap16(_ONE - if_positive)
    return np.where(a == 0, _c16(1 << 30), np.where(positive, if_positive, if_negative))


def gemmlowp_tanh16(x, integer_bits: int = 3) -> np.ndarray:
    """gemmlowp::tanh(FixedPoint<int16_t, integer_bits>) raw Q0.15 (int64 array)."""
    a = np.asarray(x, dtype=np.int64)
    negative = a < 0
    n = np.where(negative, a, wrap16(-a))
    e = _exp_on_negative_values(n, integer_bits + 1)
    t = _sat_mul_pot(wrap16(_newton_half_reciprocal(e) - (1 << 13)), 2)
    return np.where(a == 0, 0, np.where(negative, wrap16(-t), t))
