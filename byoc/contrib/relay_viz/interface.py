"""relay_viz's extension points (TVM's ``relay_viz.interface``): a parser turns each IR node into a ``VizNode``
plus the ``VizEdge``s into it; a plotter collects them in ``VizGraph``s, one per global function, and renders."""
from __future__ import annotations

import abc

from ...ir.expr import Call, Constant, Function, GlobalVar, Op, Tuple, TupleGetItem, Var

__all__ = ["VizNode", "VizEdge", "VizParser", "VizGraph", "Plotter", "DefaultVizParser", "UNKNOWN_TYPE"]

UNKNOWN_TYPE = "unknown"


class VizNode:
    def __init__(self, node_id: str, node_type: str, node_detail: str):
        self._id, self._type, self._detail = node_id, node_type, node_detail

    @property
    def identity(self) -> str:
        return self._id

    @property
    def type_name(self) -> str:
        return self._type

    @property
    def detail(self) -> str:
        return self._detail

    def __repr__(self) -> str:
        return f"VizNode(identity: {self._id}, type_name: {self._type}, detail: {self._detail.replace(chr(10), ', ')}"


class VizEdge:
    """An edge from ``start_node`` (an operand's id) to ``end_node`` (its user's id)."""

    def __init__(self, start_node: str, end_node: str):
        self._start, self._end = start_node, end_node

    @property
    def start(self) -> str:
        return self._start

    @property
    def end(self) -> str:
        return self._end


class VizParser(abc.ABC):
    @abc.abstractmethod
    def get_node_edges(self, node, relay_param: dict, node_to_id: dict):
        """``(VizNode or None, [VizEdge])`` for ``node``; ``None`` leaves the node out of the graph."""


class VizGraph(abc.ABC):
    @abc.abstractmethod
    def node(self, viz_node: VizNode) -> None:
        """Add a node (nodes come operands first)."""

    @abc.abstractmethod
    def edge(self, viz_edge: VizEdge) -> None:
        """Add an edge."""


class Plotter(abc.ABC):
    @abc.abstractmethod
    def create_graph(self, name: str) -> VizGraph:
        """A new graph for the global function ``name``."""

    @abc.abstractmethod
    def render(self, filename: str | None = None) -> None:
        """Draw every graph created so far."""


def _attr_lines(attrs) -> list[str]:
    if not attrs:
        return []
    return [f"{k}: {_attr_str(attrs[k])}" for k in attrs.keys()]


def _attr_str(v) -> str:
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_attr_str(x) for x in v) + "]"
    return str(v)


class DefaultVizParser(VizParser):
    """Calls name their op and list its attributes; variables say whether they are parameters (``relay_param``)
    or inputs and give their annotated shape; constants their shape and dtype; other nodes are left out."""

    def get_node_edges(self, node, relay_param, node_to_id):
        for kind, fn in ((Function, self._function), (Call, self._call), (Tuple, self._tuple),
                         (TupleGetItem, self._tuple_get_item), (Constant, self._constant)):
            if isinstance(node, kind):
                return fn(node, node_to_id)
        if isinstance(node, Var):
            return self._var(node, relay_param, node_to_id)
        if isinstance(node, (Op, GlobalVar)):
            return None, []       # drawn as part of the call that uses them
        return VizNode(node_to_id[node], UNKNOWN_TYPE, f"don't know how to parse {type(node).__name__}"), []

    def _var(self, node, relay_param, node_to_id):
        detail = f"name_hint: {node.name_hint}"
        ann = node.type_annotation
        if ann is not None:
            if hasattr(ann, "shape"):
                detail += f"\nshape: {tuple(int(d) for d in ann.shape)}\ndtype: {ann.dtype}"
            else:
                detail += f"\ntype_annotation: {ann}"
        kind = "Var(Param)" if node.name_hint in relay_param else "Var(Input)"
        return VizNode(node_to_id[node], kind, detail), []

    def _function(self, node, node_to_id):
        name = node.attrs.get("Composite", "") if node.attrs else ""
        nid = node_to_id[node]
        return VizNode(nid, f"Func {name}", "\n".join(_attr_lines(node.attrs))), [VizEdge(node_to_id[node.body], nid)]

    def _call(self, node, node_to_id):
        nid = node_to_id[node]
        op = node.op
        if isinstance(op, Op):
            name, detail = op.name, _attr_lines(node.attrs)
        elif isinstance(op, Function):
            name = op.attrs.get("Composite", "Anonymous Func") if op.attrs else "Anonymous Func"
            detail = _attr_lines(op.attrs)
        elif isinstance(op, GlobalVar):
            name, detail = "GlobalVar", [f"GlobalVar.name_hint: {op.name_hint}"]
        else:
            name, detail = type(op).__name__, []
        edges = [VizEdge(node_to_id[a], nid) for a in node.args]
        return VizNode(nid, f"Call {name}", "\n".join(detail)), edges

    def _tuple(self, node, node_to_id):
        nid = node_to_id[node]
        return VizNode(nid, "Tuple", ""), [VizEdge(node_to_id[f], nid) for f in node.fields]

    def _tuple_get_item(self, node, node_to_id):
        nid = node_to_id[node]
        return VizNode(nid, "TupleGetItem", f"idx: {node.index}"), [VizEdge(node_to_id[node.tuple_value], nid)]

    def _constant(self, node, node_to_id):
        return VizNode(node_to_id[node], "Const", f"shape: {node.data.shape}, dtype: {node.data.dtype}"), []
