"""``ethos-u`` placement of SVDF, TFLite_Detection_PostProcess and TRANSPOSE_CONV with a computed output shape,
against the installed Vela (its CPU operators read from the file it writes) when it is present."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from byoc.frontend import from_tflite
from byoc.partition import partition_for
from byoc.testing.tflite_writer import TFLiteWriter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vela_placement import vela_cpu_ops, vela_executable  # noqa: E402


def _cpu_reasons(data: bytes) -> dict[str, str]:
    mod, params = from_tflite(data, semantics="tflm")
    _, report = partition_for("ethos-u", mod, params, return_report=True, inline_non_mac=True, boundary_rule=True)
    return {n.name: n.reason for n in report.cpu_ops()}


def _svdf_then_fc() -> bytes:
    rng = np.random.default_rng(0)
    w = TFLiteWriter()
    x = w.input("x", (1, 16), "int8", scale=0.05, zero_point=-3)
    s = w.svdf(x, rng.integers(-127, 128, (8, 16)).astype(np.int8), rng.integers(-900, 900, (8, 4)).astype(np.int16),
               rng.integers(-99, 99, 8).astype(np.int32), rank=1, weights_feature_scale=0.01,
               weights_time_scale=0.002, state_scale=0.01, out_scale=0.05, out_zp=0, name="svdf_out")
    y = w.fully_connected(s, rng.integers(-127, 128, (4, 8)).astype(np.int8), rng.integers(-99, 99, 4).astype(np.int32),
                          weight_scale=0.01, out_scale=0.1, out_zp=0, name="fc_out")
    w.output(y)
    return w.finish()


def test_svdf_stays_on_the_cpu_with_velas_reason(tmp_path):
    data = _svdf_then_fc()
    reasons = _cpu_reasons(data)
    assert "Unsupported opType" in reasons["svdf_out"]
    assert "fc_out" not in reasons
    if vela_executable() is None:
        pytest.skip("vela is not installed")
    model = tmp_path / "svdf.tflite"
    model.write_bytes(data)
    assert vela_cpu_ops(model, tmp_path / "vela") == {"svdf_out"}
