"""Structural equality and hashing, computed iteratively from the post-order.

Two graphs are equal when their post-orders line up node for node: same kinds, same attributes, same constant
bytes, operands at the same positions. Bound variables (function parameters, Let variables) are matched by
position, so names do not matter; free variables must be the same object unless ``map_free_vars``.
Sharing is respected: a sub-expression used twice is not equal to two equal copies. Float attribute values
compare as TVM's structural equality does: within an absolute 1e-9 (so ``epsilon=1e-5`` equals the float32
``1e-5`` read back from a constant).
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from .analysis import bound_vars
from .expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Op, RefCreate, RefRead, RefWrite, Tuple,
                   TupleGetItem, Var)
from .module import IRModule
from .traversal import children, post_order

__all__ = ["structural_equal", "structural_hash", "assert_structural_equal"]


def _signatures(expr: Expr, map_free_vars: bool) -> list[tuple]:
    order = post_order(expr)
    index = {id(n): i for i, n in enumerate(order)}
    bound = {id(v) for v in bound_vars(expr)}
    sigs: list[tuple] = []
    for node in order:
        kids = tuple(index[id(c)] for c in children(node))
        sigs.append(_local(node, kids, bound, map_free_vars))
    return sigs


def _local(node: Expr, kids: tuple, bound: set[int], map_free_vars: bool) -> tuple:
    if isinstance(node, Var):
        ident: Any = None if (id(node) in bound or map_free_vars) else id(node)
        return ("Var", node.type_annotation, ident)
    if isinstance(node, Constant):
        d = node.data
        return ("Const", d.dtype.str, d.shape, hashlib.blake2b(d.tobytes(), digest_size=16).digest())
    if isinstance(node, Call):
        callee = node.op.name if isinstance(node.op, Op) else None
        return ("Call", callee, node.attrs, kids)
    if isinstance(node, Tuple):
        return ("Tuple", kids)
    if isinstance(node, TupleGetItem):
        return ("TGI", node.index, kids)
    if isinstance(node, Let):
        return ("Let", kids)
    if isinstance(node, If):
        return ("If", kids)
    if isinstance(node, Function):
        return ("Fn", len(node.params), node.ret_type, node.attrs, kids)
    if isinstance(node, GlobalVar):
        return ("GV", node.name_hint)
    if isinstance(node, Op):
        return ("Op", node.name)
    if isinstance(node, (RefCreate, RefRead, RefWrite)):
        return (type(node).__name__, kids)
    raise TypeError(f"unknown node {type(node).__name__}")


FLOAT_ATOL = 1e-9   # TVM's SEqualReduce on doubles


def _fields(x) -> tuple | None:
    """A comparable view of a container: its items, or None for a leaf."""
    if isinstance(x, (tuple, list)):   # both are TVM's Array: a list equals the tuple of its items
        return ("array",) + tuple(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__,) + tuple(getattr(x, f.name) for f in dataclasses.fields(x))
    if hasattr(x, "items") and callable(x.items):
        return (type(x).__name__,) + tuple(sorted(x.items(), key=repr))
    return None


def _fuzzy_equal(a, b) -> bool:
    """``a == b`` with float leaves within FLOAT_ATOL (iterative; only reached when ``==`` says no)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if isinstance(x, float) and isinstance(y, float) and not isinstance(x, bool):
            if not (x == y or abs(x - y) < FLOAT_ATOL):
                return False
            continue
        fx, fy = _fields(x), _fields(y)
        if fx is None or fy is None:
            try:
                if not bool(x == y):
                    return False
            except (TypeError, ValueError):
                return False
            continue
        if len(fx) != len(fy) or fx[0] != fy[0]:
            return False
        stack.extend(zip(fx[1:], fy[1:]))
    return True


def _same(sa, sb) -> bool:
    return sa == sb or _fuzzy_equal(sa, sb)


def _module_sigs(mod: IRModule, map_free_vars: bool) -> list:
    return [(gv.name_hint, _signatures(f, map_free_vars)) for gv, f in mod.sorted_items()]


def structural_equal(lhs, rhs, map_free_vars: bool = False) -> bool:
    if isinstance(lhs, IRModule) or isinstance(rhs, IRModule):
        if not (isinstance(lhs, IRModule) and isinstance(rhs, IRModule)):
            return False
        return _same(_module_sigs(lhs, map_free_vars), _module_sigs(rhs, map_free_vars))
    if isinstance(lhs, Expr) and isinstance(rhs, Expr):
        return _same(_signatures(lhs, map_free_vars), _signatures(rhs, map_free_vars))
    return _fuzzy_equal(lhs, rhs)   # attribute values, shapes: lists and tuples are both TVM Arrays


def structural_hash(value, map_free_vars: bool = False) -> int:
    if isinstance(value, IRModule):
        sigs: Any = _module_sigs(value, map_free_vars)
    else:
        sigs = _signatures(value, map_free_vars)
    h = hashlib.blake2b(repr(sigs).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little", signed=True)


def assert_structural_equal(lhs, rhs, map_free_vars: bool = False) -> None:
    if not structural_equal(lhs, rhs, map_free_vars):
        from ..errors import IRError
        lt = lhs.astext() if hasattr(lhs, "astext") else repr(lhs)
        rt = rhs.astext() if hasattr(rhs, "astext") else repr(rhs)
        raise IRError("structural mismatch", notes=("lhs:\n" + lt, "rhs:\n" + rt))
