"""``make bench``: run every benchmark module, write benchmarks/results.json and benchmarks/results.md.

Each ``benchmarks/bench_*.py`` exposes ``run() -> list[dict]``; a row has ``name`` and ``value`` with ``unit``, and
where a peer exists ``peer``, ``peer_value`` and ``ratio`` (ours / peer, measured in the same run), and optionally
``target`` (the figure the project aims for, as text). A row with ``details`` (markdown) becomes a section
after the table. Modules without ``run`` are executed as scripts and their
output is kept as a note. Naming modules (``python -m benchmarks.run npu``) reruns only those and keeps the other
modules' figures from the previous results.json.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import pathlib
import platform
import sys
import time
import traceback

HERE = pathlib.Path(__file__).resolve().parent


def _modules(selected: list[str]) -> list[str]:
    names = sorted(p.stem for p in HERE.glob("bench_*.py"))
    if selected:
        names = [n for n in names if any(s in n for s in selected)]
    return names


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def to_markdown(results: dict) -> str:
    lines = [f"Measured {results['date']} on {results['machine']} (Python {results['python']}).", "",
             "| benchmark | figure | value | unit | peer | peer value | ratio | target |",
             "|---|---|---|---|---|---|---|---|"]
    details = []
    for mod, rows in results["benchmarks"].items():
        for r in rows:
            if "details" in r:
                details.append(f"\n### {mod}: {r['name']}\n\n{r['details']}")
                continue
            lines.append("| " + " | ".join([mod, r.get("name", ""), _fmt(r.get("value")), r.get("unit", ""),
                                            r.get("peer", ""), _fmt(r.get("peer_value")), _fmt(r.get("ratio")),
                                            r.get("target", "")]) + " |")
    lines.extend(details)
    for mod, err in results.get("errors", {}).items():
        lines.append(f"\n`{mod}` failed: {err}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("only", nargs="*", help="substrings of benchmark module names to run")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE.parent))
    results = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.processor() or platform.machine(),
               "python": platform.python_version(), "benchmarks": {}, "errors": {}}
    for name in _modules(args.only):
        print(f"== {name}", flush=True)
        t0 = time.perf_counter()
        try:
            mod = importlib.import_module(f"benchmarks.{name}")
            if hasattr(mod, "run"):
                rows = mod.run()
            else:
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    mod.main() if hasattr(mod, "main") else None
                rows = [{"name": "output", "value": buf.getvalue()[-2000:]}]
            results["benchmarks"][name] = rows
            for r in rows:
                if "details" not in r:
                    print("  " + ", ".join(f"{k}={_fmt(v)}" for k, v in r.items()), flush=True)
        except Exception as e:  # a broken benchmark is reported, the others still run
            results["errors"][name] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
        print(f"   ({time.perf_counter() - t0:.1f} s)", flush=True)
    if args.only and (HERE / "results.json").exists():
        # a subset run replaces only its own modules' sections and keeps every other figure
        old = json.loads((HERE / "results.json").read_text())
        merged = dict(old.get("benchmarks", {}))
        merged.update(results["benchmarks"])
        errors = {k: v for k, v in old.get("errors", {}).items() if k not in results["benchmarks"]}
        errors.update(results["errors"])
        results = dict(results, benchmarks=dict(sorted(merged.items())), errors=errors)
    (HERE / "results.json").write_text(json.dumps(results, indent=2, default=str))
    (HERE / "results.md").write_text(to_markdown(results))
    print(f"wrote {HERE / 'results.json'} and {HERE / 'results.md'}")
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
