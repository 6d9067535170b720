"""kill -9 in the middle of a sweep, resume; the outputs (CSV, Parquet, plots, HTML in headless Chromium); CLI."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from explore import sweep
from explore.store import Store

from .conftest import AXES, KWS, space

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


def _chromium(*args, tmp_path):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"chromium did not run: {e}")


def test_kill_9_mid_sweep_then_resume_equals_an_uninterrupted_run(reference_sweep, tmp_path):
    db = tmp_path / "killed.sqlite"
    cmd = [sys.executable, "-m", "byoc.cli", "sweep", str(KWS), *[x for a in AXES for x in ("--axis", a)],
           "--db", str(db), "--workers", "1", "--no-cpu-time", "--json"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    killed_at = None
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if db.exists():
                try:
                    with Store(db) as s:
                        n = s.count()
                except Exception:  # noqa: BLE001 - the schema may not be there yet
                    n = 0
                if n >= 4:
                    os.killpg(proc.pid, signal.SIGKILL)   # the sweep's own process group
                    killed_at = n
                    break
            time.sleep(0.05)
    finally:
        if proc.poll() is None and killed_at is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert killed_at is not None, proc.stderr.read().decode()[-2000:]
    with Store(db) as s:
        before = s.count()
    assert 4 <= before < 12
    res = sweep([KWS], space(), db, workers=2, measure_cpu_time=False, progress=False)
    assert res.skipped == before and res.computed == 12 - before
    ref_db, _ = reference_sweep
    with Store(db) as a, Store(ref_db) as b:
        assert a.rows() == b.rows() and a.layer_rows() == b.layer_rows()


def test_outputs_files_and_html_in_headless_chromium(reference_sweep, tmp_path):
    import pandas as pd
    from explore.outputs import write_outputs
    db, _ = reference_sweep
    out = tmp_path / "out"
    files = {Path(f).name for f in write_outputs(db, out)}
    assert {"results.csv", "results.parquet", "pareto.csv", "pareto.png", "pareto.svg", "layers.png", "layers.svg",
            "roofline.png", "roofline.svg", "sweep.html"} <= files
    csv, pq = pd.read_csv(out / "results.csv"), pd.read_parquet(out / "results.parquet")
    assert len(csv) == len(pq) == 12 and list(csv["point_id"]) == list(pq["point_id"])
    assert list(pq["cycles"]) == list(csv["cycles"])
    import matplotlib.image
    img = matplotlib.image.imread(out / "pareto.png")
    assert img.shape[0] > 200 and img.shape[1] > 300
    assert (out / "layers.svg").read_text().lstrip().startswith("<?xml")
    # the same sweep writes the same files (no dates, stable SVG ids)
    out2 = tmp_path / "out2"
    write_outputs(db, out2)
    for name in ("results.csv", "pareto.csv", "pareto.svg", "sweep.html"):
        assert (out / name).read_bytes() == (out2 / name).read_bytes(), name
    html = (out / "sweep.html").read_text()
    assert "<link" not in html and 'src="http' not in html   # self-contained
    d = _chromium("--dump-dom", (out / "sweep.html").as_uri(), tmp_path=tmp_path)
    width = int(d.stdout.split('data-pareto-width="', 1)[1].split('"', 1)[0])
    assert width == img.shape[1]   # the embedded Pareto plot decoded in the browser at its real size
    assert d.stdout.count("<svg") >= 2


def test_cli_sweep_json_and_bad_axis(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "byoc.cli", "sweep", str(KWS), "--db",
                               str(tmp_path / "c.sqlite"), *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=300)
    p = run("--axis", "mac.ublock_c=4,8", "--method", "grid", "--workers", "1", "--no-cpu-time", "--json")
    assert p.returncode == 0, p.stderr
    import json
    doc = json.loads(p.stdout)
    assert (doc["points"], doc["computed"], doc["errors"]) == (2, 2, 0)
    p = run("--axis", "mac.bogus=1,2")
    assert p.returncode == 3 and "unknown sweep axis 'mac.bogus'" in p.stderr
    p = run("--method", "lhs", "--axis", "clock_hz=1e8:1e9")
    assert p.returncode == 3 and "samples" in p.stderr
