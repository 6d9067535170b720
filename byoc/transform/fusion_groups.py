"""TVM's operator-fusion grouping (Relay ``FuseOps``'s GraphPartitioner), iterative.

The function body becomes an indexed forward graph (Var, Constant, Call, Tuple and TupleGetItem nodes in post
order, each with its consumer edges); a post-dominator tree is built over it; then three phases merge each node's
group into its immediate post-dominator's group when every node on the paths between them has an allowed
pattern (TOpPattern kinds: ELEMWISE < BROADCAST < INJECTIVE < COMM_REDUCE < OUT_ELEMWISE_FUSABLE < TUPLE <
OPAQUE):

* phase 0: an OUT_ELEMWISE_FUSABLE op (conv2d, dense) takes elementwise/broadcast consumers; ELEMWISE/BROADCAST
  ops fuse into injective or reduction consumers;
* phase 1: INJECTIVE ops and tuples fuse into injective consumers;
* phase 2: injective ops fuse into an intermediate tuple's group.

Groups are capped at ``max_depth`` nodes (TVM's ``relay.FuseOps.max_depth``, 256). ``opt_level`` 0 makes every
node its own group. Everything here walks explicit stacks: a 100,000-op chain works.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.expr import Call, Constant, Expr, Op, Tuple, TupleGetItem, Var
from ..ir.traversal import children, post_order
from ..ir.types import TensorType, TupleType
from ..ops.registry import FusionKind, get_op_def

__all__ = ["FusionGroup", "partition_groups", "MAX_FUSE_DEPTH"]

MAX_FUSE_DEPTH = 256
_ELEMWISE, _BROADCAST, _INJECTIVE = FusionKind.ELEMWISE, FusionKind.BROADCAST, FusionKind.INJECTIVE
_COMM_REDUCE, _OUT_EWISE, _TUPLE, _OPAQUE = (FusionKind.COMM_REDUCE, FusionKind.OUT_ELEMWISE_FUSABLE,
                                              FusionKind.TUPLE, FusionKind.OPAQUE)
_SIMPLE_CONST_DTYPES = ("int32", "int64", "float32", "float64", "bool")
_INDEXED = (Var, Constant, Call, Tuple, TupleGetItem)


@dataclass(eq=False)
class FusionGroup:
    """A union-find group; ``find()`` gives the representative. ``root`` is the node whose value leaves it."""
    pattern: FusionKind
    root: Expr
    anchor: Expr | None = None
    num_nodes: int = 1
    parent: "FusionGroup | None" = field(default=None, repr=False)

    def find(self) -> "FusionGroup":
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while node is not root:  # path compression
            nxt = node.parent
            node.parent = root
            node = nxt
        return root


def _combine(a: FusionKind, b: FusionKind) -> FusionKind:
    return a if a > b else b


def _is_simple_scalar(c: Constant) -> bool:
    data = np.asarray(c.data)
    return data.ndim == 0 and str(data.dtype) in _SIMPLE_CONST_DTYPES


def _is_tensor(t) -> bool:
    return isinstance(t, TensorType)


class _Graph:
    """Indexed forward graph: ``nodes`` in post order; ``outputs[i]`` = [(consumer index, edge pattern)]."""

    def __init__(self, body: Expr):
        self.nodes = [n for n in post_order(body, enter_functions=False) if isinstance(n, _INDEXED)]
        self.index = {id(n): i for i, n in enumerate(self.nodes)}
        n = len(self.nodes)
        self.pattern = [_OPAQUE] * n
        self.outputs: list[list[tuple[int, FusionKind]]] = [[] for _ in range(n)]
        self.extern_ref = [False] * n
        self._extern(body)
        for node in post_order(body, enter_functions=False):
            self._add_edges(node)

    def _extern(self, e: Expr) -> None:
        i = self.index.get(id(e))
        if i is not None:
            self.extern_ref[i] = True

    def _edge(self, e: Expr, consumer: int, pattern: FusionKind) -> None:
        i = self.index.get(id(e))
        if i is not None:
            self.outputs[i].append((consumer, pattern))

    def _add_edges(self, node: Expr) -> None:
        i = self.index.get(id(node))
        if isinstance(node, Constant):
            self.pattern[i] = _ELEMWISE if _is_simple_scalar(node) else _OPAQUE
        elif isinstance(node, Call):
            if isinstance(node.op, Op):
                pat = FusionKind(get_op_def(node.op.name).fusion)
            else:
                pat = _OPAQUE
                self._extern(node.op)
            self.pattern[i] = pat
            rtype = node._checked_type
            for a in node.args:
                edge = pat
                if edge == _BROADCAST and _is_tensor(rtype) and _is_tensor(a._checked_type) and \
                        tuple(rtype.shape) == tuple(a._checked_type.shape):
                    edge = _ELEMWISE
                self._edge(a, i, edge)
        elif isinstance(node, Tuple):
            self.pattern[i] = _TUPLE
            for f in node.fields:
                if _is_tensor(f._checked_type):
                    self._edge(f, i, _INJECTIVE)
                else:
                    self._extern(f)
        elif isinstance(node, TupleGetItem):
            tt = node.tuple_value._checked_type
            if isinstance(tt, TupleType) and all(_is_tensor(t) for t in tt.fields):
                self.pattern[i] = _INJECTIVE
                self._edge(node.tuple_value, i, _INJECTIVE)
            else:
                self._extern(node.tuple_value)
        elif i is None:  # Let, If, function literals...: their operands escape
            for c in children(node):
                self._extern(c)


class _PostDomTree:
    def __init__(self, g: _Graph):
        n = len(g.nodes)
        self.parent: list[int | None] = [None] * n
        self.depth = [1] * n
        self.pattern = [_OPAQUE] * n
        for i in range(n - 1, -1, -1):
            if g.extern_ref[i] or not g.outputs[i]:
                continue
            pat = _ELEMWISE
            outs = g.outputs[i]
            par = outs[0][0]
            for consumer, _ in outs[1:]:
                par, pat = self._lca(par, consumer, pat)
            self.parent[i] = par
            self.depth[i] = self.depth[par] + 1 if par is not None else 1
            self.pattern[i] = pat

    def _lca(self, a, b, pat):
        # As TVM: the combined pattern collects the tree-edge patterns walked on the way up.
        while a != b:
            if a is None or b is None:
                return None, pat
            da, db = self.depth[a], self.depth[b]
            if da < db:
                pat = _combine(pat, self.pattern[b])
                b = self.parent[b]
            elif db < da:
                pat = _combine(pat, self.pattern[a])
                a = self.parent[a]
            else:
                pat = _combine(_combine(pat, self.pattern[a]), self.pattern[b])
                a, b = self.parent[a], self.parent[b]
        return a, pat


class _Partitioner:
    def __init__(self, g: _Graph, max_depth: int):
        self.g = g
        self.max_depth = max_depth
        self.groups = [FusionGroup(g.pattern[i], g.nodes[i], g.nodes[i] if g.pattern[i] == _OUT_EWISE else None)
                       for i in range(len(g.nodes))]

    def _walk(self, src: int, sink: int):
        """Nodes on the paths from ``src``'s consumers up to ``sink`` (sink included, not passed)."""
        seen: set[int] = set()
        stack = [c for c, _ in reversed(self.g.outputs[src])]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            yield i
            if i != sink:
                stack.extend(c for c, _ in reversed(self.g.outputs[i]))

    def check_path(self, src: int, sink: int, cond) -> bool:
        return all(cond(self.groups[i].find().pattern, i == sink) for i in self._walk(src, sink))

    def commit(self, src: int, sink: int) -> None:
        target = self.groups[sink]
        self._merge(self.groups[src], target)
        for i in self._walk(src, sink):
            if i != sink:
                self._merge(self.groups[i], target)

    def count_with_child(self, child: int, dom_parent: int) -> int:
        total = self.groups[dom_parent].find().num_nodes + self.groups[child].num_nodes
        return total + sum(self.groups[i].num_nodes for i in self._walk(child, dom_parent) if i != dom_parent)

    @staticmethod
    def _merge(child: FusionGroup, parent: FusionGroup) -> None:
        child, parent = child.find(), parent.find()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchor is not None:
            parent.anchor = child.anchor
            parent.pattern = _combine(child.pattern, parent.pattern)

    def run(self, tree: _PostDomTree, phase: int) -> None:
        for i, group in enumerate(self.groups):
            if group.pattern == _OPAQUE:
                continue
            par = tree.parent[i]
            if par is None:
                continue
            if self.count_with_child(i, par) > self.max_depth:
                continue
            par_group = self.groups[par]
            if phase == 2:
                if group.pattern > _INJECTIVE:
                    continue
                root = par_group.find()
                if root.pattern == _TUPLE:
                    continue
                if par_group.pattern == _TUPLE and root.pattern <= _INJECTIVE and \
                        self.check_path(i, par, lambda k, sink: k <= _INJECTIVE):
                    self.commit(i, par)
                continue
            if group.find() is par_group.find() or par_group.pattern == _TUPLE:
                continue
            if group.pattern == _OUT_EWISE:
                if phase == 0 and tree.pattern[i] == _ELEMWISE and \
                        self.check_path(i, par, lambda k, sink: k <= _BROADCAST):
                    self.commit(i, par)
            elif group.pattern <= _BROADCAST:
                if (tree.pattern[i] <= _INJECTIVE or tree.pattern[i] == _COMM_REDUCE) and \
                        self.check_path(i, par, _broadcast_cond):
                    self.commit(i, par)
            elif group.pattern in (_INJECTIVE, _TUPLE):
                if phase == 1 and self.check_path(i, par, lambda k, sink: k <= _INJECTIVE):
                    self.commit(i, par)


def _broadcast_cond(kind: FusionKind, is_sink: bool) -> bool:
    if not is_sink:
        return kind <= _INJECTIVE
    return kind <= _INJECTIVE or kind in (_COMM_REDUCE, _OUT_EWISE)


def partition_groups(body: Expr, opt_level: int = 2, max_depth: int = MAX_FUSE_DEPTH
                     ) -> tuple[list[Expr], dict[int, FusionGroup]]:
    """``(nodes in post order, id(node) -> its group's representative)`` for a typed function body."""
    g = _Graph(body)
    part = _Partitioner(g, max_depth)
    if opt_level > 0:
        tree = _PostDomTree(g)
        for phase in range(3):
            part.run(tree, phase)
    return g.nodes, {id(n): part.groups[i].find() for i, n in enumerate(g.nodes)}
