"""Index-map ops that copy raw values by position (Relay spelling): nn.mirror_pad, tile and gather_nd.

* ``nn.mirror_pad`` (TVM's MirrorPadAttrs: ``pad_width``, ``mode`` "REFLECT" / "SYMMETRIC"): LiteRT's
  GetInputDimension, which is numpy's reflect / symmetric padding for pads within TVM's limits (REFLECT pads
  < the axis size, SYMMETRIC ≤ it).
* ``tile`` (TVM's TileAttrs ``reps``): numpy ``tile``.
* ``gather_nd`` (TVM layout: indices [M, Y...] index the first M axes of data; ``batch_dims`` 0).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ExecutionError
from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .registry import FusionKind, register_op
from .rel import expect_dtype, fail, tensor_arg


# ------------------------------------------------------------------------------------------------ mirror_pad
@dataclass(frozen=True)
class MirrorPadAttrs(Attrs):
    pad_width: tuple = ()
    mode: str = "SYMMETRIC"

    def __post_init__(self):
        Attrs.__post_init__(self)
        object.__setattr__(self, "pad_width", tuple((int(a), int(b)) for a, b in self.pad_width))


def _mirror_pad_rel(types, attrs):
    name = "nn.mirror_pad"
    t = tensor_arg(name, ("data",), types, 0)
    if attrs.mode not in ("REFLECT", "SYMMETRIC"):
        raise fail(name, "mode", '"REFLECT" or "SYMMETRIC"', repr(attrs.mode))
    if len(attrs.pad_width) != t.ndim:
        raise fail(name, "pad_width", f"{t.ndim} (before, after) pairs", attrs.pad_width)
    extra = 1 if attrs.mode == "REFLECT" else 0
    for axis, ((a, b), d) in enumerate(zip(attrs.pad_width, t.shape)):
        if a < 0 or b < 0 or max(a, b) > d - extra:
            raise fail(name, "pad_width", f"pads of axis {axis} in [0, {d - extra}] ({attrs.mode} of a size-{d} "
                                          "axis)", (a, b))
    return TensorType(tuple(d + a + b for d, (a, b) in zip(t.shape, attrs.pad_width)), t.dtype)


def mirror_pad_source(out_pos: int, before: int, size: int, mode: str) -> int:
    """LiteRT's GetInputDimension: the input position an output position reads along one axis."""
    offset = 1 if mode == "REFLECT" else 0
    if out_pos < before:
        original = before + offset - 1
        return original - min(out_pos, original - offset)
    out_pos -= before
    if out_pos >= size:
        out_pos -= size
        original = size - (1 + offset)
        return original - min(out_pos, original)
    return out_pos


def _mirror_pad_compute(args, attrs):
    (x,) = args
    return np.pad(x, attrs.pad_width, mode="reflect" if attrs.mode == "REFLECT" else "symmetric")


register_op("nn.mirror_pad", ("data",), attrs=MirrorPadAttrs, rel=_mirror_pad_rel, fusion=FusionKind.INJECTIVE,
            compute=_mirror_pad_compute,
            doc="Pad by mirroring the edges (REFLECT excludes the edge element, SYMMETRIC repeats it).")


# ------------------------------------------------------------------------------------------------------ tile
@dataclass(frozen=True)
class TileAttrs(Attrs):
    reps: tuple = ()

    def __post_init__(self):
        Attrs.__post_init__(self)
        object.__setattr__(self, "reps", tuple(int(r) for r in self.reps))


def _tile_rel(types, attrs):
    t = tensor_arg("tile", ("data",), types, 0)
    if not attrs.reps or any(r < 0 for r in attrs.reps):
        raise fail("tile", "reps", "a non-empty tuple of non-negative repetitions", attrs.reps)
    n = max(t.ndim, len(attrs.reps))
    shape = (1,) * (n - t.ndim) + tuple(t.shape)
    reps = (1,) * (n - len(attrs.reps)) + attrs.reps
    return TensorType(tuple(d * r for d, r in zip(shape, reps)), t.dtype)


register_op("tile", ("data",), attrs=TileAttrs, rel=_tile_rel, fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: np.ascontiguousarray(np.tile(args[0], attrs.reps)),
            doc="Repeat data reps[i] times along axis i (numpy tile).")



# -------------------------------------------------------------------------------------------------- gather_nd
@dataclass(frozen=True)
class GatherNDAttrs(Attrs):
    batch_dims: int = 0
    index_rank: int | None = None


def _gather_nd_rel(types, attrs):
    name = "gather_nd"
    data = tensor_arg(name, ("data", "indices"), types, 0)
    idx = tensor_arg(name, ("data", "indices"), types, 1)
    expect_dtype(name, "indices", idx, ("int32", "int64"))
    if attrs.batch_dims != 0:
        raise fail(name, "batch_dims", "0 (batched gathers are not supported)", attrs.batch_dims)
    if idx.ndim == 0:
        raise fail(name, "indices", "a tensor of rank ≥ 1 (its first axis indexes data)", idx)
    m = idx.shape[0]
    if attrs.index_rank is not None and attrs.index_rank != m:
        raise fail(name, "index_rank", f"indices.shape[0] = {m}", attrs.index_rank)
    if m > data.ndim:
        raise fail(name, "indices", f"a first axis of at most rank(data) = {data.ndim}", f"{m}")
    return TensorType(tuple(idx.shape[1:]) + tuple(data.shape[m:]), data.dtype)


def _gather_nd_compute(args, attrs):
    data, idx = args
    m = idx.shape[0]
    idx = idx.astype(np.int64)
    bad = np.zeros(idx.shape[1:], bool)
    for k in range(m):
        bad |= (idx[k] < 0) | (idx[k] >= data.shape[k])
    if bad.any():
        raise ExecutionError(f"gather_nd: an index is out of range for data of shape {list(data.shape)}",
                             hint="LiteRT fails on this input too")
    return np.ascontiguousarray(data[tuple(idx[k] for k in range(m))])


register_op("gather_nd", ("data", "indices"), attrs=GatherNDAttrs, rel=_gather_nd_rel, fusion=FusionKind.INJECTIVE,
            compute=_gather_nd_compute,
            doc="data[indices[0], ..., indices[M-1]] (TVM layout: indices [M, Y...]); an out-of-range index is an "
                "error.")
