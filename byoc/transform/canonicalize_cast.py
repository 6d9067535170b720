"""CanonicalizeCast: an up-cast (to more bits) shared by several element-wise / broadcast calls is copied, one
copy per extra such user, so fusion can put the cast inside each user's group and keep the narrower tensor
between groups (TVM's ``canonicalize_cast.cc``). The copies compute the same values."""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..ir.expr import Call, Expr, Function, Op
from ..ir.traversal import rewrite_post_order
from ..ops.registry import FusionKind, get_op_def
from .pass_infra import FunctionPass
from .scale_axis import op_name, tensor_type

__all__ = ["CanonicalizeCast"]


def _bits(dtype: str) -> int:
    return 16 if dtype == "bfloat16" else np.dtype(dtype).itemsize * 8 if dtype != "bool" else 1


def _is_upcast(node: Expr) -> bool:
    if op_name(node) != "cast":
        return False
    t = tensor_type(node.args[0])  # type: ignore[attr-defined]
    return t is not None and _bits(t.dtype) < _bits(node.attrs.dtype)  # type: ignore[attr-defined]


def canonicalize_cast(func: Function) -> Function:
    uses: dict[int, int] = {}

    def rewrite(old: Expr, new: Expr) -> Expr | None:
        if type(new) is not Call or type(new.op) is not Op or get_op_def(new.op.name).fusion > FusionKind.BROADCAST:
            return None
        args = list(new.args)
        for i, a in enumerate(old.args):
            if _is_upcast(a):
                uses[id(a)] = uses.get(id(a), 0) + 1
                if uses[id(a)] > 1:  # the first user keeps the original
                    args[i] = Call(args[i].op, args[i].args, args[i].attrs, args[i].span)
        return None if all(x is y for x, y in zip(args, new.args)) else Call(new.op, tuple(args), new.attrs,
                                                                              new.span)

    out = rewrite_post_order(func, rewrite)
    assert isinstance(out, Function)
    return out


class CanonicalizeCast(FunctionPass):
    """``relay.transform.CanonicalizeCast()``."""

    name: ClassVar[str] = "CanonicalizeCast"
    opt_level: ClassVar[int] = 3
    typed: ClassVar[bool] = True

    def transform_function(self, func: Function, mod, ctx) -> Function:
        return canonicalize_cast(func)
