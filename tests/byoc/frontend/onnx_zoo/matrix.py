"""Import every ONNX file `export.py` wrote and compare byoc with onnxruntime (test-only tool, byoc's venv).

    python tests/byoc/frontend/onnx_zoo/matrix.py DIR [--out results.json] [--only SUBSTR ...] [--table]

For each file: `byoc.frontend.from_onnx`, then the reference interpreter (`byoc.evaluate`) and the CPU build
(`byoc.build(target="llvm")`) on N_INPUTS random normal inputs, against onnxruntime (ORT_ENABLE_ALL, one intra-op
thread). Statically quantized models must agree bit for bit; float and dynamically quantized models within
1e-5·max(1, |x|) (a bit-exact run is also recorded). Each file runs in its
own process (a crash or a hang is reported, not fatal). Verdicts: ok, refused (the ByocError), MISMATCH, crash.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

TIMEOUT = 900
N_INPUTS = 1  # the shared 2-core host: one random input per file (raise it for a slower, wider check)
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))  # this checkout's byoc, not an installed one


def _run_one(path: str) -> dict:
    import numpy as np
    import onnxruntime as ort

    import byoc
    from byoc.errors import ByocError
    from byoc.frontend import from_onnx

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # the quantizer wrote something onnxruntime itself cannot run
        return {"verdict": "ort-fail", "msg": f"{type(e).__name__}: {str(e)[:200]}"}
    inp = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in inp.shape]
    rng = np.random.default_rng(7)
    xs = [rng.normal(0, 1, shape).astype(np.float32) for _ in range(N_INPUTS)]
    t0 = time.process_time()
    try:
        mod, _ = from_onnx(path)
    except ByocError as e:
        return {"verdict": "refused", "msg": str(e).splitlines()[0][:300]}
    except Exception as e:
        import traceback
        return {"verdict": "crash", "msg": f"import: {type(e).__name__}: {str(e)[:200]}",
                "tb": traceback.format_exc()[-1500:]}
    t_import = time.process_time() - t0
    # quantize_dynamic leaves float ops (Add, Gemm bias, pools) whose summation order is not onnxruntime's
    exact = not any(f".{c}." in Path(path).name for c in ("float", "dynamic"))
    res = {"verdict": "ok", "import_s": round(t_import, 2), "worst": {}}
    for where in ("interp", "llvm"):
        try:
            if where == "llvm":
                exe = byoc.build(mod, target="llvm")
                run = lambda x: exe.run({inp.name: x})  # noqa: E731
            else:
                run = lambda x: byoc.evaluate(mod, {inp.name: x})  # noqa: E731
            bad = 0
            worst = 0.0
            total = 0
            for x in xs:
                refs = sess.run(None, {inp.name: x})
                outs = run(x)
                outs = outs if isinstance(outs, (list, tuple)) else [outs]
                for r, o in zip(refs, outs):
                    o = np.asarray(o)
                    if o.shape != r.shape:
                        return {**res, "verdict": "MISMATCH", "msg": f"{where}: shape {o.shape} vs {r.shape}"}
                    d = np.abs(o.astype(np.float64) - r.astype(np.float64))
                    tol = 0 if exact else 1e-5 * np.maximum(1, np.abs(r.astype(np.float64)))
                    bad += int((d > tol).sum())
                    res["bit_exact"] = res.get("bit_exact", True) and not d.any()
                    total += d.size
                    worst = max(worst, float(d.max()) if d.size else 0.0)
            res["worst"][where] = worst
            if bad:
                res["verdict"] = "MISMATCH"
                res["msg"] = (res.get("msg", "") + f" {where}: {bad}/{total} off, max {worst:.3g}").strip()
        except ByocError as e:
            return {**res, "verdict": "refused", "msg": f"{where}: {str(e).splitlines()[0][:300]}"}
        except Exception as e:
            import traceback
            return {**res, "verdict": "crash", "msg": f"{where}: {type(e).__name__}: {str(e)[:200]}",
                    "tb": traceback.format_exc()[-1500:]}
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--table", action="store_true", help="print the markdown table of --out and exit")
    args = ap.parse_args(argv)
    if args.one:
        print("RESULT " + json.dumps(_run_one(args.one)), flush=True)
        return 0
    out = args.out or args.dir / "matrix.json"
    results = json.loads(out.read_text()) if out.exists() else {}
    if args.table:
        print(table(results))
        return 0
    files = sorted(p for p in args.dir.glob("*.onnx") if not args.only or any(s in p.name for s in args.only))
    for p in files:
        try:
            cp = subprocess.run([sys.executable, __file__, str(args.dir), "--one", str(p)], capture_output=True,
                                text=True, timeout=TIMEOUT)
            line = [ln for ln in cp.stdout.splitlines() if ln.startswith("RESULT ")]
            r = json.loads(line[-1][7:]) if line else {"verdict": "crash",
                                                        "msg": f"exit {cp.returncode}: {cp.stderr[-300:]}"}
        except subprocess.TimeoutExpired:
            r = {"verdict": "timeout", "msg": f">{TIMEOUT}s"}
        results[p.name] = r
        print(f"{p.name:45s} {r['verdict']:9s} {r.get('msg', '')[:150]}", flush=True)
        out.write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0


def table(results: dict) -> str:
    """Rows: model.exporter; columns: configs; cells: ok / refused / MISMATCH / crash."""
    rows: dict[str, dict[str, str]] = {}
    cfgs: list[str] = []
    for name, r in sorted(results.items()):
        model, exporter, cfg, _ = name.split(".")
        rows.setdefault(f"{model} ({exporter})", {})[cfg] = r["verdict"]
        if cfg not in cfgs:
            cfgs.append(cfg)
    order = ["float", "qdq_s8", "qdq_s8_pc", "qdq_u8", "qdq_u8_pc", "qdq_s16", "qop_s8", "qop_u8", "qop_u8_pc",
             "dynamic"]
    cfgs = [c for c in order if c in cfgs] + [c for c in cfgs if c not in order]
    lines = ["| model | " + " | ".join(cfgs) + " |", "|---" * (len(cfgs) + 1) + "|"]
    for k, v in rows.items():
        lines.append(f"| {k} | " + " | ".join(v.get(c, "-") for c in cfgs) + " |")
    counts: dict[str, int] = {}
    for r in results.values():
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    lines.append("\n" + ", ".join(f"{k}: {n}" for k, n in sorted(counts.items())))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
