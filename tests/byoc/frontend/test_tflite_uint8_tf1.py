"""uint8 models of the TF1 era (per-tensor asymmetric activations and weights, weight zero point ≠ 0, fused RELU6,
int32 bias) equal LiteRT BUILTIN_REF on every intermediate tensor, on every executor.

The bug these guard: LiteRT's uint8 CONV_2D / DEPTHWISE_CONV_2D / TRANSPOSE_CONV read the legacy per-tensor
multiplier of GetQuantizedConvolutionMultipler, QuantizeMultiplier(double(float32(s_in·s_w)) / double(s_out)), not
the exact double product the int8 per-channel path uses. The two multipliers differ by a few units in 2^31 and
move about one output in 10^5 by one LSB (a 1x1 expand + RELU6 of MobileNetV2 showed it first). The minimal
models put the accumulator on one such value: a single input channel with weight zp_w + 1 and x = zp_in makes
the accumulator equal to the bias. FULLY_CONNECTED's uint8 reference kernel requantizes in float with the exact
double product instead, so it is guarded too. The oracle is LiteRT; nothing here computes expected values.
"""
from __future__ import annotations

import numpy as np
import pytest

from byoc.cli.common import LoadedModel
from byoc.compare import compare_model
from byoc.frontend import from_tflite
from byoc.testing import TFLiteWriter

from tf1_uint8_models import RELU6_SCALE, random_tf1_model, tf1_quant_params

pytest.importorskip("ai_edge_litert")

# (s_in, zp_in, s_w, zp_w, accumulator): TF1-nudged scales where the float32- and double-product multipliers
# round that accumulator to neighbouring outputs (found by a search over TF1-like ranges).
CONV_CASES = [
    (0.07025284320116043, 93, 0.001454835874028504, 218, 3107),
    (0.06846999377012253, 109, 0.005062743555754423, 230, 13541),
    (0.0228633601218462, 112, 0.0014991940697655082, 164, 25055),
]
# FULLY_CONNECTED: the float requantization of the double product differs here from both float32-product forms.
FC_CASES = [
    (0.06960325688123703, 83, 0.0032984199933707714, 38, 15732),
    (0.037862781435251236, 179, 0.0037439479492604733, 20, 11038),
]


def _everywhere(data: bytes, x: np.ndarray, target: str = "npu"):
    """Compare every tensor of ``data`` on byoc.evaluate, the CPU build, the NPU build and LiteRT BUILTIN_REF."""
    mod, params = from_tflite(data)
    model = LoadedModel("tf1_uint8.tflite", "tflite", data, mod, params, "litert")
    res = compare_model(model, {mod["main"].params[0].name_hint: x}, target)
    ran = {e.name for e in res.executors if e.available}
    assert ran == {"evaluate", "cpu", "litert"} | ({target} if target else set()), res.executors
    bad = [(t.name, [(d.executor, d.mismatches) for d in t.diffs if d.mismatches])
           for t in res.intermediates + res.outputs if t.differs]
    assert not bad, f"{res.verdict()}: {bad}"
    # every tensor of the model was held to LiteRT's value (nothing silently skipped); steps inside an op (an int32
    # bias_add) have no LiteRT tensor and are held to evaluate
    model_tensors = [t for t in res.intermediates + res.outputs if t.model_tensor]
    assert model_tensors and all(t.expected == "litert" for t in model_tensors)
    return res


def _single_op(op: str, s_in: float, zp_in: int, s_w: float, zp_w: int, acc: int) -> tuple[bytes, np.ndarray]:
    w = TFLiteWriter()
    n = 3
    weight = np.full((1, 1, 1, 1), zp_w + 1, np.uint8)
    bias = np.array([acc], np.int32)
    q = dict(weight_scale=s_w, weight_zp=zp_w, out_scale=RELU6_SCALE, out_zp=0, name="y")
    if op == "fully_connected":
        x = w.input("x", (n, 1), "uint8", scale=s_in, zero_point=zp_in)
        y = w.fully_connected(x, weight.reshape(1, 1), bias, activation="RELU6", **q)
        xin = np.array([zp_in - 1, zp_in, zp_in + 1], np.uint8).reshape(n, 1)
    else:
        x = w.input("x", (1, 1, n, 1), "uint8", scale=s_in, zero_point=zp_in)
        if op == "conv2d":
            y = w.conv2d(x, weight, bias, activation="RELU6", **q)
        elif op == "depthwise_conv2d":
            y = w.depthwise_conv2d(x, weight, bias, activation="RELU6", **q)
        else:  # TRANSPOSE_CONV has no fused activation in its options
            y = w.transpose_conv(x, weight, (1, 1, n, 1), bias, padding="VALID", **q)
        xin = np.array([zp_in - 1, zp_in, zp_in + 1], np.uint8).reshape(1, 1, n, 1)
    w.output(y)
    return w.finish(), xin


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("op", ["conv2d", "depthwise_conv2d", "transpose_conv"])
def test_uint8_conv_multiplier_uses_the_float32_scale_product(op, case):
    data, x = _single_op(op, *CONV_CASES[case])
    _everywhere(data, x, target="npu" if op != "transpose_conv" else "")


@pytest.mark.parametrize("case", range(len(FC_CASES)))
def test_uint8_fully_connected_keeps_the_double_product(case):
    data, x = _single_op("fully_connected", *FC_CASES[case])
    _everywhere(data, x)


def test_mobilenet_like_expand_relu6_equals_litert():
    """Seed 10 is a MobileNetV2-like model whose block1/expand (1x1 conv + RELU6) differed from LiteRT by one
    LSB in 2 elements before the fix (and 72 elements downstream)."""
    data = random_tf1_model(10)
    mod, _ = from_tflite(data)
    shape = mod["main"].params[0].type_annotation.shape
    x = np.random.default_rng(10_010).integers(0, 256, shape).astype(np.uint8)
    res = _everywhere(data, x)
    assert any(t.name == "block1/expand" for t in res.intermediates)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_tf1_uint8_models_equal_litert_on_every_tensor(seed):
    """MobileNetV2-like classifiers and DeepLabV3-like segmenters: conv, depthwise, 1x1 expand + RELU6, linear
    projection, residual ADD, average pool, FULLY_CONNECTED, SOFTMAX, RESIZE_BILINEAR, CONCATENATION."""
    data = random_tf1_model(seed)
    mod, _ = from_tflite(data)
    shape = mod["main"].params[0].type_annotation.shape
    x = np.random.default_rng(10_000 + seed).integers(0, 256, shape).astype(np.uint8)
    _everywhere(data, x)


def test_tf1_quant_params_follow_fakequant_nudging():
    # relu6 range: 6/255 and zero point 0; an asymmetric range nudges the zero point to an integer
    assert tf1_quant_params(0.0, 6.0) == (RELU6_SCALE, 0)
    s, zp = tf1_quant_params(-1.0, 3.0)
    assert s == float(np.float32(4.0) / np.float32(255.0)) and zp == 64  # 255/4 = 63.75 → 64
    assert tf1_quant_params(-1.0, 1.0, narrow=True)[1] == 128             # [1, 255]: 1 + 127
