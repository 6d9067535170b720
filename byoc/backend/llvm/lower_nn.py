"""Kernel lowerings of convolution-like and other whole-loop-nest ops (byoc/ops/nn.py, qnn.conv2d).

The generic convolution handles every layout, group count, dilation and padding; integer accumulation is a
wrapping i32 sum exactly like the reference, float accumulation is in double then rounded once (the reference
sums in float64 too). ``qnn.conv2d`` with constant int8-range weights takes the int8 dot-product fast path in
``gemm.py``.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...ops.kernels import kernel_hwio_shape
from .cgutils import F64, I32, I64, alloca_once, const_int, for_range, is_float, is_signed, llvm_type
from .lower_elemwise import emit_cast
from .lower_qnn import scalar_int
from .lowering import lower_kernel

__all__ = ["ConvGeometry", "emit_generic_conv", "emit_generic_dense", "emit_conv_transpose"]


class ConvGeometry:
    """Logical NHWC / HWIO view of a convolution whatever its layouts."""

    def __init__(self, data_shape, weight_shape, out_shape, attrs):
        self.attrs = attrs
        self.data_layout = attrs.data_layout
        self.kernel_layout = attrs.kernel_layout
        self.out_layout = attrs.out_layout or attrs.data_layout
        d = dict(zip(self.data_layout, data_shape))
        self.n, self.h, self.w, self.c = d["N"], d["H"], d["W"], d["C"]
        self.kh, self.kw, self.cig, self.cout = kernel_hwio_shape(weight_shape, self.kernel_layout, attrs.groups,
                                                                  self.c)
        o = dict(zip(self.out_layout, out_shape))
        self.oh, self.ow = o["H"], o["W"]
        self.groups = attrs.groups
        self.cog = self.cout // self.groups
        self.sh, self.sw = attrs.strides
        self.dh, self.dw = attrs.dilation
        self.pt, self.pl, self.pb, self.pr = attrs.padding

    def data_index(self, n, y, x, c):
        m = {"N": n, "H": y, "W": x, "C": c}
        return [m[ch] for ch in self.data_layout]

    def weight_index(self, ky, kx, ic, oc):
        m = {"H": ky, "W": kx, "I": ic, "O": oc}
        return [m[ch] for ch in self.kernel_layout]

    def out_index(self, n, y, x, c):
        m = {"N": n, "H": y, "W": x, "C": c}
        return [m[ch] for ch in self.out_layout]


def _c64(v: int) -> ir.Constant:
    return ir.Constant(I64, int(v))


def emit_generic_conv(ctx, builder: ir.IRBuilder, node, data, weight, zp_in: int, zp_w: int, acc_dtype: str,
                      result_dtype: str, attrs=None) -> None:
    """Direct convolution; each output element's accumulator goes through ``ctx.emit_output``."""
    g = ConvGeometry(data.shape, weight.shape, node.checked_type.shape, attrs or node.attrs)
    floating = is_float(acc_dtype)
    acc_ty = F64 if floating else (I64 if acc_dtype == "int64" else I32)
    acc_slot = alloca_once(builder, acc_ty, name="acc")
    in_dt, w_dt = data.dtype, weight.dtype
    with ctx.parallel(builder, g.oh, name="oy") as oy:
        with for_range(builder, 0, g.n, name="n") as n, for_range(builder, 0, g.ow, name="ox") as ox:
            with for_range(builder, 0, g.cout, name="oc") as oc:
                builder.store(ir.Constant(acc_ty, 0.0 if floating else 0), acc_slot)
                grp = builder.sdiv(oc.index, _c64(g.cog)) if g.groups > 1 else _c64(0)
                with for_range(builder, 0, g.kh, name="ky") as ky:
                    iy = builder.add(builder.mul(oy, _c64(g.sh)),
                                     builder.sub(builder.mul(ky.index, _c64(g.dh)), _c64(g.pt)))
                    y_ok = builder.and_(builder.icmp_signed(">=", iy, _c64(0)), builder.icmp_signed("<", iy, _c64(g.h)))
                    with builder.if_then(y_ok):
                        with for_range(builder, 0, g.kw, name="kx") as kx:
                            ix = builder.add(builder.mul(ox.index, _c64(g.sw)),
                                             builder.sub(builder.mul(kx.index, _c64(g.dw)), _c64(g.pl)))
                            x_ok = builder.and_(builder.icmp_signed(">=", ix, _c64(0)),
                                                builder.icmp_signed("<", ix, _c64(g.w)))
                            with builder.if_then(x_ok):
                                with for_range(builder, 0, g.cig, name="ic") as ic:
                                    c = builder.add(builder.mul(grp, _c64(g.cig)), ic.index)
                                    xv = data.load(builder, g.data_index(n.index, iy, ix, c))
                                    wv = weight.load(builder, g.weight_index(ky.index, kx.index, ic.index, oc.index))
                                    acc = builder.load(acc_slot)
                                    if floating:
                                        prod = builder.fmul(emit_cast(builder, xv, in_dt, "float64"),
                                                            emit_cast(builder, wv, w_dt, "float64"))
                                        builder.store(builder.fadd(acc, prod), acc_slot)
                                    else:
                                        xs = builder.sub(_ext32(builder, xv, in_dt), const_int(I32, zp_in))
                                        ws = builder.sub(_ext32(builder, wv, w_dt), const_int(I32, zp_w))
                                        builder.store(builder.add(acc, _widen(builder, builder.mul(xs, ws), acc_ty)),
                                                      acc_slot)
                result = emit_cast(builder, builder.load(acc_slot), "float64" if floating else acc_dtype, result_dtype)
                ctx.emit_output(builder, g.out_index(n.index, oy, ox.index, oc.index), result)


def _widen(builder, product, acc_ty):
    """An int32 product (8/16-bit operands: exact) added to an int64 accumulator is sign-extended first."""
    return builder.sext(product, acc_ty) if acc_ty == I64 else product


def _ext32(builder, v, dtype):
    if v.type.width >= 32:
        return builder.trunc(v, I32) if v.type.width > 32 else v
    return builder.sext(v, I32) if is_signed(dtype) else builder.zext(v, I32)



def _multiply_accumulate(builder, acc, xv, wv, data_dtype: str, weight_dtype: str, floating: bool, zp_in, zw) -> None:
    """``acc += x·w``: in float64 for float ops, else int32 (wrapping) on zero-point-corrected operands."""
    cur = builder.load(acc)
    if floating:
        p = builder.fmul(emit_cast(builder, xv, data_dtype, "float64"), emit_cast(builder, wv, weight_dtype, "float64"))
        builder.store(builder.fadd(cur, p), acc)
    else:
        xs = builder.sub(_ext32(builder, xv, data_dtype), const_int(I32, zp_in))
        ws = builder.sub(_ext32(builder, wv, weight_dtype), zw)
        builder.store(builder.add(cur, _widen(builder, builder.mul(xs, ws), cur.type)), acc)

def grouped_hwio_kernel(ctx, data, weight, attrs):
    """(weight, attrs), with TVM's depthwise [.., Cin, M] kernel (M > 1; ``kernels._multiplier_form``) as a
    build-time grouped HWIO copy [KH, KW, 1, Cin·M] so the kernels below index one form."""
    from dataclasses import replace
    from ...ops.kernels import kernel_hwio_shape, kernel_to_hwio
    from .kernel import ConstBuffer
    c = dict(zip(attrs.data_layout, data.shape))["C"]
    plain = kernel_hwio_shape(weight.shape, attrs.kernel_layout)
    if kernel_hwio_shape(weight.shape, attrs.kernel_layout, attrs.groups, c) == plain:
        return weight, attrs
    if not isinstance(weight, ConstBuffer):
        from ...errors import CodegenError
        raise CodegenError(f"{attrs.kernel_layout} depthwise kernel {list(weight.shape)} with a depth multiplier "
                           "must be a constant on the CPU backend", hint="bind the weights as constants")
    hwio = np.ascontiguousarray(kernel_to_hwio(np.asarray(weight.value), attrs.kernel_layout, attrs.groups, c))
    return ConstBuffer(ctx.data(hwio), hwio), replace(attrs, kernel_layout="HWIO")


@lower_kernel("nn.conv2d")
def _conv2d(ctx, builder, node, args):
    data, weight = args
    out_dtype = node.attrs.out_dtype or data.dtype
    floating = is_float(data.dtype)
    weight, attrs = grouped_hwio_kernel(ctx, data, weight, node.attrs)
    if attrs.accumulation == "mlas" and data.dtype == "float32" and out_dtype == "float32":
        from .mlas_sums import emit_mlas_conv
        return emit_mlas_conv(ctx, builder, node, data, weight, attrs)
    emit_generic_conv(ctx, builder, node, data, weight, 0, 0, "float64" if floating else "int32", out_dtype,
                      attrs)


def _conv_absorbs_pad(node, pad) -> bool:
    """qnn.conv2d reads through an nn.pad of its data that pads only H and W with the input zero point: the
    padded taps then contribute (zp − zp)·w = 0, exactly as the convolution's own padding does."""
    from ...ir.expr import Constant
    layout = node.attrs.data_layout
    pw = pad.attrs.pad_width
    if getattr(pad.attrs, "pad_mode", "constant") != "constant" or len(pw) != 4 or len(layout) != 4:
        return False
    if any(tuple(pw[layout.index(ax)]) != (0, 0) for ax in "NC") or any(v < 0 for p in pw for v in p):
        return False
    value, zp = pad.args[1], node.args[2]
    if not (isinstance(value, Constant) and isinstance(zp, Constant)) or value.data.size != 1:
        return False
    return len(node.attrs.padding) == 4 and int(np.asarray(value.data).reshape(-1)[0]) == scalar_int(zp.data)


def conv_attrs_with_pad(attrs, data):
    """The convolution's attributes with an absorbed pad's widths added to its padding."""
    from dataclasses import replace
    from .kernel import PaddedInput
    if not isinstance(data, PaddedInput):
        return attrs
    layout = attrs.data_layout
    (ht, hb), (wl, wr) = data.pad_width[layout.index("H")], data.pad_width[layout.index("W")]
    t, l, b, r = attrs.padding
    return replace(attrs, padding=(t + ht, l + wl, b + hb, r + wr))


@lower_kernel("qnn.conv2d", const_args=(2, 3, 4, 5), absorbs_pad=_conv_absorbs_pad)
def _qnn_conv2d(ctx, builder, node, args):
    data, weight, zp_in, zp_w, _s_in, _s_w = args
    from .gemm import try_emit_qnn_conv_fast
    weight, attrs = grouped_hwio_kernel(ctx, data, weight, conv_attrs_with_pad(node.attrs, data))
    zpw = np.asarray(zp_w).reshape(-1)
    if try_emit_qnn_conv_fast(ctx, builder, node, data, weight, scalar_int(zp_in), zpw, attrs):
        return
    if zpw.size > 1 and np.any(zpw != zpw[0]):
        emit_per_channel_zp_conv(ctx, builder, node, data, weight, scalar_int(zp_in), zpw, attrs)
        return
    out_dtype = node.attrs.out_dtype or "int32"
    emit_generic_conv(ctx, builder, node, data, weight, scalar_int(zp_in), int(zpw[0]), _int_acc(out_dtype),
                      out_dtype, attrs)


def _int_acc(out_dtype: str) -> str:
    """The accumulator of a quantized conv/dense: int64 when that is the op's result (LiteRT's 16x8 kernels),
    else a wrapping int32."""
    return "int64" if out_dtype == "int64" else "int32"


def emit_per_channel_zp_conv(ctx, builder, node, data, weight, zp_in, zpw, attrs=None):
    """Per-output-channel kernel zero points: fold them into a host-side int32 weight copy (w − zp_w[oc])."""
    from .kernel import ConstBuffer
    layout = (attrs or node.attrs).kernel_layout
    axis = layout.index("O")
    shape = [1] * 4
    shape[axis] = zpw.size
    if not isinstance(weight, ConstBuffer):
        from ...errors import CodegenError
        raise CodegenError("qnn.conv2d: per-channel kernel zero points need a constant weight on the CPU backend")
    w32 = (weight.value.astype(np.int64) - zpw.reshape(shape)).astype(np.int32)
    wbuf = ctx.data(w32)
    out_dtype = node.attrs.out_dtype or "int32"
    emit_generic_conv(ctx, builder, node, data, wbuf, zp_in, 0, _int_acc(out_dtype), out_dtype, attrs)


@lower_kernel("nn.batch_norm", epilogue=False)
def _batch_norm(ctx, builder, node, args):
    x, gamma, beta, mean, var = args
    a = node.attrs
    dt = x.dtype
    ty = llvm_type(dt)
    axis = a.axis if a.axis >= 0 else a.axis + len(x.shape)
    eps = ir.Constant(ty, float(np.dtype(dt).type(a.epsilon)))
    c = x.shape[axis]
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    with ctx.parallel(builder, max(c, 1), name="c") as ch:
        sd = call_sqrt(builder, builder.fadd(var.load(builder, [ch]), eps))
        scale = builder.fdiv(ir.Constant(ty, 1.0), sd)
        if a.scale:
            scale = builder.fmul(scale, gamma.load(builder, [ch]))
        shift = builder.fmul(builder.fneg(mean.load(builder, [ch])), scale)
        if a.center:
            shift = builder.fadd(shift, beta.load(builder, [ch]))
        with for_range(builder, 0, outer, name="o") as o, for_range(builder, 0, inner, name="i") as i:
            off = builder.add(builder.mul(builder.add(builder.mul(o.index, _c64(c)), ch), _c64(inner)), i.index)
            y = builder.fadd(builder.fmul(x.load_at(builder, off), scale), shift)
            ctx.output_buffer(0).store_at(builder, off, y)
        ctx.output_buffer(1).store_at(builder, ch, mean.load(builder, [ch]))
        ctx.output_buffer(2).store_at(builder, ch, var.load(builder, [ch]))


def call_sqrt(builder, v):
    from .lower_elemwise import call_intrinsic
    return call_intrinsic(builder, "sqrt", [v])





# --- dense -------------------------------------------------------------------------------------------------------

def emit_generic_dense(ctx, builder, node, data, weight, zp_in: int, zp_w: np.ndarray, floating: bool,
                       out_dtype: str, acc_dtype: str = "int32") -> None:
    from .lower_elemwise import channel_value
    from .lower_reduce import out_loops
    out_shape = node.checked_type.shape
    K = data.shape[-1]
    acc_ty = F64 if floating else (I64 if acc_dtype == "int64" else I32)
    acc = alloca_once(builder, acc_ty, name="acc")
    with out_loops(ctx, builder, out_shape) as oidx:
        unit = oidx[-1]
        builder.store(ir.Constant(acc_ty, 0.0 if floating else 0), acc)
        zw = None
        if not floating:
            from .kernel import ElementContext
            ectx = ElementContext(ctx.kernel, oidx, node.checked_type)
            zw = channel_value(ectx, builder, np.asarray(zp_w, np.int64).astype(np.int32), "int32",
                               len(out_shape) - 1)
        with for_range(builder, 0, K, name="k") as k:
            xv = data.load(builder, list(oidx[:-1]) + [k.index])
            wv = weight.load(builder, [unit, k.index])
            _multiply_accumulate(builder, acc, xv, wv, data.dtype, weight.dtype, floating, zp_in, zw)
        res = emit_cast(builder, builder.load(acc), "float64" if floating else acc_dtype, out_dtype)
        ctx.emit_output(builder, oidx, res)


@lower_kernel("nn.dense")
def _dense(ctx, builder, node, args):
    data, weight = args
    if node.attrs.accumulation == "mlas" and data.dtype == "float32" and (node.attrs.out_dtype or "float32") == "float32":
        from .mlas_sums import emit_mlas_dense
        return emit_mlas_dense(ctx, builder, node, data, weight)
    emit_generic_dense(ctx, builder, node, data, weight, 0, np.zeros(1, np.int64), is_float(data.dtype),
                       node.attrs.out_dtype or data.dtype)


@lower_kernel("nn.mlas_gemm")
def _mlas_gemm(ctx, builder, node, args):
    from .mlas_sums import emit_mlas_gemm
    data, weight, bias = args
    emit_mlas_gemm(ctx, builder, node, data, weight, bias)


@lower_kernel("qnn.dense", const_args=(2, 3, 4, 5))
def _qnn_dense(ctx, builder, node, args):
    data, weight, zp_in, zp_w = args[:4]
    from .gemm import try_emit_qnn_dense_fast
    if try_emit_qnn_dense_fast(ctx, builder, node, data, weight, scalar_int(zp_in), np.asarray(zp_w).reshape(-1)):
        return
    out_dtype = node.attrs.out_dtype or "int32"
    emit_generic_dense(ctx, builder, node, data, weight, scalar_int(zp_in), np.asarray(zp_w).reshape(-1), False,
                       out_dtype, _int_acc(out_dtype))


# --- conv2d_transpose ----------------------------------------------------------------------------------------

def emit_conv_transpose(ctx, builder, node, data, weight, zp_in: int, zp_w: np.ndarray, floating: bool,
                        out_dtype: str) -> None:
    from .lower_elemwise import channel_value
    a = node.attrs
    perm = tuple(a.kernel_layout.index(c) for c in "HWIO")
    kh, kw, _, cog = (weight.shape[i] for i in perm)
    d = dict(zip(a.data_layout, data.shape))
    N, H, W, C = d["N"], d["H"], d["W"], d["C"]
    out_layout = a.out_layout or a.data_layout
    o = dict(zip(out_layout, node.checked_type.shape))
    OH, OW, CO = o["H"], o["W"], o["C"]
    g = a.groups
    cig = C // g
    (sh, sw), (dh, dw) = a.strides, a.dilation
    t, l, _, _ = a.padding
    wide = not floating and out_dtype == "int64"   # 16x8: an exact int64 accumulator
    acc_ty = F64 if floating else (I64 if wide else I32)
    acc = alloca_once(builder, acc_ty, name="acc")
    c64 = lambda v: ir.Constant(I64, int(v))  # noqa: E731

    def widx(ky, kx, ic, oc):
        m = {"H": ky, "W": kx, "I": ic, "O": oc}
        return [m[ch] for ch in a.kernel_layout]

    def didx(n, y, x, c):
        m = {"N": n, "H": y, "W": x, "C": c}
        return [m[ch] for ch in a.data_layout]

    def oidx(n, y, x, c):
        m = {"N": n, "H": y, "W": x, "C": c}
        return [m[ch] for ch in out_layout]

    zp_w = np.asarray(zp_w, np.int64).reshape(-1)
    with ctx.parallel(builder, OH, name="oy") as oy:
        with for_range(builder, 0, N, name="n") as n, for_range(builder, 0, OW, name="ox") as ox, \
                for_range(builder, 0, CO, name="oc") as oc:
            builder.store(ir.Constant(acc_ty, 0.0 if floating else 0), acc)
            grp = builder.sdiv(oc.index, c64(cog))
            o_in = builder.srem(oc.index, c64(cog))
            zw = None
            if not floating:
                from .kernel import ElementContext
                zw = channel_value(ElementContext(ctx.kernel, [o_in], node.checked_type), builder,
                                   zp_w.astype(np.int32), "int32", 0)
            with for_range(builder, 0, kh, name="ky") as ky, for_range(builder, 0, kw, name="kx") as kx:
                ty = builder.sub(builder.add(oy, c64(t)), builder.mul(ky.index, c64(dh)))
                tx = builder.sub(builder.add(ox.index, c64(l)), builder.mul(kx.index, c64(dw)))
                iy = builder.sdiv(ty, c64(sh))
                ix = builder.sdiv(tx, c64(sw))
                ok = builder.and_(builder.icmp_signed(">=", ty, c64(0)), builder.icmp_signed(">=", tx, c64(0)))
                ok = builder.and_(ok, builder.icmp_signed("==", builder.srem(ty, c64(sh)), c64(0)))
                ok = builder.and_(ok, builder.icmp_signed("==", builder.srem(tx, c64(sw)), c64(0)))
                ok = builder.and_(ok, builder.and_(builder.icmp_signed("<", iy, c64(H)),
                                                   builder.icmp_signed("<", ix, c64(W))))
                with builder.if_then(ok):
                    with for_range(builder, 0, cig, name="ic") as ic:
                        c = builder.add(builder.mul(grp, c64(cig)), ic.index)
                        xv = data.load(builder, didx(n.index, iy, ix, c))
                        wv = weight.load(builder, widx(ky.index, kx.index, c, o_in))
                        _multiply_accumulate(builder, acc, xv, wv, data.dtype, weight.dtype, floating, zp_in, zw)
            res = emit_cast(builder, builder.load(acc), "float64" if floating else ("int64" if wide else "int32"),
                            out_dtype)
            ctx.emit_output(builder, oidx(n.index, oy, ox.index, oc.index), res)


@lower_kernel("nn.conv2d_transpose")
def _conv2d_transpose(ctx, builder, node, args):
    data, weight = args
    if node.attrs.accumulation == "mlas" and data.dtype == "float32" and \
            (node.attrs.out_dtype or "float32") == "float32":
        from .mlas_sums import emit_mlas_conv_transpose
        return emit_mlas_conv_transpose(ctx, builder, node, data, weight)
    emit_conv_transpose(ctx, builder, node, data, weight, 0, np.zeros(1), is_float(data.dtype),
                        node.attrs.out_dtype or data.dtype)


@lower_kernel("qnn.conv2d_transpose", const_args=(2, 3, 4, 5))
def _qnn_conv2d_transpose(ctx, builder, node, args):
    data, weight, zp_in, zp_w = args[:4]
    emit_conv_transpose(ctx, builder, node, data, weight, scalar_int(zp_in), zp_w, False,
                        node.attrs.out_dtype or "int32")


# --- batch_matmul ------------------------------------------------------------------------------------------------

def emit_batch_matmul(ctx, builder, node, a, b, zp_a: int, zp_b: int, out_dtype: str) -> None:
    """out[n, i, j] = Σₖ a·b with k ascending: in the operands' float type (each product and sum rounded, as
    LiteRT's reference kernel and the numpy reference), or wrapping int32 on zero-point-corrected integers."""
    from .lower_reduce import out_loops
    at = node.attrs
    out_shape = node.checked_type.shape
    K = a.shape[1] if at.transpose_a else a.shape[2]
    floating = is_float(a.dtype)
    wide = out_dtype == "int64" and not floating   # LiteRT's int16 BATCH_MATMUL: an int64 accumulator
    acc_ty = llvm_type(a.dtype) if floating else (I64 if wide else I32)
    acc = alloca_once(builder, acc_ty, name="acc")
    zero = _c64(0)
    with out_loops(ctx, builder, out_shape) as oidx:
        n, i, j = oidx
        na = n if a.shape[0] > 1 else zero  # a batch of 1 broadcasts
        nb = n if b.shape[0] > 1 else zero
        builder.store(ir.Constant(acc_ty, 0.0 if floating else 0), acc)
        with for_range(builder, 0, K, name="k") as k:
            av = a.load(builder, [na, k.index, i] if at.transpose_a else [na, i, k.index])
            bv = b.load(builder, [nb, j, k.index] if at.transpose_b else [nb, k.index, j])
            cur = builder.load(acc)
            if floating:
                builder.store(builder.fadd(cur, builder.fmul(av, bv)), acc)
            else:
                xs = builder.sub(_ext32(builder, av, a.dtype), const_int(I32, zp_a))
                ys = builder.sub(_ext32(builder, bv, b.dtype), const_int(I32, zp_b))
                if wide:
                    xs, ys = builder.sext(xs, I64), builder.sext(ys, I64)
                builder.store(builder.add(cur, builder.mul(xs, ys)), acc)
        res = emit_cast(builder, builder.load(acc), a.dtype if floating else ("int64" if wide else "int32"), out_dtype)
        ctx.emit_output(builder, oidx, res)


@lower_kernel("nn.batch_matmul")
def _batch_matmul(ctx, builder, node, args):
    a, b = args
    if node.attrs.accumulation == "mlas" and a.dtype == "float32" and (node.attrs.out_dtype or "float32") == "float32":
        from .mlas_sums import emit_mlas_batch_matmul
        return emit_mlas_batch_matmul(ctx, builder, node, a, b)
    emit_batch_matmul(ctx, builder, node, a, b, 0, 0, node.attrs.out_dtype or a.dtype)


@lower_kernel("qnn.batch_matmul", const_args=(2, 3, 4, 5))
def _qnn_batch_matmul(ctx, builder, node, args):
    a, b, zp_a, zp_b = args[:4]
    emit_batch_matmul(ctx, builder, node, a, b, scalar_int(zp_a), scalar_int(zp_b), node.attrs.out_dtype or "int32")
