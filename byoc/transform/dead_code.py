"""DeadCodeElimination: drop Let bindings whose variable is never used (TVM's ``dead_code.cc``).

Pure dataflow has nothing to eliminate: an unused node of a DAG is simply unreachable. Only ``Let`` bindings
can be dead. Use counting follows TVM: a let-bound value counts as evaluated only once its variable is used
from live code, so a chain of bindings used only by dead bindings is removed as a whole; a node is visited at
most twice, so counts saturate at 2; a use inside a function literal nested deeper than the binding counts
twice (the function may be called many times). With ``inline_once=True`` a binding used exactly once is
inlined at its use. Every op of this IR is pure, so TVM's purity analysis reduces to "everything is pure".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.expr import Expr, Function, Let, Var
from ..ir.module import IRModule
from ..ir.traversal import children, let_value_first, post_order, rebuild
from .pass_infra import ModulePass, PassContext

__all__ = ["DeadCodeElimination", "eliminate_dead_code"]


def _count_uses(expr: Expr, let_of_var: dict[int, Let]) -> dict[int, int]:
    """Saturating use counts of let variables reachable from live code (TVM's UsageVisitor, iteratively)."""
    uses: dict[int, int] = {}
    let_level: dict[int, int] = {}
    visits: dict[int, int] = {}
    stack: list[tuple[Expr, int]] = [(expr, 0)]
    while stack:
        node, level = stack.pop()
        seen = visits.get(id(node), 0)
        if seen >= 2:
            continue  # two visits already decide "used more than once"
        visits[id(node)] = seen + 1
        if isinstance(node, Let):
            let_level.setdefault(id(node.var), level)
            stack.append((node.body, level))  # the value is visited once its variable is used
        elif isinstance(node, Var):
            let = let_of_var.get(id(node))
            if let is None:
                continue
            n = uses.get(id(node), 0) + 1
            if n == 1:
                stack.append((let.value, let_level.get(id(node), level)))
            if let_level.get(id(node), level) < level:
                n += 1
            uses[id(node)] = n
        elif isinstance(node, Function):
            stack.append((node.body, level + 1))
        else:
            stack.extend((c, level) for c in reversed(children(node)))
    return uses


def eliminate_dead_code(expr: Expr, inline_once: bool = False) -> Expr:
    order = post_order(expr, child_fn=let_value_first)
    let_of_var = {id(n.var): n for n in order if isinstance(n, Let)}
    if not let_of_var:
        return expr
    uses = _count_uses(expr, let_of_var)

    def dropped(let: Let) -> bool:
        n = uses.get(id(let.var), 0)
        return n == 0 or (n == 1 and inline_once)

    memo: dict[int, Expr] = {}
    for node in order:
        if isinstance(node, Let) and dropped(node):
            memo[id(node)] = memo[id(node.body)]
            continue
        if isinstance(node, Var) and id(node) in let_of_var and dropped(let_of_var[id(node)]):
            # Used once (inline_once): let_value_first rewrote the value before this variable.
            memo[id(node)] = memo[id(let_of_var[id(node)].value)]
            continue
        # Type-preserving: a let variable has its value's type.
        memo[id(node)] = rebuild(node, tuple(memo.get(id(c), c) for c in children(node)), keep_ret_type=True)
    return memo[id(expr)]


@dataclass(frozen=True)
class DeadCodeElimination(ModulePass):
    """``relay.transform.DeadCodeElimination(inline_once=False)``."""

    inline_once: bool = False

    name: ClassVar[str] = "DeadCodeElimination"
    opt_level: ClassVar[int] = 1

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod.copy()
        for gv, func in mod.items():
            new = eliminate_dead_code(func, self.inline_once)
            assert isinstance(new, Function)
            out[gv] = new
        return out
