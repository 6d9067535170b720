"""image.resize2d (nearest neighbour) with TFLite RESIZE_NEAREST_NEIGHBOR's float32 index arithmetic.

TVM's TFLite frontend spells TFLite's flags as coordinate_transformation_mode / rounding_method:

==========================================  =========================================================
TFLite flags                                 Relay attributes (source index, float32 arithmetic)
==========================================  =========================================================
align_corners=False, half_pixel=False        "asymmetric", "" (floor):       floor(x·in/out)
align_corners=True                           "align_corners", "" (round):    round(x·(in−1)/(out−1))
half_pixel_centers=True                      "half_pixel", "round_prefer_ceil": floor((x + 0.5)·in/out)
==========================================  =========================================================

"round" is TfLiteRound (half away from zero), floor/ceil carry no epsilon, and every index is clamped to
[0, in − 1]. The other ONNX/TVM modes (pytorch_half_pixel, tf_half_pixel_for_nn, round_prefer_floor, ceil)
use TVM's coordinate formulas in float32.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .kernels import from_nhwc, to_nhwc
from .registry import FusionKind, register_op
from .rel import fail, tensor_arg

__all__ = ["Resize2DAttrs", "nearest_indices"]

_MODES = ("asymmetric", "align_corners", "half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn")
_ROUNDING = ("", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


@dataclass(frozen=True)
class Resize2DAttrs(Attrs):
    roi: tuple | None = None
    size: tuple = ()
    layout: str = "NCHW"
    method: str = "linear"  # as in Relay; only nearest_neighbor is implemented
    coordinate_transformation_mode: str = "half_pixel"
    rounding_method: str = ""
    cubic_alpha: float = -0.5
    cubic_exclude: int = 0
    extrapolation_value: float = 0.0
    out_dtype: str = ""


def nearest_indices(out_size: int, in_size: int, mode: str, rounding: str) -> np.ndarray:
    """Source index of every output position along one axis."""
    f32 = np.float32
    x = np.arange(out_size, dtype=np.float32)
    if mode == "align_corners" and out_size > 1:
        scale = f32(in_size - 1) / f32(out_size - 1)
    else:
        scale = f32(in_size) / f32(out_size)
    rounding = rounding or ("round" if mode == "align_corners" else "floor")
    if mode == "half_pixel" and rounding == "round_prefer_ceil":
        idx = np.floor((x + f32(0.5)) * scale)  # TFLite half_pixel_centers: exactly its expression
    else:
        if mode in ("asymmetric", "align_corners"):
            v = x * scale
        elif mode == "tf_half_pixel_for_nn":
            v = (x + f32(0.5)) * scale
        elif mode == "pytorch_half_pixel" and out_size <= 1:
            v = np.zeros_like(x)
        else:  # half_pixel, pytorch_half_pixel
            v = (x + f32(0.5)) * scale - f32(0.5)
        v = v.astype(np.float32)
        if rounding == "round":
            idx = np.sign(v) * np.floor(np.abs(v.astype(np.float64)) + 0.5)  # TfLiteRound, exact in float64
        elif rounding == "floor":
            idx = np.floor(v)
        elif rounding == "ceil":
            idx = np.ceil(v)
        elif rounding == "round_prefer_floor":
            idx = np.ceil(v.astype(np.float64) - 0.5)
        else:
            idx = np.floor(v.astype(np.float64) + 0.5)
    return np.clip(idx.astype(np.int64), 0, in_size - 1)


def _out_shape(t: TensorType, attrs) -> tuple[int, ...]:
    name = "image.resize2d"
    if attrs.layout not in ("NCHW", "NHWC"):
        raise fail(name, "layout", "NCHW or NHWC", attrs.layout)
    if t.ndim != 4:
        raise fail(name, "data", f"a 4-D tensor in layout {attrs.layout}", t)
    if attrs.method != "nearest_neighbor":
        raise fail(name, "method", "'nearest_neighbor' (the only method implemented)", repr(attrs.method))
    if attrs.coordinate_transformation_mode not in _MODES:
        raise fail(name, "coordinate_transformation_mode", "one of " + ", ".join(_MODES),
                   repr(attrs.coordinate_transformation_mode))
    if attrs.rounding_method not in _ROUNDING:
        raise fail(name, "rounding_method", "one of " + ", ".join(repr(r) for r in _ROUNDING),
                   repr(attrs.rounding_method))
    if len(attrs.size) != 2 or min(attrs.size) <= 0:
        raise fail(name, "size", "two positive sizes (height, width)", attrs.size)
    n, h, w, c = to_nhwc(np.broadcast_to(np.False_, t.shape), attrs.layout).shape
    if h == 0 or w == 0:
        raise fail(name, "data", "a non-empty spatial extent", t)
    return from_nhwc(np.broadcast_to(np.False_, (n, attrs.size[0], attrs.size[1], c)), attrs.layout).shape


def _rel(types, attrs):
    t = tensor_arg("image.resize2d", ("data",), types, 0)
    return TensorType(_out_shape(t, attrs), attrs.out_dtype or t.dtype)


def _compute(args, attrs):
    (x,) = args
    xn = to_nhwc(x, attrs.layout)
    mode, rounding = attrs.coordinate_transformation_mode, attrs.rounding_method
    iy = nearest_indices(attrs.size[0], xn.shape[1], mode, rounding)
    ix = nearest_indices(attrs.size[1], xn.shape[2], mode, rounding)
    out = xn[:, iy][:, :, ix]
    return np.ascontiguousarray(from_nhwc(out, attrs.layout)).astype(attrs.out_dtype or x.dtype)


register_op("image.resize2d", ("data",), attrs=Resize2DAttrs, rel=_rel, fusion=FusionKind.INJECTIVE,
            compute=_compute, doc="Nearest-neighbour resize with TFLite RESIZE_NEAREST_NEIGHBOR index arithmetic.")
