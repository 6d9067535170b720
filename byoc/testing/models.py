"""Model-zoo builders: int8 networks with seeded random weights, written with ``TFLiteWriter``.

* ``mobilenet_v2(...)``: MobileNetV2-shaped (stem conv, inverted residual blocks with expand 1x1 → depthwise 3x3
  → project 1x1, residual ADDs, head 1x1 conv, MEAN or AVERAGE_POOL_2D, RESHAPE, FULLY_CONNECTED, SOFTMAX).
  ``padding="explicit"`` writes PAD + VALID convs (as PyTorch exports do), ``"same"`` uses SAME convs.
* ``resnet(...)``: a small ResNet-style net (stem conv + MAX_POOL_2D, basic blocks with residual ADDs and 1x1
  stride-2 projections, AVERAGE_POOL_2D, FC, SOFTMAX).

Weights are drawn in float (He initialisation), quantized per channel symmetrically; activations use fixed
scales so values stay in range. Both load in LiteRT with ``OpResolverType.BUILTIN_REF``. Each returns bytes.
"""
from __future__ import annotations

import numpy as np

from .tflite_writer import TensorRef, TFLiteWriter

__all__ = ["mobilenet_v2", "resnet", "MOBILENET_V2_BLOCKS"]

# (expansion t, output channels c, repeats n, first stride s), MobileNetV2's table.
MOBILENET_V2_BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                       (6, 160, 3, 2), (6, 320, 1, 1))
_RELU6 = (6.0 / 255.0, -128)


class _Layers:
    """Quantized layer helpers over a writer with one seeded generator."""

    def __init__(self, w: TFLiteWriter, rng: np.random.Generator):
        self.w = w
        self.rng = rng

    def _weights(self, shape, fan_in: int, channel_axis: int):
        real = self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        other = tuple(a for a in range(len(shape)) if a != channel_axis)
        scale = np.maximum(np.abs(real).max(axis=other), 1e-6) / 127.0
        bshape = [1] * len(shape)
        bshape[channel_axis] = -1
        q = np.clip(np.round(real / scale.reshape(bshape)), -127, 127).astype(np.int8)
        return q, scale.astype(np.float32)

    def _bias(self, x: TensorRef, w_scale: np.ndarray) -> np.ndarray:
        real = self.rng.standard_normal(w_scale.shape) * 0.1
        return np.round(real / (np.float32(x.scale[0]) * w_scale)).astype(np.int32)

    def _out_params(self, activation: str):
        if activation == "RELU6":
            return _RELU6
        return float(self.rng.uniform(0.04, 0.08)), int(self.rng.integers(-10, 10))

    def conv(self, x: TensorRef, cout: int, k: int, stride: int, padding: str, activation: str,
             name: str) -> TensorRef:
        cin = x.shape[3]
        if padding == "explicit" and k > 1:
            p = (k - 1) // 2
            x = self.w.pad(x, [[0, 0], [p, p], [p, p], [0, 0]], name=name + "/pad")
        q, s = self._weights((cout, k, k, cin), k * k * cin, 0)
        out_scale, out_zp = self._out_params(activation)
        return self.w.conv2d(x, q, self._bias(x, s), weight_scale=s, strides=(stride, stride),
                             padding="VALID" if padding in ("explicit", "valid") else "SAME",
                             activation=activation, out_scale=out_scale, out_zp=out_zp, name=name)

    def depthwise(self, x: TensorRef, k: int, stride: int, padding: str, activation: str, name: str) -> TensorRef:
        c = x.shape[3]
        if padding == "explicit":
            p = (k - 1) // 2
            x = self.w.pad(x, [[0, 0], [p, p], [p, p], [0, 0]], name=name + "/pad")
        q, s = self._weights((1, k, k, c), k * k, 3)
        out_scale, out_zp = self._out_params(activation)
        return self.w.depthwise_conv2d(x, q, self._bias(x, s), weight_scale=s, strides=(stride, stride),
                                       padding="VALID" if padding == "explicit" else "SAME",
                                       activation=activation, out_scale=out_scale, out_zp=out_zp, name=name)

    def add(self, a: TensorRef, b: TensorRef, name: str, activation: str = "NONE") -> TensorRef:
        out_scale, out_zp = self._out_params(activation)
        return self.w.add(a, b, activation=activation, out_scale=out_scale, out_zp=out_zp, name=name)

    def classifier(self, x: TensorRef, num_classes: int, pool: str) -> TensorRef:
        n, h, wd, c = x.shape
        if pool == "mean":
            x = self.w.mean(x, [1, 2], keep_dims=True, out_scale=x.scale[0] * 0.5, out_zp=x.zero_point[0],
                            name="global_pool")
        else:
            x = self.w.average_pool2d(x, (h, wd), (1, 1), "VALID", name="global_pool")
        x = self.w.reshape(x, [n, c], name="flatten")
        q, s = self._weights((num_classes, c), c, 0)
        logits = self.w.fully_connected(x, q, self._bias(x, s), weight_scale=s, out_scale=0.1, out_zp=0,
                                        name="logits")
        return self.w.softmax(logits, name="probabilities")


def _width(c: float, multiple: int = 8) -> int:
    return max(multiple, int(c + multiple / 2) // multiple * multiple)


def mobilenet_v2(input_size: int = 96, *, width_multiplier: float = 0.35, num_classes: int = 10,
                 padding: str = "explicit", pool: str = "mean", blocks=MOBILENET_V2_BLOCKS, seed: int = 0,
                 input_channels: int = 3) -> bytes:
    """A MobileNetV2-shaped int8 model [1, input_size, input_size, 3] → [1, num_classes] (softmax)."""
    if padding not in ("explicit", "same"):
        raise ValueError("padding must be 'explicit' (PAD + VALID) or 'same'")
    w = TFLiteWriter("byoc.testing.models.mobilenet_v2")
    layers = _Layers(w, np.random.default_rng(seed))
    x = w.input("input", (1, input_size, input_size, input_channels), "int8", scale=1 / 128, zero_point=0)
    x = layers.conv(x, _width(32 * width_multiplier), 3, 2, padding, "RELU6", "stem/conv")
    for bi, (t, c, n, s) in enumerate(blocks):
        cout = _width(c * width_multiplier)
        for i in range(n):
            stride = s if i == 0 else 1
            prefix = f"block{bi}_{i}"
            y = x
            if t != 1:
                y = layers.conv(y, x.shape[3] * t, 1, 1, padding, "RELU6", prefix + "/expand")
            y = layers.depthwise(y, 3, stride, padding, "RELU6", prefix + "/depthwise")
            y = layers.conv(y, cout, 1, 1, padding, "NONE", prefix + "/project")
            if i > 0:  # repeated blocks keep stride 1 and width: the residual connections
                y = layers.add(x, y, prefix + "/add")
            x = y
    x = layers.conv(x, _width(1280 * min(width_multiplier, 1.0)), 1, 1, padding, "RELU6", "head/conv")
    w.output(layers.classifier(x, num_classes, pool))
    return w.finish()


def resnet(input_size: int = 32, *, widths=(16, 32, 64), blocks_per_stage: int = 1, num_classes: int = 10,
           seed: int = 0) -> bytes:
    """A small ResNet-style int8 model [1, input_size, input_size, 3] → [1, num_classes] (softmax)."""
    w = TFLiteWriter("byoc.testing.models.resnet")
    layers = _Layers(w, np.random.default_rng(seed))
    x = w.input("input", (1, input_size, input_size, 3), "int8", scale=1 / 128, zero_point=0)
    x = layers.conv(x, widths[0], 3, 1, "same", "RELU", "stem/conv")
    x = w.max_pool2d(x, (2, 2), (2, 2), "SAME", name="stem/maxpool")
    for si, c in enumerate(widths):
        for bi in range(blocks_per_stage):
            stride = 2 if si > 0 and bi == 0 else 1
            prefix = f"stage{si}_block{bi}"
            y = layers.conv(x, c, 3, stride, "same", "RELU", prefix + "/conv1")
            y = layers.conv(y, c, 3, 1, "same", "NONE", prefix + "/conv2")
            shortcut = x
            if stride != 1 or x.shape[3] != c:
                shortcut = layers.conv(x, c, 1, stride, "same", "NONE", prefix + "/shortcut")
            x = layers.add(shortcut, y, prefix + "/add", activation="RELU")
    w.output(layers.classifier(x, num_classes, "avg"))
    return w.finish()
