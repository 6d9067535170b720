"""ToANormalForm and ToGraphNormalForm: converting between Let-bound programs and dataflow graphs.

Graph normal form (GNF) is how the frontends build programs: a DAG in which sharing is object identity.
A-normal form (ANF) makes sharing and evaluation order explicit: every non-atomic sub-expression is bound to
a variable by a ``Let`` and operands are atoms.

Scoping follows TVM's ``to_a_normal_form.cc``: If branches and function bodies open scopes, and each value is
bound in the lowest common ancestor of the scopes that use it. So a value used only inside a closure (or a
branch) stays inside it, while a value also used outside is bound outside and computed once. Differences from
TVM, both to keep later passes working: atoms are variables, global variables, ops, constants and *opaque*
function literals (``Primitive``/``Composite``), so composites stay direct call targets with their bodies
untouched (TVM let-binds constants and every function); and a ``Let`` body continues its scope instead of
opening a nested one, so ANF of a Let chain is a flat Let chain rather than Lets nested in Let values.

ToGraphNormalForm substitutes every let-bound value for its variable and drops the Let. That is sound for pure
values; a binding whose value reads or writes a reference (or, in a function that does, calls a function) is
kept, so the effect still happens, in its order (TVM's pass would drop it). A recursive binding (a value that
mentions its own variable) cannot be expressed in a DAG and is kept, as TVM keeps it.

Later passes -- the pattern language, MergeComposite, AnnotateTarget, MergeCompilerRegions, PartitionGraph, the
CPU backend -- match and rewrite dataflow and expect graph normal form: a let-bound operand would hide the
producer behind a variable. They should call ``require_graph_normal_form(mod)`` (converting when a Let is present,
a no-op otherwise), or run ``ToGraphNormalForm()`` first in their Sequential.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.expr import REF_NODES, Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.scopes import Scope, lca
from ..ir.traversal import children, let_value_first, post_order, rebuild
from .dead_code import _impure_lets
from .fold_constant import is_opaque_function
from .pass_infra import FunctionPass, PassContext

__all__ = ["ToANormalForm", "ToGraphNormalForm", "to_a_normal_form", "to_graph_normal_form", "has_let",
           "require_graph_normal_form"]


# ----------------------------------------------------------------------------------------------- graph form

def to_graph_normal_form(expr: Expr) -> Expr:
    """``expr`` with every non-recursive Let removed and its variable replaced by the bound value."""
    order = post_order(expr, child_fn=let_value_first)
    let_of_var = {id(n.var): n for n in order if isinstance(n, Let)}
    # ids of Lets kept: recursive ones (whose value mentions their own variable) and effects
    recursive: set[int] = _impure_lets(order, list(let_of_var.values()), False) if let_of_var else set()
    memo: dict[int, Expr] = {}
    for node in order:
        if isinstance(node, Var) and id(node) in let_of_var:
            let = let_of_var[id(node)]
            # let_value_first: a non-recursive value is done before its variable
            if id(let.value) in memo and id(let) not in recursive:
                memo[id(node)] = memo[id(let.value)]
                continue
            recursive.add(id(let))
        elif isinstance(node, Let) and id(node) not in recursive:
            memo[id(node)] = memo[id(node.body)]
            continue
        # Type-preserving: a let variable has its value's type.
        memo[id(node)] = rebuild(node, tuple(memo.get(id(c), c) for c in children(node)), keep_ret_type=True)
    return memo[id(expr)]


def has_let(expr_or_mod) -> bool:
    if isinstance(expr_or_mod, IRModule):
        return any(has_let(f) for _, f in expr_or_mod.items())
    return any(isinstance(n, Let) for n in post_order(expr_or_mod))


def require_graph_normal_form(mod: IRModule) -> IRModule:
    """``mod`` in graph normal form: converted when some function has a Let, unchanged otherwise."""
    if not has_let(mod):
        return mod
    return ToGraphNormalForm()(mod)


# ------------------------------------------------------------------------------------------------ A-normal form

class _LetList:
    """The bindings of one scope (function body, If branch or top level), in evaluation order."""

    __slots__ = ("bindings",)

    def __init__(self):
        self.bindings: list[tuple[Var, Expr]] = []

    def wrap(self, result: Expr) -> Expr:
        for var, value in reversed(self.bindings):
            result = Let(var, value, result)
        return result


def _new_scope(parent: Scope | None) -> Scope:
    return Scope(parent, _LetList())


def _is_atom(node: Expr) -> bool:
    return isinstance(node, (Var, GlobalVar, Op, Constant)) or is_opaque_function(node)


def _anf_children(node: Expr) -> tuple[Expr, ...]:
    if is_opaque_function(node):
        return ()
    return let_value_first(node)


def _assign_scopes(root: Expr, order: list[Expr]) -> tuple[dict[int, Scope], dict[int, tuple[Scope, ...]]]:
    """Scope of every node (LCA of the scopes of its uses) and the sub-scopes each If/Function opens.

    Parents come before children in reversed post-order, so a node's uses are all known when it is reached."""
    top = _new_scope(None)
    incoming: dict[int, Scope] = {id(root): top}
    scope: dict[int, Scope] = {}
    opened: dict[int, tuple[Scope, ...]] = {}
    for node in reversed(order):
        if _is_atom(node):
            continue  # atoms are never bound; binders (parameters, let variables) have no incoming edges
        s = incoming[id(node)]
        scope[id(node)] = s
        if isinstance(node, If):
            branches = (_new_scope(s), _new_scope(s))
            opened[id(node)] = branches
            edges = ((node.cond, s), (node.true_branch, branches[0]), (node.false_branch, branches[1]))
        elif isinstance(node, Function):
            body_scope = _new_scope(s)
            opened[id(node)] = (body_scope,)
            edges = ((node.body, body_scope),)
        elif isinstance(node, Let):
            edges = ((node.value, s), (node.body, s))
        else:
            edges = tuple((c, s) for c in children(node))
        for child, edge_scope in edges:
            prev = incoming.get(id(child))
            incoming[id(child)] = edge_scope if prev is None else lca(prev, edge_scope)
    return scope, opened


def to_a_normal_form(expr: Expr) -> Expr:
    """``expr`` (a function body or a function) in A-normal form; see the module docstring for scoping."""
    if isinstance(expr, Function) and not is_opaque_function(expr):
        return expr.replace(body=to_a_normal_form(expr.body))
    order = post_order(expr, child_fn=_anf_children)
    scope, opened = _assign_scopes(expr, order)
    let_of_var = {id(n.var): n for n in order if isinstance(n, Let)}
    let_of_value: dict[int, Let] = {}
    for n in order:
        if isinstance(n, Let):
            let_of_value.setdefault(id(n.value), n)
    bound: set[int] = set()  # let variables already given a binding
    atom: dict[int, Expr] = {}

    def bind(node: Expr, value: Expr) -> Var:
        let = let_of_value.get(id(node))
        if let is not None and id(let.var) not in bound:
            var = let.var  # bind the value straight to the program's own variable
            bound.add(id(var))
        else:
            var = Var("x")
        scope[id(node)].payload.bindings.append((var, value))
        return var

    for node in order:
        if _is_atom(node):
            atom[id(node)] = node
            let = let_of_var.get(id(node))
            if let is not None and id(node) not in bound:  # an atomic value, or a value shared by two Lets
                bound.add(id(node))
                scope[id(let)].payload.bindings.append((node, atom[id(let.value)]))
            continue
        if isinstance(node, Let):
            atom[id(node)] = atom[id(node.body)]
            continue
        if isinstance(node, If):
            then_scope, else_scope = opened[id(node)]
            new: Expr = node.replace(cond=atom[id(node.cond)],
                                     true_branch=then_scope.payload.wrap(atom[id(node.true_branch)]),
                                     false_branch=else_scope.payload.wrap(atom[id(node.false_branch)]))
        elif isinstance(node, Function):
            (body_scope,) = opened[id(node)]
            new = node.replace(body=body_scope.payload.wrap(atom[id(node.body)]))
        else:
            assert isinstance(node, (Call, Tuple, TupleGetItem) + REF_NODES), type(node)
            new = rebuild(node, tuple(atom[id(c)] for c in children(node)))
        atom[id(node)] = bind(node, new)
    return scope[id(expr)].payload.wrap(atom[id(expr)]) if id(expr) in scope else expr


# ---------------------------------------------------------------------------------------------------- passes

@dataclass(frozen=True)
class ToGraphNormalForm(FunctionPass):
    """``relay.transform.ToGraphNormalForm()``: remove Lets by substituting their values."""

    name: ClassVar[str] = "ToGraphNormalForm"
    opt_level: ClassVar[int] = 1

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = to_graph_normal_form(func)
        assert isinstance(out, Function)
        return out


@dataclass(frozen=True)
class ToANormalForm(FunctionPass):
    """``relay.transform.ToANormalForm()``: bind every non-atomic sub-expression with a Let."""

    name: ClassVar[str] = "ToANormalForm"
    opt_level: ClassVar[int] = 1

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = to_a_normal_form(func)
        assert isinstance(out, Function)
        return out
