"""Quantized activations with TFLite reference-kernel arithmetic (quant-semantics.md §3.8-3.11).

qnn.softmax: gemmlowp fixed-point exp / reciprocal (int8 → int8 or int16, uint8 → uint8 or int16);
``rounding="ONNX"`` (int8/uint8 → same type) is onnxruntime's QLinearSoftmax: a float32 exp table of
(q − row max)·scale, a float32 row sum in element order, quotient rounded in double
(``byoc.quant.onnxrt.qlinear_softmax``).
qnn.sigmoid / qnn.tanh: ``rounding="TFLITE"`` is LiteRT's 256-entry float32 table (int8, uint8);
``rounding="TFLM"`` is TFLite-Micro's fixed-point reference_integer_ops::Logistic / Tanh (int8), which assumes
the standard output parameters (1/256, −128 for sigmoid; 1/128, 0 for tanh) and never reads them; on int16 data
(a power-of-two input scale, Q0.15 output) it is the int16 kernel's interpolated table, as TFLite Micro's LSTM
gates use it; ``rounding="GEMMLOWP"`` (int16 only) is LiteRT's LSTM gates: gemmlowp's fixed-point logistic / tanh
on int16 (``byoc.quant.int16_activation``).
qnn.hardswish: the 16-bit fixed-point HARD_SWISH path. qnn.leaky_relu: LEAKY_RELU with two multipliers.
``rounding="ONNX"`` (qnn.sigmoid, qnn.leaky_relu; int8/uint8) is onnxruntime's QLinearSigmoid / QLinearLeakyRelu:
a 256-entry table of QuantizeLinear(f(DequantizeLinear(q))) in float32 (``byoc.quant.onnxrt.qlinear_lookup_table``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ExecutionError, IRError
from ..ir.attrs import Attrs
from ..ir.types import TensorType
from ..quant import gemmlowp, onnxrt
from ..quant.fixedpoint import (mbqm, mbqm_greater_than_one, rdbpot, saturating_left_shift, srdhm, srdhm16, tdiv,
                                wrap16, wrap32)
from ..quant.params import (fixed_point_activation_params, hardswish_params, leaky_relu_params, lut_for,
                            softmax_params)
from .registry import FusionKind, register_op
from .rel import dtype_range, expect_dtype, expect_scalar_or_vector, fail, tensor_arg

__all__ = ["QnnSoftmaxAttrs", "QnnLutAttrs", "QnnLeakyReluAttrs", "softmax_rows", "softmax_rows_fixed",
           "onnx_softmax_scales",
           "SOFTMAX_ROUNDING"]

_ACT_ARGS = ("data", "scale", "zero_point", "output_scale", "output_zero_point")
_UNARY_ARGS = ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point")


def _unary_operands(name: str, types, arg_names) -> TensorType:
    data = tensor_arg(name, arg_names, types, 0)
    for i in range(1, 5):
        expect_scalar_or_vector(name, arg_names[i], types[i], 1)
    return data


def _scalar_int(v) -> int:
    return int(np.asarray(v).reshape(-1)[0])


# ------------------------------------------------------------------------------------------------- softmax
SOFTMAX_ROUNDING = ("TFLITE", "ONNX")


@dataclass(frozen=True)
class QnnSoftmaxAttrs(Attrs):
    axis: int = -1
    beta: float = 1.0
    out_dtype: str = ""
    rounding: str = "TFLITE"  # "ONNX": onnxruntime's QLinearSoftmax (int8/uint8, beta 1, same output type)

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.rounding not in SOFTMAX_ROUNDING:
            raise IRError(f"unknown rounding {self.rounding!r} for qnn.softmax",
                          hint="TFLITE (LiteRT's fixed-point SOFTMAX) or ONNX (onnxruntime's QLinearSoftmax)")


_SOFTMAX_OUT = {"int8": ("int8", "int16"), "uint8": ("uint8", "int16")}


def _softmax_rel(types, attrs):
    name = "qnn.softmax"
    data = _unary_operands(name, types, _ACT_ARGS)
    expect_dtype(name, "data", data, tuple(_SOFTMAX_OUT))
    if data.ndim == 0:
        raise fail(name, "data", "a tensor of rank ≥ 1", data)
    a = attrs.axis + data.ndim if attrs.axis < 0 else attrs.axis
    if not 0 <= a < data.ndim:
        raise fail(name, "axis", f"an axis of a rank-{data.ndim} tensor", attrs.axis)
    out = attrs.out_dtype or data.dtype
    if attrs.rounding == "ONNX":
        # QLinearSoftmax reads and writes one 8-bit type and has no beta; an empty row has no maximum.
        if data.shape[a] == 0:
            raise fail(name, "data", f"a non-empty axis {attrs.axis} with rounding ONNX", data)
        if out != data.dtype:
            raise fail(name, "out_dtype", f"{data.dtype} (the input type) with rounding ONNX", out)
        if attrs.beta != 1.0:
            raise fail(name, "beta", "1.0 with rounding ONNX", attrs.beta)
    if out not in _SOFTMAX_OUT[data.dtype]:
        raise fail(name, "out_dtype", " or ".join(_SOFTMAX_OUT[data.dtype]) + f" for {data.dtype} input", out)
    return TensorType(data.shape, out)


def softmax_rows(q: np.ndarray, input_scale, beta: float, out_dtype: str) -> np.ndarray:
    """TFLite's reference integer softmax over the last axis of ``q`` (any leading shape)."""
    return softmax_rows_fixed(q, softmax_params(input_scale, beta), out_dtype)


def softmax_rows_fixed(q: np.ndarray, p, out_dtype: str) -> np.ndarray:
    """``softmax_rows`` from its integer parameters (``SoftmaxParams``: what an NPU command carries)."""
    x = q.astype(np.int64)
    diff = x - x.max(axis=-1, keepdims=True)
    valid = diff >= p.diff_min
    scaled = mbqm_greater_than_one(diff, p.input_multiplier, p.input_left_shift)
    exps = gemmlowp.exp_on_negative_values(scaled, 5)
    # Rescale<12> from Q0.31 to Q12.19 is a rounding shift by 12; the accumulator adds wrap.
    sum_of_exps = wrap32(np.where(valid, rdbpot(exps, 12), 0).sum(axis=-1, keepdims=True))
    recip, bits_over_unit = gemmlowp.get_reciprocal(sum_of_exps, 12)
    out_bits = np.dtype(out_dtype).itemsize * 8
    exponent = bits_over_unit + 31 - out_bits
    if np.any((exponent < 0) | (exponent > 31)):
        raise ExecutionError("qnn.softmax: the sum of exponentials is out of the kernel's range",
                             hint="TFLite CHECK-fails here too (rows too long for this output type)")
    lo, hi = dtype_range(out_dtype)
    res = np.clip(rdbpot(srdhm(recip, exps), exponent) + lo, lo, hi)
    return np.where(valid, res, lo).astype(out_dtype)


def onnx_softmax_scales(x_scale, y_scale) -> tuple[float, float]:
    """The (input, output) scales of a rounding="ONNX" softmax as the kernel reads them, refused when its table
    or output multiplier would not be finite (onnxruntime's kernel then computes NaN or converts inf to int)."""
    xs, ys = (float(np.float32(np.asarray(v).reshape(-1)[0])) for v in (x_scale, y_scale))
    if not (np.isfinite(xs) and xs > 0):
        raise ExecutionError(f"qnn.softmax (rounding ONNX): input scale {xs!r} must be positive and finite",
                             hint="QLinearSoftmax divides its table's shift by the input scale")
    if not np.isfinite(onnxrt.qlinear_softmax_output_scale(ys)):
        raise ExecutionError(f"qnn.softmax (rounding ONNX): output scale {ys!r} has no finite float32 reciprocal",
                             hint="QLinearSoftmax multiplies by floor(1/output_scale)")
    return xs, ys


def _softmax_compute(args, attrs):
    x, scale = args[0], args[1]
    if attrs.rounding == "ONNX":
        xs, ys = onnx_softmax_scales(scale, args[3])
        return onnxrt.qlinear_softmax(x, xs, ys, _scalar_int(args[4]), attrs.axis)
    moved = np.moveaxis(x, attrs.axis, -1)
    out = softmax_rows(moved, scale, attrs.beta, attrs.out_dtype or x.dtype.name)
    return np.ascontiguousarray(np.moveaxis(out, -1, attrs.axis))


register_op("qnn.softmax", _ACT_ARGS, attrs=QnnSoftmaxAttrs, rel=_softmax_rel, fusion=FusionKind.OPAQUE,
            compute=_softmax_compute,
            doc="TFLite SOFTMAX (REF): gemmlowp fixed-point exp and reciprocal; the output parameters are implied "
                "(1/256 with zp −128 for int8, 0 for uint8; 1/65536 with zp −32768 for int16). rounding=ONNX: "
                "onnxruntime's QLinearSoftmax (float32 exp table and row sum, uses the output parameters).")


# ------------------------------------------------------------------------------------------- sigmoid / tanh
_LUT_ROUNDING = ("TFLITE", "TFLM", "ONNX", "GEMMLOWP")


@dataclass(frozen=True)
class QnnLutAttrs(Attrs):
    rounding: str = "TFLITE"

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.rounding not in _LUT_ROUNDING:
            raise IRError(f"unknown rounding {self.rounding!r} for qnn.sigmoid/qnn.tanh",
                          hint="TFLITE (LiteRT's float LUT), TFLM (TFLite-Micro's fixed point; int16: its "
                               "interpolated table), ONNX (onnxruntime's QLinearSigmoid table) or GEMMLOWP "
                               "(int16: LiteRT's LSTM gates, gemmlowp's fixed point)")


def _lut_rel(name):
    def rel(types, attrs):
        data = _unary_operands(name, types, _ACT_ARGS)
        if attrs.rounding == "ONNX" and name != "qnn.sigmoid":
            raise fail(name, "rounding", "TFLITE or TFLM (onnxruntime has no quantized tanh kernel)", "ONNX")
        allowed = ("int8",) if attrs.rounding == "TFLM" else ("int8", "uint8")
        if attrs.rounding == "TFLM":  # int16: the LSTM gates' interpolated table (byoc.quant.int16_activation)
            allowed = ("int8", "int16")
        if attrs.rounding == "GEMMLOWP":
            allowed = ("int16",)
        if attrs.rounding == "ONNX":  # onnxruntime's float path on 16-bit QDQ tensors, tabulated (65,536 values)
            allowed = ("int8", "uint8", "int16", "uint16")
        expect_dtype(name, "data", data, allowed)
        return data
    return rel


def _fixed_point_activation(kind: str, q: np.ndarray, scale, zero_point) -> np.ndarray:
    p = fixed_point_activation_params(kind, scale)
    v = q.astype(np.int64) - _scalar_int(zero_point)
    q4 = mbqm(v, p.input_multiplier, p.input_left_shift)
    if kind == "sigmoid":
        r = rdbpot(gemmlowp.logistic(q4, 4), 31 - 8) - 128
    else:
        r = rdbpot(gemmlowp.tanh(q4, 4), 31 - 7)
    r = np.clip(r, -128, 127)
    r = np.where(v <= -p.input_range_radius, -128, np.where(v >= p.input_range_radius, 127, r))
    return r.astype(np.int8)


def int16_gate_scale_log2(kind: str, rounding: str, s_in, zp_in, s_out, zp_out) -> int:
    """log2 of the input scale of an int16 sigmoid/tanh (TFLM / GEMMLOWP): a power of two with zero point 0,
    read into an output of 2^-15 with zero point 0 (the kernels never read the output parameters)."""
    from ..quant.params import checked_log2
    name = f"qnn.{kind}"
    if _scalar_int(zp_in) != 0 or _scalar_int(zp_out) != 0:
        raise ExecutionError(f"{name} (int16, rounding {rounding}) needs zero points 0, found "
                             f"{_scalar_int(zp_in)} and {_scalar_int(zp_out)}")
    s_o = float(np.asarray(s_out, dtype=np.float32).reshape(-1)[0])
    if s_o != 2.0 ** -15:
        raise ExecutionError(f"{name} (int16, rounding {rounding}) writes Q0.15: the output scale must be 2^-15, "
                             f"found {s_o!r}")
    e, exact = checked_log2(np.asarray(s_in, dtype=np.float32).reshape(-1)[0])
    lo = -15 if rounding == "GEMMLOWP" else -30
    if not exact or not lo <= e <= -9:
        raise ExecutionError(f"{name} (int16, rounding {rounding}) needs a power-of-two input scale between "
                             f"2^{lo} and 2^-9, found {float(np.asarray(s_in).reshape(-1)[0])!r}")
    return e


def _int16_gate(kind: str, x, args, rounding: str) -> np.ndarray:
    from ..quant import int16_activation as a16
    e = int16_gate_scale_log2(kind, rounding, *args[1:])
    if rounding == "GEMMLOWP":
        fn = a16.gemmlowp_sigmoid16 if kind == "sigmoid" else a16.gemmlowp_tanh16
        return fn(x, 15 + e).astype(np.int16)
    fn = a16.tflm_sigmoid16 if kind == "sigmoid" else a16.tflm_tanh16
    return fn(x, e).astype(np.int16)


def _lut_compute(kind: str):
    def compute(args, attrs):
        x, s_in, zp_in, s_out, zp_out = args
        if x.dtype == np.int16 and attrs.rounding in ("TFLM", "GEMMLOWP"):
            return _int16_gate(kind, x, args, attrs.rounding)
        if attrs.rounding == "TFLM":
            return _fixed_point_activation(kind, x, s_in, zp_in)
        if attrs.rounding == "ONNX":
            table = onnxrt.qlinear_lookup_table(kind, s_in, zp_in, s_out, zp_out, x.dtype.name)
            return table[x.astype(np.int64) - np.iinfo(x.dtype).min]
        table = lut_for(kind, s_in, zp_in, s_out, zp_out, x.dtype.name)
        return table[x.astype(np.int64) - np.iinfo(x.dtype).min]
    return compute


for _kind in ("sigmoid", "tanh"):
    register_op(f"qnn.{_kind}", _ACT_ARGS, attrs=QnnLutAttrs, rel=_lut_rel(f"qnn.{_kind}"),
                fusion=FusionKind.ELEMWISE, compute=_lut_compute(_kind),
                doc=f"Quantized {_kind}: TFLITE = LiteRT's float32 LUT; TFLM = TFLite-Micro's fixed point.")


# ------------------------------------------------------------------------------------------------ hardswish
def _hardswish_rel(types, attrs):
    data = _unary_operands("qnn.hardswish", types, _ACT_ARGS)
    expect_dtype("qnn.hardswish", "data", data, ("int8", "uint8"))
    return data


def _hardswish_compute(args, attrs):
    x, s_in, zp_in, s_out, zp_out = args
    p = hardswish_params(s_in, s_out)
    v = wrap16(x.astype(np.int64) - _scalar_int(zp_in))
    hires = wrap16(v * 128)
    preshift_out = srdhm16(hires, p.output_multiplier_int16)
    r = hires
    if p.reluish_exponent > 0:
        r = saturating_left_shift(r, p.reluish_exponent - 1, 16)
    r = srdhm16(r, p.reluish_multiplier_int16)
    if p.reluish_exponent > 0:
        r = saturating_left_shift(r, 1, 16)
    elif p.reluish_exponent < 0:
        r = rdbpot(r, -p.reluish_exponent)
    r = (r + (1 << 15)) >> 1
    y = wrap16(tdiv(r * preshift_out, 1 << 15))  # SaturatingDoublingHighMul: truncating; r ≥ 0, no saturation
    out = wrap16(rdbpot(y, -p.output_exponent) + _scalar_int(zp_out))
    lo, hi = dtype_range(x.dtype.name)
    return np.clip(out, lo, hi).astype(x.dtype)


register_op("qnn.hardswish", _ACT_ARGS, rel=_hardswish_rel, fusion=FusionKind.ELEMWISE, compute=_hardswish_compute,
            doc="TFLite HARD_SWISH: the int16 fixed-point path (hires input, reluish multiplier).")


# ----------------------------------------------------------------------------------------------- leaky_relu
@dataclass(frozen=True)
class QnnLeakyReluAttrs(Attrs):
    alpha: float = 0.01
    rounding: str = "TFLITE"  # "ONNX": onnxruntime's QLinearLeakyRelu table (int8/uint8)

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.rounding not in ("TFLITE", "ONNX"):
            raise IRError(f"unknown rounding {self.rounding!r} for qnn.leaky_relu",
                          hint="TFLITE (two fixed-point multipliers) or ONNX (onnxruntime's QLinearLeakyRelu)")


def _leaky_relu_rel(types, attrs):
    data = _unary_operands("qnn.leaky_relu", types, _UNARY_ARGS)
    expect_dtype("qnn.leaky_relu", "data", data, ("int8", "uint8", "int16", "uint16") if attrs.rounding == "ONNX"
                 else ("int8", "uint8", "int16"))
    return data


def _leaky_relu_compute(args, attrs):
    x, s_in, zp_in, s_out, zp_out = args
    if attrs.rounding == "ONNX":
        table = onnxrt.qlinear_lookup_table("leaky_relu", s_in, zp_in, s_out, zp_out, x.dtype.name, attrs.alpha)
        return table[x.astype(np.int64) - np.iinfo(x.dtype).min]
    p = leaky_relu_params(s_in, attrs.alpha, s_out)
    v = x.astype(np.int64) - _scalar_int(zp_in)
    pos = mbqm(v, p.identity_multiplier, p.identity_shift)
    neg = mbqm(v, abs(p.alpha_multiplier), p.alpha_shift)
    if p.alpha_multiplier < 0:
        neg = -neg
    out = _scalar_int(zp_out) + np.where(v >= 0, pos, neg)
    lo, hi = dtype_range(x.dtype.name)
    return np.clip(out, lo, hi).astype(x.dtype)


register_op("qnn.leaky_relu", _UNARY_ARGS, attrs=QnnLeakyReluAttrs, rel=_leaky_relu_rel, fusion=FusionKind.ELEMWISE,
            compute=_leaky_relu_compute,
            doc="TFLite LEAKY_RELU: identity multiplier for x ≥ zp, alpha multiplier below.")
