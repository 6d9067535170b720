"""A self-contained HTML report of one model: ``write_report(path, ReportData(...))``.

One file with no external resources (open it from disk, mail it, attach it to a bug): the graph with NPU
partitions and CPU ops coloured (inline SVG, layered layout computed here; hover or click a node for its op
chain, shape and why it stayed on the CPU), the offload summary, the per-layer cycles chart with each layer's
roofline, and the comparison verdict with the first diverging tensor.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from html import escape
from typing import Any

from ..errors import ExecutionError
from .graph import layered_layout, model_graph
from .html import page, table_html
from .svg import cycles_chart_svg, graph_svg, placement_colors

__all__ = ["ReportData", "render_report", "write_report"]


@dataclass(frozen=True, eq=False)
class ReportData:
    model: Any                      # byoc.cli.common.LoadedModel (name, path, mod, semantics)
    partitioned: Any                # the partitioned IRModule
    report: Any                     # byoc.partition.PartitionReport
    target: str
    summary: list = field(default_factory=list)      # byoc.cli.summary.OffloadRow
    profiles: list = field(default_factory=list)     # byoc.cli.summary.PartitionProfile
    comparison: Any = None                            # byoc.compare.CompareResult or None
    problems: tuple[str, ...] = ()


def _graph_section(data: ReportData) -> str:
    from ..compare import _placement_by_name  # noqa: PLC2701 - one definition of "which partition"
    from ..transform.infer_type import InferType
    placement = _placement_by_name(data.report, data.partitioned)
    reasons: dict[str, str] = {}
    for n in data.report.cpu_ops():
        if n.name:
            reasons[n.name] = "; ".join(x for x in (reasons.get(n.name), n.reason) if x)
    graph = model_graph(InferType()(data.model.mod), placement, reasons)
    layout = layered_layout(graph)
    colors = placement_colors(graph)
    legend = "".join(f'<span><i class="sw" style="background:{c}"></i>'
                     f'{escape("CPU (host)" if k == "cpu" else "model input" if k == "input" else "@" + k)}</span>'
                     for k, c in colors.items() if any(n.placement == k for n in graph.nodes))
    return (f'<p class="legend">{legend}</p><div class="graphbox"><div class="scroll">'
            f'{graph_svg(graph, layout, colors)}</div><div id="details" class="muted">Hover over or click a node '
            f'for its ops, output shape, placement and, for CPU ops, why they were not offloaded.</div></div>'
            f'<p class="muted">{len(graph.nodes)} tensors, {len(graph.edges)} edges.</p>')


def _summary_section(data: ReportData) -> str:
    total = max(1, sum(r.macs for r in data.summary))
    rows = [[r.target, r.partitions, r.ops, f"{r.macs:,}", f"{100 * r.macs / total:.1f}%"] for r in data.summary]
    out = [table_html(["target", "partitions", "ops", "MACs", "MAC share"], rows, (1, 2, 3, 4), "offload")]
    cpu = data.report.cpu_ops()
    if cpu:
        out.append("<h3>Why these ops stay on the CPU</h3>")
        out.append(table_html(["op", "tensor", "reason"], [[n.op, n.name or "-", n.reason or "no rule matches"]
                                                            for n in cpu], (), "cpu-reasons"))
    for note in data.report.notes:
        out.append(f'<p class="muted">{escape(note)}</p>')
    return "".join(out)


def _profile_section(data: ReportData) -> str:
    from ..cli.summary import layer_rows
    rows = layer_rows(data.profiles)
    if not data.profiles:
        return '<p class="muted">Nothing was simulated (no NPU partition).</p>'
    lines = []
    for p in data.profiles:
        s = p.stats
        lines.append(f"<p>@{escape(p.partition)}: <b>{s.total_cycles:,}</b> cycles = "
                     f"{s.total_cycles / s.clock_hz * 1e3:.3f} ms at {s.clock_hz / 1e6:g} MHz on "
                     f"{escape(s.config_name)}; {s.total_macs:,} MACs; {s.command_count:,} commands.</p>")
    areas = sorted({a for r in rows for a in r["bytes"]})
    table = table_html(["layer", "kind", "cycles", "MACs"] + [f"{a} bytes" for a in areas] +
                       ["utilisation", "bound", "roofline"],
                       [[r["layer"], r["kind"], f'{r["cycles"]:,}', f'{r["macs"]:,}'] +
                        [f'{r["bytes"].get(a, 0):,}' for a in areas] +
                        [f'{r["utilisation"]:.2f}', r["bound"], f'{r["roofline_cycles"]:,}'] for r in rows],
                       tuple(range(2, 4 + len(areas) + 1)) + (6 + len(areas),), "layers")
    return "".join(lines) + cycles_chart_svg(rows) + "<details><summary>per-layer table</summary>" + table + \
        "</details>"


def _compare_section(data: ReportData) -> str:
    r = data.comparison
    if r is None:
        return '<p class="verdict warn">The executors were not compared.</p>'
    cls = "ok" if r.ok and r.first_divergence is None else "bad"
    out = [f'<p class="verdict {cls}" id="verdict">{escape(r.verdict())}</p>',
           f'<p id="reference">Reference: {escape(r.reference)}</p>']
    execs = [e.name for e in r.executors if e.available and e.name != "reference"]

    def cell(t, x):
        if x == t.expected:
            return "(expected)"
        d = next((d for d in t.diffs if d.executor == x), None)
        if d is None:
            return "-"
        return "ok" if d.mismatches == 0 else ("shape differs" if d.mismatches < 0 else
                                               f"{d.mismatches} differ (max {d.max_diff:g})")
    out.append(table_html(["executor", "what", "must equal", "seconds", "note"],
                          [[e.name, e.description, e.checked_against or ("(the reference)" if e.available else "-"),
                            f"{e.seconds:.2f}", e.note] for e in r.executors], (3,)))
    out.append("<h3>Outputs</h3>")
    out.append(table_html(["output", "shape", "dtype", "placement"] + execs,
                          [[t.name, "x".join(map(str, t.shape)), t.dtype, t.placement] + [cell(t, x) for x in execs]
                           for t in r.outputs], (), "outputs"))
    bad = [t for t in r.intermediates if t.differs]
    state = "not compared (outputs only)" if r.outputs_only else \
        f"{len(r.intermediates)} compared, " + (f"{len(bad)} differ." if bad else "all agree.")
    out.append(f"<h3>Intermediate tensors</h3><p>{state}</p>")
    if bad:
        out.append(table_html(["tensor", "shape", "placement"] + execs,
                              [[t.label, "x".join(map(str, t.shape)), t.placement] + [cell(t, x) for x in execs]
                               for t in bad[:200]], ()))
    for n in r.notes:
        out.append(f'<p class="muted">{escape(n)}</p>')
    return "".join(out)


def render_report(data: ReportData) -> str:
    m = data.model
    sections = [("comparison", "Comparison", _compare_section(data)),
                ("graph", f"Graph: {data.target} partitions and CPU ops", _graph_section(data)),
                ("summary", "Offload summary", _summary_section(data)),
                ("profile", "NPU per-layer cycles and roofline", _profile_section(data))]
    if data.problems:
        sections.insert(0, ("problems", "Problems", "".join(f'<p class="verdict warn">{escape(p)}</p>'
                                                            for p in data.problems)))
    sub = f"{m.path} · {m.kind} ({m.semantics} semantics) · target {data.target}"
    return page(f"byoc report: {m.name}", sub, sections)


def write_report(path: str, data: ReportData) -> int:
    """Write the report; returns its size in bytes."""
    text = render_report(data).encode("utf-8")
    try:
        with open(path, "wb") as f:
            f.write(text)
    except OSError as e:
        raise ExecutionError(f"cannot write report {path!r}: {e.strerror or e}") from None
    return os.path.getsize(path)
