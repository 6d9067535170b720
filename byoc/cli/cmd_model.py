"""``byoc import``, ``byoc partition`` and ``byoc patterns``."""
from __future__ import annotations

import argparse

from .argtypes import positive_int, seed
from .common import Output, format_table, human, load_model
from .shapes import shape_spec
from .summary import offload_summary

__all__ = ["register", "add_model_args", "add_target_args", "add_input_args", "partition_model", "plan_comparison",
           "placement_note"]


def add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="a .tflite or .onnx file")
    p.add_argument("--semantics", choices=("auto", "litert", "tflm"), default="auto",
                   help="TFLite arithmetic to reproduce: LiteRT's reference kernels or TFLite Micro's "
                        "(auto: LiteRT, or TFLite Micro for files LiteRT refuses)")
    p.add_argument("--shape", action="append", default=[], type=shape_spec, metavar="NAME=D0,D1,...",
                   help="static shape of an input with dynamic dimensions (ONNX; repeat per input)")
    p.add_argument("--strict", action="store_true",
                   help="refuse a TFLite model with CUSTOM operators byoc has no converter for (exit 3). By default "
                        "they are imported as opaque ops: they stay on the CPU, and the model can be partitioned, "
                        "profiled and reported, but executing it needs a kernel (byoc.register_custom_kernel)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def add_target_args(p: argparse.ArgumentParser, default: str = "npu") -> None:
    p.add_argument("--target", default=default, help=f"offload target (default {default})")
    p.add_argument("--keep-compute-free", action="store_true",
                   help="keep partitions without multiply-accumulate work on the accelerator (by default they "
                        "go back to the CPU, like Ethos-N's InlineNonComputeIntensivePartitions, except on "
                        "a target whose vendor compiler places them, such as ethos-u: Vela does)")
    p.add_argument("--min-partition-size", type=positive_int, default=1, metavar="N",
                   help="partitions with fewer ops go back to the CPU (default 1)")
    unprofitable = p.add_mutually_exclusive_group()
    unprofitable.add_argument("--keep-unprofitable", action="store_true",
                              help="offload even partitions (and entry layers without MACs) whose NPU cycles plus "
                                   "boundary transfers cost more than their ops on the host (by default they go "
                                   "back to the CPU and the report says why; on a target whose vendor compiler "
                                   "places them, such as ethos-u with Vela, they stay and a note names them)")
    unprofitable.add_argument("--give-back-unprofitable", action="store_true",
                              help="give such layers back to the CPU on every target, ethos-u included")
    p.add_argument("--placement", choices=("all", "cost"), default="all",
                   help="all: offload every region the pattern table allows, then the give-back rules above "
                        "(default); cost: choose NPU or CPU per region by estimated end-to-end time, boundary "
                        "transfers and partition launches included (docs/placement.md), and show the plan against "
                        "all-offload and all-CPU")


def add_input_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", action="append", default=[], metavar="[NAME=]FILE.npy",
                   help="an input tensor (.npy, never unpickled); others are random")
    p.add_argument("--seed", type=seed, default=0, help="seed of the random inputs (default 0)")


def offload_target(target: str) -> str:
    """``--target npu`` or ``npu,llvm`` → the pattern-table target (the non-host name)."""
    names = [t.strip() for t in target.split(",") if t.strip() and t.strip() not in ("llvm", "cpu")]
    return names[0] if names else ""


def model_target(args) -> str:
    """The offload target a command's ``--target`` names ("" without one): it may choose the import semantics."""
    t = getattr(args, "target", None)
    return offload_target(t) if isinstance(t, str) else ""


def partition_model(model, target: str, args):
    from ..partition import partition_for
    if getattr(args, "placement", "all") == "cost":
        return partition_for(target, model.mod, model.params, return_report=True, placement="cost",
                             npu_config=getattr(args, "npu_config", None))
    return partition_for(target, model.mod, model.params, return_report=True,
                         min_partition_size=getattr(args, "min_partition_size", 1),
                         **give_back_policies(target, getattr(args, "keep_compute_free", False),
                                              getattr(args, "keep_unprofitable", False),
                                              getattr(args, "give_back_unprofitable", False)))


def give_back_policies(target: str, keep_compute_free: bool = False, keep_unprofitable: bool = False,
                       give_back_unprofitable: bool = False) -> dict:
    """``partition_for``'s give-back options as the CLI sets them for ``target`` (its flags off by default): a
    target placed like its vendor compiler (ethos-u: Vela) keeps compute-free partitions and the boundary rule
    only advises."""
    from patterns import vendor_compiler
    vendor = vendor_compiler(target) is not None
    boundary = False if keep_unprofitable else True if give_back_unprofitable or not vendor else "advise"
    return dict(inline_non_mac=not (keep_compute_free or vendor), boundary_rule=boundary)


def plan_comparison(model, target: str, args, partitioned, out: Output):
    """``--placement cost``: the cost plan, all-offload and all-CPU built and profiled on the seeded inputs
    (``byoc.plans``); None otherwise."""
    if getattr(args, "placement", "all") != "cost":
        return None
    from ..errors import NoKernelError
    from ..plans import simulate_plans
    from .common import make_inputs
    inputs = make_inputs(model.mod["main"], getattr(args, "input", ()), getattr(args, "seed", 0))
    try:
        with out.progress(3, "plans") as bar:
            return simulate_plans(model.mod, model.params, target, inputs,
                                  npu_config=getattr(args, "npu_config", None), partitioned=partitioned,
                                  progress=bar.step)
    except NoKernelError as e:   # the plans are run to be timed: an opaque custom op without a kernel cannot run
        out.note(f"note: the placement plans were not simulated: {e.op_name} (TFLite operator {e.operator_index}) "
                 f"has no kernel (docs/custom-ops.md)")
        return None


def placement_note(report, out: Output) -> None:
    """One line on stderr saying what cost placement chose (commands that do not compare the plans)."""
    if getattr(report, "placement", None) is not None:
        out.note(report.placement.summary())


def _io(func) -> dict:
    def t(x):
        tt = getattr(x, "_checked_type", None) or getattr(x, "type_annotation", None)
        return {"shape": [int(d) for d in tt.shape], "dtype": str(tt.dtype)} if hasattr(tt, "shape") else {}
    return {"inputs": [dict(name=p.name_hint, **t(p)) for p in func.params]}


def cmd_import(args, out: Output) -> int:
    from ..transform.infer_type import InferType
    model = load_model(args.model, args.semantics, args.shape, model_target(args), args.strict)
    mod = InferType()(model.mod)
    text = mod.astext(show_meta_data=args.meta)
    from ..ops.custom import custom_kernel, custom_ops_in
    custom = [{"op": a.opcode, "operator_index": a.operator_index, "file_offset": a.file_offset,
               "kernel_registered": custom_kernel(a.name) is not None} for a in custom_ops_in(mod["main"])]
    out.json({"model": model.path, "format": model.kind, "semantics": model.semantics, **_io(mod["main"]),
              "custom_ops": custom, "ir": text})
    out.text(text)
    for c in custom:
        if not c["kernel_registered"]:
            out.note(f"note: {c['op']} (TFLite operator {c['operator_index']}) is imported as an opaque op without a "
                     f"kernel: the model can be partitioned, profiled and reported, not executed "
                     f"(docs/custom-ops.md)")
    return 0


def summary_table(rows) -> str:
    return format_table(["target", "partitions", "ops", "MACs", "MAC share"],
                        [[r.target, r.partitions, r.ops, human(r.macs),
                          f"{100 * r.macs / max(1, sum(x.macs for x in rows)):.1f}%"] for r in rows], "lrrrr")


def reasons_table(report, width: int = 100) -> str:
    """CPU-resident ops grouped by tensor and reason, the reason wrapped under its ops."""
    import textwrap
    cpu = report.cpu_ops()
    if not cpu:
        return "every op is offloaded"
    groups: list[tuple[str, str, list[str]]] = []
    for n in cpu:
        reason = n.reason or "no pattern or op rule of the target matches"
        if groups and groups[-1][0] == (n.name or "-") and groups[-1][1] == reason:
            groups[-1][2].append(n.op)
        else:
            groups.append((n.name or "-", reason, [n.op]))
    lines = [f"{len(cpu)} op(s) stay on the CPU:"]
    for name, reason, ops in groups:
        lines.append(f"  {name}  ({', '.join(ops)})")
        lines.extend(textwrap.wrap(reason, width, initial_indent="      ", subsequent_indent="      "))
    return "\n".join(lines)


def partition_json(pmod, report, rows) -> dict:
    return {"summary": [{"target": r.target, "partitions": r.partitions, "ops": r.ops, "macs": r.macs}
                        for r in rows],
            "partitions": [{"name": p.name, "target": p.target, "ops": len(p.ops), "composites": list(p.composites)}
                           for p in report.partitions],
            "cpu_ops": [{"op": n.op, "name": n.name, "reason": n.reason, "inner_ops": list(n.inner_ops)}
                        for n in report.cpu_ops()],
            "notes": list(report.notes)}


def cmd_partition(args, out: Output) -> int:
    model = load_model(args.model, args.semantics, args.shape, model_target(args), args.strict)
    target = offload_target(args.target)
    if not target:
        from .common import UsageError
        raise UsageError(f"--target {args.target!r} names no offload target (e.g. npu)")
    pmod, report = partition_model(model, target, args)
    rows = offload_summary(pmod)
    text = pmod.astext(show_meta_data=False)
    plans = plan_comparison(model, target, args, (pmod, report), out)
    out.json({"model": model.path, "target": target, **partition_json(pmod, report, rows), "ir": text,
              **({"placement": {**report.placement.to_json(), "simulated": plans.to_json()}} if plans else {})})
    if not args.report:
        out.text(text)
        out.text()
    out.text(summary_table(rows))
    if plans is not None:
        out.text()
        out.text(plans.table())
    if args.report:
        out.text()
        for p in report.partitions:
            out.text(f"@{p.name}: {len(p.ops)} ops; composites: {_counted(p.composites)}")
        out.text()
        out.text(reasons_table(report))
        shown = {n.reason for n in report.cpu_ops()}
        for n in report.notes:
            if n not in shown:
                out.text(n)
    return 0


def _counted(names) -> str:
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(f"{k} ×{v}" if v > 1 else k for k, v in sorted(counts.items())) or "none"


def cmd_patterns(args, out: Output) -> int:
    from patterns import describe_rules, registered_targets
    targets = [args.target] if args.target else registered_targets()
    doc = {}
    for t in targets:
        rules = describe_rules(t)
        doc[t] = [{"name": r.name, "kind": r.kind, "rules": list(r.rules)} for r in rules]
        out.text(f"== {t}: {sum(r.kind == 'composite' for r in rules)} composite pattern(s), "
                 f"{sum(r.kind == 'op' for r in rules)} single-op rule(s)")
        for r in rules:
            out.text(f"{r.name} ({r.kind})")
            for line in r.rules or ("(no conditions)",):
                out.text(f"  - {line}")
        out.text()
    out.json({"targets": doc})
    return 0


def register(sub) -> None:
    p = sub.add_parser("import", help="import a model and print its IR")
    add_model_args(p)
    p.add_argument("--meta", action="store_true", help="include the constants' metadata section")
    p.set_defaults(handler=cmd_import)

    p = sub.add_parser("partition", help="partition a model for a target and explain the placement")
    add_model_args(p)
    add_target_args(p)
    p.add_argument("--report", action="store_true",
                   help="print the partitions and, for every op left on the CPU, why (instead of the IR)")
    p.add_argument("--npu-config", metavar="PRESET|FILE", help="NPU preset name or TOML file (--placement cost)")
    add_input_args(p)
    p.set_defaults(handler=cmd_partition)

    register_calibrate(sub)

    p = sub.add_parser("patterns", help="list the registered pattern tables and their support rules")
    p.add_argument("target", nargs="?", help="one target (default: all)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.set_defaults(handler=cmd_patterns)


def cmd_calibrate(args, out: Output) -> int:
    """Measure (or show the cached) CPU cost table cost-driven placement uses on this machine."""
    from ..transform.cpu_cost import cost_cache_path, load_or_calibrate, machine_fingerprint
    with out.progress(2, "calibrate") as bar:
        model = load_or_calibrate(force=args.force, progress=bar.step)
    path = cost_cache_path(machine_fingerprint()[0])
    out.json({**model.to_json(), "cache": str(path) if path else None})
    out.text(model.table())
    out.text(f"cache: {path}" if path else "cache: off (BYOC_CACHE_DIR=off)")
    return 0


def register_calibrate(sub) -> None:
    p = sub.add_parser("calibrate", help="measure this machine's CPU kernel cost table (used by --placement cost)")
    p.add_argument("--force", action="store_true", help="measure again even when a cached table exists")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.set_defaults(handler=cmd_calibrate)
