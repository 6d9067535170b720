"""image.resize2d: nearest neighbour (TFLite RESIZE_NEAREST_NEIGHBOR) and bilinear (TFLite RESIZE_BILINEAR).

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

``method="linear"`` is LiteRT's reference RESIZE_BILINEAR, whose arithmetic depends on the dtype (it moves raw
values: a quantized tensor is interpolated on its integers, with no rescaling):

* float32 and uint8: float32 source coordinates ``s = x·scale`` (``asymmetric`` / ``align_corners``, scale
  in/out or (in−1)/(out−1)) or ``(x + 0.5)·scale − 0.5`` (``half_pixel``); taps lo = max(floor(s), 0),
  hi = min(ceil(s), in − 1); d = s − lo; the value is ``v00·(1−dy)·(1−dx) + v10·dy·(1−dx) + v01·(1−dy)·dx +
  v11·dy·dx`` in float32, in that order. uint8 adds 0.5 and truncates.
* int8 and int16 (``ResizeBilinearInteger``): 10-bit fixed point. scale₁₀ = (1024·in + out/2) / out (integer
  division; align_corners: (1024·(in−1) + (out−1)/2) / (out−1)); s = x·scale₁₀ (half_pixel: + scale₁₀/2 − 512);
  lo = max(s/1024, 0), hi = min((s + 1023)/1024, in − 1), w = s − 1024·lo; the int64 sum of the four taps times
  (1024 − wy or wy)·(1024 − wx or wx) is divided by 2^20 rounding half away from zero, then wrapped to the dtype.

Where LiteRT's integer kernel would read a row or column past the edge (s/1024 ≥ in: rounding of scale₁₀ at
upscaling ratios above ~50, e.g. 1 → 55) the edge is read here; the TFLite importer refuses those models.
``arithmetic="onnxruntime"`` (linear, float32 / uint8 / int8; the ONNX importer's) is onnxruntime's CPU Upsample kernel:
``linear_ort_taps`` below, and the value ``(dx2·dy2)·v00 + (dx1·dy2)·v01 + (dx2·dy1)·v10 + (dx1·dy1)·v11`` in
float32, left to right (dx1 the upper tap's weight, dx2 the lower's); 8-bit tensors blend their integers the same
way and truncate (onnxruntime's static_cast).
``rounding_method`` does not apply to linear resizing (TVM ignores it too) and the other coordinate modes are
refused for it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .kernels import from_nhwc, to_nhwc
from .registry import FusionKind, register_op
from .rel import fail, tensor_arg

__all__ = ["Resize2DAttrs", "nearest_indices", "linear_float_taps", "linear_int_taps", "linear_ort_taps",
           "LINEAR_DTYPES",
           "resize_window", "source_span"]

_MODES = ("asymmetric", "align_corners", "half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn")
_ROUNDING = ("", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")
_LINEAR_MODES = ("asymmetric", "align_corners", "half_pixel")
LINEAR_DTYPES = ("float32", "uint8", "int8", "int16")  # float32 arithmetic for the first two, 10-bit for the rest


@dataclass(frozen=True)
class Resize2DAttrs(Attrs):
    roi: tuple | None = None
    size: tuple = ()
    layout: str = "NCHW"
    method: str = "linear"  # as in Relay: "nearest_neighbor" or "linear" (cubic is not implemented)
    coordinate_transformation_mode: str = "half_pixel"
    rounding_method: str = ""
    cubic_alpha: float = -0.5
    cubic_exclude: int = 0
    extrapolation_value: float = 0.0
    out_dtype: str = ""
    # byoc's own: whose float32 bilinear arithmetic ("tflite": LiteRT's; "onnxruntime": its CPU Upsample kernel)
    arithmetic: str = "tflite"


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


def linear_float_taps(out_size: int, in_size: int, mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(float32 source coordinate, lower tap, upper tap) of every output position (LiteRT's float kernel)."""
    f32 = np.float32
    if mode == "align_corners" and out_size > 1:
        scale = f32(in_size - 1) / f32(out_size - 1)
    else:
        scale = f32(in_size) / f32(out_size)
    x = np.arange(out_size, dtype=np.float32)
    s = ((x + f32(0.5)) * scale - f32(0.5)) if mode == "half_pixel" else x * scale
    s = s.astype(np.float32)
    lo = np.clip(np.floor(s).astype(np.int64), 0, in_size - 1)
    hi = np.minimum(np.ceil(s).astype(np.int64), in_size - 1)
    return s, lo, hi


def linear_ort_taps(out_size: int, in_size: int, mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lower tap, upper tap, weight of the upper tap d1, weight of the lower tap d2) of every output position as
    onnxruntime's CPU Upsample kernel sets them up (SetupUpsampleBilinear): the float32 source coordinate from
    ONNX's scale out/in (``(x + 0.5)/scale − 0.5``, ``x/scale``, ``x·(in−1)/(out−1)``; the index itself when
    the scale is 1), clamped to [0, in − 1]; lo = trunc, hi = min(lo + 1, in − 1), d1 = |s − lo|, d2 = |s − hi|,
    both 0.5 where lo = hi."""
    f32 = np.float32
    x = np.arange(out_size, dtype=np.float32)
    scale = f32(out_size) / f32(in_size)
    if out_size == in_size:
        s = x
    elif mode == "align_corners":
        s = (x * f32(in_size - 1) / f32(out_size - 1)) if out_size > 1 else np.zeros_like(x)
    elif mode == "asymmetric":
        s = x / scale
    else:  # half_pixel (and pytorch_half_pixel above size 1)
        s = (x + f32(0.5)) / scale - f32(0.5)
    s = np.clip(s.astype(np.float32), f32(0), f32(in_size - 1))
    lo = np.minimum(s.astype(np.int64), in_size - 1)
    hi = np.minimum(lo + 1, in_size - 1)
    d1 = np.abs(s - lo.astype(np.float32)).astype(np.float32)
    d2 = np.abs(s - hi.astype(np.float32)).astype(np.float32)
    d1[lo == hi] = f32(0.5)
    d2[lo == hi] = f32(0.5)
    return lo, hi, d1, d2


def linear_int_taps(out_size: int, in_size: int, mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(10-bit source coordinate, lower tap, upper tap) of every output position (ResizeBilinearInteger)."""
    if mode == "align_corners" and out_size > 1:
        scale = (1024 * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale = (1024 * in_size + out_size // 2) // out_size
    s = np.arange(out_size, dtype=np.int64) * scale
    if mode == "half_pixel":
        s = s + scale // 2 - 512  # ≥ −512, so C's truncating /1024 and floor agree after the max with 0
    lo = np.clip(s // 1024, 0, in_size - 1)
    hi = np.minimum((s + 1023) // 1024, in_size - 1)
    return s, lo, hi


def resize_window(x: np.ndarray, in_hw: tuple[int, int], size, method: str, mode: str, rounding: str,
                  rows: tuple[int, int] | None = None, cols: tuple[int, int] | None = None,
                  origin: tuple[int, int] = (0, 0), arithmetic: str = "tflite") -> np.ndarray:
    """Output rows [r0, r1) and columns [c0, c1) of resizing an NHWC image of height×width ``in_hw`` to
    ``size``, computed from ``x``: the window of the image starting at ``origin`` that holds every tap they read
    (the whole image by default). One arithmetic for the whole op and for an NPU tile."""
    r0, r1 = rows or (0, size[0])
    c0, c1 = cols or (0, size[1])
    oy, ox = origin
    if method != "linear":
        iy = nearest_indices(size[0], in_hw[0], mode, rounding)[r0:r1] - oy
        ix = nearest_indices(size[1], in_hw[1], mode, rounding)[c0:c1] - ox
        return x[:, iy][:, :, ix]
    if arithmetic == "onnxruntime":  # Upsample's blend: (dx·dy)·v per tap, summed in tap order, in float32
        y0, y1, dy1, dy2 = (a[r0:r1] for a in linear_ort_taps(size[0], in_hw[0], mode))
        x0, x1, dx1, dx2 = (a[c0:c1] for a in linear_ort_taps(size[1], in_hw[1], mode))
        dy1, dy2 = dy1[None, :, None, None], dy2[None, :, None, None]
        dx1, dx2 = dx1[None, None, :, None], dx2[None, None, :, None]
        xf = x.astype(np.float32)
        tap = lambda yy, xx: xf[:, yy - oy][:, :, xx - ox]  # noqa: E731
        v = ((dx2 * dy2) * tap(y0, x0) + (dx1 * dy2) * tap(y0, x1) + (dx2 * dy1) * tap(y1, x0)
             + (dx1 * dy1) * tap(y1, x1)).astype(np.float32)
        # 8-bit: static_cast of the float32 value (truncation; a convex blend stays in range)
        return v if x.dtype == np.float32 else np.trunc(v).astype(np.int64).astype(x.dtype)
    if x.dtype in (np.float32, np.uint8):
        sy, y0, y1 = (a[r0:r1] for a in linear_float_taps(size[0], in_hw[0], mode))
        sx, x0, x1 = (a[c0:c1] for a in linear_float_taps(size[1], in_hw[1], mode))
        one = np.float32(1)
        dy = (sy - y0.astype(np.float32))[None, :, None, None]
        dx = (sx - x0.astype(np.float32))[None, None, :, None]
        xf = x.astype(np.float32)
        tap = lambda yy, xx: xf[:, yy - oy][:, :, xx - ox]  # noqa: E731
        v = tap(y0, x0) * (one - dy) * (one - dx) + tap(y1, x0) * dy * (one - dx) + \
            tap(y0, x1) * (one - dy) * dx + tap(y1, x1) * dy * dx
        if x.dtype == np.float32:
            return v
        return np.trunc(v + np.float32(0.5)).astype(np.int64).astype(x.dtype)
    sy, y0, y1 = (a[r0:r1] for a in linear_int_taps(size[0], in_hw[0], mode))
    sx, x0, x1 = (a[c0:c1] for a in linear_int_taps(size[1], in_hw[1], mode))
    wy = (sy - 1024 * y0)[None, :, None, None]
    wx = (sx - 1024 * x0)[None, None, :, None]
    xi = x.astype(np.int64)
    tap = lambda yy, xx: xi[:, yy - oy][:, :, xx - ox]  # noqa: E731
    acc = tap(y0, x0) * (1024 - wy) * (1024 - wx) + tap(y1, x0) * wy * (1024 - wx) + \
        tap(y0, x1) * (1024 - wy) * wx + tap(y1, x1) * wy * wx
    q = acc + np.where(acc > 0, 1 << 19, -(1 << 19))
    return (np.sign(q) * (np.abs(q) >> 20)).astype(x.dtype)  # C's truncating division, then a wrapping cast


def source_span(out_lo: int, out_hi: int, out_size: int, in_size: int, method: str, mode: str,
                rounding: str) -> tuple[int, int]:
    """[first, last + 1) of the input rows (or columns) that output rows [out_lo, out_hi) read."""
    if method != "linear":
        idx = nearest_indices(out_size, in_size, mode, rounding)[out_lo:out_hi]
        return int(idx.min()), int(idx.max()) + 1
    _, lo, hi = linear_int_taps(out_size, in_size, mode)   # either arithmetic (the dtype picks): both spans
    _, flo, fhi = linear_float_taps(out_size, in_size, mode)
    lo = np.minimum(lo, flo)[out_lo:out_hi]
    hi = np.maximum(hi, fhi)[out_lo:out_hi]
    return int(lo.min()), int(hi.max()) + 1


def _out_shape(t: TensorType, attrs) -> tuple[int, ...]:
    name = "image.resize2d"
    if attrs.layout not in ("NCHW", "NHWC"):
        raise fail(name, "layout", "NCHW or NHWC", attrs.layout)
    if t.ndim != 4:
        raise fail(name, "data", f"a 4-D tensor in layout {attrs.layout}", t)
    if attrs.method not in ("nearest_neighbor", "linear"):
        raise fail(name, "method", "'nearest_neighbor' or 'linear' (cubic is not implemented)", repr(attrs.method))
    if attrs.method == "linear":
        if attrs.coordinate_transformation_mode not in _LINEAR_MODES:
            raise fail(name, "coordinate_transformation_mode", "one of " + ", ".join(_LINEAR_MODES) +
                       " for method 'linear' (TFLite's RESIZE_BILINEAR modes)",
                       repr(attrs.coordinate_transformation_mode))
        if t.dtype not in LINEAR_DTYPES:
            raise fail(name, "data", "a tensor of " + ", ".join(LINEAR_DTYPES) + " for method 'linear'", t)
        if attrs.out_dtype not in ("", t.dtype):
            raise fail(name, "out_dtype", f"'' or {t.dtype!r} (linear resizing keeps the dtype)",
                       repr(attrs.out_dtype))
    if attrs.arithmetic not in ("tflite", "onnxruntime"):
        raise fail(name, "arithmetic", "'tflite' or 'onnxruntime'", repr(attrs.arithmetic))
    if attrs.arithmetic == "onnxruntime" and (attrs.method != "linear" or t.dtype not in ("float32", "uint8", "int8")):
        raise fail(name, "arithmetic", "'tflite' except for a float32 / 8-bit linear resize", repr(attrs.arithmetic))
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
    out = resize_window(xn, xn.shape[1:3], attrs.size, attrs.method, attrs.coordinate_transformation_mode,
                        attrs.rounding_method, arithmetic=attrs.arithmetic)
    if attrs.method == "linear":
        return np.ascontiguousarray(from_nhwc(out, attrs.layout))
    return np.ascontiguousarray(from_nhwc(out, attrs.layout)).astype(attrs.out_dtype or x.dtype)


register_op("image.resize2d", ("data",), attrs=Resize2DAttrs, rel=_rel, fusion=FusionKind.INJECTIVE,
            compute=_compute, doc="Nearest-neighbour or bilinear resize with TFLite's arithmetic "
                                  "(RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR).")
