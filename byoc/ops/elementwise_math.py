"""Elementwise math ops TVM programs use beyond the quantized catalog: log, erf, power, left_shift,
right_shift and TVM's fixed_point_multiply (``tir.q_multiply_shift`` rounding)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ExecutionError
from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .registry import FusionKind, register_op
from .rel import FLOAT_DTYPES, INT_DTYPES, broadcast_shapes, fail, tensor_arg

__all__ = ["fixed_point_multiply_ref"]


def _float_unary(name, fn, doc):
    def rel(types, attrs):
        t = tensor_arg(name, ("data",), types, 0)
        if t.dtype not in FLOAT_DTYPES:
            raise fail(name, "data", "a float tensor", t.dtype)
        return t

    def compute(args, attrs):
        (x,) = args
        with np.errstate(all="ignore"):
            return np.asarray(fn(x)).astype(x.dtype)

    register_op(name, ("data",), rel=rel, fusion=FusionKind.ELEMWISE, compute=compute, doc=doc)


_erf64 = np.vectorize(math.erf, otypes=[np.float64])
_float_unary("log", lambda x: np.log(x.astype(np.float64)),
             "Natural logarithm computed in double and rounded to the input dtype (log(0) = -inf, log(x < 0) = "
             "nan).")
_float_unary("erf", lambda x: _erf64(x.astype(np.float64)),
             "Gauss error function, computed in double and rounded to the input dtype.")


def _binary_rel(name, allowed):
    def rel(types, attrs):
        a = tensor_arg(name, ("lhs", "rhs"), types, 0)
        b = tensor_arg(name, ("lhs", "rhs"), types, 1)
        if a.dtype not in allowed:
            raise fail(name, "lhs", "a " + ("float or integer" if len(allowed) > 4 else "integer") + " tensor",
                       a.dtype)
        if a.dtype != b.dtype:
            raise fail(name, "rhs", f"dtype {a.dtype} (same as lhs)", b.dtype)
        return TensorType(broadcast_shapes(name, a.shape, b.shape), a.dtype)
    return rel


def _power(args, attrs):
    a, b = args
    if a.dtype.kind in "iu":
        if np.any(b < 0):
            raise ExecutionError("power: a negative integer exponent has no integer result")
        return np.power(a.astype(np.int64), b.astype(np.int64)).astype(a.dtype)  # wraps like C
    with np.errstate(all="ignore"):   # in double, rounded to the dtype (as the CPU kernel calls C's pow)
        return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


def _shift(name, fn):
    def compute(args, attrs):
        a, b = args
        bits = a.dtype.itemsize * 8
        if np.any((b < 0) | (b >= bits)):
            raise ExecutionError(f"{name}: shift amounts must be in [0, {bits}) for {a.dtype}",
                                 hint="C leaves other shift amounts undefined")
        return fn(a.astype(np.int64), b.astype(np.int64)).astype(a.dtype)  # left shift wraps in the dtype
    return compute


register_op("power", ("lhs", "rhs"), rel=_binary_rel("power", FLOAT_DTYPES + INT_DTYPES),
            fusion=FusionKind.BROADCAST, compute=_power, doc="lhs ** rhs with numpy broadcasting.")
register_op("left_shift", ("lhs", "rhs"), rel=_binary_rel("left_shift", INT_DTYPES), fusion=FusionKind.BROADCAST,
            compute=_shift("left_shift", np.left_shift), doc="lhs << rhs, wrapping in the dtype.")
register_op("right_shift", ("lhs", "rhs"), rel=_binary_rel("right_shift", INT_DTYPES),
            fusion=FusionKind.BROADCAST, compute=_shift("right_shift", np.right_shift),
            doc="lhs >> rhs (arithmetic for signed dtypes).")


@dataclass(frozen=True)
class FixedPointMultiplyAttrs(Attrs):
    multiplier: int = 1 << 30
    shift: int = 0


def _fpm_rel(types, attrs):
    t = tensor_arg("fixed_point_multiply", ("data",), types, 0)
    if t.dtype != "int32":
        raise fail("fixed_point_multiply", "data", "an int32 tensor", t.dtype)
    return t


def fixed_point_multiply_ref(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """TVM's q_multiply_shift(x, multiplier, 31, shift): round(x · multiplier · 2^(shift − 31)), rounding half up.
    A multiplier of 2^30 (the value 0.5) is TVM's power-of-two special case, done in int32."""
    x = x.astype(np.int64)
    if multiplier == 1 << 30:  # in int32, as TVM lowers it (each step wraps)
        e = shift - 1
        if e > 0:
            return _wrap32(x << e)
        if e == 0:
            return _wrap32(x)
        return _wrap32(_wrap32(x + (1 << (-e - 1))).astype(np.int64) >> -e)
    ls, rs = (shift, 0) if shift > 0 else (0, -shift)
    total = rs + 31
    out = ((x << ls) * int(multiplier) + (1 << (total - 1))) >> total
    return _wrap32(out)


def _wrap32(v: np.ndarray) -> np.ndarray:
    return ((v + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


register_op("fixed_point_multiply", ("data",), attrs=FixedPointMultiplyAttrs, rel=_fpm_rel,
            fusion=FusionKind.ELEMWISE,
            compute=lambda args, attrs: fixed_point_multiply_ref(args[0], attrs.multiplier, attrs.shift),
            doc="int32 x · multiplier · 2^(shift − 31), rounded half up (TVM's q_multiply_shift).")
