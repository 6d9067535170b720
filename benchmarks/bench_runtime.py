"""Heterogeneous runtime benchmark: the graph executor's own overhead, and MobileNetV2 on npu,llvm.

    .venv/bin/python -m benchmarks.bench_runtime [--runs N]

* Executor overhead: a model of 200 tiny ops (each its own kernel). ``run()`` per inference against the sum of
  its kernels' times (each kernel called directly through its ctypes entry point, same arguments, same order,
  in the same run). Target: ratio ≤ 2.
* MobileNetV2 (``../shared/models``), partitioned for the NPU and built for ``npu,llvm`` on the default
  preset: the end-to-end estimate per inference (NPU cycles at the configured clock + measured CPU kernel time
  + CPU↔NPU transfers) with the share of MACs on the NPU, and the host wall time of ``run()`` (the simulator
  included) against a CPU-only build of the same model.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

MOBILENET = Path(__file__).resolve().parents[2] / "shared" / "models" / "mobilenet_v2_quantized_1x3x224x224.tflite"


def _tiny_op_model(n_ops: int = 200):
    import byoc
    from byoc import relay
    x = relay.var("x", shape=(1, 2, 2, 8), dtype="int8")
    e = x
    for _ in range(n_ops):  # a 1×1 max pool anchors a kernel of its own: nothing fuses
        e = relay.nn.max_pool2d(e, pool_size=(1, 1), layout="NHWC")
    return byoc.IRModule.from_expr(relay.Function([x], e))


def executor_overhead(runs: int = 300) -> dict:
    import byoc
    exe = byoc.build(_tiny_op_model(), target="llvm")
    x = np.arange(32, dtype=np.int8).reshape(1, 2, 2, 8)
    assert np.array_equal(exe.run({"x": x})[0], x)
    steps = exe.steps
    calls = [(s.fn, s.argv, s.extent) for s in steps]

    def kernels_only():
        for fn, argv, extent in calls:
            fn(argv, 0, extent)

    run, kern = [], []
    for _ in range(runs):  # interleaved, so background load affects both alike
        t = time.perf_counter()
        exe.run()
        run.append(time.perf_counter() - t)
        t = time.perf_counter()
        kernels_only()
        kern.append(time.perf_counter() - t)
    run_us, kern_us = statistics.median(run) * 1e6, statistics.median(kern) * 1e6
    return {"ops": len(steps), "run_us": round(run_us, 2), "kernels_us": round(kern_us, 2),
            "ratio": round(run_us / kern_us, 3), "per_op_overhead_us": round((run_us - kern_us) / len(steps), 3)}


def mobilenet_npu(runs: int = 5) -> dict | None:
    if not MOBILENET.exists():
        return None
    import byoc
    from byoc.frontend import from_tflite
    mod, params = from_tflite(str(MOBILENET))
    pm = byoc.partition_for("npu", mod, params)
    t0 = time.perf_counter()
    hetero = byoc.build(pm, target="npu,llvm", npu_config="ethos-u55-256-like")
    build_s = time.perf_counter() - t0
    cpu = byoc.build(mod, target="llvm", params=params)
    p = mod["main"].params[0]
    x = np.random.default_rng(0).integers(-128, 128, [int(d) for d in p.type_annotation.shape]).astype(np.int8)
    feed = {p.name_hint: x}
    same = bool(np.array_equal(hetero.run(feed)[0], cpu.run(feed)[0]))
    report = hetero.profile(feed, repeat=3)
    est = report.estimate
    host, host_cpu = [], []
    for _ in range(runs):
        t = time.perf_counter()
        hetero.run()
        host.append(time.perf_counter() - t)
        t = time.perf_counter()
        cpu.run()
        host_cpu.append(time.perf_counter() - t)
    return {"build_s": round(build_s, 2), "partitions": len(hetero.partitions), "bit_exact_vs_cpu": same,
            "estimate_ms": round(est.total_seconds * 1e3, 3), "npu_ms": round(est.npu_seconds * 1e3, 3),
            "npu_cycles": est.npu_cycles, "cpu_ms": round(est.cpu_seconds * 1e3, 3),
            "transfer_ms": round(est.transfer_seconds * 1e3, 4), "transfer_bytes": est.transfer_bytes,
            "npu_mac_share": round(est.npu_mac_share, 4), "total_macs": est.total_macs,
            "host_run_ms": round(statistics.median(host) * 1e3, 2),
            "cpu_only_run_ms": round(statistics.median(host_cpu) * 1e3, 2)}


def run() -> list[dict]:
    """Rows for benchmarks/run.py."""
    o = executor_overhead()
    rows = [{"name": f"executor: run() of a {o['ops']}-tiny-op model", "value": o["run_us"], "unit": "µs",
             "peer": "Σ of its kernels' times (direct ctypes calls)", "peer_value": o["kernels_us"],
             "ratio": o["ratio"], "target": "ratio ≤ 2"},
            {"name": "executor: overhead per op", "value": o["per_op_overhead_us"], "unit": "µs"}]
    m = mobilenet_npu()
    if m is None:
        return rows + [{"name": "MobileNetV2 npu,llvm", "value": None, "unit": "", "target": "model not present"}]
    rows += [
        {"name": "MobileNetV2 npu,llvm end-to-end estimate (ethos-u55-256-like @500 MHz)", "value": m["estimate_ms"],
         "unit": "ms"},
        {"name": "  of which NPU (cycles at the configured clock)", "value": m["npu_ms"], "unit": "ms"},
        {"name": "  of which CPU kernels (measured)", "value": m["cpu_ms"], "unit": "ms"},
        {"name": "  of which CPU↔NPU transfers", "value": m["transfer_ms"], "unit": "ms"},
        {"name": "MobileNetV2 share of MACs on the NPU", "value": round(m["npu_mac_share"] * 100, 2), "unit": "%"},
        {"name": "MobileNetV2 npu,llvm run() host time (simulation included)", "value": m["host_run_ms"],
         "unit": "ms", "peer": "byoc CPU-only (llvm) run()", "peer_value": m["cpu_only_run_ms"],
         "ratio": round(m["host_run_ms"] / m["cpu_only_run_ms"], 2)},
        {"name": "MobileNetV2 npu,llvm outputs bit-exact vs CPU-only", "value": m["bit_exact_vs_cpu"], "unit": ""},
    ]
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300, help="runs of the tiny-op model")
    args = ap.parse_args(argv)
    print(json.dumps({"executor_overhead": executor_overhead(args.runs), "mobilenet_v2_npu": mobilenet_npu()},
                     indent=2))


if __name__ == "__main__":
    main()
