"""``rewrite(callbacks, expr)``: apply pattern callbacks until nothing changes, within a budget.

Each round runs every callback once over the whole expression (matches grouped as in ``partition``); the
callback gets ``(pre, post, node_map)`` and returns a replacement (``None`` or ``post`` keeps the node). Rounds
repeat until a round changes nothing; exceeding ``max_rounds`` raises ``PatternError`` naming the callbacks that
were still firing.
"""
from __future__ import annotations

from ...errors import PatternError
from ...ir.expr import Expr
from ...ir.structural import structural_equal
from ...ir.traversal import rebuild
from .pattern import DFPattern

__all__ = ["DFPatternCallback", "rewrite", "DEFAULT_MAX_ROUNDS"]

DEFAULT_MAX_ROUNDS = 100


class DFPatternCallback:
    """Subclass, set ``self.pattern`` and implement ``callback(pre, post, node_map)`` (TVM spelling).

    ``require_type``: infer types before matching; ``rewrite_once``: run in the first round only.
    """

    def __init__(self, require_type: bool = False, rewrite_once: bool = False):
        self.require_type = require_type
        self.rewrite_once = rewrite_once

    def callback(self, pre: Expr, post: Expr, node_map) -> Expr | None:
        raise NotImplementedError

    def rewrite(self, expr: Expr) -> Expr:
        return rewrite(self, expr)

    def describe(self) -> str:
        return type(self).__name__


def _apply_one(cb: DFPatternCallback, expr: Expr) -> Expr:
    from .partition import PatternGrouper, _ensure_types
    pattern = getattr(cb, "pattern", None)
    if not isinstance(pattern, DFPattern):
        raise PatternError(f"callback {cb.describe()} has no pattern",
                           hint="set self.pattern = <a DFPattern> in its __init__")
    if cb.require_type:
        _ensure_types(expr)
    grouper = PatternGrouper(pattern, expr)
    groups = grouper.run()
    if not groups:
        return expr
    by_root = {id(g.root): g for g in groups}
    memo: dict[int, Expr] = {}
    graph = grouper.graph
    for node in graph.order:
        kids = graph.inputs(node)
        new = rebuild(node, tuple(memo[id(c)] for c in kids)) if kids else node
        g = by_root.get(id(node))
        if g is not None:
            node_map = g.match.node_map.mapped(lambda e: memo.get(id(e), e))
            out = cb.callback(node, new, node_map)
            if out is not None:
                if not isinstance(out, Expr):
                    raise PatternError(f"callback {cb.describe()} returned {type(out).__name__}, not an "
                                       f"expression", hint="return a relay expression, or None to keep the node")
                new = out
        memo[id(node)] = new
    return memo[id(expr)]


def rewrite(callbacks, expr: Expr, mod=None, *, max_rounds: int = DEFAULT_MAX_ROUNDS) -> Expr:
    """Rewrite ``expr`` with ``callbacks`` (one or a list) to a fixed point."""
    if isinstance(callbacks, DFPatternCallback):
        callbacks = [callbacks]
    if not isinstance(callbacks, (list, tuple)):
        raise PatternError(f"rewrite expects a DFPatternCallback or a list of them, got {type(callbacks).__name__}")
    callbacks = list(callbacks)
    for cb in callbacks:
        if not isinstance(cb, DFPatternCallback):
            raise PatternError(f"rewrite expects DFPatternCallback objects, got {type(cb).__name__}")
    rounds = 0
    firing: list[str] = []
    while True:
        active = [cb for cb in callbacks if rounds == 0 or not cb.rewrite_once]
        if not active:
            return expr
        if rounds >= max_rounds:
            names = ", ".join(dict.fromkeys(firing)) or "none"
            raise PatternError(f"rewrite did not reach a fixed point within {max_rounds} rounds; "
                               f"callbacks still changing the graph: {names}",
                               hint="make each callback's output stop matching its pattern (or set "
                                    "rewrite_once=True)")
        rounds += 1
        firing = []
        for cb in active:
            new = _apply_one(cb, expr)
            if new is not expr and not structural_equal(new, expr):
                firing.append(cb.describe())
            expr = new
        if not firing:
            return expr
