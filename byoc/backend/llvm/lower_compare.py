"""CPU lowerings of the comparisons (plain and qnn) and where (byoc/ops/comparison.py).

* Comparisons store 0/1 bytes (bool); float comparisons are ordered except not_equal (numpy: NaN ≠ NaN).
* qnn comparisons: each operand ((q − zp)·2^8) through SRDHM and RDBPOT with its own multiplier, as LiteRT.
* where: a select on the condition byte.
"""
from __future__ import annotations

from llvmlite import ir

from .cgutils import I32, const_int, is_float, is_signed, llvm_type, rdbpot, srdhm
from .lower_qnn import scalar_int
from .lowering import lower_element


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
        from ...quant.params import COMPARISON_LEFT_SHIFT
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
