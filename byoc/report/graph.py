"""The model as a tensor-level DAG for drawing, and a layered layout computed without recursion.

Nodes are named tensors: the calls the TFLite frontend tagged with one ``Span`` (a ``pad → conv → bias →
requantize → clip`` chain) collapse into one node; untagged calls are nodes of their own; ``main``'s parameters
are input nodes. Placement comes from the partitioner's report (the partition computing the tensor, or cpu).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Call, Op, Span, Tuple, TupleGetItem, Var
from ..ir.traversal import post_order
from ..ir.types import TensorType

__all__ = ["GraphNode", "ModelGraph", "model_graph", "layered_layout", "Layout"]


@dataclass(frozen=True)
class GraphNode:
    id: int
    name: str
    ops: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: str
    placement: str        # "input", "cpu" or a partition name
    reason: str = ""
    macs: int = 0


@dataclass(frozen=True)
class ModelGraph:
    nodes: tuple[GraphNode, ...]
    edges: tuple[tuple[int, int], ...]


def _type_of(node) -> tuple[tuple[int, ...], str]:
    t = getattr(node, "_checked_type", None) or getattr(node, "type_annotation", None)
    if isinstance(t, TensorType):
        return tuple(int(d) for d in t.shape), str(t.dtype)
    return (), ""


def model_graph(mod, placement: dict[str, str], reasons: dict[str, str]) -> ModelGraph:
    """``mod``: the imported (type-inferred) module; ``placement``/``reasons`` by tensor name."""
    from ..ops.macs import macs_of
    main = mod["main"]
    key_of: dict[int, str] = {}       # call id -> group key
    members: dict[str, list[Call]] = {}
    inputs: dict[int, str] = {}
    for p in main.params:
        inputs[id(p)] = f"input:{p.name_hint}"
    for n in post_order(main.body, enter_functions=False):
        if isinstance(n, Call) and isinstance(n.op, Op):
            key = n.span.source if isinstance(n.span, Span) else f"#{len(members)}:{n.op.name}"
            key_of[id(n)] = key
            members.setdefault(key, []).append(n)
    ids: dict[str, int] = {}
    nodes: list[GraphNode] = []
    for p in main.params:
        shape, dtype = _type_of(p)
        ids[f"input:{p.name_hint}"] = len(nodes)
        nodes.append(GraphNode(len(nodes), p.name_hint, ("input",), shape, dtype, "input"))
    for key, calls in members.items():
        shape, dtype = _type_of(calls[-1])
        name = key if not key.startswith("#") else calls[-1].op.name
        where = placement.get(key, "cpu")
        ids[key] = len(nodes)
        nodes.append(GraphNode(len(nodes), name, tuple(c.op.name for c in calls), shape, dtype, where,
                               reasons.get(key, "") if where == "cpu" else "", sum(macs_of(c) for c in calls)))
    edges: dict[tuple[int, int], None] = {}
    for key, calls in members.items():
        dst = ids[key]
        for c in calls:
            stack = list(c.args)
            while stack:
                a = stack.pop()
                if isinstance(a, Tuple):
                    stack.extend(a.fields)
                elif isinstance(a, TupleGetItem):
                    stack.append(a.tuple_value)
                elif isinstance(a, Var) and id(a) in inputs:
                    edges[(ids[inputs[id(a)]], dst)] = None
                elif isinstance(a, Call) and id(a) in key_of and ids[key_of[id(a)]] != dst:
                    edges[(ids[key_of[id(a)]], dst)] = None
    return ModelGraph(tuple(nodes), tuple(sorted(edges)))


@dataclass(frozen=True)
class Layout:
    x: tuple[float, ...]
    y: tuple[float, ...]
    width: float
    height: float
    layer: tuple[int, ...]


def _topological(n: int, edges) -> list[int]:
    indeg = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        succ[a].append(b)
        indeg[b] += 1
    ready = [i for i in range(n) if indeg[i] == 0]
    ready.reverse()
    order: list[int] = []
    while ready:
        v = ready.pop()
        order.append(v)
        for w in reversed(succ[v]):
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    if len(order) < n:  # a cycle cannot come from dataflow, but never lose nodes
        seen = set(order)
        order += [i for i in range(n) if i not in seen]
    return order


def layered_layout(graph: ModelGraph, node_w: float = 170, node_h: float = 34, gap_x: float = 24,
                   gap_y: float = 30, sweeps: int = 4, margin_right: float = 110) -> Layout:
    """Longest-path layering top to bottom, then barycentre ordering sweeps within layers."""
    n = len(graph.nodes)
    order = _topological(n, graph.edges)
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for a, b in graph.edges:
        preds[b].append(a)
        succs[a].append(b)
    layer = [0] * n
    for v in order:
        for p in preds[v]:
            layer[v] = max(layer[v], layer[p] + 1)
    depth = max(layer, default=-1) + 1
    rows: list[list[int]] = [[] for _ in range(depth)]
    topo_index = {v: i for i, v in enumerate(order)}
    for v in order:
        rows[layer[v]].append(v)
    pos = [0.0] * n
    for r in rows:
        for i, v in enumerate(r):
            pos[v] = float(i)
    for s in range(sweeps):
        down = s % 2 == 0
        seq = range(1, depth) if down else range(depth - 2, -1, -1)
        for li in seq:
            r = rows[li]
            for v in r:
                nb = preds[v] if down else succs[v]
                pos[v] = sum(pos[u] for u in nb) / len(nb) if nb else pos[v]
            r.sort(key=lambda v: (pos[v], topo_index[v]))
            for i, v in enumerate(r):
                pos[v] = float(i)
    widest = max((len(r) for r in rows), default=1)
    width = widest * (node_w + gap_x) + gap_x + margin_right
    xs = [0.0] * n
    ys = [0.0] * n
    for li, r in enumerate(rows):
        offset = (width - margin_right - len(r) * (node_w + gap_x) + gap_x) / 2
        for i, v in enumerate(r):
            xs[v] = offset + i * (node_w + gap_x)
            ys[v] = gap_y / 2 + li * (node_h + gap_y)
    height = depth * (node_h + gap_y) + gap_y / 2
    return Layout(tuple(xs), tuple(ys), width, height, tuple(layer))
