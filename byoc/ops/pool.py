"""Pooling: nn.max_pool2d, nn.avg_pool2d, nn.global_avg_pool2d, nn.global_max_pool2d.

Windows follow Relay (padding (top, left, bottom, right), dilation, ceil_mode). Taps in the padding are skipped
(max) or contribute zero (average). On integer tensors the average is TFLite's AVERAGE_POOL: the sum of the raw
in-window values divided by the tap count with rounding half away from zero; the count excludes padding unless
``count_include_pad``. Float averages accumulate tap by tap in the tensor's dtype, in (ky, kx) order as TFLite.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ExecutionError
from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .kernels import from_nhwc, to_nhwc
from .nn import _pair, normalize_padding
from .registry import FusionKind, register_op
from .rel import fail, tensor_arg

__all__ = ["MaxPool2DAttrs", "AvgPool2DAttrs", "GlobalPool2DAttrs", "pool_out_size", "avg_pool_nhwc",
           "max_pool_nhwc"]

_LAYOUTS = ("NCHW", "NHWC")


@dataclass(frozen=True)
class MaxPool2DAttrs(Attrs):
    pool_size: tuple = (1, 1)
    strides: tuple = (1, 1)
    dilation: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    layout: str = "NCHW"
    out_layout: str = ""
    ceil_mode: bool = False

    def __post_init__(self):
        Attrs.__post_init__(self)
        for k in ("pool_size", "strides", "dilation"):
            object.__setattr__(self, k, _pair(getattr(self, k)))
        object.__setattr__(self, "padding", normalize_padding(self.padding))


@dataclass(frozen=True)
class AvgPool2DAttrs(MaxPool2DAttrs):
    count_include_pad: bool = False


@dataclass(frozen=True)
class GlobalPool2DAttrs(Attrs):
    layout: str = "NCHW"
    out_layout: str = ""


def pool_out_size(size: int, k: int, stride: int, dilation: int, before: int, after: int, ceil_mode: bool) -> int:
    """Relay's Pool2DRel: (size + pads − eff [+ stride − 1 in ceil mode]) // stride + 1."""
    eff = (k - 1) * dilation + 1
    extra = stride - 1 if ceil_mode else 0
    return (size + before + after - eff + extra) // stride + 1


def _pool_data(name, types, attrs) -> TensorType:
    """The 4-D data operand of a pooling op, with its layouts checked."""
    data = tensor_arg(name, ("data",), types, 0)
    if attrs.layout not in _LAYOUTS or (attrs.out_layout and attrs.out_layout not in _LAYOUTS):
        raise fail(name, "layout", "NCHW or NHWC", (attrs.layout, attrs.out_layout))
    if data.ndim != 4:
        raise fail(name, "data", f"a 4-D tensor in layout {attrs.layout}", data)
    return data


def _pool_rel(name):
    def rel(types, attrs):
        data = _pool_data(name, types, attrs)
        if min(attrs.pool_size) <= 0 or min(attrs.strides) <= 0 or min(attrs.dilation) <= 0:
            raise fail(name, "pool_size", "positive pool_size, strides and dilation",
                       (attrs.pool_size, attrs.strides, attrs.dilation))
        if min(attrs.padding) < 0:
            raise fail(name, "padding", "non-negative padding", attrs.padding)
        n, h, w, c = to_nhwc(np.broadcast_to(np.False_, data.shape), attrs.layout).shape
        t, l, b, r = attrs.padding
        oh = pool_out_size(h, attrs.pool_size[0], attrs.strides[0], attrs.dilation[0], t, b, attrs.ceil_mode)
        ow = pool_out_size(w, attrs.pool_size[1], attrs.strides[1], attrs.dilation[1], l, r, attrs.ceil_mode)
        if oh <= 0 or ow <= 0:
            raise fail(name, "data", f"a spatial size of at least the dilated pool window {attrs.pool_size}",
                       (h, w))
        out = np.broadcast_to(np.False_, (n, oh, ow, c))
        return TensorType(from_nhwc(out, attrs.out_layout or attrs.layout).shape, data.dtype)
    return rel


def _windows(x: np.ndarray, attrs, fill):
    """Yield (tap values, tap-in-image mask) for every (ky, kx) of every output window, NHWC."""
    n, h, w, c = x.shape
    kh, kw = attrs.pool_size
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilation
    t, l, b, r = attrs.padding
    oh = pool_out_size(h, kh, sh, dh, t, b, attrs.ceil_mode)
    ow = pool_out_size(w, kw, sw, dw, l, r, attrs.ceil_mode)
    # Pad generously (ceil mode may read past the declared padding) and track which positions are real pixels.
    ph = max((oh - 1) * sh + (kh - 1) * dh + 1 - h - t, 0)
    pw = max((ow - 1) * sw + (kw - 1) * dw + 1 - w - l, 0)
    xp = np.pad(x, ((0, 0), (t, ph), (l, pw), (0, 0)), constant_values=fill)
    inside = np.zeros((1, t + h + ph, l + w + pw, 1), np.bool_)
    inside[:, t:t + h, l:l + w, :] = True
    declared = np.zeros_like(inside)  # the image plus its declared padding (count_include_pad counts these)
    declared[:, :t + h + b, :l + w + r, :] = True
    for ky in range(kh):
        for kx in range(kw):
            sl = (slice(None), slice(ky * dh, ky * dh + (oh - 1) * sh + 1, sh),
                  slice(kx * dw, kx * dw + (ow - 1) * sw + 1, sw), slice(None))
            yield xp[sl], inside[sl], declared[sl]


def max_pool_nhwc(x: np.ndarray, attrs) -> np.ndarray:
    lowest = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
    out = None
    for vals, _, _ in _windows(x, attrs, lowest):
        out = vals.copy() if out is None else np.maximum(out, vals)
    return out.astype(x.dtype)


def avg_pool_nhwc(x: np.ndarray, attrs) -> np.ndarray:
    integer = x.dtype.kind in "iu"
    acc_dtype = np.int64 if integer else x.dtype
    total = None
    count = None
    for vals, inside, declared in _windows(x, attrs, 0):
        v = vals.astype(acc_dtype)
        total = v.copy() if total is None else total + v
        hit = (declared if attrs.count_include_pad else inside).astype(np.int64)
        count = hit if count is None else count + hit
    if np.any(count == 0):
        raise ExecutionError("nn.avg_pool2d: a pooling window covers no input pixel",
                             hint="reduce the padding or disable ceil_mode")
    if integer:
        q = (np.abs(total) + count // 2) // count
        out = np.where(total < 0, -q, q)
        info = np.iinfo(x.dtype)
        return np.clip(out, info.min, info.max).astype(x.dtype)
    return (total / count.astype(x.dtype)).astype(x.dtype)


def _pool_compute(fn):
    def compute(args, attrs):
        (x,) = args
        out = fn(to_nhwc(x, attrs.layout), attrs)
        return np.ascontiguousarray(from_nhwc(out, attrs.out_layout or attrs.layout))
    return compute


register_op("nn.max_pool2d", ("data",), attrs=MaxPool2DAttrs, rel=_pool_rel("nn.max_pool2d"),
            fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_pool_compute(max_pool_nhwc),
            doc="Max over each window's in-image taps (raw integers for quantized tensors).")
register_op("nn.avg_pool2d", ("data",), attrs=AvgPool2DAttrs, rel=_pool_rel("nn.avg_pool2d"),
            fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_pool_compute(avg_pool_nhwc),
            doc="Window average; integers: TFLite AVERAGE_POOL (round half away, count excludes padding).")


def _global_rel(name):
    def rel(types, attrs):
        data = _pool_data(name, types, attrs)
        n, h, w, c = to_nhwc(np.broadcast_to(np.False_, data.shape), attrs.layout).shape
        if h == 0 or w == 0:
            raise fail(name, "data", "a non-empty spatial extent", data)
        out = np.broadcast_to(np.False_, (n, 1, 1, c))
        return TensorType(from_nhwc(out, attrs.out_layout or attrs.layout).shape, data.dtype)
    return rel


def _global_avg(x: np.ndarray, attrs) -> np.ndarray:
    count = x.shape[1] * x.shape[2]
    if x.dtype.kind in "iu":
        total = x.astype(np.int64).sum(axis=(1, 2), keepdims=True)
        q = (np.abs(total) + count // 2) // count
        return np.where(total < 0, -q, q).astype(x.dtype)
    return (x.sum(axis=(1, 2), keepdims=True, dtype=x.dtype) / x.dtype.type(count)).astype(x.dtype)


def _global_max(x: np.ndarray, attrs) -> np.ndarray:
    return x.max(axis=(1, 2), keepdims=True)


register_op("nn.global_avg_pool2d", ("data",), attrs=GlobalPool2DAttrs, rel=_global_rel("nn.global_avg_pool2d"),
            fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_pool_compute(_global_avg),
            doc="Average over H and W (integers round half away from zero).")
register_op("nn.global_max_pool2d", ("data",), attrs=GlobalPool2DAttrs, rel=_global_rel("nn.global_max_pool2d"),
            fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_pool_compute(_global_max),
            doc="Maximum over H and W.")
