"""TFLite converters for comparisons and selection: EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL,
SELECT_V2.

* Comparisons: float32/int32/int64 (and bool for EQUAL/NOT_EQUAL) → ``equal`` ...; int8/uint8 → ``qnn.equal`` ...
  (LiteRT rescales both operands by their own scales; scales ≥ 1 are refused, see ``comparison_params``).
* SELECT_V2 → ``where`` on the raw values.
"""
from __future__ import annotations


from ..errors import ByocError
from ..ir.expr import Expr
from ..quant.params import comparison_params
from .tflite_context import OpContext, converter


@converter("SELECT_V2", quant=("where",), float=("where",))
def convert_select_v2(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(3)
    c_t, x_t, y_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.tensor(2), ctx.out_tensor()
    if c_t.dtype != "bool":
        raise ctx.fail(f"condition {c_t.label} is {c_t.dtype}; SELECT_V2 needs a bool condition")
    ctx.same_dtype(x_t, y_t, out_t)
    return [ctx.call("where", [ctx.input(0), ctx.input(1), ctx.input(2)])]


# ------------------------------------------------------------------------------------------------ comparisons
_COMPARISONS = {"EQUAL": "equal", "NOT_EQUAL": "not_equal", "LESS": "less", "LESS_EQUAL": "less_equal",
                "GREATER": "greater", "GREATER_EQUAL": "greater_equal"}


def _compare(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    op = _COMPARISONS[ctx.op.opcode]
    a_t, b_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    dtype = ctx.same_dtype(a_t, b_t)
    if out_t.dtype != "bool":
        raise ctx.fail(f"output {out_t.label} is {out_t.dtype}; comparisons produce bool")
    allowed = ("float32", "int32", "int64", "int8", "uint8") + (("bool",) if op in ("equal", "not_equal") else ())
    ctx.expect_dtype(a_t, allowed, ctx.op.opcode)
    if dtype not in ("int8", "uint8"):
        return [ctx.call(op, [ctx.input(0), ctx.input(1)])]
    for t, role in ((a_t, "lhs"), (b_t, "rhs")):
        try:
            comparison_params(ctx.quant(t, role)[0], "qnn." + op)
        except ByocError as e:
            raise ctx.fail(e.message, hint=e.hint) from None
    q = ctx.quant_operands((a_t, "lhs")) + ctx.quant_operands((b_t, "rhs"))
    return [ctx.call("qnn." + op, [ctx.input(0), ctx.input(1)] + q)]


for _builtin, _op in _COMPARISONS.items():
    converter(_builtin, quant=("qnn." + _op,), float=(_op,))(_compare)
