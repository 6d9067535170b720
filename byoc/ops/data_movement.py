"""Data-movement and index-reduction ops with Relay semantics (beyond transform_ops.py): stack, take,
broadcast_to, nn.depth_to_space, nn.space_to_depth, and the index reductions argmax / argmin. None of them changes
a value, so they apply to float and raw quantized integers alike (TFLite's PACK, GATHER, DEPTH_TO_SPACE,
SPACE_TO_DEPTH, ARG_MAX and ARG_MIN work on the raw integers too; BATCH_MATMUL's importer broadcasts batch
dimensions with broadcast_to)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ExecutionError
from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .reduce import reduce_axes
from .registry import FusionKind, register_op
from .rel import expect_dtype, fail, tensor_arg, tuple_arg

__all__ = ["StackAttrs", "TakeAttrs", "BroadcastToAttrs", "SpaceDepthAttrs",
           "ArgReduceAttrs", "take_positions", "arg_reduce_axis",
           "depth_to_space_nhwc", "space_to_depth_nhwc"]


# ------------------------------------------------------------------------------------------------------ stack
@dataclass(frozen=True)
class StackAttrs(Attrs):
    axis: int = 0


def _stack_axis(name: str, ndim: int, axis: int) -> int:
    a = axis + ndim + 1 if axis < 0 else axis
    if not 0 <= a <= ndim:
        raise fail(name, "axis", f"a value in [{-ndim - 1}, {ndim}] for rank-{ndim} inputs", axis)
    return a


def _stack_rel(types, attrs):
    name = "stack"
    tup = tuple_arg(name, "data", types[0])
    if not tup.fields:
        raise fail(name, "data", "a non-empty tuple of tensors", "()")
    first = tup.fields[0]
    for i, f in enumerate(tup.fields):
        if not isinstance(f, TensorType):
            raise fail(name, f"data[{i}]", "a tensor", f)
        if f.shape != first.shape or f.dtype != first.dtype:
            raise fail(name, f"data[{i}]", f"{first.dtype}{list(first.shape)} (as data[0])",
                       f"{f.dtype}{list(f.shape)}")
    a = _stack_axis(name, first.ndim, attrs.axis)
    return TensorType(first.shape[:a] + (len(tup.fields),) + first.shape[a:], first.dtype)


register_op("stack", ("data",), attrs=StackAttrs, rel=_stack_rel, fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: np.stack(list(args[0]), axis=attrs.axis),
            doc="Join a tuple of equally shaped tensors along a new axis (TFLite PACK).")


# ------------------------------------------------------------------------------------------------------- take
@dataclass(frozen=True)
class TakeAttrs(Attrs):
    batch_dims: int = 0
    axis: int | None = None
    mode: str = "clip"  # Relay: "clip" clamps indices, "wrap" takes them modulo, "fast" assumes them in range

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.mode not in ("clip", "wrap", "fast"):
            from ..errors import IRError
            raise IRError(f"take: unknown mode {self.mode!r}", hint="'clip', 'wrap' or 'fast'")


def _take_geometry(name: str, data: TensorType, indices: TensorType, attrs) -> tuple[int, int]:
    if attrs.axis is None:
        raise fail(name, "axis", "an axis (flattened take is not supported)", None)
    a = attrs.axis + data.ndim if attrs.axis < 0 else attrs.axis
    if not 0 <= a < data.ndim:
        raise fail(name, "axis", f"an axis of the rank-{data.ndim} data", attrs.axis)
    bd = attrs.batch_dims + indices.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    if not 0 <= bd <= min(a, indices.ndim):
        raise fail(name, "batch_dims", f"a value in [0, {min(a, indices.ndim)}]", attrs.batch_dims)
    if data.shape[:bd] != indices.shape[:bd]:
        raise fail(name, "indices", f"leading batch dimensions {list(data.shape[:bd])} (as data)",
                   list(indices.shape[:bd]))
    if data.shape[a] == 0:
        raise fail(name, "data", f"a non-empty axis {a}", data)
    return a, bd


def _take_rel(types, attrs):
    name = "take"
    data = tensor_arg(name, ("data", "indices"), types, 0)
    indices = tensor_arg(name, ("data", "indices"), types, 1)
    expect_dtype(name, "indices", indices, ("int32", "int64"))
    a, bd = _take_geometry(name, data, indices, attrs)
    return TensorType(data.shape[:a] + indices.shape[bd:] + data.shape[a + 1:], data.dtype)


def take_positions(indices: np.ndarray, size: int, mode: str) -> np.ndarray:
    """Indices mapped into [0, size) by ``mode``; "fast" refuses out-of-range ones (TFLite's GATHER does too)."""
    idx = np.asarray(indices, np.int64)
    if mode == "clip":
        return np.clip(idx, 0, size - 1)
    if mode == "wrap":
        return np.mod(idx, size)
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        bad = idx[(idx < 0) | (idx >= size)][0]
        raise ExecutionError(f"take: index {int(bad)} is out of range for an axis of size {size}")
    return idx


def _take_compute(args, attrs):
    x, indices = args
    a = attrs.axis + x.ndim if attrs.axis < 0 else attrs.axis
    bd = attrs.batch_dims + indices.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    pos = take_positions(indices, x.shape[a], attrs.mode)
    if bd == 0:
        return np.ascontiguousarray(np.take(x, pos, axis=a))
    batch = int(np.prod(x.shape[:bd], dtype=np.int64))
    xb = x.reshape((batch,) + x.shape[bd:])
    pb = pos.reshape((batch,) + pos.shape[bd:])
    parts = [np.take(xb[i], pb[i], axis=a - bd) for i in range(batch)]
    out_shape = x.shape[:a] + indices.shape[bd:] + x.shape[a + 1:]
    return np.ascontiguousarray(np.stack(parts).reshape(out_shape)) if parts else np.zeros(out_shape, x.dtype)


register_op("take", ("data", "indices"), attrs=TakeAttrs, rel=_take_rel, fusion=FusionKind.INJECTIVE,
            compute=_take_compute, doc="Gather slices of data along axis at indices (TFLite GATHER).")


# ----------------------------------------------------------------------------- depth_to_space / space_to_depth
@dataclass(frozen=True)
class SpaceDepthAttrs(Attrs):
    block_size: int = 1
    layout: str = "NCHW"
    mode: str = "DCR"  # depth_to_space only: TFLite's order is DCR


def _space_depth_rel(name: str):
    def rel(types, attrs):
        t = tensor_arg(name, ("data",), types, 0)
        if attrs.layout != "NHWC":
            raise fail(name, "layout", "'NHWC' (the only layout implemented)", repr(attrs.layout))
        if name == "nn.depth_to_space" and attrs.mode != "DCR":
            raise fail(name, "mode", "'DCR' (the only mode implemented)", repr(attrs.mode))
        if t.ndim != 4:
            raise fail(name, "data", "a 4-D NHWC tensor", t)
        bs = int(attrs.block_size)
        if bs <= 0:
            raise fail(name, "block_size", "a positive block size", attrs.block_size)
        n, h, w, c = t.shape
        if name == "nn.depth_to_space":
            if c % (bs * bs):
                raise fail(name, "data", f"channels divisible by block_size² = {bs * bs}", t)
            return TensorType((n, h * bs, w * bs, c // (bs * bs)), t.dtype)
        if h % bs or w % bs:
            raise fail(name, "data", f"height and width divisible by block_size {bs}", t)
        return TensorType((n, h // bs, w // bs, c * bs * bs), t.dtype)
    return rel


def depth_to_space_nhwc(x: np.ndarray, bs: int) -> np.ndarray:
    """out[n, y, x, c] = in[n, y // bs, x // bs, ((y % bs)·bs + x % bs)·C_out + c] (TFLite's DepthToSpace)."""
    n, h, w, c = x.shape
    co = c // (bs * bs)
    return np.ascontiguousarray(x.reshape(n, h, w, bs, bs, co).transpose(0, 1, 3, 2, 4, 5)
                                .reshape(n, h * bs, w * bs, co))


def space_to_depth_nhwc(x: np.ndarray, bs: int) -> np.ndarray:
    n, h, w, c = x.shape
    return np.ascontiguousarray(x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
                                .reshape(n, h // bs, w // bs, c * bs * bs))


register_op("nn.depth_to_space", ("data",), attrs=SpaceDepthAttrs, rel=_space_depth_rel("nn.depth_to_space"),
            fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: depth_to_space_nhwc(args[0], int(attrs.block_size)),
            doc="Move channel blocks into spatial blocks (NHWC, DCR order: TFLite DEPTH_TO_SPACE).")
register_op("nn.space_to_depth", ("data",), attrs=SpaceDepthAttrs, rel=_space_depth_rel("nn.space_to_depth"),
            fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: space_to_depth_nhwc(args[0], int(attrs.block_size)),
            doc="Move spatial blocks into channels (NHWC: TFLite SPACE_TO_DEPTH).")


# ------------------------------------------------------------------------------------------- argmax / argmin
@dataclass(frozen=True)
class ArgReduceAttrs(Attrs):
    axis: tuple | None = None
    keepdims: bool = False
    exclude: bool = False
    select_last_index: bool = False

    def __post_init__(self):
        Attrs.__post_init__(self)
        if isinstance(self.axis, int):
            object.__setattr__(self, "axis", (self.axis,))


def arg_reduce_axis(name: str, ndim: int, attrs) -> int:
    axes = reduce_axes(name, ndim, attrs)
    if len(axes) != 1:
        raise fail(name, "axis", "exactly one reduced axis", attrs.axis)
    return axes[0]


def _arg_rel(name: str):
    def rel(types, attrs):
        t = tensor_arg(name, ("data",), types, 0)
        a = arg_reduce_axis(name, t.ndim, attrs)
        if t.shape[a] == 0:
            raise fail(name, "data", f"a non-empty axis {a}", t)
        shape = tuple(1 if i == a else d for i, d in enumerate(t.shape) if attrs.keepdims or i != a)
        return TensorType(shape, "int32")
    return rel


def _arg_compute(name: str):
    def compute(args, attrs):
        (x,) = args
        a = arg_reduce_axis(name, x.ndim, attrs)
        xs = np.moveaxis(x, a, 0)
        best, idx = xs[0].copy(), np.zeros(xs.shape[1:], np.int32)
        with np.errstate(invalid="ignore"):
            for k in range(1, xs.shape[0]):  # TFLite's scan: a NaN never compares better
                v = xs[k]
                if name == "argmax":
                    better = v >= best if attrs.select_last_index else v > best
                else:
                    better = v <= best if attrs.select_last_index else v < best
                best = np.where(better, v, best)
                idx = np.where(better, np.int32(k), idx)
        return np.expand_dims(idx, a) if attrs.keepdims else idx
    return compute


for _name in ("argmax", "argmin"):
    register_op(_name, ("data",), attrs=ArgReduceAttrs, rel=_arg_rel(_name), fusion=FusionKind.COMM_REDUCE,
                compute=_arg_compute(_name), doc=f"Index (int32) of the {_name[3:]}imum along one axis; ties give "
                                                 "the first index (the last with select_last_index).")


# ------------------------------------------------------------------------------------------------ broadcast_to
@dataclass(frozen=True)
class BroadcastToAttrs(Attrs):
    shape: tuple = ()

    def __post_init__(self):
        Attrs.__post_init__(self)
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))


def _broadcast_to_rel(types, attrs):
    name = "broadcast_to"
    t = tensor_arg(name, ("data",), types, 0)
    shape = attrs.shape
    if len(shape) < t.ndim or any(d < 0 for d in shape):
        raise fail(name, "shape", f"a shape of rank ≥ {t.ndim} with non-negative sizes", shape)
    for d, s in zip(reversed(t.shape), reversed(shape)):
        if d not in (1, s):
            raise fail(name, "shape", f"a shape {t.shape} broadcasts to (numpy rules)", shape)
    return TensorType(shape, t.dtype)


register_op("broadcast_to", ("data",), attrs=BroadcastToAttrs, rel=_broadcast_to_rel, fusion=FusionKind.BROADCAST,
            compute=lambda args, attrs: np.ascontiguousarray(np.broadcast_to(args[0], attrs.shape)),
            doc="Repeat data along its size-1 (and new leading) axes to the given shape (numpy broadcasting).")
