"""Kernel lowerings of ops with tuple operands or results: concatenate, qnn.concatenate, split."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...ops.transform_ops import split_indices
from .cgutils import F32, I64, const_int, int_min_max, is_signed, loop_nest, saturate
from .lower_elemwise import float_max, float_min, round_half_away
from .lowering import lower_kernel

__all__ = []


def _copy_into(ctx, builder, src, axis: int, offset: int, convert=None, k: int = 0) -> None:
    with loop_nest(builder, src.shape, name="c") as idx:
        v = src.load(builder, idx)
        if convert is not None:
            v = convert(v)
        out_idx = list(idx)
        out_idx[axis] = builder.add(idx[axis], ir.Constant(I64, offset)) if offset else idx[axis]
        ctx.emit_output(builder, out_idx, v, k)


def _concat(ctx, builder, node, parts, converters):
    ndim = len(node.checked_type.shape)
    axis = node.attrs.axis if node.attrs.axis >= 0 else node.attrs.axis + ndim
    with ctx.parallel(builder, 1):
        offset = 0
        for src, conv in zip(parts, converters):
            _copy_into(ctx, builder, src, axis, offset, conv)
            offset += src.shape[axis]


@lower_kernel("concatenate")
def _concatenate(ctx, builder, node, args):
    _concat(ctx, builder, node, args[0], [None] * len(args[0]))


@lower_kernel("qnn.concatenate")
def _qnn_concatenate(ctx, builder, node, args):
    from ...quant.params import concat_params
    parts = args[0]
    scales = [f.data for f in node.args[1].fields]
    zps = [f.data for f in node.args[2].fields]
    s_out, zp_out = node.args[3].data, int(np.asarray(node.args[4].data).reshape(-1)[0])
    dt = node.checked_type.dtype
    lo, hi = int_min_max(dt)
    convs = []
    for s, zp in zip(scales, zps):
        p = concat_params(s, zp, s_out, zp_out)
        if p is None:
            convs.append(None)
            continue
        scale, bias = (ir.Constant(F32, float(v)) for v in p)

        def conv(v, scale=scale, bias=bias):
            x = (builder.sitofp if is_signed(dt) else builder.uitofp)(v, F32)
            r = round_half_away(builder, builder.fadd(builder.fmul(x, scale), bias))
            r = float_min(builder, float_max(builder, r, ir.Constant(F32, -(2.0 ** 31))), ir.Constant(F32, 2.0 ** 31 - 1))
            q = saturate(builder, builder.add(builder.fptosi(r, I64), const_int(I64, zp_out)), lo, hi)
            return builder.trunc(q, v.type)
        convs.append(conv)
    _concat(ctx, builder, node, parts, convs)


@lower_kernel("split", epilogue=False)
def _split(ctx, builder, node, args):
    (x,) = args
    ndim = len(x.shape)
    axis = node.attrs.axis if node.attrs.axis >= 0 else node.attrs.axis + ndim
    bounds = [0] + split_indices(x.shape[axis], node.attrs.indices_or_sections) + [x.shape[axis]]
    with ctx.parallel(builder, 1):
        for k, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            shape = list(x.shape)
            shape[axis] = hi - lo
            with loop_nest(builder, shape, name=f"s{k}") as idx:
                src = list(idx)
                src[axis] = builder.add(idx[axis], ir.Constant(I64, lo)) if lo else idx[axis]
                ctx.output_buffer(k).store(builder, idx, x.load(builder, src))


@lower_kernel("stack")
def _stack(ctx, builder, node, args):
    ndim = len(node.checked_type.shape)
    axis = node.attrs.axis if node.attrs.axis >= 0 else node.attrs.axis + ndim
    with ctx.parallel(builder, 1):
        for k, src in enumerate(args[0]):
            with loop_nest(builder, src.shape, name=f"k{k}") as idx:
                out_idx = list(idx[:axis]) + [ir.Constant(I64, k)] + list(idx[axis:])
                ctx.emit_output(builder, out_idx, src.load(builder, idx))
