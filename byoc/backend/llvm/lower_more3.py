"""CPU lowerings of nn.mirror_pad, tile, the comparisons (plain and qnn), where, gather_nd and qnn.abs
(byoc/ops/elementwise_more2.py).

* nn.mirror_pad and tile are index maps (they fuse into their consumers): mirror_pad maps each output position
  with LiteRT's GetInputDimension, tile takes the output position modulo the input size.
* Comparisons store 0/1 bytes (bool); float comparisons are ordered except not_equal (numpy: NaN ≠ NaN).
* qnn comparisons: each operand ((q − zp)·2^8) through SRDHM and RDBPOT with its own multiplier, as LiteRT.
* where: a select on the condition byte.
* gather_nd: a kernel (its positions are data); an out-of-range index is a run-time error, as in the interpreter.
* qnn.abs: |q − zp_in| (rescaled when the scales differ) + zp_out, saturated.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from .cgutils import I32, I64, const_int, is_float, is_signed, llvm_type, mbqm, rdbpot, saturate, srdhm
from .kernel import ERROR_MESSAGES
from .lower_injective import _identity, arg_shape
from .lower_qnn import scalar_int
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


# ------------------------------------------------------------------------------------------------- comparisons
_ICMP = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}


def _as_bool(builder, pred: ir.Value) -> ir.Value:
    return builder.zext(pred, llvm_type("bool"))


def _compare(name: str):
    op = _ICMP[name]

    @lower_element(name)
    def lower(ctx, builder, node, args):
        a, b = args
        dt = ctx.arg_types[0].dtype
        if is_float(dt):
            pred = builder.fcmp_unordered(op, a, b) if name == "not_equal" else builder.fcmp_ordered(op, a, b)
        elif dt == "bool" or not is_signed(dt):
            pred = builder.icmp_unsigned(op, a, b)
        else:
            pred = builder.icmp_signed(op, a, b)
        return _as_bool(builder, pred)

    @lower_element("qnn." + name, const_args=(2, 3, 4, 5))
    def lower_q(ctx, builder, node, args):
        from ...ops.elementwise_more2 import COMPARISON_LEFT_SHIFT
        from ...quant.params import comparison_params
        a, b, sa, za, sb, zb = args
        ext = builder.sext if is_signed(ctx.arg_types[0].dtype) else builder.zext

        def scaled(v, s, zp):
            m, shift = comparison_params(s, "qnn." + name)
            v = builder.shl(builder.sub(ext(v, I32), const_int(I32, scalar_int(zp))),
                            const_int(I32, COMPARISON_LEFT_SHIFT))
            return rdbpot(builder, srdhm(builder, v, const_int(I32, m)), const_int(I32, -shift))
        return _as_bool(builder, builder.icmp_signed(op, scaled(a, sa, za), scaled(b, sb, zb)))
    return lower


for _name in _ICMP:
    _compare(_name)


@lower_element("where")
def _where(ctx, builder, node, args):
    c, x, y = args
    return builder.select(builder.icmp_unsigned("!=", c, ir.Constant(c.type, 0)), x, y)


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
