"""The machinery TVM's CombineParallel* passes share (``combine_parallel_op.cc``): find ops of one kind that read
the same input ("branches"), group the compatible ones, replace each group of at least ``min_num_branches`` by one
combined op, extend the combined op through the element-wise / broadcast ops that follow every branch alike, and
hand each branch its slice of the combined result.

A branch is the op followed by its chain of single-consumer element-wise/broadcast calls. A ``Combiner`` (one per
pass) says which ops qualify, which pairs combine, and how to build the combined op, a combined follower and the
per-branch outputs. Everything here is one or two linear sweeps; the final substitution also rewrites inside the
new expressions, so groups fed by other groups' outputs share the combined ops (TVM leaves a stale copy)."""
from __future__ import annotations

from typing import Sequence

from ..ir.expr import Call, Expr, Function, Op
from ..ir.traversal import children, post_order, rebuild
from ..ops.registry import FusionKind, get_op_def

__all__ = ["Combiner", "combine_parallel", "attrs_equal"]

Branch = list  # list[Call]: the op first, then its followers


def attrs_equal(a, b) -> bool:
    return a == b


class Combiner:
    """What one CombineParallel* pass decides; the driver below does the rest."""

    op_name: str = ""

    def is_supported(self, call: Call) -> bool:
        return True

    def can_combine(self, a: Call, b: Call) -> bool:
        raise NotImplementedError

    def prepare(self, branches: Sequence[Branch]) -> None:
        """Called with each group before it is combined (e.g. to note its channel axis)."""

    def make_combined(self, branches: Sequence[Branch]) -> Expr:
        raise NotImplementedError

    def arg_compatible(self, a: Call, b: Call, index: int) -> bool:
        raise NotImplementedError

    def make_follower(self, data: Expr, branches: Sequence[Branch], depth: int, parent_index: int) -> Expr:
        raise NotImplementedError

    def outputs(self, data: Expr, branches: Sequence[Branch], depth: int) -> list[Expr]:
        raise NotImplementedError


def _is_op(call: Expr, name: str) -> bool:
    return type(call) is Call and type(call.op) is Op and call.op.name == name


def _elementwise(call: Call) -> bool:
    if type(call.op) is not Op:
        return False
    try:
        return get_op_def(call.op.name).fusion <= FusionKind.BROADCAST
    except Exception:  # noqa: BLE001 - an op with no definition here is not element-wise
        return False


def _groups(func: Function, c: Combiner) -> list[list[Branch]]:
    consumers: dict[int, list[Call]] = {}
    roots: dict[int, Expr] = {}  # first-seen order (TVM iterates a hash set)
    for node in post_order(func):
        if type(node) is not Call:
            continue
        if _is_op(node, c.op_name) and c.is_supported(node):
            roots.setdefault(id(node.args[0]), node.args[0])
            consumers.setdefault(id(node.args[0]), []).append(node)
        else:
            for a in node.args:
                consumers.setdefault(id(a), []).append(node)
    groups: list[list[Branch]] = []
    for rid in roots:
        mine: list[list[Branch]] = []
        for call in consumers[rid]:
            if not _is_op(call, c.op_name) or not c.is_supported(call):
                continue
            branch: Branch = [call]
            while True:
                users = consumers.get(id(branch[-1]), [])
                if len(users) != 1 or not _elementwise(users[0]):
                    break
                branch.append(users[0])
            for g in mine:
                if c.can_combine(call, g[0][0]):
                    g.append(branch)
                    break
            else:
                mine.append([branch])
        groups += mine
    return groups


def _level_ok(c: Combiner, branches: Sequence[Branch], depth: int, parent_index: int) -> bool:
    call = branches[0][depth]
    for b in branches[1:]:
        other = b[depth]
        if other.op is not call.op and other.op != call.op:
            return False
        if not attrs_equal(other.attrs, call.attrs) or len(other.args) != len(call.args):
            return False
        if other.args[parent_index] is not b[depth - 1]:
            return False
        for i in range(len(call.args)):
            if i != parent_index and not c.arg_compatible(call, other, i):
                return False
    return True


def _combine_group(c: Combiner, branches: list[Branch], subst: dict[int, Expr]) -> None:
    c.prepare(branches)
    combined = c.make_combined(branches)
    depth = min(len(b) for b in branches)
    i = 1
    while i < depth:
        prev, cur = branches[0][i - 1], branches[0][i]
        parent_index = next((k for k, a in enumerate(cur.args) if a is prev), None)
        if parent_index is None or not _level_ok(c, branches, i, parent_index):
            break
        combined = c.make_follower(combined, branches, i, parent_index)
        i += 1
    for b, out in zip(branches, c.outputs(combined, branches, i - 1)):
        subst.setdefault(id(b[i - 1]), out)  # as TVM: the first group to claim a node keeps it


def _substitute(func: Function, subst: dict[int, Expr]) -> Function:
    def kids(node: Expr) -> tuple[Expr, ...]:
        r = subst.get(id(node))
        return (r,) if r is not None else children(node)

    memo: dict[int, Expr] = {}
    for node in post_order(func, child_fn=kids):
        r = subst.get(id(node))
        memo[id(node)] = memo[id(r)] if r is not None else rebuild(node, tuple(memo[id(k)] for k in children(node)))
    out = memo[id(func)]
    assert isinstance(out, Function)
    return out


def combine_parallel(func: Function, c: Combiner, min_num_branches: int) -> Function:
    subst: dict[int, Expr] = {}
    for g in _groups(func, c):
        if len(g) >= min_num_branches:
            _combine_group(c, g, subst)
    return _substitute(func, subst) if subst else func

