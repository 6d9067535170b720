"""Independent scalar oracles written from quant-semantics.md, in plain Python integers and fractions.

Nothing here imports byoc: these functions are the spec, transcribed one element at a time, so the vectorised
implementations under test can be compared against them.
"""
from __future__ import annotations

import math
import struct
from fractions import Fraction

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def wrap32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def f32(x: float) -> float:
    """Round a Python float to the nearest float32."""
    return struct.unpack("f", struct.pack("f", x))[0]


def rha(x) -> int:
    """std::round on an exact value (float or Fraction): half away from zero."""
    fx = Fraction(x)
    r = math.floor(abs(fx) + Fraction(1, 2))
    return r if fx >= 0 else -r


# §1.1 QuantizeMultiplier, exactly: frexp scaling by powers of two is exact in double.
def quantize_multiplier(d: float) -> tuple[int, int]:
    if d == 0:
        return 0, 0
    fd = Fraction(d)
    shift = 0
    while abs(fd) / Fraction(2) ** shift >= 1:
        shift += 1
    while abs(fd) / Fraction(2) ** shift < Fraction(1, 2):
        shift -= 1
    m = rha(fd / Fraction(2) ** shift * 2**31)
    if m == 2**31:
        m, shift = 2**30, shift + 1
    if shift < -31:
        return 0, 0
    return m, shift


# §1.2 SRDHM: nudge then truncating division.
def srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    p = a * b
    nudge = 2**30 if p >= 0 else 1 - 2**30
    return tdiv(p + nudge, 2**31)


# §1.3 RDBPOT with the mask/threshold formulation.
def rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > thr else 0)


# §1.4 MBQM, double rounding.
def mbqm(x: int, m: int, shift: int) -> int:
    left = max(shift, 0)
    right = max(-shift, 0)
    return rdbpot(srdhm(wrap32(x * 2**left), m), right)


def satshl(v: int, n: int) -> int:
    if v > 2 ** (31 - n) - 1:
        return INT32_MAX
    if v < -(2 ** (31 - n) - 1):
        return INT32_MIN
    return wrap32(v * 2**n)


def clamp(v: int, lo: int, hi: int) -> int:
    return lo if v < lo else hi if v > hi else v


# §3.8 softmax building blocks (gemmlowp), scalar.
_EXP_STEPS = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
              (4, 242))


def expn(a: int, integer_bits: int = 5) -> int:
    """exp(a) in Q0.31 for a ≤ 0 with ``integer_bits`` integer bits (spec §3.8 for 5; general k below)."""
    frac = 31 - integer_bits
    quarter = 1 << (frac - 2)
    t = wrap32((a & (quarter - 1)) - quarter)
    u = satshl(t, integer_bits)
    y = wrap32(u + 2**28)
    y2 = srdhm(y, y)
    y3 = srdhm(y2, y)
    y4 = srdhm(y2, y2)
    r4 = rdbpot(y4, 2)
    p = rdbpot(wrap32(srdhm(wrap32(r4 + y3), 715827883) + y2), 1)
    r = wrap32(1895147668 + srdhm(1895147668, wrap32(y + p)))
    rem = wrap32(t - a)
    for k, c in _EXP_STEPS:
        if integer_bits > k and (rem >> (frac + k)) & 1:
            r = srdhm(r, c)
    if a == 0:
        r = INT32_MAX
    return r


def _newton(hd: int) -> int:
    y = wrap32(1515870810 + srdhm(hd, -1010580540))
    for _ in range(3):
        y = wrap32(y + satshl(srdhm(y, wrap32(2**29 - srdhm(hd, y))), 2))
    return y


def _half_sum_with_one(x: int) -> int:
    s = x + INT32_MAX
    return tdiv(s + (1 if s >= 0 else -1), 2)


def recip(x: int) -> int:
    """1/(1 + x) in Q0.31 (spec §3.8 RECIP)."""
    return satshl(_newton(_half_sum_with_one(x)), 1)


def one_minus_over_one_plus(x: int) -> int:
    return satshl(wrap32(_newton(_half_sum_with_one(x)) - 2**29), 2)


def clz32(x: int) -> int:
    x &= 0xFFFFFFFF
    return 32 - x.bit_length()
