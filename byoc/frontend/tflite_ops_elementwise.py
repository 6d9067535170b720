"""TFLite converters for elementwise arithmetic and (de)quantization: ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM,
SQUARED_DIFFERENCE, RSQRT, SQRT, ABS, NEG, CAST, QUANTIZE, DEQUANTIZE, FLOOR_DIV.

Quantized ops map to the qnn ops whose reference semantics are TFLite's kernels (docs/architecture.md op catalog).
MAXIMUM / MINIMUM compare raw values (LiteRT does not rescale them), so quantized tensors map to the plain ops.

* SQUARED_DIFFERENCE: float32/int32 → ``d = subtract(a, b); multiply(d, d)`` (LiteRT's ``diff * diff``, exact);
  int8 → ``qnn.squared_difference``. LiteRT refuses uint8 and int16 outputs, and so does the importer.
* RSQRT: float32 → ``rsqrt`` (1.f / sqrtf(x), exact); int8 / int16 (zero points 0) → ``qnn.rsqrt``.
* SQRT: float32 → ``sqrt`` (sqrtf, exact). LiteRT has no quantized SQRT.
* FLOOR_DIV: float32 → ``floor_divide`` (floorf(a / b)); int32 → ``floor_divide`` (the quotient rounded toward
  −inf: LiteRT's floor of the double quotient, which is exact for int32; a zero divisor is an ExecutionError).
* CAST → ``cast``: LiteRT's static_cast of the raw values (quantization is ignored; →bool is ≠ 0).
* NEG → ``negative`` (float32, int32, int64; int8 raw values, wrapping: LiteRT ignores the quantization).
* ABS: float32/int32 → ``abs``; int8/int16 → ``qnn.abs`` (LiteRT's rescale when the scales differ).
"""
from __future__ import annotations

import numpy as np

from ..errors import IRError
from ..ir.expr import Expr
from ..ops.qnn_elemwise import add_left_shift
from ..quant.params import checked_log2, pot_add_shifts, squared_difference_params
from .tflite_context import OpContext, QUANT_DTYPES, converter


# ------------------------------------------------------------------------------------------- binary arithmetic
def _binary(ctx: OpContext, qop: str, fop: str) -> list[Expr]:
    ctx.check_arity(2)
    a_t, b_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    ctx.same_dtype(a_t, b_t, out_t)
    a, b = ctx.input(0), ctx.input(1)
    if a_t.dtype in QUANT_DTYPES:
        attrs = None
        if a_t.dtype == "int16":
            ctx.zero_points_zero(a_t, b_t, out_t)
        if qop in ("qnn.add", "qnn.subtract"):
            s1, _ = ctx.quant(a_t, "input")
            s2, _ = ctx.quant(b_t, "input")
            so, _ = ctx.quant(out_t, "output")
            if a_t.dtype == "int16" and _pot_int16_path(ctx, s1, s2, so):
                attrs = {"rounding": "TFLITE_POT"}
            else:
                ls = add_left_shift(a_t.dtype)
                real = 2.0 * max(float(s1), float(s2)) / (float(np.float32(2**ls * np.float32(so))))
                if real >= 1.0:
                    raise ctx.fail(f"output scale {so} is too small for input scales {s1} and {s2} (TFLite needs "
                                   f"2·max(s1, s2) / (2^{ls}·s_out) < 1, found {real:.3g})",
                                   hint="LiteRT aborts on this model")
        y = ctx.call(qop, [a, b] + ctx.quant_operands((a_t, "input"), (b_t, "input"), (out_t, "output")), attrs)
    else:
        y = ctx.call(fop, [a, b])
    return [ctx.apply_activation(y, out_t)]


def _pot_int16_path(ctx: OpContext, s1: float, s2: float, so: float) -> bool:
    """LiteRT's choice (add.cc / sub.cc Prepare): the power-of-two int16 path when ``pot_scale_int16`` is set
    (no options table: unset) and all three scales pass CheckedLog2; otherwise the general left-shift-15 path."""
    if not int(ctx.options.get("pot_scale_int16", 0)):
        return False
    if not all(checked_log2(s)[1] for s in (s1, s2, so)):
        return False
    try:
        pot_add_shifts(s1, s2, so, ctx.op.opcode)
    except IRError as e:
        raise ctx.fail(e.message, hint="LiteRT rejects this model too") from None
    if ctx.op.opcode == "ADD" and ctx.tensor(0).shape != ctx.tensor(1).shape:
        raise ctx.fail("int16 ADD on LiteRT's power-of-two path does not broadcast (its kernel reads past the "
                       "smaller input)", hint="write pot_scale_int16 = false to take the general int16 path")
    return True


@converter("ADD", quant=("qnn.add", "clip"), float=("add", "clip"))
def convert_add(ctx: OpContext) -> list[Expr]:
    return _binary(ctx, "qnn.add", "add")


@converter("SUB", quant=("qnn.subtract", "clip"), float=("subtract", "clip"))
def convert_sub(ctx: OpContext) -> list[Expr]:
    return _binary(ctx, "qnn.subtract", "subtract")


@converter("MUL", quant=("qnn.mul", "clip"), float=("multiply", "clip"))
def convert_mul(ctx: OpContext) -> list[Expr]:
    return _binary(ctx, "qnn.mul", "multiply")


# --------------------------------------------------------------------------------------- (de)quantization
@converter("QUANTIZE", quant=("qnn.requantize",), float=("qnn.quantize",))
def convert_quantize(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    if out_t.dtype not in QUANT_DTYPES + ("int32",):
        raise ctx.fail(f"output {out_t.label} is {out_t.dtype}; QUANTIZE produces int8/uint8/int16/int32")
    x = ctx.input(0)
    s_out, zp_out = ctx.quant(out_t, "output")
    if x_t.dtype == "float32":
        return [ctx.call("qnn.quantize", [x, ctx.const(s_out, "float32"), ctx.const(zp_out, "int32")],
                         {"axis": -1, "out_dtype": out_t.dtype})]
    if x_t.dtype == "int32" and out_t.dtype not in ("int8", "int16"):
        raise ctx.fail(f"int32 input {x_t.label} requantizes to int8 or int16 only, found {out_t.dtype}",
                       hint="LiteRT rejects this model too")
    if x_t.dtype not in QUANT_DTYPES + ("int32",):
        raise ctx.fail(f"input {x_t.label} is {x_t.dtype}; QUANTIZE takes float32 or a quantized integer type")
    s_in, zp_in = ctx.quant(x_t, "input")
    # QUANTIZE requantizes with QuantizeMultiplier(double(s_in) / double(s_out)), exactly qnn.requantize's rule.
    return [ctx.call("qnn.requantize", [x, ctx.const(s_in, "float32"), ctx.const(zp_in, "int32"),
                                        ctx.const(s_out, "float32"), ctx.const(zp_out, "int32")],
                     {"axis": -1, "rounding": "TFLITE", "out_dtype": out_t.dtype})]


@converter("DEQUANTIZE", quant=("qnn.dequantize",), float=("cast",))
def convert_dequantize(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    if out_t.dtype != "float32":
        raise ctx.fail(f"output {out_t.label} is {out_t.dtype}; DEQUANTIZE produces float32")
    x = ctx.input(0)
    if x_t.dtype == "float16":
        return [ctx.call("cast", [x], {"dtype": "float32"})]
    if x_t.dtype not in QUANT_DTYPES + ("int32",):
        raise ctx.fail(f"input {x_t.label} is {x_t.dtype}; DEQUANTIZE takes int8/uint8/int16/int32/float16")
    q = x_t.quant
    if q is not None and q.scale.size > 1:
        axis = q.quantized_dimension
        if not 0 <= axis < len(x_t.shape):
            raise ctx.fail(f"{x_t.label} has quantized_dimension {axis}, out of range for rank {len(x_t.shape)}")
        scales, zps = ctx.weight_quant(x_t, axis, "input")
        return [ctx.call("qnn.dequantize", [x, ctx.const(scales, "float32"), ctx.const(zps, "int32")],
                         {"axis": axis})]
    s, zp = ctx.quant(x_t, "input")
    return [ctx.call("qnn.dequantize", [x, ctx.const(s, "float32"), ctx.const(zp, "int32")], {"axis": -1})]


# --------------------------------------------------------------------------------------- compare / reduce
@converter("MAXIMUM", quant=("maximum",), float=("maximum",))
def convert_maximum(ctx: OpContext) -> list[Expr]:
    return _minmax(ctx, "maximum")


@converter("MINIMUM", quant=("minimum",), float=("minimum",))
def convert_minimum(ctx: OpContext) -> list[Expr]:
    return _minmax(ctx, "minimum")


def _minmax(ctx: OpContext, op: str) -> list[Expr]:
    ctx.check_arity(2)
    ctx.same_dtype(ctx.tensor(0), ctx.tensor(1), ctx.out_tensor())
    return [ctx.call(op, [ctx.input(0), ctx.input(1)])]


@converter("SQUARED_DIFFERENCE", quant=("qnn.squared_difference",), float=("subtract", "multiply"))
def convert_squared_difference(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    a_t, b_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    dtype = ctx.same_dtype(a_t, b_t, out_t)
    rank = max(len(a_t.shape), len(b_t.shape))
    if dtype in ("float32", "int32"):
        d = ctx.call("subtract", [ctx.input(0), ctx.input(1)])
        return [ctx.call("multiply", [d, d])]
    if dtype != "int8":
        raise ctx.fail(f"operands are {dtype}; SQUARED_DIFFERENCE takes float32, int32 or int8",
                       hint="LiteRT rejects this model too")
    if rank > 4 and tuple(a_t.shape) != tuple(b_t.shape):
        raise ctx.fail(f"broadcasting rank-{rank} operands; LiteRT's int8 kernel broadcasts up to 4-D")
    if rank > 4:
        raise ctx.fail(f"rank-{rank} operands; int8 SQUARED_DIFFERENCE of rank above 4 is not supported")
    q = ctx.quant_operands((a_t, "lhs")) + ctx.quant_operands((b_t, "rhs")) + ctx.quant_operands((out_t, "output"))
    ctx.prepare(lambda: squared_difference_params(ctx.quant(a_t, "lhs")[0], ctx.quant(b_t, "rhs")[0],
                                                    ctx.quant(out_t, "output")[0]))
    return [ctx.call("qnn.squared_difference", [ctx.input(0), ctx.input(1)] + q)]


@converter("RSQRT", quant=("qnn.rsqrt",), float=("rsqrt",))
def convert_rsqrt(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    dtype = ctx.same_dtype(x_t, out_t)
    if dtype == "float32":
        return [ctx.call("rsqrt", [ctx.input(0)])]
    if dtype not in ("int8", "int16"):
        raise ctx.fail(f"input {x_t.label} is {dtype}; RSQRT is supported for float32, int8 and int16")
    if dtype == "int16":   # LiteRT's int16 kernel requires zero points 0
        ctx.zero_points_zero(x_t, out_t)
    return [ctx.call("qnn.rsqrt", [ctx.input(0)] + ctx.quant_operands((x_t, "input")) + ctx.quant_operands((out_t, "output")))]


@converter("SQRT", float=("sqrt",))
def convert_sqrt(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t = ctx.tensor(0)
    if ctx.same_dtype(x_t, ctx.out_tensor()) != "float32":
        raise ctx.fail(f"input {x_t.label} is {x_t.dtype}; SQRT is supported for float32 only",
                       hint="LiteRT has no quantized SQRT kernel; dequantize around it")
    return [ctx.call("sqrt", [ctx.input(0)])]


# ---------------------------------------------------------------------------------------------------- unary
@converter("CAST", quant=("cast",), float=("cast",))
def convert_cast(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    for t in (x_t, out_t):
        ctx.expect_dtype(t, ("float32", "int8", "uint8", "int16", "int32", "int64", "bool"), "CAST")
    return [ctx.call("cast", [ctx.input(0)], {"dtype": out_t.dtype})]


@converter("NEG", quant=("negative",), float=("negative",))
def convert_neg(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t = ctx.tensor(0)
    ctx.same_dtype(x_t, ctx.out_tensor())
    ctx.expect_dtype(x_t, ("float32", "int32", "int64", "int8"), "NEG")  # int8: LiteRT negates raw values
    return [ctx.call("negative", [ctx.input(0)])]


@converter("ABS", quant=("qnn.abs",), float=("abs",))
def convert_abs(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    dtype = ctx.same_dtype(x_t, out_t)
    if dtype in ("float32", "int32"):
        return [ctx.call("abs", [ctx.input(0)])]
    ctx.expect_dtype(x_t, ("float32", "int32", "int8", "int16"), "ABS")
    if dtype == "int16" and x_t.quant is None:
        return [ctx.call("abs", [ctx.input(0)])]  # LiteRT: unquantized int16 is a plain std::abs
    q = ctx.quant_operands((x_t, "input")) + ctx.quant_operands((out_t, "output"))
    if dtype == "int16" and (ctx.quant(x_t, "input")[1] != 0 or ctx.quant(out_t, "output")[1] != 0):
        raise ctx.fail("int16 ABS needs zero points 0 on input and output", hint="LiteRT rejects this model too")
    return [ctx.call("qnn.abs", [ctx.input(0)] + q)]


# ------------------------------------------------------------------------------------------------- FLOOR_DIV
@converter("FLOOR_DIV", float=("floor_divide",))
def convert_floor_div(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    a_t, b_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    dtype = ctx.same_dtype(a_t, b_t, out_t)
    if dtype not in ("float32", "int32"):
        raise ctx.fail(f"operands are {dtype}; FLOOR_DIV is supported for float32 and int32",
                       hint="only the float32 and int32 kernels are implemented")
    return [ctx.call("floor_divide", [ctx.input(0), ctx.input(1)])]


# ------------------------------------------------------------------------------------------------------- DIV
@converter("DIV", float=("divide", "clip"))
def convert_div(ctx: OpContext) -> list[Expr]:
    """float32 (IEEE a / b) and int32 (C's truncating division; a zero divisor is an ExecutionError) with the
    fused activation as a clip. LiteRT's uint8 DIV (a fixed-point reciprocal) is not supported."""
    ctx.check_arity(2)
    a_t, b_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    dtype = ctx.same_dtype(a_t, b_t, out_t)
    if dtype not in ("float32", "int32"):
        raise ctx.fail(f"operands are {dtype}; DIV is supported for float32 and int32"
                       + (" (LiteRT's uint8 fixed-point DIV is not implemented)" if dtype == "uint8" else ""))
    return [ctx.apply_activation(ctx.call("divide", [ctx.input(0), ctx.input(1)]), out_t)]
