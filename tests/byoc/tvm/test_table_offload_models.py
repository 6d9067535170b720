"""TVM's Ethos-U and CMSIS-NN tables (import lines changed, nothing else) offload at least 90% of the
convolutions, depthwise convolutions and fully connected layers of real int8 TFLite models as byoc imports them
(TVM's graph shapes: HWIO / HWOI kernels, padding inside the conv), and the partitioned module's outputs are
bit-identical to the unpartitioned module's on the reference interpreter. Arm Compute Library refuses the
per-channel int8 convolutions (its own ``is_per_channel_quantization`` check, as in TVM) and must not change a
result either. Skips without the local copy of TVM's tables (``BYOC_TVM_TABLES``) or the shared models."""
from __future__ import annotations

from pathlib import Path

import pytest

from . import tvm_tables
from .table_offload import KINDS, measure
from tests.shared_models import SHARED_MODELS

pytestmark = pytest.mark.skipif(not tvm_tables.available(),
                                reason=f"TVM's table files are not at {tvm_tables.TVM_TABLES}")

ROOT = Path(__file__).resolve().parents[3]
MLCOMMONS = ROOT / "tests" / "data" / "mlcommons_tiny"
SHARED = SHARED_MODELS
MODELS = [MLCOMMONS / n for n in ("kws_ref_model.tflite", "vww_96_int8.tflite", "ad01_int8.tflite",
                                  "str_ww_ref_model.tflite", "pretrainedResnet_quant.tflite")]
MODELS += [SHARED / n for n in ("person_detect.tflite", "mobilenet_v2_quantized_1x3x224x224.tflite")]



@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.stem)
def test_ethosu_and_cmsisnn_offload_90_percent_bit_identically(tables, model):
    if not model.is_file():
        pytest.skip(f"{model} is not present")
    results = {r.table: r for r in measure(model, tables)}
    for r in results.values():
        assert not r.error, (r.table, r.error)
        assert r.identical is True, f"{r.table}: partitioning changed the outputs of {model.name}"
    for name in ("ethos-u", "cmsis-nn"):
        r = results[name]
        total = sum(r.total[k] for k in KINDS)
        done = sum(r.offloaded[k] for k in KINDS)
        assert total > 0 and done >= 0.9 * total, (name, dict(r.offloaded), dict(r.total))
    acl = results["arm_compute_lib"]
    assert acl.offloaded["conv2d"] == 0 and acl.offloaded["depthwise"] == 0  # per-channel weights: refused
