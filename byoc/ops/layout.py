"""``layout_transform(data, src_layout, dst_layout)``: TVM's layout strings, e.g. NCHW → NHWC or NCHW4c.

An upper-case letter is a primal axis; a lower-case letter with a factor (``4c``) is a split of the primal axis
of the same letter, the primal axis then holding the outer part. Both layouts must name the same primal axes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .registry import FusionKind, register_op
from .rel import fail, tensor_arg

__all__ = ["parse_layout", "layout_transform_ref"]


@dataclass(frozen=True)
class LayoutTransformAttrs(Attrs):
    src_layout: str = ""
    dst_layout: str = ""


def parse_layout(layout: str) -> list[tuple[str, int]]:
    """[(axis, factor)] per dimension: factor 0 for a primal axis."""
    items = re.findall(r"(\d*)([A-Za-z])", layout)
    if "".join(f + a for f, a in items) != layout or not layout:
        raise fail("layout_transform", "layout", "a layout like 'NCHW' or 'NCHW4c'", repr(layout))
    out = []
    for factor, axis in items:
        if axis.isupper() and factor:
            raise fail("layout_transform", "layout", f"no factor on primal axis {axis}", repr(layout))
        if axis.islower() and (not factor or int(factor) <= 0):
            raise fail("layout_transform", "layout", f"a positive factor on sub-axis {axis}", repr(layout))
        out.append((axis, int(factor) if factor else 0))
    primal = [a for a, _ in out if a.isupper()]
    subs = [a.upper() for a, _ in out if a.islower()]
    if len(set(primal)) != len(primal) or len(set(subs)) != len(subs) or not set(subs) <= set(primal):
        raise fail("layout_transform", "layout", "each axis once and every sub-axis's primal axis present",
                   repr(layout))
    return out


def _primal_sizes(layout, shape) -> dict[str, int]:
    sizes = {a: d for (a, f), d in zip(layout, shape) if not f}
    for (a, f), d in zip(layout, shape):
        if f:
            if d != f:
                raise fail("layout_transform", "data", f"dimension {a} of size {f}", d)
            sizes[a.upper()] *= f
    return sizes


def _dst_shape(src, dst, shape) -> tuple[int, ...]:
    if len(src) != len(shape):
        raise fail("layout_transform", "data", f"rank {len(src)} for layout", len(shape))
    if sorted(a for a, f in src if not f) != sorted(a for a, f in dst if not f):
        raise fail("layout_transform", "dst_layout", "the same primal axes as src_layout",
                   "".join(a for a, f in dst if not f))
    sizes = _primal_sizes(src, shape)
    factors = {a.upper(): f for a, f in dst if f}
    out = []
    for a, f in dst:
        if f:
            out.append(f)
        else:
            total, g = sizes[a], factors.get(a, 1)
            if total % g:
                raise fail("layout_transform", "data", f"axis {a} divisible by {g}", total)
            out.append(total // g)
    return tuple(out)


def _rel(types, attrs):
    t = tensor_arg("layout_transform", ("data",), types, 0)
    src, dst = parse_layout(attrs.src_layout), parse_layout(attrs.dst_layout)
    return TensorType(_dst_shape(src, dst, t.shape), t.dtype)


def layout_transform_ref(x: np.ndarray, src_layout: str, dst_layout: str) -> np.ndarray:
    src, dst = parse_layout(src_layout), parse_layout(dst_layout)
    out_shape = _dst_shape(src, dst, x.shape)
    sizes = _primal_sizes(src, x.shape)
    primal = [a for a, f in src if not f]
    # src → primal order: bring each primal axis's outer and inner parts together, then merge them.
    perm, merged = [], []
    for a in primal:
        outer = next(i for i, (b, f) in enumerate(src) if b == a)
        inner = [i for i, (b, f) in enumerate(src) if b == a.lower()]
        perm += [outer] + inner
        merged.append(sizes[a])
    y = x.transpose(perm).reshape(merged)
    # primal → dst: split each primal axis by its dst factor, then order the parts as dst lists them.
    factors = {a.upper(): f for a, f in dst if f}
    split_shape, where = [], {}
    for a in primal:
        g = factors.get(a, 0)
        where[a] = len(split_shape)
        split_shape.append(sizes[a] // g if g else sizes[a])
        if g:
            where[a.lower()] = len(split_shape)
            split_shape.append(g)
    y = y.reshape(split_shape).transpose([where[a] for a, f in dst])
    return np.ascontiguousarray(y).reshape(out_shape)


register_op("layout_transform", ("data",), attrs=LayoutTransformAttrs, rel=_rel, fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: layout_transform_ref(args[0], attrs.src_layout, attrs.dst_layout),
            doc="Move data between TVM layouts (e.g. NCHW → NHWC, NCHW → NCHW4c).")
