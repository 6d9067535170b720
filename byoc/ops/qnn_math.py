"""Quantized LOG_SOFTMAX, SQUARED_DIFFERENCE and RSQRT with LiteRT's reference integer arithmetic.

* ``qnn.log_softmax`` (int8, uint8; TVM has no quantized log_softmax, the operands follow ``qnn.softmax``):
  LiteRT's reference LogSoftmax — per row, gemmlowp exp of (x − max)·M in Q5.26, the sum in Q12.19,
  log(sum) with ``log_x_for_x_greater_than_or_equal_to_1`` (TFLite common.h) in Q5.26, then
  RDBPOT(x_q5 − log_sum, 22) + zp_out. The output parameters are implied, as LiteRT requires them: scale 16/256
  and zero point 127 (int8) or 255 (uint8). The float op is Relay's ``nn.log_softmax``.
* ``qnn.squared_difference`` (int8; no TVM counterpart): LiteRT's left-shift-7 scheme, the difference of the two
  rescaled operands squared in int32 and rescaled by a third multiplier.
* ``qnn.rsqrt`` (int8; TVM's ``qnn.rsqrt`` operands): LiteRT's GetInvSqrtQuantizedMultiplierExp Newton iteration
  per input value, then two MultiplyByQuantizedMultiplier steps. A value below the input zero point is an error,
  as in LiteRT ("Rsqrt is only defined for positive values"); the zero point itself maps to 127. int16 (zero
  points 0, as LiteRT requires): LiteRT's interpolated 513-entry table of 1/√x (``byoc.quant.interpolated_lut``).

All multipliers come from byoc.quant.params; every executor calls these functions (the CPU backend tabulates the
per-value parts at build time).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ExecutionError
from ..ir.attrs import Attrs
from ..ir.types import TensorType
from ..quant import gemmlowp
from ..quant.fixedpoint import INT32_MAX, INT32_MIN, mbqm, rdbpot, srdhm, wrap32
from ..quant.params import log_softmax_params, rsqrt_params, squared_difference_params
from .registry import FusionKind, register_op
from .rel import broadcast_shapes, dtype_range, expect_dtype, expect_scalar_or_vector, fail, tensor_arg

__all__ = ["QnnLogSoftmaxAttrs", "log_softmax_rows", "log_x_ge_1", "log_softmax_tables", "log_softmax_zero_point",
           "squared_difference_int8", "rsqrt_table", "rsqrt16_values", "inv_sqrt_multiplier_exp"]

_ACT_ARGS = ("data", "scale", "zero_point", "output_scale", "output_zero_point")
_UNARY_ARGS = ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point")


def _scalar_int(v) -> int:
    return int(np.asarray(v).reshape(-1)[0])


def _sat_pot(x, exponent: int):
    """SaturatingRoundingMultiplyByPOT(Param): a saturating left shift, or RDBPOT for a negative exponent."""
    return gemmlowp.saturating_rounding_mul_by_pot(x, int(exponent))


def _sat_pot_param(x, exponent):
    """SaturatingRoundingMultiplyByPOTParam with a per-element exponent ≥ 0."""
    x = np.asarray(x, np.int64)
    e = np.asarray(exponent, np.int64)
    thr = (np.int64(1) << (31 - e)) - 1
    r = wrap32(x << e)
    r = np.where(x > thr, INT32_MAX, r)
    r = np.where(x < -thr, INT32_MIN, r)
    return np.where(e == 0, x, r)


def _sat32(x):
    return np.clip(np.asarray(x, np.int64), INT32_MIN, INT32_MAX)


# Q0.31 constants of TFLite's log_x_for_x_greater_than_or_equal_to_1_impl.
_LOG_2, _SQRT_SQRT_HALF, _SQRT_HALF, _ONE_QUARTER = 1488522236, 1805811301, 1518500250, 536870912
_ALPHA_N, _ALPHA_D, _ALPHA_I, _ALPHA_F = 117049297, 127690142, 1057819769, 638450708


def log_x_ge_1(x, input_integer_bits: int, output_integer_bits: int):
    """TFLite's log_x_for_x_greater_than_or_equal_to_1<OutputIntegerBits>(FixedPoint<int32, InputIntegerBits>)."""
    acc_bits = output_integer_bits + 1
    z_a = np.asarray(x, np.int64)
    shifted_quarter = int(rdbpot(_ONE_QUARTER, acc_bits))
    clz_a = gemmlowp.count_leading_zeros32(z_a)
    r_a_tmp = _sat_pot_param(z_a, clz_a - 1)
    r_a_raw = _sat_pot(srdhm(r_a_tmp, _SQRT_HALF), 1)
    z_a_pow_2_adj = _sat32(_sat_pot_param(input_integer_bits - clz_a, 31 - acc_bits) + shifted_quarter)
    z_b = srdhm(z_a, _SQRT_HALF)
    z_b_headroom = gemmlowp.count_leading_zeros32(z_b) - 1
    r_b_raw = _sat_pot_param(z_a, z_b_headroom)
    z_b_pow_2_adj = _sat32(_sat_pot_param(input_integer_bits - z_b_headroom, 31 - acc_bits) - shifted_quarter)
    r = np.minimum(r_a_raw, r_b_raw)
    z_pow_2_adj = np.maximum(z_a_pow_2_adj, z_b_pow_2_adj)
    p = gemmlowp.rounding_half_sum(r, _SQRT_SQRT_HALF)
    q = wrap32(r - _SQRT_SQRT_HALF)
    q = wrap32(q + q)
    common_sq = srdhm(q, q)
    num = wrap32(srdhm(q, r) + srdhm(srdhm(q, common_sq), _ALPHA_N))
    denom_minus_one = wrap32(srdhm(p, wrap32(wrap32(_ALPHA_I + q) + srdhm(_ALPHA_D, common_sq))) + srdhm(_ALPHA_F, q))
    recip_denom = gemmlowp.one_over_one_plus_x_for_x_in_0_1(denom_minus_one)
    num_scaled = rdbpot(num, acc_bits)
    total = wrap32(srdhm(z_pow_2_adj, _LOG_2) + srdhm(num_scaled, recip_denom))
    return _sat_pot(total, acc_bits - output_integer_bits)


# --------------------------------------------------------------------------------------------- log_softmax
@dataclass(frozen=True)
class QnnLogSoftmaxAttrs(Attrs):
    axis: int = -1


def log_softmax_zero_point(dtype: str) -> int:
    """The output zero point LiteRT hard-codes (and requires of the model): the type's maximum."""
    return dtype_range(dtype)[1]


def log_softmax_tables(input_scale, dtype: str):
    """(x·M in Q5.26, Rescale<12>(exp) in Q12.19) for every 8-bit difference d = x − max ≤ 0, indexed by −d;
    differences below diff_min contribute 0 to the sum (their Q5.26 entry is unused)."""
    p = log_softmax_params(input_scale)
    lo, hi = dtype_range(dtype)
    diff = -np.arange(0, hi - lo + 1, dtype=np.int64)
    q5 = mbqm(diff, p.input_multiplier, p.input_left_shift)
    exps = rdbpot(gemmlowp.exp_on_negative_values(q5, 5), 12)
    return q5, np.where(diff >= p.diff_min, exps, 0), p


def log_softmax_rows(q: np.ndarray, input_scale) -> np.ndarray:
    """LiteRT's reference integer LogSoftmax over the last axis of ``q`` (int8 or uint8, any leading shape)."""
    dtype = q.dtype.name
    q5_table, exp_table, p = log_softmax_tables(input_scale, dtype)
    x = q.astype(np.int64)
    neg_diff = x.max(axis=-1, keepdims=True) - x
    sum_of_exps = wrap32(exp_table[neg_diff].sum(axis=-1, keepdims=True))
    log_sum = log_x_ge_1(sum_of_exps, 12, 5)
    shifted = wrap32(log_sum + INT32_MIN)
    adjusted_diff_min = np.maximum(p.diff_min - 1, mbqm(shifted, p.reverse_multiplier, -p.reverse_right_shift))
    lo, hi = dtype_range(dtype)
    out = np.clip(rdbpot(wrap32(q5_table[neg_diff] - log_sum), 22) + log_softmax_zero_point(dtype), lo, hi)
    return np.where(-neg_diff > adjusted_diff_min, out, lo).astype(dtype)


def _unary_operands(name: str, types, arg_names) -> TensorType:
    data = tensor_arg(name, arg_names, types, 0)
    for i in range(1, 5):
        expect_scalar_or_vector(name, arg_names[i], types[i], 1)
    return data


def _log_softmax_rel(types, attrs):
    name = "qnn.log_softmax"
    data = _unary_operands(name, types, _ACT_ARGS)
    expect_dtype(name, "data", data, ("int8", "uint8"))
    if data.ndim == 0:
        raise fail(name, "data", "a tensor of rank ≥ 1", data)
    a = attrs.axis + data.ndim if attrs.axis < 0 else attrs.axis
    if not 0 <= a < data.ndim:
        raise fail(name, "axis", f"an axis of a rank-{data.ndim} tensor", attrs.axis)
    return TensorType(data.shape, data.dtype)


def _log_softmax_compute(args, attrs):
    x = args[0]
    if x.size == 0:
        return x.copy()
    moved = np.moveaxis(x, attrs.axis, -1)
    return np.ascontiguousarray(np.moveaxis(log_softmax_rows(moved, args[1]), -1, attrs.axis))


register_op("qnn.log_softmax", _ACT_ARGS, attrs=QnnLogSoftmaxAttrs, rel=_log_softmax_rel, fusion=FusionKind.OPAQUE,
            compute=_log_softmax_compute,
            doc="TFLite LOG_SOFTMAX (REF): gemmlowp fixed-point exp and log along axis; the output parameters are "
                "implied (16/256 with zero point 127 for int8, 255 for uint8).")


# ------------------------------------------------------------------------------------- squared_difference
_SQD_ARGS = ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point", "output_scale",
             "output_zero_point")


def _squared_difference_rel(types, attrs):
    name = "qnn.squared_difference"
    a = tensor_arg(name, _SQD_ARGS, types, 0)
    b = tensor_arg(name, _SQD_ARGS, types, 1)
    expect_dtype(name, "lhs", a, "int8")
    expect_dtype(name, "rhs", b, "int8")
    for i in range(2, 8):
        expect_scalar_or_vector(name, _SQD_ARGS[i], types[i], 1)
    shape = broadcast_shapes(name, a.shape, b.shape)
    if len(shape) > 4:
        raise fail(name, "lhs", "operands of rank ≤ 4 after broadcasting (LiteRT's 4-D broadcast)",
                   f"rank {len(shape)}")
    return TensorType(shape, "int8")


def squared_difference_int8(x, y, s1, zp1, s2, zp2, so, zpo) -> np.ndarray:
    """LiteRT's int8 SquaredDifference on broadcast operands."""
    p = squared_difference_params(s1, s2, so)
    a = np.asarray(x, np.int64) - zp1
    b = np.asarray(y, np.int64) - zp2
    sa = rdbpot(srdhm(a << p.left_shift, p.lhs_multiplier), -p.lhs_shift)
    sb = rdbpot(srdhm(b << p.left_shift, p.rhs_multiplier), -p.rhs_shift)
    d = wrap32(sa - sb)
    raw = rdbpot(srdhm(wrap32(d * d), p.output_multiplier), -p.output_shift) + zpo
    return np.clip(raw, -128, 127).astype(np.int8)


def _squared_difference_compute(args, attrs):
    x, y = args[:2]
    s1, zp1, s2, zp2, so, zpo = args[2:]
    return squared_difference_int8(x, y, s1, _scalar_int(zp1), s2, _scalar_int(zp2), so, _scalar_int(zpo))


register_op("qnn.squared_difference", _SQD_ARGS, rel=_squared_difference_rel, fusion=FusionKind.BROADCAST,
            compute=_squared_difference_compute,
            doc="TFLite SQUARED_DIFFERENCE (int8): (rescaled lhs − rescaled rhs)² with LiteRT's left-shift-7 "
                "multipliers.")


# ------------------------------------------------------------------------------------------------- rsqrt
def inv_sqrt_multiplier_exp(value: int, reverse_shift: int = -1) -> tuple[int, int]:
    """TFLite GetInvSqrtQuantizedMultiplierExp(value, reverse_shift): 1/√value as (multiplier, shift)."""
    if value <= 1:
        return INT32_MAX, 0
    shift = 11
    while value >= (1 << 29):
        value //= 4
        shift += 1
    max_left_shift_bits = int(gemmlowp.count_leading_zeros32(value)) - 1
    left_shift_bit_pairs = max_left_shift_bits // 2 - 1
    shift -= left_shift_bit_pairs
    value <<= 2 * left_shift_bit_pairs
    fixed_input = value >> 1                       # F3
    half_input = int(rdbpot(fixed_input, 1))       # SaturatingRoundingMultiplyByPOT<-1>
    half_three = (1 << 28) + (1 << 27)             # 1.5 in F3
    x = 1 << 28                                    # F3::One()
    for _ in range(5):
        x3 = int(_sat_pot(srdhm(srdhm(x, x), x), 6))                          # Rescale<3>(F9)
        x = int(_sat_pot(wrap32(srdhm(half_three, x) - srdhm(half_input, x3)), 3))  # Rescale<3>(F6)
    x = int(srdhm(x, 1518500250))                  # × √2/2 (F0)
    if shift < 0:
        x = int(wrap32(x << -shift))
        shift = 0
    return x, shift * reverse_shift


def rsqrt_table(input_scale, input_zero_point: int, output_scale, output_zero_point: int) -> np.ndarray:
    """LiteRT's int8 RSQRT for every input q in [−128, 127], indexed by q + 128 (entries below the input zero
    point are never used: those inputs are errors)."""
    m, s = rsqrt_params(input_scale, output_scale)
    out = np.full(256, 127, np.int64)
    for q in range(input_zero_point + 1, 128):
        inv, inv_shift = inv_sqrt_multiplier_exp(q - input_zero_point)
        data = int(mbqm(1, inv, inv_shift + 20))
        out[q + 128] = int(mbqm(data, m, s - 20)) + output_zero_point
    return np.clip(out, -128, 127).astype(np.int8)


def rsqrt16_values(input_scale, input_zero_point: int, output_scale, output_zero_point: int) -> np.ndarray:
    """LiteRT's int16 RSQRT for every input q in [−32768, 32767], indexed by q + 32768: its interpolated 513-entry
    table (``byoc.quant.interpolated_lut``); entries below the input zero point are never used (those inputs are errors)."""
    from ..quant.interpolated_lut import lookup16, rsqrt16_table
    table = rsqrt16_table(input_scale, input_zero_point, output_scale, output_zero_point)
    return lookup16(np.arange(-32768, 32768), table).astype(np.int16)


def _rsqrt_rel(types, attrs):
    name = "qnn.rsqrt"
    data = _unary_operands(name, types, _UNARY_ARGS)
    expect_dtype(name, "data", data, ("int8", "int16"))
    return data


def _rsqrt_compute(args, attrs):
    x, s_in, zp_in, s_out, zp_out = args
    zp = _scalar_int(zp_in)
    if x.size and int(x.min()) < zp:
        raise ExecutionError(f"qnn.rsqrt: input {int(x.min())} is below the input zero point {zp} (a negative "
                             "value)", hint="LiteRT fails here too: Rsqrt is only defined for positive values")
    if x.dtype == np.int16:
        return rsqrt16_values(s_in, zp, s_out, _scalar_int(zp_out))[x.astype(np.int64) + 32768]
    table = rsqrt_table(s_in, zp, s_out, _scalar_int(zp_out))
    return table[x.astype(np.int64) + 128]


register_op("qnn.rsqrt", _UNARY_ARGS, rel=_rsqrt_rel, fusion=FusionKind.ELEMWISE, compute=_rsqrt_compute,
            doc="TFLite RSQRT: int8 LiteRT's fixed-point 1/√(q − zp) and output multiplier, int16 its interpolated "
                "table; negative inputs are an error.")
