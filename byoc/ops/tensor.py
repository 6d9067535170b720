"""Elementwise, broadcast and injective tensor ops (float and integer): add, clip, cast, ..."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .registry import FusionKind, register_op
from .rel import broadcast_shapes, fail, tensor_arg


def _binary_rel(name):
    def rel(types, attrs):
        a = tensor_arg(name, ("lhs", "rhs"), types, 0)
        b = tensor_arg(name, ("lhs", "rhs"), types, 1)
        if a.dtype != b.dtype:
            raise fail(name, "rhs", f"dtype {a.dtype} (same as lhs)", b.dtype)
        return TensorType(broadcast_shapes(name, a.shape, b.shape), a.dtype)
    return rel


def _int_wrap(fn):
    """Integer arithmetic wraps like the C kernels; float arithmetic stays in its dtype."""
    def compute(args, attrs):
        a, b = args
        if a.dtype.kind in "iu":
            return fn(a.astype(np.int64), b.astype(np.int64)).astype(a.dtype)
        with np.errstate(all="ignore"):
            return fn(a, b).astype(a.dtype)
    return compute


def _int_div(a, b):
    # C semantics: truncating division; division by zero is an error in the interpreter.
    if np.any(b == 0):
        from ..errors import ExecutionError
        raise ExecutionError("divide: integer division by zero")
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) ^ (b < 0), -q, q)


def _float_or_int_div(a, b):
    if a.dtype.kind in "iu":
        return _int_div(a, b)
    return a / b


def _floor_div(a, b):
    # Integers: the quotient rounded toward −inf (TVM's floor_divide, TFLite's FLOOR_DIV); floats: floor(a / b).
    if a.dtype.kind in "iu":
        if np.any(b == 0):
            from ..errors import ExecutionError
            raise ExecutionError("floor_divide: integer division by zero")
        return a // b
    return np.floor(a / b)


for _name, _fn in (("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
                   ("divide", _float_or_int_div), ("floor_divide", _floor_div), ("maximum", np.maximum), ("minimum", np.minimum)):
    register_op(_name, ("lhs", "rhs"), rel=_binary_rel(_name), fusion=FusionKind.BROADCAST,
                compute=_int_wrap(_fn), doc=f"Elementwise {_name} with numpy broadcasting.")


@dataclass(frozen=True)
class ClipAttrs(Attrs):
    a_min: float = float("-inf")
    a_max: float = float("inf")


def _clip_rel(types, attrs):
    return tensor_arg("clip", ("data",), types, 0)


def _clip_compute(args, attrs):
    (x,) = args
    lo, hi = attrs.a_min, attrs.a_max
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        lo = info.min if lo == float("-inf") else min(max(int(np.ceil(lo)), info.min), info.max)
        hi = info.max if hi == float("inf") else max(min(int(np.floor(hi)), info.max), info.min)
    return np.clip(x, lo, hi).astype(x.dtype)


register_op("clip", ("data",), attrs=ClipAttrs, rel=_clip_rel, fusion=FusionKind.ELEMWISE,
            compute=_clip_compute, doc="Clamp to [a_min, a_max]; on integers the bounds are integers.")


@dataclass(frozen=True)
class CastAttrs(Attrs):
    dtype: str = "float32"


def _cast_rel(types, attrs):
    t = tensor_arg("cast", ("data",), types, 0)
    return TensorType(t.shape, attrs.dtype)


def _cast_compute(args, attrs):
    (x,) = args
    target = np.dtype(attrs.dtype)
    if target.kind in "iu" and x.dtype.kind == "f":
        # C-style truncation toward zero, saturating where C would be undefined.
        info = np.iinfo(target)
        return np.clip(np.trunc(x), info.min, info.max).astype(target)
    if target.kind in "iu" and x.dtype.kind in "iu":
        bits = target.itemsize * 8
        if bits >= 64:
            return x.astype(target)  # int64 holds every narrower integer (the mask below would overflow)
        v = x.astype(np.int64) & ((1 << bits) - 1)
        if target.kind == "i":
            v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
        return v.astype(target)
    return x.astype(target)


register_op("cast", ("data",), attrs=CastAttrs, rel=_cast_rel, fusion=FusionKind.ELEMWISE,
            compute=_cast_compute, doc="Convert dtype (integer narrowing wraps, float→int truncates).")


def _unary_same(name, fn, float_only=False):
    def rel(types, attrs):
        t = tensor_arg(name, ("data",), types, 0)
        if float_only and t.dtype not in ("float16", "float32", "float64"):
            raise fail(name, "data", "a float tensor", t.dtype)
        return t

    def compute(args, attrs):
        (x,) = args
        with np.errstate(all="ignore"):
            return np.asarray(fn(x)).astype(x.dtype)

    register_op(name, ("data",), rel=rel, fusion=FusionKind.ELEMWISE, compute=compute,
                doc=f"Elementwise {name}.")


_unary_same("negative", np.negative)
_unary_same("abs", np.abs)
_unary_same("exp", np.exp, float_only=True)
_unary_same("sqrt", np.sqrt, float_only=True)
_unary_same("rsqrt", lambda x: 1 / np.sqrt(x), float_only=True)
_unary_same("tanh", np.tanh, float_only=True)
_unary_same("sigmoid", lambda x: 1 / (1 + np.exp(-x)), float_only=True)
_unary_same("round", np.round, float_only=True)
_unary_same("floor", np.floor, float_only=True)
_unary_same("copy", np.copy)
