"""Fingerprint of everything the NPU compiler and simulator produce, to prove a speed change changed nothing.

For every preset in ``npu_sim.PRESETS``, every .tflite model (tests/data/mlcommons_tiny, shared/models,
ext/models; duplicates by content once) and both simulator targets (``npu``, ``ethos-u``), partitioned as the CLI
does (``load_model`` with the target's semantics, ``partition_for`` with its defaults): per partition the sha256
of the program bytes, total cycles, every layer's stats and the sha256 of the outputs on seeded random inputs.

    python -m benchmarks.npu_fingerprint OUT.json            # record
    python -m benchmarks.npu_fingerprint OUT.json --diff A.json   # record and compare with A
    ... --models mobilenet,kws --presets ethos-u55-256-like     # a subset (substring match)
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _beside(*parts: str) -> pathlib.Path:
    near = ROOT.parent.joinpath(*parts)
    return near if near.exists() else ROOT.parent.parent.joinpath(*parts)


def model_paths() -> list[pathlib.Path]:
    seen, out = set(), []
    for d in (ROOT / "tests" / "data" / "mlcommons_tiny", _beside("shared", "models"), _beside("ext", "models")):
        for p in sorted(d.glob("*.tflite")):
            h = hashlib.sha256(p.read_bytes()).hexdigest()
            if h not in seen:
                seen.add(h)
                out.append(p)
    return out


def _layer(s) -> dict:
    d = dataclasses.asdict(s)
    d["tile"] = list(d["tile"])
    return d


def fingerprint(models, presets, targets=("npu", "ethos-u")) -> dict:
    import npu_sim
    from byoc.cli.common import load_model
    from byoc.partition import partition_for
    from runtime.npu_codegen import SimulatorCodegen, simulator_codegen_for

    out = {}
    for path in models:
        for target in targets:
            t0 = time.process_time()
            try:
                model = load_model(str(path), "auto", None, target)
                pmod = partition_for(target, model.mod, model.params)
            except Exception as e:  # noqa: BLE001 - recorded, compared like any result
                out[f"{path.name}|{target}"] = {"error": f"{type(e).__name__}: {e}"}
                continue
            codegen = simulator_codegen_for(target) or SimulatorCodegen(target)
            funcs = [(gv.name_hint, f) for gv, f in pmod.sorted_items() if f.attrs.get("Compiler") == target]
            for preset in presets:
                key = f"{path.name}|{target}|{preset}"
                rec = {}
                for name, func in funcs:
                    try:
                        prog = codegen.program(func, name, preset)
                        rng = np.random.default_rng(0)
                        feed = {b.name: rng.integers(np.iinfo(b.dtype).min, np.iinfo(b.dtype).max + 1,
                                                     size=b.shape).astype(b.dtype) for b in prog.inputs}
                        outs, stats = npu_sim.simulate(prog, feed)
                        rec[name] = {
                            "program_sha256": hashlib.sha256(prog.to_bytes()).hexdigest(),
                            "total_cycles": int(stats.total_cycles),
                            "layer_cycles": [int(s.cycles) for s in stats.per_layer],
                            "layer_stats_sha256": hashlib.sha256(json.dumps(
                                [_layer(s) for s in stats.per_layer], sort_keys=True, default=str).encode()
                            ).hexdigest(),
                            "engine_busy": stats.engine_busy, "sram_high_water": stats.sram_high_water,
                            "outputs_sha256": hashlib.sha256(b"".join(o.tobytes() for o in outs)).hexdigest(),
                        }
                    except Exception as e:  # noqa: BLE001
                        rec[name] = {"error": f"{type(e).__name__}: {e}"}
                out[key] = rec
            print(f"{path.name} {target}: {len(funcs)} partitions x {len(presets)} presets, "
                  f"{time.process_time() - t0:.1f} s", flush=True)
    return out


def bench_fingerprint(presets) -> dict:
    """bench_npu's hand-built MobileNetV2 partition, compiled for each preset."""
    import npu_sim
    from benchmarks import bench_npu
    from byoc.frontend import from_tflite
    mod, _ = from_tflite(str(bench_npu.MODEL), semantics="tflm")
    fn, _, _ = bench_npu.npu_partition(mod)
    out = {}
    for preset in presets:
        try:
            prog = npu_sim.compile(fn, preset)
            x = np.random.default_rng(0).integers(-128, 128, size=prog.inputs[0].shape).astype(np.int8)
            outs, stats = npu_sim.simulate(prog, {prog.inputs[0].name: x})
            out[f"bench_npu|mobilenet_v2|{preset}"] = {
                "program_sha256": hashlib.sha256(prog.to_bytes()).hexdigest(),
                "total_cycles": int(stats.total_cycles),
                "layer_cycles": [int(s.cycles) for s in stats.per_layer],
                "layer_stats_sha256": hashlib.sha256(json.dumps(
                    [_layer(s) for s in stats.per_layer], sort_keys=True, default=str).encode()).hexdigest(),
                "outputs_sha256": hashlib.sha256(b"".join(o.tobytes() for o in outs)).hexdigest()}
        except Exception as e:  # noqa: BLE001
            out[f"bench_npu|mobilenet_v2|{preset}"] = {"error": f"{type(e).__name__}: {e}"}
    return out


def diff(a: dict, b: dict) -> list[str]:
    problems = []
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            problems.append(f"{k}: only in {'new' if k in b else 'old'}")
        elif a[k] != b[k]:
            problems.append(f"{k}: differs")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--diff")
    ap.add_argument("--models", default="")
    ap.add_argument("--presets", default="")
    args = ap.parse_args(argv)
    import npu_sim
    models = model_paths()
    if args.models:
        models = [p for p in models if any(s in p.name for s in args.models.split(","))]
    presets = list(npu_sim.PRESETS)
    if args.presets:
        presets = [p for p in presets if p in args.presets.split(",")]
    t0 = time.time()
    fp = fingerprint(models, presets)
    if not args.models or "bench" in args.models:
        fp.update(bench_fingerprint(presets))
    pathlib.Path(args.out).write_text(json.dumps(fp, indent=1, sort_keys=True))
    n = sum(len(v) for v in fp.values())
    print(f"{n} partitions fingerprinted in {time.time() - t0:.0f} s -> {args.out}")
    if args.diff:
        old = json.loads(pathlib.Path(args.diff).read_text())
        old = {k: v for k, v in old.items() if k in fp}
        problems = diff(old, fp)
        print(f"vs {args.diff}: {len(problems)} differ" + "".join("\n  " + p for p in problems[:50]))
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
