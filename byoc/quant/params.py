"""Derived quantization parameters: the ONE place each op's integer multipliers are computed.

Every executor (the reference interpreter, the CPU backend, the NPU compiler) calls these functions, so the
(multiplier, shift) pairs, lookup tables and thresholds are identical everywhere. Each function reproduces
TFLite's Prepare-time arithmetic (LiteRT @ f67457790c9c, quant-semantics.md §2.1), including whether an
intermediate value is float32 or double:

``requant_params(input_scale, output_scale)``
    QuantizeMultiplier(double(s_in) / double(s_out)) per channel: CONV, DEPTHWISE, TRANSPOSE_CONV, QUANTIZE.
``requant64_params(input_scale, output_scale)``
    The same multipliers reduced to Q15 for the int64 MultiplyByQuantizedMultiplier (16x8 CONV, DEPTHWISE).
``add_params(lhs_scale, rhs_scale, output_scale, left_shift=20)``
    ADD / SUB: T = 2·max(s1, s2); three QuantizeMultiplierSmallerThanOneExp multipliers → ``AddParams``.
``pot_add_shifts(lhs_scale, rhs_scale, output_scale)``
    int16 ADD / SUB on LiteRT's power-of-two path: the input shifts log2(s_i) − log2(s_out) from CheckedLog2.
``mul_params(lhs_scale, rhs_scale, output_scale)``
    MUL: QuantizeMultiplier(float32(float32(s1·s2) / s_out)).
``softmax_params(input_scale, beta=1.0)``
    SOFTMAX: QuantizeMultiplierGreaterThanOne(min(β·s_in·2^26, 2^31 − 1)) and diff_min → ``SoftmaxParams``.
``mean_params(input_scale, output_scale, num_elements)``
    MEAN: QuantizeMultiplier(double(s_in)/double(s_out)) with 1/N folded in by a truncating division.
``hardswish_params(input_scale, output_scale)``
    HARD_SWISH: float32 hires/output and hires/reluish multipliers, downscaled to Q15 → ``HardSwishParams``.
``leaky_relu_params(input_scale, alpha, output_scale)``
    LEAKY_RELU: float32 identity and alpha multipliers → ``LeakyReluParams``.
``lut_for(kind, input_scale, input_zero_point, output_scale, output_zero_point, dtype)``
    LOGISTIC / TANH: LiteRT's 256-entry float32 table, indexed by ``q − qmin``.
``fixed_point_activation_params(kind, input_scale)``
    TFLite-Micro's integer LOGISTIC / TANH input multiplier, shift and range radius.
``concat_params(input_scale, input_zero_point, output_scale, output_zero_point)``
    CONCATENATION: None when the input is copied, else LiteRT's float32 (scale, bias) pair.

Scales come in as Python floats or numpy arrays (a vector for per-channel parameters). Values that TFLite would
reject with a failed CHECK raise ``byoc.errors.IRError`` naming the op and the offending scales.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import IRError
from .fixedpoint import (calculate_input_radius, downscale_int32_to_int16_multiplier, quantize_multiplier,
                         quantize_multipliers, reduce_multiplier_int64, rha)

__all__ = ["requant_params", "requant64_params", "checked_log2", "pot_add_shifts", "AddParams", "add_params",
           "mul_params", "SoftmaxParams", "softmax_params",
           "mean_params", "HardSwishParams", "hardswish_params", "LeakyReluParams", "leaky_relu_params", "lut_for",
           "FixedPointActivationParams", "fixed_point_activation_params", "concat_params"]


def _vec64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).reshape(-1)


def _vec32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).reshape(-1)


def _checked(v: np.ndarray, what: str, op: str, allow_zero: bool = False) -> np.ndarray:
    """Scales are finite and positive (per-channel weight scales may be 0: a channel of zeros); anything else
    would silently give garbage multipliers, so it is an error naming the op."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(v) | (v < 0 if allow_zero else v <= 0)
    if np.any(bad):
        found = v[bad][:4].tolist()
        raise IRError(f"{op}: {what} must be {'non-negative' if allow_zero else 'positive'} and finite, found "
                      f"{found[0] if len(found) == 1 else found}",
                      hint="quantization scales come from the model; this one is broken or was passed wrongly")
    return v


def _scalar(x, what: str, op: str) -> float:
    v = np.asarray(x, dtype=np.float64).reshape(-1)
    if v.size != 1:
        raise IRError(f"{op}: {what} must be a single scale, got {v.size} values",
                      hint=f"{op} has per-tensor quantization in TFLite")
    return float(_checked(v, what, op)[0])


def requant_params(input_scale, output_scale, op: str = "qnn.requantize") -> tuple[np.ndarray, np.ndarray]:
    """(multiplier, shift) per channel = QuantizeMultiplier(double(s_in) / double(s_out)) (TFLite Prepare)."""
    s_in = _checked(_vec64(input_scale), "the input scale", op, allow_zero=True)
    s_out = _checked(_vec64(output_scale)[:1], "the output scale", op)
    return quantize_multipliers(s_in / s_out[0])


def requant64_params(input_scale, output_scale, op: str = "qnn.requantize") -> tuple[np.ndarray, np.ndarray]:
    """(Q15 multiplier, total right shift 15 − shift) per channel for an int64 input (quant-semantics §1.6).

    LiteRT asserts shift ≤ 7; its formula is defined up to shift 14 (a right shift of at least 1), so larger
    multipliers (a rescale of 2^14 or more) are refused."""
    m, s = requant_params(input_scale, output_scale, op)
    if np.any(s > 14):
        worst = float(np.max(_vec64(input_scale)) / _vec64(output_scale)[0])
        raise IRError(f"{op}: the rescale {worst!r} of an int64 input is 2^14 or more",
                      hint="LiteRT's int64 MultiplyByQuantizedMultiplier needs a multiplier below 2^7")
    return reduce_multiplier_int64(m), 15 - s


@dataclass(frozen=True)
class AddParams:
    """ADD/SUB fixed-point parameters; each field is an int64 array (one entry per channel, or one)."""
    left_shift: int
    lhs_multiplier: np.ndarray
    lhs_shift: np.ndarray
    rhs_multiplier: np.ndarray
    rhs_shift: np.ndarray
    output_multiplier: np.ndarray
    output_shift: np.ndarray


def add_params(lhs_scale, rhs_scale, output_scale, left_shift: int = 20, op: str = "qnn.add") -> AddParams:
    """TFLite ADD/SUB Prepare: T = 2·max(s1, s2) (float32), r_i = s_i / T, r_out = T / (2^L·s_out) (double)."""
    s1, s2, so = np.broadcast_arrays(*(_checked(_vec32(v), f"the {w} scale", op) for v, w in (
        (lhs_scale, "lhs"), (rhs_scale, "rhs"), (output_scale, "output"))))
    out = {k: np.empty(s1.shape, np.int64) for k in ("m1", "e1", "m2", "e2", "mo", "eo")}
    for i in range(s1.size):
        twice_max = float(np.float32(2) * max(s1[i], s2[i]))
        reals = (float(s1[i]) / twice_max, float(s2[i]) / twice_max,
                 twice_max / (float(1 << left_shift) * float(so[i])))
        for r, (mk, ek) in zip(reals, (("m1", "e1"), ("m2", "e2"), ("mo", "eo"))):
            if not 0.0 < r < 1.0:
                raise IRError(
                    f"{op}: scales lhs={s1[i]!r}, rhs={s2[i]!r}, output={so[i]!r} give a rescale multiplier "
                    f"{r!r} outside (0, 1)",
                    hint="TFLite's ADD/SUB needs 2·max(input scales) < 2^20·output scale and positive scales")
            out[mk][i], out[ek][i] = quantize_multiplier(r)
    return AddParams(left_shift, out["m1"], out["e1"], out["m2"], out["e2"], out["mo"], out["eo"])


def checked_log2(scale) -> tuple[int, bool]:
    """TFLite CheckedLog2 in float32: (round(log(x)·(1/log 2)), whether that is within 1e-3 of an integer)."""
    x = np.float32(scale)
    with np.errstate(all="ignore"):
        v = np.float32(np.log(x) * np.float32(np.float32(1.0) / np.log(np.float32(2.0))))
    if not np.isfinite(v):
        return 0, False
    r = np.float32(np.sign(v) * np.floor(np.abs(v) + np.float32(0.5)))
    return int(r), bool(abs(np.float32(v - r)) < np.float32(1e-3))


def pot_add_shifts(lhs_scale, rhs_scale, output_scale, op: str = "qnn.add") -> tuple[int, int]:
    """LiteRT's int16 power-of-two ADD/SUB Prepare: shift_i = log2(s_i) − log2(s_out) (CheckedLog2 of each
    scale); both ≤ 0 and at least one is 0. The kernel adds RDBPOT(q_i, −shift_i)."""
    logs = []
    for v, what in ((lhs_scale, "lhs"), (rhs_scale, "rhs"), (output_scale, "output")):
        lg, ok = checked_log2(_scalar(v, f"{what} scale", op))
        if not ok:
            raise IRError(f"{op}: the {what} scale {float(np.float32(_scalar(v, what, op)))!r} is not a power of two",
                          hint="the int16 power-of-two path needs power-of-two scales")
        logs.append(lg)
    s1, s2 = logs[0] - logs[2], logs[1] - logs[2]
    if s1 > 0 or s2 > 0 or (s1 != 0 and s2 != 0):
        raise IRError(f"{op}: power-of-two input shifts {s1} and {s2} (log2 scale − log2 output scale); LiteRT "
                      f"needs both ≤ 0 and one of them 0",
                      hint="give one input the output's scale and the other a smaller one")
    return s1, s2


def mul_params(lhs_scale, rhs_scale, output_scale) -> tuple[np.ndarray, np.ndarray]:
    """TFLite MUL Prepare: QuantizeMultiplier(float32(float32(s1·s2) / s_out)); all float32 arithmetic."""
    s1, s2, so = np.broadcast_arrays(*(_checked(_vec32(v), f"the {w} scale", "qnn.mul") for v, w in (
        (lhs_scale, "lhs"), (rhs_scale, "rhs"), (output_scale, "output"))))
    with np.errstate(all="ignore"):
        real = (s1 * s2) / so
    return quantize_multipliers(real.astype(np.float64))


@dataclass(frozen=True)
class SoftmaxParams:
    input_multiplier: int
    input_left_shift: int
    diff_min: int


def softmax_params(input_scale, beta: float = 1.0) -> SoftmaxParams:
    """TFLite SOFTMAX Prepare (REF): PreprocessSoftmaxScaling with 5 integer bits, then the input radius."""
    s = float(np.float32(_scalar(input_scale, "input scale", "qnn.softmax")))
    real = min(float(np.float32(beta)) * s * float(1 << 26), float((1 << 31) - 1))
    if not real > 1.0:
        raise IRError(f"qnn.softmax: beta·input_scale = {real / (1 << 26)!r} is below 2^-26",
                      hint="TFLite's integer softmax needs beta·input_scale ≥ 2^-26")
    m, ls = quantize_multiplier(real)
    diff_min = -calculate_input_radius(5, ls, 31)
    return SoftmaxParams(m, ls, diff_min)


def mean_params(input_scale, output_scale, num_elements: int) -> tuple[int, int]:
    """TFLite MEAN (QuantizedMeanOrSum): QuantizeMultiplier(double(s_in)/double(s_out)) with 1/N folded in."""
    real = _scalar(input_scale, "input scale", "qnn.mean") / _scalar(output_scale, "output scale", "qnn.mean")
    m, e = quantize_multiplier(real)
    n = int(num_elements)
    if n <= 0:
        raise IRError(f"qnn.mean: reducing over {n} elements", hint="reduce over non-empty axes")
    shift = min(n.bit_length() - 1, 32, 31 + e)
    return int((m << shift) // n) if shift >= 0 else int((m >> -shift) // n), e - shift


@dataclass(frozen=True)
class HardSwishParams:
    output_multiplier_int16: int
    output_exponent: int
    reluish_multiplier_int16: int
    reluish_exponent: int


def hardswish_params(input_scale, output_scale) -> HardSwishParams:
    """TFLite HARD_SWISH Prepare, all in float32: hires = s_in/128; hires/s_out and hires/(3/32768)."""
    s_in = np.float32(_scalar(input_scale, "input scale", "qnn.hardswish"))
    s_out = np.float32(_scalar(output_scale, "output scale", "qnn.hardswish"))
    hires = np.float32(np.float32(1.0 / 128.0) * s_in)
    with np.errstate(all="ignore"):
        out_real = float(np.float32(hires / s_out))
        reluish_real = float(np.float32(hires / np.float32(3.0 / 32768.0)))
    mo, eo = quantize_multiplier(out_real)
    if eo > 0:
        raise IRError(f"qnn.hardswish: input_scale/(128·output_scale) = {out_real!r} is 1 or more",
                      hint="TFLite's HARD_SWISH needs output_scale > input_scale/128")
    mr, er = quantize_multiplier(reluish_real)
    return HardSwishParams(downscale_int32_to_int16_multiplier(mo), eo, downscale_int32_to_int16_multiplier(mr), er)


@dataclass(frozen=True)
class LeakyReluParams:
    identity_multiplier: int
    identity_shift: int
    alpha_multiplier: int  # may be negative (negative alpha); the kernel uses its magnitude and flips the sign
    alpha_shift: int


def leaky_relu_params(input_scale, alpha: float, output_scale) -> LeakyReluParams:
    """TFLite LEAKY_RELU Prepare: float32(s_in·alpha/s_out) and float32(s_in/s_out)."""
    s_in = np.float32(_scalar(input_scale, "input scale", "qnn.leaky_relu"))
    s_out = np.float32(_scalar(output_scale, "output scale", "qnn.leaky_relu"))
    with np.errstate(all="ignore"):
        alpha_real = float(np.float32(np.float32(s_in * np.float32(alpha)) / s_out))
        identity_real = float(np.float32(s_in / s_out))
    mi, ei = quantize_multiplier(identity_real)
    ma, ea = quantize_multiplier(alpha_real)
    return LeakyReluParams(mi, ei, ma, ea)


_LUT_KINDS = ("sigmoid", "tanh")


def lut_for(kind: str, input_scale, input_zero_point, output_scale, output_zero_point,
            dtype: str = "int8") -> np.ndarray:
    """LiteRT's LUTPopulate<int8/uint8> for LOGISTIC ("sigmoid") or TANH, indexed by ``q − qmin``.

    All arithmetic is float32 as in the C++ (x = s_in·(q − zp); y = f(x); round(y·(1/s_out)) + zp). exp and
    tanh are evaluated in double and rounded to float32, i.e. the correctly rounded float32 result.
    """
    if kind not in _LUT_KINDS:
        raise IRError(f"lut_for: unknown kind {kind!r}", hint="one of " + ", ".join(_LUT_KINDS))
    info = np.iinfo(dtype)
    q = np.arange(int(info.min), int(info.max) + 1, dtype=np.int64)
    s_in = np.float32(_scalar(input_scale, "input scale", f"qnn.{kind}"))
    s_out = np.float32(_scalar(output_scale, "output scale", f"qnn.{kind}"))
    zp_in = int(np.asarray(input_zero_point).reshape(-1)[0])
    zp_out = int(np.asarray(output_zero_point).reshape(-1)[0])
    with np.errstate(all="ignore"):
        x = (s_in * (q - zp_in).astype(np.float32)).astype(np.float32)
        if kind == "sigmoid":
            e = np.exp(-x.astype(np.float64)).astype(np.float32)
            y = (np.float32(1.0) / (np.float32(1.0) + e)).astype(np.float32)
        else:
            y = np.tanh(x.astype(np.float64)).astype(np.float32)
        inv = np.float32(np.float32(1.0) / s_out)
        scaled = (y * inv).astype(np.float32)
        rounded = rha(scaled).astype(np.float32)  # exact: an integral float32 stays representable
        shifted = (rounded + np.float32(zp_out)).astype(np.float32)
    shifted = np.nan_to_num(shifted, nan=0.0, posinf=2.0**31 - 1, neginf=-(2.0**31))
    quantized = np.clip(np.trunc(shifted.astype(np.float64)), -(2.0**31), 2.0**31 - 1).astype(np.int64)
    return np.clip(quantized, info.min, info.max).astype(dtype)


@dataclass(frozen=True)
class FixedPointActivationParams:
    input_multiplier: int
    input_left_shift: int
    input_range_radius: int


def fixed_point_activation_params(kind: str, input_scale) -> FixedPointActivationParams:
    """TFLite-Micro LOGISTIC/TANH int8 Prepare: frexp(double(s_in)·2^27), 4 integer bits, radius."""
    if kind not in _LUT_KINDS:
        raise IRError(f"fixed_point_activation_params: unknown kind {kind!r}", hint="sigmoid or tanh")
    real = _scalar(input_scale, "input scale", f"qnn.{kind}") * float(1 << 27)
    q, shift = math.frexp(real)
    m = int(math.floor(abs(q) * (1 << 31) + 0.5)) * (1 if q >= 0 else -1)
    if m == (1 << 31):  # the C++ int32 cast wraps here
        m = -(1 << 31)
    return FixedPointActivationParams(m, shift, calculate_input_radius(4, shift, 31))


def concat_params(input_scale, input_zero_point, output_scale, output_zero_point):
    """LiteRT ConcatenationWithScaling: None if the input is copied unchanged, else float32 (scale, bias)."""
    s_in = np.float32(_scalar(input_scale, "input scale", "qnn.concatenate"))
    s_out = np.float32(_scalar(output_scale, "output scale", "qnn.concatenate"))
    zp_in = int(np.asarray(input_zero_point).reshape(-1)[0])
    zp_out = int(np.asarray(output_zero_point).reshape(-1)[0])
    if zp_in == zp_out and s_in == s_out:
        return None
    with np.errstate(all="ignore"):
        scale = np.float32(s_in * np.float32(np.float32(1.0) / s_out))
        bias = np.float32(np.float32(-zp_in) * scale)
    return scale, bias


# ------------------------------------------------------------------ LOG_SOFTMAX, SQUARED_DIFFERENCE, RSQRT
__all__ += ["LogSoftmaxParams", "log_softmax_params", "SquaredDifferenceParams", "squared_difference_params",
            "rsqrt_params"]


@dataclass(frozen=True)
class LogSoftmaxParams:
    input_multiplier: int
    input_left_shift: int
    reverse_multiplier: int
    reverse_right_shift: int  # positive: the kernel shifts right by it
    diff_min: int


def log_softmax_params(input_scale) -> LogSoftmaxParams:
    """LiteRT LOG_SOFTMAX Prepare (REF): PreprocessLogSoftmaxScalingExp(β = 1, double(s_in), 5 integer bits) —
    QuantizeMultiplierGreaterThanOne(min(s_in·2^26, 2^31 − 1)), the reverse divisor 2^(31 − ls)/M as
    QuantizeMultiplierSmallerThanOneExp, and diff_min = −CalculateInputRadius(5, ls)."""
    op = "qnn.log_softmax"
    s = float(np.float32(_scalar(input_scale, "input scale", op)))
    real = min(s * float(1 << 26), float((1 << 31) - 1))
    if not real > 1.0:
        raise IRError(f"{op}: input scale {s!r} is below 2^-26",
                      hint="LiteRT's integer LOG_SOFTMAX needs input_scale > 2^-26 (its Prepare CHECK-fails)")
    m, ls = quantize_multiplier(real)
    rm, rs = quantize_multiplier((1 << (31 - ls)) / float(m))
    return LogSoftmaxParams(m, ls, rm, -rs, -calculate_input_radius(5, ls, 31))


@dataclass(frozen=True)
class SquaredDifferenceParams:
    left_shift: int
    lhs_multiplier: int
    lhs_shift: int     # ≤ 0 (QuantizeMultiplierSmallerThanOneExp exponents)
    rhs_multiplier: int
    rhs_shift: int
    output_multiplier: int
    output_shift: int


def squared_difference_params(lhs_scale, rhs_scale, output_scale) -> SquaredDifferenceParams:
    """LiteRT SQUARED_DIFFERENCE Prepare (int8): left shift 7, T = float32(2·max(s1, s2)), r_i = s_i / T and
    r_out = T² / float32(2^14·s_out) in double, each QuantizeMultiplierSmallerThanOneExp."""
    op = "qnn.squared_difference"
    s1 = np.float32(_scalar(lhs_scale, "lhs scale", op))
    s2 = np.float32(_scalar(rhs_scale, "rhs scale", op))
    so = np.float32(_scalar(output_scale, "output scale", op))
    twice_max = float(np.float32(2) * max(s1, s2))
    reals = (float(s1) / twice_max, float(s2) / twice_max,
             (twice_max * twice_max) / float(np.float32(np.float32(1 << 14) * so)))
    out = []
    for r in reals:
        if not 0.0 < r < 1.0:
            raise IRError(f"{op}: scales lhs={float(s1)!r}, rhs={float(s2)!r}, output={float(so)!r} give a rescale "
                          f"multiplier {r!r} outside (0, 1)",
                          hint="LiteRT's int8 SQUARED_DIFFERENCE needs (2·max(s1, s2))² < 2^14·output_scale")
        out += list(quantize_multiplier(r))
    return SquaredDifferenceParams(7, *out)


def rsqrt_params(input_scale, output_scale) -> tuple[int, int]:
    """LiteRT RSQRT Prepare (int8): QuantizeMultiplier(1.0 / float32(sqrtf(s_in)·s_out)) (the product is float32)."""
    s_in = np.float32(_scalar(input_scale, "input scale", "qnn.rsqrt"))
    s_out = np.float32(_scalar(output_scale, "output scale", "qnn.rsqrt"))
    denom = np.float32(np.sqrt(s_in) * s_out)
    return quantize_multiplier(1.0 / float(denom))


# ------------------------------------------------------------------ ABS, comparisons (int8 / uint8)
__all__ += ["abs_params", "comparison_params", "COMPARISON_LEFT_SHIFT"]

COMPARISON_LEFT_SHIFT = 8  # LiteRT comparisons.cc: both operands shifted left by 8 before rescaling


def abs_params(input_scale, output_scale) -> tuple[bool, int, int]:
    """LiteRT ABS Prepare (int8/int16): needs_rescale = float32 scales differ; the multiplier is
    QuantizeMultiplier(double(float32(s_in / s_out))) (the division is in float)."""
    s_in = np.float32(_scalar(input_scale, "input scale", "qnn.abs"))
    s_out = np.float32(_scalar(output_scale, "output scale", "qnn.abs"))
    if s_in == s_out:
        return False, 0, 0
    m, shift = quantize_multiplier(float(np.float32(s_in / s_out)))
    return True, m, shift


def comparison_params(scale, op: str = "qnn.equal") -> tuple[int, int]:
    """LiteRT comparisons.cc (int8/uint8): each operand's own scale as a multiplier, QuantizeMultiplier below 1
    (QuantizeMultiplierSmallerThanOneExp, shift ≤ 0). Scales ≥ 1 take LiteRT's GreaterThanOne branch, whose
    reference kernel then shifts by a negative amount (undefined); they are refused."""
    s = float(np.float32(_scalar(scale, "scale", op)))
    if not s < 1.0:
        raise IRError(f"{op}: operand scale {s!r} is not below 1",
                      hint="LiteRT's quantized comparison is only defined for scales below 1")
    return quantize_multiplier(s)


# ------------------------------------------------------------------ SVDF (int8 input, int16 / int8 state)
__all__ += ["SvdfParams", "svdf_params"]


@dataclass(frozen=True)
class SvdfParams:
    feature_multiplier: int   # input·weights_feature → state
    feature_shift: int
    output_multiplier: int    # state·weights_time → output
    output_shift: int


def svdf_params(input_scale, weights_feature_scale, weights_time_scale, state_scale, output_scale) -> SvdfParams:
    """LiteRT / TFLite Micro SVDF Prepare (int8): QuantizeMultiplier(double(s_in·s_wf/s_state)) and
    QuantizeMultiplier(double(s_state·s_wt/s_out)), each product and quotient evaluated in float32."""
    s = [np.float32(_scalar(v, what, "qnn.svdf")) for v, what in (
        (input_scale, "input scale"), (weights_feature_scale, "weights_feature scale"),
        (weights_time_scale, "weights_time scale"), (state_scale, "state scale"), (output_scale, "output scale"))]
    s_in, s_wf, s_wt, s_st, s_out = s
    m1, sh1 = quantize_multiplier(float(np.float32(np.float32(s_in * s_wf) / s_st)))
    m2, sh2 = quantize_multiplier(float(np.float32(np.float32(s_st * s_wt) / s_out)))
    return SvdfParams(m1, sh1, m2, sh2)
