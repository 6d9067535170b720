"""An indexed view of an expression graph: topological index, users, and post-dominators.

Built once per matching run from the iterative post-order. Post-dominators ("every path from a node to the
graph's output passes through X") are computed lazily, only when a dominator pattern or an escaping-interior
check needs them.
"""
from __future__ import annotations

from ...ir.expr import Call, Expr, Function, Op
from ...ir.traversal import children, plain_on_calls, post_order

__all__ = ["IndexedGraph", "is_pre_partitioned"]


def is_pre_partitioned(node: Expr) -> bool:
    """Functions produced by a pattern partition (composites) are never matched again, nor entered."""
    return isinstance(node, Function) and "PartitionedFromPattern" in node.attrs


@plain_on_calls
def _graph_children(node: Expr) -> tuple[Expr, ...]:
    if type(node) is Call:  # the common case; only functions are ever pre-partitioned
        return node.args if type(node.op) is Op else (node.op,) + node.args
    if is_pre_partitioned(node):
        return ()
    return children(node)


class IndexedGraph:
    """Nodes of ``root`` in post-order (operands first), composite bodies excluded."""

    def __init__(self, root: Expr):
        self.root = root
        self.order: list[Expr] = post_order(root, child_fn=_graph_children)
        self._index: dict[Expr, int] | None = None
        self._users: list[list[int]] | None = None
        self._ipdom: list[int] | None = None
        self._op_calls: dict[str, list[int]] | None = None

    def __len__(self) -> int:
        return len(self.order)

    @property
    def index(self) -> dict[Expr, int]:
        """Position of each node in ``order`` (keyed by the node: nodes hash by identity). Built on first use."""
        if self._index is None:
            self._index = {n: i for i, n in enumerate(self.order)}
        return self._index

    def __contains__(self, node: Expr) -> bool:
        return node in self.index

    def inputs(self, node: Expr) -> tuple[Expr, ...]:
        return _graph_children(node)

    @property
    def users(self) -> list[list[int]]:
        """users[i] = distinct indices of the nodes that take node i as an operand."""
        if self._users is None:
            users: list[list[int]] = [[] for _ in self.order]
            index = self.index
            for i, node in enumerate(self.order):
                for c in _graph_children(node):
                    lst = users[index[c]]
                    if not lst or lst[-1] != i:
                        lst.append(i)
            self._users = users
        return self._users

    def _calls_by_op(self) -> dict[str, list[int]]:
        if self._op_calls is None:
            by_op: dict[str, list[int]] = {}
            for i, node in enumerate(self.order):
                if isinstance(node, Call) and isinstance(node.op, Op):
                    by_op.setdefault(node.op.name, []).append(i)
            self._op_calls = by_op
        return self._op_calls

    def op_names(self) -> frozenset[str]:
        """Names of the ops called in the graph."""
        return frozenset(self._calls_by_op())

    def op_call_indices(self, names) -> list[int]:
        """Indices of the calls of the ops ``names``, descending (where a search for match roots looks)."""
        by_op = self._calls_by_op()
        out: list[int] = []
        for name in names:
            out.extend(by_op.get(name, ()))
        out.sort(reverse=True)
        return out

    def users_of(self, node: Expr) -> list[Expr]:
        return [self.order[u] for u in self.users[self.index[node]]]

    @property
    def ipdom(self) -> list[int]:
        """Immediate post-dominator index per node (-1 for the root and nodes that only reach the exit)."""
        if self._ipdom is None:
            n = len(self.order)
            users = self.users
            ipdom = [-1] * n
            depth = [0] * n
            for i in range(n - 1, -1, -1):
                us = users[i]
                if not us:
                    continue
                cand = us[0]
                for u in us[1:]:
                    cand = self._lca(cand, u, ipdom, depth)
                    if cand < 0:
                        break
                ipdom[i] = cand
                depth[i] = depth[cand] + 1 if cand >= 0 else 0
            self._ipdom = ipdom
        return self._ipdom

    @staticmethod
    def _lca(a: int, b: int, ipdom: list[int], depth: list[int]) -> int:
        while a != b:
            if a < 0 or b < 0:
                return -1
            if depth[a] > depth[b] or (depth[a] == depth[b] and a < b):
                a = ipdom[a]
            else:
                b = ipdom[b]
        return a

    def post_dominates(self, dom: Expr, node: Expr) -> bool:
        """True when every path from ``node`` to the output passes through ``dom`` (``dom`` included)."""
        d = self.index.get(dom)
        i = self.index.get(node)
        if d is None or i is None:
            return False
        ipdom = self.ipdom
        while 0 <= i < d:
            i = ipdom[i]
        return i == d
