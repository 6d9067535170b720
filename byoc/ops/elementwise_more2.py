"""MIRROR_PAD, TILE, comparisons, SELECT_V2, GATHER_ND and quantized ABS as IR ops (Relay spelling).

* ``nn.mirror_pad`` (TVM's MirrorPadAttrs: ``pad_width``, ``mode`` "REFLECT" / "SYMMETRIC"): LiteRT's
  GetInputDimension, which is numpy's reflect / symmetric padding for pads within TVM's limits (REFLECT pads
  < the axis size, SYMMETRIC ≤ it).
* ``tile`` (TVM's TileAttrs ``reps``): numpy ``tile``.
* ``equal``, ``not_equal``, ``less``, ``less_equal``, ``greater``, ``greater_equal``: broadcast, bool result.
* ``qnn.equal`` ... ``qnn.greater_equal`` (our extension; TVM has no quantized comparisons): LiteRT's int8/uint8
  ComparisonWithScaling — each operand (q − zp)·2^8 rescaled by its own scale as a multiplier below 1
  (``comparison_params``), then the integer comparison. Two different values can compare equal after the
  rescale, so this is not the raw comparison even for equal parameters.
* ``where`` (condition, x, y): numpy ``where`` with broadcasting (TFLite SELECT_V2).
* ``gather_nd`` (TVM layout: indices [M, Y...] index the first M axes of data; ``batch_dims`` 0).
* ``qnn.abs`` (our extension; TVM has none): LiteRT's int8/int16 ABS, |q − zp_in| either added to zp_out (equal
  scales) or rescaled by QuantizeMultiplier(float32(s_in/s_out)) first (``abs_params``), saturated.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ExecutionError
from ..ir.attrs import Attrs
from ..ir.types import TensorType
from ..quant.fixedpoint import mbqm, mbqm_smaller_than_one_exp
from ..quant.params import COMPARISON_LEFT_SHIFT, abs_params, comparison_params
from .registry import FusionKind, register_op
from .rel import broadcast_shapes, dtype_range, expect_dtype, expect_scalar_or_vector, fail, tensor_arg

__all__ = ["MirrorPadAttrs", "TileAttrs", "GatherNDAttrs", "COMPARISONS", "mirror_pad_source", "qnn_abs",
           "qnn_compare_scaled"]


def _scalar_int(v) -> int:
    return int(np.asarray(v).reshape(-1)[0])


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


# ----------------------------------------------------------------------------------------------- comparisons
COMPARISONS = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
               "greater": np.greater, "greater_equal": np.greater_equal}


def _compare_rel(name):
    def rel(types, attrs):
        a = tensor_arg(name, ("lhs", "rhs"), types, 0)
        b = tensor_arg(name, ("lhs", "rhs"), types, 1)
        if a.dtype != b.dtype:
            raise fail(name, "rhs", f"dtype {a.dtype} (same as lhs)", b.dtype)
        return TensorType(broadcast_shapes(name, a.shape, b.shape), "bool")
    return rel


def _compare_compute(fn):
    return lambda args, attrs: np.asarray(fn(args[0], args[1]), dtype=bool)


_QCMP_ARGS = ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point")


def _qnn_compare_rel(name):
    def rel(types, attrs):
        a = tensor_arg(name, _QCMP_ARGS, types, 0)
        b = tensor_arg(name, _QCMP_ARGS, types, 1)
        expect_dtype(name, "lhs", a, ("int8", "uint8"))
        if b.dtype != a.dtype:
            raise fail(name, "rhs", f"dtype {a.dtype} (same as lhs)", b.dtype)
        for i in range(2, 6):
            expect_scalar_or_vector(name, _QCMP_ARGS[i], types[i], 1)
        return TensorType(broadcast_shapes(name, a.shape, b.shape), "bool")
    return rel


def qnn_compare_scaled(q, scale, zero_point: int, op: str = "qnn.equal"):
    """One operand as LiteRT's ComparisonWithScaling sees it: ((q − zp)·2^8) rescaled by its scale."""
    m, shift = comparison_params(scale, op)
    v = (np.asarray(q, np.int64) - zero_point) << COMPARISON_LEFT_SHIFT
    return mbqm_smaller_than_one_exp(v, m, shift)


def _qnn_compare_compute(name, fn):
    def compute(args, attrs):
        a, b, sa, za, sb, zb = args
        return np.asarray(fn(qnn_compare_scaled(a, sa, _scalar_int(za), name),
                             qnn_compare_scaled(b, sb, _scalar_int(zb), name)), dtype=bool)
    return compute


for _name, _fn in COMPARISONS.items():
    register_op(_name, ("lhs", "rhs"), rel=_compare_rel(_name), fusion=FusionKind.BROADCAST,
                compute=_compare_compute(_fn), doc=f"Elementwise {_name} with numpy broadcasting (bool result).")
    register_op("qnn." + _name, _QCMP_ARGS, rel=_qnn_compare_rel("qnn." + _name), fusion=FusionKind.BROADCAST,
                compute=_qnn_compare_compute("qnn." + _name, _fn),
                doc=f"TFLite quantized {_name.upper()} (int8/uint8): both operands rescaled by their own scales "
                    "after a left shift of 8, then compared (bool result).")


# ------------------------------------------------------------------------------------------------------ where
def _where_rel(types, attrs):
    names = ("condition", "x", "y")
    c, x, y = (tensor_arg("where", names, types, i) for i in range(3))
    expect_dtype("where", "condition", c, "bool")
    if x.dtype != y.dtype:
        raise fail("where", "y", f"dtype {x.dtype} (same as x)", y.dtype)
    return TensorType(broadcast_shapes("where", broadcast_shapes("where", c.shape, x.shape), y.shape), x.dtype)


register_op("where", ("condition", "x", "y"), rel=_where_rel, fusion=FusionKind.BROADCAST,
            compute=lambda args, attrs: np.where(args[0], args[1], args[2]).astype(args[1].dtype),
            doc="Select x where condition holds, else y (numpy broadcasting of all three).")


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


# -------------------------------------------------------------------------------------------------------- abs
_UNARY_ARGS = ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point")


def _qnn_abs_rel(types, attrs):
    name = "qnn.abs"
    data = tensor_arg(name, _UNARY_ARGS, types, 0)
    expect_dtype(name, "data", data, ("int8", "int16"))
    for i in range(1, 5):
        expect_scalar_or_vector(name, _UNARY_ARGS[i], types[i], 1)
    return data


def qnn_abs(q: np.ndarray, s_in, zp_in: int, s_out, zp_out: int) -> np.ndarray:
    """LiteRT's AbsEvalQuantized."""
    rescale, m, shift = abs_params(s_in, s_out)
    v = np.abs(q.astype(np.int64) - zp_in)
    if rescale:
        v = mbqm(v, m, shift)
    lo, hi = dtype_range(q.dtype.name)
    return np.clip(v + zp_out, lo, hi).astype(q.dtype)


register_op("qnn.abs", _UNARY_ARGS, rel=_qnn_abs_rel, fusion=FusionKind.ELEMWISE,
            compute=lambda args, attrs: qnn_abs(args[0], args[1], _scalar_int(args[2]), args[3],
                                                _scalar_int(args[4])),
            doc="TFLite ABS (int8/int16): |q − zp_in|, rescaled when the scales differ, plus zp_out, saturated.")
