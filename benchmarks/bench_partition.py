"""Partitioning speed: ``partition_for("npu")`` on MobileNetV2 and on synthetic chains of 1k/10k/100k ops.

The synthetic chains alternate an op the npu table offloads (``qnn.add``) with one it refuses (``maximum``), so
every other op starts a new region — the worst case for region merging (half as many partitions as ops).
Peer, measured in the same run: one ``InferType`` over the same module (a single linear pass), so the ratio
reads "partitioning costs N type-inference passes"; it should stay flat as graphs grow. Growth ratios compare
each size with the previous one (10× more ops; near-linear means about 10×).
"""
from __future__ import annotations

import pathlib
import statistics
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL = ROOT.parent / "shared" / "models" / "mobilenet_v2_quantized_1x3x224x224.tflite"
SIZES = (1_000, 10_000, 100_000)


def _median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def alternating_chain(n_ops: int):
    """x → qnn.add → maximum → qnn.add → ... (n_ops ops), int8 [1, 8]."""
    import byoc
    from byoc import relay
    x = relay.var("x", shape=(1, 8), dtype="int8")
    c = relay.const
    e = x
    for i in range(n_ops):
        if i % 2 == 0:
            e = relay.qnn.op.add(e, x, c(0.05), c(-1), c(0.04), c(2), c(0.06), c(1))
        else:
            e = relay.maximum(e, x)
    return byoc.IRModule.from_expr(relay.Function([x], e))


def run() -> list[dict]:
    import byoc
    from byoc.relay.transform import InferType
    rows = []
    if MODEL.exists():
        from byoc.frontend import from_tflite
        mod, params = from_tflite(MODEL.read_bytes())
        byoc.partition_for("npu", mod, params)  # warm-up: table construction, imports
        ours = _median_ms(lambda: byoc.partition_for("npu", mod, params), 9)
        peer = _median_ms(lambda: InferType()(mod.copy()), 9)
        rows.append({"name": "partition_for npu, MobileNetV2", "value": ours, "unit": "ms",
                     "peer": "InferType on the same module", "peer_value": peer, "ratio": ours / peer,
                     "target": "<= 50 ms"})
    previous = None
    for n in SIZES:
        mod = alternating_chain(n)
        repeats = 3 if n <= 10_000 else 1
        ours = _median_ms(lambda: byoc.partition_for("npu", mod), repeats)
        peer = _median_ms(lambda: InferType()(mod.copy()), repeats)
        row = {"name": f"partition_for npu, {n} alternating ops", "value": ours, "unit": "ms",
               "peer": "InferType on the same module", "peer_value": peer, "ratio": ours / peer}
        if n == 100_000:
            row["target"] = "<= 10 s"
        rows.append(row)
        if previous is not None:
            rows.append({"name": f"growth {n // 10} → {n} ops", "value": ours / previous, "unit": "×",
                         "target": "<= 12×"})
        previous = ours
    return rows


def main() -> None:
    for r in run():
        print(r)


if __name__ == "__main__":
    main()
