"""Inline SVG: the partitioned graph and the per-layer cycles chart with its roofline."""
from __future__ import annotations

from html import escape

from .graph import ModelGraph, short_name
from .layout import NODE_H, NODE_W, Layout

__all__ = ["graph_svg", "cycles_chart_svg", "placement_colors"]

_PALETTE = ("#2e7d32", "#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#ad1457", "#558b2f", "#4527a0")
CPU_COLOR = "#9e9e9e"
SKIP_MARGIN = 110   # room right of the nodes for skip-connection curves (layered_layout's margin_right)
INPUT_COLOR = "#ffffff"
_BOUND_COLORS = {"mac": "#1565c0", "ppu": "#6a1b9a"}


def placement_colors(graph: ModelGraph) -> dict[str, str]:
    """A colour per placement: partitions in order of first appearance, cpu grey, inputs white."""
    colors = {"cpu": CPU_COLOR, "input": INPUT_COLOR}
    k = 0
    for n in graph.nodes:
        if n.placement not in colors:
            colors[n.placement] = _PALETTE[k % len(_PALETTE)]
            k += 1
    return colors


def _short(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[-(limit - 1 - head):]


def _edge_path(graph: ModelGraph, layout: Layout, a: int, b: int) -> str:
    route = layout.edges.get((a, b))
    if route and len(route) >= 4:
        d = [f"M{route[0][0]:.1f},{route[0][1]:.1f}"]
        body = route[1:]
        tail = None
        if (len(body) - 1) % 3 == 0:        # dot's spline ends with the arrow tip after the last control point
            body, tail = body[:-1], body[-1]
        for i in range(0, len(body) - len(body) % 3, 3):
            (x1, y1), (x2, y2), (x3, y3) = body[i:i + 3]
            d.append(f"C{x1:.1f},{y1:.1f} {x2:.1f},{y2:.1f} {x3:.1f},{y3:.1f}")
        if tail is not None:
            d.append(f"L{tail[0]:.1f},{tail[1]:.1f}")
        return f'<path class="edge" d="{" ".join(d)}" marker-end="url(#arrow)"/>'
    w, h = NODE_W, NODE_H
    if layout.layer[b] - layout.layer[a] > 1:   # a skip connection: bulge right past the nodes between
        x1, y1 = layout.x[a] + w, layout.y[a] + h / 2
        x2, y2 = layout.x[b] + w, layout.y[b] + h / 2
        bulge = min(30 + 10 * (layout.layer[b] - layout.layer[a]), SKIP_MARGIN - 10)
        return (f'<path class="edge skip" d="M{x1:.1f},{y1:.1f} C{x1 + bulge:.1f},{y1:.1f} '
                f'{x2 + bulge:.1f},{y2:.1f} {x2:.1f},{y2:.1f}" marker-end="url(#arrow)"/>')
    x1, y1 = layout.x[a] + w / 2, layout.y[a] + h
    x2, y2 = layout.x[b] + w / 2, layout.y[b]
    my = (y1 + y2) / 2
    return (f'<path class="edge" d="M{x1:.1f},{y1:.1f} C{x1:.1f},{my:.1f} {x2:.1f},{my:.1f} '
            f'{x2:.1f},{y2:.1f}" marker-end="url(#arrow)"/>')


def graph_svg(graph: ModelGraph, layout: Layout, colors: dict[str, str], targets: dict[str, str] | None = None) -> str:
    """The graph: a box per partition around its ops, then edges, then nodes (short name, kind and shape; the
    full tensor name, ops, placement and the reason a CPU op stayed there in the node's <title>)."""
    node_w, node_h = NODE_W, NODE_H
    targets = targets or {}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="graph" class="graph" width="{layout.width:.0f}" '
             f'height="{layout.height:.0f}" viewBox="0 0 {layout.width:.0f} {layout.height:.0f}" role="img" '
             f'aria-label="partitioned graph" data-layout="{escape(layout.engine)}">',
             '<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6" markerHeight="6" '
             'orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#777"/></marker></defs>',
             '<g class="clusters">']
    for name, (x0, y0, x1, y1) in layout.clusters.items():
        color = colors.get(name, CPU_COLOR)
        count = sum(1 for n in graph.nodes if n.placement == name)
        label = f"@{name}" + (f" ({targets[name]})" if name in targets else "")
        parts.append(f'<g class="cluster" data-partition="{escape(name)}"><title>{escape(label)}: {count} '
                     f'node(s)</title><rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" '
                     f'rx="8" fill="{color}" fill-opacity="0.08" stroke="{color}" stroke-width="1.5" '
                     f'stroke-dasharray="6 3"/><text x="{x0 + 8:.1f}" y="{y0 + 14:.1f}" class="clabel" '
                     f'fill="{color}">{escape(label)}</text></g>')
    parts.append('</g><g class="edges">')
    for a, b in graph.edges:
        parts.append(_edge_path(graph, layout, a, b))
    parts.append('</g><g class="nodes">')
    for n in graph.nodes:
        x, y = layout.x[n.id], layout.y[n.id]
        fill = colors.get(n.placement, CPU_COLOR)
        where = "model input" if n.placement == "input" else (
            "CPU (host)" if n.placement == "cpu" else f"partition @{n.placement}"
            + (f" ({targets[n.placement]})" if n.placement in targets else ""))
        shape = "x".join(map(str, n.shape)) if n.shape else "?"
        tip = [n.name, f"{n.kind}: {' → '.join(n.ops)}", f"output: {n.dtype}[{shape}]", f"placement: {where}"]
        if n.macs:
            tip.append(f"MACs: {n.macs:,}")
        if n.reason:
            tip.append(f"why on the CPU: {n.reason}")
        text_color = "#000" if n.placement in ("input", "cpu") else "#fff"
        parts.append(
            f'<g class="node" data-id="{n.id}" data-placement="{escape(n.placement)}" data-kind="{escape(n.kind)}" '
            f'data-name="{escape(n.name)}" data-ops="{escape(" → ".join(n.ops))}" data-shape="{escape(n.dtype)}'
            f'[{shape}]" data-reason="{escape(n.reason)}" data-macs="{n.macs}" data-where="{escape(where)}" '
            f'transform="translate({x:.1f},{y:.1f})">'
            f'<title>{escape(chr(10).join(tip))}</title>'
            f'<rect width="{node_w:.0f}" height="{node_h:.0f}" rx="5" fill="{fill}" stroke="#333" stroke-width="1"/>'
            f'<text x="{node_w / 2:.0f}" y="15" fill="{text_color}">{escape(_short(n.label, 30))}</text>'
            f'<text x="{node_w / 2:.0f}" y="29" fill="{text_color}" class="sub">'
            f'{escape(_short(n.kind + " " + shape, 36))}</text></g>')
    parts.append("</g></svg>")
    return "".join(parts)


def cycles_chart_svg(rows: list[dict], width: int = 900) -> str:
    """Horizontal bars: each layer's simulated cycles, coloured by its bound resource, with a black tick at its
    roofline (the cycles the busiest of MAC array and memory ports needs at full rate)."""
    if not rows:
        return '<p class="muted">No NPU layers were simulated.</p>'
    label_w, bar_h, gap, top = 230, 14, 4, 24
    plot_w = width - label_w - 90
    peak = max(max(r["cycles"], r["roofline_cycles"]) for r in rows) or 1
    height = top + len(rows) * (bar_h + gap) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="cycles-chart" class="chart" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="cycles per layer">',
             f'<text x="{label_w}" y="14" class="axis">cycles per layer (bar) and roofline (black tick); '
             f'longest {peak:,}</text>']
    for i, r in enumerate(rows):
        y = top + i * (bar_h + gap)
        w = plot_w * r["cycles"] / peak
        rx = label_w + plot_w * r["roofline_cycles"] / peak
        color = _BOUND_COLORS.get(r["bound"], "#ef6c00")
        tip = (f'{r["layer"]} ({r["kind"]}): {r["cycles"]:,} cycles, roofline {r["roofline_cycles"]:,}, '
               f'utilisation {r["utilisation"]:.2f}, bound by {r["bound"]}, {r["macs"]:,} MACs')
        parts.append(f'<g class="bar" data-layer="{escape(r["layer"])}"><title>{escape(tip)}</title>'
                     f'<text x="{label_w - 6}" y="{y + bar_h - 3}" text-anchor="end" class="lbl">'
                     f'{escape(short_name(r["layer"], 34))}</text>'
                     f'<rect x="{label_w}" y="{y}" width="{max(w, 1):.1f}" height="{bar_h}" fill="{color}"/>'
                     f'<line x1="{rx:.1f}" x2="{rx:.1f}" y1="{y - 1}" y2="{y + bar_h + 1}" stroke="#000" '
                     f'stroke-width="2" class="roof"/>'
                     f'<text x="{label_w + max(w, rx - label_w) + 6:.1f}" y="{y + bar_h - 3}" class="val">'
                     f'{r["cycles"]:,}</text></g>')
    ly = height - 12
    x = label_w
    for name, color in list(_BOUND_COLORS.items()) + [("memory", "#ef6c00")]:
        parts.append(f'<rect x="{x}" y="{ly - 9}" width="10" height="10" fill="{color}"/>'
                     f'<text x="{x + 14}" y="{ly}" class="axis">{name}-bound</text>')
        x += 110
    parts.append("</svg>")
    return "".join(parts)
