"""Data-movement ops with Relay semantics: reshape, squeeze, expand_dims, transpose, concatenate, split,
strided_slice. They never change values, so they apply to float and quantized (raw integer) tensors alike."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType, TupleType
from .registry import FusionKind, register_op
from .rel import fail, tensor_arg, tuple_arg

__all__ = ["infer_reshape", "strided_slice_indices", "split_indices"]


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


# ----------------------------------------------------------------------------------------------------- reshape
@dataclass(frozen=True)
class ReshapeAttrs(Attrs):
    newshape: tuple = ()


def infer_reshape(ishape: tuple[int, ...], newshape) -> tuple[int, ...]:
    """Relay's newshape codes: 0 copies a dim, −1 infers one, −2 copies the rest, −3 merges two, −4 splits one."""
    name = "reshape"
    ns = [int(v) for v in (newshape if isinstance(newshape, (tuple, list)) else (newshape,))]
    out: list[int] = []
    infer_at = -1
    src = 0
    i = 0
    while i < len(ns):
        v = ns[i]
        if v > 0:
            out.append(v)
            src += 1
        elif v == 0:
            if src >= len(ishape):
                raise fail(name, "newshape", f"0 only where the input has a dimension to copy (rank {len(ishape)})",
                           tuple(ns))
            out.append(ishape[src])
            src += 1
        elif v == -1:
            if infer_at >= 0:
                raise fail(name, "newshape", "at most one -1", tuple(ns))
            infer_at = len(out)
            out.append(1)
            src += 1
        elif v == -2:
            out.extend(ishape[src:])
            src = len(ishape)
        elif v == -3:
            if src + 1 >= len(ishape):
                raise fail(name, "newshape", "-3 only where two input dimensions remain", tuple(ns))
            out.append(ishape[src] * ishape[src + 1])
            src += 2
        elif v == -4:
            if i + 2 >= len(ns) or src >= len(ishape):
                raise fail(name, "newshape", "-4 followed by two values, at an existing input dimension", tuple(ns))
            d = ishape[src]
            d1, d2 = ns[i + 1], ns[i + 2]
            if d1 == -1 and d2 > 0 and d % d2 == 0:
                d1 = d // d2
            elif d2 == -1 and d1 > 0 and d % d1 == 0:
                d2 = d // d1
            if d1 <= 0 or d2 <= 0 or d1 * d2 != d:
                raise fail(name, "newshape", f"-4 split factors of dimension {d}", (ns[i + 1], ns[i + 2]))
            out.extend((d1, d2))
            src += 1
            i += 2
        else:
            raise fail(name, "newshape", "positive sizes or the codes 0, -1, -2, -3, -4", tuple(ns))
        i += 1
    total = _prod(ishape)
    if infer_at >= 0:
        rest = _prod(out[:infer_at] + out[infer_at + 1:])
        if rest == 0 or total % rest:
            raise fail(name, "newshape", f"a shape whose -1 can be inferred from {total} elements", tuple(ns))
        out[infer_at] = total // rest
    if _prod(out) != total:
        raise fail(name, "newshape", f"{total} elements (input shape {tuple(ishape)})",
                   f"{tuple(out)} with {_prod(out)} elements")
    return tuple(out)


def _reshape_rel(types, attrs):
    t = tensor_arg("reshape", ("data",), types, 0)
    return TensorType(infer_reshape(t.shape, attrs.newshape), t.dtype)


register_op("reshape", ("data",), attrs=ReshapeAttrs, rel=_reshape_rel, fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: args[0].reshape(infer_reshape(args[0].shape, attrs.newshape)),
            doc="Reshape with Relay's newshape codes (0, -1, -2, -3, -4).")


# ----------------------------------------------------------------------------------------------------- squeeze
@dataclass(frozen=True)
class SqueezeAttrs(Attrs):
    axis: tuple | None = None

    def __post_init__(self):
        Attrs.__post_init__(self)
        if isinstance(self.axis, int):
            object.__setattr__(self, "axis", (self.axis,))


def _squeeze_axes(shape, axis) -> tuple[int, ...]:
    if axis is None:
        return tuple(i for i, d in enumerate(shape) if d == 1)
    out = []
    for a in axis:
        a2 = a + len(shape) if a < 0 else a
        if not 0 <= a2 < len(shape):
            raise fail("squeeze", "axis", f"axes of a rank-{len(shape)} tensor", axis)
        if shape[a2] != 1:
            raise fail("squeeze", "axis", f"axes of size 1 (axis {a} has size {shape[a2]})", axis)
        out.append(a2)
    return tuple(sorted(set(out)))


def _squeeze_rel(types, attrs):
    t = tensor_arg("squeeze", ("data",), types, 0)
    drop = _squeeze_axes(t.shape, attrs.axis)
    return TensorType(tuple(d for i, d in enumerate(t.shape) if i not in drop), t.dtype)


register_op("squeeze", ("data",), attrs=SqueezeAttrs, rel=_squeeze_rel, fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: np.squeeze(args[0], axis=_squeeze_axes(args[0].shape, attrs.axis)),
            doc="Remove size-1 axes (all of them when axis is None).")


# ------------------------------------------------------------------------------------------------- expand_dims
@dataclass(frozen=True)
class ExpandDimsAttrs(Attrs):
    axis: int = 0
    num_newaxis: int = 1


def _expand_shape(shape, attrs) -> tuple[int, ...]:
    n = len(shape)
    a = attrs.axis + n + 1 if attrs.axis < 0 else attrs.axis
    if not 0 <= a <= n:
        raise fail("expand_dims", "axis", f"a value in [{-n - 1}, {n}]", attrs.axis)
    if attrs.num_newaxis < 0:
        raise fail("expand_dims", "num_newaxis", "a non-negative count", attrs.num_newaxis)
    return tuple(shape[:a]) + (1,) * attrs.num_newaxis + tuple(shape[a:])


def _expand_rel(types, attrs):
    t = tensor_arg("expand_dims", ("data",), types, 0)
    return TensorType(_expand_shape(t.shape, attrs), t.dtype)


register_op("expand_dims", ("data",), attrs=ExpandDimsAttrs, rel=_expand_rel, fusion=FusionKind.BROADCAST,
            compute=lambda args, attrs: args[0].reshape(_expand_shape(args[0].shape, attrs)),
            doc="Insert num_newaxis size-1 axes at axis.")


# --------------------------------------------------------------------------------------------------- transpose
@dataclass(frozen=True)
class TransposeAttrs(Attrs):
    axes: tuple | None = None


def _perm(ndim: int, axes) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim - 1, -1, -1))
    p = tuple(a + ndim if a < 0 else a for a in axes)
    if sorted(p) != list(range(ndim)):
        raise fail("transpose", "axes", f"a permutation of the {ndim} axes", axes)
    return p


def _transpose_rel(types, attrs):
    t = tensor_arg("transpose", ("data",), types, 0)
    return TensorType(tuple(t.shape[i] for i in _perm(t.ndim, attrs.axes)), t.dtype)


register_op("transpose", ("data",), attrs=TransposeAttrs, rel=_transpose_rel, fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: np.ascontiguousarray(args[0].transpose(_perm(args[0].ndim, attrs.axes))),
            doc="Permute axes (reverse them when axes is None).")


# ------------------------------------------------------------------------------------------------- concatenate
@dataclass(frozen=True)
class ConcatenateAttrs(Attrs):
    axis: int = 0


def concat_out_type(name: str, fields, axis: int) -> TensorType:
    if not fields:
        raise fail(name, "data", "a non-empty tuple of tensors", "()")
    ts = []
    for i, f in enumerate(fields):
        if not isinstance(f, TensorType):
            raise fail(name, f"data[{i}]", "a tensor", f)
        ts.append(f)
    first = ts[0]
    if first.ndim == 0:
        raise fail(name, "data[0]", "a tensor of rank ≥ 1", first)
    a = axis + first.ndim if axis < 0 else axis
    if not 0 <= a < first.ndim:
        raise fail(name, "axis", f"an axis of rank-{first.ndim} tensors", axis)
    total = 0
    for i, t in enumerate(ts):
        if t.dtype != first.dtype:
            raise fail(name, f"data[{i}]", f"dtype {first.dtype} (as data[0])", t.dtype)
        if t.ndim != first.ndim or any(d != e for j, (d, e) in enumerate(zip(t.shape, first.shape)) if j != a):
            raise fail(name, f"data[{i}]", f"shape {first.shape} except on axis {a}", t.shape)
        total += t.shape[a]
    return TensorType(first.shape[:a] + (total,) + first.shape[a + 1:], first.dtype)


def _concat_rel(types, attrs):
    tup = tuple_arg("concatenate", "data", types[0])
    return concat_out_type("concatenate", tup.fields, attrs.axis)


register_op("concatenate", ("data",), attrs=ConcatenateAttrs, rel=_concat_rel, fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: np.concatenate(list(args[0]), axis=attrs.axis),
            doc="Join a tuple of tensors along axis.")


# ------------------------------------------------------------------------------------------------------- split
@dataclass(frozen=True)
class SplitAttrs(Attrs):
    indices_or_sections: object = 1
    axis: int = 0


def split_indices(dim: int, indices_or_sections) -> list[int]:
    """Split points along an axis of size ``dim`` (Relay: an int is a number of equal sections)."""
    if isinstance(indices_or_sections, (tuple, list)):
        idx = [int(i) for i in indices_or_sections]
        if any(b < a for a, b in zip(idx, idx[1:])) or (idx and (idx[0] < 0 or idx[-1] > dim)):
            raise fail("split", "indices_or_sections", f"increasing indices within [0, {dim}]", tuple(idx))
        return idx
    n = int(indices_or_sections)
    if n <= 0 or dim % n:
        raise fail("split", "indices_or_sections", f"a number of sections dividing the axis size {dim}", n)
    return [dim // n * k for k in range(1, n)]


def _split_rel(types, attrs):
    t = tensor_arg("split", ("data",), types, 0)
    if t.ndim == 0:
        raise fail("split", "data", "a tensor of rank ≥ 1", t)
    a = attrs.axis + t.ndim if attrs.axis < 0 else attrs.axis
    if not 0 <= a < t.ndim:
        raise fail("split", "axis", f"an axis of a rank-{t.ndim} tensor", attrs.axis)
    bounds = [0] + split_indices(t.shape[a], attrs.indices_or_sections) + [t.shape[a]]
    return TupleType(tuple(TensorType(t.shape[:a] + (hi - lo,) + t.shape[a + 1:], t.dtype)
                           for lo, hi in zip(bounds, bounds[1:])))


def _split_compute(args, attrs):
    (x,) = args
    a = attrs.axis + x.ndim if attrs.axis < 0 else attrs.axis
    return tuple(np.split(x, split_indices(x.shape[a], attrs.indices_or_sections), axis=a))


register_op("split", ("data",), attrs=SplitAttrs, rel=_split_rel, fusion=FusionKind.INJECTIVE,
            compute=_split_compute, doc="Split along axis into a tuple (sections or split indices).")


# ----------------------------------------------------------------------------------------------- strided_slice
@dataclass(frozen=True)
class StridedSliceAttrs(Attrs):
    begin: tuple = ()
    end: tuple = ()
    strides: tuple | None = None
    axes: tuple | None = None
    slice_mode: str = "end"


def strided_slice_indices(shape: tuple[int, ...], attrs: StridedSliceAttrs) -> tuple[slice, ...]:
    """Python slices per axis; out-of-range begin/end clamp like numpy (and like Relay's canonicalisation)."""
    name = "strided_slice"
    n = len(shape)
    if attrs.slice_mode not in ("end", "size"):
        raise fail(name, "slice_mode", "'end' or 'size'", attrs.slice_mode)
    axes = list(range(len(attrs.begin))) if attrs.axes is None else [a + n if a < 0 else a for a in attrs.axes]
    if any(not 0 <= a < n for a in axes) or len(set(axes)) != len(axes):
        raise fail(name, "axes", f"distinct axes of a rank-{n} tensor", attrs.axes)
    if len(attrs.begin) != len(axes):
        raise fail(name, "begin", f"{len(axes)} values (one per sliced axis)", attrs.begin)
    strides = list(attrs.strides or (1,))
    if len(strides) == 1:
        strides = strides * len(axes)
    if len(strides) != len(axes) or any(s == 0 for s in strides):
        raise fail(name, "strides", f"{len(axes)} non-zero values", attrs.strides)
    if len(attrs.end) > len(axes):
        raise fail(name, "end", f"at most {len(axes)} values", attrs.end)
    slices = [slice(None)] * n
    for i, a in enumerate(axes):
        b = int(attrs.begin[i])
        e = int(attrs.end[i]) if i < len(attrs.end) else None
        s = int(strides[i])
        if attrs.slice_mode == "size":
            s = 1
            if e is not None and e >= 0:
                b = b + shape[a] if b < 0 else b
                e = b + e
            else:
                e = None
        slices[a] = slice(b, e, s)
    return tuple(slices)


def _strided_slice_rel(types, attrs):
    t = tensor_arg("strided_slice", ("data",), types, 0)
    sl = strided_slice_indices(t.shape, attrs)
    return TensorType(tuple(len(range(*s.indices(d))) for s, d in zip(sl, t.shape)), t.dtype)


register_op("strided_slice", ("data",), attrs=StridedSliceAttrs, rel=_strided_slice_rel,
            fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: np.ascontiguousarray(args[0][strided_slice_indices(args[0].shape, attrs)]),
            doc="Slice with begin/end/strides (optionally on the given axes); 'size' mode takes lengths.")
