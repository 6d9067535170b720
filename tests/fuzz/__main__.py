"""``python -m tests.fuzz --minutes N`` (``make fuzz``): random-graph differential fuzzing and file fuzzing with
random seeds until the time is up, then a findings report.

* one child process fuzzes random graphs (hypothesis, fresh seeds; failures shrunk and saved as
  ``tests/regressions/data/graph-*.npz``); a child that dies has its current case saved too;
* meanwhile file fuzzing runs rounds of ``ROUND`` cases (at least one full round, >= 10,000 cases) in
  rlimited children; each new failure signature is saved as ``tests/regressions/data/file-*.npz``.

Options: ``--minutes`` (default 10), ``--seed`` (default: from the clock; printed so a run can be repeated),
``--max-ops`` (graph size, default 10), ``--no-graphs`` / ``--no-files``, ``--out DIR`` (where findings go).
Exit status 1 when there are new findings.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .files import artifact_available, run_file_fuzz
from .regressions import DATA_DIR, HEAP_CHECK_ENV, known_signatures, save_file_case, save_graph_case

ROUND = {"tflite": 3000, "onnx": 3500, "container": 1750, "program": 1750}


def _spawn_graph_worker(deadline: float, seed: int, max_ops: int, out: Path, scratch: Path) -> subprocess.Popen:
    root = Path(__file__).resolve().parents[2]
    # PYTHONFAULTHANDLER: a worker killed by a signal (a heap-check abort, a segfault) prints its Python stack.
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONFAULTHANDLER="1",
               PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""), **HEAP_CHECK_ENV)
    cmd = [sys.executable, "-m", "tests.fuzz.graph_fuzz", repr(deadline), str(seed), str(max_ops), str(out),
           str(scratch)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=root)


def _graph_phase(deadline: float, seed: int, max_ops: int, out: Path) -> tuple[dict, list[str]]:
    """Runs graph workers until the deadline, restarting one that dies (after saving its current case)."""
    total = {"examples": 0, "rejected": 0, "oracle_died": 0, "known_hits": {}, "saved": [], "executors_run": {}, "skipped": {}}
    notes = []
    scratch = Path(tempfile.mkdtemp(prefix="byoc-graph-fuzz-"))
    k = 0
    while time.time() < deadline:
        p = _spawn_graph_worker(deadline, seed + k, max_ops, out, scratch)
        k += 1
        stdout, stderr = p.communicate()
        if p.returncode == 0:
            res = json.loads(stdout.decode().strip().splitlines()[-1])
            total["examples"] += res["examples"]
            total["rejected"] += res["rejected"]
            total["oracle_died"] += res["oracle_died"]
            total["saved"] += res["saved"]
            total["skipped"].update(res["skipped"])
            for key in ("known_hits", "executors_run"):
                for sig, n in res[key].items():
                    total[key][sig] = total[key].get(sig, 0) + n
            break
        current = scratch / "current.npz"
        if current.exists():
            with np.load(current, allow_pickle=False) as z:
                inputs = [z[f"in_{i}"] for i in range(sum(1 for f in z.files if f.startswith("in_")))]
                sig = f"died|graph worker|exit {p.returncode}"
                path = save_graph_case(z["model"].tobytes(), inputs, sig,
                                       f"the graph fuzzer's child died (exit {p.returncode}) on this case: "
                                       f"{stderr.decode(errors='replace')[-3000:]}", str(z["log"]), directory=out)
            total["saved"].append({"signature": sig, "path": str(path), "finding": stderr.decode()[-600:]})
        notes.append(f"graph worker exited with {p.returncode}; restarted")
    return total, notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-ops", type=int, default=10)
    ap.add_argument("--no-graphs", action="store_true")
    ap.add_argument("--no-files", action="store_true")
    ap.add_argument("--out", type=Path, default=DATA_DIR)
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    start = time.time()
    deadline = start + args.minutes * 60
    print(f"fuzzing for {args.minutes:g} minute(s), seed {seed} (repeat with --seed {seed})", flush=True)
    known_before = known_signatures(args.out)

    graph_proc = None
    if not args.no_graphs:
        import threading
        graph_box: dict = {}
        graph_proc = threading.Thread(target=lambda: graph_box.update(
            zip(("result", "notes"), _graph_phase(deadline, seed, args.max_ops, args.out))))
        graph_proc.start()

    file_summary: dict = {}
    new_file_findings = []
    if not args.no_files:
        plan = dict(ROUND)
        if artifact_available():
            plan["artifact"] = 1000
        rounds = 0
        seen = set(known_before)
        while rounds == 0 or time.time() < deadline - 30:
            sums = run_file_fuzz(plan, seed + rounds, workers=1, deadline=None if rounds == 0 else deadline)
            rounds += 1
            for t, s in sums.items():
                agg = file_summary.setdefault(t, {"cases": 0, "ok": 0, "rejected": 0, "findings": 0,
                                                  "worst_seconds": 0.0, "skipped": s.skipped})
                agg["cases"] += s.cases
                agg["ok"] += s.ok
                agg["rejected"] += s.rejected
                agg["findings"] += len(s.findings)
                agg["worst_seconds"] = max(agg["worst_seconds"], round(s.worst_seconds, 3))
                for f in s.findings:
                    if f.signature() in seen:
                        continue
                    seen.add(f.signature())
                    from .files import make_case
                    path = save_file_case(f.target, make_case(f.target, f.seed, f.index), f.signature(),
                                          f"{f.kind}: {f.detail} (at {f.location}); reproduce: {f.reproducer()}",
                                          rng_key=(f.seed, f.index, 1), directory=args.out)
                    new_file_findings.append((f, path))

    graph = {}
    if graph_proc is not None:
        graph_proc.join()
        graph = graph_box.get("result", {})
    elapsed = (time.time() - start) / 60
    print(f"\n=== fuzz report ({elapsed:.1f} min, seed {seed}) ===")
    if graph:
        print(f"random graphs: {graph['examples']} checked against LiteRT BUILTIN_REF "
              f"({graph['rejected']} rejected by LiteRT, {graph['oracle_died']} on which LiteRT aborted); "
              f"executor runs: {graph['executors_run']}")
        for k, v in graph["skipped"].items():
            print(f"  skipped {k}: {v}")
        for sig, n in sorted(graph["known_hits"].items()):
            print(f"  known (open regression) x{n}: {sig}")
        by_sig: dict[str, list[dict]] = {}
        for s in graph["saved"]:
            by_sig.setdefault(s["signature"], []).append(s)
        for sig, items in by_sig.items():
            paths = sorted({s["path"] for s in items})
            print(f"  NEW x{len(items)}: {sig}\n    saved {', '.join(paths)}\n    {items[-1]['finding'][:600]}")
    total_files = sum(v["cases"] for v in file_summary.values())
    if file_summary:
        print(f"file fuzzing: {total_files} cases")
        for t, v in file_summary.items():
            print(f"  {t}: {v['cases']} cases, {v['ok']} loaded, {v['rejected']} refused with ByocError, "
                  f"{v['findings']} escapes/timeouts, worst case {v['worst_seconds']} s {v['skipped']}")
        for f, path in new_file_findings:
            print(f"  NEW: {f.signature()}\n    {f.detail[:300]}\n    reproduce: {f.reproducer()}\n    saved {path}")
    new = len({s["signature"] for s in graph.get("saved", [])}) + len(new_file_findings)
    print(f"findings: {new} new, {len(known_before)} known open before this run")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
