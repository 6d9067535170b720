"""Small analyses over expressions: free variables, bound variables, op counts."""
from __future__ import annotations

from .expr import Call, Expr, Function, Let, Op, Var
from .traversal import post_order

__all__ = ["free_vars", "bound_vars", "all_vars", "count_ops"]


def bound_vars(expr: Expr) -> list[Var]:
    out: list[Var] = []
    for node in post_order(expr):
        if isinstance(node, Function):
            out.extend(node.params)
        elif isinstance(node, Let):
            out.append(node.var)
    return list(dict.fromkeys(out))


def all_vars(expr: Expr) -> list[Var]:
    return [n for n in post_order(expr) if isinstance(n, Var)]


def free_vars(expr: Expr) -> list[Var]:
    """Variables used but not bound, in post-order of first use (Relay's ``free_vars``)."""
    bound = {id(v) for v in bound_vars(expr)}
    return [n for n in post_order(expr) if isinstance(n, Var) and id(n) not in bound]


def count_ops(expr: Expr) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in post_order(expr):
        if isinstance(node, Call) and isinstance(node.op, Op):
            counts[node.op.name] = counts.get(node.op.name, 0) + 1
    return counts
