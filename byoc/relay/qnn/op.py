"""``relay.qnn.op``: quantized op builders with TVM's signatures."""
from __future__ import annotations

import numpy as np

from ...ir.expr import Expr, Tuple, const
from ..op import make_call

__all__ = ["prelu", "batch_matmul", "conv2d", "requantize", "quantize", "dequantize", "dense", "conv2d_transpose", "add", "subtract", "mul",
           "concatenate", "softmax", "sigmoid", "tanh", "hardswish", "leaky_relu", "mean"]


def conv2d(data, kernel, input_zero_point, kernel_zero_point, input_scale, kernel_scale, kernel_size=None,
           channels=None, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, data_layout="NCHW",
           kernel_layout="OIHW", out_layout="", out_dtype="int32"):
    return make_call("qnn.conv2d", (data, kernel, _zp(input_zero_point), _zp(kernel_zero_point), _scale(input_scale),
                                    _scale(kernel_scale)),
                     dict(strides=strides, padding=padding, dilation=dilation, groups=groups, channels=channels,
                          kernel_size=kernel_size, data_layout=data_layout, kernel_layout=kernel_layout,
                          out_layout=out_layout, out_dtype=out_dtype))


def requantize(data, input_scale, input_zero_point, output_scale, output_zero_point, axis=-1, rounding="TFLITE",
               compute_dtype="", out_dtype="int8"):
    if rounding in (None, "None"):
        rounding = "TFLITE"
    return make_call("qnn.requantize", (data, _scale(input_scale), _zp(input_zero_point), _scale(output_scale),
                                        _zp(output_zero_point)),
                     dict(axis=axis, rounding=rounding, compute_dtype=compute_dtype or "", out_dtype=out_dtype))


def _e(value, dtype=None):
    """Scales and zero points may be given as Python numbers (float32 / int32 constants) or expressions."""
    if isinstance(value, Expr):
        return value
    return const(value, dtype)


def _scale(v):
    return _e(v, None if isinstance(v, Expr) or isinstance(v, np.ndarray) else "float32")


def _zp(v):
    return _e(v, None if isinstance(v, Expr) or isinstance(v, np.ndarray) else "int32")


def _tuple(values, conv) -> Expr:
    if isinstance(values, Expr):
        return values
    return Tuple(tuple(conv(v) for v in values))


def quantize(data, output_scale, output_zero_point, axis=-1, out_dtype="int8"):
    return make_call("qnn.quantize", (data, _scale(output_scale), _zp(output_zero_point)),
                     dict(axis=axis, out_dtype=out_dtype))


def dequantize(data, input_scale, input_zero_point, axis=-1, out_dtype="float32"):
    if out_dtype != "float32":
        from ...errors import IRError
        raise IRError(f"qnn.dequantize: out_dtype {out_dtype!r} is not supported", hint="float32")
    return make_call("qnn.dequantize", (data, _scale(input_scale), _zp(input_zero_point)), dict(axis=axis))


def dense(data, weight, input_zero_point, kernel_zero_point, input_scale, kernel_scale, units=None,
          out_dtype="int32"):
    return make_call("qnn.dense", (data, weight, _zp(input_zero_point), _zp(kernel_zero_point), _scale(input_scale),
                                   _scale(kernel_scale)), dict(units=units, out_dtype=out_dtype))


def conv2d_transpose(data, weight, input_zero_point, kernel_zero_point, input_scale, kernel_scale, kernel_size=None,
                     channels=None, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, data_layout="NCHW",
                     kernel_layout="IOHW", out_layout="", output_padding=(0, 0), out_dtype="int32"):
    return make_call("qnn.conv2d_transpose",
                     (data, weight, _zp(input_zero_point), _zp(kernel_zero_point), _scale(input_scale),
                      _scale(kernel_scale)),
                     dict(strides=strides, padding=padding, dilation=dilation, groups=groups, channels=channels,
                          kernel_size=kernel_size, data_layout=data_layout, kernel_layout=kernel_layout,
                          out_layout=out_layout, output_padding=output_padding, out_dtype=out_dtype))


def _binary(name):
    def f(lhs, rhs, lhs_scale, lhs_zero_point, rhs_scale, rhs_zero_point, output_scale, output_zero_point,
          lhs_axis=-1, rhs_axis=-1):
        return make_call(name, (lhs, rhs, _scale(lhs_scale), _zp(lhs_zero_point), _scale(rhs_scale),
                                _zp(rhs_zero_point), _scale(output_scale), _zp(output_zero_point)),
                         dict(lhs_axis=lhs_axis, rhs_axis=rhs_axis))
    f.__name__ = name.split(".")[1]
    return f


add = _binary("qnn.add")
subtract = _binary("qnn.subtract")
mul = _binary("qnn.mul")


def concatenate(data, input_scales, input_zero_points, output_scale, output_zero_point, axis):
    return make_call("qnn.concatenate", (_tuple(data, lambda d: d), _tuple(input_scales, _scale),
                                         _tuple(input_zero_points, _zp), _scale(output_scale),
                                         _zp(output_zero_point)), dict(axis=int(axis)))


def softmax(x, scale, zero_point, output_scale, output_zero_point, axis=-1, beta=1.0, out_dtype="",
            rounding="TFLITE"):
    """TVM's signature; ``beta`` and ``out_dtype`` (int16 output) extend it for TFLite's SOFTMAX, ``rounding="ONNX"``
    is onnxruntime's QLinearSoftmax."""
    return make_call("qnn.softmax", (x, _scale(scale), _zp(zero_point), _scale(output_scale),
                                     _zp(output_zero_point)),
                     dict(axis=axis, beta=float(beta), out_dtype=out_dtype, rounding=rounding))


def _lut_op(name):
    def f(x, scale, zero_point, output_scale, output_zero_point, rounding="TFLITE"):
        return make_call(name, (x, _scale(scale), _zp(zero_point), _scale(output_scale), _zp(output_zero_point)),
                         dict(rounding=rounding))
    f.__name__ = name.split(".")[1]
    return f


sigmoid = _lut_op("qnn.sigmoid")
tanh = _lut_op("qnn.tanh")


def hardswish(x, scale, zero_point, output_scale, output_zero_point):
    return make_call("qnn.hardswish", (x, _scale(scale), _zp(zero_point), _scale(output_scale),
                                       _zp(output_zero_point)))


def leaky_relu(x, alpha, input_scale, input_zero_point, output_scale, output_zero_point):
    return make_call("qnn.leaky_relu", (x, _scale(input_scale), _zp(input_zero_point), _scale(output_scale),
                                        _zp(output_zero_point)), dict(alpha=float(alpha)))


def mean(data, input_scale, input_zero_point, output_scale, output_zero_point, axis=None, keepdims=False,
         exclude=False):
    """Our extension: TFLite's MEAN with 1/N folded into the multiplier (TVM used cast → mean → requantize)."""
    if isinstance(axis, int):
        axis = (axis,)
    return make_call("qnn.mean", (data, _scale(input_scale), _zp(input_zero_point), _scale(output_scale),
                                  _zp(output_zero_point)),
                     dict(axis=None if axis is None else tuple(axis), keepdims=bool(keepdims), exclude=bool(exclude)))


def prelu(data, alpha, input_scale, input_zero_point, alpha_scale, alpha_zero_point, output_scale,
          output_zero_point):
    """TFLite PRELU on quantized tensors (alpha broadcasts against data)."""
    return make_call("qnn.prelu", (data, alpha, _scale(input_scale), _zp(input_zero_point), _scale(alpha_scale),
                                   _zp(alpha_zero_point), _scale(output_scale), _zp(output_zero_point)))


def batch_matmul(x, y, x_zero_point, y_zero_point, x_scale, y_scale, out_dtype="int32", transpose_a=False,
                 transpose_b=True):
    """TVM's ``qnn.batch_matmul`` (y is [B, N, K]); the transpose flags are our extension (TVM's are fixed)."""
    return make_call("qnn.batch_matmul", (x, y, _zp(x_zero_point), _zp(y_zero_point), _scale(x_scale),
                                          _scale(y_scale)),
                     dict(out_dtype=out_dtype, transpose_a=bool(transpose_a), transpose_b=bool(transpose_b)))


def log_softmax(x, scale, zero_point, output_scale, output_zero_point, axis=-1):
    """Our extension (TVM has no quantized log_softmax): TFLite's integer LOG_SOFTMAX, qnn.softmax's operands."""
    return make_call("qnn.log_softmax", (x, _scale(scale), _zp(zero_point), _scale(output_scale),
                                         _zp(output_zero_point)), dict(axis=int(axis)))


def squared_difference(lhs, rhs, lhs_scale, lhs_zero_point, rhs_scale, rhs_zero_point, output_scale,
                       output_zero_point):
    """Our extension: TFLite's int8 SQUARED_DIFFERENCE (qnn.add's operands)."""
    return make_call("qnn.squared_difference", (lhs, rhs, _scale(lhs_scale), _zp(lhs_zero_point), _scale(rhs_scale),
                                                _zp(rhs_zero_point), _scale(output_scale), _zp(output_zero_point)))


def rsqrt(x, scale, zero_point, output_scale, output_zero_point):
    """TVM's ``qnn.rsqrt`` (here with TFLite's fixed-point int8 arithmetic)."""
    return make_call("qnn.rsqrt", (x, _scale(scale), _zp(zero_point), _scale(output_scale), _zp(output_zero_point)))


def abs(x, input_scale, input_zero_point, output_scale, output_zero_point):  # noqa: A001 - Relay spelling
    """Our extension: TFLite's int8/int16 ABS (|q − zp_in|, rescaled when the scales differ)."""
    return make_call("qnn.abs", (x, _scale(input_scale), _zp(input_zero_point), _scale(output_scale),
                                 _zp(output_zero_point)))


def _compare(name):
    def f(lhs, rhs, lhs_scale, lhs_zero_point, rhs_scale, rhs_zero_point):
        return make_call("qnn." + name, (lhs, rhs, _scale(lhs_scale), _zp(lhs_zero_point), _scale(rhs_scale),
                                         _zp(rhs_zero_point)))
    f.__name__ = name
    f.__doc__ = f"Our extension: TFLite's int8/uint8 {name.upper()} (both operands rescaled, then compared)."
    return f


equal = _compare("equal")
not_equal = _compare("not_equal")
less = _compare("less")
less_equal = _compare("less_equal")
greater = _compare("greater")
greater_equal = _compare("greater_equal")
