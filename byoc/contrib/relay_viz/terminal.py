"""relay_viz's terminal plotter: each global function as an indented tree, root first, operands below their
user (TVM's ``relay_viz.terminal`` layout: ``|--`` / ``\\`--`` connectors)."""
from __future__ import annotations

from ...ir.expr import Call, Function, GlobalVar, If, Let, Op
from .interface import DefaultVizParser, Plotter, VizEdge, VizGraph, VizNode, VizParser

__all__ = ["TermVizParser", "TermGraph", "TermPlotter"]


class TermVizParser(VizParser):
    """Like the default parser, but ops, global variables, lets and ifs are nodes of their own (an AST dump)."""

    def __init__(self):
        self._default = DefaultVizParser()

    def get_node_edges(self, node, relay_param, node_to_id):
        nid = node_to_id.get(node)
        if isinstance(node, Call):
            edges = [VizEdge(node_to_id[node.op], nid)] + [VizEdge(node_to_id[a], nid) for a in node.args]
            return VizNode(nid, "Call", ""), edges
        if isinstance(node, Let):
            return VizNode(nid, "Let", "(var, val, body)"), [VizEdge(node_to_id[x], nid)
                                                            for x in (node.var, node.value, node.body)]
        if isinstance(node, GlobalVar):
            return VizNode(nid, "GlobalVar", node.name_hint), []
        if isinstance(node, If):
            return VizNode(nid, "If", "(cond, true, false)"), [
                VizEdge(node_to_id[x], nid) for x in (node.cond, node.true_branch, node.false_branch)]
        if isinstance(node, Op):
            return VizNode(nid, node.name, ""), []
        if isinstance(node, Function):
            params = "[" + ", ".join(p.name_hint for p in node.params) + "]"
            return VizNode(nid, "Func", params), [VizEdge(node_to_id[node.body], nid)]
        return self._default.get_node_edges(node, relay_param, node_to_id)


class TermGraph(VizGraph):
    def __init__(self, name: str):
        self._name = name
        self._operands: dict[str, list[str]] = {}      # user -> operands, in edge order
        self._nodes: dict[str, VizNode] = {}
        self._last: str | None = None                   # nodes arrive operands first: the last one is the root

    def node(self, viz_node: VizNode) -> None:
        self._operands.setdefault(viz_node.identity, [])
        self._nodes[viz_node.identity] = viz_node
        self._last = viz_node.identity

    def edge(self, viz_edge: VizEdge) -> None:
        self._operands.setdefault(viz_edge.end, []).append(viz_edge.start)

    def render(self) -> str:
        if self._last is None:
            return f"@{self._name}()"

        def info(nid):
            return self._nodes[nid].detail.replace("\n", ", ")

        lines = [f"@{self._name}({info(self._last)})"]
        seen: set[tuple[str, str]] = set()
        stack: list[tuple] = [("visit", "", self._last)]   # explicit stack: graphs can be deep
        while stack:
            item = stack.pop()
            if item[0] == "line":
                lines.append(item[1])
                continue
            _, indent, nid = item
            if (indent, nid) in seen:
                continue
            seen.add((indent, nid))
            kids = [k for k in self._operands.get(nid, []) if k in self._nodes]
            for i in reversed(range(len(kids))):       # pushed reversed: popped in order, each line then its tree
                last = i == len(kids) - 1
                k = kids[i]
                stack.append(("visit", indent + ("   " if last else "|  "), k))
                stack.append(("line", f"{indent}{'`--' if last else '|--'}{self._nodes[k].type_name} {info(k)}"))
        return "\n".join(lines)


class TermPlotter(Plotter):
    def __init__(self):
        self._graphs: dict[str, TermGraph] = {}

    def create_graph(self, name):
        self._graphs[name] = TermGraph(name)
        return self._graphs[name]

    def render(self, filename=None):
        """Print to stdout, or write to ``filename``."""
        text = "\n".join(g.render() for g in self._graphs.values())
        if filename is None:
            print(text)
        else:
            with open(filename, "w") as f:
                f.write(text)
