"""What ``onnxruntime.quantization.quantize_dynamic`` emits: ``DynamicQuantizeLinear``, ``MatMulInteger``,
``ConvInteger``.

* ``DynamicQuantizeLinear`` ⇒ uint8 quantization with parameters computed from the tensor at run time, ONNX's
  definition in float32: ``lo = min(0, min x)``, ``hi = max(0, max x)``, ``scale = (hi − lo) / 255``,
  ``zp = saturate(round(−lo / scale))``, ``y = saturate(round(x / scale) + zp)`` (round half to even)
* ``MatMulInteger`` ⇒ the int32 product ``(a − a_zp)(b − b_zp)`` with numpy matmul shapes (``nn.batch_matmul``)
* ``ConvInteger`` ⇒ ``qnn.conv2d`` with the zero points and an int32 accumulator (the scales are unused)
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Constant, Span
from ...relay.op import make_call
from .model import node_label

__all__ = ["DYNAMIC_QUANT_CONVERTERS"]


def _call(op, args, attrs=None, node=None):
    return make_call(op, args, attrs, span=Span(node.name or node.output[0]) if node is not None else None)


def _f32(v):
    return Constant(np.asarray(v, np.float32))


def _dynamic_quantize_linear(imp, node, attrs):
    x = imp.expr(node.input[0])
    if imp.dtype_of(x) != "float32":
        raise ModelError(f"{node_label(node)}: DynamicQuantizeLinear takes float32, found {imp.dtype_of(x)}")
    lo = _call("minimum", (_call("min", (x,), {"axis": None, "keepdims": False}, node), _f32(0.0)), None, node)
    hi = _call("maximum", (_call("max", (x,), {"axis": None, "keepdims": False}, node), _f32(0.0)), None, node)
    scale = _call("divide", (_call("subtract", (hi, lo), None, node), _f32(255.0)), None, node)
    zpf = _call("clip", (_call("round", (_call("divide", (_call("negative", (lo,), None, node), scale), None,
                                                node),), None, node),), {"a_min": 0.0, "a_max": 255.0}, node)
    y = _call("add", (_call("round", (_call("divide", (x, scale), None, node),), None, node), zpf), None, node)
    y = _call("cast", (_call("clip", (y,), {"a_min": 0.0, "a_max": 255.0}, node),), {"dtype": "uint8"}, node)
    return [y, scale, _call("cast", (zpf,), {"dtype": "uint8"}, node)]


def _centred(imp, node, i_data, i_zp):
    e = _call("cast", (imp.expr(node.input[i_data]),), {"dtype": "int32"}, node)
    if len(node.input) > i_zp and node.input[i_zp]:
        zp = _call("cast", (imp.expr(node.input[i_zp]),), {"dtype": "int32"}, node)
        e = _call("subtract", (e, zp), None, node)
    return e


def _matmul_integer(imp, node, attrs):
    from .float_ops import batched_matmul
    for i in (0, 1):
        if imp.dtype_of(imp.expr(node.input[i])) not in ("int8", "uint8"):
            raise ModelError(f"{node_label(node)}: MatMulInteger inputs must be int8 or uint8")
    if len(node.input) > 3 and node.input[3]:
        bz = imp.values[node.input[3]]
        if not isinstance(bz, np.ndarray) or bz.size != 1:
            b_shape = imp.shape_of(imp.expr(node.input[1]))
            zs = imp.shape_of(imp.expr(node.input[3]))
            if tuple(zs) not in ((), (1,), (b_shape[-1],)):
                raise ModelError(f"{node_label(node)}: b_zero_point of shape {list(zs)} is not supported")
    return batched_matmul(imp, node, _centred(imp, node, 0, 2), _centred(imp, node, 1, 3))


def _conv_integer(imp, node, attrs):
    x, w = imp.expr(node.input[0]), imp.values[node.input[1]]
    if not isinstance(w, np.ndarray):
        raise ModelError(f"{node_label(node)}: ConvInteger needs a constant weight")
    xs = imp.shape_of(x)
    if len(xs) == 3 and w.ndim == 3:  # 1-D (audio nets): the 2-D op over a unit height
        from .conv_ops import lift_attrs_to_2d
        x = _call("reshape", (x,), {"newshape": (xs[0], xs[1], 1, xs[2])}, node)
        y = _conv_integer_2d(imp, node, lift_attrs_to_2d(attrs), x, w.reshape(w.shape[0], w.shape[1], 1, -1))
        ys = imp.shape_of(y)
        return _call("reshape", (y,), {"newshape": (ys[0], ys[1], ys[3])}, node)
    return _conv_integer_2d(imp, node, attrs, x, w)


def _conv_integer_2d(imp, node, attrs, x, w):
    from .float_ops import _spatial_attrs, conv_padding
    xs = imp.shape_of(x)
    if len(xs) != 4 or w.ndim != 4:
        raise ModelError(f"{node_label(node)}: only 1-D and 2-D ConvInteger is supported, input {list(xs)}, "
                         f"weight {w.shape}")
    xdt = imp.dtype_of(x)
    if xdt not in ("int8", "uint8") or w.dtype.name not in ("int8", "uint8"):
        raise ModelError(f"{node_label(node)}: ConvInteger inputs must be int8 or uint8")

    def zp(i):
        if len(node.input) > i and node.input[i]:
            v = imp.values[node.input[i]]
            if not isinstance(v, np.ndarray):  # x_zero_point from DynamicQuantizeLinear, known at run time
                e = _call("cast", (imp.expr(node.input[i]),), {"dtype": "int32"}, node)
                return _call("reshape", (e,), {"newshape": ()}, node)
            v = v.astype(np.int32)
            return Constant(v.reshape(()) if v.size == 1 else v.reshape(-1))
        return Constant(np.zeros((), np.int32))
    strides, dil = _spatial_attrs(node, attrs)
    pad = conv_padding(node, attrs, xs[2:], w.shape[2:], strides, dil)
    n_out = w.shape[0]
    attrs2d = dict(strides=strides, dilation=dil, groups=int(attrs.get("group", 1)), channels=n_out,
                   kernel_size=w.shape[2:], data_layout="NCHW", kernel_layout="OIHW", out_dtype="int32")
    zx, zw = zp(2), zp(3)
    if isinstance(zx, Constant):
        return _call("qnn.conv2d", (x, Constant(w), zx, zw, _f32(1.0), _f32(np.ones(n_out, np.float32))),
                     dict(attrs2d, padding=pad), node)
    # x_zero_point known only at run time: pad with it, convolve the raw values, then subtract
    # x_zp · Σ(w − w_zp) per output channel (every padded window is full, so the correction is exact)
    t, l, b_, r = pad
    xp = _call("nn.pad", (x, _call("cast", (zx,), {"dtype": xdt}, node)),
               {"pad_width": ((0, 0), (0, 0), (t, b_), (l, r))}, node) if any(pad) else x
    raw = _call("qnn.conv2d", (xp, Constant(w), Constant(np.zeros((), np.int32)), zw, _f32(1.0),
                               _f32(np.ones(n_out, np.float32))), dict(attrs2d, padding=(0, 0, 0, 0)), node)
    wz = zw.data.astype(np.int64).reshape(-1, 1, 1, 1) if zw.data.size > 1 else int(zw.data)
    k = (w.astype(np.int64) - wz).reshape(n_out, -1).sum(axis=1).astype(np.int32).reshape(1, n_out, 1, 1)
    return _call("subtract", (raw, _call("multiply", (zx, Constant(k)), None, node)), None, node)


DYNAMIC_QUANT_CONVERTERS = {"DynamicQuantizeLinear": _dynamic_quantize_linear, "MatMulInteger": _matmul_integer,
                            "ConvInteger": _conv_integer}
