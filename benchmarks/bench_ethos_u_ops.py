"""SOFTMAX, TRANSPOSE and RESIZE on the ``ethos-u`` target vs Arm Vela 5.2 (ethos-u55-256), per layer.

Vela lowers each of these ops to a sequence of NPU operations (its per-layer CSV lists them with the original
operator). For every real model that has one, and for single-op models written here (larger softmaxes, the
resize variants Vela accepts), the simulator's layer (its exclusive cycles, partitioned with ``ethos-u``) is
compared with the sum of Vela's rows for that operator.

``python -m benchmarks.bench_ethos_u_ops`` prints the table (Vela runs are cached in $BYOC_VELA_CACHE).
"""
from __future__ import annotations

import os
import pathlib
import sys
import tempfile

from benchmarks.bench_npu import MODELS, PRESET, vela_per_layer

# Vela's original operator → our layer kind
KINDS = {"Softmax": "softmax", "Transpose": "transpose", "ResizeNearestNeighbor": "resize",
         "ResizeBilinear": "resize"}


def single_op_models(out_dir: pathlib.Path) -> dict[str, pathlib.Path]:
    """Single-op int8 models written with the project's TFLite writer."""
    from byoc.testing.tflite_writer import TFLiteWriter
    specs = {
        "softmax_1x200": ((1, 200), lambda w, x: w.softmax(x)),
        "softmax_1x8x8x64": ((1, 8, 8, 64), lambda w, x: w.softmax(x)),
        "transpose_1x3x224x224_nwch": ((1, 3, 224, 224), lambda w, x: w.transpose(x, (0, 2, 3, 1))),
        "transpose_1x32x32x16_nwhc": ((1, 32, 32, 16), lambda w, x: w.transpose(x, (0, 2, 1, 3))),
        "resize_nn_2x_1x16x16x32": ((1, 16, 16, 32), lambda w, x: w.resize_nearest_neighbor(x, (32, 32))),
        "resize_nn_4x_1x8x8x16": ((1, 8, 8, 16), lambda w, x: w.resize_nearest_neighbor(x, (32, 32))),
        "resize_bl_2x_hp_1x16x16x32": ((1, 16, 16, 32),
                                       lambda w, x: w.resize_bilinear(x, (32, 32), half_pixel_centers=True)),
        "resize_bl_4x_1x8x8x16": ((1, 8, 8, 16), lambda w, x: w.resize_bilinear(x, (32, 32))),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, (shape, build) in specs.items():
        w = TFLiteWriter()
        x = w.input("x", shape, "int8", scale=0.05, zero_point=-3)
        w.output(build(w, x))
        p = out_dir / f"{name}.tflite"
        p.write_bytes(w.finish())
        paths[name] = p
    return paths


def compare_model(path: pathlib.Path, cache: pathlib.Path) -> list[dict]:
    """One row per Vela operator of the kinds above: Vela's cycles (all its rows) vs our layer's."""
    from byoc.cli.common import load_model
    from byoc.cli.summary import profile_partitions
    from byoc.partition import partition_for
    vela = vela_per_layer(path, cache)
    if vela is None:
        return []
    rows_by_op: dict[str, int] = {}
    for v in vela[0].values():
        if v["op"] in KINDS:
            rows_by_op[v["op"]] = rows_by_op.get(v["op"], 0) + v["cycles"]
    if not rows_by_op:
        return []
    m = load_model(str(path), "auto", target="ethos-u")
    # Vela offloads a lone op too: neither rule that gives small partitions back to the host
    pmod = partition_for("ethos-u", m.mod, m.params, inline_non_mac=False, boundary_rule=False)
    ours: dict[str, int] = {}
    for prof in profile_partitions(pmod, "ethos-u", PRESET):
        for s in prof.stats.per_layer:
            ours[s.kind] = ours.get(s.kind, 0) + s.exclusive_cycles
    out = []
    for op, cycles in rows_by_op.items():
        o = ours.get(KINDS[op])
        out.append({"model": path.stem, "op": op, "vela": cycles, "ours": o,
                    "ratio": o / cycles if o is not None and cycles else None})
    return out


def run() -> list[dict]:
    cache = pathlib.Path(os.environ.get("BYOC_VELA_CACHE", pathlib.Path(tempfile.gettempdir()) / "byoc_vela"))
    paths = {k: v for k, v in MODELS.items() if v.exists()}
    paths.update(single_op_models(cache / "single_ops"))
    rows = []
    for name, path in paths.items():
        rows += compare_model(path, cache / "u55_256")
    print(f"{'model':34s} {'operator':22s} {'ours':>9s} {'vela':>9s} {'ratio':>6s}")
    for r in rows:
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "  -  "
        print(f"{r['model'][:34]:34s} {r['op']:22s} {str(r['ours']):>9s} {r['vela']:9d} {ratio:>6s}")
    within = [r for r in rows if r["ratio"] is not None and abs(r["ratio"] - 1) <= 0.20]
    print(f"within ±20% of Vela: {len(within)}/{len(rows)}")
    table = ["| model | operator | ours (cycles) | Vela (cycles) | ratio |", "|---|---|---|---|---|"]
    table += [f"| {r['model']} | {r['op']} | {r['ours']} | {r['vela']} | "
              f"{r['ratio']:.3f} |" if r["ratio"] is not None else
              f"| {r['model']} | {r['op']} | - | {r['vela']} | - |" for r in rows]
    return [{"name": "SOFTMAX / TRANSPOSE / RESIZE layers within ±20% of Vela (ethos-u55-256)",
             "value": len(within) / len(rows) if rows else float("nan"), "unit": f"fraction of {len(rows)}",
             "target": "1.0"},
            {"name": "SOFTMAX / TRANSPOSE / RESIZE per layer, ours vs Vela", "details": "\n".join(table)}]


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    for r in run():
        print(r if "details" not in r else r["details"])
