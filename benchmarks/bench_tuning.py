"""Tuning records (``byoc tune``) on MobileNetV2 with ethos-u55-256: NPU cycles with the compiler's default tile
heuristic against the tuned records, per layer and in total, and whether the records apply deterministically
(two builds with the same records: same program bytes, same cycles).

``BENCH_TUNE_TRIALS`` trials per layer workload (default 8); the trials run on a local process pool of
``BENCH_TUNE_WORKERS`` (default 2). The per-layer figures are read from ``byoc.build(..., tuning_records=)``, not
from the tuner.
"""
from __future__ import annotations

import os
import pathlib
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
MBV2 = ROOT.parent / "shared" / "models" / "mobilenet_v2_quantized_1x3x224x224.tflite"
TARGET, PRESET = "ethos-u", "ethos-u55-256"


def _build(pmod, **kw):
    import byoc
    m = byoc.build(pmod, target=f"{TARGET},llvm", npu_config=PRESET, **kw)
    layers = [(lay.name, lay.cycles) for r in m.partitions.values() for lay in r.device_profile().layers]
    return m, layers, [r.to_bytes() for r in m.partitions.values()]


def run() -> list[dict]:
    if not MBV2.exists():
        return [{"name": "tuning MobileNetV2", "value": None, "unit": "", "details": f"{MBV2} not found"}]
    import byoc
    from byoc.cli.common import load_model
    from explore.tune import tune
    trials = int(os.environ.get("BENCH_TUNE_TRIALS", "8"))
    workers = int(os.environ.get("BENCH_TUNE_WORKERS", "2"))
    with tempfile.TemporaryDirectory() as d:
        rec = pathlib.Path(d) / "mbv2.jsonl"
        t = time.perf_counter()
        res = tune(MBV2, target=TARGET, npu_config=PRESET, trials=trials, output=rec, workers=workers)
        secs = time.perf_counter() - t
        model = load_model(str(MBV2), target=TARGET)
        pmod = byoc.partition_for(TARGET, model.mod, model.params)
        _, base, _ = _build(pmod)
        m1, tuned, bytes1 = _build(pmod, tuning_records=rec)
        _, tuned2, bytes2 = _build(pmod, tuning_records=rec)
        n_records = len(rec.read_text().splitlines())
    total_b, total_t = sum(c for _, c in base), sum(c for _, c in tuned)
    slower = [(n, b, c) for (n, b), (_, c) in zip(base, tuned) if c > b]
    faster = sum(c < b for (_, b), (_, c) in zip(base, tuned))
    same = bytes1 == bytes2 and tuned == tuned2
    table = ["| layer | op | default tile | tuned tile | default cycles | tuned cycles |", "|---|---|---|---|---|---|"]
    for r in res.layers:
        if r.tuned != r.default:
            table.append(f"| {r.name[-40:]} | {r.op} | {r.default} | {r.tuned} | {r.default_cycles} | "
                         f"{r.tuned_cycles} |")
    return [
        {"name": "MobileNetV2 ethos-u55-256 NPU cycles, default tile heuristic", "value": total_b, "unit": "cycles"},
        {"name": f"MobileNetV2 ethos-u55-256 NPU cycles, tuned ({trials} trials/workload)", "value": total_t,
         "unit": "cycles", "peer": "default heuristic", "peer_value": total_b, "ratio": total_t / total_b,
         "target": "<= 1 on every layer"},
        {"name": "MobileNetV2 layers slower than the default after tuning", "value": len(slower), "unit": "layers",
         "target": "0"},
        {"name": f"tuning time, {trials} trials/workload, {workers} workers", "value": secs, "unit": "s"},
        {"name": "tuning summary", "value": None, "details":
            f"{res.workloads} layer workloads over {len(base)} layers, {n_records} records; {res.tuned_workloads} "
            f"workloads tuned, {faster} layers faster, {len(slower)} slower {slower[:3]}; total "
            f"{total_b} -> {total_t} cycles ({100 * (1 - total_t / total_b):.2f}% fewer); "
            f"{res.measured} simulator runs (baseline, trials, checks), {res.reverted} choices given up by the "
            f"never-slower check; two builds with the records: identical program bytes and cycles: {same}; "
            f"{m1.tuned_layers} layers use a tuned plan, notes: {list(m1.tuning_notes)}\n\n" + "\n".join(table)},
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
