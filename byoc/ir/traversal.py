"""The one iterative traversal everything else builds on, and the memoized rebuilding mutator.

No function here recurses over graph depth: a 100,000-node chain or Let-nest works under Python's default
recursion limit.
"""
from __future__ import annotations

from typing import Callable, Iterable

from .expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Op, RefCreate, RefRead, RefWrite, Tuple,
                   TupleGetItem, Var)

__all__ = ["children", "post_order", "rebuild", "ExprRewriter", "rewrite_post_order", "users_map",
           "let_value_first", "plain_on_calls"]


def children(node: Expr) -> tuple[Expr, ...]:
    """Operands of a node in evaluation order (binders included, so printers see them first)."""
    t = type(node)
    if t is Call:
        return node.args if type(node.op) is Op else (node.op,) + node.args
    if t in _LEAF_TYPES:
        return ()
    if isinstance(node, Call):
        if isinstance(node.op, Op):
            return node.args
        return (node.op,) + node.args
    if isinstance(node, Tuple):
        return node.fields
    if isinstance(node, TupleGetItem):
        return (node.tuple_value,)
    if isinstance(node, Let):
        return (node.var, node.value, node.body)
    if isinstance(node, If):
        return (node.cond, node.true_branch, node.false_branch)
    if isinstance(node, Function):
        return node.params + (node.body,)
    if isinstance(node, RefCreate):
        return (node.value,)
    if isinstance(node, RefRead):
        return (node.ref,)
    if isinstance(node, RefWrite):
        return (node.ref, node.value)
    return ()


_LEAF_TYPES = frozenset({Var, Constant, Op, GlobalVar})


def plain_on_calls(child_fn: Callable[[Expr], tuple[Expr, ...]]) -> Callable[[Expr], tuple[Expr, ...]]:
    """Mark a ``child_fn`` that agrees with ``children`` on calls and leaves (it only differs on functions,
    lets, ...): ``post_order`` then handles those nodes inline, without calling it (they are most nodes)."""
    child_fn._plain_on_calls = True  # type: ignore[attr-defined]
    return child_fn


def post_order(roots: Expr | Iterable[Expr], *, enter_functions: bool = True,
               child_fn: Callable[[Expr], tuple[Expr, ...]] | None = None) -> list[Expr]:
    """Every node reachable from ``roots`` exactly once, operands before users (deterministic order).

    With ``enter_functions=False`` function literals are leaves (their bodies are not visited).
    """
    if isinstance(roots, Expr):
        roots = (roots,)
    get_children = child_fn or children
    inline = child_fn is None or getattr(child_fn, "_plain_on_calls", False)
    leaf_types = _LEAF_TYPES if inline else frozenset()
    order: list[Expr] = []
    append = order.append
    seen: set[Expr] = set()  # nodes hash by identity: cheaper than a set of id()s
    mark = seen.add
    stack: list[tuple[Expr, bool]] = [(r, False) for r in reversed(list(roots))]
    pop = stack.pop
    push = stack.append
    while stack:
        node, expanded = pop()
        if expanded:
            append(node)
            continue
        if node in seen:
            continue
        mark(node)
        t = type(node)
        if t is Call and inline:
            op = node.op
            kids = node.args if type(op) is Op else (op,) + node.args
        elif t in leaf_types:
            append(node)
            continue
        else:
            if not enter_functions and isinstance(node, Function):
                append(node)
                continue
            kids = get_children(node)
        if not kids:  # a leaf is finished at once
            append(node)
            continue
        push((node, True))
        for k in reversed(kids):
            if k not in seen:
                push((k, False))
    return order


def rebuild(node: Expr, new_children: tuple[Expr, ...], keep_ret_type: bool = False) -> Expr:
    """``node`` with its operands replaced (``node`` itself when nothing changed).

    A rebuilt function keeps its ``ret_type`` only when that is known to be still right: ``keep_ret_type``
    (the caller's rewrite preserves every node's type) or a new body typed the same; otherwise it gets
    ``None`` and ``InferType`` fills it again. A stale return type would outlive the body it described.
    """
    if type(new_children) is not tuple:
        new_children = tuple(new_children)
    t = type(node)
    if t is Call:
        # Nodes compare by identity, so tuple equality means "the same operand objects".
        if type(node.op) is Op:
            if new_children == node.args:
                return node
            return Call(node.op, new_children, node.attrs, node.span)
        if new_children[0] is node.op and new_children[1:] == node.args:
            return node
        return Call(new_children[0], new_children[1:], node.attrs, node.span)
    if t is Tuple:
        if new_children == node.fields:
            return node
        return Tuple(new_children, node.span)
    if t is TupleGetItem:
        if new_children[0] is node.tuple_value:
            return node
        return TupleGetItem(new_children[0], node.index, node.span)
    old = children(node)
    if len(old) == len(new_children) and all(a is b for a, b in zip(old, new_children)):
        return node
    if isinstance(node, Call):
        if isinstance(node.op, Op):
            return node.replace(args=tuple(new_children))
        return node.replace(op=new_children[0], args=tuple(new_children[1:]))
    if isinstance(node, Tuple):
        return node.replace(fields=tuple(new_children))
    if isinstance(node, TupleGetItem):
        return node.replace(tuple_value=new_children[0])
    if isinstance(node, Let):
        return node.replace(var=new_children[0], value=new_children[1], body=new_children[2])
    if isinstance(node, If):
        return node.replace(cond=new_children[0], true_branch=new_children[1], false_branch=new_children[2])
    if isinstance(node, Function):
        n = len(node.params)
        body = new_children[n]
        ret_type = node.ret_type
        if ret_type is not None and not keep_ret_type and body is not node.body \
                and body._checked_type != ret_type:  # type: ignore[attr-defined]
            ret_type = None
        return node.replace(params=tuple(new_children[:n]), body=body, ret_type=ret_type)
    if isinstance(node, RefCreate):
        return node.replace(value=new_children[0])
    if isinstance(node, RefRead):
        return node.replace(ref=new_children[0])
    if isinstance(node, RefWrite):
        return node.replace(ref=new_children[0], value=new_children[1])
    return node


def rewrite_post_order(root: Expr, fn: Callable[[Expr, Expr], Expr | None], *,
                       enter_functions: bool = True,
                       memo: dict[int, Expr] | None = None,
                       child_fn: Callable[[Expr], tuple[Expr, ...]] | None = None,
                       preserves_types: bool = False) -> Expr:
    """Memoized bottom-up rewrite. ``fn(original, rebuilt)`` returns a replacement or ``None`` to keep
    ``rebuilt`` (the original with already-rewritten operands). Shared sub-expressions are rewritten once.

    ``child_fn`` may reorder (never add or drop) a node's operands to change the visiting order, e.g.
    ``let_value_first`` so a Let's value is rewritten before its variable is met.
    ``preserves_types`` declares that every replacement has its original's type, so rebuilt functions keep
    their ``ret_type`` (see ``rebuild``)."""
    memo = {} if memo is None else memo
    for node in post_order(root, enter_functions=enter_functions, child_fn=child_fn):
        if id(node) in memo:
            continue
        if not enter_functions and isinstance(node, Function):
            new = node
        else:
            new = rebuild(node, tuple(memo.get(id(c), c) for c in children(node)), preserves_types)
        out = fn(node, new)
        memo[id(node)] = new if out is None else out
    return memo[id(root)]


class ExprRewriter:
    """Subclass and override ``rewrite(original, rebuilt)``; call ``visit(expr)``.

    The TVM ``ExprMutator`` habit without recursion: operands are already rewritten when ``rewrite`` runs.
    """

    enter_functions = True
    preserves_types = False  # set True when every rewrite keeps its node's type (rebuilt functions keep ret_type)

    def __init__(self):
        self.memo: dict[int, Expr] = {}

    def rewrite(self, original: Expr, rebuilt: Expr) -> Expr | None:
        return None

    def visit(self, expr: Expr) -> Expr:
        return rewrite_post_order(expr, self.rewrite, enter_functions=self.enter_functions, memo=self.memo,
                                  preserves_types=self.preserves_types)


@plain_on_calls
def let_value_first(node: Expr) -> tuple[Expr, ...]:
    """``children`` with a Let's value before its variable (for passes that substitute let-bound values)."""
    if isinstance(node, Let):
        return (node.value, node.var, node.body)
    return children(node)


def users_map(root: Expr) -> dict[int, list[Expr]]:
    """For each node (by id) the list of distinct nodes that use it, in post-order."""
    users: dict[int, list[Expr]] = {}
    for node in post_order(root):
        for c in children(node):
            lst = users.setdefault(id(c), [])
            if not lst or lst[-1] is not node:
                lst.append(node)
    return users


def is_leaf(node: Expr) -> bool:
    return isinstance(node, (Var, Constant, Op, GlobalVar))
