"""Where the report draws each node, edge and partition box.

Two engines give the same ``Layout``:

* ``dot_layout``: Graphviz's ``dot`` (``dot -Tjson0``), the layered (Sugiyama) layout TVM's relay_viz used, with
  each partition a cluster, so a partition's ops sit together inside one box and edges are routed around nodes.
  Graphviz is a system package (Debian's ``graphviz``); when ``dot`` is missing, fails or takes too long,
* ``layered_layout`` is the fallback: longest-path layering, barycentre ordering sweeps, no recursion; partition
  boxes are the bounding boxes of their nodes and edges are drawn as simple curves.

Coordinates are SVG pixels (1 px = 1 pt), origin top left; ``x``/``y`` are a node's top-left corner.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from .graph import ModelGraph

__all__ = ["Layout", "layout_graph", "dot_layout", "layered_layout", "NODE_W", "NODE_H"]

NODE_W, NODE_H = 200.0, 36.0
DOT_TIMEOUT = 120.0          # seconds; beyond it the built-in layout is used


@dataclass(frozen=True)
class Layout:
    x: tuple[float, ...]
    y: tuple[float, ...]
    width: float
    height: float
    layer: tuple[int, ...]                                    # rank (the built-in layout; dot: by y)
    edges: dict = field(default_factory=dict)                 # (a, b) -> ((x, y), ...) cubic spline, or absent
    clusters: dict = field(default_factory=dict)              # partition -> (x0, y0, x1, y1)
    engine: str = ""


def layout_graph(graph: ModelGraph, targets: dict[str, str] | None = None, engine: str | None = None) -> Layout:
    """``engine``: "dot", "builtin" or "auto" (dot when it is installed and succeeds; the default, or the
    ``BYOC_REPORT_LAYOUT`` environment variable); ``targets``: partition → target, for the boxes' labels."""
    engine = engine or os.environ.get("BYOC_REPORT_LAYOUT", "auto")
    if engine in ("auto", "dot"):
        found = dot_layout(graph, targets)
        if found is not None or engine == "dot":
            return found
    return layered_layout(graph, targets)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot_source(graph: ModelGraph, targets: dict[str, str] | None = None) -> str:
    w, h = NODE_W / 72, NODE_H / 72
    lines = ["digraph model {", "rankdir=TB; nodesep=0.22; ranksep=0.32; newrank=true;",
             f'node [shape=box fixedsize=true width={w:.4f} height={h:.4f} label=""];',
             'graph [fontsize=13 fontname="Helvetica-Bold" margin=4];']
    parts = graph.partitions
    members: dict[str, list[int]] = {p: [] for p in parts}
    for n in graph.nodes:
        if n.placement in members:
            members[n.placement].append(n.id)
        else:
            lines.append(f"n{n.id};")
    for i, p in enumerate(parts):   # the label as drawn, so dot makes the box wide enough for it
        label = "@" + p + (f" ({targets[p]})" if p in (targets or {}) else "")
        lines.append(f"subgraph cluster_{i} {{ label={_quote(label)}; margin=10; "
                     + " ".join(f"n{v};" for v in members[p]) + " }")
    lines.extend(f"n{a} -> n{b};" for a, b in graph.edges)
    lines.append("}")
    return "\n".join(lines)


def _point(text: str) -> tuple[float, float]:
    x, y = text.split(",")[:2]
    return float(x), float(y)


def dot_layout(graph: ModelGraph, targets: dict[str, str] | None = None,
               timeout: float = DOT_TIMEOUT) -> Layout | None:
    """Graphviz's layout, or None when ``dot`` is not installed, fails or times out."""
    exe = shutil.which("dot")
    if exe is None or not graph.nodes:
        return None
    try:
        proc = subprocess.run([exe, "-Tjson0"], input=dot_source(graph, targets), capture_output=True, text=True,
                              timeout=timeout, check=False)
        if proc.returncode != 0:
            return None
        doc = json.loads(proc.stdout)
        version = subprocess.run([exe, "-V"], capture_output=True, text=True, timeout=10).stderr.strip()
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    x0, y0, x1, y1 = (float(v) for v in doc["bb"].split(","))
    top = y1                                                  # dot's y grows upwards
    n = len(graph.nodes)
    xs, ys = [0.0] * n, [0.0] * n
    gvid: dict[int, int] = {}
    clusters = {}
    parts = graph.partitions
    for obj in doc.get("objects", []):
        name = obj.get("name", "")
        if name.startswith("cluster_") and "bb" in obj:
            a, b, c, d = (float(v) for v in obj["bb"].split(","))
            clusters[parts[int(name.split("_")[1])]] = (a - x0, top - d, c - x0, top - b)
        elif name.startswith("n") and "pos" in obj:
            v = int(name[1:])
            px, py = _point(obj["pos"])
            xs[v], ys[v] = px - x0 - NODE_W / 2, top - py - NODE_H / 2
            gvid[obj["_gvid"]] = v
    edges = {}
    for e in doc.get("edges", []):
        pos = e.get("pos", "")
        pts, end = [], None
        for tok in pos.split():
            if tok.startswith("e,"):
                end = _point(tok[2:])
            elif not tok.startswith("s,"):
                pts.append(_point(tok))
        if end is not None:
            pts.append(end)
        key = (gvid.get(e["tail"]), gvid.get(e["head"]))
        edges[key] = tuple((px - x0, top - py) for px, py in pts)
    ranks = sorted(set(round(y) for y in ys))
    rank_of = {r: i for i, r in enumerate(ranks)}
    return Layout(tuple(xs), tuple(ys), x1 - x0, y1 - y0, tuple(rank_of[round(y)] for y in ys), edges, clusters,
                  version.replace("dot - ", "") or "graphviz dot")


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


def layered_layout(graph: ModelGraph, targets: dict[str, str] | None = None, gap_x: float = 24,
                   gap_y: float = 30, sweeps: int = 4, margin_right: float = 110) -> Layout:
    """Longest-path layering top to bottom, then barycentre ordering sweeps within layers."""
    node_w, node_h = NODE_W, NODE_H
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
    pad = 10.0
    width = widest * (node_w + gap_x) + gap_x + margin_right + 2 * pad
    xs = [0.0] * n
    ys = [0.0] * n
    for li, r in enumerate(rows):
        offset = pad + (width - 2 * pad - margin_right - len(r) * (node_w + gap_x) + gap_x) / 2
        for i, v in enumerate(r):
            xs[v] = offset + i * (node_w + gap_x)
            ys[v] = gap_y / 2 + li * (node_h + gap_y)
    height = depth * (node_h + gap_y) + gap_y / 2
    clusters = {}
    for p in graph.partitions:      # bounding boxes: room above for the label, and as wide as the label
        mine = [v.id for v in graph.nodes if v.placement == p]
        label = "@" + p + (f" ({targets[p]})" if p in (targets or {}) else "")
        x0, y0 = min(xs[v] for v in mine) - pad, min(ys[v] for v in mine) - min(gap_y - 6, 24)
        x1 = max(max(xs[v] for v in mine) + node_w + pad, x0 + 7.5 * len(label) + 16)
        clusters[p] = (x0, y0, x1, max(ys[v] for v in mine) + node_h + pad)
        width = max(width, x1 + pad)
    return Layout(tuple(xs), tuple(ys), width, height, tuple(layer), {}, clusters, "built-in layered layout")
