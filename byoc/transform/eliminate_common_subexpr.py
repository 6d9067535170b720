"""EliminateCommonSubexpr: merge calls that compute the same value (TVM's ``eliminate_common_subexpr.cc``).

Bottom-up hash-consing: after its operands are merged, a call of a primitive op is keyed by (op, attributes,
operand identities) and replaced by the first equal call seen in post-order. Constants are compared by
value (dtype, shape and bytes), so two equal weights loaded separately still merge the calls that read them.
``TupleGetItem`` nodes with the same tuple and index merge too. As in TVM, zero-operand calls and calls of
functions are kept, and ``fskip(call)`` returning true keeps a call out of the table. Bodies of opaque
functions (``Primitive``/``Composite``) are not touched; global ``Compiler`` functions are skipped.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, ClassVar

from ..ir.expr import Call, Constant, Expr, Function, Op, TupleGetItem
from ..ir.module import IRModule
from ..ir.traversal import children, rewrite_post_order
from .fold_constant import is_opaque_function
from .pass_infra import FunctionPass, PassContext

__all__ = ["EliminateCommonSubexpr", "eliminate_common_subexpr"]


def _outside_opaque(node: Expr) -> tuple[Expr, ...]:
    return () if is_opaque_function(node) else children(node)


def eliminate_common_subexpr(expr: Expr, fskip: Callable[[Expr], bool] | None = None) -> Expr:
    table: dict[tuple, Expr] = {}
    const_keys: dict[int, tuple] = {}

    def operand_key(e: Expr):
        if not isinstance(e, Constant):
            return id(e)
        key = const_keys.get(id(e))
        if key is None:
            d = e.data
            key = ("const", d.dtype.str, d.shape, hashlib.blake2b(d.tobytes(), digest_size=16).digest())
            const_keys[id(e)] = key
        return key

    def merge(original: Expr, new: Expr) -> Expr | None:
        if isinstance(new, Call):
            if not isinstance(new.op, Op) or not new.args or (fskip is not None and fskip(new)):
                return None
            key: tuple = ("call", new.op.name, new.attrs, tuple(operand_key(a) for a in new.args))
        elif isinstance(new, TupleGetItem):
            key = ("item", id(new.tuple_value), new.index)
        else:
            return None
        try:
            hit = table.get(key)
        except TypeError:  # an unhashable attribute value: never merged
            return None
        if hit is None:
            table[key] = new
            return None
        return hit

    # Merged calls have equal ops, attributes and operands, hence equal types.
    return rewrite_post_order(expr, merge, child_fn=_outside_opaque, preserves_types=True)


@dataclass(frozen=True)
class EliminateCommonSubexpr(FunctionPass):
    """``relay.transform.EliminateCommonSubexpr(fskip=None)``."""

    fskip: Callable[[Expr], bool] | None = None

    name: ClassVar[str] = "EliminateCommonSubexpr"
    opt_level: ClassVar[int] = 3

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = eliminate_common_subexpr(func, self.fskip)
        assert isinstance(out, Function)
        return out
