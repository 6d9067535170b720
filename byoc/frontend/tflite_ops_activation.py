"""TFLite converters for activations: SOFTMAX, LOG_SOFTMAX, LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, PRELU,
RELU, RELU6 and RELU_N1_TO_1.

Standalone RELU/RELU6/RELU_N1_TO_1 requantize first with LiteRT's float32 multiplier float32(s_in/s_out), then
clamp in the output domain (quant-semantics.md §3.12); PRELU quantized is ``qnn.prelu``.

* LOG_SOFTMAX: float → ``nn.log_softmax(axis=-1)``; int8/uint8 → ``qnn.log_softmax`` (LiteRT's reference integer
  kernel, byoc/ops/elementwise_more.py). LiteRT requires the output scale 16/256 and zero point 127 (int8) or 255
  (uint8); a model with other output parameters is refused here as LiteRT refuses it.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Expr
from ..quant.params import log_softmax_params
from ..transform.canonicalize_qnn import as_integer_op
from .tflite_context import OpContext, QUANT_DTYPES, converter
from .tflite_quant import dtype_limits, quantize_float32


# --------------------------------------------------------------------------------------------- activations
# LiteRT's int16 kernels of these ops are their own algorithms (not the 8-bit ones widened): refused by name.
_INT16_KERNELS = {"SOFTMAX": "a 513-entry exp table and a 1/(1+x) table with interpolation",
                  "LOGISTIC": "input rescaling and interpolation in a 256-entry uint16 sigmoid table",
                  "TANH": "input rescaling and interpolation in a 256-entry uint16 tanh table",
                  "HARD_SWISH": None}  # LiteRT has no int16 HARD_SWISH either


def _unary_quant_args(ctx: OpContext) -> tuple:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    if x_t.dtype in QUANT_DTYPES and out_t.dtype not in QUANT_DTYPES:
        raise ctx.fail(f"output {out_t.label} is {out_t.dtype} but input {x_t.label} is {x_t.dtype}")
    # int8 → int16 SOFTMAX is the 8-bit kernel writing 16-bit results (qnn.softmax out_dtype int16)
    eight_to_sixteen = ctx.op.opcode == "SOFTMAX" and (x_t.dtype, out_t.dtype) == ("int8", "int16")
    if "int16" in (x_t.dtype, out_t.dtype) and ctx.op.opcode in _INT16_KERNELS and not eight_to_sixteen:
        how = _INT16_KERNELS[ctx.op.opcode]
        raise ctx.fail(f"int16 {ctx.op.opcode} is not supported ("
                       + (f"LiteRT's int16 kernel uses {how})" if how else "LiteRT has no int16 kernel for it)"),
                       hint="int16 CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, SUB, MUL, PAD, LEAKY_RELU, "
                            "CONCATENATION, QUANTIZE and DEQUANTIZE are supported")
    return x_t, out_t, ctx.input(0)


# LOGISTIC / TANH / SOFTMAX / HARD_SWISH / LEAKY_RELU, quantized: TVM's frontend form, dequantize → float op →
# quantize, whose qnn.quantize names the exact integer kernel (``kernel``, ``kernel_rounding``); executors turn the
# intact chain back into that kernel (byoc/transform/canonicalize_qnn.py), so results stay LiteRT's bits.
def _dequantized(ctx: OpContext, x: Expr, x_t) -> Expr:
    return ctx.call("qnn.dequantize", [x] + ctx.quant_operands((x_t, "input")))


def _quantized(ctx: OpContext, y: Expr, out_t, kernel: str, rounding: str = "") -> Expr:
    attrs = {"out_dtype": out_t.dtype, "kernel": kernel}
    if rounding:
        attrs["kernel_rounding"] = rounding
    end = ctx.call("qnn.quantize", [y] + ctx.quant_operands((out_t, "output")), attrs)
    exact = as_integer_op(end)
    assert exact is not None, f"{kernel}: the emitted chain is not the canonical form"
    ctx.call(exact.op.name, exact.args, exact.attrs)  # the kernel's own type rules, checked at import
    return end


@converter("SOFTMAX", quant=("qnn.dequantize", "multiply", "nn.softmax", "qnn.quantize"),
           float=("multiply", "nn.softmax"))
def convert_softmax(ctx: OpContext) -> list[Expr]:
    x_t, out_t, x = _unary_quant_args(ctx)
    if not x_t.shape or 0 in x_t.shape:
        raise ctx.fail(f"input {x_t.label} has shape {list(x_t.shape)}; softmax needs a non-empty last axis")
    beta = float(ctx.options.get("beta", 0.0))
    if not np.isfinite(beta):
        raise ctx.fail(f"beta is {beta}")
    quantized = x_t.dtype in QUANT_DTYPES
    if quantized:
        x = _dequantized(ctx, x, x_t)
    if beta != 1.0:
        x = ctx.call("multiply", [x, ctx.const(beta, "float32")])
    y = ctx.call("nn.softmax", [x], {"axis": -1})
    return [_quantized(ctx, y, out_t, "qnn.softmax", "TFLITE") if quantized else y]


def _lut_activation(ctx: OpContext, qop: str, fop: str) -> list[Expr]:
    x_t, out_t, x = _unary_quant_args(ctx)
    if x_t.dtype in QUANT_DTYPES:
        if ctx.semantics == "tflm" and x_t.dtype == "uint8":
            raise ctx.fail(f"TFLite Micro has no uint8 {ctx.op.opcode} kernel (int8, int16 and float32 only)",
                           hint="import with semantics='litert' (LiteRT's uint8 table); `byoc` commands do so "
                                "for a model TFLite Micro cannot run")
        rounding = "TFLM" if ctx.semantics == "tflm" else "TFLITE"
        y = ctx.call(fop, [_dequantized(ctx, x, x_t)])
        return [_quantized(ctx, y, out_t, qop, rounding)]
    return [ctx.call(fop, [x])]


@converter("LOGISTIC", quant=("qnn.dequantize", "sigmoid", "qnn.quantize"), float=("sigmoid",))
def convert_logistic(ctx: OpContext) -> list[Expr]:
    return _lut_activation(ctx, "qnn.sigmoid", "sigmoid")


@converter("TANH", quant=("qnn.dequantize", "tanh", "qnn.quantize"), float=("tanh",))
def convert_tanh(ctx: OpContext) -> list[Expr]:
    return _lut_activation(ctx, "qnn.tanh", "tanh")


@converter("HARD_SWISH", quant=("qnn.dequantize", "add", "clip", "multiply", "divide", "qnn.quantize"),
           float=("add", "clip", "multiply", "divide"))
def convert_hard_swish(ctx: OpContext) -> list[Expr]:
    x_t, out_t, x = _unary_quant_args(ctx)
    quantized = x_t.dtype in QUANT_DTYPES
    if quantized:
        x = _dequantized(ctx, x, x_t)
    dtype = "float32" if quantized else x_t.dtype
    # TFLite's float kernel (and TVM's form): x · min(6, max(0, x + 3)) / 6.
    r6 = ctx.call("clip", [ctx.call("add", [x, ctx.const(3.0, dtype)])], {"a_min": 0.0, "a_max": 6.0})
    y = ctx.call("divide", [ctx.call("multiply", [x, r6]), ctx.const(6.0, dtype)])
    return [_quantized(ctx, y, out_t, "qnn.hardswish") if quantized else y]


@converter("LEAKY_RELU", quant=("qnn.dequantize", "nn.leaky_relu", "qnn.quantize"), float=("nn.leaky_relu",))
def convert_leaky_relu(ctx: OpContext) -> list[Expr]:
    x_t, out_t, x = _unary_quant_args(ctx)
    alpha = float(ctx.options.get("alpha", 0.0))
    if not np.isfinite(alpha):
        raise ctx.fail(f"alpha is {alpha}")
    if x_t.dtype in QUANT_DTYPES:
        if x_t.dtype == "int16":
            ctx.zero_points_zero(x_t, out_t)
        y = ctx.call("nn.leaky_relu", [_dequantized(ctx, x, x_t)], {"alpha": alpha})
        return [_quantized(ctx, y, out_t, "qnn.leaky_relu", "TFLITE")]
    return [ctx.call("nn.leaky_relu", [x], {"alpha": alpha})]


_RELU_RANGES = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}


@converter("RELU", "RELU6", "RELU_N1_TO_1", quant=("qnn.requantize", "clip"), float=("clip",))
def convert_relu(ctx: OpContext) -> list[Expr]:
    x_t, out_t, x = _unary_quant_args(ctx)
    lo_f, hi_f = _RELU_RANGES[ctx.op.opcode]
    if x_t.dtype not in QUANT_DTYPES:
        return [ctx.call("clip", [x], {"a_min": lo_f, "a_max": float("inf") if hi_f is None else hi_f})]
    s_in, zp_in = ctx.quant(x_t, "input")
    s_out, zp_out = ctx.quant(out_t, "output")
    # LiteRT's multiplier is float32(s_in / s_out); pass it as the input scale over an output scale of 1.
    ratio = float(np.float32(s_in) / np.float32(s_out))
    y = ctx.call("qnn.requantize", [x, ctx.const(ratio, "float64"), ctx.const(zp_in, "int32"),
                                    ctx.const(1.0, "float32"), ctx.const(zp_out, "int32")],
                 {"axis": -1, "rounding": "TFLITE", "out_dtype": out_t.dtype})
    qmin, qmax = dtype_limits(out_t.dtype)
    lo = max(qmin, quantize_float32(lo_f, s_out, zp_out, out_t.dtype))
    hi = qmax if hi_f is None else min(qmax, quantize_float32(hi_f, s_out, zp_out, out_t.dtype))
    if (lo, hi) == (qmin, qmax):
        return [y]
    return [ctx.call("clip", [y], {"a_min": float(lo), "a_max": float(hi)})]


@converter("PRELU", quant=("qnn.prelu",), float=("maximum", "minimum", "multiply", "add"))
def convert_prelu(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t, a_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    ctx.same_dtype(x_t, a_t, out_t)
    x, alpha = ctx.input(0), ctx.input(1)
    if x_t.dtype not in QUANT_DTYPES:
        # TFLite: x ≥ 0 ? x : x·α, as max(x, 0) + min(x, 0)·α (exact: one of the two terms is a zero)
        zero = ctx.const(0.0, x_t.dtype)
        neg = ctx.call("multiply", [ctx.call("minimum", [x, zero]), alpha])
        return [ctx.call("add", [ctx.call("maximum", [x, zero]), neg])]
    if x_t.dtype == "int16":
        raise ctx.fail("int16 PRELU is not supported")
    q = []
    for t, role in ((x_t, "input"), (a_t, "alpha"), (out_t, "output")):
        s, zp = ctx.quant(t, role)
        q += [ctx.const(s, "float32"), ctx.const(zp, "int32")]
    return [ctx.call("qnn.prelu", [x, alpha] + q)]


@converter("LOG_SOFTMAX", quant=("qnn.log_softmax",), float=("nn.log_softmax",))
def convert_log_softmax(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    dtype = ctx.same_dtype(x_t, out_t)
    if not x_t.shape or 0 in x_t.shape:
        raise ctx.fail(f"input {x_t.label} has shape {list(x_t.shape)}; LOG_SOFTMAX needs a non-empty last axis")
    if dtype == "float32":
        return [ctx.call("nn.log_softmax", [ctx.input(0)], {"axis": -1})]
    if dtype not in ("int8", "uint8"):
        raise ctx.fail(f"input {x_t.label} is {dtype}; LOG_SOFTMAX takes float32, int8 or uint8")
    s_out, zp_out = ctx.quant(out_t, "output")
    want_zp = 127 if dtype == "int8" else 255
    if np.float32(s_out) != np.float32(16 / 256) or zp_out != want_zp:
        raise ctx.fail(f"output {out_t.label} has (scale {s_out}, zero point {zp_out}); quantized LOG_SOFTMAX "
                       f"requires (0.0625, {want_zp})", hint="LiteRT rejects this model too")
    args = [ctx.input(0)] + ctx.quant_operands((x_t, "input")) + ctx.quant_operands((out_t, "output"))
    ctx.prepare(lambda: log_softmax_params(ctx.quant(x_t, "input")[0]))
    return [ctx.call("qnn.log_softmax", args, {"axis": -1})]
