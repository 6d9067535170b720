"""DeadCodeElimination: drop Let bindings whose variable is never used (TVM's ``dead_code.cc``).

Pure dataflow has nothing to eliminate: an unused node of a DAG is simply unreachable. Only ``Let`` bindings
can be dead. Use counting follows TVM: a let-bound value counts as evaluated only once its variable is used
from live code, so a chain of bindings used only by dead bindings is removed as a whole; a node is visited at
most twice, so counts saturate at 2; a use inside a function literal nested deeper than the binding counts
twice (the function may be called many times). With ``inline_once=True`` a binding used exactly once is
inlined at its use. Every op of this IR is pure; only references are effects (TVM's purity analysis): a
binding whose value reads or writes a reference, or calls a function (which might), is neither dropped nor
inlined when the function holds any ``RefRead``/``RefWrite``. Creating a reference is pure.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.expr import Call, Expr, Function, Let, Op, RefRead, RefWrite, Var
from ..ir.module import IRModule
from ..ir.traversal import children, let_value_first, post_order, rebuild
from .pass_infra import ModulePass, PassContext

__all__ = ["DeadCodeElimination", "eliminate_dead_code"]


def _impure_lets(order: list[Expr], lets: list[Let], module_effects: bool) -> set[int]:
    """Ids of the lets whose value has an effect: it reads or writes a reference, or calls a function, when
    this function or the module (``module_effects``) holds any reference access. One bottom-up pass."""
    effect_types = (RefRead, RefWrite)
    if not module_effects and not any(isinstance(n, effect_types) for n in order):
        return set()
    effectful: set[int] = set()
    for n in order:  # operands first, function bodies included
        if isinstance(n, effect_types) or (isinstance(n, Call) and not isinstance(n.op, Op)) or any(
                id(c) in effectful for c in children(n)):
            effectful.add(id(n))
    return {id(let) for let in lets if id(let.value) in effectful}


def _module_has_effects(mod: IRModule) -> bool:
    return any(isinstance(n, (RefRead, RefWrite)) for _, f in mod.items() for n in post_order(f))


def _count_uses(expr: Expr, let_of_var: dict[int, Let], impure: set[int]) -> dict[int, int]:
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
            if id(node) in impure:
                stack.append((node.value, level))  # an effect is always evaluated
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


def eliminate_dead_code(expr: Expr, inline_once: bool = False, module_effects: bool = False) -> Expr:
    order = post_order(expr, child_fn=let_value_first)
    let_of_var = {id(n.var): n for n in order if isinstance(n, Let)}
    if not let_of_var:
        return expr
    impure = _impure_lets(order, list(let_of_var.values()), module_effects)
    uses = _count_uses(expr, let_of_var, impure)

    def dropped(let: Let) -> bool:
        if id(let) in impure:
            return False
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
        effects = _module_has_effects(mod)  # then a call of any global function may have an effect
        for gv, func in mod.items():
            new = eliminate_dead_code(func, self.inline_once, effects)
            assert isinstance(new, Function)
            out[gv] = new
        return out
