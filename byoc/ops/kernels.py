"""Numpy reference kernels shared by float and quantized ops.

Integer convolutions and matrix products accumulate in float64 through BLAS: every product of two 16-bit
values is below 2^32 and a reduction of fewer than 2^20 of them stays below 2^53, so the float64 sum is the
exact integer (callers then wrap to int32 as TFLite does).
"""
from __future__ import annotations

import numpy as np

from ..errors import IRError

__all__ = ["to_nhwc", "from_nhwc", "nhwc_shape", "shape_from_nhwc", "kernel_to_hwio", "conv2d_nhwc_hwio", "pad_nhwc", "conv_out_size",
           "exact_int_matmul"]

_EXACT_K_LIMIT = 1 << 20


def to_nhwc(x: np.ndarray, layout: str) -> np.ndarray:
    if layout == "NHWC":
        return x
    if layout == "NCHW":
        return x.transpose(0, 2, 3, 1)
    raise IRError(f"unsupported data layout {layout!r}", hint="NCHW or NHWC")


def from_nhwc(x: np.ndarray, layout: str) -> np.ndarray:
    if layout == "NHWC":
        return x
    if layout == "NCHW":
        return x.transpose(0, 3, 1, 2)
    raise IRError(f"unsupported data layout {layout!r}", hint="NCHW or NHWC")


def nhwc_shape(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """``to_nhwc(x, layout).shape`` from the shape alone (type relations run once per node: no array needed)."""
    if layout == "NHWC":
        return tuple(shape)
    if layout == "NCHW":
        return (shape[0], shape[2], shape[3], shape[1])
    raise IRError(f"unsupported data layout {layout!r}", hint="NCHW or NHWC")


def shape_from_nhwc(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """``from_nhwc(x, layout).shape`` from the shape alone."""
    if layout == "NHWC":
        return tuple(shape)
    if layout == "NCHW":
        return (shape[0], shape[3], shape[1], shape[2])
    raise IRError(f"unsupported data layout {layout!r}", hint="NCHW or NHWC")


_KERNEL_PERM = {"HWIO": (0, 1, 2, 3), "OIHW": (2, 3, 1, 0), "OHWI": (1, 2, 3, 0), "HWOI": (0, 1, 3, 2),
                "IHWO": (1, 2, 0, 3)}


def _multiplier_form(shape, layout: str, groups: int, cin: int | None) -> bool:
    """TVM's depthwise kernel convention: with groups = Cin > 1 the kernel's ``O`` axis holds the Cin input
    channels and its ``I`` axis the depth multiplier (TVM's conv2d type relation; the TFLite frontend's HWOI
    [KH, KW, Cin, M]). Output channel c·M + m reads input channel c. With M = 1 it is the plain grouped form."""
    if groups <= 1 or cin != groups or layout not in _KERNEL_PERM:
        return False
    return shape[layout.index("O")] == groups and shape[layout.index("I")] != 1


def kernel_to_hwio(w: np.ndarray, layout: str, groups: int = 1, cin: int | None = None) -> np.ndarray:
    """The kernel as grouped HWIO [KH, KW, Cin/groups, Cout]; ``groups`` and ``cin`` (the data's channels)
    recognise TVM's depthwise [.., Cin, M] convention (see ``_multiplier_form``)."""
    if layout not in _KERNEL_PERM:
        raise IRError(f"unsupported kernel layout {layout!r}", hint=", ".join(_KERNEL_PERM))
    if _multiplier_form(w.shape, layout, groups, cin):
        hwoi = w.transpose(tuple(layout.index(c) for c in "HWOI"))
        return hwoi.reshape(hwoi.shape[0], hwoi.shape[1], 1, hwoi.shape[2] * hwoi.shape[3])
    return w.transpose(_KERNEL_PERM[layout])


def kernel_hwio_shape(shape: tuple[int, ...], layout: str, groups: int = 1,
                      cin: int | None = None) -> tuple[int, int, int, int]:
    if layout not in _KERNEL_PERM:
        raise IRError(f"unsupported kernel layout {layout!r}", hint=", ".join(_KERNEL_PERM))
    if _multiplier_form(shape, layout, groups, cin):
        d = dict(zip(layout, shape))
        return d["H"], d["W"], 1, d["O"] * d["I"]
    p = _KERNEL_PERM[layout]
    return tuple(shape[i] for i in p)  # type: ignore[return-value]


def conv_out_size(size: int, k: int, stride: int, dilation: int, pad_before: int, pad_after: int) -> int:
    eff = (k - 1) * dilation + 1
    return (size + pad_before + pad_after - eff) // stride + 1


def pad_nhwc(x: np.ndarray, padding: tuple[int, int, int, int], value) -> np.ndarray:
    top, left, bottom, right = padding
    if not any(padding):
        return x
    return np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=value)


def exact_int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact integer a @ b (int64 result) for small-integer operands, through float64 BLAS."""
    if a.shape[-1] >= _EXACT_K_LIMIT:
        return np.matmul(a.astype(np.int64), b.astype(np.int64))
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)


def conv2d_nhwc_hwio(x: np.ndarray, w: np.ndarray, strides, dilation, groups: int,
                     integer: bool) -> np.ndarray:
    """Grouped 2-D convolution of an already padded NHWC input with an HWIO kernel (I = Cin/groups).

    Integer inputs give the exact int64 accumulator; float inputs accumulate in float64.
    """
    n, h, wd, cin = x.shape
    kh, kw, cig, cout = w.shape
    sh, sw = strides
    dh, dw = dilation
    oh = (h - ((kh - 1) * dh + 1)) // sh + 1
    ow = (wd - ((kw - 1) * dw + 1)) // sw + 1
    if oh <= 0 or ow <= 0:
        return np.zeros((n, max(oh, 0), max(ow, 0), cout), np.int64 if integer else np.float64)
    cog = cout // groups
    xf = x.astype(np.float64)
    wf = w.astype(np.float64)
    out = np.empty((n, oh, ow, cout), np.float64)
    if cig == 1 and groups == cin and groups > 1:
        # Depthwise: accumulate tap by tap over all channels at once.
        mult = cog
        acc = np.zeros((n, oh, ow, cin, mult), np.float64)
        wr = wf.reshape(kh, kw, cin, mult)
        for ky in range(kh):
            for kx in range(kw):
                patch = xf[:, ky * dh: ky * dh + (oh - 1) * sh + 1: sh, kx * dw: kx * dw + (ow - 1) * sw + 1: sw, :]
                acc += patch[..., None] * wr[ky, kx]
        out = acc.reshape(n, oh, ow, cout)
    elif kh == kw == 1 and groups == 1:
        # Pointwise: no im2col copy, one matrix product over the (strided) pixels.
        a = xf[:, : (oh - 1) * sh + 1: sh, : (ow - 1) * sw + 1: sw, :].reshape(n * oh * ow, cin)
        out = (a @ wf.reshape(cin, cout)).reshape(n, oh, ow, cout)
    else:
        cols = np.empty((n, oh, ow, kh, kw, cin), np.float64)
        for ky in range(kh):
            for kx in range(kw):
                cols[:, :, :, ky, kx, :] = xf[:, ky * dh: ky * dh + (oh - 1) * sh + 1: sh,
                                              kx * dw: kx * dw + (ow - 1) * sw + 1: sw, :]
        for g in range(groups):
            a = cols[..., g * cig:(g + 1) * cig].reshape(n * oh * ow, kh * kw * cig)
            b = wf[:, :, :, g * cog:(g + 1) * cog].reshape(kh * kw * cig, cog)
            out[..., g * cog:(g + 1) * cog] = (a @ b).reshape(n, oh, ow, cog)
    if integer:
        return np.rint(out).astype(np.int64)
    return out
