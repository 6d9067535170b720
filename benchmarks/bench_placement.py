"""Cost-driven placement (``partition_for(placement="cost")``): per model, the cost plan, all-offload and all-CPU,
each estimated (the cost model) and simulated (built and profiled: NPU cycles at the configured clock + CPU
kernels measured here + transfers), on the ``npu`` target with its default configuration.

Models: the shared real models and the MLPerf Tiny ones. ``BENCH_PLACEMENT_MODELS`` (comma-separated file names)
narrows the list. The row's value is the cost plan's simulated time; the peer is all-offload's simulated time.
"""
from __future__ import annotations

import os
import pathlib
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = [ROOT / "tests" / "data" / "mlcommons_tiny" / n for n in
          ("kws_ref_model.tflite", "vww_96_int8.tflite", "ad01_int8.tflite", "str_ww_ref_model.tflite",
           "pretrainedResnet_quant.tflite")] + \
         [ROOT.parent / "shared" / "models" / n for n in
          ("hello_world_int8.tflite", "micro_speech_quantized.tflite", "person_detect.tflite",
           "mobilenet_v2_quantized_1x3x224x224.tflite")]


def plan_rows(path: pathlib.Path, target: str = "npu", repeat: int = 10) -> dict:
    from byoc.cli.common import load_model, make_inputs
    from byoc.plans import simulate_plans
    m = load_model(str(path), "auto", None, target)
    t = time.perf_counter()
    c = simulate_plans(m.mod, m.params, target, make_inputs(m.mod["main"], (), 0), repeat=repeat)
    return {"model": path.name, "seconds": time.perf_counter() - t, "comparison": c}


def run() -> list[dict]:
    wanted = {s.strip() for s in os.environ.get("BENCH_PLACEMENT_MODELS", "").split(",") if s.strip()}
    rows, lines = [], ["| model | chosen | cost est / sim ms | all-offload est / sim ms | all-CPU est / sim ms |",
                       "|---|---|---|---|---|"]
    for path in MODELS:
        if not path.exists() or (wanted and path.name not in wanted):
            continue
        r = plan_rows(path)
        c = r["comparison"]
        cost, off, cpu = c.row("cost"), c.row("all-offload"), c.row("all-cpu")
        rows.append({"name": f"placement=cost, {path.name} (simulated end to end)", "value": cost.simulated_seconds * 1e3,
                     "unit": "ms", "peer": "all-offload, simulated", "peer_value": off.simulated_seconds * 1e3,
                     "ratio": cost.simulated_seconds / off.simulated_seconds, "target": "<= all-offload",
                     "all_cpu_ms": cpu.simulated_seconds * 1e3, "chosen": c.chosen})
        lines.append(f"| {path.name} | {c.chosen} | " + " | ".join(
            f"{x.estimated_seconds * 1e3:.3f} / {x.simulated_seconds * 1e3:.3f}" for x in (cost, off, cpu)) + " |")
    if rows:
        rows[-1]["details"] = ("### Placement plans (npu, default configuration)\n\n" + "\n".join(lines) +
                               "\n\nSimulated = NPU cycles at the clock + CPU kernels measured on this machine "
                               "(best of 10) + transfers; estimated = the cost model placement decided with.")
    return rows


if __name__ == "__main__":
    for row in run():
        print({k: v for k, v in row.items() if k != "details"})
        if "details" in row:
            print(row["details"])
