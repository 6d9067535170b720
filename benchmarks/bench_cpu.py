"""CPU backend benchmark: MobileNetV2 (int8) single-thread latency against LiteRT, measured in the same run.

    .venv/bin/python -m benchmarks.bench_cpu [--model PATH] [--runs N] [--threads T]

Peers: ai_edge_litert with BUILTIN_REF (the bit-exact reference kernels) and with the default resolver (XNNPACK),
both with one thread. Also reports cold compile time (fresh cache directory, fresh process) and warm compile time
(same cache directory, fresh process). Ratios are ours / theirs; lower is better.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DEFAULT_MODEL = Path(__file__).resolve().parents[2] / "shared" / "models" / "mobilenet_v2_quantized_1x3x224x224.tflite"

_BUILD_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
import byoc
from byoc.frontend import from_tflite
mod, params = from_tflite(sys.argv[1])
t1 = time.perf_counter()
exe = byoc.build(mod, target="llvm", params=params)
t2 = time.perf_counter()
from byoc.backend.llvm import get_codegen
s = get_codegen().stats
print(json.dumps({"import_s": t1 - t0, "build_s": t2 - t1, "compiled": s.compiled, "disk_hits": s.disk_hits}))
"""


def _build_in_fresh_process(model: Path, cache: str) -> dict:
    env = dict(os.environ, BYOC_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", _BUILD_SCRIPT, str(model)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _litert(model: Path, reference: bool):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    kwargs = {"experimental_op_resolver_type": OpResolverType.BUILTIN_REF} if reference else {}
    interp = Interpreter(model_path=str(model), num_threads=1, **kwargs)
    interp.allocate_tensors()
    return interp


def measure(model: Path = DEFAULT_MODEL, runs: int = 30, threads: int = 1) -> dict:
    """All figures of one benchmark run (see the module docstring)."""
    args = argparse.Namespace(model=Path(model), runs=runs, threads=threads)
    import byoc
    from byoc.frontend import from_tflite

    with tempfile.TemporaryDirectory(prefix="byoc-bench-cache-") as cache:
        cold = _build_in_fresh_process(args.model, cache)
        warm = _build_in_fresh_process(args.model, cache)

    mod, params = from_tflite(str(args.model))
    exe = byoc.build(mod, target="llvm", params=params, num_threads=args.threads)
    p = mod["main"].params[0]
    t = p.type_annotation
    x = np.random.RandomState(0).randint(-128, 128, t.shape).astype(t.dtype)
    exe.set_input(p.name_hint, x)

    ref = _litert(args.model, reference=True)
    xnn = _litert(args.model, reference=False)
    for interp in (ref, xnn):
        interp.set_tensor(interp.get_input_details()[0]["index"], x)

    ours_out = exe.run()[0]
    ref.invoke()
    ref_out = ref.get_tensor(ref.get_output_details()[0]["index"])
    bit_exact = bool(np.array_equal(ours_out.reshape(ref_out.shape), ref_out))

    # Interleave the measurements so that background load affects every contender alike.
    samples: dict[str, list[float]] = {"ours": [], "xnn": [], "ref": []}
    exe.run()
    xnn.invoke()
    for i in range(args.runs):
        for name, fn in (("ours", exe.run), ("xnn", xnn.invoke)) + ((("ref", ref.invoke),) if i % 5 == 0 else ()):
            t = time.perf_counter()
            fn()
            samples[name].append((time.perf_counter() - t) * 1e3)
    ours_ms, xnn_ms, ref_ms = (statistics.median(samples[k]) for k in ("ours", "xnn", "ref"))
    result = {
        "model": args.model.name,
        "threads": args.threads,
        "ours_ms": round(ours_ms, 3),
        "litert_builtin_ref_ms": round(ref_ms, 3),
        "litert_xnnpack_ms": round(xnn_ms, 3),
        "ratio_vs_builtin_ref": round(ours_ms / ref_ms, 4),
        "ratio_vs_xnnpack": round(ours_ms / xnn_ms, 3),
        "ours_min_ms": round(min(samples["ours"]), 3),
        "litert_xnnpack_min_ms": round(min(samples["xnn"]), 3),
        "ratio_vs_xnnpack_min": round(min(samples["ours"]) / min(samples["xnn"]), 3),
        "bit_exact_vs_builtin_ref": bit_exact,
        "cold_build_s": round(cold["build_s"], 2),
        "cold_kernels_compiled": cold["compiled"],
        "warm_build_s": round(warm["build_s"], 2),
        "warm_disk_hits": warm["disk_hits"],
        "kernels": len(exe.kernel_symbols),
        "unique_kernels": len(set(exe.kernel_symbols)),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
    return result


def run() -> list[dict]:
    """Rows for benchmarks/run.py."""
    r = measure()
    name = f"{r['model']} CPU-only latency, {r['threads']} thread"
    return [
        {"name": name, "value": r["ours_ms"], "unit": "ms", "peer": "LiteRT BUILTIN_REF (1 thread)",
         "peer_value": r["litert_builtin_ref_ms"], "ratio": r["ratio_vs_builtin_ref"], "target": "ratio ≤ 0.1"},
        {"name": name, "value": r["ours_ms"], "unit": "ms", "peer": "LiteRT default resolver / XNNPACK (1 thread)",
         "peer_value": r["litert_xnnpack_ms"], "ratio": r["ratio_vs_xnnpack"], "target": "ratio ≤ 2"},
        {"name": "MobileNetV2 cold build (fresh cache, fresh process)", "value": r["cold_build_s"], "unit": "s",
         "target": "≤ 10 s"},
        {"name": "MobileNetV2 warm build (disk cache, fresh process)", "value": r["warm_build_s"], "unit": "s",
         "target": "≤ 1 s"},
        {"name": "MobileNetV2 CPU output bit-exact vs BUILTIN_REF", "value": r["bit_exact_vs_builtin_ref"],
         "unit": ""},
    ]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1, help="threads for our module (peers always use 1)")
    args = ap.parse_args(argv)
    result = measure(args.model, args.runs, args.threads)
    ours_ms, ref_ms, xnn_ms = result["ours_ms"], result["litert_builtin_ref_ms"], result["litert_xnnpack_ms"]
    cold, warm, bit_exact = result["cold_build_s"], result["warm_build_s"], result["bit_exact_vs_builtin_ref"]
    print(json.dumps(result, indent=2))
    print(f"ours {ours_ms:.2f} ms | BUILTIN_REF {ref_ms:.2f} ms (ratio {ours_ms / ref_ms:.3f}, target ≤ 0.1) | "
          f"XNNPACK {xnn_ms:.2f} ms (ratio {ours_ms / xnn_ms:.2f}, target ≤ 2) | bit-exact vs REF: {bit_exact} | "
          f"cold build {cold:.1f} s, warm build {warm:.2f} s")
    return result


if __name__ == "__main__":
    main()
