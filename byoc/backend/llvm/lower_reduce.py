"""Kernel lowerings of reductions, pooling and softmax (byoc/ops/reduce.py, pool.py, qnn_elemwise.py qnn.mean,
qnn_activation.py qnn.softmax, nn.softmax / nn.log_softmax).

Integer paths are exact. Float reductions add in a fixed sequential order in the tensor's dtype; numpy's
``np.sum`` may add pairwise, so float sums can differ in the last bits (tests compare them with a tolerance).
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
from llvmlite import ir

from ...errors import ByocError, CodegenError
from ...ops.pool import pool_out_size
from ...ops.reduce import reduce_axes
from .cgutils import (F32, F64, I32, I64, alloca_once, const_int, for_range, int_min_max, is_float, is_signed,
                      llvm_type, loop_nest, rdbpot, saturate, srdhm)
from .kernel import ERROR_DIVIDE_BY_ZERO
from .lower_elemwise import call_libm, float_max, float_min, int_max, int_min
from .lower_qnn import scalar_int
from .lowering import lower_kernel

__all__ = ["out_loops"]

ERROR_SOFTMAX_RANGE = 2


@contextmanager
def out_loops(ctx, builder: ir.IRBuilder, shape):
    """Loop over every output index; the first axis longer than 1 is the parallel one."""
    shape = tuple(shape)
    ax = next((d for d, n in enumerate(shape) if n > 1), 0)
    zero = ir.Constant(I64, 0)
    if not shape:
        with ctx.parallel(builder, 1):
            yield []
        return
    with ctx.parallel(builder, shape[ax]) as p:
        with loop_nest(builder, shape[ax + 1:]) as inner:
            yield [zero] * ax + [p] + inner


def _zero_like(ty):
    return ir.Constant(ty, -0.0) if not isinstance(ty, ir.IntType) else ir.Constant(ty, 0)


# --- sum / mean / max / min / qnn.mean -----------------------------------------------------------------------

def _reduce_kernel(name: str):
    @lower_kernel(name, const_args=(1, 2, 3, 4) if name == "qnn.mean" else ())
    def _lower(ctx, builder, node, args):
        x = args[0]
        axes = reduce_axes(name, len(x.shape), node.attrs)
        keep = node.attrs.keepdims
        out_shape = node.checked_type.shape
        red_shape = [x.shape[a] for a in axes]
        n = int(np.prod(red_shape, dtype=np.int64)) if axes else 1
        dt = x.dtype
        floating = is_float(dt)
        kind = name if name != "qnn.mean" else "qsum"
        acc_ty = llvm_type(dt) if floating else I64
        acc = alloca_once(builder, acc_ty, name="acc")
        with out_loops(ctx, builder, out_shape) as oidx:
            builder.store(_init(kind, dt, acc_ty), acc)
            with loop_nest(builder, red_shape, name="r") as ridx:
                full, ri = [], iter(ridx)
                it_out = iter(oidx)
                for d in range(len(x.shape)):
                    if d in axes:
                        full.append(next(ri))
                        if keep:
                            next(it_out)
                    else:
                        full.append(next(it_out))
                v = x.load(builder, full)
                cur = builder.load(acc)
                builder.store(_combine(builder, kind, dt, cur, v), acc)
            result = _finish(ctx, builder, node, kind, dt, builder.load(acc), n, args)
            ctx.emit_output(builder, oidx, result)
    return _lower


def _init(kind, dt, acc_ty):
    if kind in ("max", "min"):
        if is_float(dt):
            return ir.Constant(acc_ty, float("-inf") if kind == "max" else float("inf"))
        lo, hi = int_min_max(dt)
        return const_int(I64, lo if kind == "max" else hi)
    return _zero_like(acc_ty)


def _combine(builder, kind, dt, cur, v):
    if is_float(dt):
        if kind == "max":
            return float_max(builder, cur, v)
        if kind == "min":
            return float_min(builder, cur, v)
        return builder.fadd(cur, v)
    v64 = (builder.sext if is_signed(dt) else builder.zext)(v, I64) if v.type.width < 64 else v
    if kind == "max":
        return int_max(builder, cur, v64, True)
    if kind == "min":
        return int_min(builder, cur, v64, True)
    return builder.add(cur, v64)


def _finish(ctx, builder, node, kind, dt, total, n, args):
    ty = llvm_type(dt)
    if is_float(dt):
        if kind == "mean":
            return builder.fdiv(total, ir.Constant(ty, float(n)))
        return total
    if kind == "mean":
        nn_ = const_int(I64, max(n, 1))
        neg = builder.icmp_signed("<", total, const_int(I64, 0))
        mag = builder.select(neg, builder.sub(const_int(I64, 0), total), total)
        q = builder.sdiv(mag, nn_)
        total = builder.select(neg, builder.sub(const_int(I64, 0), q), q)
    if kind == "qsum":
        from ...quant.params import mean_params
        _, s_in, zp_in, s_out, zp_out = args
        m, e = mean_params(s_in, s_out, n)
        t32 = builder.trunc(total, I32)
        shifted = builder.sub(t32, const_int(I32, scalar_int(zp_in) * n))
        from .cgutils import mbqm
        raw = builder.sext(mbqm(builder, shifted, const_int(I32, m), const_int(I32, e), m == -(1 << 31)), I64)
        lo, hi = int_min_max(dt)
        total = saturate(builder, builder.add(raw, const_int(I64, scalar_int(zp_out))), lo, hi)
    return builder.trunc(total, ty) if ty.width < 64 else total


for _name in ("sum", "mean", "max", "min", "qnn.mean"):
    _reduce_kernel(_name)


# --- pooling -----------------------------------------------------------------------------------------------------

def _layout_index(layout, n, y, x, c):
    m = {"N": n, "H": y, "W": x, "C": c}
    return [m[ch] for ch in layout]


def _pool_kernel(name: str):
    @lower_kernel(name)
    def _lower(ctx, builder, node, args):
        (x,) = args
        a = node.attrs
        layout = a.layout
        out_layout = a.out_layout or layout
        d = dict(zip(layout, x.shape))
        N, H, W, C = d["N"], d["H"], d["W"], d["C"]
        kh, kw = a.pool_size
        (sh, sw), (dh, dw) = a.strides, a.dilation
        t, l, b, r = a.padding
        oh = pool_out_size(H, kh, sh, dh, t, b, a.ceil_mode)
        ow = pool_out_size(W, kw, sw, dw, l, r, a.ceil_mode)
        dt = x.dtype
        floating = is_float(dt)
        is_max = name == "nn.max_pool2d"
        acc_ty = llvm_type(dt) if floating else I64
        acc = alloca_once(builder, acc_ty, name="acc")
        cnt = alloca_once(builder, I64, name="cnt")
        c64 = lambda v: ir.Constant(I64, int(v))  # noqa: E731
        with ctx.parallel(builder, oh, name="oy") as oy:
            with for_range(builder, 0, N, name="n") as n, for_range(builder, 0, ow, name="ox") as ox, \
                    for_range(builder, 0, C, name="c") as c:
                if is_max:
                    lo = float("-inf") if floating else int_min_max(dt)[0]
                    builder.store(ir.Constant(acc_ty, lo) if floating else const_int(I64, lo), acc)
                else:
                    builder.store(_zero_like(acc_ty), acc)
                builder.store(c64(0), cnt)
                with for_range(builder, 0, kh, name="ky") as ky, for_range(builder, 0, kw, name="kx") as kx:
                    iy = builder.add(builder.mul(oy, c64(sh)), builder.sub(builder.mul(ky.index, c64(dh)), c64(t)))
                    ix = builder.add(builder.mul(ox.index, c64(sw)), builder.sub(builder.mul(kx.index, c64(dw)), c64(l)))
                    inside = builder.and_(
                        builder.and_(builder.icmp_signed(">=", iy, c64(0)), builder.icmp_signed("<", iy, c64(H))),
                        builder.and_(builder.icmp_signed(">=", ix, c64(0)), builder.icmp_signed("<", ix, c64(W))))
                    if not is_max and a.count_include_pad:
                        counted = builder.and_(builder.icmp_signed("<", iy, c64(H + b)),
                                               builder.icmp_signed("<", ix, c64(W + r)))
                    else:
                        counted = inside
                    builder.store(builder.add(builder.load(cnt), builder.zext(counted, I64)), cnt)
                    cy = builder.select(inside, iy, c64(0))
                    cx = builder.select(inside, ix, c64(0))
                    v = x.load(builder, _layout_index(layout, n.index, cy, cx, c.index))
                    cur = builder.load(acc)
                    if floating:
                        v = builder.select(inside, v, ir.Constant(v.type, float("-inf") if is_max else 0.0))
                        new = float_max(builder, cur, v) if is_max else builder.fadd(cur, v)
                    else:
                        v64 = (builder.sext if is_signed(dt) else builder.zext)(v, I64)
                        new = int_max(builder, cur, v64, True) if is_max else builder.add(cur, v64)
                        new = builder.select(inside, new, cur)
                    builder.store(new, acc)
                total = builder.load(acc)
                if is_max:
                    res = total if floating else builder.trunc(total, llvm_type(dt))
                else:
                    count = builder.load(cnt)
                    ctx.kernel.fail_if(builder, builder.icmp_signed("==", count, c64(0)), ERROR_DIVIDE_BY_ZERO)
                    res = _average(builder, dt, total, count, clip=True)
                ctx.emit_output(builder, _layout_index(out_layout, n.index, oy, ox.index, c.index), res)
    return _lower


def _average(builder, dt, total, count, clip: bool):
    ty = llvm_type(dt)
    if is_float(dt):
        return builder.fdiv(total, builder.sitofp(count, ty))
    neg = builder.icmp_signed("<", total, const_int(I64, 0))
    mag = builder.select(neg, builder.sub(const_int(I64, 0), total), total)
    q = builder.sdiv(builder.add(mag, builder.sdiv(count, const_int(I64, 2))), count)
    q = builder.select(neg, builder.sub(const_int(I64, 0), q), q)
    if clip:
        lo, hi = int_min_max(dt)
        q = saturate(builder, q, lo, hi)
    return builder.trunc(q, ty) if ty.width < 64 else q


for _name in ("nn.max_pool2d", "nn.avg_pool2d"):
    _pool_kernel(_name)


def _global_pool(name: str):
    @lower_kernel(name)
    def _lower(ctx, builder, node, args):
        (x,) = args
        a = node.attrs
        layout, out_layout = a.layout, a.out_layout or a.layout
        d = dict(zip(layout, x.shape))
        N, H, W, C = d["N"], d["H"], d["W"], d["C"]
        dt = x.dtype
        floating = is_float(dt)
        is_max = name == "nn.global_max_pool2d"
        acc_ty = llvm_type(dt) if floating else I64
        acc = alloca_once(builder, acc_ty, name="acc")
        zero = ir.Constant(I64, 0)
        with ctx.parallel(builder, C, name="c") as c:
            with for_range(builder, 0, N, name="n") as n:
                if is_max:
                    builder.store(ir.Constant(acc_ty, float("-inf")) if floating else
                                  const_int(I64, int_min_max(dt)[0]), acc)
                else:
                    builder.store(_zero_like(acc_ty), acc)
                with for_range(builder, 0, H, name="y") as y, for_range(builder, 0, W, name="x") as xx:
                    v = x.load(builder, _layout_index(layout, n.index, y.index, xx.index, c))
                    cur = builder.load(acc)
                    if floating:
                        new = float_max(builder, cur, v) if is_max else builder.fadd(cur, v)
                    else:
                        v64 = (builder.sext if is_signed(dt) else builder.zext)(v, I64)
                        new = int_max(builder, cur, v64, True) if is_max else builder.add(cur, v64)
                    builder.store(new, acc)
                total = builder.load(acc)
                if is_max:
                    res = total if floating else builder.trunc(total, llvm_type(dt))
                else:
                    res = _average(builder, dt, total, const_int(I64, H * W), clip=False)
                ctx.emit_output(builder, _layout_index(out_layout, n.index, zero, zero, c), res)
    return _lower


for _name in ("nn.global_avg_pool2d", "nn.global_max_pool2d"):
    _global_pool(_name)


# --- softmax ---------------------------------------------------------------------------------------------------

@contextmanager
def _row_loops(ctx, builder, shape, axis):
    outer_shape = [d for i, d in enumerate(shape) if i != axis]
    with out_loops(ctx, builder, outer_shape) as oidx:
        def index_at(k):
            idx = list(oidx)
            idx.insert(axis, k)
            return idx
        yield index_at


def int_row_max(builder, x, at, length: int, slot) -> ir.Value:
    """The maximum of one row of an integer tensor, as i64; ``slot`` is an i64 alloca made outside the loops."""
    ext = builder.sext if is_signed(x.dtype) else builder.zext
    builder.store(const_int(I64, int_min_max(x.dtype)[0]), slot)
    with for_range(builder, 0, length, name="k") as k:
        builder.store(int_max(builder, builder.load(slot), ext(x.load(builder, at(k.index)), I64), True), slot)
    return builder.load(slot)


def _float_softmax(log: bool):
    @lower_kernel("nn.log_softmax" if log else "nn.softmax", epilogue=False)
    def _lower(ctx, builder, node, args):
        (x,) = args
        axis = node.attrs.axis if node.attrs.axis >= 0 else node.attrs.axis + len(x.shape)
        ty = llvm_type(x.dtype)
        L = x.shape[axis]
        mx = alloca_once(builder, ty, name="mx")
        sm = alloca_once(builder, ty, name="sum")
        out = ctx.output_buffer(0)
        with _row_loops(ctx, builder, x.shape, axis) as at:
            builder.store(ir.Constant(ty, float("-inf")), mx)
            with for_range(builder, 0, L, name="k") as k:
                builder.store(float_max(builder, builder.load(mx), x.load(builder, at(k.index))), mx)
            builder.store(ir.Constant(ty, -0.0), sm)
            m = builder.load(mx)
            with for_range(builder, 0, L, name="k") as k:
                e = call_libm(builder, "exp", builder.fsub(x.load(builder, at(k.index)), m))
                if not log:
                    out.store(builder, at(k.index), e)
                builder.store(builder.fadd(builder.load(sm), e), sm)
            s = builder.load(sm)
            lg = call_libm(builder, "log", s) if log else None
            with for_range(builder, 0, L, name="k") as k:
                if log:
                    out.store(builder, at(k.index), builder.fsub(builder.fsub(x.load(builder, at(k.index)), m), lg))
                else:
                    out.store(builder, at(k.index), builder.fdiv(out.load(builder, at(k.index)), s))
    return _lower


_float_softmax(False)
_float_softmax(True)


def _softmax_tables(scale, beta: float, dtype: str):
    """exp(diff) for every 8-bit diff ≤ 0 via the shared gemmlowp functions (build time), indexed by −diff."""
    from ...quant import gemmlowp
    from ...quant.fixedpoint import mbqm_greater_than_one
    from ...quant.params import softmax_params
    p = softmax_params(scale, beta)
    lo, hi = int_min_max(dtype)
    diff = -np.arange(0, hi - lo + 1, dtype=np.int64)
    valid = diff >= p.diff_min
    exps = gemmlowp.exp_on_negative_values(mbqm_greater_than_one(diff, p.input_multiplier, p.input_left_shift), 5)
    exps = np.where(valid, exps, 0).astype(np.int32)
    scaled = np.where(valid, rdbpot_np(exps, 12), 0).astype(np.int32)
    return exps, scaled, valid.astype(np.int8)


def rdbpot_np(x, e):
    from ...quant.fixedpoint import rdbpot as _r
    return _r(x, e)


def _recip(builder, sum32):
    """GetReciprocal(sum, 12) of gemmlowp: (1/(1+x) in Q0.31, bits over unit); sum > 0."""
    ctlz = builder.module.globals.get("llvm.ctlz.i32") or ir.Function(
        builder.module, ir.FunctionType(I32, [I32, ir.IntType(1)]), "llvm.ctlz.i32")
    h = builder.call(ctlz, [sum32, ir.Constant(ir.IntType(1), 0)])
    nb = builder.sub(const_int(I32, 12), h)
    shifted = builder.sub(builder.shl(sum32, h), const_int(I32, -(1 << 31)))
    # RoundingHalfSum(shifted, INT32_MAX) in 64 bits.
    s = builder.add(builder.sext(shifted, I64), const_int(I64, (1 << 31) - 1))
    s = builder.add(s, builder.select(builder.icmp_signed(">=", s, const_int(I64, 0)), const_int(I64, 1),
                                      const_int(I64, -1)))
    hd = builder.trunc(builder.sdiv(s, const_int(I64, 2)), I32)
    x = builder.add(const_int(I32, 1515870810), srdhm(builder, hd, const_int(I32, -1010580540), False))
    for _ in range(3):
        one_minus = builder.sub(const_int(I32, 1 << 29), srdhm(builder, hd, x))
        x = builder.add(x, _sat_shl(builder, srdhm(builder, x, one_minus), 2))
    return _sat_shl(builder, x, 1), nb


def _sat_shl(builder, x, n):
    thr = (1 << (31 - n)) - 1
    r = builder.shl(x, const_int(I32, n))
    r = builder.select(builder.icmp_signed(">", x, const_int(I32, thr)), const_int(I32, (1 << 31) - 1), r)
    return builder.select(builder.icmp_signed("<", x, const_int(I32, -thr)), const_int(I32, -(1 << 31)), r)


@lower_kernel("qnn.softmax", const_args=(1, 2, 3, 4), epilogue=False)
def _qnn_softmax(ctx, builder, node, args):
    rounding = node.attrs.rounding
    if rounding == "ONNX":
        return _onnx_softmax(ctx, builder, node, args)
    if rounding != "TFLITE":  # never fall back to TFLite arithmetic for a variant this kernel does not know
        raise CodegenError(f"qnn.softmax: the CPU backend has no lowering for rounding={rounding!r}",
                           hint="it implements rounding 'TFLITE' and 'ONNX'")
    _tflite_softmax(ctx, builder, node, args)


def _onnx_softmax(ctx, builder, node, args):
    """onnxruntime's QLinearSoftmax row by row (byoc.quant.onnxrt.qlinear_softmax): float32 table values of
    x − max + 255, their float32 sum added one by one in element order (plain fadd: no fast-math flag lets LLVM
    reassociate or vectorise it), then ``rint(T·k / Σ) + zp`` in double, saturated."""
    from ...ops.qnn_activation import onnx_softmax_scales
    from ...quant import onnxrt
    from .lower_elemwise import call_intrinsic
    x = args[0]
    try:
        xs, ys = onnx_softmax_scales(args[1], args[3])
    except ByocError as e:
        raise CodegenError(e.message, hint=e.hint) from e
    axis = node.attrs.axis % len(x.shape)
    L = x.shape[axis]
    table = ctx.data(onnxrt.qlinear_softmax_table(xs, L))
    k = ir.Constant(F64, float(onnxrt.qlinear_softmax_output_scale(ys)))
    zp = ir.Constant(F64, float(scalar_int(args[4])))
    ext = builder.sext if is_signed(x.dtype) else builder.zext
    lo, hi = int_min_max(x.dtype)
    mx = alloca_once(builder, I64, name="mx")
    sm = alloca_once(builder, F32, name="sum")
    out = ctx.output_buffer(0)
    with _row_loops(ctx, builder, x.shape, axis) as at:
        base = builder.sub(const_int(I64, 255), int_row_max(builder, x, at, L, mx))  # table index: x − max + 255

        def entry(i):
            return table.load(builder, [builder.add(base, ext(x.load(builder, at(i)), I64))])
        builder.store(ir.Constant(F32, 0.0), sm)
        with for_range(builder, 0, L, name="k") as kk:
            builder.store(builder.fadd(builder.load(sm), entry(kk.index)), sm)
        total = builder.fpext(builder.load(sm), F64)
        with for_range(builder, 0, L, name="k") as kk:
            q = builder.fdiv(builder.fmul(builder.fpext(entry(kk.index), F64), k), total)  # T·k exact in double
            r = builder.fadd(call_intrinsic(builder, "roundeven", [q]), zp)
            r = float_min(builder, float_max(builder, r, ir.Constant(F64, float(lo))), ir.Constant(F64, float(hi)))
            out.store(builder, at(kk.index), builder.trunc(builder.fptosi(r, I32), llvm_type(x.dtype)))


def _tflite_softmax(ctx, builder, node, args):
    x, scale = args[0], args[1]
    a = node.attrs
    axis = a.axis if a.axis >= 0 else a.axis + len(x.shape)
    out_dtype = a.out_dtype or x.dtype
    exps, scaled, _valid = _softmax_tables(scale, a.beta, x.dtype)
    t_exp, t_scaled = ctx.data(exps), ctx.data(scaled)
    L = x.shape[axis]
    ext = builder.sext if is_signed(x.dtype) else builder.zext
    mx = alloca_once(builder, I64, name="mx")
    sm = alloca_once(builder, I32, name="sum")
    out = ctx.output_buffer(0)
    lo, hi = int_min_max(out_dtype)
    out_bits = np.dtype(out_dtype).itemsize * 8
    with _row_loops(ctx, builder, x.shape, axis) as at:
        m = int_row_max(builder, x, at, L, mx)
        builder.store(const_int(I32, 0), sm)
        with for_range(builder, 0, L, name="k") as k:
            nd = builder.sub(m, ext(x.load(builder, at(k.index)), I64))
            builder.store(builder.add(builder.load(sm), t_scaled.load(builder, [nd])), sm)
        recip, nb = _recip(builder, builder.load(sm))
        exponent = builder.add(nb, const_int(I32, 31 - out_bits))
        bad = builder.or_(builder.icmp_signed("<", exponent, const_int(I32, 0)),
                          builder.icmp_signed(">", exponent, const_int(I32, 31)))
        ctx.kernel.fail_if(builder, bad, ERROR_SOFTMAX_RANGE)
        with for_range(builder, 0, L, name="k") as k:
            nd = builder.sub(m, ext(x.load(builder, at(k.index)), I64))
            e = t_exp.load(builder, [nd])
            r = builder.add(rdbpot(builder, srdhm(builder, recip, e), exponent), const_int(I32, lo))
            r = saturate(builder, r, lo, hi)
            # Invalid (too small) differences have e == 0 in the table and give exactly lo as well.
            out.store(builder, at(k.index), builder.trunc(r, llvm_type(out_dtype)))



# --- argmax / argmin: the first index of the extreme value (strict compare, as TFLite's ArgMinMax) -----------

def _arg_kernel(name: str):
    @lower_kernel(name)
    def _lower(ctx, builder, node, args):
        from ...ops.data_movement import arg_reduce_axis
        (x,) = args
        a = node.attrs
        axis = arg_reduce_axis(name, len(x.shape), a)
        dt = x.dtype
        ty = llvm_type(dt)
        best = alloca_once(builder, ty, name="best")
        best_i = alloca_once(builder, I64, name="best_i")
        op = ">" if name == "argmax" else "<"
        if a.select_last_index:
            op += "="
        with out_loops(ctx, builder, node.checked_type.shape) as oidx:
            rest = [ix for i, ix in enumerate(oidx) if not (a.keepdims and i == axis)]

            def at(k):
                return rest[:axis] + [k] + rest[axis:]
            zero = ir.Constant(I64, 0)
            builder.store(x.load(builder, at(zero)), best)
            builder.store(zero, best_i)
            with for_range(builder, 1, x.shape[axis], name="k") as k:
                v = x.load(builder, at(k.index))
                cur = builder.load(best)
                if is_float(dt):
                    better = builder.fcmp_ordered(op, v, cur)
                elif is_signed(dt):
                    better = builder.icmp_signed(op, v, cur)
                else:
                    better = builder.icmp_unsigned(op, v, cur)
                builder.store(builder.select(better, v, cur), best)
                builder.store(builder.select(better, k.index, builder.load(best_i)), best_i)
            ctx.emit_output(builder, oidx, builder.trunc(builder.load(best_i), I32))
    return _lower


for _name in ("argmax", "argmin"):
    _arg_kernel(_name)
