"""AlterOpLayout: replace calls through the op's registered ``FTVMAlterOpLayout`` function.

``register_op_attr("nn.conv2d", "FTVMAlterOpLayout", f)`` with ``f(attrs, inputs, tinfos, out_type)``
returning a replacement expression (or None to keep the call), as in TVM. Unlike TVM there are no built-in
alter functions and no layout propagation to neighbouring ops: with nothing registered the pass changes nothing
(TVM's behaviour for ops without one).
"""
from __future__ import annotations

from ..errors import PassError
from ..ir.expr import Call, Expr, Op
from ..ir.module import IRModule
from ..ir.traversal import rewrite_post_order
from ..ops.registry import get_op_attr
from .pass_infra import ModulePass, PassContext

__all__ = ["AlterOpLayout"]


class AlterOpLayout(ModulePass):
    name = "AlterOpLayout"
    opt_level = 3

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        from .infer_type import infer_module
        mod = infer_module(mod.copy())
        out = mod.copy()
        for gv, func in mod.items():
            if any(k in func.attrs for k in ("Compiler", "Extern")):
                continue
            out[gv] = rewrite_post_order(func, lambda old, new: _alter(old, new))
        return infer_module(out)


def _alter(old: Expr, new: Expr) -> Expr | None:
    if type(new) is not Call or type(new.op) is not Op:
        return None
    fn = get_op_attr(new.op.name, "FTVMAlterOpLayout")
    if fn is None:
        return None
    tinfos = [a._checked_type for a in old.args]
    res = fn(new.attrs, list(new.args), tinfos, old._checked_type)
    if res is None:
        return None
    if not isinstance(res, Expr):
        raise PassError(f"AlterOpLayout: the FTVMAlterOpLayout function of {new.op.name} returned "
                        f"{type(res).__name__}, not an expression")
    return res
