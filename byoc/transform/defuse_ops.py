"""DefuseOps: undo FuseOps. Each call of a primitive function literal (``Primitive=1``, not for an external
compiler) is replaced by the function's body with its parameters bound to the call's arguments. The CPU backend
runs it first, so a fused module (e.g. from ``relay.build`` at opt_level 3) compiles like an unfused one."""
from __future__ import annotations

from typing import ClassVar

from ..ir.expr import Call, Expr, Function, Var
from ..ir.traversal import rewrite_post_order
from .pass_infra import FunctionPass

__all__ = ["DefuseOps", "defuse", "is_primitive"]


def is_primitive(f) -> bool:
    return type(f) is Function and bool(int(f.attrs.get("Primitive", 0) or 0)) and "Compiler" not in f.attrs \
        and not int(f.attrs.get("Extern", 0) or 0)


def _defuse_call(new: Expr) -> Expr | None:
    if type(new) is not Call or not is_primitive(new.op):
        return None
    binding = dict(zip(new.op.params, new.args))  # nodes hash by identity
    return rewrite_post_order(new.op.body, lambda old, _n: binding.get(old) if type(old) is Var else None,
                              preserves_types=True)


def defuse(expr: Expr) -> Expr:
    """``expr`` with every primitive function call inlined (types kept)."""
    return rewrite_post_order(expr, lambda old, new: _defuse_call(new), preserves_types=True)


class DefuseOps(FunctionPass):
    """``relay.transform.DefuseOps()``."""

    name: ClassVar[str] = "DefuseOps"
    opt_level: ClassVar[int] = 0

    def transform_function(self, func, mod, ctx):
        return defuse(func)
