"""LiteRT's interpolated int16 lookup tables (its int16 RSQRT): 513 samples of a float function over the input
range, each nudged by half the error of the linear interpolation at its interval's midpoint, then read by linear
interpolation between neighbouring samples (128 input steps per interval).

* ``populate16(s_in, zp_in, s_out, zp_out, fn)``: the 513 int16 samples. Every step is float32, as in LiteRT:
  the input range s_in·(−32768 − zp_in) … s_in·(32767 − zp_in) split in 512 steps, samples scaled by
  65536 / (the output range), rounded half away from zero and clamped to int16.
* ``lookup16(x, table)``: base = table[256 + (x >> 7)], slope = the next entry minus it (int16 arithmetic),
  base + ((slope·(x & 127) + 64) >> 7).

Checked against LiteRT's BUILTIN_REF RSQRT on every int16 input (tests/byoc/ops/test_interpolated_lut.py).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .fixedpoint import wrap16

__all__ = ["populate16", "lookup16", "rsqrt16_table", "LUT16_SIZE"]

LUT16_SIZE = 513
_F = np.float32


def _round(v) -> np.float32:
    """TfLiteRound on a float32: half away from zero."""
    v = _F(v)
    return _F(np.copysign(np.floor(np.abs(v) + _F(0.5)), v))


def populate16(input_scale, input_zero_point: int, output_scale, output_zero_point: int,
               fn: Callable[[np.float32], np.float32]) -> np.ndarray:
    """The 513-entry int16 table of ``fn`` (a float32 → float32 function), as an int64 array."""
    s_in, s_out = _F(input_scale), _F(output_scale)
    in_min = _F(s_in * _F(-32768 - int(input_zero_point)))
    in_max = _F(s_in * _F(32767 - int(input_zero_point)))
    out_min = _F(s_out * _F(-32768 - int(output_zero_point)))
    out_max = _F(s_out * _F(32767 - int(output_zero_point)))
    steps = LUT16_SIZE - 1
    step = _F(_F(in_max - in_min) / _F(steps))
    half = _F(step / _F(2))
    inv = _F(_F(65536) / _F(out_max - out_min))
    table = np.empty(LUT16_SIZE, np.int64)
    with np.errstate(all="ignore"):
        for i in range(steps):
            x = _F(in_min + _F(_F(i) * step))
            val = _F(fn(x))
            mid = _F(fn(_F(x + half)))
            nxt = _F(fn(_F(in_min + _F(_F(i + 1) * step))))
            sample = _round(_F(val * inv))
            interp = _round(_F(_F(_F(nxt * inv) + sample) / _F(2)))
            bias = _round(_F(_F(interp - _round(_F(mid * inv))) / _F(2)))
            table[i] = int(min(max(_F(sample - bias), _F(-32768)), _F(32767)))
        table[steps] = int(min(max(_round(_F(_F(fn(in_max)) * inv)), _F(-32768)), _F(32767)))
    return table


def lookup16(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Linear interpolation of the int16 values ``x`` in a 513-entry table (int64 array of int16 values)."""
    v = np.asarray(x).astype(np.int64)
    idx = 256 + (v >> 7)
    base = table[idx]
    slope = wrap16(table[idx + 1] - base)
    return wrap16(base + ((slope * (v & 0x7F) + 64) >> 7))


def rsqrt16_table(input_scale, input_zero_point: int, output_scale, output_zero_point: int) -> np.ndarray:
    """LiteRT's int16 RSQRT table: 1/√x, and the largest output value for x ≤ 0 (inputs below the zero point are
    errors; the entries there only shape the interpolation at zero)."""
    top = _F(_F(32767) * _F(output_scale))

    def fn(x: np.float32) -> np.float32:
        return top if x <= 0 else _F(_F(1) / np.sqrt(_F(x)))
    return populate16(input_scale, input_zero_point, output_scale, output_zero_point, fn)
