"""``byoc compare``, ``byoc profile`` and ``byoc report``."""
from __future__ import annotations

import csv
import os

from ..errors import ByocError, CodegenError, ExecutionError
from .adapters import build_module, simulator_config
from .cmd_model import (add_input_args, add_model_args, add_target_args, model_target, offload_target,
                        partition_model, placement_note, plan_comparison)
from .common import EXIT_MISMATCH, Output, UsageError, format_table, human, load_model, make_inputs
from .summary import layer_rows, offload_summary, profile_partitions

__all__ = ["register", "profile_table", "compare_tables"]


def _target(args) -> str:
    t = offload_target(args.target)
    if not t:
        raise UsageError(f"--target {args.target!r} names no offload target (e.g. npu)")
    return t


def _diff_cell(t, executor: str) -> str:
    if executor == t.expected:
        return "(expected)"
    d = next((d for d in t.diffs if d.executor == executor), None)
    if d is None:
        return "-"
    if d.mismatches < 0:
        return "not comparable"
    return "ok" if d.mismatches == 0 else f"{d.mismatches} (max {d.max_diff:g})"


def compare_tables(result, show_all: bool = False) -> str:
    """The executors with the reference each must equal, the outputs, the intermediates (differing ones unless
    ``show_all``), the notes and the verdict."""
    execs = [e.name for e in result.executors if e.available]
    lines = [f"reference: {result.reference}", ""]
    lines.append(format_table(["executor", "what", "must equal", "seconds", "note"],
                              [[e.name, e.description if e.available else f"{e.description} (unavailable)",
                                e.checked_against or ("(the reference)" if e.available else "-"),
                                f"{e.seconds:.2f}", e.note or ""] for e in result.executors], "lllrl"))
    lines.append("")
    head = ["output", "producer", "shape", "dtype", "placement", "expected from"] + execs
    lines.append(format_table(head, [[t.name, t.producer, "x".join(map(str, t.shape)), t.dtype, t.placement,
                                      t.expected] + [_diff_cell(t, x) for x in execs] for t in result.outputs],
                              "l" * len(head)))
    lines.append("")
    if result.outputs_only:
        lines.append("intermediate tensors: not compared (--outputs-only)")
    else:
        shown = [t for t in result.intermediates if show_all or t.differs]
        differ = sum(t.differs for t in result.intermediates)
        by_oracle = sum(t.expected == result.oracle for t in result.intermediates) if result.oracle else 0
        src = f" ({by_oracle} against {result.oracle}, {len(result.intermediates) - by_oracle} against evaluate)" \
            if result.oracle else " (against evaluate)"
        state = f"{differ} differ" if differ else "all agree"
        lines.append(f"intermediate tensors: {len(result.intermediates)} compared{src}, {state}"
                     + (" (listed in topological order)" if shown else ""))
        if shown:
            head = ["tensor", "producer", "shape", "placement", "expected from"] + execs
            lines.append(format_table(head, [[t.name, t.producer, "x".join(map(str, t.shape)), t.placement,
                                              t.expected] + [_diff_cell(t, x) for x in execs] for t in shown[:200]],
                                      "l" * len(head)))
    lines.append("")
    lines.extend(result.notes)
    lines.append(result.verdict())
    return "\n".join(lines)


def run_compare(args, model, out: Output, partitioned=None):
    from ..compare import compare_model
    target = offload_target(args.target)   # "" (--target llvm): compare the CPU build and the oracle only
    cfg = simulator_config(target, getattr(args, "npu_config", None)) if target else None
    inputs = make_inputs(model.mod["main"], args.input, args.seed)
    if partitioned is None and target:
        partitioned = partition_model(model, target, args)
        placement_note(partitioned[1], out)
    with out.progress(4, "compare") as bar:
        result = compare_model(model, inputs, target, npu_config=cfg, oracle=not args.no_oracle,
                               npu_executor=args.npu_executor, progress=bar.step, partitioned=partitioned,
                               outputs_only=getattr(args, "outputs_only", False))
    return result, inputs


def cmd_compare(args, out: Output) -> int:
    model = load_model(args.model, args.semantics, args.shape, model_target(args), args.strict)
    result, inputs = run_compare(args, model, out)
    saved = []
    if args.output_dir:
        from ..compare import save_outputs
        saved = save_outputs(result, inputs, args.output_dir)
    out.json({**result.to_json(), "seed": args.seed, "semantics": model.semantics, "saved": saved})
    out.text(compare_tables(result, args.all))
    if saved:
        out.text(f"wrote {len(saved)} files to {args.output_dir} (manifest.json names each):")
        for p in saved:
            out.text(f"  {p}")
    return 0 if result.ok else EXIT_MISMATCH


def profile_table(profiles) -> str:
    """Per-layer rows (long TFLite names shortened as in the report; --json and --csv keep them whole)."""
    from ..report.graph import short_name
    areas: list[str] = []
    for p in profiles:
        for a in p.program.config.memory_areas:
            if a.name not in areas:
                areas.append(a.name)
    rows = []
    for r in layer_rows(profiles):
        rows.append([short_name(r["layer"], 48), r["kind"], r["cycles"], human(r["macs"])] +
                    [human(r["bytes"].get(a, 0)) for a in areas] +
                    [f"{r['utilisation']:.2f}", r["bound"], r["roofline_cycles"]])
    head = ["layer", "kind", "cycles", "MACs"] + [f"{a} bytes" for a in areas] + ["util", "bound", "roofline"]
    lines = [format_table(head, rows, "llrr" + "r" * len(areas) + "rlr")]
    for p in profiles:
        s = p.stats
        lines.append(f"@{p.partition}: {s.total_cycles} cycles = {s.total_cycles / s.clock_hz * 1e3:.3f} ms at "
                     f"{s.clock_hz / 1e6:g} MHz ({s.config_name}), {human(s.total_macs)} MACs, "
                     f"{s.command_count} commands")
    return "\n".join(lines)


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    except OSError as e:
        raise ExecutionError(f"cannot write {path!r}: {e.strerror or e}") from None


def _csv_text(rows: list[dict], areas: list[str]) -> str:
    import io
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["partition", "layer", "composite", "kind", "cycles", "exclusive_cycles", "macs"] +
               [f"bytes_{a}" for a in areas] + ["utilisation", "bound", "roofline_cycles"])
    for r in rows:
        w.writerow([r["partition"], r["layer"], r["composite"], r["kind"], r["cycles"], r["exclusive_cycles"],
                    r["macs"]] + [r["bytes"].get(a, 0) for a in areas] +
                   [r["utilisation"], r["bound"], r["roofline_cycles"]])
    return buf.getvalue()


def run_profile(args, model, out: Output, partitioned=None):
    target = _target(args)
    cfg = simulator_config(target, args.npu_config)
    if cfg is None:
        raise CodegenError(f"target {target!r} does not run on the NPU simulator: no per-layer cycle model",
                           hint="byoc profile measures it through its codegen's runner instead")
    pmod, report = partitioned or partition_model(model, target, args)
    if partitioned is None:
        placement_note(report, out)
    n = sum(1 for _, f in pmod.sorted_items() if f.attrs.get("Compiler") == target)
    with out.progress(n, "simulate") as bar:
        profiles = profile_partitions(pmod, target, cfg.config, bar.step)
    return pmod, report, cfg, profiles


def run_trace(args, model, pmod, cfg) -> str:
    """Build the heterogeneous module, run it once on the seeded inputs and return its trace: CPU kernels at
    their measured times and NPU partitions at their simulated cycles, in the order the executor runs them."""
    exe, _ = build_module(pmod, f"{_target(args)},llvm", cfg)
    return exe.profile(make_inputs(model.mod["main"], args.input, args.seed)).trace_json()


def profile_device(args, model, target: str, out: Output) -> int:
    """``byoc profile`` of a target whose codegen is not the NPU simulator: build ``<target>,llvm`` and time
    every node (``module.profile()``: the runner's ``device_profile()`` cycles when it has one)."""
    from ..build import build
    pmod, _ = partition_model(model, target, args)
    inputs = make_inputs(model.mod["main"], getattr(args, "input", ()), getattr(args, "seed", 0))
    with out.progress(2, "profile") as bar:
        bar.step("build")
        module = build(pmod, target=f"{target},llvm")
        bar.step("run")
        prof = module.profile(inputs)
    out.json({"model": model.path, "target": target, **prof.to_json()})
    out.text(prof.table())
    return 0


def cmd_profile(args, out: Output) -> int:
    model = load_model(args.model, args.semantics, args.shape, model_target(args), args.strict)
    if simulator_config(_target(args), None) is None:
        return profile_device(args, model, _target(args), out)
    pmod, report, cfg, profiles = run_profile(args, model, out)
    plans = plan_comparison(model, _target(args), args, (pmod, report), out)
    rows = layer_rows(profiles)
    areas = [a.name for a in cfg.config.memory_areas]
    summary = offload_summary(pmod)
    cpu = next((r for r in summary if r.target == "cpu"), None)
    if args.csv:
        _write(args.csv, _csv_text(rows, areas))
        out.note(f"wrote {args.csv}")
    if args.trace:
        _write(args.trace, run_trace(args, model, pmod, cfg))
        out.note(f"wrote {args.trace} (one inference: open in ui.perfetto.dev or chrome://tracing)")
    total = sum(int(p.stats.total_cycles) for p in profiles)
    out.json({"model": model.path, "npu_config": cfg.name, "clock_hz": cfg.config.clock_hz, "layers": rows,
              "total_cycles": total, "partitions": [{"name": p.partition, "cycles": int(p.stats.total_cycles),
                                                     "macs": int(p.stats.total_macs),
                                                     "commands": int(p.stats.command_count)} for p in profiles],
              "cpu": {"ops": cpu.ops, "macs": cpu.macs} if cpu else None,
              **({"placement": {**report.placement.to_json(), "simulated": plans.to_json()}} if plans else {})})
    if profiles:
        out.text(profile_table(profiles))
    else:
        out.text("nothing is offloaded to the NPU: no layer to simulate")
    if cpu:
        out.text(f"host CPU: {cpu.ops} op(s), {human(cpu.macs)} MACs (not simulated)")
    if plans is not None:
        out.text()
        out.text(plans.table())
    return 0


def cmd_report(args, out: Output) -> int:
    from ..report import ReportData, write_report
    model = load_model(args.model, args.semantics, args.shape, model_target(args), args.strict)
    target = _target(args)
    partitioned = partition_model(model, target, args)
    pmod, report = partitioned
    profiles, profile_error = [], None
    if simulator_config(target, None) is not None:
        try:
            profiles = run_profile(args, model, out, partitioned)[3]
        except ByocError as e:
            profile_error = str(e)
    result, compare_error = None, None
    if not args.no_compare:
        try:
            result = run_compare(args, model, out, partitioned)[0]
        except ByocError as e:
            compare_error = str(e)
    plans = None
    if args.placement == "cost":
        try:
            plans = plan_comparison(model, target, args, partitioned, out)
        except ByocError as e:
            profile_error = (profile_error + "; " if profile_error else "") + f"placement plans: {e}"
    data = ReportData(model=model, partitioned=pmod, report=report, target=target, summary=offload_summary(pmod),
                      profiles=profiles, comparison=result, plans=plans,
                      problems=tuple(x for x in (profile_error, compare_error) if x))
    size = write_report(args.output, data)
    out.json({"report": os.path.abspath(args.output), "bytes": size,
              "verdict": result.verdict() if result else None, "ok": result.ok if result else None,
              "problems": list(data.problems)})
    out.text(f"wrote {os.path.abspath(args.output)} ({size} bytes)")
    if result is not None:
        out.text(result.verdict())
    for p in data.problems:
        out.text(f"note: {p}")
    return 0 if result is None or result.ok else EXIT_MISMATCH


def _compare_args(p) -> None:
    add_input_args(p)
    p.add_argument("--no-oracle", action="store_true", help="skip TFLite's / onnxruntime's reference")
    p.add_argument("--npu-executor", choices=("auto", "simulator"), default="auto",
                   help="auto: the registered npu codegen when there is one, else the simulator adapter")
    p.add_argument("--outputs-only", action="store_true",
                   help="compare the outputs only (by default every intermediate tensor an executor exposes is "
                        "compared too, and any difference is a mismatch)")


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare every executor with the reference of the model's semantics "
                                       "(LiteRT BUILTIN_REF, TFLite Micro, onnxruntime), output and intermediate "
                                       "tensors; exit 1 when any compared tensor differs")
    add_model_args(p)
    add_target_args(p)
    _compare_args(p)
    p.add_argument("--npu-config", metavar="PRESET|FILE", help="NPU preset name or TOML file")
    p.add_argument("--all", action="store_true", help="list every intermediate tensor, not only differing ones")
    p.add_argument("-o", "--output-dir", metavar="DIR",
                   help="save the inputs and every executor's outputs as .npy files (DIR/manifest.json lists them)")
    p.set_defaults(handler=cmd_compare)

    p = sub.add_parser("profile", help="simulate the NPU partitions: per-layer cycles, traffic, roofline")
    add_model_args(p)
    add_target_args(p)
    p.add_argument("--npu-config", metavar="PRESET|FILE", help="NPU preset name or TOML file")
    p.add_argument("--csv", metavar="F.csv", help="write the per-layer table as CSV")
    p.add_argument("--trace", metavar="F.json",
                   help="build the model, run one inference and write its Chrome/Perfetto trace (CPU kernels as "
                        "measured, NPU partitions per engine channel as simulated, in execution order)")
    add_input_args(p)
    p.set_defaults(handler=cmd_profile)

    p = sub.add_parser("report", help="write a self-contained HTML report (graph, profile, comparison)")
    add_model_args(p)
    add_target_args(p)
    _compare_args(p)
    p.add_argument("--npu-config", metavar="PRESET|FILE", help="NPU preset name or TOML file")
    p.add_argument("--no-compare", action="store_true", help="skip running the executors")
    p.add_argument("-o", "--output", required=True, metavar="report.html")
    p.set_defaults(handler=cmd_report)
