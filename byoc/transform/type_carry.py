"""Keeping types through type-preserving rewrites, so the partitioning passes need no whole-module re-inference.

Every rewrite in MergeComposite, AnnotateTarget, MergeCompilerRegions and PartitionGraph replaces a node by one
of the same type (a composite call has its root's type, an annotation its operand's). Copying the memo is
exact and saves a full InferType per pass; ``ensure_typed`` falls back to InferType when anything is missing.
"""
from __future__ import annotations

from ..ir.expr import Expr, Function
from ..ir.module import IRModule
from ..ir.types import FuncType
from .infer_type import infer_module

__all__ = ["typed_like", "type_function", "ensure_typed"]


def typed_like(new: Expr, old: Expr) -> Expr:
    t = old._checked_type  # type: ignore[attr-defined]
    if new is not old and t is not None and new._checked_type is None:  # type: ignore[attr-defined]
        new._set_checked_type(t)
    return new


def type_function(func: Function) -> Function:
    """Set a function's type from its (typed) parameters and body, when they are known."""
    body_t = func.body._checked_type  # type: ignore[attr-defined]
    params = []
    for p in func.params:
        t = p._checked_type if p._checked_type is not None else p.type_annotation  # type: ignore[attr-defined]
        if t is None:
            return func
        params.append(t)
    if body_t is not None and func._checked_type is None:  # type: ignore[attr-defined]
        func._set_checked_type(FuncType(tuple(params), body_t))
    return func


def ensure_typed(mod: IRModule) -> IRModule:
    """``mod`` itself when every function and global is typed, else an inferred copy."""
    for gv, func in mod.items():
        if func._checked_type is None or gv._checked_type is None:  # type: ignore[attr-defined]
            return infer_module(mod.copy())
    return mod
