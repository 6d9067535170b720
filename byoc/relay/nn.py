"""``relay.nn``: builders with TVM's signatures."""
from __future__ import annotations

from ..ir.expr import _as_expr
from .op import TupleWrapper, make_call

__all__ = ["conv2d", "pad", "bias_add", "relu", "batch_norm", "dense", "max_pool2d", "avg_pool2d",
           "global_avg_pool2d", "global_max_pool2d", "softmax", "log_softmax", "leaky_relu", "batch_flatten",
           "conv2d_transpose", "depth_to_space", "space_to_depth", "batch_matmul"]


def conv2d(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, channels=None,
           kernel_size=None, data_layout="NCHW", kernel_layout="OIHW", out_layout="", out_dtype="", *,
           accumulation=""):
    # accumulation: byoc's extension ("mlas": onnxruntime's float32 summation order, byoc/ops/mlas_order.py)
    return make_call("nn.conv2d", (data, weight), dict(
        strides=strides, padding=padding, dilation=dilation, groups=groups, channels=channels,
        kernel_size=kernel_size, data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
        out_dtype=out_dtype, accumulation=accumulation))


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


def dense(data, weight, units=None, out_dtype="", *, accumulation=""):
    return make_call("nn.dense", (data, weight), dict(units=units, out_dtype=out_dtype or "",
                                                      accumulation=accumulation))


def max_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0), layout="NCHW",
               out_layout="", ceil_mode=False):
    return make_call("nn.max_pool2d", (data,), dict(
        pool_size=pool_size, strides=strides, dilation=dilation, padding=padding, layout=layout,
        out_layout=out_layout, ceil_mode=ceil_mode))


def avg_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0), layout="NCHW",
               out_layout="", ceil_mode=False, count_include_pad=False):
    return make_call("nn.avg_pool2d", (data,), dict(
        pool_size=pool_size, strides=strides, dilation=dilation, padding=padding, layout=layout,
        out_layout=out_layout, ceil_mode=ceil_mode, count_include_pad=count_include_pad))


def global_avg_pool2d(data, layout="NCHW", out_layout=""):
    return make_call("nn.global_avg_pool2d", (data,), dict(layout=layout, out_layout=out_layout))


def global_max_pool2d(data, layout="NCHW", out_layout=""):
    return make_call("nn.global_max_pool2d", (data,), dict(layout=layout, out_layout=out_layout))


def softmax(data, axis=-1):
    return make_call("nn.softmax", (data,), dict(axis=axis))


def log_softmax(data, axis=-1):
    return make_call("nn.log_softmax", (data,), dict(axis=axis))


def leaky_relu(data, alpha=0.01):
    return make_call("nn.leaky_relu", (data,), dict(alpha=float(alpha)))


def batch_flatten(data):
    return make_call("nn.batch_flatten", (data,))


def conv2d_transpose(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, channels=None,
                     kernel_size=None, data_layout="NCHW", kernel_layout="IOHW", out_layout="",
                     output_padding=(0, 0), out_dtype="", *, accumulation=""):
    return make_call("nn.conv2d_transpose", (data, weight), dict(
        strides=strides, padding=padding, dilation=dilation, groups=groups, channels=channels,
        kernel_size=kernel_size, data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
        output_padding=output_padding, out_dtype=out_dtype or "", accumulation=accumulation))


def depth_to_space(data, block_size, layout="NCHW", mode="DCR"):
    return make_call("nn.depth_to_space", (data,), dict(block_size=int(block_size), layout=layout, mode=mode))


def space_to_depth(data, block_size, layout="NCHW"):
    return make_call("nn.space_to_depth", (data,), dict(block_size=int(block_size), layout=layout))


def batch_matmul(tensor_a, tensor_b, out_dtype="", transpose_a=False, transpose_b=True, *, accumulation=""):
    """TVM's ``nn.batch_matmul``: [B, M, K] × [B, N, K]ᵀ by default (transpose_b=True)."""
    return make_call("nn.batch_matmul", (tensor_a, tensor_b), dict(out_dtype=out_dtype or "",
                                                                  transpose_a=bool(transpose_a),
                                                                  transpose_b=bool(transpose_b),
                                                                  accumulation=accumulation))


def mirror_pad(data, pad_width, mode="SYMMETRIC"):
    """TVM's ``nn.mirror_pad``: mode "REFLECT" or "SYMMETRIC"."""
    return make_call("nn.mirror_pad", (data,), dict(pad_width=tuple(tuple(int(v) for v in p) for p in pad_width),
                                                    mode=mode))


__all__ += ["matmul"]


def matmul(tensor_a, tensor_b, units=None, out_dtype="", transpose_a=False, transpose_b=False):
    return make_call("nn.matmul", (tensor_a, tensor_b), dict(units=units, out_dtype=out_dtype or "",
                                                          transpose_a=bool(transpose_a),
                                                          transpose_b=bool(transpose_b)))


__all__ += ["upsampling"]


def upsampling(data, scale_h=1, scale_w=1, layout="NCHW", method="nearest_neighbor", align_corners=False):
    """TVM's ``nn.upsampling`` (an image.resize2d to round(H·scale_h) × round(W·scale_w))."""
    return make_call("nn.upsampling", (data,), dict(scale_h=float(scale_h), scale_w=float(scale_w), layout=layout,
                                                    method=method, align_corners=bool(align_corners)))
