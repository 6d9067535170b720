"""CPU lowerings of qnn.log_softmax, qnn.squared_difference and qnn.rsqrt (byoc/ops/qnn_math.py).

* qnn.log_softmax: a row kernel. Per row the maximum, the Q12.19 sum of tabulated exponentials (a build-time
  table of the shared gemmlowp exp indexed by max − x, as qnn.softmax's lowering does), TFLite's
  log_x_for_x_greater_than_or_equal_to_1 emitted in i32 fixed point, and the rescaled output.
* qnn.squared_difference: i32 arithmetic per element (LiteRT's left-shift-7 scheme), broadcasting by index.
* qnn.rsqrt: a 256-entry (int16: 65536-entry) table of the op's per-value arithmetic (byoc.ops.qnn_math), and a
  run-time error for inputs below the zero point, as the reference raises.
"""
from __future__ import annotations

from llvmlite import ir

from .cgutils import (I32, I64, alloca_once, const_int, for_range, int_min_max, is_signed, llvm_type, rdbpot,
                      saturate, srdhm)
from .kernel import ERROR_MESSAGES
from .lower_qnn import scalar_int
from .lower_reduce import _row_loops, int_row_max
from .lowering import lower_element, lower_kernel

ERROR_RSQRT_NEGATIVE = 4
ERROR_MESSAGES.setdefault(ERROR_RSQRT_NEGATIVE, "qnn.rsqrt: an input is below the input zero point (a negative "
                                                "value)")

_MIN, _MAX = -(1 << 31), (1 << 31) - 1


def _c(v: int) -> ir.Constant:
    return const_int(I32, v)


def _clz(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    fn = builder.module.globals.get("llvm.ctlz.i32") or ir.Function(
        builder.module, ir.FunctionType(I32, [I32, ir.IntType(1)]), "llvm.ctlz.i32")
    return builder.call(fn, [x, ir.Constant(ir.IntType(1), 0)])


def _sat_shl(builder: ir.IRBuilder, x: ir.Value, e: ir.Value) -> ir.Value:
    """SaturatingRoundingMultiplyByPOTParam for an exponent 0 ≤ e ≤ 31 (an i32 value)."""
    thr = builder.sub(builder.shl(_c(1), builder.sub(_c(31), e)), _c(1))
    r = builder.shl(x, e)
    r = builder.select(builder.icmp_signed(">", x, thr), _c(_MAX), r)
    r = builder.select(builder.icmp_signed("<", x, builder.sub(_c(0), thr)), _c(_MIN), r)
    return builder.select(builder.icmp_signed("==", e, _c(0)), x, r)


def _sat_add64(builder: ir.IRBuilder, a: ir.Value, b: ir.Value, sub: bool = False) -> ir.Value:
    a64, b64 = builder.sext(a, I64), builder.sext(b, I64)
    s = builder.sub(a64, b64) if sub else builder.add(a64, b64)
    s = builder.select(builder.icmp_signed(">", s, const_int(I64, _MAX)), const_int(I64, _MAX), s)
    s = builder.select(builder.icmp_signed("<", s, const_int(I64, _MIN)), const_int(I64, _MIN), s)
    return builder.trunc(s, I32)


def _half_sum(builder: ir.IRBuilder, a: ir.Value, b: int) -> ir.Value:
    """gemmlowp RoundingHalfSum in 64 bits."""
    s = builder.add(builder.sext(a, I64), const_int(I64, b))
    s = builder.add(s, builder.select(builder.icmp_signed(">=", s, const_int(I64, 0)), const_int(I64, 1),
                                      const_int(I64, -1)))
    return builder.trunc(builder.sdiv(s, const_int(I64, 2)), I32)


def _one_over_one_plus_x(builder: ir.IRBuilder, a: ir.Value) -> ir.Value:
    hd = _half_sum(builder, a, _MAX)
    x = builder.add(_c(1515870810), srdhm(builder, hd, _c(-1010580540), False))
    for _ in range(3):
        one_minus = builder.sub(_c(1 << 29), srdhm(builder, hd, x))
        x = builder.add(x, _sat_shl(builder, srdhm(builder, x, one_minus), _c(2)))
    return _sat_shl(builder, x, _c(1))


def emit_log_x_ge_1(builder: ir.IRBuilder, z_a: ir.Value, input_bits: int, output_bits: int) -> ir.Value:
    """TFLite's log_x_for_x_greater_than_or_equal_to_1 (byoc.ops.qnn_math.log_x_ge_1) on an i32."""
    from ...ops import qnn_math as em
    acc = output_bits + 1
    quarter = em._ONE_QUARTER >> acc  # RDBPOT of 2^29 by acc: exact
    clz_a = _clz(builder, z_a)
    r_a_tmp = _sat_shl(builder, z_a, builder.sub(clz_a, _c(1)))
    r_a_raw = _sat_shl(builder, srdhm(builder, r_a_tmp, _c(em._SQRT_HALF)), _c(1))
    z_a_adj = _sat_add64(builder, _sat_shl(builder, builder.sub(_c(input_bits), clz_a), _c(31 - acc)), _c(quarter))
    z_b = srdhm(builder, z_a, _c(em._SQRT_HALF))
    z_b_head = builder.sub(_clz(builder, z_b), _c(1))
    r_b_raw = _sat_shl(builder, z_a, z_b_head)
    z_b_adj = _sat_add64(builder, _sat_shl(builder, builder.sub(_c(input_bits), z_b_head), _c(31 - acc)),
                         _c(quarter), sub=True)
    r = builder.select(builder.icmp_signed("<", r_a_raw, r_b_raw), r_a_raw, r_b_raw)
    z_adj = builder.select(builder.icmp_signed(">", z_a_adj, z_b_adj), z_a_adj, z_b_adj)
    p = _half_sum(builder, r, em._SQRT_SQRT_HALF)
    q = builder.sub(r, _c(em._SQRT_SQRT_HALF))
    q = builder.add(q, q)
    common_sq = srdhm(builder, q, q)
    num = builder.add(srdhm(builder, q, r), srdhm(builder, srdhm(builder, q, common_sq), _c(em._ALPHA_N)))
    inner = builder.add(builder.add(_c(em._ALPHA_I), q), srdhm(builder, _c(em._ALPHA_D), common_sq))
    denom = builder.add(srdhm(builder, p, inner), srdhm(builder, _c(em._ALPHA_F), q))
    recip = _one_over_one_plus_x(builder, denom)
    num_scaled = rdbpot(builder, num, _c(acc))
    total = builder.add(srdhm(builder, z_adj, _c(em._LOG_2)), srdhm(builder, num_scaled, recip))
    return _sat_shl(builder, total, _c(acc - output_bits))


@lower_kernel("qnn.log_softmax", const_args=(1, 2, 3, 4), epilogue=False)
def _qnn_log_softmax(ctx, builder, node, args):
    from ...ops.qnn_math import log_softmax_tables, log_softmax_zero_point
    x = args[0]
    axis = node.attrs.axis % len(x.shape)
    q5, exps, p = log_softmax_tables(args[1], x.dtype)
    t_q5, t_exp = ctx.data(q5.astype("int32")), ctx.data(exps.astype("int32"))
    L = x.shape[axis]
    ext = builder.sext if is_signed(x.dtype) else builder.zext
    lo, hi = int_min_max(x.dtype)
    zp = log_softmax_zero_point(x.dtype)
    mx = alloca_once(builder, I64, name="mx")
    sm = alloca_once(builder, I32, name="sum")
    out = ctx.output_buffer(0)
    with _row_loops(ctx, builder, x.shape, axis) as at:
        m = int_row_max(builder, x, at, L, mx)
        builder.store(_c(0), sm)
        with for_range(builder, 0, L, name="k") as k:
            nd = builder.sub(m, ext(x.load(builder, at(k.index)), I64))
            builder.store(builder.add(builder.load(sm), t_exp.load(builder, [nd])), sm)
        log_sum = emit_log_x_ge_1(builder, builder.load(sm), 12, 5)
        shifted = builder.add(log_sum, _c(_MIN))
        rescaled = rdbpot(builder, srdhm(builder, shifted, _c(p.reverse_multiplier)), _c(p.reverse_right_shift))
        floor = _c(p.diff_min - 1)
        adj = builder.select(builder.icmp_signed(">", rescaled, floor), rescaled, floor)
        with for_range(builder, 0, L, name="k") as k:
            nd = builder.sub(m, ext(x.load(builder, at(k.index)), I64))
            diff = builder.trunc(builder.sub(const_int(I64, 0), nd), I32)
            r = builder.add(rdbpot(builder, builder.sub(t_q5.load(builder, [nd]), log_sum), _c(22)), _c(zp))
            r = builder.select(builder.icmp_signed(">", diff, adj), saturate(builder, r, lo, hi), _c(lo))
            out.store(builder, at(k.index), builder.trunc(r, llvm_type(x.dtype)))


@lower_element("qnn.squared_difference", const_args=(2, 3, 4, 5, 6, 7))
def _qnn_squared_difference(ctx, builder, node, args):
    from ...quant.params import squared_difference_params
    a, b, s1, zp1, s2, zp2, so, zpo = args
    p = squared_difference_params(s1, s2, so)

    def scaled(v, zp, m, shift):
        v = builder.shl(builder.sub(builder.sext(v, I32), _c(scalar_int(zp))), _c(p.left_shift))
        return rdbpot(builder, srdhm(builder, v, _c(m)), _c(-shift))
    d = builder.sub(scaled(a, zp1, p.lhs_multiplier, p.lhs_shift), scaled(b, zp2, p.rhs_multiplier, p.rhs_shift))
    raw = rdbpot(builder, srdhm(builder, builder.mul(d, d), _c(p.output_multiplier)), _c(-p.output_shift))
    return builder.trunc(saturate(builder, builder.add(raw, _c(scalar_int(zpo))), -128, 127), llvm_type("int8"))


@lower_element("qnn.rsqrt", const_args=(1, 2, 3, 4))
def _qnn_rsqrt(ctx, builder, node, args):
    from ...ops.qnn_math import rsqrt16_values, rsqrt_table
    x, s_in, zp_in, s_out, zp_out = args
    zp = scalar_int(zp_in)
    lo = -32768 if x.type.width == 16 else -128
    ctx.kernel.fail_if(builder, builder.icmp_signed("<", x, const_int(x.type, max(zp, lo))), ERROR_RSQRT_NEGATIVE)
    # int16: LiteRT's interpolation tabulated over every input value (exact by construction)
    table = (rsqrt16_values if lo == -32768 else rsqrt_table)(s_in, zp, s_out, scalar_int(zp_out))
    idx = builder.add(builder.sext(x, I64), const_int(I64, -lo))
    return ctx.kernel.data(table).load(builder, [idx])
