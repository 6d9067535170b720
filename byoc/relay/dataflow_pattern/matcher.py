"""Matching a pattern against an expression (TVM's ``DFPatternMatcher`` semantics).

The matcher recurses over the *pattern* (a handful of nodes) and never over the expression graph: the only
graph walk — a dominator pattern's path — uses an explicit stack.

A pattern object that matched an expression must match the same expression wherever it occurs again (memo);
a failed alternative rolls back everything it recorded. ``add`` and ``multiply`` also match with swapped operands.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ByocError, PatternError
from ...ir.attrs import freeze_value
from ...ir.expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from ...ir.structural import structural_equal
from ...ir.types import TensorType, Type
from .graph import IndexedGraph
from .pattern import (AltPattern, AttrPattern, CallPattern, ConstantPattern, DataTypePattern, DFPattern,
                      DominatorPattern, ExprPattern, FunctionPattern, IfPattern, LetPattern, ShapePattern,
                      TuplePattern, TupleGetItemPattern, TypePattern, VarPattern, WildcardPattern,
                      pattern_post_order)

__all__ = ["DFPatternMatcher", "Match", "NodeMap", "match", "match_details"]

_COMMUTATIVE = ("add", "multiply")


def _pattern_op(p) -> str | None:
    """The op name a call pattern calls, if it is one fixed op."""
    if isinstance(p, CallPattern) and isinstance(p.op, ExprPattern) and isinstance(p.op.expr, Op):
        return p.op.expr.name
    return None


def _expr_op(e) -> str | None:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else None


def _reassociated(p: CallPattern, e) -> list:
    """TVM's matcher also accepts a product and a quotient associated the other way round:
    ``(a·b)/c`` matches ``a·(b/c)`` or ``(a/c)·b``, and ``(a/b)·c`` matches ``(a·c)/b``. The equivalent
    pattern(s) to try on ``e`` (only when ``e``'s shape makes one possible, so patterns stay finite)."""
    if len(p.args) != 2:
        return []
    out = []
    inner = p.args[0]
    if _pattern_op(p) == "divide" and _pattern_op(inner) == "multiply" and inner.args is not None \
            and len(inner.args) == 2 and _expr_op(e) == "multiply" and "divide" in map(_expr_op, e.args):
        for i in (0, 1):
            div = CallPattern(p.op, (inner.args[i], p.args[1]))
            out.append(CallPattern(inner.op, (inner.args[1 - i], div)))
    if _pattern_op(p) == "multiply" and _expr_op(e) == "divide" and "multiply" in map(_expr_op, e.args):
        for i in (0, 1):
            a = p.args[i]
            if _pattern_op(a) == "divide" and a.args is not None and len(a.args) == 2:
                mul = CallPattern(p.op, (a.args[0], p.args[1 - i]))
                out.append(CallPattern(a.op, (mul, a.args[1])))
                break
    return out


class NodeMap(Mapping):
    """What a match bound: ``node_map[pattern]`` or ``node_map["capture"]`` → tuple of expressions."""

    def __init__(self, by_pattern: dict[DFPattern, tuple[Expr, ...]], captures: dict[str, tuple[Expr, ...]]):
        self._by_pattern = by_pattern
        self._captures = captures

    def __getitem__(self, key) -> tuple[Expr, ...]:
        if isinstance(key, str):
            if key not in self._captures:
                known = ", ".join(sorted(self._captures)) or "none"
                raise PatternError(f"no capture named {key!r} in this match", hint=f"captures: {known}")
            return self._captures[key]
        return self._by_pattern[key]

    def __contains__(self, key) -> bool:
        return key in (self._captures if isinstance(key, str) else self._by_pattern)

    def __iter__(self):
        return iter(self._by_pattern)

    def __len__(self) -> int:
        return len(self._by_pattern)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def mapped(self, fn) -> "NodeMap":
        """The same map with every expression passed through ``fn`` (pre-rewrite → post-rewrite nodes)."""
        return NodeMap({p: tuple(fn(e) for e in es) for p, es in self._by_pattern.items()},
                       {k: tuple(fn(e) for e in es) for k, es in self._captures.items()})


@dataclass(frozen=True)
class Match:
    """A successful match: the matched root, all bindings, and the named captures (first binding each)."""
    root: Expr
    node_map: NodeMap
    captures: Mapping[str, Expr] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Expr:
        if name not in self.captures:
            known = ", ".join(sorted(self.captures)) or "none"
            raise PatternError(f"no capture named {name!r} in this match", hint=f"captures: {known}")
        return self.captures[name]


def _attr_equal(expected: Any, found: Any) -> bool:
    found = freeze_value(found)
    if isinstance(expected, Expr) or isinstance(found, Expr):
        return isinstance(expected, Expr) and isinstance(found, Expr) and structural_equal(expected, found)
    try:
        return bool(expected == found)
    except Exception:  # e.g. numpy arrays compared elementwise
        return False


class DFPatternMatcher:
    """Reusable matcher; ``graph`` (an IndexedGraph of the enclosing expression) serves dominator patterns."""

    def __init__(self, graph: IndexedGraph | None = None):
        self.graph = graph
        self.memo: dict[DFPattern, list[Expr]] = {}
        self._trail: list[DFPattern] = []
        self._memoize = True
        self._orders: dict[int, tuple[DFPattern, list[DFPattern]]] = {}

    # -- public -------------------------------------------------------------------------------------------
    def match(self, pattern: DFPattern, expr: Expr) -> bool:
        self.memo = {}
        self._trail = []
        self._memoize = True
        return self._visit(pattern, expr)

    def details(self, pattern: DFPattern, expr: Expr) -> Match:
        """The bindings of the last successful ``match(pattern, expr)``."""
        by_pattern: dict[DFPattern, tuple[Expr, ...]] = {}
        captures: dict[str, tuple[Expr, ...]] = {}
        cached = self._orders.get(id(pattern))
        if cached is None or cached[0] is not pattern:
            cached = (pattern, [p for p in pattern_post_order(pattern)])
            self._orders[id(pattern)] = cached
        memo = self.memo
        for p in cached[1]:
            exprs = memo.get(p)
            if exprs is None:
                continue
            by_pattern[p] = tuple(exprs)
            if p.name and p.name not in captures:
                captures[p.name] = tuple(exprs)
        return Match(expr, NodeMap(by_pattern, captures), {k: v[0] for k, v in captures.items()})

    # -- memo with rollback -----------------------------------------------------------------------------
    def _visit(self, p: DFPattern, e: Expr) -> bool:
        key = p  # patterns hash by identity
        memo = self.memo
        if self._memoize:
            seen = memo.get(key)
            if seen is not None:  # entries are never empty lists
                return seen[0] is e
        mark = len(self._trail)
        ok = self._dispatch(p, e)
        if ok:
            seen = memo.get(key)
            if seen is None:
                memo[key] = [e]
            else:
                seen.append(e)
            self._trail.append(key)
        elif len(self._trail) > mark:
            self._rollback(mark)
        return ok

    def _rollback(self, mark: int) -> None:
        trail, memo = self._trail, self.memo
        while len(trail) > mark:
            key = trail.pop()
            lst = memo[key]
            lst.pop()
            if not lst:
                del memo[key]

    # -- dispatch -------------------------------------------------------------------------------------
    def _dispatch(self, p: DFPattern, e: Expr) -> bool:
        t = type(p)
        if t is CallPattern:
            return self._match_call(p, e)
        if t is WildcardPattern:
            r = p.__dict__.get("_redirect")  # redirect_to: a recursive pattern (recurses over the match depth)
            return True if r is None else self._visit(r, e)
        if t is ConstantPattern:
            return isinstance(e, Constant)
        if t is ExprPattern and type(p.expr) is Op:
            return isinstance(e, Op) and e.name == p.expr.name
        if t is AltPattern:
            return self._visit(p.left, e) or self._visit(p.right, e)
        if isinstance(p, WildcardPattern):
            r = p.__dict__.get("_redirect")
            return True if r is None else self._visit(r, e)
        if isinstance(p, CallPattern):
            return self._match_call(p, e)
        if isinstance(p, ExprPattern):
            if isinstance(p.expr, Op):
                return isinstance(e, Op) and e.name == p.expr.name
            return p.expr is e or structural_equal(p.expr, e)
        if isinstance(p, ConstantPattern):
            return isinstance(e, Constant)
        if isinstance(p, VarPattern):
            return isinstance(e, Var) and (not p.var_name or p.var_name == e.name_hint)
        if isinstance(p, AltPattern):
            return self._visit(p.left, e) or self._visit(p.right, e)
        if isinstance(p, AttrPattern):
            return self._visit(p.pattern, e) and self._match_attrs(p, e)
        if isinstance(p, TypePattern):
            return self._visit(p.pattern, e) and self._type_of(e, p) == p.type
        if isinstance(p, DataTypePattern):
            if not self._visit(p.pattern, e):
                return False
            t = self._type_of(e, p)
            return isinstance(t, TensorType) and t.dtype == p.dtype
        if isinstance(p, ShapePattern):
            if not self._visit(p.pattern, e):
                return False
            t = self._type_of(e, p)
            return isinstance(t, TensorType) and t.shape == p.shape
        if isinstance(p, TuplePattern):
            if not isinstance(e, Tuple):
                return False
            if p.fields is None:
                return True
            return len(p.fields) == len(e.fields) and all(self._visit(fp, fe) for fp, fe in zip(p.fields, e.fields))
        if isinstance(p, TupleGetItemPattern):
            return (isinstance(e, TupleGetItem) and (p.index is None or p.index == e.index)
                    and self._visit(p.tuple_value, e.tuple_value))
        if isinstance(p, FunctionPattern):
            if not isinstance(e, Function):
                return False
            if p.params is not None:
                if len(p.params) != len(e.params) or not all(self._visit(pp, ep) for pp, ep in zip(p.params,
                                                                                                 e.params)):
                    return False
            return self._visit(p.body, e.body)
        if isinstance(p, IfPattern):
            return (isinstance(e, If) and self._visit(p.cond, e.cond) and self._visit(p.true_branch, e.true_branch)
                    and self._visit(p.false_branch, e.false_branch))
        if isinstance(p, LetPattern):
            return (isinstance(e, Let) and self._visit(p.var, e.var) and self._visit(p.value, e.value)
                    and self._visit(p.body, e.body))
        if isinstance(p, DominatorPattern):
            return self._match_dominator(p, e)
        raise PatternError(f"unknown pattern kind {type(p).__name__}")

    def _match_call(self, p: CallPattern, e: Expr) -> bool:
        if not isinstance(e, Call):
            return False
        mark = len(self._trail)
        if not self._visit(p.op, e.op):
            self._rollback(mark)
            return p.args is not None and any(self._match_reassociated(q, e, mark) for q in _reassociated(p, e))
        if p.args is None:
            return True
        if len(p.args) != len(e.args):
            return False
        mark = len(self._trail)
        visit = self._visit
        for pa, ea in zip(p.args, e.args):
            if not visit(pa, ea):
                break
        else:
            return True
        self._rollback(mark)
        if len(p.args) == 2 and isinstance(e.op, Op) and e.op.name in _COMMUTATIVE:
            if self._visit(p.args[0], e.args[1]) and self._visit(p.args[1], e.args[0]):
                return True
            self._rollback(mark)
        return False

    def _match_reassociated(self, q: CallPattern, e: Expr, mark: int) -> bool:
        if self._match_call(q, e):
            return True
        self._rollback(mark)
        return False

    def _match_attrs(self, p: AttrPattern, e: Expr) -> bool:
        if isinstance(e, Op):
            from ...ops.registry import get_op_attr
            for k, v in p.attrs.items():
                found = get_op_attr(e.name, k)
                if found is None or not _attr_equal(v, found):
                    return False
            return True
        if isinstance(e, Call):
            attrs = e.attrs
            if not p.attrs:
                return True
            if attrs is None:
                return False
            keys = attrs.keys()  # typed op attributes, or a DictAttrs (FrozenDict) on a call to a function/var
            return all(k in keys and _attr_equal(v, attrs[k]) for k, v in p.attrs.items())
        if isinstance(e, Function):
            return all(k in e.attrs and _attr_equal(v, e.attrs[k]) for k, v in p.attrs.items())
        return False

    def _type_of(self, e: Expr, p: DFPattern) -> Type:
        t = e._checked_type  # type: ignore[attr-defined]
        if t is None:
            from ...transform.infer_type import infer_expr
            try:
                t = infer_expr(e)
            except ByocError as err:
                raise PatternError(f"{type(p).__name__} needs the type of a {type(e).__name__}, which cannot be "
                                   f"inferred: {err.message}",
                                   hint="run relay.transform.InferType() on the module before matching") from None
        return t

    # -- dominator (diamond) patterns ----------------------------------------------------------------------
    def _match_dominator(self, p: DominatorPattern, e: Expr) -> bool:
        """TVM's rule: walking up from ``e`` depth-first, every input that is not a Var/Constant leaf (nor the
        callee) matches ``parent`` or else ``path`` (and is walked in turn); each walked node needs at least one
        such input. ``parent`` is memoised, so it pins to one node; ``path`` is matched afresh at every node.
        Finally ``e`` must post-dominate that parent."""
        if not self._visit(p.child, e):
            return False
        if self.graph is None or e not in self.graph:
            self.graph = IndexedGraph(e)
        graph = self.graph
        parents: list[Expr] = []
        was = self._memoize
        try:
            if not self._walk_dominator_paths(p, e, graph, parents):
                return False
        finally:
            self._memoize = was
        return bool(parents) and all(graph.post_dominates(e, par) for par in parents)

    def _walk_dominator_paths(self, p: DominatorPattern, e: Expr, graph: IndexedGraph, parents: list) -> bool:
        def operands(node):
            op = node.op if isinstance(node, Call) else None
            return [i for i in graph.inputs(node) if i is not op and not isinstance(i, (Var, Constant))]

        walked: set[Expr] = set()  # a path node's walk does not depend on where it was reached from
        stack = [(e, operands(e), 0)]
        if not stack[0][1]:
            return False
        while stack:
            node, kids, i = stack.pop()
            if i == len(kids):
                continue
            stack.append((node, kids, i + 1))
            inp = kids[i]
            self._memoize = True
            if self._visit(p.parent, inp):
                parents.append(inp)
                continue
            self._memoize = False
            if not self._visit(p.path, inp):
                return False
            if inp not in walked:
                walked.add(inp)
                inp_kids = operands(inp)
                if not inp_kids:
                    return False
                stack.append((inp, inp_kids, 0))
        return True


def match(pattern: DFPattern, expr: Expr) -> bool:
    """``pattern.match(expr)``."""
    if not isinstance(pattern, DFPattern):
        raise PatternError(f"match needs a pattern, got {type(pattern).__name__}")
    if not isinstance(expr, Expr):
        raise PatternError(f"match needs an expression, got {type(expr).__name__}")
    return DFPatternMatcher().match(pattern, expr)


def match_details(pattern: DFPattern, expr: Expr) -> Match | None:
    m = DFPatternMatcher()
    if not m.match(pattern, expr):
        return None
    return m.details(pattern, expr)
