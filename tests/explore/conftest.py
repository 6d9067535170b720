"""A small sweep over the MLPerf Tiny keyword-spotting model, run once per session (local pool, 2 workers)."""
from __future__ import annotations

from pathlib import Path

import pytest

KWS = Path(__file__).resolve().parents[1] / "data" / "mlcommons_tiny" / "kws_ref_model.tflite"
# 12 points: two presets as starting points x MAC array width x total local SRAM
AXES = ["preset=ethos-u55-256-like,ethos-n78-like", "mac.ublock_c=4,8,16", "sram_kib=64,256"]


def space():
    from explore import Space
    from explore.space import parse_axis
    return Space(tuple(parse_axis(a) for a in AXES))


@pytest.fixture(scope="session")
def reference_sweep(tmp_path_factory):
    pytest.importorskip("pandas")
    from explore import sweep
    db = tmp_path_factory.mktemp("sweep") / "ref.sqlite"
    res = sweep([KWS], space(), db, workers=2, measure_cpu_time=False, progress=False)
    return db, res
