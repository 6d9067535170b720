"""TFLite converters for arithmetic, activations, pooling, reductions and (de)quantization.

Quantized ops map to the qnn ops whose reference semantics are TFLite's kernels (docs/architecture.md op catalog);
standalone RELU/RELU6/RELU_N1_TO_1 requantize first with LiteRT's float32 multiplier float32(s_in/s_out), then
clamp in the output domain (quant-semantics.md §3.12).
"""
from __future__ import annotations

import numpy as np

from ..errors import IRError
from ..ir.expr import Expr
from ..ops.qnn_elemwise import add_left_shift
from ..quant.params import checked_log2, pot_add_shifts
from .tflite_context import QUANT_DTYPES, OpContext, converter
from .tflite_quant import dtype_limits, quantize_float32, same_padding


def _same_dtype(ctx: OpContext, *tensors) -> None:
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) != 1:
        raise ctx.fail("operands and result must share one dtype, found "
                       + ", ".join(f"{t.label}: {t.dtype}" for t in tensors))


def _q_operands(ctx: OpContext, *tensors_and_roles) -> list[Expr]:
    """(scale, zero point) constants for each (tensor, role), in that order."""
    out: list[Expr] = []
    for t, role in tensors_and_roles:
        s, zp = ctx.quant(t, role)
        out += [ctx.const(s, "float32"), ctx.const(zp, "int32")]
    return out


# ------------------------------------------------------------------------------------------- binary arithmetic
def _binary(ctx: OpContext, qop: str, fop: str) -> list[Expr]:
    ctx.check_arity(2)
    a_t, b_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    _same_dtype(ctx, a_t, b_t, out_t)
    a, b = ctx.input(0), ctx.input(1)
    if a_t.dtype in QUANT_DTYPES:
        attrs = None
        if a_t.dtype == "int16":
            _zero_points_zero(ctx, a_t, b_t, out_t)
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
        y = ctx.call(qop, [a, b] + _q_operands(ctx, (a_t, "input"), (b_t, "input"), (out_t, "output")), attrs)
    else:
        y = ctx.call(fop, [a, b])
    return [ctx.apply_activation(y, out_t)]


def _zero_points_zero(ctx: OpContext, *tensors) -> None:
    """LiteRT's int16 kernels are symmetric: every int16 operand and result has zero point 0 (ENSUREd)."""
    for t in tensors:
        zp = int(t.quant.zero_point[0]) if t.quant is not None and t.quant.zero_point.size else 0
        if zp != 0:
            raise ctx.fail(f"int16 {ctx.op.opcode} needs zero point 0 on every tensor, found {zp} on {t.label}",
                           hint="LiteRT rejects this model too")


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


# ------------------------------------------------------------------------------------------------- pooling
def _pool(ctx: OpContext, kind: str) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    if len(x_t.shape) != 4 or 0 in x_t.shape:
        raise ctx.fail(f"input {x_t.label} has shape {list(x_t.shape)}; expected a non-empty NHWC tensor")
    _same_dtype(ctx, x_t, out_t)
    p = int(ctx.options.get("padding", 0))
    if p not in (0, 1):
        raise ctx.fail(f"padding {p} is not SAME (0) or VALID (1)")
    vals = {k: int(ctx.options.get(k, 0)) for k in ("stride_w", "stride_h", "filter_width", "filter_height")}
    for k, v in vals.items():
        if v <= 0:
            raise ctx.fail(f"{k} is {v}; it must be positive")
    _, h, w, _ = x_t.shape
    padding = "SAME" if p == 0 else "VALID"
    oh, pt, pb = same_padding(h, vals["filter_height"], vals["stride_h"], 1, padding)
    ow, pl, pr = same_padding(w, vals["filter_width"], vals["stride_w"], 1, padding)
    if oh <= 0 or ow <= 0:
        raise ctx.fail(f"input {x_t.label} of {h}x{w} is smaller than the "
                       f"{vals['filter_height']}x{vals['filter_width']} pooling window")
    attrs = dict(pool_size=(vals["filter_height"], vals["filter_width"]), strides=(vals["stride_h"], vals["stride_w"]),
                 padding=(pt, pl, pb, pr), layout="NHWC")
    x = ctx.input(0)
    if kind == "max":
        y = ctx.call("nn.max_pool2d", [x], attrs)
    elif x_t.dtype in QUANT_DTYPES:
        # TFLite sums raw values and divides with rounding half away; no zero-point arithmetic at all.
        y = ctx.call("cast", [x], {"dtype": "int32"})
        y = ctx.call("nn.avg_pool2d", [y], dict(attrs, count_include_pad=False))
        y = ctx.call("cast", [y], {"dtype": x_t.dtype})
    else:
        y = ctx.call("nn.avg_pool2d", [x], dict(attrs, count_include_pad=False))
    return [ctx.apply_activation(y, out_t)]


@converter("AVERAGE_POOL_2D", quant=("cast", "nn.avg_pool2d", "clip"), float=("nn.avg_pool2d", "clip"))
def convert_average_pool2d(ctx: OpContext) -> list[Expr]:
    return _pool(ctx, "avg")


@converter("MAX_POOL_2D", quant=("nn.max_pool2d", "clip"), float=("nn.max_pool2d", "clip"))
def convert_max_pool2d(ctx: OpContext) -> list[Expr]:
    return _pool(ctx, "max")


@converter("MEAN", quant=("qnn.mean",), float=("mean",))
def convert_mean(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    _same_dtype(ctx, x_t, out_t)
    rank = len(x_t.shape)
    axes = []
    for a in ctx.int_vector(1, "axes"):
        if not -rank <= a < rank:
            raise ctx.fail(f"axis {a} is out of range for input {x_t.label} of rank {rank}")
        if a % rank not in axes:
            axes.append(a % rank)
    if not axes:
        raise ctx.fail("MEAN over no axes is not supported")
    attrs = {"axis": tuple(sorted(axes)), "keepdims": bool(ctx.options.get("keep_dims", 0))}
    x = ctx.input(0)
    if x_t.dtype in QUANT_DTYPES:
        return [ctx.call("qnn.mean", [x] + _q_operands(ctx, (x_t, "input"), (out_t, "output")), attrs)]
    return [ctx.call("mean", [x], attrs)]


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
    if "int16" in (x_t.dtype, out_t.dtype) and ctx.op.opcode in _INT16_KERNELS:
        how = _INT16_KERNELS[ctx.op.opcode]
        raise ctx.fail(f"int16 {ctx.op.opcode} is not supported ("
                       + (f"LiteRT's int16 kernel uses {how})" if how else "LiteRT has no int16 kernel for it)"),
                       hint="int16 CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, SUB, MUL, PAD, LEAKY_RELU, "
                            "CONCATENATION, QUANTIZE and DEQUANTIZE are supported")
    return x_t, out_t, ctx.input(0)


@converter("SOFTMAX", quant=("qnn.softmax",), float=("multiply", "nn.softmax"))
def convert_softmax(ctx: OpContext) -> list[Expr]:
    x_t, out_t, x = _unary_quant_args(ctx)
    if not x_t.shape or 0 in x_t.shape:
        raise ctx.fail(f"input {x_t.label} has shape {list(x_t.shape)}; softmax needs a non-empty last axis")
    beta = float(ctx.options.get("beta", 0.0))
    if not np.isfinite(beta):
        raise ctx.fail(f"beta is {beta}")
    if x_t.dtype in QUANT_DTYPES:
        args = [x] + _q_operands(ctx, (x_t, "input"), (out_t, "output"))
        return [ctx.call("qnn.softmax", args, {"axis": -1, "beta": beta, "out_dtype": out_t.dtype})]
    if beta != 1.0:
        x = ctx.call("multiply", [x, ctx.const(beta, x_t.dtype)])
    return [ctx.call("nn.softmax", [x], {"axis": -1})]


def _lut_activation(ctx: OpContext, qop: str, fop: str) -> list[Expr]:
    x_t, out_t, x = _unary_quant_args(ctx)
    if x_t.dtype in QUANT_DTYPES:
        rounding = "TFLM" if ctx.semantics == "tflm" else "TFLITE"
        args = [x] + _q_operands(ctx, (x_t, "input"), (out_t, "output"))
        return [ctx.call(qop, args, {"rounding": rounding})]
    return [ctx.call(fop, [x])]


@converter("LOGISTIC", quant=("qnn.sigmoid",), float=("sigmoid",))
def convert_logistic(ctx: OpContext) -> list[Expr]:
    return _lut_activation(ctx, "qnn.sigmoid", "sigmoid")


@converter("TANH", quant=("qnn.tanh",), float=("tanh",))
def convert_tanh(ctx: OpContext) -> list[Expr]:
    return _lut_activation(ctx, "qnn.tanh", "tanh")


@converter("HARD_SWISH", quant=("qnn.hardswish",), float=("add", "clip", "multiply", "divide"))
def convert_hard_swish(ctx: OpContext) -> list[Expr]:
    x_t, out_t, x = _unary_quant_args(ctx)
    if x_t.dtype in QUANT_DTYPES:
        return [ctx.call("qnn.hardswish", [x] + _q_operands(ctx, (x_t, "input"), (out_t, "output")))]
    # TFLite's float kernel: x · min(6, max(0, x + 3)) / 6.
    r6 = ctx.call("clip", [ctx.call("add", [x, ctx.const(3.0, x_t.dtype)])], {"a_min": 0.0, "a_max": 6.0})
    return [ctx.call("divide", [ctx.call("multiply", [x, r6]), ctx.const(6.0, x_t.dtype)])]


@converter("LEAKY_RELU", quant=("qnn.leaky_relu",), float=("nn.leaky_relu",))
def convert_leaky_relu(ctx: OpContext) -> list[Expr]:
    x_t, out_t, x = _unary_quant_args(ctx)
    alpha = float(ctx.options.get("alpha", 0.0))
    if not np.isfinite(alpha):
        raise ctx.fail(f"alpha is {alpha}")
    if x_t.dtype in QUANT_DTYPES:
        if x_t.dtype == "int16":
            _zero_points_zero(ctx, x_t, out_t)
        args = [x] + _q_operands(ctx, (x_t, "input"), (out_t, "output"))
        return [ctx.call("qnn.leaky_relu", args, {"alpha": alpha})]
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
