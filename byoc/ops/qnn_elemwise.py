"""Quantized binary ops, concatenation, mean and abs with TFLite reference-kernel arithmetic.

qnn.add / qnn.subtract: TFLite's left-shift-20 scheme (left shift 15 for int16, §3.18) (quant-semantics.md §3.4,
§3.6); qnn.mul: MUL with its
float32 multiplier (§3.5); qnn.concatenate: copy or LiteRT's float32 rescale (§3.14); qnn.mean: MEAN with 1/N
folded into the multiplier (§3.19); qnn.abs: LiteRT's int8/int16 ABS, |q − zp_in| added to zp_out (equal
scales) or rescaled by QuantizeMultiplier(float32(s_in/s_out)) first (``abs_params``), saturated. Multipliers come from ``byoc.quant.params``.

Per-channel scales (a vector on ``lhs_axis`` / ``rhs_axis``) are an extension of TFLite's per-tensor ops: the
operands are broadcast to the output shape and every multiplier is taken per channel of that output axis.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ExecutionError
from ..ir.attrs import Attrs
from ..ir.types import TensorType
from ..quant.fixedpoint import mbqm, rdbpot, rha, srdhm, wrap32
from ..quant.params import abs_params, add_params, concat_params, mean_params, mul_params, pot_add_shifts
from .reduce import ReduceAttrs, reduce_axes, reduced_shape
from .registry import FusionKind, register_op
from .rel import broadcast_shapes, dtype_range, expect_dtype, expect_scalar_or_vector, fail, tensor_arg, tuple_arg
from .transform_ops import concat_out_type

__all__ = ["BinaryQnnAttrs", "binary_channel_axis", "add_left_shift", "qnn_abs"]

_BINARY_ARGS = ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point", "output_scale",
                "output_zero_point")


@dataclass(frozen=True)
class BinaryQnnAttrs(Attrs):
    lhs_axis: int = -1
    rhs_axis: int = -1
    # "ONNX": onnxruntime's QLinearAdd / QLinearMul float32 arithmetic (per tensor); "TFLITE_POT": LiteRT's int16
    # ADD/SUB for power-of-two scales (each input rounded down to the output scale by a shift, then summed).
    rounding: str = "TFLITE"

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.rounding not in ("TFLITE", "ONNX", "TFLITE_POT"):
            from ..errors import IRError
            raise IRError(f"qnn binary op: unknown rounding {self.rounding!r}", hint="'TFLITE', 'ONNX' or 'TFLITE_POT'")


def _onnx_binary(name: str, args):
    """onnxruntime QLinearAdd / QLinearMul (byoc.quant.onnxrt); qnn.subtract has no ONNX counterpart."""
    from ..quant import onnxrt
    if any(np.asarray(args[i]).size > 1 for i in range(2, 8)):
        raise ExecutionError(f"{name} with rounding='ONNX' takes per-tensor scales and zero points only")
    fn = {"qnn.add": onnxrt.qlinear_add, "qnn.mul": onnxrt.qlinear_mul}.get(name)
    if fn is None:
        raise ExecutionError(f"{name} has no rounding='ONNX' semantics")
    sa, za, sb, zb, so, zo = (np.asarray(a).reshape(-1)[0] for a in args[2:8])
    return fn(args[0], sa, za, args[1], sb, zb, so, zo, args[0].dtype.name)


def _is_vector(t) -> bool:
    return isinstance(t, TensorType) and t.ndim == 1 and t.shape[0] > 1


def binary_channel_axis(name: str, lhs: TensorType, rhs: TensorType, out_ndim: int, types, attrs) -> int | None:
    """The output axis carrying per-channel parameters, or None when every parameter is per-tensor."""
    axes = []
    for side, t, ax, idx in (("lhs", lhs, attrs.lhs_axis, (2, 3)), ("rhs", rhs, attrs.rhs_axis, (4, 5))):
        if any(_is_vector(types[i]) for i in idx):
            a = ax + t.ndim if ax < 0 else ax
            if not 0 <= a < t.ndim:
                raise fail(name, f"{side}_axis", f"an axis of the rank-{t.ndim} {side}", ax)
            for i in idx:
                expect_scalar_or_vector(name, _BINARY_ARGS[i], types[i], t.shape[a])
            axes.append(a + out_ndim - t.ndim)
    if len(set(axes)) > 1:
        raise fail(name, "rhs_axis", f"the same output axis as lhs_axis ({axes[0]})", axes[1])
    return axes[0] if axes else None


def _binary_rel(name: str, dtypes):
    def rel(types, attrs):
        lhs = tensor_arg(name, _BINARY_ARGS, types, 0)
        rhs = tensor_arg(name, _BINARY_ARGS, types, 1)
        expect_dtype(name, "lhs", lhs, dtypes)
        if rhs.dtype != lhs.dtype:
            raise fail(name, "rhs", f"dtype {lhs.dtype} (same as lhs)", rhs.dtype)
        shape = broadcast_shapes(name, lhs.shape, rhs.shape)
        for i in range(2, 8):
            expect_scalar_or_vector(name, _BINARY_ARGS[i], types[i])
        for i in (6, 7):
            expect_scalar_or_vector(name, _BINARY_ARGS[i], types[i], 1)
        binary_channel_axis(name, lhs, rhs, len(shape), types, attrs)
        return TensorType(shape, lhs.dtype)
    return rel


def _on_axis(v, ndim: int, axis: int | None) -> np.ndarray:
    v = np.asarray(v).reshape(-1)
    if v.size == 1 or axis is None:
        return v.reshape(()).astype(v.dtype)
    shape = [1] * ndim
    shape[axis] = v.size
    return v.reshape(shape)


def _prepare_binary(args, attrs):
    lhs, rhs = args[0], args[1]
    shape = np.broadcast_shapes(lhs.shape, rhs.shape)
    n = len(shape)
    axis = None
    for t, ax, zp, s in ((lhs, attrs.lhs_axis, args[3], args[2]), (rhs, attrs.rhs_axis, args[5], args[4])):
        if np.asarray(s).size > 1 or np.asarray(zp).size > 1:
            axis = (ax + t.ndim if ax < 0 else ax) + n - t.ndim
    a = np.broadcast_to(lhs.astype(np.int64), shape) - _on_axis(args[3], n, axis).astype(np.int64)
    b = np.broadcast_to(rhs.astype(np.int64), shape) - _on_axis(args[5], n, axis).astype(np.int64)
    zp_out = int(np.asarray(args[7]).reshape(-1)[0])
    return a, b, axis, n, zp_out


def _add_sub(name: str, sign: int):
    def compute(args, attrs):
        if attrs.rounding == "ONNX":
            return _onnx_binary(name, args)
        if attrs.rounding == "TFLITE_POT":
            return _pot_add_sub(name, sign, args)
        a, b, axis, n, zp_out = _prepare_binary(args, attrs)
        p = add_params(args[2], args[4], args[6], add_left_shift(args[0].dtype.name), op=name)
        m1, e1 = _on_axis(p.lhs_multiplier, n, axis), _on_axis(p.lhs_shift, n, axis)
        m2, e2 = _on_axis(p.rhs_multiplier, n, axis), _on_axis(p.rhs_shift, n, axis)
        mo, eo = _on_axis(p.output_multiplier, n, axis), _on_axis(p.output_shift, n, axis)
        sa = rdbpot(srdhm(wrap32(a << p.left_shift), m1), -e1)
        sb = rdbpot(srdhm(wrap32(b << p.left_shift), m2), -e2)
        raw = rdbpot(srdhm(wrap32(sa + sign * sb), mo), -eo) + zp_out
        lo, hi = dtype_range(args[0].dtype.name)
        return np.clip(raw, lo, hi).astype(args[0].dtype)
    return compute


def _pot_add_sub(name: str, sign: int, args) -> np.ndarray:
    """LiteRT's int16 power-of-two ADD/SUB (zero points 0): RDBPOT(q1, −sh1) ± RDBPOT(q2, −sh2), saturated."""
    if args[0].dtype != np.int16 or any(np.asarray(args[i]).size > 1 or np.asarray(args[i]).reshape(-1)[0] != 0
                                        for i in (3, 5, 7)):
        raise ExecutionError(f"{name} with rounding='TFLITE_POT' takes int16 data with zero points 0")
    sh1, sh2 = pot_add_shifts(args[2], args[4], args[6], name)
    raw = rdbpot(args[0].astype(np.int64), -sh1) + sign * rdbpot(args[1].astype(np.int64), -sh2)
    return np.clip(raw, -32768, 32767).astype(np.int16)


def add_left_shift(dtype: str) -> int:
    """ADD/SUB's left shift: 20 for 8-bit data, 15 on LiteRT's general int16 path (add.cc Prepare)."""
    return 15 if dtype == "int16" else 20


def _mul_compute(args, attrs):
    if attrs.rounding == "ONNX":
        return _onnx_binary("qnn.mul", args)
    if attrs.rounding == "TFLITE_POT":
        raise ExecutionError("qnn.mul has no rounding='TFLITE_POT' semantics (an int16 ADD/SUB path)")
    a, b, axis, n, zp_out = _prepare_binary(args, attrs)
    m, e = mul_params(args[2], args[4], args[6])
    raw = mbqm(wrap32(a * b), _on_axis(m, n, axis), _on_axis(e, n, axis)) + zp_out
    lo, hi = dtype_range(args[0].dtype.name)
    return np.clip(raw, lo, hi).astype(args[0].dtype)


register_op("qnn.add", _BINARY_ARGS, attrs=BinaryQnnAttrs,
            rel=_binary_rel("qnn.add", ("int8", "uint8", "int16")), fusion=FusionKind.BROADCAST,
            compute=_add_sub("qnn.add", 1),
            doc="TFLite ADD: inputs scaled by 2^20 (int16: 2^15, LiteRT's general int16 path) and rescaled with "
                "three fixed-point multipliers; saturating.")
register_op("qnn.subtract", _BINARY_ARGS, attrs=BinaryQnnAttrs,
            rel=_binary_rel("qnn.subtract", ("int8", "uint8", "int16")), fusion=FusionKind.BROADCAST,
            compute=_add_sub("qnn.subtract", -1), doc="TFLite SUB: as qnn.add with the difference.")
register_op("qnn.mul", _BINARY_ARGS, attrs=BinaryQnnAttrs, rel=_binary_rel("qnn.mul", ("int8", "uint8", "int16")),
            fusion=FusionKind.BROADCAST, compute=_mul_compute,
            doc="TFLite MUL: MBQM((q1 − zp1)(q2 − zp2)) with the float32 multiplier s1·s2/s_out.")


# ---------------------------------------------------------------------------------------------- concatenate
@dataclass(frozen=True)
class QnnConcatenateAttrs(Attrs):
    axis: int = 0


_CONCAT_ARGS = ("data", "input_scales", "input_zero_points", "output_scale", "output_zero_point")


def _concat_rel(types, attrs):
    name = "qnn.concatenate"
    data = tuple_arg(name, "data", types[0])
    out = concat_out_type(name, data.fields, attrs.axis)
    expect_dtype(name, "data", out, ("int8", "uint8", "int16", "int32"))
    for i in (1, 2):
        tup = tuple_arg(name, _CONCAT_ARGS[i], types[i])
        if len(tup.fields) != len(data.fields):
            raise fail(name, _CONCAT_ARGS[i], f"a tuple of {len(data.fields)} scalars (one per input)",
                       f"{len(tup.fields)} fields")
        for j, f in enumerate(tup.fields):
            expect_scalar_or_vector(name, f"{_CONCAT_ARGS[i]}[{j}]", f, 1)
    for i in (3, 4):
        expect_scalar_or_vector(name, _CONCAT_ARGS[i], types[i], 1)
    return out


def _concat_compute(args, attrs):
    data, scales, zps, s_out, zp_out = args
    lo, hi = dtype_range(data[0].dtype.name)
    zo = int(np.asarray(zp_out).reshape(-1)[0])
    parts = []
    for x, s, zp in zip(data, scales, zps):
        p = concat_params(s, zp, s_out, zo)
        if p is None:
            parts.append(x)
            continue
        scale, bias = p
        with np.errstate(all="ignore"):
            v = (x.astype(np.float32) * scale).astype(np.float32) + bias
        r = np.clip(rha(v.astype(np.float32)), -(2.0**31), 2.0**31 - 1).astype(np.int64) + zo
        parts.append(np.clip(r, lo, hi).astype(x.dtype))
    return np.concatenate(parts, axis=attrs.axis)


register_op("qnn.concatenate", _CONCAT_ARGS, attrs=QnnConcatenateAttrs, rel=_concat_rel,
            fusion=FusionKind.INJECTIVE, compute=_concat_compute,
            doc="Concatenate; inputs with the output's (scale, zp) are copied, others rescaled in float32 as "
                "LiteRT's ConcatenationWithScaling.")


# --------------------------------------------------------------------------------------------------- mean
_MEAN_ARGS = ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point")


def _mean_rel(types, attrs):
    name = "qnn.mean"
    data = tensor_arg(name, _MEAN_ARGS, types, 0)
    expect_dtype(name, "data", data, ("int8", "uint8", "int16"))
    for i in range(1, 5):
        expect_scalar_or_vector(name, _MEAN_ARGS[i], types[i], 1)
    axes = reduce_axes(name, data.ndim, attrs)
    if any(data.shape[a] == 0 for a in axes):
        raise fail(name, "data", "non-empty reduced axes", data)
    return TensorType(reduced_shape(data.shape, axes, attrs.keepdims), data.dtype)


def _mean_compute(args, attrs):
    x, s_in, zp_in, s_out, zp_out = args
    axes = reduce_axes("qnn.mean", x.ndim, attrs)
    n = 1
    for a in axes:
        n *= x.shape[a]
    if n == 0:
        raise ExecutionError("qnn.mean: reducing over an empty axis")
    m, e = mean_params(s_in, s_out, n)
    total = wrap32(np.sum(x.astype(np.int64), axis=axes, keepdims=attrs.keepdims))
    shifted = wrap32(total - int(np.asarray(zp_in).reshape(-1)[0]) * n)
    raw = mbqm(shifted, m, e) + int(np.asarray(zp_out).reshape(-1)[0])
    lo, hi = dtype_range(x.dtype.name)
    return np.asarray(np.clip(raw, lo, hi)).astype(x.dtype)


register_op("qnn.mean", _MEAN_ARGS, attrs=ReduceAttrs, rel=_mean_rel, fusion=FusionKind.COMM_REDUCE,
            compute=_mean_compute,
            doc="TFLite MEAN: MBQM(Σq − zp_in·N, M/N, shift) with 1/N folded into the multiplier.")


# -------------------------------------------------------------------------------------------------------- abs
def _abs_scalar_int(v) -> int:
    return int(np.asarray(v).reshape(-1)[0])


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
            compute=lambda args, attrs: qnn_abs(args[0], args[1], _abs_scalar_int(args[2]), args[3],
                                                _abs_scalar_int(args[4])),
            doc="TFLite ABS (int8/int16): |q − zp_in|, rescaled when the scales differ, plus zp_out, saturated.")
