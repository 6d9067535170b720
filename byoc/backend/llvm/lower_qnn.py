"""Element lowerings of the quantized elementwise ops, qnn.abs included (byoc/ops/qnn.py semantics, quant-semantics.md §1-3).

Multipliers and shifts always come from the op's one shared parameter function (e.g.
``byoc.ops.qnn.requant_params``); per-channel values become tables passed by pointer.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...ops import qnn as qnn_ops
from .cgutils import F64, I32, I64, const_int, int_min_max, int_width, llvm_type, mbqm, rdbpot, saturate, srdhm
from .lower_elemwise import channel_value, float_max, float_min, round_half_away
from .lowering import lower_element

__all__ = ["emit_requantize", "scalar_int"]


def scalar_int(a) -> int:
    return int(np.asarray(a).reshape(-1)[0])


def _axis(axis: int, ndim: int) -> int:
    return axis if axis >= 0 else axis + ndim


def emit_requantize(ctx, builder: ir.IRBuilder, x: ir.Value, in_dtype: str, input_scale, input_zp, output_scale,
                    output_zp, axis: int, rounding: str, out_dtype: str, in_bound: int | None = None) -> ir.Value:
    """``requantize_values`` of one element (its channel is ``ctx.index[axis]``); ``in_bound`` bounds |x|."""
    signed_in = not in_dtype.startswith("uint")
    if in_bound is None and in_dtype in ("int8", "uint8", "int16", "uint16"):
        lo, hi = int_min_max(in_dtype)
        in_bound = max(-lo, hi)
    x_bound = None if in_bound is None else in_bound + abs(scalar_int(input_zp))
    xi = (builder.sext if signed_in else builder.zext)(x, I64) if int_width(x.type) < 64 else x
    xi = builder.sub(xi, const_int(I64, scalar_int(input_zp)))
    scale_in = np.asarray(input_scale, np.float64).reshape(-1)
    ax = _axis(axis, len(ctx.index))
    if rounding == "TFLITE" and in_dtype == "int64":
        # LiteRT's int64 MBQM: (x·M16 + 2^(t−1)) >> t, wrapping int64 arithmetic, then truncated to int32.
        from ...quant.params import requant64_params
        m16, total = requant64_params(scale_in, output_scale)
        tv = channel_value(ctx, builder, total, "int64", ax)
        rnd = channel_value(ctx, builder, np.int64(1) << (total - 1), "int64", ax)
        v = builder.ashr(builder.add(builder.mul(xi, channel_value(ctx, builder, m16, "int64", ax)), rnd), tv)
        y = builder.sext(builder.trunc(v, I32), I64)
    elif rounding == "TFLITE":
        m, s = qnn_ops.requant_params(scale_in, output_scale)
        y = builder.sext(mbqm_per_channel(ctx, builder, builder.trunc(xi, I32), m, s, ax, x_bound), I64)
    elif rounding == "TFLITE_FLOAT":
        real = scale_in / np.float64(np.asarray(output_scale).reshape(-1)[0])
        rv = channel_value(ctx, builder, real, "float64", ax)
        y = builder.fptosi(round_half_away(builder, builder.fmul(builder.sitofp(xi, F64), rv)), I64)
    elif rounding == "ONNX":  # MlasRequantizeOutput: float32(x) · float32(s_in / s_out), round half to even
        f32 = np.float32
        real = (scale_in.astype(f32) / f32(np.asarray(output_scale).reshape(-1)[0])).astype(f32)
        v = builder.fmul(builder.sitofp(xi, ir.FloatType()), channel_value(ctx, builder, real, "float32", ax))
        v = float_min(builder, float_max(builder, _roundeven(builder, v), ir.Constant(ir.FloatType(), -2.0 ** 40)),
                      ir.Constant(ir.FloatType(), 2.0 ** 40))  # fptosi of an out-of-range value is poison
        y = builder.fptosi(v, I64)
    elif rounding in ("UPWARD", "TONEAREST"):
        m, s = qnn_ops.requant_params(scale_in, output_scale)
        mv = channel_value(ctx, builder, m, "int64", ax)
        total = builder.sub(const_int(I64, 31), channel_value(ctx, builder, s, "int64", ax))
        prod = builder.mul(xi, mv)
        rnd = builder.shl(const_int(I64, 1), builder.sub(total, const_int(I64, 1)))
        if rounding == "TONEAREST":
            rnd = builder.select(builder.icmp_signed("<", prod, const_int(I64, 0)),
                                 builder.sub(rnd, const_int(I64, 1)), rnd)
        y = builder.ashr(builder.add(prod, rnd), total)
    else:
        from ...errors import CodegenError
        raise CodegenError(f"qnn.requantize: the CPU backend has no lowering for rounding={rounding!r}")
    lo, hi = int_min_max(out_dtype)
    y = saturate(builder, builder.add(y, const_int(I64, scalar_int(output_zp))), lo, hi)
    return builder.trunc(y, ir.IntType(np.dtype(out_dtype).itemsize * 8)) if out_dtype != "int64" else y


def mbqm_per_channel(ctx, builder: ir.IRBuilder, x: ir.Value, m: np.ndarray, s: np.ndarray, axis: int,
                     x_bound: int | None = None) -> ir.Value:
    """MBQM with (multiplier, shift) per channel; the shift-derived masks are tabulated at build time so a
    per-channel epilogue does no shift arithmetic (and uniform values become immediates). ``x_bound`` (a bound
    on |x| known at build time) allows a shorter exact RDBPOT."""
    m = np.asarray(m, np.int64).reshape(-1)
    s = np.asarray(s, np.int64).reshape(-1)
    left = np.maximum(s, 0)
    right = np.maximum(-s, 0)
    mask = (np.int64(1) << right) - 1
    x = builder.shl(x, channel_value(ctx, builder, left, "int32", axis))
    may_be_min = bool(np.any(m == -(1 << 31)))
    hi = srdhm(builder, x, channel_value(ctx, builder, m, "int32", axis), may_be_min)
    hi_bound = _srdhm_bound(x_bound, int(left.max(initial=0))) if not may_be_min else None
    if hi_bound is not None and _nudge_fits(hi_bound, right):
        return rdbpot_nudge(ctx, builder, hi, right, axis)
    # RDBPOT: (hi >> right) + ((hi & mask) > (mask >> 1) + (hi < 0)).
    maskv = channel_value(ctx, builder, mask.astype(np.int64).astype(np.uint32).view(np.int32), "int32", axis)
    halfv = channel_value(ctx, builder, (mask >> 1), "int32", axis)
    rem = builder.and_(hi, maskv)
    neg = builder.zext(builder.icmp_signed("<", hi, const_int(I32, 0)), I32)
    up = builder.zext(builder.icmp_signed(">", rem, builder.add(halfv, neg)), I32)
    return builder.add(builder.ashr(hi, channel_value(ctx, builder, right, "int32", axis)), up)


def _srdhm_bound(x_bound: int | None, left: int) -> int | None:
    """A bound on |SRDHM(x·2^left, M)| for |x| ≤ x_bound (M < 2^31, so |result| ≤ |x·2^left| + 1), or None
    when x·2^left may wrap."""
    if x_bound is None or (x_bound << left) >= 1 << 31:
        return None
    return (x_bound << left) + 1


def _nudge_fits(bound: int, right: np.ndarray) -> bool:
    return bound + (1 << int(np.max(right, initial=0))) < (1 << 31) - 1


def rdbpot_nudge(ctx, builder: ir.IRBuilder, x: ir.Value, right: np.ndarray, axis: int) -> ir.Value:
    """RDBPOT(x, right) = (x + 2^(right−1) − [x < 0]) >> right for right ≥ 1 (and x for right = 0): exact when
    x + 2^(right−1) cannot overflow (``_nudge_fits``); 4 operations instead of 7."""
    right = np.asarray(right, np.int64).reshape(-1)
    half = (np.int64(1) << right) >> 1
    negmask = np.where(right >= 1, -1, 0)
    neg = builder.and_(builder.ashr(x, const_int(I32, 31)), channel_value(ctx, builder, negmask, "int32", axis))
    nudged = builder.add(builder.add(x, channel_value(ctx, builder, half, "int32", axis)), neg)
    return builder.ashr(nudged, channel_value(ctx, builder, right, "int32", axis))


@lower_element("qnn.requantize", const_args=(1, 2, 3, 4))
def _requantize(ctx, builder, node, args):
    x, s_in, zp_in, s_out, zp_out = args
    a = node.attrs
    bound = ctx.kernel.value_bounds.get(id(node.args[0]))
    return emit_requantize(ctx, builder, x, ctx.arg_types[0].dtype, s_in, zp_in, s_out, zp_out, a.axis, a.rounding,
                           a.out_dtype, bound)


# --- qnn.add / qnn.subtract / qnn.mul ------------------------------------------------------------------------

def _binary_axis(node) -> int | None:
    from ...ops.qnn_elemwise import binary_channel_axis
    types = [a.checked_type for a in node.args]
    return binary_channel_axis(node.op.name, types[0], types[1], len(node.checked_type.shape), types, node.attrs)


def _ext64(builder, v, dtype):
    return (builder.zext if dtype.startswith("uint") else builder.sext)(v, I64)


def _binary_qnn(op_name: str):
    @lower_element(op_name, const_args=(2, 3, 4, 5, 6, 7))
    def _lower(ctx, builder, node, args):
        x, y, s1, z1, s2, z2, so, zo = args
        dt = ctx.arg_types[0].dtype
        if node.attrs.rounding == "ONNX":
            return _onnx_binary(ctx, builder, node, x, y, dt)
        if node.attrs.rounding == "TFLITE_POT":
            return _pot_binary(builder, op_name, x, y, s1, s2, so)
        axis = _binary_axis(node)
        ax = 0 if axis is None else axis

        def chan(v, dtype):
            return channel_value(ctx, builder, np.broadcast_to(np.asarray(v).reshape(-1), (n_ch,)), dtype, ax)

        n_ch = max(np.asarray(a).size for a in (s1, z1, s2, z2, so))
        a = builder.sub(_ext64(builder, x, dt), chan(z1, "int64"))
        b = builder.sub(_ext64(builder, y, dt), chan(z2, "int64"))
        a32, b32 = builder.trunc(a, I32), builder.trunc(b, I32)
        if op_name == "qnn.mul":
            m, e = qnn_mul_params(s1, s2, so)
            raw = mbqm(builder, builder.mul(a32, b32), chan(m, "int32"), chan(e, "int32"),
                       m_may_be_min=bool(np.any(m == -(1 << 31))))
        else:
            from ...ops.qnn_elemwise import add_left_shift
            p = qnn_add_params(s1, s2, so, add_left_shift(dt), op_name)
            ls = const_int(I32, p.left_shift)
            zero = const_int(I32, 0)

            def shift_down(v, e, bound):
                # The operands are 8/16-bit values, so the range is known and the short RDBPOT is usually exact.
                right = -np.broadcast_to(np.asarray(e, np.int64).reshape(-1), (n_ch,))
                if bound is not None and _nudge_fits(bound, right):
                    return rdbpot_nudge(ctx, builder, v, right, ax)
                return rdbpot(builder, v, builder.sub(zero, chan(e, "int32")))

            def scaled(v, m, e, zp):
                bound = _srdhm_bound(_operand_bound(dt, zp), p.left_shift)
                return shift_down(srdhm(builder, builder.shl(v, ls), chan(m, "int32"), False), e, bound), bound

            sa, ba = scaled(a32, p.lhs_multiplier, p.lhs_shift, z1)
            sb, bb = scaled(b32, p.rhs_multiplier, p.rhs_shift, z2)
            total = builder.add(sa, sb) if op_name == "qnn.add" else builder.sub(sa, sb)
            tb = ba + bb + 1 if ba is not None and bb is not None and ba + bb < 1 << 30 else None
            raw = shift_down(srdhm(builder, total, chan(p.output_multiplier, "int32"), False), p.output_shift,
                             None if tb is None else tb + 1)
        lo, hi = int_min_max(dt)
        r = saturate(builder, builder.add(builder.sext(raw, I64), const_int(I64, scalar_int(zo))), lo, hi)
        return builder.trunc(r, x.type)
    return _lower


def _pot_binary(builder, op_name: str, x, y, s1, s2, so):
    """LiteRT's int16 power-of-two ADD/SUB: RDBPOT(q1, −sh1) ± RDBPOT(q2, −sh2), saturated to int16."""
    from ...errors import CodegenError
    from ...quant.params import pot_add_shifts
    if op_name == "qnn.mul":
        raise CodegenError("qnn.mul has no rounding='TFLITE_POT' semantics")
    sh1, sh2 = pot_add_shifts(s1, s2, so, op_name)
    a = rdbpot(builder, builder.sext(x, I32), const_int(I32, -sh1))
    b = rdbpot(builder, builder.sext(y, I32), const_int(I32, -sh2))
    raw = builder.add(a, b) if op_name == "qnn.add" else builder.sub(a, b)
    return builder.trunc(saturate(builder, raw, -32768, 32767), x.type)


def _operand_bound(dtype: str, zp) -> int | None:
    """A bound on |x − zp| for x of an 8/16-bit dtype."""
    if dtype not in ("int8", "uint8", "int16", "uint16"):
        return None
    lo, hi = int_min_max(dtype)
    z = np.asarray(zp, np.int64).reshape(-1)
    return int(max(np.max(np.abs(hi - z)), np.max(np.abs(z - lo))))


def qnn_add_params(s1, s2, so, left_shift, op):
    from ...quant.params import add_params
    return add_params(s1, s2, so, left_shift, op=op)


def qnn_mul_params(s1, s2, so):
    from ...quant.params import mul_params
    return mul_params(s1, s2, so)


for _name in ("qnn.add", "qnn.subtract", "qnn.mul"):
    _binary_qnn(_name)


def _roundeven(builder, v):
    from .lower_elemwise import call_intrinsic
    return call_intrinsic(builder, "roundeven", [v])


def _onnx_binary(ctx, builder, node, x, y, dt):
    """onnxruntime QLinearAdd (AVX2, fused multiply-adds) / QLinearMul (byoc.quant.onnxrt), in float32."""
    from ...errors import CodegenError
    from .lower_elemwise import call_intrinsic
    s1, z1, s2, z2, so, zo = (np.asarray(node.args[i].data).reshape(-1) for i in range(2, 8))
    f32 = np.float32
    za, zb, zc = int(z1[0]), int(z2[0]), int(zo[0])
    F = ir.FloatType()

    def c(v):
        return ir.Constant(F, float(f32(v)))

    def tof(v):
        return builder.sitofp(_ext64(builder, v, dt), F)

    def fma(a, b, cc):
        return call_intrinsic(builder, "fma", [a, b, cc])

    if node.op.name == "qnn.mul":
        ratio = f32(f32(f32(s1[0]) * f32(s2[0])) / f32(so[0]))
        prod = builder.mul(builder.sub(_ext64(builder, x, dt), const_int(I64, za)),
                           builder.sub(_ext64(builder, y, dt), const_int(I64, zb)))
        v = builder.fadd(builder.fmul(builder.sitofp(prod, F), c(ratio)), c(zc))
        clip_lo, clip_hi = None, None
    elif node.op.name == "qnn.add":
        from ...quant.onnxrt import fma_f32
        ra = f32(f32(s1[0]) / f32(so[0]))
        rb = f32(f32(s2[0]) / f32(so[0]))
        fixed = f32(f32(zc) - fma_f32(ra, f32(za), f32(rb * f32(zb))))
        a_size = node.args[0].checked_type.size
        b_size = node.args[1].checked_type.size
        if b_size == 1 and a_size != 1 or (a_size == 1 and b_size == 1):
            fx = builder.fadd(c(fixed), builder.fmul(tof(y), c(rb)))
            v = fma(tof(x), c(ra), fx)
        elif a_size == 1:
            fixed2 = f32(f32(zc) - fma_f32(rb, f32(zb), f32(ra * f32(za))))
            fx = builder.fadd(c(fixed2), builder.fmul(tof(x), c(ra)))
            v = fma(tof(y), c(rb), fx)
        else:
            v = fma(tof(x), c(ra), fma(tof(y), c(rb), c(fixed)))
        clip_lo, clip_hi = -(1 << 20), 1 << 20
    else:
        raise CodegenError(f"{node.op.name} has no rounding='ONNX' semantics")
    r = builder.fptosi(_roundeven(builder, v), I64)
    if clip_lo is not None:
        r = saturate(builder, r, clip_lo, clip_hi)
    lo, hi = int_min_max(dt)
    return builder.trunc(saturate(builder, r, lo, hi), x.type)


# --- quantize / dequantize -------------------------------------------------------------------------------------

@lower_element("qnn.quantize", const_args=(1, 2))
def _quantize(ctx, builder, node, args):
    from .lower_elemwise import emit_cast
    x, scale, zp = args
    a = node.attrs
    nd = len(ctx.index)
    ax = _axis(a.axis, nd) if nd else 0
    F = ir.FloatType()
    xf = emit_cast(builder, x, ctx.arg_types[0].dtype, "float32")
    s = channel_value(ctx, builder, np.asarray(scale, np.float32), "float32", ax)
    v = builder.fdiv(xf, s)
    lo, hi = int_min_max(a.out_dtype)
    if a.rounding == "ONNX":
        q = _roundeven(builder, v)
        bounds = (float(lo - 2 ** 20), float(hi + 2 ** 20))
    else:
        q = round_half_away(builder, v)
        bounds = (-(2.0 ** 31), 2.0 ** 31 - 1)
    from .lower_elemwise import float_max, float_min
    isnan = builder.fcmp_unordered("uno", q, q)
    q = builder.select(isnan, ir.Constant(F, 0.0), q)
    q = float_min(builder, float_max(builder, q, ir.Constant(F, bounds[0])), ir.Constant(F, bounds[1]))
    r = builder.add(builder.fptosi(q, I64), channel_value(ctx, builder, np.asarray(zp, np.int64), "int64", ax))
    r = saturate(builder, r, lo, hi)
    return builder.trunc(r, ir.IntType(np.dtype(a.out_dtype).itemsize * 8))


@lower_element("qnn.dequantize", const_args=(1, 2))
def _dequantize(ctx, builder, node, args):
    q, scale, zp = args
    nd = len(ctx.index)
    ax = _axis(node.attrs.axis, nd) if nd else 0
    v = builder.sub(_ext64(builder, q, ctx.arg_types[0].dtype),
                    channel_value(ctx, builder, np.asarray(zp, np.int64), "int64", ax))
    s = channel_value(ctx, builder, np.asarray(scale, np.float64), "float64", ax)
    return builder.fptrunc(builder.fmul(s, builder.sitofp(v, F64)), ir.FloatType())


# --- table lookups for int8/uint8 activations ----------------------------------------------------------------

def lut_lookup(ctx, builder, x: ir.Value, dtype: str, table: np.ndarray) -> ir.Value:
    """table[q − qmin] for an 8- or 16-bit q; the table is computed at build time."""
    lo, _ = int_min_max(dtype)
    idx = builder.sub(_ext64(builder, x, dtype), const_int(I64, lo))
    return ctx.kernel.data(np.ascontiguousarray(table)).load(builder, [idx])


def _domain_table(node, dtype: str) -> np.ndarray:
    """The op's own reference compute over every 8- or 16-bit input: the exact definition, tabulated."""
    lo, hi = int_min_max(dtype)
    domain = np.arange(lo, hi + 1, dtype=np.int64).astype(dtype)
    consts = [np.asarray(a.data) for a in node.args[1:]]
    return np.asarray(node.op.op_def.compute([domain] + consts, node.attrs)).astype(node.checked_type.dtype)


def _lut_activation(kind: str):
    @lower_element(f"qnn.{kind}", const_args=(1, 2, 3, 4))
    def _lower(ctx, builder, node, args):
        x, s_in, zp_in, s_out, zp_out = args
        dt = ctx.arg_types[0].dtype
        if node.attrs.rounding == "TFLITE":
            from ...quant.params import lut_for
            table = lut_for(kind, s_in, zp_in, s_out, zp_out, dt)
        else:
            table = _domain_table(node, dt)
        return lut_lookup(ctx, builder, x, dt, table)
    return _lower


for _kind in ("sigmoid", "tanh"):
    _lut_activation(_kind)


@lower_element("qnn.hardswish", const_args=(1, 2, 3, 4))
def _hardswish(ctx, builder, node, args):
    dt = ctx.arg_types[0].dtype
    return lut_lookup(ctx, builder, args[0], dt, _domain_table(node, dt))


@lower_element("qnn.leaky_relu", const_args=(1, 2, 3, 4))
def _leaky_relu(ctx, builder, node, args):
    x, s_in, zp_in, s_out, zp_out = args
    dt = ctx.arg_types[0].dtype
    if dt in ("int8", "uint8") or node.attrs.rounding == "ONNX":
        return lut_lookup(ctx, builder, x, dt, _domain_table(node, dt))
    from ...quant.params import leaky_relu_params
    p = leaky_relu_params(s_in, node.attrs.alpha, s_out)
    v = builder.sub(_ext64(builder, x, dt), const_int(I64, scalar_int(zp_in)))
    v32 = builder.trunc(v, I32)
    pos = mbqm(builder, v32, const_int(I32, p.identity_multiplier), const_int(I32, p.identity_shift))
    neg = mbqm(builder, v32, const_int(I32, abs(p.alpha_multiplier)), const_int(I32, p.alpha_shift))
    neg = builder.sext(neg, I64)
    if p.alpha_multiplier < 0:
        neg = builder.sub(const_int(I64, 0), neg)
    r = builder.select(builder.icmp_signed(">=", v, const_int(I64, 0)), builder.sext(pos, I64), neg)
    lo, hi = int_min_max(dt)
    r = saturate(builder, builder.add(r, const_int(I64, scalar_int(zp_out))), lo, hi)
    return builder.trunc(r, x.type)


@lower_element("qnn.prelu", const_args=(2, 3, 4, 5, 6, 7))
def _prelu(ctx, builder, node, args):
    from ...ops.qnn_prelu import prelu_params
    x, alpha, s_in, zp_in, s_a, zp_a, s_out, zp_out = args
    dt = ctx.arg_types[0].dtype
    p = prelu_params(s_in, s_a, s_out)
    ext = builder.zext if dt.startswith("uint") else builder.sext
    xv = builder.sub(ext(x, I32), const_int(I32, scalar_int(zp_in)))
    av = builder.sub(ext(alpha, I32), const_int(I32, scalar_int(zp_a)))
    pos = mbqm(builder, xv, const_int(I32, p.identity_multiplier), const_int(I32, p.identity_shift),
               p.identity_multiplier == -(1 << 31))
    neg = mbqm(builder, builder.mul(xv, av), const_int(I32, p.alpha_multiplier), const_int(I32, p.alpha_shift),
               p.alpha_multiplier == -(1 << 31))
    raw = builder.select(builder.icmp_signed(">=", xv, const_int(I32, 0)), pos, neg)
    lo, hi = int_min_max(dt)
    y = saturate(builder, builder.add(builder.sext(raw, I64), const_int(I64, scalar_int(zp_out))), lo, hi)
    return builder.trunc(y, x.type)


# ------------------------------------------------------------------------------------------------------ qnn.abs
@lower_element("qnn.abs", const_args=(1, 2, 3, 4))
def _qnn_abs(ctx, builder, node, args):
    from ...ops.rel import dtype_range
    from ...quant.params import abs_params
    x, s_in, zp_in, s_out, zp_out = args
    dt = ctx.arg_types[0].dtype
    v = builder.sub(builder.sext(x, I32), const_int(I32, scalar_int(zp_in)))
    v = builder.select(builder.icmp_signed("<", v, const_int(I32, 0)), builder.sub(const_int(I32, 0), v), v)
    rescale, m, shift = abs_params(s_in, s_out)
    if rescale:
        v = mbqm(builder, v, const_int(I32, m), const_int(I32, shift))
    lo, hi = dtype_range(dt)
    return builder.trunc(saturate(builder, builder.add(v, const_int(I32, scalar_int(zp_out))), lo, hi),
                         llvm_type(dt))
