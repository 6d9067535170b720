"""TFLite import time: ``byoc.frontend.from_tflite`` on the shared models (median of repeated runs, in ms).

Peer, measured in the same run: building LiteRT's interpreter for the same bytes (``Interpreter(model_content=...,
BUILTIN_REF)`` + ``allocate_tensors()``), i.e. what a runtime spends to load the file. The flatbuffer validation
alone (``tflite_reader.read_model``) is reported as a separate figure.
"""
from __future__ import annotations

import pathlib
import statistics
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT.parent / "shared" / "models"
CASES = [("mobilenet_v2_quantized_1x3x224x224.tflite", 15, "< 300 ms"), ("person_detect.tflite", 20, None)]


def _median_ms(fn, repeats: int) -> float:
    fn()  # warm-up (module imports, caches)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _litert_load(data: bytes):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()


def run() -> list[dict]:
    from byoc.frontend import from_tflite
    from byoc.frontend.tflite_reader import read_model
    rows = []
    for name, repeats, target in CASES:
        path = MODELS / name
        if not path.exists():
            continue
        data = path.read_bytes()
        ours = _median_ms(lambda: from_tflite(data), repeats)
        reader = _median_ms(lambda: read_model(data), repeats)
        row = {"name": f"from_tflite {name}", "value": ours, "unit": "ms"}
        if target:
            row["target"] = target
        try:
            peer = _median_ms(lambda: _litert_load(data), repeats)
            row.update(peer="LiteRT Interpreter + allocate_tensors (BUILTIN_REF)", peer_value=peer,
                       ratio=ours / peer)
        except Exception:  # person_detect does not load in LiteRT (quant-semantics §6.1)
            pass
        rows.append(row)
        rows.append({"name": f"read_model (validation only) {name}", "value": reader, "unit": "ms"})
    return rows


def main() -> None:
    for r in run():
        print(r)


if __name__ == "__main__":
    main()
