"""byoc.sweep on a real model: every point's figures, errors recorded, determinism, resume, Pareto front."""
from __future__ import annotations

import json

import numpy as np
import pytest

import byoc
import npu_sim
from explore import sweep
from explore.store import Store

from .conftest import KWS, space


def _ok_rows(db):
    with Store(db) as s:
        return [r for r in s.rows() if r[8] == "ok"]


def test_reference_sweep_stores_every_point_once(reference_sweep):
    db, res = reference_sweep
    assert (res.total, res.computed, res.skipped, res.errors) == (12, 12, 0, 0)
    with Store(db) as s:
        rows = s.rows()
        assert [r[1] for r in rows] == list(range(12)) and len({r[0] for r in rows}) == 12
        assert s.db.execute("SELECT COUNT(DISTINCT point_id) FROM layers").fetchone()[0] == 12


def test_point_figures_match_the_simulator_run_on_data(reference_sweep):
    """A point's cycles equal npu_sim.simulate's (which executes the data) over the same partitions."""
    from byoc.cli.common import load_model
    from byoc.cli.summary import offload_summary, profile_partitions
    from explore.points import apply_overrides
    db, _ = reference_sweep
    model = load_model(str(KWS))
    pmod = byoc.partition_for("npu", model.mod, model.params)
    summary = {r.target: r.macs for r in offload_summary(pmod)}
    checked = 0
    for r in _ok_rows(db):
        coords, m = json.loads(r[6]), json.loads(r[10])
        if coords["mac.ublock_c"] == 8 or coords["preset"] != "ethos-u55-256-like":
            continue
        cfg = apply_overrides(coords, "ethos-u55-256-like").config
        profiles = profile_partitions(pmod, "npu", cfg)
        assert m["cycles"] == sum(int(p.stats.total_cycles) for p in profiles)
        assert m["npu_seconds"] == pytest.approx(m["cycles"] / cfg.clock_hz)
        assert m["macs_per_cycle"] == 2 * 2 * coords["mac.ublock_c"] * 8
        assert m["offload_mac_share"] == pytest.approx(summary["npu"] / sum(summary.values()))
        assert 0 < m["sram_high_water"] <= m["sram_bytes"]
        assert all(0.0 <= m[f"util_{e}"] <= 1.0 for e in ("dma_in", "mac", "ppu", "dma_out"))
        assert m["bytes_flash"] > 0 and m["bytes_sram"] > 0
        checked += 1
    assert checked == 4


def test_a_wider_mac_array_is_not_slower(reference_sweep):
    db, _ = reference_sweep
    cyc = {}
    for r in _ok_rows(db):
        c = json.loads(r[6])
        cyc[(c["preset"], c["sram_kib"], c["mac.ublock_c"])] = json.loads(r[10])["cycles"]
    for (preset, kib, width), cycles in cyc.items():
        if width == 4:
            assert cyc[(preset, kib, 16)] < cycles


def test_same_sweep_twice_gives_identical_rows_and_resume_computes_nothing(reference_sweep, tmp_path):
    db, _ = reference_sweep
    again = tmp_path / "again.sqlite"
    res = sweep([KWS], space(), again, workers=1, measure_cpu_time=False, progress=False)
    assert res.computed == 12
    with Store(db) as a, Store(again) as b:
        assert a.rows() == b.rows() and a.layer_rows() == b.layer_rows()
    res2 = sweep([KWS], space(), again, workers=2, measure_cpu_time=False, progress=False)
    assert (res2.computed, res2.skipped) == (0, 12)


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path):
    # ifm_block_depth 7 is not a multiple of the u55 dot depth 8: that configuration is invalid
    db = tmp_path / "err.sqlite"
    res = sweep([KWS], {"mac.ifm_block_depth": [7, 32]}, db, workers=1, measure_cpu_time=False, progress=False)
    assert (res.total, res.computed, res.errors) == (2, 2, 1)
    with Store(db) as s:
        bad, good = s.rows()
    assert bad[8] == "error" and "ConfigError" in bad[9] and "ifm_block_depth (7)" in bad[9] and bad[10] == "{}"
    assert good[8] == "ok" and json.loads(good[10])["cycles"] > 0


def test_pareto_front_is_the_non_dominated_set(reference_sweep):
    from explore.outputs import PARETO_AXES, results_frame
    db, _ = reference_sweep
    df = results_frame(db)
    pts = [tuple(float(df.loc[i, a]) for a in PARETO_AXES) for i in df.index]

    def dominated(p):
        return any(all(q[k] <= p[k] for k in range(3)) and any(q[k] < p[k] for k in range(3)) for q in pts)
    expect = [not dominated(p) for p in pts]
    assert list(df["pareto"]) == expect and 0 < sum(expect) < len(pts)
    assert np.allclose(df["end_to_end_seconds"], df["npu_seconds"] + df["transfer_seconds"])  # CPU not measured
