"""Legalize: TVM's hook pass. For every op call whose op has a legalization function registered under
``legalize_map_attr_name`` (``FTVMLegalize`` by default; ``FTVMQnnLegalize`` for ``relay.qnn.transform.
Legalize``), call ``fn(attrs, new_args, arg_types + [out_type])``; a returned call replaces the original, ``None``
keeps it. No op here registers a legalization of its own (byoc's kernels need none), so the pass changes only
what users register with ``relay.op.register_legalize`` / ``register_qnn_legalize`` (or ``register_op_attr``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import PassError
from ..ir.expr import Call, Expr, Function, Op
from ..ir.module import IRModule
from ..ir.traversal import rewrite_post_order
from ..ops.registry import get_op_attr
from .pass_infra import FunctionPass, PassContext

__all__ = ["Legalize", "QnnLegalize", "legalize"]


def legalize(func: Function, attr_name: str, pass_name: str = "Legalize") -> Function:
    def fn(old: Expr, new: Expr) -> Expr | None:
        if type(new) is not Call or type(new.op) is not Op:
            return None
        hook = get_op_attr(new.op.name, attr_name)
        if hook is None:
            return None
        types = [a._checked_type for a in old.args] + [old._checked_type]
        res = hook(new.attrs, list(new.args), types)
        if res is None:
            return None
        if not isinstance(res, Call):
            raise PassError(f"{pass_name}: the {attr_name} function of {new.op.name} returned "
                            f"{type(res).__name__}, not a call", hint="return a relay call expression, or None")
        return res
    out = rewrite_post_order(func, fn)
    assert isinstance(out, Function)
    return out


class _LegalizeBase(FunctionPass):
    attr_name: ClassVar[str] = "FTVMLegalize"
    opt_level: ClassVar[int] = 1

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        from .infer_type import infer_module
        out = super().run(infer_module(mod), ctx)
        return infer_module(out) if out is not mod else out

    def transform_function(self, func, mod, ctx):
        return legalize(func, self.legalize_map_attr_name, self.name)


@dataclass(frozen=True)
class Legalize(_LegalizeBase):
    """``relay.transform.Legalize(legalize_map_attr_name="FTVMLegalize")``."""

    legalize_map_attr_name: str = "FTVMLegalize"
    name: ClassVar[str] = "Legalize"


@dataclass(frozen=True)
class QnnLegalize(_LegalizeBase):
    """The first pass of ``relay.qnn.transform.Legalize()``: the ``FTVMQnnLegalize`` hooks."""

    legalize_map_attr_name: str = "FTVMQnnLegalize"
    name: ClassVar[str] = "QnnLegalize"
