"""``byoc compare``: every shared model agrees everywhere; a deliberately wrong build is caught and located."""
from __future__ import annotations

import numpy as np
import pytest

from cli_helpers import run_cli, run_json
from tests.shared_models import shared_model, shared_params


@pytest.mark.parametrize("name", shared_params())
def test_shared_models_match_on_every_executor(name):
    path = shared_model(name)
    pytest.importorskip("ai_edge_litert")
    doc = run_json("compare", path, "--target", "npu")
    assert doc["ok"] is True and doc["first_divergence"] is None
    oracle = doc["oracle"]
    assert oracle == {"litert": "litert", "tflm": "tflm"}[doc["semantics"]]
    ran = {e["name"] for e in doc["executors"] if e["available"]}
    assert {"evaluate", "cpu", "npu", oracle} <= ran, doc["executors"]
    for t in doc["outputs"] + doc["intermediates"]:
        for executor, d in t["executors"].items():
            assert d["mismatches"] == 0, (t["name"], executor, d)
    assert all(t["expected"] == oracle and set(t["executors"]) >= {"evaluate", "cpu", "npu"} for t in doc["outputs"])
    # intermediates really were compared against the oracle's own tensors
    assert sum(t["expected"] == oracle for t in doc["intermediates"]) >= max(1, len(doc["intermediates"]) // 2)


def test_wrong_build_is_caught_and_located(small_model):
    victim = "block1_0/expand"
    env = {"BYOC_TESTING_FAULT": f"requant-off-by-one:{victim}"}
    doc = run_json("compare", small_model, "--npu-executor", "simulator", expect=1, env=env)
    assert doc["ok"] is False
    first = doc["first_divergence"]
    assert first["name"] == victim and first["placement"].startswith("tvmgen_")
    assert first["producer"] == "qnn.requantize" or first["model_tensor"]
    assert first["executors"]["npu"]["mismatches"] > 0 and first["executors"]["cpu"]["mismatches"] == 0
    # everything computed before the fault agrees
    names = [t["name"] for t in doc["intermediates"]]
    for t in doc["intermediates"][:names.index(victim)]:
        assert all(d["mismatches"] == 0 for d in t["executors"].values()), t["name"]
    p = run_cli("compare", small_model, "--npu-executor", "simulator", env=env)
    assert p.returncode == 1 and "MISMATCH" in p.stdout and f"first diverging tensor '{victim}'" in p.stdout


def test_compare_library_api(small_model):
    from byoc.cli.common import load_model, make_inputs
    from byoc.compare import compare_model
    model = load_model(str(small_model))
    x = make_inputs(model.mod["main"], seed=5)
    result = compare_model(model, x, "npu", oracle=False)
    assert result.ok and [e.name for e in result.executors] == ["evaluate", "cpu", "npu"]
    assert [e.checked_against for e in result.executors] == ["", "evaluate", "evaluate"]
    assert result.outputs[0].name == "probabilities" and result.outputs[0].shape == (1, 10)
    assert result.to_json()["ok"] is True


def test_diff_counts_and_maximum():
    from byoc.compare import _diff
    ref = np.array([[1, 2, 3], [4, 5, 6]], np.int8)
    got = np.array([[1, 0, 3], [4, 5, -6]], np.int8)
    d = _diff(ref, got, "x")
    assert (d.mismatches, d.max_diff, d.elements) == (2, 12.0, 6)
    assert _diff(ref, ref.reshape(3, 2), "x").mismatches == 0          # same elements, other shape
    assert _diff(ref, np.zeros(5, np.int8), "x").mismatches == -1      # not comparable
    assert _diff(ref, ref.astype(np.int32), "x").mismatches == -1      # another type: another tensor
    assert _diff(ref, None, "x") is None
