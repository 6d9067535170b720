"""Inline SVG: the partitioned graph and the per-layer cycles chart with its roofline."""
from __future__ import annotations

from html import escape

from .graph import Layout, ModelGraph

__all__ = ["graph_svg", "cycles_chart_svg", "placement_colors"]

_PALETTE = ("#2e7d32", "#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#ad1457", "#558b2f", "#4527a0")
CPU_COLOR = "#9e9e9e"
SKIP_MARGIN = 110   # room right of the nodes for skip-connection curves (layered_layout's margin_right)
INPUT_COLOR = "#ffffff"
_PLUMBING = ("nn.pad", "cast", "nn.bias_add", "qnn.requantize", "clip")
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
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


def graph_svg(graph: ModelGraph, layout: Layout, colors: dict[str, str], node_w: float = 170,
              node_h: float = 34) -> str:
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="graph" class="graph" width="{layout.width:.0f}" '
             f'height="{layout.height:.0f}" viewBox="0 0 {layout.width:.0f} {layout.height:.0f}" role="img" '
             f'aria-label="partitioned graph">',
             '<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6" markerHeight="6" '
             'orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#777"/></marker></defs>',
             '<g class="edges">']
    for a, b in graph.edges:
        span = layout.layer[b] - layout.layer[a]
        if span > 1:  # a skip connection: bulge out to the right so it does not run through the nodes between
            x1, y1 = layout.x[a] + node_w, layout.y[a] + node_h / 2
            x2, y2 = layout.x[b] + node_w, layout.y[b] + node_h / 2
            bulge = min(30 + 10 * span, SKIP_MARGIN - 10)
            parts.append(f'<path class="edge skip" d="M{x1:.1f},{y1:.1f} C{x1 + bulge:.1f},{y1:.1f} '
                         f'{x2 + bulge:.1f},{y2:.1f} {x2:.1f},{y2:.1f}" marker-end="url(#arrow)"/>')
            continue
        x1, y1 = layout.x[a] + node_w / 2, layout.y[a] + node_h
        x2, y2 = layout.x[b] + node_w / 2, layout.y[b]
        my = (y1 + y2) / 2
        parts.append(f'<path class="edge" d="M{x1:.1f},{y1:.1f} C{x1:.1f},{my:.1f} {x2:.1f},{my:.1f} '
                     f'{x2:.1f},{y2:.1f}" marker-end="url(#arrow)"/>')
    parts.append('</g><g class="nodes">')
    for n in graph.nodes:
        x, y = layout.x[n.id], layout.y[n.id]
        fill = colors.get(n.placement, CPU_COLOR)
        where = "model input" if n.placement == "input" else (
            "CPU (host)" if n.placement == "cpu" else f"NPU partition @{n.placement}")
        shape = "x".join(map(str, n.shape)) if n.shape else "?"
        tip = [n.name, f"ops: {' → '.join(n.ops)}", f"output: {n.dtype}[{shape}]", f"placement: {where}"]
        if n.macs:
            tip.append(f"MACs: {n.macs:,}")
        if n.reason:
            tip.append(f"why on the CPU: {n.reason}")
        text_color = "#000" if n.placement in ("input", "cpu") else "#fff"
        label = _short(n.name, 24)
        core = next((o for o in n.ops if o not in _PLUMBING), n.ops[-1])
        parts.append(
            f'<g class="node" data-id="{n.id}" data-placement="{escape(n.placement)}" '
            f'data-name="{escape(n.name)}" data-ops="{escape(" → ".join(n.ops))}" data-shape="{escape(n.dtype)}'
            f'[{shape}]" data-reason="{escape(n.reason)}" data-macs="{n.macs}" transform="translate({x:.1f},{y:.1f})">'
            f'<title>{escape(chr(10).join(tip))}</title>'
            f'<rect width="{node_w}" height="{node_h}" rx="5" fill="{fill}" stroke="#333" stroke-width="1"/>'
            f'<text x="{node_w / 2}" y="14" fill="{text_color}">{escape(label)}</text>'
            f'<text x="{node_w / 2}" y="27" fill="{text_color}" class="sub">{escape(_short(core, 16))} '
            f'{escape(shape)}</text></g>')
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
                     f'{escape(_short(r["layer"], 34))}</text>'
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
