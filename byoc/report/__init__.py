"""A self-contained HTML report of one model: ``write_report(path, ReportData(...))``.

One file with no external resources (open it from disk, mail it, attach it to a bug): the graph with each
partition a box around its ops and CPU ops in grey (inline SVG drawn here from Graphviz's layout, or the built-in
one without Graphviz: ``layout.py``; hover or click a node for its full name, op chain, shape and why it stayed on
the CPU), the offload summary with one reason row per CPU tensor, the per-layer cycles chart with each layer's
roofline, and the comparison verdict with the first diverging tensor.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from html import escape
from typing import Any

from ..errors import ExecutionError
from .graph import distinct_reasons, model_graph, short_name
from .html import Raw, name_cell, page, table_html
from .layout import layout_graph
from .svg import cycles_chart_svg, graph_svg, placement_colors

__all__ = ["ReportData", "render_report", "write_report", "cpu_reason_rows"]


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
    plans: Any = None                                 # byoc.plans.PlanComparison (--placement cost) or None


def _targets(data: ReportData) -> dict[str, str]:
    return {p.name: p.target for p in data.report.partitions}


def _graph_section(data: ReportData) -> str:
    from ..transform.infer_type import InferType
    graph = model_graph(InferType()(data.model.mod), data.report)
    targets = _targets(data)
    layout = layout_graph(graph, targets)
    colors = placement_colors(graph)
    legend = "".join(f'<span><i class="sw" style="background:{c}"></i>'
                     f'{escape("CPU (host)" if k == "cpu" else "model input" if k == "input" else "@" + k)}</span>'
                     for k, c in colors.items() if any(n.placement == k for n in graph.nodes))
    return (f'<p class="legend">{legend}</p><div class="graphbox"><div class="scroll">'
            f'{graph_svg(graph, layout, colors, targets)}</div><div id="details" class="muted">Hover over or click '
            f'a node for its ops, output shape, placement and, for CPU ops, why they were not offloaded.</div></div>'
            f'<p class="muted">{len(graph.nodes)} nodes, {len(graph.edges)} edges, '
            f'{len(layout.clusters)} partition box(es); laid out by {escape(layout.engine)}.</p>')


def cpu_reason_rows(report) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """One row per tensor left on the CPU (a refused composite's ops together), in graph order: its name, its
    ops and its distinct reasons."""
    rows: dict[str, tuple[list[str], list[str]]] = {}
    for n in report.cpu_ops():
        ops, reasons = rows.setdefault(n.name or "", ([], []))
        ops.append(n.op)
        reasons.append(n.reason or "no pattern or op rule of the target matches")
    return [(name, tuple(ops), tuple(distinct_reasons(reasons))) for name, (ops, reasons) in rows.items()]


def _reasons_html(reasons) -> Raw:
    if len(reasons) == 1:
        return Raw(escape(reasons[0]))
    return Raw('<ul class="why">' + "".join(f"<li>{escape(r)}</li>" for r in reasons) + "</ul>")


def _summary_section(data: ReportData) -> str:
    total = max(1, sum(r.macs for r in data.summary))
    rows = [[r.target, r.partitions, r.ops, f"{r.macs:,}", f"{100 * r.macs / total:.1f}%"] for r in data.summary]
    out = [table_html(["target", "partitions", "ops", "MACs", "MAC share"], rows, (1, 2, 3, 4), "offload")]
    cpu = cpu_reason_rows(data.report)
    if cpu:
        out.append("<h3>Why these ops stay on the CPU</h3>")
        out.append(table_html(["tensor", "ops", "reason"],
                              [[name_cell(name, short_name(name, 40)) if name else "-", ", ".join(ops), _reasons_html(why)]
                               for name, ops, why in cpu], (), "cpu-reasons"))
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
                       [[name_cell(r["layer"], short_name(r["layer"], 40)), r["kind"], f'{r["cycles"]:,}', f'{r["macs"]:,}'] +
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
                          [[name_cell(t.name, short_name(t.name, 40)), "x".join(map(str, t.shape)), t.dtype, t.placement] + [cell(t, x) for x in execs]
                           for t in r.outputs], (), "outputs"))
    bad = [t for t in r.intermediates if t.differs]
    state = "not compared (outputs only)" if r.outputs_only else \
        f"{len(r.intermediates)} compared, " + (f"{len(bad)} differ." if bad else "all agree.")
    out.append(f"<h3>Intermediate tensors</h3><p>{state}</p>")
    if bad:
        out.append(table_html(["tensor", "shape", "placement"] + execs,
                              [[name_cell(t.label, short_name(t.label, 40)), "x".join(map(str, t.shape)), t.placement] + [cell(t, x) for x in execs]
                               for t in bad[:200]], ()))
    for n in r.notes:
        out.append(f'<p class="muted">{escape(n)}</p>')
    return "".join(out)


def _plans_section(data: ReportData) -> str:
    """--placement cost: the cost plan against all-offload and all-CPU, estimated and simulated."""
    c = data.plans
    rows = [[r.name + (" (returned)" if r.name == "cost" else ""), f"{r.estimated_seconds * 1e3:.3f}",
             f"{r.simulated_seconds * 1e3:.3f}", f"{r.npu_seconds * 1e3:.3f}", f"{r.cpu_seconds * 1e3:.3f}",
             f"{r.transfer_seconds * 1e3:.3f}", r.partitions, f"{r.npu_mac_share * 100:.1f}%"] for r in c.rows]
    out = [f"<p>Cost placement on {escape(c.target)} ({escape(c.npu_config)}) chose the <b>{escape(c.chosen)}</b> "
           f"plan. Estimated: the cost model it decided with; simulated: the plan built and profiled (NPU cycles at "
           f"the configured clock + CPU kernels measured on this machine, best of {c.repeat} + transfers).</p>",
           table_html(["plan", "estimated ms", "simulated ms", "NPU ms", "CPU ms", "transfers ms", "partitions",
                       "MACs on NPU"], rows, (1, 2, 3, 4, 5, 6, 7), "plans"),
           f'<p class="muted">CPU cost table {escape(c.cpu_model)}</p>']
    kept = getattr(data.report.placement, "kept_on_cpu", ()) if data.report.placement is not None else ()
    if kept:
        out.append(f"<details><summary>{len(kept)} unit(s) all-offload would offload, kept on the CPU</summary><ul>"
                   + "".join(f"<li>{escape(short_name(k, 120))}</li>" for k in kept) + "</ul></details>")
    return "".join(out)


def render_report(data: ReportData) -> str:
    m = data.model
    sections = [("comparison", "Comparison", _compare_section(data)),
                ("graph", f"Graph: {data.target} partitions and CPU ops", _graph_section(data)),
                ("summary", "Offload summary", _summary_section(data)),
                ("profile", "NPU per-layer cycles and roofline", _profile_section(data))]
    if data.plans is not None:
        sections.insert(3, ("placement", "Placement plans: cost vs all-offload vs all-CPU", _plans_section(data)))
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
