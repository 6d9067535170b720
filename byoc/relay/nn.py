"""``relay.nn``: builders with TVM's signatures."""
from __future__ import annotations

from ..ir.expr import _as_expr
from .op import TupleWrapper, make_call

__all__ = ["conv2d", "pad", "bias_add", "relu", "batch_norm"]


def conv2d(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, channels=None,
           kernel_size=None, data_layout="NCHW", kernel_layout="OIHW", out_layout="", out_dtype=""):
    return make_call("nn.conv2d", (data, weight), dict(
        strides=strides, padding=padding, dilation=dilation, groups=groups, channels=channels,
        kernel_size=kernel_size, data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
        out_dtype=out_dtype))


def pad(data, pad_width, pad_value=0, pad_mode="constant"):
    return make_call("nn.pad", (data, _as_expr(pad_value, data)), dict(pad_width=pad_width, pad_mode=pad_mode))


def bias_add(data, bias, axis=1):
    return make_call("nn.bias_add", (data, bias), dict(axis=axis))


def relu(data):
    return make_call("nn.relu", (data,))


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, center=True, scale=True):
    call = make_call("nn.batch_norm", (data, gamma, beta, moving_mean, moving_var),
                     dict(axis=axis, epsilon=epsilon, center=center, scale=scale))
    return TupleWrapper(call, 3)
