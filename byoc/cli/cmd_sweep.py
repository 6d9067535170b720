"""``byoc sweep``: a design-space sweep over NPU configurations (the ``explore`` package does the work).

    byoc sweep MODEL... --axis mac.ublock_c=4,8,16 --axis sram_kib=64,128,256 --db sweep.sqlite -o sweep/
    byoc sweep MODEL --method lhs --samples 200 --axis clock_hz=100e6:1e9:log ... [--cluster ray://HOST:10001]

Rerunning the same command resumes: the points already in ``--db`` are skipped.
"""
from __future__ import annotations

from .common import Output


def cmd_sweep(args, out: Output) -> int:
    from explore import Space, sweep
    from explore.space import parse_axis
    space = Space(tuple(parse_axis(a) for a in args.axis), args.method, args.samples, args.seed)
    res = sweep(args.model, space, args.db, target=args.target, preset=args.preset, workers=args.workers,
                cluster=args.cluster, measure_cpu_time=not args.no_cpu_time, out_dir=args.out,
                progress=not args.json, semantics=args.semantics)
    out.json({"db": res.db, "points": res.total, "computed": res.computed, "resumed": res.skipped,
              "errors": res.errors, "outputs": list(res.outputs)})
    out.text(f"{res.total} point(s): {res.computed} computed, {res.skipped} already in {res.db}, "
             f"{res.errors} error(s)")
    for path in res.outputs:
        out.text(f"wrote {path}")
    return 0


def register(sub) -> None:
    from .argtypes import positive_int
    p = sub.add_parser("sweep", help="sweep NPU configurations over models: results table, Pareto front, plots")
    p.add_argument("model", nargs="+", metavar="MODEL", help="one or more .tflite or .onnx files")
    p.add_argument("--axis", action="append", default=[], metavar="PATH=V1,V2|LOW:HIGH[:log][:int]",
                   help="a swept field: preset, target, clock_hz, weight_compression (on/off or a ratio), "
                        "sram_kib, mac.<field>, buffer.<name>.size_bytes, area.<name>.<field>, overheads.<field>; "
                        "repeatable")
    p.add_argument("--method", choices=("grid", "random", "lhs"), default="grid",
                   help="grid (every combination), random or lhs (Latin hypercube) sampling (default grid)")
    p.add_argument("--samples", type=positive_int, default=0, metavar="N", help="points of a random/lhs sweep")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--preset", default="ethos-u55-256-like", help="the starting configuration (npu_sim.PRESETS)")
    p.add_argument("--target", default="npu", help="offload target (default npu)")
    p.add_argument("--semantics", choices=("auto", "litert", "tflm"), default="auto")
    p.add_argument("--db", default="sweep.sqlite", help="SQLite file the points go into (resumed if it exists)")
    p.add_argument("-o", "--out", default=None, metavar="DIR",
                   help="write results.csv/.parquet, pareto.csv, plots (PNG, SVG) and sweep.html here")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local worker processes (default: the CPU count; 1 runs in this process)")
    p.add_argument("--cluster", default=None, metavar="ray://HOST:PORT|auto|local",
                   help="run the points as tasks on a Ray cluster (pip install 'byoc[cluster]')")
    p.add_argument("--no-cpu-time", action="store_true",
                   help="do not build and time the model's CPU part (end-to-end time then counts NPU + transfers)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.set_defaults(handler=cmd_sweep)
