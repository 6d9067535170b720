"""Lowering of the NPU's data-movement ops: unit-stride strided_slice, split, nn.pad and nn.depth_to_space.

Each becomes one or more PPU COPY layers (clamp to the dtype's full range: the identity), which is how Vela and
Ethos-N run them (DMA/memcpy or PLE passthrough). A copy layer reads a window of its input at ``in_origin`` of the
input's height×width×channels view (rows/columns before or past the edge are filled with ``pad_value`` by the
IFM DMA, which is how a standalone pad works) and writes a ``block``-shaped result at ``out_origin`` of its OFM.

* strided_slice / split piece: one window of the input, written as the whole output.
* nn.pad (height/width only): the output read through a window starting at (−top, −left).
* nn.depth_to_space (DCR): with the output seen as (N·H, b·W, b·C'), input channel slice i (b·C' channels)
  is the column block i: ``block_size`` copies, no gather.
"""
from __future__ import annotations

import numpy as np

from byoc.ir.expr import Call, Constant
from byoc.ir.types import TensorType, TupleType
from byoc.ops.transform_ops import split_indices, strided_slice_indices

from .lower import PpuLayer, _BareBody, _hwc, _Lowerer, _tensor_type

__all__ = ["hwc_window", "MOVE_OPS"]

_COPY_DTYPES = ("int8", "uint8", "int16")   # the npu table takes 8-bit copies; ethos-u 16-bit slices too


def hwc_window(shape: tuple[int, ...], starts: tuple[int, ...], sizes: tuple[int, ...]
               ) -> tuple[tuple[int, int, int], tuple[int, int, int]] | str:
    """(origin, block) in the height×width×channels view of an N-D box (starts, sizes) of a rank ≤ 4 tensor;
    or why the box is not one window there. 4-D: batch and height fold into the rows, so a box that takes
    part of the height of more than one batch is not contiguous in rows."""
    rank = len(shape)
    if rank == 0 or rank > 4:
        return f"rank-{rank} tensors have no height×width×channels window"
    if any(s <= 0 for s in sizes):
        return f"the window {tuple(sizes)} is empty"
    if rank == 4:
        h = shape[1]
        if sizes[0] > 1 and sizes[1] != h:
            return (f"it takes rows {starts[1]}..{starts[1] + sizes[1] - 1} of {sizes[0]} batches: the NPU folds "
                    f"batch into the rows, so that is not one block")
        origin = (starts[0] * h + starts[1], starts[2], starts[3])
        block = (sizes[0] * sizes[1], sizes[2], sizes[3])
    elif rank == 3:
        origin, block = (starts[0], starts[1], starts[2]), (sizes[0], sizes[1], sizes[2])
    elif rank == 2:
        origin, block = (starts[0], 0, starts[1]), (sizes[0], 1, sizes[1])
    else:
        origin, block = (0, 0, starts[0]), (1, 1, sizes[0])
    return origin, block


def _copy_dtype(body: _BareBody, t: TensorType) -> None:
    if t.dtype not in _COPY_DTYPES:
        raise body.fail(f"{t.dtype} tensors are not supported", hint="the NPU copies int8, uint8 and int16 tensors")


def _full_range(dtype: str) -> dict:
    info = np.iinfo(dtype)
    return dict(act_min=int(info.min), act_max=int(info.max))


def _in_place_window(low: _Lowerer, src: int, in_shape: tuple[int, ...], starts, sizes) -> int | None:
    """The channel offset when the slice is a channel window of a computed map (its whole height and width):
    its readers load it in place, as regor reads a strided slice through its IFM's offset; else None."""
    win = hwc_window(tuple(in_shape), tuple(starts), tuple(sizes))
    t = low.tensors[src]
    if isinstance(win, str) or t.data is not None or len(in_shape) != 4 or in_shape[0] != 1:
        return None
    (y0, x0, c0), (h, w, c) = win
    if (y0, x0) != (0, 0) or (h, w) != tuple(t.hwc[:2]) or c == t.hwc[2]:
        return None
    return c0


def _window_copy(low: _Lowerer, body: _BareBody, src: int, in_shape: tuple[int, ...], starts, sizes, ofm: int,
                 name: str) -> None:
    win = hwc_window(tuple(in_shape), tuple(starts), tuple(sizes))
    if isinstance(win, str):
        raise body.fail(f"slicing {tuple(sizes)} at {tuple(starts)} of {tuple(in_shape)}: {win}",
                        hint="the NPU copies one block of a tensor's height×width×channels view")
    origin, block = win
    src = low.contiguous(src)
    dtype = low.tensors[src].dtype
    low.layers.append(PpuLayer(name, body.comp, "copy", (src,), ofm, _full_range(dtype), in_origin=origin,
                               block=block))


def _strided_slice(low: _Lowerer, call: Call) -> None:
    body = _BareBody(call, low)
    in_t, out_t = _tensor_type(call.args[0]), _tensor_type(call)
    _copy_dtype(body, in_t)
    slices = strided_slice_indices(tuple(in_t.shape), call.attrs)
    starts = []
    for k, (sl, dim) in enumerate(zip(slices, in_t.shape)):
        start, _, step = sl.indices(dim)
        if step != 1:
            raise body.fail(f"stride {step} on axis {k} is not supported", hint="the NPU slices with unit strides")
        starts.append(start)
    src = body.tensor(call.args[0], "data")
    c0 = _in_place_window(low, src, tuple(in_t.shape), starts, tuple(out_t.shape))
    if c0 is not None:
        low.value[id(call)] = low.window(src, body.name, out_t, c0)
        return
    ofm = low.out_tensor(call, body.name)
    _window_copy(low, body, src, tuple(in_t.shape), starts, tuple(out_t.shape), ofm, body.name)


def _split(low: _Lowerer, call: Call) -> None:
    body = _BareBody(call, low)
    in_t = _tensor_type(call.args[0])
    _copy_dtype(body, in_t)
    out_tt = call.checked_type
    if not isinstance(out_tt, TupleType):
        raise body.fail(f"expected a tuple type, found {out_tt}")
    axis = call.attrs.axis % len(in_t.shape)
    bounds = [0] + split_indices(in_t.shape[axis], call.attrs.indices_or_sections) + [in_t.shape[axis]]
    src = body.tensor(call.args[0], "data")
    tids = []
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        name = f"{body.name}/{i}"
        starts = [0] * len(in_t.shape)
        starts[axis] = lo
        c0 = _in_place_window(low, src, tuple(in_t.shape), starts, tuple(out_tt.fields[i].shape))
        if c0 is not None:
            tids.append(low.window(src, name, out_tt.fields[i], c0))
            continue
        tid = low.new_tensor(name, out_tt.fields[i])
        _window_copy(low, body, src, tuple(in_t.shape), starts, tuple(out_tt.fields[i].shape), tid, name)
        tids.append(tid)
    low.tuple_values[id(call)] = tids


def pad_rows_cols(shape: tuple[int, ...], pad_width) -> tuple[int, int, int, int] | str:
    """(top, left, bottom, right) of a pad in the height×width×channels view, or why it is not one there."""
    rank = len(shape)
    pw = [tuple(int(v) for v in p) for p in pad_width]
    if rank == 0 or rank > 4 or len(pw) != rank:
        return f"rank-{rank} tensors are not padded on the NPU"
    # which IR axes are the view's rows and columns
    axes = {4: (1, 2), 3: (0, 1), 2: (0, None), 1: (None, None)}[rank]
    others = [k for k in range(rank) if k not in axes]
    if any(pw[k] != (0, 0) for k in others):
        return f"it pads axes other than height and width ({pw})"
    if rank == 4 and shape[0] != 1 and pw[1] != (0, 0):
        return f"it pads the height of {shape[0]} batches, which interleave in the NPU's batch×height rows"
    top, bottom = pw[axes[0]] if axes[0] is not None else (0, 0)
    left, right = pw[axes[1]] if axes[1] is not None else (0, 0)
    return top, left, bottom, right


def _pad(low: _Lowerer, call: Call) -> None:
    body = _BareBody(call, low)
    in_t, out_t = _tensor_type(call.args[0]), _tensor_type(call)
    _copy_dtype(body, in_t)
    if call.attrs.pad_mode != "constant":
        raise body.fail(f"pad_mode {call.attrs.pad_mode!r} is not supported", hint="constant padding only")
    if not isinstance(call.args[1], Constant):
        raise body.fail("the pad value must be a constant")
    pv = np.asarray(call.args[1].data).reshape(-1)
    info = np.iinfo(in_t.dtype)
    if pv.size != 1 or not info.min <= int(pv[0]) <= info.max:
        raise body.fail(f"pad value {pv.tolist()} is not one {in_t.dtype} value")
    sides = pad_rows_cols(tuple(in_t.shape), call.attrs.pad_width)
    if isinstance(sides, str):
        raise body.fail(sides, hint="the NPU pads height and width (batch 1) while copying")
    top, left, _, _ = sides
    src = body.tensor(call.args[0], "data")
    ofm = low.out_tensor(call, body.name)
    params = dict(_full_range(in_t.dtype), pad_value=int(pv[0]))
    low.layers.append(PpuLayer(body.name, body.comp, "copy", (src,), ofm, params, in_origin=(-top, -left, 0),
                               block=_hwc(tuple(out_t.shape), body.name)))


def _depth_to_space(low: _Lowerer, call: Call) -> None:
    body = _BareBody(call, low)
    in_t = _tensor_type(call.args[0])
    _copy_dtype(body, in_t)
    a = call.attrs
    if a.layout != "NHWC" or a.mode != "DCR" or len(in_t.shape) != 4:
        raise body.fail(f"layout {a.layout!r}, mode {a.mode!r}, rank {len(in_t.shape)} is not supported",
                        hint="the NPU runs NHWC depth_to_space in DCR order (TFLite's)")
    b = int(a.block_size)
    n, h, w, c = in_t.shape
    co = c // (b * b)
    src = body.tensor(call.args[0], "data")
    ofm = low.out_tensor(call, body.name)
    view = low.view_as(ofm, (n * h, b * w, b * co))
    for i in range(b):
        low.layers.append(PpuLayer(f"{body.name}/{i}", body.comp, "copy", (src,), view, _full_range(in_t.dtype),
                                   in_origin=(0, 0, i * b * co), block=(n * h, w, b * co), out_origin=(0, i * w, 0)))


MOVE_OPS = {"strided_slice": _strided_slice, "split": _split, "nn.pad": _pad, "nn.depth_to_space": _depth_to_space}
