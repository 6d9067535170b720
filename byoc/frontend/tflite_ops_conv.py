"""TFLite converters for the weighted ops and matrix products: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
TRANSPOSE_CONV, BATCH_MATMUL.

Quantized chains are TVM's frontend's (docs/architecture.md, "TFLite import conventions"): ``qnn.conv2d(padding
inside, kernel HWIO; depthwise HWOI [KH, KW, Cin, M]) → nn.bias_add → qnn.requantize [→ clip]``. The requantize
input scale is the exact float64 product double(s_in)·double(s_w[c]) (for uint8 inputs the float32-rounded
product, as LiteRT's legacy per-tensor path forms it), so the (M, shift) the op derives equals
TFLite's; FULLY_CONNECTED requantizes with ``TFLITE_FLOAT`` (LiteRT's reference kernel) or, with
``semantics="tflm"``, with the float32-product multiplier and ``TFLITE`` rounding.

16x8 (int16 activations with zero point 0, int8 weights): LiteRT accumulates in int64 with an int64 bias, so the
chain's accumulator is int64 (``out_dtype="int64"``) and ``qnn.requantize`` of int64 data is LiteRT's int64
MultiplyByQuantizedMultiplier; CONV_2D / FULLY_CONNECTED with ``quantized_bias_type`` INT32 keep the int32 chain.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Expr
from .tflite_context import OpContext, QUANT_DTYPES, converter
from .tflite_quant import conv_products_for, conv_scale_products, float32_scale_products, same_padding
from .tflite_reader import DTYPES


def _matmul_operand(ctx: OpContext, i: int, batch: tuple, out_batch: tuple) -> Expr:
    """Input ``i`` as a 3-D [batch, rows, cols] operand of batch_matmul: broadcast only when its own batch
    dimensions differ from the output's and are not all 1 (a batch of 1 broadcasts inside batch_matmul). A
    constant operand becomes a reshaped (broadcast) constant, as other weights do."""
    t = ctx.tensor(i)
    shape, mat = tuple(t.shape), tuple(t.shape[-2:])
    n_out = int(np.prod(out_batch, dtype=np.int64))
    ones = batch != out_batch and int(np.prod(batch, dtype=np.int64)) == 1
    expand = batch != out_batch and not ones
    target = ((1,) if ones else (n_out,)) + mat
    if ctx.model.constant(t) is not None:
        if not expand:
            return ctx.weight(i, reshape=target)
        value = np.broadcast_to(ctx.const_value(i, "operand"), tuple(out_batch) + mat).reshape(target)
        return ctx.const(value, t.dtype)
    x = ctx.input(i)
    if expand:
        x = ctx.call("broadcast_to", [x], {"shape": tuple(out_batch) + mat})
    return x if shape == target else ctx.call("reshape", [x], {"newshape": target})


@converter("BATCH_MATMUL", quant=("broadcast_to", "reshape", "qnn.batch_matmul", "qnn.requantize"),
           float=("broadcast_to", "reshape", "nn.batch_matmul"))
def convert_batch_matmul(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    a_t, b_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    w16x8 = (a_t.dtype, b_t.dtype) == ("int16", "int8")
    if w16x8 and (b_t.quant is None or b_t.quant.scale.size != 1):
        # LiteRT's kernel reads the per-tensor scale field, which is 0 for a per-channel tensor: all zeros
        raise ctx.fail(f"int16 × int8 BATCH_MATMUL with a per-channel {b_t.label}: LiteRT's reference kernel returns "
                       "zeros for it (it reads the per-tensor scale, 0 here), so there is no result to reproduce",
                       hint="quantize the int8 operand per tensor")
    if a_t.dtype != b_t.dtype and not w16x8:
        raise ctx.fail(f"operands {a_t.label} ({a_t.dtype}) and {b_t.label} ({b_t.dtype}) differ in dtype; hybrid "
                       "BATCH_MATMUL is not supported")
    if a_t.dtype not in ("float32", "int8", "int16"):
        raise ctx.fail(f"operands are {a_t.dtype}; LiteRT's BATCH_MATMUL takes float32, int8 or int16 (it refuses "
                       "this model too)")
    if a_t.dtype == "int16":   # LiteRT's int16 kernel: zero points 0, an int64 accumulator
        ctx.zero_points_zero(a_t, b_t, out_t)
    if out_t.dtype != a_t.dtype:
        raise ctx.fail(f"output {out_t.label} is {out_t.dtype}; only a {a_t.dtype} result is supported")
    ra, rb = len(a_t.shape), len(b_t.shape)
    if not (2 <= ra <= 5 and 2 <= rb <= 5) or 0 in a_t.shape or 0 in b_t.shape:
        raise ctx.fail(f"operands have shapes {list(a_t.shape)} and {list(b_t.shape)}; BATCH_MATMUL takes "
                       "non-empty tensors of rank 2 to 5")
    adj_x, adj_y = bool(ctx.options.get("adj_x", 0)), bool(ctx.options.get("adj_y", 0))
    rank = max(ra, rb)
    a_batch = (1,) * (rank - ra) + tuple(a_t.shape[:-2])
    b_batch = (1,) * (rank - rb) + tuple(b_t.shape[:-2])
    out_batch = []
    for i, (da, db) in enumerate(zip(a_batch, b_batch)):
        if da != db and 1 not in (da, db):
            raise ctx.fail(f"batch dimension {i} is {da} in {a_t.label} and {db} in {b_t.label}; they do not "
                           "broadcast")
        out_batch.append(max(da, db))
    out_batch = tuple(out_batch)
    m, k = (a_t.shape[-1], a_t.shape[-2]) if adj_x else (a_t.shape[-2], a_t.shape[-1])
    n, kb = (b_t.shape[-2], b_t.shape[-1]) if adj_y else (b_t.shape[-1], b_t.shape[-2])
    if k != kb:
        raise ctx.fail(f"{a_t.label} {list(a_t.shape)} (adj_x={adj_x}) and {b_t.label} {list(b_t.shape)} "
                       f"(adj_y={adj_y}) have reduction sizes {k} and {kb}")
    a = _matmul_operand(ctx, 0, a_batch, out_batch)
    b = _matmul_operand(ctx, 1, b_batch, out_batch)
    attrs = {"transpose_a": adj_x, "transpose_b": adj_y}
    if a_t.dtype == "float32":
        y = ctx.call("nn.batch_matmul", [a, b], attrs)
    else:
        s_a, zp_a = ctx.quant(a_t, "lhs")
        s_b, zp_b = ctx.quant(b_t, "rhs")
        s_out, zp_out = ctx.quant(out_t, "output")
        y = ctx.call("qnn.batch_matmul", [a, b, ctx.const(zp_a, "int32"), ctx.const(zp_b, "int32"),
                                          ctx.const(s_a, "float32"), ctx.const(s_b, "float32")],
                     dict(attrs, out_dtype="int64" if a_t.dtype == "int16" else "int32"))
        scale = conv_scale_products(s_a, np.array([s_b]))[0]
        y = ctx.call("qnn.requantize", [y, ctx.const(scale, "float64"), ctx.const(0, "int32"),
                                        ctx.const(s_out, "float32"), ctx.const(zp_out, "int32")],
                     {"axis": -1, "rounding": "TFLITE", "out_dtype": out_t.dtype})
    final = out_batch + (m, n)
    if final != (int(np.prod(out_batch, dtype=np.int64)), m, n):
        y = ctx.call("reshape", [y], {"newshape": final})
    return [y]


_CONV_Q = ("qnn.conv2d", "nn.bias_add", "qnn.requantize", "clip")


_CONV_F = ("nn.conv2d", "nn.bias_add", "clip")


def _padding_mode(ctx: OpContext) -> str:
    p = int(ctx.options.get("padding", 0))
    if p not in (0, 1):
        raise ctx.fail(f"padding {p} is not SAME (0) or VALID (1)")
    return "SAME" if p == 0 else "VALID"


def _positive(ctx: OpContext, *names: str) -> tuple[int, ...]:
    vals = tuple(int(ctx.options.get(n, 0)) for n in names)
    for n, v in zip(names, vals):
        if v <= 0:
            raise ctx.fail(f"{n} is {v}; it must be positive")
    return vals


def _rank(ctx: OpContext, i: int, rank: int, what: str):
    t = ctx.tensor(i)
    if len(t.shape) != rank:
        raise ctx.fail(f"{what} {t.label} has shape {list(t.shape)}; expected rank {rank}")
    if 0 in t.shape:
        raise ctx.fail(f"{what} {t.label} has an empty dimension in shape {list(t.shape)}")
    return t


def _scalar_or_vector(values: np.ndarray):
    """A per-channel array, collapsed to a scalar when every channel is equal (per-tensor quantization)."""
    values = np.asarray(values).reshape(-1)
    return values[0] if values.size == 1 or np.all(values == values[0]) else values


def _quantized_kernel_zp(ctx: OpContext, w_t, zps: np.ndarray):
    if w_t.dtype == "int8" and np.any(zps != 0):
        raise ctx.fail(f"int8 filter {w_t.label} has a non-zero zero point; TFLite's int8 kernels require 0",
                       hint="LiteRT rejects this model too")
    return _scalar_or_vector(zps)


_BIAS_OPTION = {0: None, 2: "int32", 4: "int64"}  # quantized_bias_type (a TensorType; FLOAT32 = 0 = not set)


def _accumulator(ctx: OpContext, x_t, bias_index: int, has_option: bool) -> str:
    """The accumulator (and bias) dtype LiteRT's kernel uses: int32 for 8-bit data; for int16 data int64, unless
    ``quantized_bias_type`` is INT32 (CONV_2D / FULLY_CONNECTED; conv.cc / fully_connected.cc Prepare+Eval)."""
    if x_t.dtype != "int16":
        return "int32"
    out_t = ctx.out_tensor()
    for t, what in ((x_t, "input"), (out_t, "output")):
        if t.dtype != "int16" or ctx.quant(t, what)[1] != 0:
            raise ctx.fail(f"16x8 {ctx.op.opcode} needs an int16 {what} with zero point 0, found {t.label} "
                           f"{t.dtype} with zero point {t.quant.zero_point[0] if t.quant is not None else None}",
                           hint="LiteRT rejects this model too")
    code = int(ctx.options.get("quantized_bias_type", 0)) if has_option else 0
    if code not in _BIAS_OPTION:
        raise ctx.fail(f"quantized_bias_type is {DTYPES.get(code, code)}; LiteRT takes int32 or int64")
    chosen = _BIAS_OPTION[code]
    bias_dtype = ctx.tensor(bias_index).dtype if ctx.has_input(bias_index) else None
    if chosen is not None and bias_dtype not in (None, chosen):
        raise ctx.fail(f"bias is {bias_dtype} but quantized_bias_type says {chosen}",
                       hint="LiteRT rejects this model too")
    if chosen is None and bias_dtype == "int32":
        if not has_option:
            raise ctx.fail("16x8 DEPTHWISE_CONV_2D needs an int64 bias, found int32", hint="LiteRT rejects it too")
        raise ctx.fail("16x8 bias is int32 without quantized_bias_type INT32; LiteRT's kernel would read it as "
                       "int64", hint="write an int64 bias, or set quantized_bias_type to INT32 in the options")
    w_t = ctx.tensor(1)
    if w_t.dtype != "int8":
        raise ctx.fail(f"16x8 {ctx.op.opcode} with {w_t.dtype} weights {w_t.label} is not supported (int8 only)")
    return chosen or "int64"


def _bias(ctx: OpContext, y: Expr, i: int, channels: int, axis: int, quantized: bool,
          acc: str = "int32") -> Expr:
    if not ctx.has_input(i):
        return y
    b_t = ctx.tensor(i)
    want = acc if quantized else "float32"
    if b_t.dtype != want:
        raise ctx.fail(f"bias {b_t.label} is {b_t.dtype}; expected {want}")
    if b_t.shape != (channels,):
        raise ctx.fail(f"bias {b_t.label} has shape {list(b_t.shape)}; expected [{channels}]")
    # Bias quantization is never read by TFLite's int8 kernels (and is malformed in person_detect): ignore it.
    return ctx.call("nn.bias_add", [y, ctx.weight(i)], {"axis": axis})


def _requantize(ctx: OpContext, y: Expr, s_in: float, w_scales: np.ndarray, axis: int, rounding: str = "TFLITE",
                products=conv_scale_products) -> Expr:
    out = ctx.out_tensor()
    s_out, zp_out = ctx.quant(out, "output")
    if out.dtype not in QUANT_DTYPES:
        raise ctx.fail(f"output {out.label} is {out.dtype}; a quantized op needs an int8/uint8/int16 output")
    scale = _scalar_or_vector(products(s_in, w_scales))
    return ctx.call("qnn.requantize", [y, ctx.const(scale, "float64"), ctx.const(0, "int32"),
                                       ctx.const(s_out, "float32"), ctx.const(zp_out, "int32")],
                    {"axis": axis, "rounding": rounding, "out_dtype": out.dtype})


def _conv_like(ctx: OpContext, depthwise: bool) -> list[Expr]:
    ctx.check_arity(2, 3)
    x_t = _rank(ctx, 0, 4, "input")
    w_t = _rank(ctx, 1, 4, "filter")
    out_t = ctx.out_tensor()
    n, h, w, cin = x_t.shape
    padding = _padding_mode(ctx)
    sw, sh = _positive(ctx, "stride_w", "stride_h")
    dw, dh = _positive(ctx, "dilation_w_factor", "dilation_h_factor")
    if depthwise:
        one, kh, kw, cout = w_t.shape
        if one != 1 or cout % cin:
            raise ctx.fail(f"depthwise filter {w_t.label} has shape {list(w_t.shape)}; expected [1, KH, KW, "
                           f"{cin}·multiplier] for {cin} input channels")
        # TVM's form: [KH, KW, Cin, multiplier] in "HWOI" (groups = Cin); one input channel is an ordinary
        # HWIO convolution [KH, KW, 1, multiplier].
        groups, channel_axis = cin, 3
        weight = ctx.weight(1, (kh, kw, cin, cout // cin))
        layout = {"kernel_layout": "HWIO" if cin == 1 else "HWOI"}
    else:
        cout, kh, kw, wcin = w_t.shape
        if cin % wcin or cout % (cin // wcin):
            raise ctx.fail(f"filter {w_t.label} has {wcin} input channels and {cout} outputs, which does not "
                           f"divide the {cin} channels of {x_t.label} into groups")
        groups, channel_axis = cin // wcin, 0
        weight = ctx.weight(1, transpose=(1, 2, 3, 0))  # TVM's HWIO from TFLite's OHWI
        layout = {"kernel_layout": "HWIO"}
    oh, pt, pb = same_padding(h, kh, sh, dh, padding)
    ow, pl, pr = same_padding(w, kw, sw, dw, padding)
    if oh <= 0 or ow <= 0:
        raise ctx.fail(f"input {x_t.label} of {h}x{w} is smaller than the dilated {kh}x{kw} filter")
    # The padding sits inside the convolution, as TVM's frontend puts it (qnn.conv2d pads with the input zero
    # point, nn.conv2d with 0).
    attrs = dict(strides=(sh, sw), padding=(pt, pl, pb, pr), dilation=(dh, dw), groups=groups, channels=cout,
                 kernel_size=(kh, kw), data_layout="NHWC", **layout)
    x = ctx.input(0)
    quantized = x_t.dtype in QUANT_DTYPES
    if quantized:
        s_in, zp_in = ctx.quant(x_t, "input")
        w_scales, w_zps = ctx.weight_quant(w_t, channel_axis, "filter")
        kzp = _quantized_kernel_zp(ctx, w_t, w_zps)
    if not quantized:
        y = ctx.call("nn.conv2d", [x, weight], attrs)
        y = _bias(ctx, y, 2, cout, 3, False)
        return [ctx.apply_activation(y, out_t)]
    acc = _accumulator(ctx, x_t, 2, has_option=not depthwise)
    y = ctx.call("qnn.conv2d", [x, weight, ctx.const(zp_in, "int32"), ctx.const(kzp, "int32"),
                                ctx.const(s_in, "float32"), ctx.const(_scalar_or_vector(w_scales), "float32")],
                 dict(attrs, out_dtype=acc))
    y = _bias(ctx, y, 2, cout, 3, True, acc)
    y = _requantize(ctx, y, s_in, w_scales, 3, products=conv_products_for(x_t.dtype))
    return [ctx.apply_activation(y, out_t)]


@converter("CONV_2D", quant=_CONV_Q, float=_CONV_F)
def convert_conv2d(ctx: OpContext) -> list[Expr]:
    return _conv_like(ctx, depthwise=False)


@converter("DEPTHWISE_CONV_2D", quant=_CONV_Q, float=_CONV_F)
def convert_depthwise_conv2d(ctx: OpContext) -> list[Expr]:
    # The depth multiplier comes from the shapes (Cout / Cin), as TFLite's kernels take it; the option is unused.
    return _conv_like(ctx, depthwise=True)


@converter("FULLY_CONNECTED", quant=("reshape", "qnn.dense", "nn.bias_add", "qnn.requantize", "clip"),
           float=("reshape", "nn.dense", "nn.bias_add", "clip"))
def convert_fully_connected(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2, 3)
    x_t = ctx.tensor(0)
    w_t = _rank(ctx, 1, 2, "weights")
    out_t = ctx.out_tensor()
    if int(ctx.options.get("weights_format", 0)) != 0:
        raise ctx.fail("shuffled weights formats are not supported", hint="re-export with the DEFAULT format")
    units, k = w_t.shape
    size = int(np.prod(x_t.shape, dtype=np.int64)) if x_t.shape else 1
    if size == 0 or size % k:
        raise ctx.fail(f"input {x_t.label} with shape {list(x_t.shape)} cannot be flattened to rows of {k}")
    keep = bool(ctx.options.get("keep_num_dims", 0))
    if keep and (not x_t.shape or x_t.shape[-1] != k):
        raise ctx.fail(f"keep_num_dims needs the last input dimension to be {k}, found {list(x_t.shape)}")
    batch = size // k
    x = ctx.input(0)
    if tuple(x_t.shape) != (batch, k):
        x = ctx.call("reshape", [x], {"newshape": (batch, k)})
    weight = ctx.weight(1)
    if x_t.dtype in QUANT_DTYPES:
        s_in, zp_in = ctx.quant(x_t, "input")
        w_scales, w_zps = ctx.weight_quant(w_t, 0, "weights")
        acc = _accumulator(ctx, x_t, 2, has_option=True)
        y = ctx.call("qnn.dense", [x, weight, ctx.const(zp_in, "int32"),
                                   ctx.const(_scalar_or_vector(w_zps), "int32"), ctx.const(s_in, "float32"),
                                   ctx.const(_scalar_or_vector(w_scales), "float32")],
                     {"units": units, "out_dtype": acc})
        y = _bias(ctx, y, 2, units, 1, True, acc)
        if ctx.semantics == "tflm":
            y = _requantize(ctx, y, s_in, w_scales, 1, "TFLITE", float32_scale_products)
        else:
            y = _requantize(ctx, y, s_in, w_scales, 1, "TFLITE_FLOAT")
    else:
        y = ctx.call("nn.dense", [x, weight], {"units": units})
        y = _bias(ctx, y, 2, units, 1, False)
    y = ctx.apply_activation(y, out_t)
    if keep and len(x_t.shape) != 2:
        y = ctx.call("reshape", [y], {"newshape": tuple(x_t.shape[:-1]) + (units,)})
    return [y]


def _transpose_conv_output_shape(ctx: OpContext) -> tuple[int, ...]:
    """TRANSPOSE_CONV's output_shape: its constant, or, when it is not in the file (a graph input, as in
    tflite-micro's SEANet models), the output tensor's stored shape under TFLite Micro's semantics, whose kernel
    never reads output_shape (it sizes and pads from the output tensor). LiteRT resizes its output to whatever
    output_shape it is fed, so under LiteRT's semantics the shape must be a constant."""
    t = ctx.tensor(0)
    if ctx.model.constant(t) is not None or ctx.semantics != "tflm":
        return tuple(ctx.int_vector(0, "output_shape", 4))
    if t.dtype != "int32" or t.shape != (4,):
        raise ctx.fail(f"output_shape {t.label} must be an int32 [4] tensor, found {t.dtype} {list(t.shape)}")
    return tuple(ctx.out_tensor().shape)


@converter("TRANSPOSE_CONV", quant=("qnn.conv2d_transpose", "nn.bias_add", "qnn.requantize", "clip"),
           float=("nn.conv2d_transpose", "nn.bias_add", "clip"))
def convert_transpose_conv(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(3, 4)
    out_shape = _transpose_conv_output_shape(ctx)
    w_t = _rank(ctx, 1, 4, "filter")
    x_t = _rank(ctx, 2, 4, "input")
    out_t = ctx.out_tensor()
    if out_shape != tuple(out_t.shape):
        raise ctx.fail(f"output_shape {list(out_shape)} disagrees with output {out_t.label} "
                       f"{list(out_t.shape)}")
    n, h, w, cin = x_t.shape
    cout, kh, kw, wcin = w_t.shape
    if wcin != cin or out_shape[0] != n or out_shape[3] != cout:
        raise ctx.fail(f"filter {w_t.label} {list(w_t.shape)} does not map input {list(x_t.shape)} to "
                       f"output {list(out_shape)}")
    padding = _padding_mode(ctx)
    sw, sh = _positive(ctx, "stride_w", "stride_h")
    # TFLite pads as if the *output* were the input of a conv (transpose_conv.cc); the extra pixel goes after.
    oh, ow = out_shape[1], out_shape[2]
    pads = []
    for size, k, s, out in ((h, kh, sh, oh), (w, kw, sw, ow)):
        _, before, _ = same_padding(out, k, s, 1, padding)
        after = (size - 1) * s + k - before - out
        pads.append((before, max(after, 0), max(-after, 0)))
    (pt, pb, oph), (pl, pr, opw) = pads
    if oph >= sh or opw >= sw:
        raise ctx.fail(f"output {list(out_shape)} is larger than the transposed convolution can produce from "
                       f"input {list(x_t.shape)} with stride {(sh, sw)}")
    attrs = dict(channels=cout, kernel_size=(kh, kw), strides=(sh, sw), padding=(pt, pl, pb, pr),
                 output_padding=(oph, opw), data_layout="NHWC", kernel_layout="OHWI")
    x = ctx.input(2)
    weight = ctx.weight(1)
    out_act = ctx.activation()
    if x_t.dtype in QUANT_DTYPES:
        s_in, zp_in = ctx.quant(x_t, "input")
        w_scales, w_zps = ctx.weight_quant(w_t, 0, "filter")
        kzp = _quantized_kernel_zp(ctx, w_t, w_zps)
        acc = _accumulator(ctx, x_t, 3, has_option=False)   # 16x8: int64 accumulator and bias, as CONV_2D
        y = ctx.call("qnn.conv2d_transpose", [x, weight, ctx.const(zp_in, "int32"), ctx.const(kzp, "int32"),
                                              ctx.const(s_in, "float32"),
                                              ctx.const(_scalar_or_vector(w_scales), "float32")],
                     dict(attrs, out_dtype=acc))
        y = _bias(ctx, y, 3, cout, 3, True, acc)
        y = _requantize(ctx, y, s_in, w_scales, 3, products=conv_products_for(x_t.dtype))
    else:
        y = ctx.call("nn.conv2d_transpose", [x, weight], attrs)
        y = _bias(ctx, y, 3, cout, 3, False)
    return [ctx.apply_activation(y, out_t, out_act)]
