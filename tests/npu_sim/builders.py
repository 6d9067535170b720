"""Hand-built NPU partitions: composites wrapped in a global function with Compiler="npu" (no partitioner)."""
from __future__ import annotations

import numpy as np

from byoc import relay

__all__ = ["partition", "conv_composite", "dense_composite", "requant_scales", "rng_scale"]


def partition(params: list, body, name: str = "tvmgen_default_npu_main_0") -> relay.Function:
    fn = relay.Function(params, body)
    for k, v in (("Compiler", "npu"), ("global_symbol", name), ("Primitive", 1), ("Inline", 1)):
        fn = fn.with_attr(k, v)
    return fn


def composite(name: str, params: list, body) -> relay.Function:
    return relay.Function(params, body).with_attr("Composite", name).with_attr("PartitionedFromPattern", name)


def rng_scale(rng, n=None, lo=-9.0, hi=-5.0):
    v = 2.0 ** rng.uniform(lo, hi, size=n)
    return np.float32(v) if n is None else v.astype(np.float32)


def conv_composite(x_shape, w_hwio_or_ohwi, *, depthwise=False, strides=(1, 1), dilation=(1, 1),
                   padding=(0, 0, 0, 0), pad_op=None, zp_in=0, zp_w=0, s_in=0.05, s_w=None, s_out=0.1, zp_out=0,
                   bias=None, clip=None, dtype="int8", rounding="TFLITE"):
    """[nn.pad →] qnn.conv2d → nn.bias_add → qnn.requantize [→ clip] as npu.qnn_conv2d / depthwise."""
    w = np.asarray(w_hwio_or_ohwi)
    cin = x_shape[3]
    if depthwise:
        cout = w.shape[3]
        layout, groups = "HWIO", cin
    else:
        cout = w.shape[0]
        layout, groups = "OHWI", 1
    s_w = np.full(cout, 0.01, np.float32) if s_w is None else np.asarray(s_w, np.float32)
    bias = np.zeros(cout, np.int32) if bias is None else np.asarray(bias, np.int32)
    x = relay.var("x", shape=x_shape, dtype=dtype)
    data = x
    if pad_op is not None:
        data = relay.nn.pad(x, ((0, 0), (pad_op[0], pad_op[2]), (pad_op[1], pad_op[3]), (0, 0)),
                            relay.const(zp_in, dtype))
    kh, kw = (w.shape[0], w.shape[1]) if depthwise else (w.shape[1], w.shape[2])
    conv = relay.qnn.op.conv2d(data, relay.const(w), relay.const(zp_in, "int32"), relay.const(zp_w, "int32"),
                               relay.const(np.float32(s_in)), relay.const(s_w), kernel_size=(kh, kw),
                               channels=cout, strides=strides, padding=padding, dilation=dilation, groups=groups,
                               data_layout="NHWC", kernel_layout=layout, out_dtype="int32")
    y = relay.nn.bias_add(conv, relay.const(bias), axis=3)
    rq_scale = (np.float64(np.float32(s_in)) * s_w.astype(np.float64))
    y = relay.qnn.op.requantize(y, relay.const(rq_scale), relay.const(0, "int32"), relay.const(np.float32(s_out)),
                                relay.const(zp_out, "int32"), axis=3, rounding=rounding, out_dtype=dtype)
    if clip is not None:
        y = relay.clip(y, clip[0], clip[1])
    name = "npu.qnn_depthwise_conv2d" if depthwise else "npu.qnn_conv2d"
    p = relay.var("p0", shape=x_shape, dtype=dtype)
    comp = composite(name, [x], y)
    return p, comp(p)


def dense_composite(x_shape, w, *, zp_in=0, zp_w=0, s_in=0.05, s_w=0.01, s_out=0.1, zp_out=0, bias=None,
                    clip=None, dtype="int8", rounding="TFLITE"):
    units = w.shape[0]
    s_w = np.broadcast_to(np.asarray(s_w, np.float32), (units,)).copy()
    bias = np.zeros(units, np.int32) if bias is None else np.asarray(bias, np.int32)
    x = relay.var("x", shape=x_shape, dtype=dtype)
    d = relay.qnn.op.dense(x, relay.const(w), relay.const(zp_in, "int32"), relay.const(zp_w, "int32"),
                           relay.const(np.float32(s_in)), relay.const(s_w), units=units, out_dtype="int32")
    y = relay.nn.bias_add(d, relay.const(bias), axis=1)
    rq_scale = np.float64(np.float32(s_in)) * s_w.astype(np.float64)
    y = relay.qnn.op.requantize(y, relay.const(rq_scale), relay.const(0, "int32"), relay.const(np.float32(s_out)),
                                relay.const(zp_out, "int32"), axis=1, rounding=rounding, out_dtype=dtype)
    if clip is not None:
        y = relay.clip(y, clip[0], clip[1])
    p = relay.var("p0", shape=x_shape, dtype=dtype)
    return p, composite("npu.qnn_dense", [x], y)(p)


def requant_scales(rng, cout):
    return rng_scale(rng, cout, -10, -6)
