"""``byoc tune``: search each NPU layer workload's block (tile) configuration on the simulator and write tuning
records (the ``explore.tune`` module does the work); ``byoc compile --tuning-records FILE`` applies them.

    byoc tune MODEL --target ethos-u --preset ethos-u55-256 --trials 16 -o records.jsonl [--cluster ray://...]
"""
from __future__ import annotations

from .common import Output, format_table


def cmd_tune(args, out: Output) -> int:
    from explore.tune import tune
    with out.progress(args.trials, "tune") as bar:
        res = tune(args.model, target=args.target, npu_config=args.preset, trials=args.trials, output=args.output,
                   workers=args.workers, cluster=args.cluster, seed=args.seed, semantics=args.semantics,
                   on_trial=lambda done, total: bar.step(f"trial {done}/{total}"))
    gain = 1 - res.tuned_cycles / res.default_cycles if res.default_cycles else 0.0
    changed = [r for r in res.layers if r.tuned != r.default]
    out.json({"records": res.records, "workloads": res.workloads, "tuned_workloads": res.tuned_workloads,
              "trials": res.trials, "runs": res.measured, "reverted": res.reverted,
              "default_cycles": res.default_cycles, "tuned_cycles": res.tuned_cycles, "gain": gain,
              "seconds": round(res.seconds, 3),
              "layers": [{"partition": r.partition, "layer": r.name, "op": r.op, "default": r.default,
                          "tuned": r.tuned, "default_cycles": r.default_cycles, "tuned_cycles": r.tuned_cycles}
                         for r in res.layers]})
    if changed:
        from ..report.graph import short_name
        out.text(format_table(["layer", "op", "default tile", "tuned tile", "default cycles", "tuned cycles"],
                              [[short_name(r.name, 48), r.op, r.default, r.tuned, r.default_cycles, r.tuned_cycles]
                               for r in changed], "llllrr"))
        out.text()
    out.text(f"{res.workloads} layer workload(s) over {len(res.layers)} layer(s), {res.trials} trial(s) each: "
             f"{res.tuned_workloads} tuned; NPU cycles {res.default_cycles} -> {res.tuned_cycles} "
             f"({100 * gain:.2f}% fewer); {res.measured} simulator run(s) in {res.seconds:.1f} s")
    out.note(f"wrote {res.records}")
    return 0


def register(sub) -> None:
    from .argtypes import positive_int
    p = sub.add_parser("tune", help="tune NPU tile plans per layer workload on the simulator; write tuning records")
    p.add_argument("model", metavar="MODEL", help="a .tflite or .onnx file")
    p.add_argument("--target", default="ethos-u", help="offload target whose codegen is the NPU simulator "
                                                       "(default ethos-u)")
    p.add_argument("--preset", "--npu-config", dest="preset", default="ethos-u55-256", metavar="PRESET|FILE",
                   help="NPU configuration: a preset name or a TOML file (default ethos-u55-256)")
    p.add_argument("--trials", type=positive_int, default=16, metavar="N",
                   help="tile configurations measured per layer workload, the default included (default 16)")
    p.add_argument("-o", "--output", default="tuning.jsonl", metavar="RECORDS.jsonl",
                   help="the tuning records (JSON lines, one per layer workload; default tuning.jsonl)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampled configurations (default 0)")
    p.add_argument("--semantics", choices=("auto", "litert", "tflm"), default="auto")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local worker processes (default: the CPU count; 1 runs in this process)")
    p.add_argument("--cluster", default=None, metavar="ray://HOST:PORT|auto|local",
                   help="run the trials as tasks on a Ray cluster (pip install 'byoc[cluster]')")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.set_defaults(handler=cmd_tune)
