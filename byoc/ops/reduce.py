"""Reductions with Relay's (axis, keepdims, exclude) attributes: sum, mean, max, min.

Integer sums wrap to the input dtype like TVM's; an integer ``mean`` is TVM's truncating sum / count (the
quantized, TFLite-exact mean is ``qnn.mean``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .registry import FusionKind, register_op
from .rel import fail, tensor_arg

__all__ = ["ReduceAttrs", "reduce_axes", "reduced_shape"]


@dataclass(frozen=True)
class ReduceAttrs(Attrs):
    axis: tuple | None = None
    keepdims: bool = False
    exclude: bool = False

    def __post_init__(self):
        Attrs.__post_init__(self)
        if isinstance(self.axis, int):
            object.__setattr__(self, "axis", (self.axis,))


def reduce_axes(name: str, ndim: int, attrs) -> tuple[int, ...]:
    """The reduced axes, sorted; ``axis=None`` reduces everything, ``exclude`` inverts the selection."""
    if attrs.axis is None:
        axes = tuple(range(ndim))
    else:
        axes = []
        for a in attrs.axis:
            a2 = a + ndim if a < 0 else a
            if not 0 <= a2 < ndim or a2 in axes:
                raise fail(name, "axis", f"distinct axes of a rank-{ndim} tensor", attrs.axis)
            axes.append(a2)
        axes = tuple(sorted(axes))
    if attrs.exclude:
        axes = tuple(i for i in range(ndim) if i not in axes)
    return axes


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _wrap_to(v: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Two's-complement wrap of int64 values to an integer dtype (as a C store would)."""
    bits = dtype.itemsize * 8
    if bits >= 64:
        return v.astype(dtype)
    v = v & ((1 << bits) - 1)
    if dtype.kind == "i":
        v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
    return v.astype(dtype)


def _rel(name):
    def rel(types, attrs):
        t = tensor_arg(name, ("data",), types, 0)
        axes = reduce_axes(name, t.ndim, attrs)
        if name in ("max", "min") and any(t.shape[a] == 0 for a in axes):
            raise fail(name, "data", "non-empty reduced axes", t)
        return TensorType(reduced_shape(t.shape, axes, attrs.keepdims), t.dtype)
    return rel


def _compute(name):
    def compute(args, attrs):
        (x,) = args
        axes = reduce_axes(name, x.ndim, attrs)
        if name in ("max", "min"):
            fn = np.max if name == "max" else np.min
            return np.asarray(fn(x, axis=axes, keepdims=attrs.keepdims)).astype(x.dtype)
        if x.dtype.kind in "iu":
            total = np.sum(x.astype(np.int64), axis=axes, keepdims=attrs.keepdims)
            if name == "mean":
                n = max(1, int(np.prod([x.shape[a] for a in axes])))
                q = np.abs(total) // n
                total = np.where(total < 0, -q, q)
            return _wrap_to(np.asarray(total, np.int64), x.dtype)
        with np.errstate(all="ignore"):
            fn = np.sum if name == "sum" else np.mean
            return np.asarray(fn(x, axis=axes, keepdims=attrs.keepdims, dtype=x.dtype)).astype(x.dtype)
    return compute


for _name, _doc in (("sum", "Sum over axes (integers wrap to the dtype)."),
                    ("mean", "Mean over axes (integers: truncating sum / count, as TVM)."),
                    ("max", "Maximum over axes."), ("min", "Minimum over axes.")):
    register_op(_name, ("data",), attrs=ReduceAttrs, rel=_rel(_name), fusion=FusionKind.COMM_REDUCE,
                compute=_compute(_name), doc=_doc)


@dataclass(frozen=True)
class VarianceAttrs(ReduceAttrs):
    unbiased: bool = False


def _variance_rel(types, attrs):
    t = tensor_arg("variance", ("data", "mean"), types, 0)
    if t.dtype not in ("float16", "float32", "float64"):
        raise fail("variance", "data", "a float tensor", t.dtype)
    axes = reduce_axes("variance", t.ndim, attrs)
    m = tensor_arg("variance", ("data", "mean"), types, 1)
    want = reduced_shape(t.shape, axes, True)
    if m.shape != want or m.dtype != t.dtype:
        raise fail("variance", "mean", f"Tensor[{want}, {t.dtype}] (the mean with keepdims)", m)
    return TensorType(reduced_shape(t.shape, axes, attrs.keepdims), t.dtype)


def _variance_compute(args, attrs):
    x, m = args
    axes = reduce_axes("variance", x.ndim, attrs)
    n = int(np.prod([x.shape[a] for a in axes])) - (1 if attrs.unbiased else 0)
    with np.errstate(all="ignore"):
        d = (x - m).astype(x.dtype)
        s = np.sum(d * d, axis=axes, keepdims=attrs.keepdims, dtype=x.dtype)
        return np.asarray(s / x.dtype.type(max(n, 0))).astype(x.dtype)


register_op("variance", ("data", "mean"), attrs=VarianceAttrs, rel=_variance_rel, fusion=FusionKind.COMM_REDUCE,
            compute=_variance_compute, doc="Sum over axes of (data − mean)² / N (N − 1 when unbiased), as TVM.")
