"""``make demo``: the whole flow on the built-in MobileNetV2-shaped int8 model.

Writes the model with ``byoc.testing`` (TFLite writer), imports it, partitions it for the NPU, builds it for
``npu,llvm``, runs it, compares every executor (reference interpreter, CPU-only build, NPU+CPU build, TFLite's
reference kernels when installed) tensor by tensor, prints the NPU per-layer summary and writes the HTML report.
Each stage that cannot run says why and the rest goes on.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from .errors import ByocError


def _stage(title: str) -> float:
    print(f"\n== {title}", flush=True)
    return time.perf_counter()


def _done(t0: float) -> None:
    print(f"   ({time.perf_counter() - t0:.2f} s)", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m byoc.demo", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="directory for the model, artifact and report (default: a temp dir)")
    ap.add_argument("--input-size", type=int, default=96)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from .cli.adapters import build_module, resolve_npu_config
    from .cli.cmd_analyze import compare_tables, profile_table
    from .cli.cmd_model import reasons_table, summary_table
    from .cli.common import LoadedModel, format_table, make_inputs
    from .cli.summary import offload_summary, profile_partitions
    from .compare import compare_model
    from .frontend import from_tflite
    from .partition import partition_for
    from .testing.models import mobilenet_v2

    start = time.perf_counter()
    out_dir = args.out or tempfile.mkdtemp(prefix="byoc-demo-")
    os.makedirs(out_dir, exist_ok=True)
    failures: list[str] = []

    t0 = _stage("1. write the built-in MobileNetV2-shaped int8 model (byoc.testing.models.mobilenet_v2)")
    data = mobilenet_v2(args.input_size)
    path = os.path.join(out_dir, "mobilenet_v2_int8.tflite")
    with open(path, "wb") as f:
        f.write(data)
    print(f"   {path}: {len(data):,} bytes")
    _done(t0)

    t0 = _stage("2. import (LiteRT reference-kernel semantics)")
    mod, params = from_tflite(data)
    model = LoadedModel(path, "tflite", data, mod, params, "litert")
    main_fn = mod["main"]
    print(f"   main takes {', '.join(p.name_hint for p in main_fn.params)}")
    _done(t0)

    t0 = _stage("3. partition for the NPU")
    pmod, report = partition_for("npu", mod, params, return_report=True, inline_non_mac=True)
    print(summary_table(offload_summary(pmod)))
    print(reasons_table(report))
    _done(t0)

    cfg = resolve_npu_config(None)
    inputs = make_inputs(main_fn, (), args.seed)
    t0 = _stage(f"4. build for npu,llvm ({cfg.name}) and run")
    try:
        exe, how = build_module(pmod, "npu,llvm", cfg)
        outs = exe.run(inputs)
        top = np.argsort(-outs[0].reshape(-1).astype(np.int64), kind="stable")[:3]
        print(f"   built with {how}; output {outs[0].dtype}{list(outs[0].shape)}, top-3 classes {top.tolist()}")
    except ByocError as e:
        failures.append(f"build/run: {e.message}")
        print(f"   skipped: {e}")
    _done(t0)

    t0 = _stage("5. compare: reference interpreter, CPU-only build, NPU+CPU build, TFLite reference kernels")
    result = None
    try:
        result = compare_model(model, inputs, "npu", npu_config=cfg, partitioned=(pmod, report))
        print(compare_tables(result))
        if not result.ok:
            failures.append("comparison: " + result.verdict())
    except ByocError as e:
        failures.append(f"compare: {e.message}")
        print(f"   skipped: {e}")
    _done(t0)

    t0 = _stage("6. NPU per-layer profile (simulated)")
    profiles = []
    try:
        profiles = profile_partitions(pmod, "npu", cfg.config)
        print(profile_table(profiles))
    except ByocError as e:
        failures.append(f"profile: {e.message}")
        print(f"   skipped: {e}")
    _done(t0)

    t0 = _stage("7. HTML report")
    from .report import ReportData, write_report
    report_path = os.path.join(out_dir, "report.html")
    size = write_report(report_path, ReportData(model, pmod, report, "npu", offload_summary(pmod), profiles, result,
                                                tuple(failures)))
    print(f"   report: {os.path.abspath(report_path)} ({size:,} bytes; open it in a browser)")
    _done(t0)

    print()
    print(format_table(["stage", "status"], [["flow", "complete" if not failures else "with problems"],
                                             ["verdict", result.verdict() if result else "not compared"],
                                             ["total", f"{time.perf_counter() - start:.1f} s"]], "ll"))
    for f in failures:
        print(f"problem: {f}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
