"""Quantized ops with TFLite's reference-kernel semantics (quant-semantics.md).

Scales and zero points are operands (constants in practice), as in TVM's qnn dialect. Scale operands are
float32 or float64: the importer stores exact float64 products where TFLite multiplies scales in double, so the
integer multipliers derived here are exactly TFLite's. ``requant_params`` (byoc.quant.params) is the one place that turns scales
into (multiplier, shift) pairs; the interpreter, the CPU backend and the NPU compiler all call it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import IRError
from ..ir.attrs import Attrs
from ..ir.types import TensorType
from ..quant.fixedpoint import mbqm, mbqm64, rha, wrap32
from ..quant.params import requant64_params, requant_params
from .conv_transpose import Conv2DTransposeAttrs, conv2d_transpose_compute, conv2d_transpose_out_type
from .kernels import exact_int_matmul, kernel_to_hwio
from .nn import Conv2DAttrs, DenseAttrs, conv2d_compute, conv2d_out_type, dense_out_type
from .registry import FusionKind, register_op
from .rel import INT_DTYPES, dtype_range, expect_dtype, expect_scalar_or_vector, fail, tensor_arg

ROUNDING_MODES = ("TFLITE", "TFLITE_FLOAT", "UPWARD", "TONEAREST", "ONNX")

# The integer kernel a TVM-form chain stands for (``kernel`` attribute of its final qnn.quantize /
# qnn.requantize): ``qnn.dequantize → f → qnn.quantize(kernel=K)`` and ``cast → mean → qnn.requantize(kernel=
# "qnn.mean")`` are exactly K when intact (byoc/transform/canonicalize_qnn.py turns them back into K before any
# executor runs); a chain broken apart computes its float ops.
QUANTIZE_KERNELS = ("qnn.sigmoid", "qnn.tanh", "qnn.softmax", "qnn.hardswish", "qnn.leaky_relu")
REQUANTIZE_KERNELS = ("qnn.mean",)


def _check_kernel(op: str, kernel: str, allowed: tuple[str, ...]) -> None:
    if kernel and kernel not in allowed:
        raise IRError(f"{op}: unknown kernel {kernel!r}",
                      hint="empty (plain " + op + ") or the integer op the chain stands for: " + ", ".join(allowed))


def _conv_rel(types, attrs):
    names = ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale")
    data = tensor_arg("qnn.conv2d", names, types, 0)
    weight = tensor_arg("qnn.conv2d", names, types, 1)
    expect_dtype("qnn.conv2d", "data", data, ("int8", "uint8", "int16"))
    expect_dtype("qnn.conv2d", "weight", weight, ("int8", "uint8"))
    out = conv2d_out_type("qnn.conv2d", data, weight, attrs, attrs.out_dtype or "int32")
    for i in (2, 4):
        expect_scalar_or_vector("qnn.conv2d", names[i], types[i], 1)
    return out


def _zp_along(zp: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    zp = np.asarray(zp).astype(np.int64)
    if zp.ndim == 0 or zp.size == 1:
        return zp.reshape(())
    shape = [1] * ndim
    shape[axis] = zp.size
    return zp.reshape(shape)


def _conv_compute(args, attrs):
    x, w, zp_in, zp_w = args[:4]
    xs = x.astype(np.int64) - np.asarray(zp_in, np.int64).reshape(())
    # Grouped HWIO first, so per-channel zero points line up with the output channels in any kernel form.
    w = kernel_to_hwio(w, attrs.kernel_layout, attrs.groups, x.shape[attrs.data_layout.index("C")])
    attrs = replace(attrs, kernel_layout="HWIO")
    ws = w.astype(np.int64) - _zp_along(zp_w, w.ndim, 3)
    # Padding in qnn.conv2d itself pads with the input zero point, i.e. 0 after the subtraction.
    acc = conv2d_compute(xs, ws, attrs, integer=True, pad_value=0)
    return _accumulator(acc, attrs.out_dtype)


def _accumulator(acc: np.ndarray, out_dtype: str) -> np.ndarray:
    """The exact sum as LiteRT keeps it: an int64 accumulator (16x8 kernels) or a wrapping int32 one."""
    if out_dtype == "int64":
        return acc.astype(np.int64)
    return wrap32(acc).astype(out_dtype or "int32")


register_op("qnn.conv2d", ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale",
                           "kernel_scale"),
            attrs=Conv2DAttrs, rel=_conv_rel, fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_conv_compute,
            doc="Quantized conv: int32 sum of (x − zp_in)(w − zp_w); wraps like TFLite's accumulator (out_dtype "
                "int64: the exact sum, as LiteRT's 16x8 kernels keep it).")


@dataclass(frozen=True)
class RequantizeAttrs(Attrs):
    axis: int = -1
    rounding: str = "TFLITE"
    compute_dtype: str = ""
    out_dtype: str = "int8"
    kernel: str = ""  # "qnn.mean": the end of TVM's MEAN form cast → mean → requantize (see REQUANTIZE_KERNELS)

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.rounding not in ROUNDING_MODES:
            raise IRError(f"qnn.requantize: unknown rounding {self.rounding!r}",
                          hint="one of " + ", ".join(ROUNDING_MODES))
        _check_kernel("qnn.requantize", self.kernel, REQUANTIZE_KERNELS)


def _requantize_rel(types, attrs):
    names = ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point")
    data = tensor_arg("qnn.requantize", names, types, 0)
    expect_dtype("qnn.requantize", "data", data, INT_DTYPES)
    axis = attrs.axis if attrs.axis >= 0 else attrs.axis + data.ndim
    channels = data.shape[axis] if data.ndim and 0 <= axis < data.ndim else 1
    expect_scalar_or_vector("qnn.requantize", "input_scale", types[1], channels)
    for i in (2, 3, 4):
        expect_scalar_or_vector("qnn.requantize", names[i], types[i], 1)
    expect_dtype("qnn.requantize", "out_dtype", TensorType((), attrs.out_dtype), INT_DTYPES)
    return TensorType(data.shape, attrs.out_dtype)


def requantize_values(x: np.ndarray, input_scale, input_zp, output_scale, output_zp, axis: int,
                      rounding: str, out_dtype: str) -> np.ndarray:
    xi = x.astype(np.int64) - int(np.asarray(input_zp).reshape(-1)[0])
    ax = axis if axis >= 0 else axis + x.ndim
    scale_in = np.asarray(input_scale, np.float64).reshape(-1)
    zp_out = int(np.asarray(output_zp).reshape(-1)[0])
    bshape = [1] * x.ndim
    if scale_in.size > 1:
        bshape[ax] = scale_in.size
    if rounding == "TFLITE" and x.dtype == np.int64:
        # LiteRT's int64 overload of MultiplyByQuantizedMultiplier (16x8 CONV / DEPTHWISE accumulators).
        m16, total = requant64_params(scale_in, output_scale)
        y = mbqm64(xi, m16.reshape(bshape), total.reshape(bshape))
    elif rounding == "TFLITE":
        m, s = requant_params(scale_in, output_scale)
        y = mbqm(xi, m.reshape(bshape), s.reshape(bshape))
    elif rounding == "ONNX":
        # onnxruntime (MlasRequantizeOutput): float32(x) · float32(s_in / s_out), round half to even.
        from ..quant.onnxrt import f32, rne
        real = f32(f32(scale_in) / f32(np.asarray(output_scale).reshape(-1)[0]))
        y = rne(f32(xi.astype(np.float32) * real.reshape(bshape)))
    elif rounding == "TFLITE_FLOAT":
        real = scale_in / np.float64(np.asarray(output_scale).reshape(-1)[0])
        y = rha(xi.astype(np.float64) * real.reshape(bshape)).astype(np.int64)
    else:
        m, s = requant_params(scale_in, output_scale)
        m = m.reshape(bshape)
        s = s.reshape(bshape)
        total = 31 - s
        prod = xi * m
        rnd = np.int64(1) << (total - 1)
        if rounding == "TONEAREST":
            rnd = np.where(prod < 0, rnd - 1, rnd)
        y = (prod + rnd) >> total
    lo, hi = dtype_range(out_dtype)
    return np.clip(y + zp_out, lo, hi).astype(out_dtype)


def _requantize_compute(args, attrs):
    x, s_in, zp_in, s_out, zp_out = args
    return requantize_values(x, s_in, zp_in, s_out, zp_out, attrs.axis, attrs.rounding, attrs.out_dtype)


register_op("qnn.requantize", ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point"),
            attrs=RequantizeAttrs, rel=_requantize_rel, fusion=FusionKind.ELEMWISE, compute=_requantize_compute,
            doc="Rescale integers: TFLITE = double-rounding fixed point (SRDHM + RDBPOT), or for int64 data LiteRT's "
                "int64 MBQM (Q15 multiplier, one rounding); TFLITE_FLOAT = "
                "round(double(x)·double scale) as LiteRT's FULLY_CONNECTED; UPWARD/TONEAREST = TVM's.")


# ------------------------------------------------------------------------------------------------- qnn.dense
def _dense_rel(types, attrs):
    names = ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale")
    data = tensor_arg("qnn.dense", names, types, 0)
    weight = tensor_arg("qnn.dense", names, types, 1)
    expect_dtype("qnn.dense", "data", data, ("int8", "uint8", "int16"))
    expect_dtype("qnn.dense", "weight", weight, ("int8", "uint8"))
    out = dense_out_type("qnn.dense", data, weight, attrs, attrs.out_dtype or "int32")
    units = weight.shape[0]
    expect_scalar_or_vector("qnn.dense", "input_zero_point", types[2], 1)
    expect_scalar_or_vector("qnn.dense", "kernel_zero_point", types[3], units)
    expect_scalar_or_vector("qnn.dense", "input_scale", types[4], 1)
    expect_scalar_or_vector("qnn.dense", "kernel_scale", types[5], units)
    return out


def _dense_compute(args, attrs):
    x, w, zp_in, zp_w = args[:4]
    xs = x.astype(np.int64) - np.asarray(zp_in, np.int64).reshape(-1)[0]
    ws = w.astype(np.int64) - _zp_along(zp_w, 2, 0)
    return _accumulator(exact_int_matmul(xs, ws.T), attrs.out_dtype)


register_op("qnn.dense", ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale"),
            attrs=DenseAttrs, rel=_dense_rel, fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_dense_compute,
            doc="Quantized dense: wrapping int32 Σ (x − zp_in)(w[n] − zp_w) over K; weight is [units, K].")


# -------------------------------------------------------------------------------------- qnn.conv2d_transpose
def _conv_transpose_rel(types, attrs):
    names = ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale")
    data = tensor_arg("qnn.conv2d_transpose", names, types, 0)
    weight = tensor_arg("qnn.conv2d_transpose", names, types, 1)
    expect_dtype("qnn.conv2d_transpose", "data", data, ("int8", "uint8", "int16"))
    expect_dtype("qnn.conv2d_transpose", "weight", weight, ("int8", "uint8"))
    out = conv2d_transpose_out_type("qnn.conv2d_transpose", data, weight, attrs, attrs.out_dtype or "int32")
    channels = out.shape[3 if (attrs.out_layout or attrs.data_layout) == "NHWC" else 1]
    expect_scalar_or_vector("qnn.conv2d_transpose", "input_zero_point", types[2], 1)
    expect_scalar_or_vector("qnn.conv2d_transpose", "input_scale", types[4], 1)
    expect_scalar_or_vector("qnn.conv2d_transpose", "kernel_zero_point", types[3], channels)
    expect_scalar_or_vector("qnn.conv2d_transpose", "kernel_scale", types[5], channels)
    return out


def _conv_transpose_compute(args, attrs):
    x, w, zp_in, zp_w = args[:4]
    xs = x.astype(np.int64) - np.asarray(zp_in, np.int64).reshape(-1)[0]
    ws = w.astype(np.int64) - _zp_along(zp_w, w.ndim, attrs.kernel_layout.index("O"))
    acc = np.rint(conv2d_transpose_compute(xs, ws, attrs)).astype(np.int64)
    if attrs.out_dtype == "int64":   # 16x8: LiteRT's exact int64 accumulator
        return acc
    return wrap32(acc).astype(attrs.out_dtype or "int32")


register_op("qnn.conv2d_transpose", ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale",
                                     "kernel_scale"),
            attrs=Conv2DTransposeAttrs, rel=_conv_transpose_rel, fusion=FusionKind.OUT_ELEMWISE_FUSABLE,
            compute=_conv_transpose_compute,
            doc="Quantized transposed conv (TFLite TRANSPOSE_CONV accumulator): wrapping int32 scatter-sum of "
                "(x − zp_in)(w − zp_w).")


# ------------------------------------------------------------------------------------ qnn.quantize / dequantize
@dataclass(frozen=True)
class QuantizeAttrs(Attrs):
    axis: int = -1
    out_dtype: str = "int8"
    rounding: str = "TFLITE"  # "ONNX": QuantizeLinear, round half to even (byoc.quant.onnxrt)
    # The end of a TVM-form chain dequantize → f → quantize: the integer kernel it stands for (QUANTIZE_KERNELS)
    # and that kernel's own rounding (qnn.sigmoid/tanh: TFLITE = LiteRT's LUT, TFLM = TFLite Micro's fixed point).
    kernel: str = ""
    kernel_rounding: str = ""

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.rounding not in ("TFLITE", "ONNX"):
            raise IRError(f"qnn.quantize: unknown rounding {self.rounding!r}", hint="'TFLITE' or 'ONNX'")
        _check_kernel("qnn.quantize", self.kernel, QUANTIZE_KERNELS)
        if self.kernel_rounding and not self.kernel:
            raise IRError("qnn.quantize: kernel_rounding without a kernel", hint="set kernel too, or neither")


@dataclass(frozen=True)
class DequantizeAttrs(Attrs):
    axis: int = -1


def _channels(name: str, t: TensorType, axis: int) -> int:
    if t.ndim == 0:
        return 1
    a = axis + t.ndim if axis < 0 else axis
    if not 0 <= a < t.ndim:
        raise fail(name, "axis", f"an axis of a rank-{t.ndim} tensor", axis)
    return t.shape[a]


def _along(v, ndim: int, axis: int, dtype) -> np.ndarray:
    """A scalar or per-channel vector, shaped to broadcast along ``axis`` of a rank-``ndim`` tensor."""
    v = np.asarray(v, dtype=dtype).reshape(-1)
    if v.size == 1 or ndim == 0:
        return v.reshape(())
    shape = [1] * ndim
    shape[axis + ndim if axis < 0 else axis] = v.size
    return v.reshape(shape)


def _quantize_rel(types, attrs):
    names = ("data", "output_scale", "output_zero_point")
    data = tensor_arg("qnn.quantize", names, types, 0)
    expect_dtype("qnn.quantize", "data", data, ("float16", "float32", "float64"))
    c = _channels("qnn.quantize", data, attrs.axis)
    expect_scalar_or_vector("qnn.quantize", "output_scale", types[1], c)
    expect_scalar_or_vector("qnn.quantize", "output_zero_point", types[2], c)
    expect_dtype("qnn.quantize", "out_dtype", TensorType((), attrs.out_dtype), ("int8", "uint8", "int16", "uint16", "int32"))
    return TensorType(data.shape, attrs.out_dtype)


def _quantize_compute(args, attrs):
    x, scale, zp = args
    if attrs.rounding == "ONNX":
        from ..quant.onnxrt import quantize_linear
        ax = attrs.axis + x.ndim if attrs.axis < 0 else attrs.axis
        return quantize_linear(x, np.asarray(scale).reshape(-1), np.asarray(zp).reshape(-1), attrs.out_dtype,
                               ax if np.asarray(scale).size > 1 else None)
    s = _along(scale, x.ndim, attrs.axis, np.float32)
    with np.errstate(all="ignore"):
        v = x.astype(np.float32) / s  # TFLite AffineQuantize: a float32 division, not a reciprocal multiply
    r = np.clip(np.nan_to_num(rha(v), nan=0.0), -(2.0**31), 2.0**31 - 1).astype(np.int64)
    lo, hi = dtype_range(attrs.out_dtype)
    return np.clip(r + _along(zp, x.ndim, attrs.axis, np.int64), lo, hi).astype(attrs.out_dtype)


register_op("qnn.quantize", ("data", "output_scale", "output_zero_point"), attrs=QuantizeAttrs, rel=_quantize_rel,
            fusion=FusionKind.ELEMWISE, compute=_quantize_compute,
            doc="q = clamp(round_half_away(float32(x) / float32(s)) + zp) (TFLite QUANTIZE, per channel on axis).")


def _dequantize_rel(types, attrs):
    names = ("data", "input_scale", "input_zero_point")
    data = tensor_arg("qnn.dequantize", names, types, 0)
    expect_dtype("qnn.dequantize", "data", data, ("int8", "uint8", "int16", "uint16", "int32"))
    c = _channels("qnn.dequantize", data, attrs.axis)
    expect_scalar_or_vector("qnn.dequantize", "input_scale", types[1], c)
    expect_scalar_or_vector("qnn.dequantize", "input_zero_point", types[2], c)
    return TensorType(data.shape, "float32")


def _dequantize_compute(args, attrs):
    q, scale, zp = args
    s = _along(scale, q.ndim, attrs.axis, np.float64)
    v = (q.astype(np.int64) - _along(zp, q.ndim, attrs.axis, np.int64)).astype(np.float64)
    return (s * v).astype(np.float32)


register_op("qnn.dequantize", ("data", "input_scale", "input_zero_point"), attrs=DequantizeAttrs,
            rel=_dequantize_rel, fusion=FusionKind.ELEMWISE, compute=_dequantize_compute,
            doc="f = float32(double(s)·(q − zp)) (TFLite DEQUANTIZE, per channel on axis).")
