"""TFLite Prepare-time conventions the importer reproduces exactly (quant-semantics.md §2).

* ``activation_bounds``: CalculateActivationRangeQuantized (§2.2) — float32 division, round half away from zero.
* ``same_padding``: ComputePaddingHeightWidth (§2.3) — the odd pixel goes after.
* ``conv_scale_products``: double(s_in)·double(s_w[c]) (exact in float64, §2.1) for conv/depthwise/FC REF;
  ``float32_scale_products`` for TFLite-Micro's fully-connected multiplier and for uint8 conv/depthwise/transpose
  conv; ``conv_products_for(input_dtype)`` picks between the two for the conv-like ops.
"""
from __future__ import annotations

import math
import re

import numpy as np

__all__ = ["ACTIVATION_NAMES", "activation_bounds", "float_activation_bounds", "same_padding",
           "conv_scale_products", "float32_scale_products", "conv_products_for", "quantize_float32", "sanitize_name",
           "dtype_limits"]

ACTIVATION_NAMES = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}


def dtype_limits(dtype: str) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def quantize_float32(value: float, scale: float, zero_point: int, dtype: str) -> int:
    """zp + int(round_half_away(float32(value) / float32(scale))), saturated to ``dtype`` (§2.2 Q(f))."""
    q = float(np.float32(value) / np.float32(scale))
    lo, hi = dtype_limits(dtype)
    if not math.isfinite(q):
        return hi if q > 0 else lo
    r = math.floor(abs(q) + 0.5) * (1 if q >= 0 else -1)
    return int(max(min(zero_point + r, hi + 1), lo - 1))


def activation_bounds(activation: int, scale: float, zero_point: int, dtype: str) -> tuple[int, int]:
    """Clamp range of a fused activation on a quantized output; the full range for NONE/TANH/SIGN_BIT."""
    qmin, qmax = dtype_limits(dtype)
    if activation == 1:  # RELU
        return max(qmin, quantize_float32(0.0, scale, zero_point, dtype)), qmax
    if activation == 3:  # RELU6
        return (max(qmin, quantize_float32(0.0, scale, zero_point, dtype)),
                min(qmax, quantize_float32(6.0, scale, zero_point, dtype)))
    if activation == 2:  # RELU_N1_TO_1
        return (max(qmin, quantize_float32(-1.0, scale, zero_point, dtype)),
                min(qmax, quantize_float32(1.0, scale, zero_point, dtype)))
    return qmin, qmax


def float_activation_bounds(activation: int) -> tuple[float, float] | None:
    """CalculateActivationRange for float kernels; None when there is nothing to clamp."""
    return {1: (0.0, float("inf")), 2: (-1.0, 1.0), 3: (0.0, 6.0)}.get(activation)


def same_padding(size: int, k: int, stride: int, dilation: int, padding: str) -> tuple[int, int, int]:
    """(output size, pad before, pad after) as TFLite computes them; VALID never pads."""
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        out = (size + stride - 1) // stride
    else:
        out = (size + stride - eff) // stride
    total = max((out - 1) * stride + eff - size, 0) if padding == "SAME" else 0
    before = total // 2
    return out, before, total - before


def conv_scale_products(input_scale: float, weight_scales: np.ndarray) -> np.ndarray:
    """double(s_in)·double(s_w[c]): exact in float64, so QuantizeMultiplier(product / s_out) matches TFLite."""
    return np.float64(np.float32(input_scale)) * np.asarray(weight_scales, np.float32).astype(np.float64)


def float32_scale_products(input_scale: float, weight_scales: np.ndarray) -> np.ndarray:
    """float32(s_in·s_w[c]) widened to float64 (TFLite Micro's FULLY_CONNECTED multiplier)."""
    return (np.float32(input_scale) * np.asarray(weight_scales, np.float32)).astype(np.float32).astype(np.float64)


def conv_products_for(input_dtype: str):
    """The s_in·s_w[c] rule of LiteRT's CONV_2D / DEPTHWISE_CONV_2D / TRANSPOSE_CONV Prepare for ``input_dtype``.

    int8/int16 kernels read the per-channel multipliers (an exact double product); uint8 kernels read the legacy
    per-tensor multiplier from GetQuantizedConvolutionMultipler, which rounds s_in·s_w to float32 before widening.
    The two (M, shift) differ on almost every channel and move about 1 output in 10^5 by one LSB.
    """
    return float32_scale_products if input_dtype == "uint8" else conv_scale_products


_NAME_BAD = re.compile(r"[^A-Za-z0-9_.]")


def sanitize_name(name: str) -> str:
    """A tensor name as an IR identifier: [A-Za-z_][A-Za-z0-9_.]*."""
    s = _NAME_BAD.sub("_", name)
    if not s or not (s[0].isalpha() or s[0] == "_"):
        s = "t" + s
    return s
