"""Element lowerings of data-movement (INJECTIVE) ops: each maps an output index to the input element it reads,
so pads, reshapes, transposes and slices fuse into their consumers' loop nests."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from .cgutils import I64
from .lower_elemwise import emit_cast
from .lowering import lower_element, lower_kernel

__all__ = ["linear_index", "unravel_index"]


def linear_index(builder: ir.IRBuilder, index, shape) -> ir.Value:
    """Row-major offset of ``index`` in ``shape``."""
    off = ir.Constant(I64, 0)
    for ix, d in zip(index, shape):
        off = builder.add(builder.mul(off, ir.Constant(I64, d)), ix)
    return off


def unravel_index(builder: ir.IRBuilder, offset: ir.Value, shape) -> list:
    out = []
    for d in reversed(shape):
        if d == 1:
            out.append(ir.Constant(I64, 0))
            continue
        out.append(builder.urem(offset, ir.Constant(I64, d)))
        offset = builder.udiv(offset, ir.Constant(I64, d))
    return list(reversed(out))


def _pad_index(ctx, builder, node, out_index):
    in_shape = arg_shape(node, 0)
    idx = []
    for ix, (before, after), d in zip(out_index, node.attrs.pad_width, in_shape):
        if before == 0 and after == 0:
            idx.append(ix)
            continue
        v = builder.sub(ix, ir.Constant(I64, before))
        # Clamp into the input so the (discarded) load of a padding element stays in bounds.
        v = builder.select(builder.icmp_signed("<", v, ir.Constant(I64, 0)), ir.Constant(I64, 0), v)
        v = builder.select(builder.icmp_signed(">", v, ir.Constant(I64, d - 1)), ir.Constant(I64, d - 1), v)
        idx.append(v)
    return [idx, []]


def arg_shape(node, i):
    return node.args[i].checked_type.shape


@lower_element("nn.pad", index_map=_pad_index)
def _pad(ctx, builder, node, args):
    x, pad_value = args
    pad_value = emit_cast(builder, pad_value, ctx.arg_types[1].dtype, ctx.arg_types[0].dtype)
    inside = None
    for ix, (before, after), d in zip(ctx.index, node.attrs.pad_width, arg_shape(node, 0)):
        if before == 0 and after == 0:
            continue
        v = builder.sub(ix, ir.Constant(I64, before))
        ok = builder.and_(builder.icmp_signed(">=", v, ir.Constant(I64, 0)),
                          builder.icmp_signed("<", v, ir.Constant(I64, d)))
        inside = ok if inside is None else builder.and_(inside, ok)
    if inside is None:
        return x
    return builder.select(inside, x, pad_value)


# --- reshape family: same elements in the same row-major order ------------------------------------------------

def _reshape_index(ctx, builder, node, out_index):
    in_shape = arg_shape(node, 0)
    out_shape = ctx.out_type.shape
    if tuple(d for d in in_shape if d != 1) == tuple(d for d in out_shape if d != 1):
        # Only size-1 axes differ: map the non-trivial axes one to one (no division needed).
        src = [ix for ix, d in zip(out_index, out_shape) if d != 1]
        it = iter(src)
        return [[next(it) if d != 1 else ir.Constant(I64, 0) for d in in_shape]]
    return [unravel_index(builder, linear_index(builder, out_index, out_shape), in_shape)]


def _identity(ctx, builder, node, args):
    return args[0]


for _op in ("reshape", "squeeze", "expand_dims", "nn.batch_flatten"):
    lower_element(_op, index_map=_reshape_index)(_identity)
for _op in ("annotation.compiler_begin", "annotation.compiler_end"):
    lower_element(_op)(_identity)


def _transpose_index(ctx, builder, node, out_index):
    from ...ops.transform_ops import _perm
    ndim = len(out_index)
    perm = _perm(ndim, node.attrs.axes)
    idx = [None] * ndim
    for i, p in enumerate(perm):
        idx[p] = out_index[i]
    return [idx]


lower_element("transpose", index_map=_transpose_index)(_identity)


def _strided_slice_index(ctx, builder, node, out_index):
    from ...ops.transform_ops import strided_slice_indices
    in_shape = arg_shape(node, 0)
    idx = []
    for ix, sl, d in zip(out_index, strided_slice_indices(in_shape, node.attrs), in_shape):
        start, _, step = sl.indices(d)
        v = ix if step == 1 else builder.mul(ix, ir.Constant(I64, step))
        idx.append(v if start == 0 else builder.add(v, ir.Constant(I64, start)))
    return [idx]


lower_element("strided_slice", index_map=_strided_slice_index)(_identity)


def _resize_index(ctx, builder, node, out_index):
    from ...ops.image import nearest_indices
    a = node.attrs
    in_shape = arg_shape(node, 0)
    hpos, wpos = a.layout.index("H"), a.layout.index("W")
    idx = list(out_index)
    for pos, size in ((hpos, a.size[0]), (wpos, a.size[1])):
        table = nearest_indices(size, in_shape[pos], a.coordinate_transformation_mode, a.rounding_method)
        idx[pos] = ctx.kernel.data(table.astype("int64")).load(builder, [out_index[pos]])
    return [idx]


@lower_element("image.resize2d", index_map=_resize_index)
def _resize(ctx, builder, node, args):
    return emit_cast(builder, args[0], ctx.arg_types[0].dtype, ctx.out_type.dtype)


# --- depth_to_space / space_to_depth (NHWC): pure index arithmetic -------------------------------------------

def _depth_to_space_index(ctx, builder, node, out_index):
    bs = int(node.attrs.block_size)
    co = ctx.out_type.shape[3]
    n, y, x, c = out_index
    c_bs = ir.Constant(I64, bs)
    by, bx = builder.urem(y, c_bs), builder.urem(x, c_bs)
    block = builder.add(builder.mul(by, c_bs), bx)
    ic = builder.add(builder.mul(block, ir.Constant(I64, co)), c)
    return [[n, builder.udiv(y, c_bs), builder.udiv(x, c_bs), ic]]


def _space_to_depth_index(ctx, builder, node, out_index):
    bs = int(node.attrs.block_size)
    cin = arg_shape(node, 0)[3]
    n, oy, ox, oc = out_index
    c_bs, c_in = ir.Constant(I64, bs), ir.Constant(I64, cin)
    block = builder.udiv(oc, c_in)
    by, bx = builder.udiv(block, c_bs), builder.urem(block, c_bs)
    return [[n, builder.add(builder.mul(oy, c_bs), by), builder.add(builder.mul(ox, c_bs), bx),
             builder.urem(oc, c_in)]]


lower_element("nn.depth_to_space", index_map=_depth_to_space_index)(_identity)
lower_element("nn.space_to_depth", index_map=_space_to_depth_index)(_identity)


# --- take: the position is data, so it is a kernel (an index_map cannot read an operand) ---------------------

def _take_emit(ctx, builder, node, args):
    from .kernel import ERROR_MESSAGES
    from .lower_reduce import out_loops
    ERROR_MESSAGES.setdefault(ERROR_TAKE_RANGE, "take: an index is out of range")
    x, indices = args
    a = node.attrs
    axis = a.axis + len(x.shape) if a.axis < 0 else a.axis
    ind_shape = node.args[1].checked_type.shape
    bd = a.batch_dims + len(ind_shape) if a.batch_dims < 0 else a.batch_dims
    k = len(ind_shape) - bd
    if not hasattr(indices, "load"):  # a constant: pass it as a host table
        indices = ctx.data(np.ascontiguousarray(np.asarray(indices)))
    size = x.shape[axis]
    with out_loops(ctx, builder, node.checked_type.shape) as oidx:
        iidx = list(oidx[:bd]) + list(oidx[axis:axis + k])
        pos = indices.load(builder, iidx)
        pos = builder.sext(pos, I64) if pos.type.width < 64 else pos
        if a.mode == "clip":
            pos = builder.select(builder.icmp_signed("<", pos, ir.Constant(I64, 0)), ir.Constant(I64, 0), pos)
            pos = builder.select(builder.icmp_signed(">", pos, ir.Constant(I64, size - 1)),
                                 ir.Constant(I64, size - 1), pos)
        elif a.mode == "wrap":
            r = builder.srem(pos, ir.Constant(I64, size))
            pos = builder.select(builder.icmp_signed("<", r, ir.Constant(I64, 0)),
                                 builder.add(r, ir.Constant(I64, size)), r)
        else:
            bad = builder.or_(builder.icmp_signed("<", pos, ir.Constant(I64, 0)),
                              builder.icmp_signed(">=", pos, ir.Constant(I64, size)))
            ctx.kernel.fail_if(builder, bad, ERROR_TAKE_RANGE)
        didx = list(oidx[:axis]) + [pos] + list(oidx[axis + k:])
        ctx.emit_output(builder, oidx, x.load(builder, didx))


ERROR_TAKE_RANGE = 3
lower_kernel("take")(_take_emit)


# --- broadcast_to: the default index map is numpy broadcasting -----------------------------------------------
lower_element("broadcast_to")(_identity)
