"""Bilinear ``image.resize2d``: a kernel lowering chosen per call (``when=method == "linear"``).

Nearest-neighbour resizing stays an element lowering (lower_injective.py: one input element per output element,
so it fuses into its consumers' loop nests). A bilinear output element reads four input elements, which an
element lowering cannot express, so those calls get this whole-loop-nest kernel instead; consumers still fuse
as its epilogue. The per-axis taps and weights are host tables computed by the same functions as the numpy
reference (byoc/ops/image.py), and the arithmetic below repeats the reference's in the same order.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...ops.image import linear_float_taps, linear_int_taps, linear_ort_taps
from .cgutils import F32, I32, I64, for_range, llvm_type
from .lowering import lower_kernel

__all__ = []


def _is_linear(call) -> bool:
    return call.attrs.method == "linear"


def _axis_tables(ctx, out_size: int, in_size: int, mode: str, integer: bool):
    """Buffers (lower tap, upper tap, weight of the upper tap) over one output axis."""
    if integer:
        s, lo, hi = linear_int_taps(out_size, in_size, mode)
        weight = (s - 1024 * lo).astype(np.int64)  # the upper tap's 10-bit weight
    else:
        s, lo, hi = linear_float_taps(out_size, in_size, mode)
        weight = (s - lo.astype(np.float32)).astype(np.float32)
    return ctx.data(lo.astype(np.int64)), ctx.data(hi.astype(np.int64)), ctx.data(weight)


@lower_kernel("image.resize2d", when=_is_linear)
def _resize_linear(ctx, builder, node, args):
    (x,) = args
    a = node.attrs
    mode = a.coordinate_transformation_mode
    layout = a.layout
    hpos, wpos = layout.index("H"), layout.index("W")
    out_shape = node.checked_type.shape
    dt = x.dtype
    ort = a.arithmetic == "onnxruntime"
    integer = dt in ("int8", "int16") and not ort
    if ort:  # weights (d1 of the upper tap, d2 of the lower) packed as one (out, 2) table per axis
        ylo, yhi, ywt = _ort_axis_tables(ctx, a.size[0], x.shape[hpos], mode)
        xlo, xhi, xwt = _ort_axis_tables(ctx, a.size[1], x.shape[wpos], mode)
    else:
        ylo, yhi, ywt = _axis_tables(ctx, a.size[0], x.shape[hpos], mode, integer)
        xlo, xhi, xwt = _axis_tables(ctx, a.size[1], x.shape[wpos], mode, integer)
    # Loops: output rows (parallel) → batch → W and C in layout order; a row's taps are loaded once per row, a
    # column's once per column, so the innermost loop (C in NHWC) only loads, blends and stores.
    inner = [ax for ax in layout if ax in "WC"]
    def weight(table, i):
        if not ort:
            return table.load(builder, [i])
        return (table.load(builder, [i, ir.Constant(I64, 0)]), table.load(builder, [i, ir.Constant(I64, 1)]))

    with ctx.parallel(builder, out_shape[hpos], name="oy") as oy:
        y0, y1, wy = ylo.load(builder, [oy]), yhi.load(builder, [oy]), weight(ywt, oy)
        with for_range(builder, 0, out_shape[layout.index("N")], name="n") as n:
            idx = {"N": n.index, "H": oy}
            with for_range(builder, 0, out_shape[layout.index(inner[0])], name=inner[0].lower()) as l0:
                idx[inner[0]] = l0.index
                cols = {}
                if inner[0] == "W":
                    cols["x"] = (xlo.load(builder, [l0.index]), xhi.load(builder, [l0.index]),
                                 weight(xwt, l0.index))
                with for_range(builder, 0, out_shape[layout.index(inner[1])], name=inner[1].lower()) as l1:
                    idx[inner[1]] = l1.index
                    ox = idx["W"]
                    x0, x1, wx = cols.get("x") or (xlo.load(builder, [ox]), xhi.load(builder, [ox]),
                                                   weight(xwt, ox))
                    oidx = [idx[ax] for ax in layout]

                    def tap(yy, xx):
                        i = list(oidx)
                        i[hpos], i[wpos] = yy, xx
                        return x.load(builder, i)

                    taps = [tap(y0, x0), tap(y1, x0), tap(y0, x1), tap(y1, x1)]
                    if ort:
                        value = _ort_blend(builder, taps, wy, wx, dt)
                    elif integer:
                        value = _integer_blend(builder, taps, wy, wx, llvm_type(dt))
                    else:
                        value = _float_blend(builder, taps, wy, wx, dt)
                    ctx.emit_output(builder, oidx, value)


def _ort_axis_tables(ctx, out_size: int, in_size: int, mode: str):
    lo, hi, d1, d2 = linear_ort_taps(out_size, in_size, mode)
    return (ctx.data(lo.astype(np.int64)), ctx.data(hi.astype(np.int64)),
            ctx.data(np.ascontiguousarray(np.stack([d1, d2], axis=1).astype(np.float32))))


def _ort_blend(builder, taps, wy, wx, dtype: str):
    """onnxruntime's Upsample: (dx2·dy2)·v00 + (dx1·dy2)·v01 + (dx2·dy1)·v10 + (dx1·dy1)·v11, left to right in
    float32; 8-bit values are converted to float32 first and the result truncated (a convex blend: in range)."""
    if dtype != "float32":
        conv = builder.uitofp if dtype == "uint8" else builder.sitofp
        taps = [conv(v, F32) for v in taps]
    v00, v10, v01, v11 = taps
    (dy1, dy2), (dx1, dx2) = wy, wx
    acc = builder.fmul(builder.fmul(dx2, dy2), v00)
    acc = builder.fadd(acc, builder.fmul(builder.fmul(dx1, dy2), v01))
    acc = builder.fadd(acc, builder.fmul(builder.fmul(dx2, dy1), v10))
    acc = builder.fadd(acc, builder.fmul(builder.fmul(dx1, dy1), v11))
    if dtype == "float32":
        return acc
    return builder.trunc(builder.fptosi(acc, I32), llvm_type(dtype))


def _float_blend(builder, taps, dy, dx, dtype: str):
    """v00·(1−dy)·(1−dx) + v10·dy·(1−dx) + v01·(1−dy)·dx + v11·dy·dx in float32, left to right; uint8 adds 0.5
    and truncates (LiteRT's float kernel)."""
    if dtype == "uint8":
        taps = [builder.uitofp(v, F32) for v in taps]
    v00, v10, v01, v11 = taps
    one = ir.Constant(F32, 1.0)
    ey, ex = builder.fsub(one, dy), builder.fsub(one, dx)
    acc = builder.fmul(builder.fmul(v00, ey), ex)
    acc = builder.fadd(acc, builder.fmul(builder.fmul(v10, dy), ex))
    acc = builder.fadd(acc, builder.fmul(builder.fmul(v01, ey), dx))
    acc = builder.fadd(acc, builder.fmul(builder.fmul(v11, dy), dx))
    if dtype == "float32":
        return acc
    shifted = builder.fadd(acc, ir.Constant(F32, 0.5))  # ≥ 0 and < 256 for uint8 taps: truncation is exact
    return builder.trunc(builder.fptosi(shifted, I32), llvm_type(dtype))


def _integer_blend(builder, taps, wy, wx, out_ty):
    """ResizeBilinearInteger: the sum of the taps times their 10-bit weights, divided by 2^20 rounding half away
    from zero (C's truncating division of a sum offset by ±2^19), wrapped to the dtype. int8 sums in i32: every
    true sum is below 2^31 in magnitude, and wrapping products and sums are exact modulo 2^32 on the way."""
    acc_ty = I32 if out_ty.width == 8 else I64
    v00, v10, v01, v11 = (builder.sext(v, acc_ty) for v in taps)
    if acc_ty is I32:
        wy, wx = builder.trunc(wy, I32), builder.trunc(wx, I32)
    c1024 = ir.Constant(acc_ty, 1024)
    ey, ex = builder.sub(c1024, wy), builder.sub(c1024, wx)
    acc = builder.mul(builder.mul(v00, ey), ex)
    acc = builder.add(acc, builder.mul(builder.mul(v10, wy), ex))
    acc = builder.add(acc, builder.mul(builder.mul(v01, ey), wx))
    acc = builder.add(acc, builder.mul(builder.mul(v11, wy), wx))
    half = builder.select(builder.icmp_signed(">", acc, ir.Constant(acc_ty, 0)), ir.Constant(acc_ty, 1 << 19),
                          ir.Constant(acc_ty, -(1 << 19)))
    q = builder.sdiv(builder.add(acc, half), ir.Constant(acc_ty, 1 << 20))
    return builder.trunc(q, out_ty)
