"""``relay.qnn.op``: quantized op builders with TVM's signatures."""
from __future__ import annotations

from ..op import make_call

__all__ = ["conv2d", "requantize"]


def conv2d(data, kernel, input_zero_point, kernel_zero_point, input_scale, kernel_scale, kernel_size=None,
           channels=None, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, data_layout="NCHW",
           kernel_layout="OIHW", out_layout="", out_dtype="int32"):
    return make_call("qnn.conv2d", (data, kernel, input_zero_point, kernel_zero_point, input_scale, kernel_scale),
                     dict(strides=strides, padding=padding, dilation=dilation, groups=groups, channels=channels,
                          kernel_size=kernel_size, data_layout=data_layout, kernel_layout=kernel_layout,
                          out_layout=out_layout, out_dtype=out_dtype))


def requantize(data, input_scale, input_zero_point, output_scale, output_zero_point, axis=-1, rounding="TFLITE",
               compute_dtype="", out_dtype="int8"):
    if rounding in (None, "None"):
        rounding = "TFLITE"
    return make_call("qnn.requantize", (data, input_scale, input_zero_point, output_scale, output_zero_point),
                     dict(axis=axis, rounding=rounding, compute_dtype=compute_dtype or "", out_dtype=out_dtype))
