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
from .table_offload import ACT_KINDS, KINDS, measure
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


# What TVM's tables have patterns for among the quantized activations / MEAN the importer now emits in TVM's forms
# (Ethos-U: tanh, sigmoid, leaky_relu, hard_swish, softmax, mean; CMSIS-NN: softmax), and which their checks accept
# on these models: CMSIS-NN's softmax wants output scale 1/256 with zero point −128 (every model here has it).
ACTIVATIONS_OFFLOADED = {"ethos-u": ("softmax", "mean", "sigmoid", "tanh", "hard_swish", "leaky_relu"),
                         "cmsis-nn": ("softmax",)}


@pytest.mark.parametrize("model", [m for m in MODELS if m.stem != "ad01_int8"], ids=lambda p: p.stem)
def test_tvm_tables_offload_the_activations_they_have_patterns_for(tables, model):
    """The importer's TVM forms (dequantize → nn.softmax → quantize, cast → mean → requantize, ...) match TVM's own
    patterns; before, byoc's integer ops (qnn.softmax, qnn.mean) matched none of them."""
    if not model.is_file():
        pytest.skip(f"{model} is not present")
    results = {r.table: r for r in measure(model, tables)}
    for name, kinds in ACTIVATIONS_OFFLOADED.items():
        r = results[name]
        assert r.identical is True, name
        for k in kinds:
            assert r.offloaded[k] == r.total[k], (name, k, r.offloaded[k], r.total[k])
    assert any(results["ethos-u"].total[k] for k in ACT_KINDS)  # each of these models has a softmax or a mean


def test_tvm_ethosu_table_offloads_lut_activations_bit_identically(tables, tmp_path):
    """LOGISTIC, TANH, HARD_SWISH and LEAKY_RELU (no real model here has them): Ethos-U's sigmoid, tanh,
    hard_swish and leaky_relu patterns take each one; the partitioned module's outputs equal the unpartitioned one's
    (whose exactness against LiteRT tests/byoc/frontend/test_tflite_tvm_forms.py checks)."""
    from byoc.testing import TFLiteWriter
    w = TFLiteWriter()
    x = w.input("x", (1, 8, 8, 16), "int8", scale=0.05, zero_point=-2)
    y = w.tanh(w.logistic(x))
    y = w.leaky_relu(w.hard_swish(y, out_scale=0.01, out_zp=-100), 0.2, out_scale=0.01, out_zp=-90)
    w.output(y)
    path = tmp_path / "activations.tflite"
    path.write_bytes(w.finish())
    r = {r.table: r for r in measure(path, tables)}["ethos-u"]
    assert r.identical is True
    for k in ("sigmoid", "tanh", "hard_swish", "leaky_relu"):
        assert r.total[k] == 1 and r.offloaded[k] == 1, (k, dict(r.offloaded), dict(r.total))
