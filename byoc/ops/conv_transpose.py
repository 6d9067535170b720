"""nn.conv2d_transpose (float and integer): the scatter-accumulate of TFLite's TRANSPOSE_CONV.

Every input pixel (iy, ix) adds x·w[ky, kx] to output (iy·s − pad_top + ky·d, ix·s − pad_left + kx·d); taps that
land outside the output are dropped. The output size is Relay's
(in − 1)·s − pad_before − pad_after + d·(k − 1) + 1 + output_padding.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .kernels import from_nhwc, to_nhwc
from .nn import _pair, data_weight_rel, normalize_padding
from .registry import FusionKind, register_op
from .rel import fail

__all__ = ["Conv2DTransposeAttrs", "conv2d_transpose_out_type", "conv2d_transpose_compute"]


@dataclass(frozen=True)
class Conv2DTransposeAttrs(Attrs):
    channels: int | None = None
    kernel_size: tuple | None = None
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    output_padding: tuple = (0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    data_layout: str = "NCHW"
    kernel_layout: str = "IOHW"
    out_layout: str = ""
    out_dtype: str = ""
    # "" sums in float64; "mlas": onnxruntime's float32 GEMM-then-col2im order (ops/mlas_order.py)
    accumulation: str = ""

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.accumulation not in ("", "mlas"):
            from ..errors import IRError
            raise IRError(f"conv2d_transpose: unknown accumulation {self.accumulation!r}", hint='use "" or "mlas"')
        object.__setattr__(self, "strides", _pair(self.strides))
        object.__setattr__(self, "dilation", _pair(self.dilation))
        object.__setattr__(self, "output_padding", _pair(self.output_padding))
        object.__setattr__(self, "padding", normalize_padding(self.padding))


def _kernel_perm(name: str, layout: str) -> tuple[int, ...]:
    if sorted(layout) != sorted("OIHW"):
        raise fail(name, "kernel_layout", "a permutation of OIHW (e.g. IOHW, OHWI, HWOI)", layout)
    return tuple(layout.index(c) for c in "HWIO")


def conv2d_transpose_out_type(name: str, data: TensorType, weight: TensorType, attrs: Conv2DTransposeAttrs,
                              out_dtype: str) -> TensorType:
    if data.ndim != 4 or attrs.data_layout not in ("NCHW", "NHWC"):
        raise fail(name, "data", "a 4-D tensor in layout NCHW or NHWC", f"{data} in {attrs.data_layout}")
    if weight.ndim != 4:
        raise fail(name, "weight", f"a 4-D tensor in layout {attrs.kernel_layout}", weight)
    perm = _kernel_perm(name, attrs.kernel_layout)
    kh, kw, ci, cog = (weight.shape[i] for i in perm)
    n, h, w, c = to_nhwc(np.broadcast_to(np.False_, data.shape), attrs.data_layout).shape
    g = attrs.groups
    if g <= 0 or c % g:
        raise fail(name, "groups", f"a divisor of the input channels {c}", g)
    if ci != c:
        raise fail(name, "weight", f"{c} input channels (axis 'I' of {attrs.kernel_layout})", weight.shape)
    co = cog * g
    if attrs.channels is not None and attrs.channels != co:
        raise fail(name, "channels", f"{co} (output channels of the kernel × groups)", attrs.channels)
    if attrs.kernel_size is not None and tuple(attrs.kernel_size) != (kh, kw):
        raise fail(name, "kernel_size", f"{(kh, kw)} (the kernel's spatial size)", attrs.kernel_size)
    if min(attrs.strides) <= 0 or min(attrs.dilation) <= 0 or min(attrs.padding) < 0:
        raise fail(name, "strides", "positive strides and dilation and non-negative padding",
                   (attrs.strides, attrs.dilation, attrs.padding))
    for op_, s, d in zip(attrs.output_padding, attrs.strides, attrs.dilation):
        if not 0 <= op_ < max(s, d):
            raise fail(name, "output_padding", f"a value in [0, max(stride, dilation)) = [0, {max(s, d)})",
                       attrs.output_padding)
    t, l, b, r = attrs.padding
    oh = (h - 1) * attrs.strides[0] - t - b + attrs.dilation[0] * (kh - 1) + 1 + attrs.output_padding[0]
    ow = (w - 1) * attrs.strides[1] - l - r + attrs.dilation[1] * (kw - 1) + 1 + attrs.output_padding[1]
    if oh <= 0 or ow <= 0:
        raise fail(name, "padding", f"padding small enough for a positive output size (got {oh}x{ow})",
                   attrs.padding)
    out = np.broadcast_to(np.False_, (n, oh, ow, co))
    return TensorType(from_nhwc(out, attrs.out_layout or attrs.data_layout).shape, out_dtype)


def conv2d_transpose_compute(x: np.ndarray, w: np.ndarray, attrs: Conv2DTransposeAttrs) -> np.ndarray:
    """The float64 scatter-accumulate (exact for integer operands of up to 16 bits); layout as in attrs."""
    xn = to_nhwc(x, attrs.data_layout).astype(np.float64)
    wk = w.transpose(_kernel_perm("nn.conv2d_transpose", attrs.kernel_layout)).astype(np.float64)
    n, h, wd, c = xn.shape
    kh, kw, _, cog = wk.shape
    g = attrs.groups
    cig = c // g
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilation
    t, l, b, r = attrs.padding
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + attrs.output_padding[0]
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + attrs.output_padding[1]
    canvas = np.zeros((n, full_h, full_w, cog * g), np.float64)
    for gi in range(g):
        xg = xn[..., gi * cig:(gi + 1) * cig]
        for ky in range(kh):
            for kx in range(kw):
                contrib = xg @ wk[ky, kx, gi * cig:(gi + 1) * cig, :]
                canvas[:, ky * dh: ky * dh + (h - 1) * sh + 1: sh, kx * dw: kx * dw + (wd - 1) * sw + 1: sw,
                       gi * cog:(gi + 1) * cog] += contrib
    out = canvas[:, t: full_h - b, l: full_w - r, :]
    return from_nhwc(out, attrs.out_layout or attrs.data_layout)


_rel = data_weight_rel("nn.conv2d_transpose", conv2d_transpose_out_type)


def _compute(args, attrs):
    x, w = args
    out_dtype = np.dtype(attrs.out_dtype or x.dtype.name)
    if attrs.accumulation == "mlas" and x.dtype == np.float32 and out_dtype == np.float32:
        from .mlas_order import mlas_conv2d_transpose_nhwc
        wk = w.transpose(_kernel_perm("nn.conv2d_transpose", attrs.kernel_layout)).astype(np.float32)
        out = mlas_conv2d_transpose_nhwc(to_nhwc(x, attrs.data_layout).astype(np.float32), wk, attrs)
        return from_nhwc(out, attrs.out_layout or attrs.data_layout)
    out = conv2d_transpose_compute(x, w, attrs)
    if x.dtype.kind in "iu":
        from ..quant.fixedpoint import wrap32
        return wrap32(np.rint(out).astype(np.int64)).astype(out_dtype)
    return out.astype(out_dtype)


register_op("nn.conv2d_transpose", ("data", "weight"), attrs=Conv2DTransposeAttrs, rel=_rel,
            fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_compute,
            doc="Transposed 2-D convolution (scatter-accumulate); IOHW kernels by default as in Relay.")
