"""``byoc compile`` and ``byoc run``."""
from __future__ import annotations

import os
import time

import numpy as np

from ..errors import ExecutionError
from .adapters import NpuRecorder, build_module, export_module, load_artifact, simulator_config
from .cmd_model import (add_input_args, add_model_args, add_target_args, model_target, offload_target,
                        partition_model, placement_note)
from .common import Output, UsageError, format_table, load_model, load_npy, make_inputs
from .summary import offload_summary

__all__ = ["register", "output_summary"]


def cmd_compile(args, out: Output) -> int:
    model = load_model(args.model, args.semantics, args.shape, model_target(args), args.strict)
    names = [t.strip() for t in args.target.split(",") if t.strip()]
    if not any(n in ("llvm", "cpu") for n in names):
        raise UsageError(f"--target {args.target!r} has no host target; add llvm (e.g. --target npu,llvm)")
    target = offload_target(args.target)
    cfg = simulator_config(target, args.npu_config) if target else None
    records = None
    if args.tuning_records:
        from npu_sim.tuning import load_records
        records = load_records(args.tuning_records)   # a malformed line fails here, before the build
    with out.progress(3, "compile") as bar:
        bar.step("partition")
        if target:
            pmod, report = partition_model(model, target, args)
            placement_note(report, out)
        else:
            from ..interpreter import bind_params
            pmod = bind_params(model.mod, model.params)
        bar.step("build")
        exe, how = build_module(pmod, args.target, cfg, tuning_records=records)
        bar.step("export")
        fmt = export_module(exe, pmod, args.output, args.target, cfg, model.path)
    rows = offload_summary(pmod)
    tuning = None
    if records is not None:
        notes = list(getattr(exe, "tuning_notes", ()))
        tuning = {"records": args.tuning_records, "tuned_layers": getattr(exe, "tuned_layers", 0), "notes": notes}
        if not cfg:
            notes.append("no NPU-simulator target in --target; the tuning records were not used")
        for n in notes:
            out.note(f"note: tuning records: {n}")
        out.note(f"tuning records {args.tuning_records}: {tuning['tuned_layers']} layer(s) use a tuned tile plan")
    out.json({"artifact": args.output, "bytes": os.path.getsize(args.output), "format": fmt, "target": args.target,
              "codegen": how, "npu_config": cfg.name if cfg else None, "tuning": tuning,
              "summary": [{"target": r.target, "partitions": r.partitions, "ops": r.ops, "macs": r.macs}
                          for r in rows]})
    out.text(f"wrote {args.output} ({os.path.getsize(args.output)} bytes, {fmt}); target {args.target}"
             + (f", NPU config {cfg.name}" if cfg else ""))
    _custom_op_notes(pmod, out)
    return 0


def _custom_op_notes(pmod, out: Output) -> None:
    """An artifact with opaque TFLite custom ops runs only where a kernel is registered for each: say so."""
    from ..ops.custom import custom_kernel, custom_ops_in
    for a in custom_ops_in(pmod["main"]):
        if custom_kernel(a.name) is None:
            out.note(f"note: {a.where()} has no kernel: running the artifact needs one registered "
                     f"(byoc run ARTIFACT --patterns KERNEL.py, a file calling byoc.register_custom_kernel"
                     f"({a.name!r}, fn))")


def output_summary(outputs: list[np.ndarray]) -> list[dict]:
    rows = []
    for i, o in enumerate(outputs):
        flat = o.reshape(-1)
        rows.append({"index": i, "shape": list(o.shape), "dtype": o.dtype.name,
                     "argmax": int(np.argmax(flat)) if flat.size else None,
                     "min": flat.min().item() if flat.size else None, "max": flat.max().item() if flat.size else None,
                     "head": flat[:8].tolist()})
    return rows


def _save_outputs(path: str, outputs: list[np.ndarray]) -> list[str]:
    if len(outputs) == 1:
        paths = [path]
    else:
        stem, ext = os.path.splitext(path)
        paths = [f"{stem}_{i}{ext or '.npy'}" for i in range(len(outputs))]
    for p, o in zip(paths, outputs):
        try:
            with open(p, "wb") as f:  # a file object: np.save would append .npy to a bare name
                np.save(f, o, allow_pickle=False)
        except OSError as e:
            raise ExecutionError(f"cannot write {p!r}: {e.strerror or e}") from None
    return paths


def cmd_run(args, out: Output) -> int:
    for spec in args.input:  # refuse unreadable or pickled inputs before the (slower) artifact load
        load_npy(spec.split("=", 1)[1] if "=" in spec else spec)
    recorder = NpuRecorder() if args.profile else None
    art = load_artifact(args.artifact, recorder)
    if art.func is not None:
        inputs = make_inputs(art.func, args.input, args.seed)
    else:
        inputs = {}
        for spec in args.input:
            if "=" not in spec and len(art.input_names) == 1:
                spec = f"{art.input_names[0]}={spec}"
            if "=" not in spec:
                raise UsageError(f"--input {spec!r}: write --input NAME=FILE.npy")
            name, path = spec.split("=", 1)
            inputs[name] = load_npy(path)
    t0 = time.perf_counter()
    outputs = [np.asarray(o) for o in art.module.run(inputs)]
    wall = time.perf_counter() - t0
    saved = _save_outputs(args.output, outputs) if args.output else []
    doc = {"artifact": args.artifact, "outputs": output_summary(outputs), "saved": saved,
           "wall_seconds": round(wall, 6)}
    rows = output_summary(outputs)
    out.text(format_table(["output", "shape", "dtype", "min", "max", "argmax", "first values"],
                          [[r["index"], "x".join(map(str, r["shape"])), r["dtype"], r["min"], r["max"], r["argmax"],
                            " ".join(str(v) for v in r["head"])] for r in rows], "rllrrrl"))
    for p in saved:
        out.note(f"wrote {p}")
    if args.profile:
        doc["profile"] = _run_profile(art, recorder, wall, out)
    out.json(doc)
    return 0


def _run_profile(art, recorder: NpuRecorder | None, wall: float, out: Output) -> dict:
    from .summary import PartitionProfile, layer_rows
    import npu_sim
    profiles = []
    for name, prog in (recorder.programs.items() if recorder else ()):
        zeros = {b.name: np.zeros(b.shape, b.dtype) for b in prog.inputs}
        profiles.append(PartitionProfile(name, prog, npu_sim.simulate(prog, zeros)[1]))
    rows = layer_rows(profiles)
    out.text()
    out.text(f"host wall time {wall * 1e3:.2f} ms (simulation included)")
    if profiles:
        from .cmd_analyze import profile_table
        out.text(profile_table(profiles))
    elif recorder is not None and not recorder.programs:
        out.text("no NPU partitions in this artifact (or its codegen exposes no programs)")
    estimate = art.module.profile().estimate   # one more run, timing every node
    out.text(estimate.summary())
    return {"wall_seconds": round(wall, 6), "layers": rows,
            "npu_cycles": sum(int(p.stats.total_cycles) for p in profiles), "estimate": estimate.to_json()}


def register(sub) -> None:
    p = sub.add_parser("compile", help="partition, build and write a compiled artifact")
    add_model_args(p)
    add_target_args(p, default="npu,llvm")
    p.add_argument("-o", "--output", required=True, metavar="OUT.byoc", help="artifact to write")
    p.add_argument("--npu-config", metavar="PRESET|FILE", help="NPU preset name or TOML file")
    p.add_argument("--tuning-records", metavar="FILE.jsonl",
                   help="tile plans from `byoc tune` (the best record per layer workload; others are ignored "
                        "with a note)")
    p.set_defaults(handler=cmd_compile)

    p = sub.add_parser("run", help="run a compiled artifact")
    p.add_argument("artifact", metavar="ARTIFACT")
    add_input_args(p)
    p.add_argument("-o", "--output", metavar="Y.npy", help="save the output(s) (Y_0.npy, Y_1.npy, ... for several)")
    p.add_argument("--profile", action="store_true", help="wall time and the NPU per-layer cycle table")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.set_defaults(handler=cmd_run)
