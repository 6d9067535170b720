"""SimplifyExpr and SimplifyExprPostAlterOp: TVM's algebraic clean-ups (the rules and their order are in
``simplify_rules.py``). One bottom-up sweep: each call is rebuilt over its simplified operands, then the rules are
tried in order and the first that applies replaces it; the replacement is tried again until no rule applies (TVM
repeats whole-graph rounds until nothing changes; rewriting each node to its fixed point in one post-order sweep
reaches the same result without the rounds). Every rewrite keeps its node's type, so new nodes are typed on the
spot from their operands."""
from __future__ import annotations

from typing import ClassVar

from ..ir.expr import Call, Expr, Function, Op, Var
from ..ir.traversal import children, post_order, rebuild
from .pass_infra import FunctionPass
from .simplify_rules import POST_ALTER_OP_RULES, SIMPLIFY_EXPR_RULES

__all__ = ["SimplifyExpr", "SimplifyExprPostAlterOp", "simplify_expr"]

_MAX_REWRITES_PER_NODE = 32  # each rule shrinks or canonicalises; a guard against a rule pair cycling
_MAX_NESTING = 4


def _untyped_children(node: Expr) -> tuple[Expr, ...]:
    return tuple(c for c in children(node) if c._checked_type is None)  # type: ignore[attr-defined]


_BY_OP: dict[tuple[int, str], tuple] = {}


def _rules_for(name: str, rules) -> tuple:
    key = (id(rules), name)
    found = _BY_OP.get(key)
    if found is None:
        from ..ops.registry import FusionKind, get_op_def
        broadcast = get_op_def(name).fusion == FusionKind.BROADCAST
        found = _BY_OP[key] = tuple(r for r in rules if (name in r.ops if r.ops is not None else broadcast))
    return found


def _apply(pre: Expr, new: Expr, rules, depth: int) -> Expr:
    """``new`` rewritten by the first applicable rule until none applies."""
    for _ in range(_MAX_REWRITES_PER_NODE):
        if type(new) is not Call or type(new.op) is not Op:
            return new
        for rule in _rules_for(new.op.name, rules):
            out = rule(pre, new)
            if out is not None and out is not new:
                new = _settle(out, rules, depth + 1)
                break
        else:
            return new
    return new


def _settle(expr: Expr, rules, depth: int) -> Expr:
    """Type and simplify the nodes a rule just built (its operands that already have types are done)."""
    from .infer_type import _infer_node
    if expr._checked_type is not None:  # type: ignore[attr-defined]
        return expr
    memo: dict[int, Expr] = {}
    for node in post_order(expr, child_fn=_untyped_children):
        if node._checked_type is not None:  # type: ignore[attr-defined]
            memo[id(node)] = node
            continue
        new = rebuild(node, tuple(memo.get(id(c), c) for c in children(node)))
        if new._checked_type is None:  # type: ignore[attr-defined]
            new._set_checked_type(_infer_node(new, {}, {}))
        # rules inside rules' output: bounded by rule nesting, not by graph depth
        memo[id(node)] = _apply(new, new, rules, depth) if depth < _MAX_NESTING else new
    return memo[id(expr)]


def simplify_expr(func: Function, rules=SIMPLIFY_EXPR_RULES) -> Function:
    memo: dict[int, Expr] = {}
    for node in post_order(func):
        new = rebuild(node, tuple(memo[id(c)] for c in children(node)), keep_ret_type=True)
        if new is not node and type(new) is not Var and new._checked_type is None:  # type: ignore[attr-defined]
            new._set_checked_type(node._checked_type)  # type: ignore[attr-defined]
        if type(node) is Call and type(node.op) is Op:
            new = _apply(node, new, rules, 0)
        memo[id(node)] = new
    out = memo[id(func)]
    assert isinstance(out, Function)
    return out


class SimplifyExpr(FunctionPass):
    """``relay.transform.SimplifyExpr()``."""

    name: ClassVar[str] = "SimplifyExpr"
    opt_level: ClassVar[int] = 0
    typed: ClassVar[bool] = True
    rules: ClassVar[tuple] = SIMPLIFY_EXPR_RULES


    def transform_function(self, func: Function, mod, ctx) -> Function:
        return simplify_expr(func, self.rules)


class SimplifyExprPostAlterOp(SimplifyExpr):
    """``relay.transform.SimplifyExprPostAlterOp()``: the subset relay.build runs after AlterOpLayout."""

    name: ClassVar[str] = "SimplifyExprPostAlterOp"
    rules: ClassVar[tuple] = POST_ALTER_OP_RULES
