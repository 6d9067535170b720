"""``tvm.contrib.relay_viz``: draw a module's functions as graphs, in the terminal (the default) or with
Graphviz's ``dot`` (``dot.DotPlotter``)."""
from __future__ import annotations

from ...ir.expr import Call
from ...ir.traversal import children, post_order
from .dot import DotPlotter, DotVizParser
from .interface import Plotter, VizEdge, VizGraph, VizNode, VizParser
from .terminal import TermPlotter, TermVizParser

__all__ = ["RelayVisualizer", "Plotter", "VizGraph", "VizParser", "VizNode", "VizEdge", "TermPlotter",
           "TermVizParser", "DotPlotter", "DotVizParser"]


def _with_ops(node):
    """Operands with a call's op first: parsers draw ops (the terminal one as nodes of their own)."""
    return (node.op,) + node.args if isinstance(node, Call) else children(node)


class RelayVisualizer:
    """``RelayVisualizer(mod, relay_param=None, plotter=None, parser=None)``: every node of every global
    function (``main`` first) goes through ``parser``; ``render(filename)`` asks ``plotter`` to draw.
    A variable named in ``relay_param`` is drawn as a parameter, others as inputs."""

    def __init__(self, relay_mod, relay_param=None, plotter=None, parser=None):
        self._plotter = plotter if plotter is not None else TermPlotter()
        self._parser = parser if parser is not None else TermVizParser()
        self._relay_param = relay_param if relay_param is not None else {}
        names = [gv.name_hint for gv in relay_mod.get_global_vars()]
        names = sorted(names, key=lambda n: n != "main")          # main on top
        offset = 0
        for name in names:
            order = post_order(relay_mod[name], child_fn=_with_ops)
            ids = {node: str(offset + i) for i, node in enumerate(order)}   # unique across functions
            offset += len(order)
            graph = self._plotter.create_graph(name)
            for node in order:
                viz_node, edges = self._parser.get_node_edges(node, self._relay_param, ids)
                if viz_node is not None:
                    graph.node(viz_node)
                for e in edges:
                    graph.edge(e)

    def render(self, filename=None):
        return self._plotter.render(filename=filename)
