"""Design-space sweeps (``byoc sweep``): points per second with 1 and 2 local workers on the keyword-spotting model,
a resume after ``kill -9`` mid-sweep, and MobileNetV2's time per point.

Sizes: ``BENCH_SWEEP_KWS`` points (default 200; the acceptance run uses 1000) as a Latin hypercube over MAC array
width/height, total SRAM, flash bandwidth and latency, clock and weight compression from the u55 and n78 presets;
``BENCH_SWEEP_MBV2`` MobileNetV2 points (default 8; the acceptance run uses 200). The speed-up of 2 workers over 1
is measured on the same points (a CPU-bound sweep; near 2x when the machine's 2 cores are otherwise idle), for the
local process pool and for a loopback Ray cluster started with 1 and with 2 worker CPUs (``BENCH_SWEEP_RAY``
points, default 60).
"""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
KWS = ROOT / "tests" / "data" / "mlcommons_tiny" / "kws_ref_model.tflite"
MBV2 = ROOT.parent / "shared" / "models" / "mobilenet_v2_quantized_1x3x224x224.tflite"
AXES = ["preset=ethos-u55-256-like,ethos-n78-like", "mac.ublock_c=4:32:log:int", "mac.ublock_w=1:4:int",
        "sram_kib=32:512:log", "clock_hz=1e8:1e9:log", "weight_compression=on,off"]
U55_AXES = ["mac.ublock_c=4:32:log:int", "sram_kib=32:512:log", "area.flash.bytes_per_cycle=0.5:8:log",
            "area.flash.read_latency=16:256:int", "clock_hz=1e8:1e9:log", "weight_compression=on,off"]


def _space(axes, n, seed=0):
    from explore import Space
    from explore.space import parse_axis
    return Space(tuple(parse_axis(a) for a in axes), "lhs", n, seed)


def _timed(model, space, db, workers):
    from explore import sweep
    t = time.perf_counter()
    res = sweep([model], space, db, workers=workers, measure_cpu_time=False, progress=False)
    return time.perf_counter() - t, res


def _kill_and_resume(model, axes, n, db, workers) -> tuple[int, float, int]:
    """Start the CLI sweep, kill -9 its process group after half the points, resume; (points at the kill,
    resume seconds, points computed by the resume)."""
    from explore.store import Store
    cmd = [sys.executable, "-m", "byoc.cli", "sweep", str(model), "--method", "lhs", "--samples", str(n),
           *[x for a in axes for x in ("--axis", a)], "--db", str(db), "--workers", str(workers), "--no-cpu-time"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    at = 0
    while proc.poll() is None:
        if db.exists():
            try:
                with Store(db) as s:
                    at = s.count()
            except Exception:  # noqa: BLE001 - schema not there yet
                at = 0
            if at >= n // 2:
                os.killpg(proc.pid, signal.SIGKILL)
                break
        time.sleep(0.2)
    proc.wait()
    with Store(db) as s:
        at = s.count()
    secs, res = _timed(model, _space(axes, n), db, workers)
    return at, secs, res.computed


def run() -> list[dict]:
    from explore.store import Store
    n = int(os.environ.get("BENCH_SWEEP_KWS", "200"))
    m = int(os.environ.get("BENCH_SWEEP_MBV2", "8"))
    rows = []
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        sp = _space(AXES, n)
        t1, r1 = _timed(KWS, sp, d / "w1.sqlite", 1)
        t2, r2 = _timed(KWS, sp, d / "w2.sqlite", 2)
        with Store(d / "w1.sqlite") as a, Store(d / "w2.sqlite") as b:
            same = a.rows() == b.rows()
        rows += [
            {"name": f"sweep kws, {n} LHS points, 1 worker", "value": n / t1, "unit": "points/s"},
            {"name": f"sweep kws, {n} LHS points, 2 workers", "value": n / t2, "unit": "points/s",
             "details": f"{r2.errors} error point(s); rows identical to the 1-worker run: {same}"},
            {"name": "sweep speed-up, 2 workers over 1", "value": t1 / t2, "unit": "x", "target": "near 2x"},
        ]
        at, secs, computed = _kill_and_resume(KWS, AXES, n, d / "killed.sqlite", 2)
        with Store(d / "killed.sqlite") as a, Store(d / "w2.sqlite") as b:
            same = a.rows() == b.rows()
        rows.append({"name": f"sweep kws kill -9 at {at}/{n} points, resume", "value": secs, "unit": "s",
                     "details": f"resume computed {computed} point(s) (expected {n - at}); rows equal an "
                                f"uninterrupted run's: {same}"})
        if MBV2.exists() and m:
            t, r = _timed(MBV2, _space(U55_AXES, m), d / "mbv2.sqlite", 2)
            rows.append({"name": f"sweep MobileNetV2, {m} LHS points, 2 workers", "value": t / m,
                         "unit": "s/point", "details": f"{r.errors} error point(s); {m} points in {t:.1f} s"})
    return rows + ray_rows()


def _ray_sweep(cpus: int, space, db):
    """The sweep on a fresh loopback Ray cluster with ``cpus`` worker CPUs; (seconds, result) without the
    cluster's start-up."""
    import shutil

    import ray

    from explore import sweep
    from explore.ray_loopback import start_loopback_ray
    temp = tempfile.mkdtemp(prefix="ray")
    try:
        ctx = start_loopback_ray(num_cpus=cpus, temp_dir=temp)
        t = time.perf_counter()
        res = sweep([KWS], space, db, cluster=ctx.address_info["address"], measure_cpu_time=False, progress=False)
        return time.perf_counter() - t, res
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def ray_rows() -> list[dict]:
    """Ray: the same CPU-bound KWS sweep on a loopback cluster with 1 and with 2 worker CPUs."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return [{"name": "sweep on Ray", "value": None, "details": "Ray is not installed (pip install ray)"}]
    from explore.store import Store
    n = int(os.environ.get("BENCH_SWEEP_RAY", "60"))
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        sp = _space(AXES, n, seed=1)
        load = os.getloadavg()[0]
        t1, r1 = _ray_sweep(1, sp, d / "ray1.sqlite")
        t2, r2 = _ray_sweep(2, sp, d / "ray2.sqlite")
        with Store(d / "ray1.sqlite") as a, Store(d / "ray2.sqlite") as b:
            same = a.rows() == b.rows()
    return [
        {"name": f"sweep kws on Ray (loopback), {n} LHS points, 1 worker CPU", "value": n / t1, "unit": "points/s"},
        {"name": f"sweep kws on Ray (loopback), {n} LHS points, 2 worker CPUs", "value": n / t2, "unit": "points/s",
         "details": f"{r1.errors}/{r2.errors} error point(s); rows identical: {same}; {t1:.1f} s vs {t2:.1f} s "
                    f"(cluster start-up excluded); load average {load:.1f} on "
                    f"{os.cpu_count()} cores when it started (the cores were shared with other work)"},
        {"name": "Ray sweep speed-up, 2 worker CPUs over 1", "value": t1 / t2, "unit": "x", "target": "near 2x"},
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
