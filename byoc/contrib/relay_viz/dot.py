"""relay_viz's DOT plotter: each global function a cluster of a Graphviz digraph, laid out and drawn by the
``dot`` program (the layout engine byoc's report uses, ``byoc.report.layout``). TVM's version drove the
``graphviz`` Python package; here the DOT source is written directly and ``dot`` renders it."""
from __future__ import annotations

import os
import shutil
import subprocess

from ...errors import ByocError
from ...report.layout import DOT_TIMEOUT, _quote
from .interface import DefaultVizParser, Plotter, VizEdge, VizGraph, VizNode

__all__ = ["DotVizParser", "DotGraph", "DotPlotter"]


class DotVizParser(DefaultVizParser):
    """The default parser (TVM's DotVizParser adds nothing to it)."""


def _value(v) -> str:
    """A quoted DOT attribute value; a newline becomes DOT's centred line break ``\\n``."""
    return _quote(str(v)).replace("\n", "\\n")


def _attrs(d: dict | None) -> str:
    return " ".join(f"{k}={_value(v)}" for k, v in (d or {}).items())


class DotGraph(VizGraph):
    def __init__(self, name: str, graph_attr=None, node_attr=None, edge_attr=None, get_node_attr=None):
        self._name = name
        self._graph_attr, self._node_attr, self._edge_attr = graph_attr, node_attr, edge_attr
        self._get_node_attr = get_node_attr or self._default_get_node_attr
        self._lines: list[str] = []

    def node(self, viz_node: VizNode) -> None:
        attrs = {"label": f"{viz_node.type_name}\n{viz_node.detail}", **self._get_node_attr(viz_node)}
        self._lines.append(f"{_quote(viz_node.identity)} [{_attrs(attrs)}];")

    def edge(self, viz_edge: VizEdge) -> None:
        self._lines.append(f"{_quote(viz_edge.start)} -> {_quote(viz_edge.end)};")

    def source(self) -> str:
        head = [f"subgraph {_quote('cluster_' + self._name)} {{", f"label={_quote(self._name)};"]
        for kind, attrs in (("graph", self._graph_attr), ("node", self._node_attr), ("edge", self._edge_attr)):
            if attrs:
                head.append(f"{kind} [{_attrs(attrs)}];")
        return "\n".join(head + self._lines + ["}"])

    @staticmethod
    def _default_get_node_attr(node: VizNode) -> dict:
        return {"shape": "ellipse"} if "Var" in node.type_name else {"shape": "box"}


class DotPlotter(Plotter):
    """``render_kwargs`` as TVM passed to ``graphviz.Digraph.render``: ``format`` (default ``"pdf"``),
    ``cleanup`` (default True: only the drawing ``filename.<format>`` is kept, not the DOT source
    ``filename``)."""

    def __init__(self, graph_attr=None, node_attr=None, edge_attr=None, get_node_attr=None, render_kwargs=None):
        self._graphs: dict[str, DotGraph] = {}
        self._graph_attr, self._node_attr, self._edge_attr = graph_attr, node_attr, edge_attr
        self._get_node_attr = get_node_attr
        self._render_kwargs = dict(render_kwargs or {})

    def create_graph(self, name):
        self._graphs[name] = DotGraph(name, self._graph_attr, self._node_attr, self._edge_attr,
                                      self._get_node_attr)
        return self._graphs[name]

    def source(self) -> str:
        """The DOT text of every graph (one digraph, a cluster per global function)."""
        return "\n".join(["digraph relay_ir {"] + [g.source() for g in self._graphs.values()] + ["}"])

    def render(self, filename=None):
        kw = dict(self._render_kwargs)
        filename = filename or kw.pop("filename", None) or "Digraph.gv"
        kw.pop("filename", None)
        fmt = kw.pop("format", "pdf")
        cleanup = kw.pop("cleanup", True)
        directory = kw.pop("directory", None)
        if kw:
            raise ByocError(f"DotPlotter: render_kwargs {sorted(kw)} are not supported",
                            hint="format, cleanup, directory and filename are")
        if directory:
            filename = os.path.join(directory, filename)
        with open(filename, "w") as f:
            f.write(self.source())
        exe = shutil.which("dot")
        if exe is None:
            raise ByocError("DotPlotter.render: Graphviz's `dot` program is not installed",
                            hint="install Graphviz (Debian: apt-get install graphviz), or use TermPlotter")
        out = f"{filename}.{fmt}"
        proc = subprocess.run([exe, f"-T{fmt}", "-o", out, filename], capture_output=True, text=True,
                              timeout=DOT_TIMEOUT)
        if proc.returncode != 0:
            raise ByocError(f"DotPlotter.render: dot -T{fmt} failed on {filename}: {proc.stderr.strip()[:500]}")
        if cleanup:
            os.remove(filename)
        return out
