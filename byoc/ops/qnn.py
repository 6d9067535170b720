"""Quantized ops with TFLite's reference-kernel semantics (quant-semantics.md).

Scales and zero points are operands (constants in practice), as in TVM's qnn dialect. Scale operands are
float32 or float64: the importer stores exact float64 products where TFLite multiplies scales in double, so the
integer multipliers derived here are exactly TFLite's. ``requant_params`` is the one place that turns scales
into (multiplier, shift) pairs; the interpreter, the CPU backend and the NPU compiler all call it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import IRError
from ..ir.attrs import Attrs
from ..ir.types import TensorType
from ..quant.fixedpoint import mbqm, quantize_multipliers, rha, wrap32
from .kernels import to_nhwc
from .nn import Conv2DAttrs, conv2d_compute, conv2d_out_type
from .registry import FusionKind, register_op
from .rel import INT_DTYPES, dtype_range, expect_dtype, expect_scalar_or_vector, fail, tensor_arg

ROUNDING_MODES = ("TFLITE", "TFLITE_FLOAT", "UPWARD", "TONEAREST")


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


def _kernel_out_axis(layout: str) -> int:
    return layout.index("O")


def _conv_compute(args, attrs):
    x, w, zp_in, zp_w = args[:4]
    xs = x.astype(np.int64) - np.asarray(zp_in, np.int64).reshape(())
    ws = w.astype(np.int64) - _zp_along(zp_w, w.ndim, _kernel_out_axis(attrs.kernel_layout))
    # Padding in qnn.conv2d itself pads with the input zero point, i.e. 0 after the subtraction.
    acc = conv2d_compute(xs, ws, attrs, integer=True, pad_value=0)
    return wrap32(acc).astype(attrs.out_dtype or "int32")


register_op("qnn.conv2d", ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale",
                           "kernel_scale"),
            attrs=Conv2DAttrs, rel=_conv_rel, fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_conv_compute,
            doc="Quantized conv: int32 sum of (x − zp_in)(w − zp_w); wraps like TFLite's accumulator.")


@dataclass(frozen=True)
class RequantizeAttrs(Attrs):
    axis: int = -1
    rounding: str = "TFLITE"
    compute_dtype: str = ""
    out_dtype: str = "int8"

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.rounding not in ROUNDING_MODES:
            raise IRError(f"qnn.requantize: unknown rounding {self.rounding!r}",
                          hint="one of " + ", ".join(ROUNDING_MODES))


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


def requant_params(input_scale, output_scale) -> tuple[np.ndarray, np.ndarray]:
    """(multiplier, shift) per channel = QuantizeMultiplier(double(s_in) / double(s_out)) (TFLite Prepare)."""
    real = np.asarray(input_scale, np.float64).reshape(-1) / np.float64(np.asarray(output_scale).reshape(-1)[0])
    return quantize_multipliers(real)


def requantize_values(x: np.ndarray, input_scale, input_zp, output_scale, output_zp, axis: int,
                      rounding: str, out_dtype: str) -> np.ndarray:
    xi = x.astype(np.int64) - int(np.asarray(input_zp).reshape(-1)[0])
    ax = axis if axis >= 0 else axis + x.ndim
    scale_in = np.asarray(input_scale, np.float64).reshape(-1)
    zp_out = int(np.asarray(output_zp).reshape(-1)[0])
    bshape = [1] * x.ndim
    if scale_in.size > 1:
        bshape[ax] = scale_in.size
    if rounding == "TFLITE":
        m, s = requant_params(scale_in, output_scale)
        y = mbqm(xi, m.reshape(bshape), s.reshape(bshape))
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
            doc="Rescale integers: TFLITE = double-rounding fixed point (SRDHM + RDBPOT); TFLITE_FLOAT = "
                "round(double(x)·double scale) as LiteRT's FULLY_CONNECTED; UPWARD/TONEAREST = TVM's.")
