"""CPU lowerings of the index-map ops nn.mirror_pad, tile and gather_nd (byoc/ops/index_maps.py).

* nn.mirror_pad and tile are index maps (they fuse into their consumers): mirror_pad maps each output position
  with LiteRT's GetInputDimension, tile takes the output position modulo the input size.
* gather_nd: a kernel (its positions are data); an out-of-range index is a run-time error, as in the interpreter.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from .cgutils import I64
from .kernel import ERROR_MESSAGES
from .lower_injective import _identity, arg_shape
from .lowering import lower_element, lower_kernel

ERROR_GATHER_ND_RANGE = 5
ERROR_MESSAGES.setdefault(ERROR_GATHER_ND_RANGE, "gather_nd: an index is out of range")


def _c64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


# --------------------------------------------------------------------------------------------- mirror_pad, tile
def _mirror_pad_index(ctx, builder, node, out_index):
    offset = 1 if node.attrs.mode == "REFLECT" else 0
    idx = []
    for ix, (before, after), d in zip(out_index, node.attrs.pad_width, arg_shape(node, 0)):
        if before == 0 and after == 0:
            idx.append(ix)
            continue
        inner = builder.sub(ix, _c64(before))
        left = builder.sub(_c64(before + offset - 1), ix)                  # out_pos < before
        right = builder.sub(_c64(2 * d - 1 - offset), inner)  # inner ≥ d: d − 1 − off − (inner − d)
        v = builder.select(builder.icmp_signed("<", ix, _c64(before)), left,
                           builder.select(builder.icmp_signed(">=", inner, _c64(d)), right, inner))
        idx.append(v)
    return [idx]


lower_element("nn.mirror_pad", index_map=_mirror_pad_index)(_identity)


def _tile_index(ctx, builder, node, out_index):
    in_shape = arg_shape(node, 0)
    tail = out_index[len(out_index) - len(in_shape):] if in_shape else []
    return [[_c64(0) if d == 1 else builder.urem(ix, _c64(d)) for ix, d in zip(tail, in_shape)]]


lower_element("tile", index_map=_tile_index)(_identity)


# --------------------------------------------------------------------------------------------------- gather_nd
@lower_kernel("gather_nd")
def _gather_nd(ctx, builder, node, args):
    from .lower_reduce import out_loops
    data, indices = args
    if not hasattr(indices, "load"):  # a constant: pass it as a host table
        indices = ctx.data(np.ascontiguousarray(np.asarray(indices)))
    idx_shape = node.args[1].checked_type.shape
    m, y_rank = idx_shape[0], len(idx_shape) - 1
    with out_loops(ctx, builder, node.checked_type.shape) as oidx:
        pos = []
        for k in range(m):
            p = indices.load(builder, [_c64(k)] + list(oidx[:y_rank]))
            p = builder.sext(p, I64) if p.type.width < 64 else p
            bad = builder.or_(builder.icmp_signed("<", p, _c64(0)), builder.icmp_signed(">=", p, _c64(data.shape[k])))
            ctx.kernel.fail_if(builder, bad, ERROR_GATHER_ND_RANGE)
            pos.append(p)
        ctx.emit_output(builder, oidx, data.load(builder, pos + list(oidx[y_rank:])))
