"""Inline: replace calls of global functions marked ``Inline=1`` by the function itself (Relay's rule).

Only a global function that calls no other global function (a leaf of the call graph, hence not recursive) is
inlined. A function for an external compiler (``Compiler`` or ``Extern``) is kept whole as a function literal
called at the site, so its attributes survive; any other function's body is substituted, its parameters bound
to the call's arguments. Inlined functions no longer referenced are removed from the module.
"""
from __future__ import annotations

from ..ir.expr import Call, Expr, Function, GlobalVar, Var
from ..ir.module import IRModule
from ..ir.traversal import post_order, rewrite_post_order
from .pass_infra import ModulePass, PassContext

__all__ = ["Inline"]


def _callees(func: Function) -> set[str]:
    return {n.name_hint for n in post_order(func) if type(n) is GlobalVar}


def _literal(func: Function) -> Function:
    return Function(func.params, func.body, func.ret_type, func.attrs, func.span)


def _bind(func: Function, args: tuple[Expr, ...]) -> Expr:
    binding = dict(zip(func.params, args))  # nodes hash by identity
    return rewrite_post_order(func.body, lambda old, new: binding.get(old) if type(old) is Var else None)


class Inline(ModulePass):
    name = "Inline"
    opt_level = 1

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        funcs = {gv.name_hint: f for gv, f in mod.items()}
        inlinable = {name for name, f in funcs.items()
                     if int(f.attrs.get("Inline", 0) or 0) != 0 and not _callees(f)}
        if not inlinable:
            return mod
        out = mod.copy()
        used: set[str] = set()
        for gv, func in mod.items():
            if gv.name_hint in inlinable:
                continue
            new = rewrite_post_order(func, lambda old, new: _inline(new, funcs, inlinable))
            out[gv] = new
            used |= _callees(new)
        for name in inlinable - used:
            if name != "main":
                del out[name]
        from .infer_type import infer_module
        return infer_module(out)


def _inline(new: Expr, funcs: dict[str, Function], inlinable: set[str]) -> Expr | None:
    if type(new) is Call and type(new.op) is GlobalVar and new.op.name_hint in inlinable:
        func = funcs[new.op.name_hint]
        if "Compiler" in func.attrs or int(func.attrs.get("Extern", 0) or 0):
            return Call(_literal(func), new.args, new.attrs, new.span)
        return _bind(func, new.args)
    return None
