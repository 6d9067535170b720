"""Neural-network ops (float, and integer where they are pure data movement): conv2d, pad, bias_add, ..."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType, TupleType
from .kernels import (conv2d_nhwc_hwio, conv_out_size, from_nhwc, kernel_hwio_shape, kernel_to_hwio, nhwc_shape,
                      pad_nhwc, shape_from_nhwc, to_nhwc)
from .registry import FusionKind, register_op
from .rel import fail, tensor_arg


def normalize_padding(padding) -> tuple[int, int, int, int]:
    """Relay's padding spellings → (top, left, bottom, right)."""
    p = tuple(int(v) for v in (padding if isinstance(padding, (tuple, list)) else (padding,)))
    if len(p) == 1:
        return (p[0],) * 4
    if len(p) == 2:
        return (p[0], p[1], p[0], p[1])
    if len(p) == 4:
        return p  # type: ignore[return-value]
    from ..errors import IRError
    raise IRError(f"padding must have 1, 2 or 4 values, got {p}")


def _pair(v) -> tuple[int, int]:
    if isinstance(v, (tuple, list)):
        return (int(v[0]), int(v[1])) if len(v) == 2 else (int(v[0]), int(v[0]))
    return (int(v), int(v))


@dataclass(frozen=True)
class Conv2DAttrs(Attrs):
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple | None = None
    data_layout: str = "NCHW"
    kernel_layout: str = "OIHW"
    out_layout: str = ""
    out_dtype: str = ""
    # "" sums in float64 and rounds once; "mlas" follows onnxruntime's float32 MLAS order (ops/mlas_order.py)
    accumulation: str = ""

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.accumulation not in ("", "mlas"):
            from ..errors import IRError
            raise IRError(f"conv2d: unknown accumulation {self.accumulation!r}", hint='use "" or "mlas"')
        object.__setattr__(self, "strides", _pair(self.strides))
        object.__setattr__(self, "dilation", _pair(self.dilation))
        object.__setattr__(self, "padding", normalize_padding(self.padding))


def conv2d_out_type(name: str, data: TensorType, weight: TensorType, attrs: Conv2DAttrs,
                    out_dtype: str) -> TensorType:
    if data.ndim != 4:
        raise fail(name, "data", f"a 4-D tensor in layout {attrs.data_layout}", data)
    if weight.ndim != 4:
        raise fail(name, "weight", f"a 4-D tensor in layout {attrs.kernel_layout}", weight)
    n, h, w, c = nhwc_shape(data.shape, attrs.data_layout)
    kh, kw, ci, co = kernel_hwio_shape(weight.shape, attrs.kernel_layout, attrs.groups, c)
    g = attrs.groups
    if g <= 0 or c % g or co % g:
        raise fail(name, "groups", f"a divisor of input channels {c} and output channels {co}", g)
    if ci * g != c:
        raise fail(name, "weight", f"{c // g} input channels per group ({c} channels / groups={g}) "
                   f"in layout {attrs.kernel_layout}", weight.shape)
    if attrs.channels is not None and attrs.channels != co:
        raise fail(name, "channels", f"{co} (the kernel's output channels)", attrs.channels)
    if attrs.kernel_size is not None and tuple(attrs.kernel_size) != (kh, kw):
        raise fail(name, "kernel_size", f"{(kh, kw)} (the kernel's spatial size)", attrs.kernel_size)
    if min(attrs.strides) <= 0 or min(attrs.dilation) <= 0:
        raise fail(name, "strides", "positive strides and dilation",
                   f"strides {attrs.strides}, dilation {attrs.dilation}")
    t, l, b, r = attrs.padding
    oh = conv_out_size(h, kh, attrs.strides[0], attrs.dilation[0], t, b)
    ow = conv_out_size(w, kw, attrs.strides[1], attrs.dilation[1], l, r)
    if oh <= 0 or ow <= 0:
        raise fail(name, "data", f"spatial size large enough for kernel {(kh, kw)} with dilation "
                   f"{attrs.dilation}, strides {attrs.strides}", (h, w))
    return TensorType(shape_from_nhwc((n, oh, ow, co), attrs.out_layout or attrs.data_layout), out_dtype)


def data_weight_rel(name: str, out_type):
    """Type relation of a float (data, weight) op: same dtypes unless ``out_dtype`` is given, then
    ``out_type(name, data, weight, attrs, out_dtype)``."""
    def rel(types, attrs):
        data = tensor_arg(name, ("data", "weight"), types, 0)
        weight = tensor_arg(name, ("data", "weight"), types, 1)
        if data.dtype != weight.dtype and not attrs.out_dtype:
            raise fail(name, "weight", f"dtype {data.dtype} (same as data)", weight.dtype)
        return out_type(name, data, weight, attrs, attrs.out_dtype or data.dtype)
    return rel


_conv2d_rel = data_weight_rel("nn.conv2d", conv2d_out_type)


def conv2d_compute(x: np.ndarray, w: np.ndarray, attrs: Conv2DAttrs, integer: bool, pad_value=0) -> np.ndarray:
    xn = pad_nhwc(to_nhwc(x, attrs.data_layout), attrs.padding, pad_value)
    wk = kernel_to_hwio(w, attrs.kernel_layout, attrs.groups, xn.shape[3])
    out = conv2d_nhwc_hwio(xn, wk, attrs.strides, attrs.dilation, attrs.groups, integer)
    return from_nhwc(out, attrs.out_layout or attrs.data_layout)


def _conv2d_compute(args, attrs):
    x, w = args
    out_dtype = np.dtype(attrs.out_dtype or x.dtype.name)
    integer = x.dtype.kind in "iu"
    if attrs.accumulation == "mlas" and x.dtype == np.float32 and out_dtype == np.float32:
        return _mlas_conv2d(x, w, attrs)
    out = conv2d_compute(x, w, attrs, integer)
    if integer:
        from ..quant.fixedpoint import wrap32
        return wrap32(out).astype(out_dtype)
    return out.astype(out_dtype)


def _mlas_conv2d(x, w, attrs):
    from .mlas_order import mlas_conv2d_nhwc
    xn = pad_nhwc(to_nhwc(x, attrs.data_layout), attrs.padding, 0)
    wk = kernel_to_hwio(w, attrs.kernel_layout, attrs.groups, xn.shape[3])
    pointwise = wk.shape[:2] == (1, 1) and attrs.strides == (1, 1) and attrs.padding == (0, 0, 0, 0)
    out = mlas_conv2d_nhwc(xn, wk, attrs.strides, attrs.dilation, attrs.groups, pointwise)
    return from_nhwc(out, attrs.out_layout or attrs.data_layout)


register_op("nn.conv2d", ("data", "weight"), attrs=Conv2DAttrs, rel=_conv2d_rel,
            fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_conv2d_compute,
            doc="2-D convolution (grouped, dilated, strided); NCHW/NHWC data, OIHW/HWIO/OHWI kernels.")


@dataclass(frozen=True)
class PadAttrs(Attrs):
    pad_width: tuple = ()
    pad_mode: str = "constant"


def _pad_rel(types, attrs):
    data = tensor_arg("nn.pad", ("data", "pad_value"), types, 0)
    pv = tensor_arg("nn.pad", ("data", "pad_value"), types, 1)
    if pv.ndim != 0:
        raise fail("nn.pad", "pad_value", "a scalar", pv)
    if len(attrs.pad_width) != data.ndim:
        raise fail("nn.pad", "pad_width", f"{data.ndim} (before, after) pairs", attrs.pad_width)
    shape = []
    for d, pw in zip(data.shape, attrs.pad_width):
        if len(pw) != 2 or min(pw) < 0:
            raise fail("nn.pad", "pad_width", "non-negative (before, after) pairs", attrs.pad_width)
        shape.append(d + pw[0] + pw[1])
    if attrs.pad_mode != "constant":
        raise fail("nn.pad", "pad_mode", "'constant'", attrs.pad_mode)
    return TensorType(tuple(shape), data.dtype)


def _pad_compute(args, attrs):
    x, v = args
    return np.pad(x, [tuple(p) for p in attrs.pad_width], constant_values=v.astype(x.dtype).item())


register_op("nn.pad", ("data", "pad_value"), attrs=PadAttrs, rel=_pad_rel, fusion=FusionKind.INJECTIVE,
            compute=_pad_compute, doc="Constant padding; pad_value is a scalar expression (the zero point).")


@dataclass(frozen=True)
class BiasAddAttrs(Attrs):
    axis: int = 1


def _bias_add_rel(types, attrs):
    names = ("data", "bias")
    data = tensor_arg("nn.bias_add", names, types, 0)
    bias = tensor_arg("nn.bias_add", names, types, 1)
    axis = attrs.axis if attrs.axis >= 0 else attrs.axis + data.ndim
    if not 0 <= axis < data.ndim:
        raise fail("nn.bias_add", "axis", f"an axis of a rank-{data.ndim} tensor", attrs.axis)
    if bias.shape != (data.shape[axis],):
        raise fail("nn.bias_add", "bias", f"shape ({data.shape[axis]},) (data axis {axis})", bias.shape)
    if bias.dtype != data.dtype:
        raise fail("nn.bias_add", "bias", f"dtype {data.dtype}", bias.dtype)
    return data


def _bias_add_compute(args, attrs):
    x, b = args
    axis = attrs.axis if attrs.axis >= 0 else attrs.axis + x.ndim
    shape = [1] * x.ndim
    shape[axis] = b.shape[0]
    if x.dtype.kind in "iu" and x.dtype.itemsize <= 4:
        from ..quant.fixedpoint import wrap32
        return wrap32(x.astype(np.int64) + b.reshape(shape).astype(np.int64)).astype(x.dtype)
    return (x + b.reshape(shape)).astype(x.dtype)  # int64 (16x8 accumulators): a 64-bit add


register_op("nn.bias_add", ("data", "bias"), attrs=BiasAddAttrs, rel=_bias_add_rel, fusion=FusionKind.BROADCAST,
            compute=_bias_add_compute, doc="Add a bias vector along `axis` (int32 adds wrap).")


def _relu_rel(types, attrs):
    return tensor_arg("nn.relu", ("data",), types, 0)


register_op("nn.relu", ("data",), rel=_relu_rel, fusion=FusionKind.ELEMWISE,
            compute=lambda args, attrs: np.maximum(args[0], 0).astype(args[0].dtype), doc="max(x, 0).")


@dataclass(frozen=True)
class BatchNormAttrs(Attrs):
    axis: int = 1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


def _batch_norm_rel(types, attrs):
    names = ("data", "gamma", "beta", "moving_mean", "moving_var")
    data = tensor_arg("nn.batch_norm", names, types, 0)
    axis = attrs.axis if attrs.axis >= 0 else attrs.axis + data.ndim
    if not 0 <= axis < data.ndim:
        raise fail("nn.batch_norm", "axis", f"an axis of a rank-{data.ndim} tensor", attrs.axis)
    c = data.shape[axis]
    for i in range(1, 5):
        t = tensor_arg("nn.batch_norm", names, types, i)
        if t.shape != (c,) or t.dtype != data.dtype:
            raise fail("nn.batch_norm", names[i], f"Tensor[({c},), {data.dtype}]", t)
    vec = TensorType((c,), data.dtype)
    return TupleType((data, vec, vec))


def _batch_norm_compute(args, attrs):
    x, gamma, beta, mean, var = args
    axis = attrs.axis if attrs.axis >= 0 else attrs.axis + x.ndim
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    dt = x.dtype
    scale = (1.0 / np.sqrt(var.astype(dt) + dt.type(attrs.epsilon))).astype(dt)
    if attrs.scale:
        scale = (scale * gamma).astype(dt)
    shift = (-mean * scale).astype(dt)
    if attrs.center:
        shift = (shift + beta).astype(dt)
    y = (x * scale.reshape(shape) + shift.reshape(shape)).astype(dt)
    return (y, mean, var)


register_op("nn.batch_norm", ("data", "gamma", "beta", "moving_mean", "moving_var"), attrs=BatchNormAttrs,
            rel=_batch_norm_rel, fusion=FusionKind.OPAQUE, compute=_batch_norm_compute,
            doc="Inference batch norm; returns (out, mean, var) like Relay. SimplifyInference rewrites it.")


def _norm_axis(op: str, arg: str, axis: int, ndim: int) -> int:
    a = axis + ndim if axis < 0 else axis
    if not 0 <= a < ndim:
        raise fail(op, arg, f"an axis of a rank-{ndim} tensor", axis)
    return a


@dataclass(frozen=True)
class DenseAttrs(Attrs):
    units: int | None = None
    out_dtype: str = ""
    # "" : numpy's float32 matmul; "mlas": onnxruntime's MlasGemm float32 order (ops/mlas_order.py)
    accumulation: str = ""

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.accumulation not in ("", "mlas"):
            from ..errors import IRError
            raise IRError(f"dense: unknown accumulation {self.accumulation!r}", hint='use "" or "mlas"')


def dense_out_type(name: str, data: TensorType, weight: TensorType, attrs: DenseAttrs, out_dtype: str) -> TensorType:
    if data.ndim < 1:
        raise fail(name, "data", "a tensor of rank ≥ 1 ([..., K])", data)
    if weight.ndim != 2:
        raise fail(name, "weight", "a 2-D tensor [units, K]", weight)
    if weight.shape[1] != data.shape[-1]:
        raise fail(name, "weight", f"[units, {data.shape[-1]}] (K = data's last dimension)", weight.shape)
    if attrs.units is not None and attrs.units != weight.shape[0]:
        raise fail(name, "units", f"{weight.shape[0]} (the weight's first dimension)", attrs.units)
    return TensorType(data.shape[:-1] + (weight.shape[0],), out_dtype)


_dense_rel = data_weight_rel("nn.dense", dense_out_type)


def _dense_compute(args, attrs):
    x, w = args
    out_dtype = np.dtype(attrs.out_dtype or x.dtype.name)
    if x.dtype.kind in "iu":
        from ..quant.fixedpoint import wrap32
        from .kernels import exact_int_matmul
        return wrap32(exact_int_matmul(x, w.T)).astype(out_dtype)
    if attrs.get("accumulation") == "mlas" and x.dtype == np.float32 and out_dtype == np.float32:
        from .mlas_order import mlas_dense
        return mlas_dense(x, w)
    return np.matmul(x, w.T).astype(out_dtype)


register_op("nn.dense", ("data", "weight"), attrs=DenseAttrs, rel=_dense_rel, fusion=FusionKind.OUT_ELEMWISE_FUSABLE,
            compute=_dense_compute, doc="data[..., K] × weight[units, K]ᵀ; integer products accumulate in wrapping int32.")


@dataclass(frozen=True)
class MlasGemmAttrs(Attrs):
    # which MLAS kernel onnxruntime picks (Gemm transB; B prepacked from an initializer); the weight is [N, K]
    trans_b: bool = False
    packed_b: bool = False


def _mlas_gemm_rel(types, attrs):
    name = "nn.mlas_gemm"
    args = ("data", "weight", "bias")
    data, weight, bias = (tensor_arg(name, args, types, i) for i in range(3))
    for what, t in zip(args, (data, weight, bias)):
        if t.dtype != "float32":
            raise fail(name, what, "float32", t.dtype)
    if data.ndim != 2 or weight.ndim != 2 or weight.shape[1] != data.shape[1]:
        raise fail(name, "weight", f"[N, {data.shape[-1]}] for data [M, K]", weight.shape)
    out = (data.shape[0], weight.shape[0])
    if tuple(bias.shape) != out:
        raise fail(name, "bias", f"shape {list(out)} (the output's)", bias.shape)
    return TensorType(out, "float32")


def _mlas_gemm_compute(args, attrs):
    from .mlas_order import mlas_gemm
    x, w, c = args
    return mlas_gemm(x, w, c, bool(attrs.trans_b), bool(attrs.packed_b))


register_op("nn.mlas_gemm", ("data", "weight", "bias"), attrs=MlasGemmAttrs, rel=_mlas_gemm_rel,
            fusion=FusionKind.OPAQUE, compute=_mlas_gemm_compute,
            doc="onnxruntime's float Gemm: bias[M, N] first, then data[M, K] × weight[N, K]ᵀ added onto it in "
                "MLAS's order (ops/mlas_order.py, mlas_gemm).")


@dataclass(frozen=True)
class SoftmaxAttrs(Attrs):
    axis: int = -1


def _float_unary_rel(name):
    def rel(types, attrs):
        t = tensor_arg(name, ("data",), types, 0)
        if t.dtype not in ("float16", "float32", "float64"):
            raise fail(name, "data", "a float tensor", t.dtype)
        if hasattr(attrs, "axis"):
            _norm_axis(name, "axis", attrs.axis, t.ndim)
        return t
    return rel


def _softmax_compute(args, attrs):
    (x,) = args
    e = np.exp(x - np.max(x, axis=attrs.axis, keepdims=True))
    return (e / np.sum(e, axis=attrs.axis, keepdims=True)).astype(x.dtype)


def _log_softmax_compute(args, attrs):
    (x,) = args
    shifted = x - np.max(x, axis=attrs.axis, keepdims=True)
    return (shifted - np.log(np.sum(np.exp(shifted), axis=attrs.axis, keepdims=True))).astype(x.dtype)


register_op("nn.softmax", ("data",), attrs=SoftmaxAttrs, rel=_float_unary_rel("nn.softmax"),
            fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_softmax_compute, doc="exp(x − max) / Σ exp(x − max) along axis.")
register_op("nn.log_softmax", ("data",), attrs=SoftmaxAttrs, rel=_float_unary_rel("nn.log_softmax"),
            fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_log_softmax_compute, doc="x − max − log Σ exp(x − max) along axis.")


@dataclass(frozen=True)
class LeakyReluAttrs(Attrs):
    alpha: float = 0.01


register_op("nn.leaky_relu", ("data",), attrs=LeakyReluAttrs, rel=_float_unary_rel("nn.leaky_relu"),
            fusion=FusionKind.ELEMWISE,
            compute=lambda args, attrs: np.where(args[0] >= 0, args[0],
                                                 args[0] * args[0].dtype.type(attrs.alpha)).astype(args[0].dtype),
            doc="x if x ≥ 0 else alpha·x (float).")


def _batch_flatten_rel(types, attrs):
    t = tensor_arg("nn.batch_flatten", ("data",), types, 0)
    if t.ndim < 1:
        raise fail("nn.batch_flatten", "data", "a tensor of rank ≥ 1", t)
    rest = 1
    for d in t.shape[1:]:
        rest *= d
    return TensorType((t.shape[0], rest), t.dtype)


register_op("nn.batch_flatten", ("data",), rel=_batch_flatten_rel, fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: args[0].reshape(args[0].shape[0], -1),
            doc="[N, d1, d2, ...] → [N, d1·d2·...].")
