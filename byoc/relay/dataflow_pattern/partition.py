"""Grouping matches and outlining them as functions (TVM's ``PatternGrouper`` / ``PatternPartitioner``).

Matches are searched from the outputs towards the inputs; a node already inside a group is not a candidate.
A group's inputs are the expressions bound by the pattern's leaves (wildcards, vars, constants, any-arity
tuple/call operands), de-duplicated; a constant is embedded in the body instead when the pattern at its
position says constant. A group is dropped when an interior node already belongs to another group, or when an
interior value is used outside the group and that use is not post-dominated by the group's root.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from ...errors import ByocError
from ...ir.expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from ...ir.types import FuncType
from ...ir.traversal import children, post_order, rebuild
from .check import Support, evaluate_check
from .graph import IndexedGraph, is_pre_partitioned
from .matcher import DFPatternMatcher, Match
from .pattern import (AltPattern, CallPattern, ConstantPattern, DFPattern, DominatorPattern, ExprPattern,
                      FunctionPattern, TuplePattern, pattern_children, pattern_post_order, root_op_names)

__all__ = ["Group", "PatternGrouper", "partition", "partition_with_memo", "Refusal"]


@dataclass(frozen=True, eq=False)
class Group:
    """One match to outline. The function is built on first use: most callers only need it when the group's
    check accepts it."""
    gid: int
    root: Expr
    match: Match
    inputs: tuple[Expr, ...]
    name: str
    interior: tuple[Expr, ...]

    @functools.cached_property
    def function(self) -> Function:
        params, body = self.params_and_body()
        return Function(params, body)

    def params_and_body(self) -> tuple[tuple[Var, ...], Expr]:
        """Fresh parameters ``FunctionVar_<gid>_<k>`` (typed like the inputs) and the body using them."""
        new: dict[Expr, Expr] = {}  # nodes hash by identity
        params = []
        for k, e in enumerate(self.inputs):
            v = _typed_like(Var(f"FunctionVar_{self.gid}_{k}", e._checked_type), e)  # type: ignore[attr-defined]
            new[e] = v
            params.append(v)
        for n in self.interior:  # post-order: operands are rebuilt first
            kids = children(n)
            new[n] = _typed_like(rebuild(n, tuple([new[c] for c in kids])), n) if kids else n
        return tuple(params), new[self.root]


@dataclass(frozen=True, eq=False)
class Refusal:
    """A group whose check said no: which nodes, and why."""
    root: Expr
    interior: tuple[Expr, ...]
    support: Support


class PatternGrouper:
    """Finds the non-overlapping, self-contained matches of one pattern in one expression."""

    def __init__(self, pattern: DFPattern, expr: Expr, graph: IndexedGraph | None = None):
        self.pattern = pattern
        self.graph = graph if graph is not None else IndexedGraph(expr)
        self.matcher = DFPatternMatcher(self.graph)
        self.pattern_order = pattern_post_order(pattern)
        # Pattern nodes whose matches are group inputs: (pattern, True) = any-arity operands, False = the match.
        self.input_sources: list[tuple[DFPattern, bool]] = []
        for p in self.pattern_order:
            if (isinstance(p, TuplePattern) and p.fields is None) or (isinstance(p, CallPattern) and p.args is None):
                self.input_sources.append((p, True))
            elif not pattern_children(p):
                self.input_sources.append((p, False))
        self.fuzzy_sources = [p for p in self.pattern_order if isinstance(p, (DominatorPattern, FunctionPattern))]
        self.groups: list[Group] = []
        self.assigned: dict[Expr, int] = {}  # interior node -> group id
        self._next_gid = 0

    def run(self) -> list[Group]:
        ops = root_op_names(self.pattern)
        order = self.graph.order
        # Outputs first; a pattern rooted at known ops only looks at calls of those ops.
        candidates = range(len(order) - 1, -1, -1) if ops is None else self.graph.op_call_indices(ops)
        for i in candidates:
            node = order[i]
            if node in self.assigned or is_pre_partitioned(node):
                continue
            if self.matcher.match(self.pattern, node):
                self._create_group(node)
        return self.groups

    # -- group creation --------------------------------------------------------------------------------
    def _embed_const(self, expr: Expr, p: DFPattern) -> bool:
        while isinstance(expr, Constant):
            if isinstance(p, ConstantPattern):
                return True
            if isinstance(p, ExprPattern):
                return isinstance(p.expr, Constant)
            if isinstance(p, AltPattern):
                p = p.left if DFPatternMatcher(self.graph).match(p.left, expr) else p.right
                continue
            return False
        return False

    def _create_group(self, root: Expr) -> None:
        details = self.matcher.details(self.pattern, root)
        memo = details.node_map._by_pattern  # pattern -> matched expressions (patterns hash by identity)
        fuzzy: set[Expr] = set()  # nodes hash by identity
        for p in self.fuzzy_sources:
            if isinstance(p, DominatorPattern):
                for q in (p.parent, p.path):
                    for e in memo.get(q, ()):
                        fuzzy.add(e)
            else:
                for f in memo.get(p, ()):
                    for n in post_order(f.body):
                        fuzzy.add(n)
        inputs: dict[Expr, Expr] = {}
        embed_const = self._embed_const
        for p, any_arity in self.input_sources:
            for m in memo.get(p, ()):
                for e in ((m.fields if isinstance(m, Tuple) else m.args) if any_arity else (m,)):
                    if e in inputs or e in fuzzy or isinstance(e, (Op, Function)) or embed_const(e, p):
                        continue
                    inputs[e] = e
        name, interior = _interior(root, inputs)
        # Overlap and escaping-value checks (Ops, functions and constants are global, never "interior").
        assigned = self.assigned
        for n in interior:
            if n in assigned and not isinstance(n, (Op, Function, Constant)):
                return
        graph = self.graph
        interior_set: set[Expr] | None = None
        for n in interior:
            if n is root or isinstance(n, (Op, Function, Constant)) or n not in graph.index:
                continue
            if interior_set is None:
                interior_set = set(interior)
            for u in graph.users[graph.index[n]]:
                user = graph.order[u]
                if user not in interior_set and not graph.post_dominates(root, user):
                    return
        gid = self._next_gid
        self._next_gid += 1
        for n in interior:
            assigned[n] = gid
        self.groups.append(Group(gid, root, details, tuple(inputs.values()), name, tuple(interior)))


def _interior(root: Expr, inputs: dict[Expr, Expr]) -> tuple[str, list[Expr]]:
    """The group's ``PartitionedFromPattern`` label and its interior nodes (post-order, inputs excluded)."""
    label: list[str] = []
    interior: list[Expr] = []
    # post_order(root) with the inputs as leaves, inlined: groups are small and there are many.
    seen: set[Expr] = set(inputs)
    stack: list[tuple[Expr, bool]] = [(root, False)]
    pop, push = stack.pop, stack.append
    while stack:
        n, expanded = pop()
        t = type(n)
        if not expanded:
            if n in seen:
                continue
            seen.add(n)
            if t is Constant or t is Var:
                interior.append(n)
                continue
            if t is Call:
                op = n.op
                kids = n.args if type(op) is Op else (op,) + n.args
            else:
                kids = children(n)
            if kids:
                push((n, True))
                for k in reversed(kids):
                    if k not in seen:
                        push((k, False))
                continue
        interior.append(n)
        if t is Call:
            label.append(n.op.name + "_" if type(n.op) is Op else "Call_")
        elif isinstance(n, Call):
            label.append(n.op.name + "_" if isinstance(n.op, Op) else "Call_")
        elif isinstance(n, Tuple):
            label.append("Tuple_")
        elif isinstance(n, TupleGetItem):
            label.append(f"TupleGetItem{n.index}_")
        elif isinstance(n, Let):
            label.append("Let_")
        elif isinstance(n, If):
            label.append("If_")
        elif isinstance(n, Function):
            label.append("Function")
    return "".join(label), interior


def partition_with_memo(pattern: DFPattern, expr: Expr, attrs: dict | None = None, check=None, *,
                        label: str = "check", graph: IndexedGraph | None = None, fill_ret_type: bool = False
                        ) -> tuple[Expr, dict[Expr, Expr], list[Refusal]]:
    """``partition`` that also returns the rewrite memo (old node → new node for the nodes that changed; nodes
    hash by identity, read it with ``memo.get(node, node)``) and the refused groups.

    ``graph`` (an IndexedGraph of ``expr``) may be passed to reuse it across patterns. ``fill_ret_type`` gives
    each new function its body's type as ``ret_type`` (MergeComposite: Relay re-infers after each pattern;
    ``pattern.partition`` leaves it unset, as in Relay).
    """
    if isinstance(pattern, FunctionPattern):
        return expr, {}, []
    _ensure_types(expr)
    if graph is None or graph.root is not expr:
        graph = IndexedGraph(expr)
    groups = PatternGrouper(pattern, expr, graph).run()
    memo: dict[Expr, Expr] = {}
    if not groups:
        return expr, memo, []
    by_root = {g.root: g for g in groups}
    extra = dict(attrs or {})
    refusals: list[Refusal] = []
    inputs_of = graph.inputs
    get = memo.get
    for node in graph.order:
        t = type(node)
        if t is Call:
            op = node.op
            kids = node.args if type(op) is Op else (op,) + node.args
        elif t is Constant or t is Var:
            kids = ()
        else:
            kids = inputs_of(node)
        new = _typed_like(rebuild(node, tuple([get(c, c) for c in kids])), node) if kids else node
        g = by_root.get(node)
        if g is not None:
            support = evaluate_check(check, node, g.match.captures, label=label)
            if support.ok:
                params, body = g.params_and_body()
                ret_type = body._checked_type if fill_ret_type else None  # type: ignore[attr-defined]
                func = Function(params, body, ret_type, attrs={"PartitionedFromPattern": g.name, **extra})
                _type_function(func)
                new = _typed_like(Call(func, tuple([memo.get(a, a) for a in g.inputs]),
                                       span=getattr(node, "span", None)), node)
            else:
                refusals.append(Refusal(node, g.interior, support))
        if new is not node:  # unchanged nodes stay out of the memo (it is read with get(node, node))
            memo[node] = new
    return memo.get(expr, expr), memo, refusals


def partition(pattern: DFPattern, expr: Expr, attrs: dict | None = None,
              check: Callable | None = None) -> Expr:
    """``pattern.partition(expr, attrs, check)``: every accepted match becomes a call to an inline function
    carrying ``PartitionedFromPattern`` and ``attrs``."""
    return partition_with_memo(pattern, expr, attrs, check)[0]


def _typed_like(new: Expr, old: Expr) -> Expr:
    """Rewrites here preserve types (a composite call has its root's type): carry the memo over."""
    t = old._checked_type  # type: ignore[attr-defined]
    if new is not old and t is not None and new._checked_type is None:  # type: ignore[attr-defined]
        new._set_checked_type(t)
    return new


def _type_function(func: Function) -> None:
    body_t = func.body._checked_type  # type: ignore[attr-defined]
    if body_t is None or any(p.type_annotation is None for p in func.params):
        return
    func._set_checked_type(FuncType(tuple(p.type_annotation for p in func.params), body_t))


def _ensure_types(expr: Expr) -> None:
    """Parameters of outlined functions take their inputs' types; infer them when possible."""
    if expr._checked_type is not None:  # type: ignore[attr-defined]
        return
    from ...transform.infer_type import infer_expr
    try:
        infer_expr(expr)
    except ByocError:
        pass  # untypeable (e.g. unannotated free variables): parameters stay unannotated
