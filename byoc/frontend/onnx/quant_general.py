"""QuantizeLinear / DequantizeLinear beyond the folding path: scale or zero point fed at run time, blocked
quantization (``block_size``), the ``output_dtype`` attribute, float16 scales. These run as plain float/integer
ops with ONNX's definition (``y = saturate(round_half_even(x / scale) + zp)``, ``x = (q − zp) · scale``, both in
float32) and are never folded into integer kernels: their parameters are not known at import time."""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Constant, Expr, Span
from ...relay.op import make_call
from .model import FOUR_BIT, ONNX_DTYPES, node_label, onnx_type_name

__all__ = ["general_dequantize", "general_quantize", "needs_general_path"]

_INT_TYPES = ("int8", "uint8", "int16", "uint16", "int32")


def _call(op, args, attrs=None, node=None):
    return make_call(op, args, attrs, span=Span(node.name or node.output[0]) if node is not None else None)


def needs_general_path(imp, node, attrs) -> bool:
    ins = list(node.input)
    fed = any(i and not isinstance(imp.values.get(i), np.ndarray) for i in ins[1:3])
    scale = imp.values.get(ins[1]) if len(ins) > 1 else None
    four_bit = node.op_type == "QuantizeLinear" and imp.four_bit_params(node) is not None
    return fed or four_bit or bool(attrs.get("block_size", 0)) or bool(attrs.get("output_dtype", 0)) or \
        (isinstance(scale, np.ndarray) and scale.dtype != np.float32)


def _param(imp, node, name, x_shape, axis, block, what, dtype=None):
    """A scale / zero-point operand broadcastable against x (constants expanded for blocks)."""
    rank = len(x_shape)
    v = imp.values[name]
    if isinstance(v, np.ndarray):
        arr = v if dtype is None else v.astype(dtype)
        if arr.size == 1 and not block:
            return Constant(np.ascontiguousarray(arr.reshape(())))
        if block:
            if arr.ndim != rank or axis < 0:
                raise ModelError(f"{node_label(node)}: blocked {what} must have the input's rank {rank}, found "
                                 f"{arr.shape}")
            arr = np.repeat(arr, block, axis=axis)
            sl = tuple(slice(0, d) for d in x_shape)
            arr = arr[sl]
            if arr.shape != tuple(x_shape):
                raise ModelError(f"{node_label(node)}: blocked {what} {v.shape} does not cover the input "
                                 f"{list(x_shape)} with block_size {block}")
            return Constant(np.ascontiguousarray(arr))
        if arr.ndim != 1 or axis < 0 or arr.size != x_shape[axis]:
            raise ModelError(f"{node_label(node)}: {what} of shape {arr.shape} must be a scalar or a vector of "
                             f"{x_shape[axis]} (axis {axis})")
        shape = [1] * rank
        shape[axis] = arr.size
        return Constant(np.ascontiguousarray(arr.reshape(shape)))
    e = imp.expr(name)
    shp = imp.shape_of(e)
    if dtype is not None and imp.dtype_of(e) != dtype:
        e = _call("cast", (e,), {"dtype": dtype}, node)
    if block:  # repeat each block's parameter block_size times along the axis, then cut to the input's size
        if len(shp) != rank or axis < 0:
            raise ModelError(f"{node_label(node)}: blocked {what} must have the input's rank {rank}, found {list(shp)}")
        nb = shp[axis]
        e = _call("expand_dims", (e,), {"axis": axis + 1, "num_newaxis": 1}, node)
        e = _call("broadcast_to", (e,), {"shape": tuple(shp[:axis + 1]) + (block,) + tuple(shp[axis + 1:])}, node)
        e = _call("reshape", (e,), {"newshape": tuple(shp[:axis]) + (nb * block,) + tuple(shp[axis + 1:])}, node)
        if nb * block < x_shape[axis] or tuple(shp[:axis]) + tuple(shp[axis + 1:]) != \
                tuple(x_shape[:axis]) + tuple(x_shape[axis + 1:]):
            raise ModelError(f"{node_label(node)}: blocked {what} {list(shp)} does not cover the input "
                             f"{list(x_shape)} with block_size {block}")
        return _call("strided_slice", (e,), {"begin": (0,) * rank, "end": tuple(x_shape), "strides": (1,) * rank},
                     node)
    n = int(np.prod(shp, dtype=np.int64))
    if n == 1:
        return _call("reshape", (e,), {"newshape": ()}, node)
    if len(shp) != 1 or axis < 0 or shp[0] != x_shape[axis]:
        raise ModelError(f"{node_label(node)}: {what} of shape {list(shp)} must be a scalar or a vector of "
                         f"{x_shape[axis]} (axis {axis})")
    shape = [1] * rank
    shape[axis] = shp[0]
    return _call("reshape", (e,), {"newshape": tuple(shape)}, node)


def _axis(node, attrs, rank) -> int:
    """The normalised axis; −1 when out of range (only an error for per-axis parameters, checked there)."""
    a = int(attrs.get("axis", 1))
    a = a + rank if a < 0 else a
    return a if 0 <= a < rank else -1


def _scale_dtype(imp, node) -> str:
    v = imp.values[node.input[1]]
    dt = v.dtype.name if isinstance(v, np.ndarray) else imp.dtype_of(imp.expr(node.input[1]))
    if dt not in ("float32", "float16"):
        raise ModelError(f"{node_label(node)}: scale type {dt} is not supported", hint="float32 or float16")
    return dt


def general_dequantize(imp, node, attrs) -> Expr:
    x = imp.expr(node.input[0])
    xs, xdt = imp.shape_of(x), imp.dtype_of(x)
    if xdt not in _INT_TYPES:
        raise ModelError(f"{node_label(node)}: cannot dequantize {xdt}", hint=", ".join(_INT_TYPES))
    axis, block = _axis(node, attrs, len(xs)), int(attrs.get("block_size", 0))
    sdt = _scale_dtype(imp, node)
    scale = _param(imp, node, node.input[1], xs, axis, block, "scale", "float32")
    v = _call("cast", (x,), {"dtype": "int32" if xdt != "int32" else "int32"}, node)
    if len(node.input) > 2 and node.input[2]:
        zp = _param(imp, node, node.input[2], xs, axis, block, "zero point", "int32")
        v = _call("subtract", (v, zp), None, node)
    out = _call("multiply", (_call("cast", (v,), {"dtype": "float32"}, node), scale), None, node)
    return out if sdt == "float32" else _call("cast", (out,), {"dtype": sdt}, node)


def general_quantize(imp, node, attrs) -> Expr:
    x = imp.expr(node.input[0])
    xs, xdt = imp.shape_of(x), imp.dtype_of(x)
    if xdt not in ("float32", "float16"):
        raise ModelError(f"{node_label(node)}: can only quantize float32/float16 tensors, found {xdt}")
    axis, block = _axis(node, attrs, len(xs)), int(attrs.get("block_size", 0))
    has_zp = len(node.input) > 2 and node.input[2]
    bounds = None  # a 4-bit result: held as int8 / uint8, saturated to the 4-bit range
    if has_zp:
        zv = imp.values[node.input[2]]
        dtype = zv.dtype.name if isinstance(zv, np.ndarray) else imp.dtype_of(imp.expr(node.input[2]))
        if node.input[2] in imp.four_bit:
            bounds = FOUR_BIT[{"int4": 22, "uint4": 21}[imp.four_bit[node.input[2]]]][2]
    elif attrs.get("output_dtype", 0) and int(attrs["output_dtype"]) in FOUR_BIT:
        _, dtype, bounds = FOUR_BIT[int(attrs["output_dtype"])]
    elif attrs.get("output_dtype", 0):
        code = int(attrs["output_dtype"])
        dtype = ONNX_DTYPES.get(code)
        if dtype is None:
            raise ModelError(f"{node_label(node)}: output_dtype {onnx_type_name(code)} is not supported",
                             hint=", ".join(_INT_TYPES[:4]))
    else:
        dtype = "uint8"
    if dtype not in _INT_TYPES[:4]:
        raise ModelError(f"{node_label(node)}: quantizing to {dtype} is not supported", hint=", ".join(_INT_TYPES[:4]))
    if has_zp and attrs.get("output_dtype", 0) and \
            (FOUR_BIT.get(int(attrs["output_dtype"]), (None, None))[1] or
             ONNX_DTYPES.get(int(attrs["output_dtype"]))) != dtype:
        raise ModelError(f"{node_label(node)}: output_dtype {onnx_type_name(int(attrs['output_dtype']))} differs "
                         f"from the zero point's type {dtype}")
    scale = _param(imp, node, node.input[1], xs, axis, block, "scale", "float32")
    xf = x if xdt == "float32" else _call("cast", (x,), {"dtype": "float32"}, node)
    v = _call("round", (_call("divide", (xf, scale), None, node),), None, node)
    if has_zp:
        zp = _param(imp, node, node.input[2], xs, axis, block, "zero point", "float32")
        v = _call("add", (v, zp), None, node)
    lo, hi = bounds or (np.iinfo(dtype).min, np.iinfo(dtype).max)
    v = _call("clip", (v,), {"a_min": float(lo), "a_max": float(hi)}, node)
    return _call("cast", (v,), {"dtype": dtype}, node)


def general_qlinear_matmul(imp, node, attrs) -> Expr:
    """QLinearMatMul with numpy matmul shapes (batched, 1-D) or parameters fed at run time: the int32 product of
    (a − za)(b − zb), then onnxruntime's float32 requantization rint(float32(acc) · float32(s_a·s_b / s_y)) + zy."""
    from .float_ops import batched_matmul
    ins = list(node.input)
    if len(ins) < 8:
        raise ModelError(f"{node_label(node)}: QLinearMatMul takes 8 inputs, found {len(ins)}")

    def centred(i_data, i_zp):
        e = _call("cast", (imp.expr(ins[i_data]),), {"dtype": "int32"}, node)
        if ins[i_zp]:
            e = _call("subtract", (e, _scalar(imp, node, ins[i_zp], "int32")), None, node)
        return e

    def dtype_of(i):
        v = imp.values[ins[i]]
        return v.dtype.name if isinstance(v, np.ndarray) else imp.dtype_of(imp.expr(ins[i]))
    out_dtype = dtype_of(7) if ins[7] else dtype_of(0)
    if out_dtype not in ("int8", "uint8"):
        raise ModelError(f"{node_label(node)}: output type {out_dtype} is not supported", hint="int8 or uint8")
    acc = batched_matmul(imp, node, centred(0, 2), centred(3, 5))
    sa, sb, sy = (_scalar(imp, node, ins[i], "float32") for i in (1, 4, 6))
    ratio = _call("divide", (_call("multiply", (sa, sb), None, node), sy), None, node)
    v = _call("round", (_call("multiply", (_call("cast", (acc,), {"dtype": "float32"}, node), ratio), None,
                              node),), None, node)
    if ins[7]:
        v = _call("add", (v, _scalar(imp, node, ins[7], "float32")), None, node)
    info = np.iinfo(out_dtype)
    return _call("cast", (_call("clip", (v,), {"a_min": float(info.min), "a_max": float(info.max)}, node),),
                 {"dtype": out_dtype}, node)


def _scalar(imp, node, name, dtype) -> Expr:
    v = imp.values[name]
    if isinstance(v, np.ndarray):
        if v.size != 1:
            raise ModelError(f"{node_label(node)}: {name!r} must be a scalar (per-tensor) here, found {v.shape}")
        return Constant(np.asarray(v.reshape(()), dtype))
    e = imp.expr(name)
    if int(np.prod(imp.shape_of(e), dtype=np.int64)) != 1:
        raise ModelError(f"{node_label(node)}: {name!r} must be a scalar (per-tensor) here")
    e = _call("reshape", (e,), {"newshape": ()}, node)
    return e if imp.dtype_of(e) == dtype else _call("cast", (e,), {"dtype": dtype}, node)
