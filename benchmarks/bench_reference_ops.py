"""Reference interpreter speed: ``byoc.evaluate`` on MobileNetV2 (the op registry's numpy kernels).

Peer, measured in the same run: LiteRT's ``Interpreter.invoke()`` with ``OpResolverType.BUILTIN_REF`` on the same
model and input (the kernels our semantics copy). Also reports the mismatch count between the two outputs, which
must be 0. Median of repeated runs, in ms.
"""
from __future__ import annotations

import pathlib
import statistics
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL = ROOT.parent / "shared" / "models" / "mobilenet_v2_quantized_1x3x224x224.tflite"
REPEATS = 5


def _median_ms(fn) -> float:
    fn()  # warm-up
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run() -> list[dict]:
    if not MODEL.exists():
        return []
    import byoc
    from byoc.frontend import from_tflite
    data = MODEL.read_bytes()
    mod, params = from_tflite(data)
    p = mod["main"].params[0]
    x = np.random.default_rng(0).integers(-128, 128, p.type_annotation.shape).astype(p.type_annotation.dtype)
    ours_out = []
    ours = _median_ms(lambda: ours_out.append(byoc.evaluate(mod, {p.name_hint: x}, params)[0]))
    row = {"name": "byoc.evaluate MobileNetV2 (int8, 224x224)", "value": ours, "unit": "ms", "target": "a few s"}
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
        it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        peer = _median_ms(it.invoke)
        ref = it.get_tensor(it.get_output_details()[0]["index"])
        row.update(peer="LiteRT invoke (BUILTIN_REF)", peer_value=peer, ratio=ours / peer)
        mismatches = int(np.count_nonzero(ref != ours_out[-1]))
    except ImportError:
        return [row]
    return [row, {"name": "output mismatches vs LiteRT BUILTIN_REF", "value": mismatches, "unit": "elements",
                  "target": "0"}]


def main() -> None:
    for r in run():
        print(r)


if __name__ == "__main__":
    main()
