"""TFLite converters for SLICE, EXPAND_DIMS, SPLIT_V, PACK, UNPACK, MAXIMUM, MINIMUM, ARG_MAX, ARG_MIN,
REDUCE_MAX, REDUCE_MIN, SUM, DEPTH_TO_SPACE, SPACE_TO_DEPTH, GATHER, PRELU (quantized: ``qnn.prelu``),
RESIZE_BILINEAR and BATCH_MATMUL.

All but SUM move or compare raw values (LiteRT's kernels do not rescale them), so quantized tensors map to the
plain ops on their integers. Where LiteRT requires equal input/output quantization (PACK, UNPACK, REDUCE_MAX/MIN)
a model without it is refused here as LiteRT refuses it.

SUM requantizes like MEAN without the 1/N: ``cast(int32) → sum → qnn.requantize(input zero point zp_in·N)``
(QuantizeMultiplier(double(s_in)/double(s_out)), TFLite's rounding). LiteRT's reference SUM reads int8 tensors
as uint8 (reduce.cc passes ``GetTensorData<uint8_t>`` to QuantizedMeanOrSum for every 8-bit type), clamps to
[0, 255] and stores the byte; ``semantics="litert"`` reproduces that with wrapping casts around the uint8 path.
TFLite Micro sums int8 as int8.

RESIZE_BILINEAR is ``image.resize2d(method="linear")`` on the raw values (LiteRT interpolates the integers of a
quantized tensor and never rescales; byoc/ops/image.py has its per-dtype arithmetic); TVM's coordinate modes
spell TFLite's flags: align_corners → "align_corners", half_pixel_centers → "half_pixel", neither → "asymmetric".

BATCH_MATMUL follows TVM's frontend: batch dimensions are broadcast (``broadcast_to``, only when both operands
have batch dimensions of their own) and flattened to 3-D (``reshape``), then ``nn.batch_matmul`` or
``qnn.batch_matmul`` with ``transpose_a = adj_x`` and ``transpose_b = adj_y`` (attributes rather than TVM's
explicit transposes), then ``reshape`` back. The quantized product is requantized like a convolution's:
``qnn.requantize(input_scale = double(s_a)·double(s_b), TFLITE)`` — LiteRT's GetQuantizedConvolutionMultipler and
MultiplyByQuantizedMultiplier, saturating to int8 (BATCH_MATMUL has no fused activation). LiteRT accepts float32,
int8 and int16 (uint8 is refused there too); int16 (an int64 accumulator) and hybrid float × int8 are not supported.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Expr, Span
from ..ops.image import LINEAR_DTYPES, linear_int_taps
from .tflite_context import QUANT_DTYPES, OpContext, converter, tensor_name
from .tflite_quant import conv_scale_products


def _axis(ctx: OpContext, value: int, rank: int, what: str = "axis") -> int:
    if not -rank <= value < rank:
        raise ctx.fail(f"{what} {value} is out of range for rank {rank}")
    return value % rank


def _same_quant(ctx: OpContext, a, b, why: str) -> None:
    """LiteRT's TF_LITE_ENSURE_EQ on (scale, zero point) of two quantized tensors."""
    if a.dtype not in QUANT_DTYPES:
        return
    sa, za = ctx.quant(a, "input")
    sb, zb = ctx.quant(b, "output")
    if np.float32(sa) != np.float32(sb) or za != zb:
        raise ctx.fail(f"{a.label} has (scale {sa}, zero point {za}) but {b.label} has ({sb}, {zb}); {why} "
                       "requires equal quantization", hint="LiteRT rejects this model too")


def _same_dtype(ctx: OpContext, *tensors) -> None:
    if len({t.dtype for t in tensors}) != 1:
        raise ctx.fail("operands and results must share one dtype, found "
                       + ", ".join(f"{t.label}: {t.dtype}" for t in tensors))


def _with_span(ctx: OpContext, j: int, build):
    """Build a node carrying output ``j``'s tensor name (multi-output ops)."""
    saved = ctx.span
    ctx.span = Span(tensor_name(ctx.out_tensor(j)))
    try:
        return build()
    finally:
        ctx.span = saved


# ------------------------------------------------------------------------------------------ data movement
@converter("SLICE", quant=("strided_slice",), float=("strided_slice",))
def convert_slice(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(3)
    x_t = ctx.tensor(0)
    rank = len(x_t.shape)
    begin = ctx.int_vector(1, "begin", rank)
    size = ctx.int_vector(2, "size", rank)
    end = []
    for i, (b, s, d) in enumerate(zip(begin, size, x_t.shape)):
        e = d if s == -1 else b + s
        if not (0 <= b and s >= -1 and b < e <= d):
            raise ctx.fail(f"axis {i}: begin {b} and size {s} do not select a non-empty range of [0, {d})")
        end.append(e)
    return [ctx.call("strided_slice", [ctx.input(0)], {"begin": tuple(begin), "end": tuple(end),
                                                        "strides": (1,) * rank})]


@converter("EXPAND_DIMS", quant=("expand_dims",), float=("expand_dims",))
def convert_expand_dims(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t = ctx.tensor(0)
    rank = len(x_t.shape)
    axis = _axis(ctx, ctx.int_vector(1, "axis", 1)[0], rank + 1)
    _same_quant(ctx, x_t, ctx.out_tensor(), "EXPAND_DIMS")
    return [ctx.call("expand_dims", [ctx.input(0)], {"axis": axis, "num_newaxis": 1})]


@converter("SPLIT_V", quant=("split",), float=("split",))
def convert_split_v(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(3, 3, outputs=-1)
    x_t = ctx.tensor(0)
    rank = len(x_t.shape)
    axis = _axis(ctx, ctx.int_vector(2, "axis", 1)[0], rank)
    sizes = ctx.int_vector(1, "size_splits")
    n = len(ctx.op.outputs)
    if len(sizes) != n or n != int(ctx.options.get("num_splits", n)):
        raise ctx.fail(f"size_splits {sizes} and num_splits {ctx.options.get('num_splits')} do not match the "
                       f"{n} outputs")
    dim = x_t.shape[axis]
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = dim - sum(s for s in sizes if s != -1)
    if any(s <= 0 for s in sizes) or sum(sizes) != dim:
        raise ctx.fail(f"size_splits {ctx.int_vector(1, 'size_splits')} do not split axis {axis} of size {dim} "
                       "into non-empty parts")
    bounds = list(np.cumsum(sizes)[:-1].tolist())
    tup = ctx.call("split", [ctx.input(0)], {"indices_or_sections": tuple(int(b) for b in bounds), "axis": axis})
    return [ctx.item(tup, j, Span(tensor_name(ctx.out_tensor(j)))) for j in range(n)]


@converter("PACK", quant=("stack",), float=("stack",))
def convert_pack(ctx: OpContext) -> list[Expr]:
    n = len(ctx.op.inputs)
    ctx.check_arity(1, max(n, 1))
    if int(ctx.options.get("values_count", n)) != n:
        raise ctx.fail(f"values_count {ctx.options.get('values_count')} but {n} inputs")
    tensors = [ctx.tensor(i) for i in range(n)]
    out_t = ctx.out_tensor()
    _same_dtype(ctx, *tensors, out_t)
    axis = _axis(ctx, int(ctx.options.get("axis", 0)), len(tensors[0].shape) + 1)
    for t in tensors:
        if t.shape != tensors[0].shape:
            raise ctx.fail(f"input {t.label} has shape {list(t.shape)}, input 0 {list(tensors[0].shape)}")
        _same_quant(ctx, t, out_t, "PACK")
    return [ctx.call("stack", [ctx.tuple([ctx.input(i) for i in range(n)])], {"axis": axis})]


@converter("UNPACK", quant=("split", "squeeze"), float=("split", "squeeze"))
def convert_unpack(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1, 1, outputs=-1)
    x_t = ctx.tensor(0)
    rank = len(x_t.shape)
    axis = _axis(ctx, int(ctx.options.get("axis", 0)), rank)
    num = int(ctx.options.get("num", 0))
    if num != x_t.shape[axis] or num != len(ctx.op.outputs) or num <= 0:
        raise ctx.fail(f"num {num} with {len(ctx.op.outputs)} outputs cannot unpack axis {axis} of size "
                       f"{x_t.shape[axis]}")
    for j in range(num):
        _same_dtype(ctx, x_t, ctx.out_tensor(j))
        _same_quant(ctx, x_t, ctx.out_tensor(j), "UNPACK")
    tup = ctx.call("split", [ctx.input(0)], {"indices_or_sections": num, "axis": axis})
    return [_with_span(ctx, j, lambda j=j: ctx.call("squeeze", [ctx.item(tup, j)], {"axis": (axis,)}))
            for j in range(num)]


@converter("DEPTH_TO_SPACE", quant=("nn.depth_to_space",), float=("nn.depth_to_space",))
def convert_depth_to_space(ctx: OpContext) -> list[Expr]:
    return _space_depth(ctx, "nn.depth_to_space")


@converter("SPACE_TO_DEPTH", quant=("nn.space_to_depth",), float=("nn.space_to_depth",))
def convert_space_to_depth(ctx: OpContext) -> list[Expr]:
    return _space_depth(ctx, "nn.space_to_depth")


def _space_depth(ctx: OpContext, op: str) -> list[Expr]:
    ctx.check_arity(1)
    x_t = ctx.tensor(0)
    _same_dtype(ctx, x_t, ctx.out_tensor())
    bs = int(ctx.options.get("block_size", 0))
    if bs <= 0:
        raise ctx.fail(f"block_size is {bs}; it must be positive")
    attrs = {"block_size": bs, "layout": "NHWC"}
    if op == "nn.depth_to_space":
        attrs["mode"] = "DCR"
    return [ctx.call(op, [ctx.input(0)], attrs)]


@converter("GATHER", quant=("take",), float=("take",))
def convert_gather(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t, i_t = ctx.tensor(0), ctx.tensor(1)
    _same_dtype(ctx, x_t, ctx.out_tensor())
    if i_t.dtype not in ("int32", "int64"):
        raise ctx.fail(f"indices {i_t.label} are {i_t.dtype}; GATHER takes int32 or int64 positions")
    rank = len(x_t.shape)
    axis = _axis(ctx, int(ctx.options.get("axis", 0)), rank)
    batch_dims = int(ctx.options.get("batch_dims", 0))
    if batch_dims < 0:
        batch_dims += len(i_t.shape)
    if not 0 <= batch_dims <= min(axis, len(i_t.shape)):
        raise ctx.fail(f"batch_dims {ctx.options.get('batch_dims')} must lie in [0, axis {axis}]")
    if ctx.model.constant(i_t) is not None:
        idx = ctx.const_value(1, "indices")
        if idx.size and (idx.min() < 0 or idx.max() >= x_t.shape[axis]):
            raise ctx.fail(f"indices {i_t.label} hold {int(idx.min())}..{int(idx.max())}, outside [0, "
                           f"{x_t.shape[axis]}) of axis {axis}", hint="LiteRT fails on this model at run time")
    # "fast": an out-of-range runtime index is an error, as in LiteRT (the interpreter refuses it).
    return [ctx.call("take", [ctx.input(0), ctx.input(1)], {"axis": axis, "batch_dims": batch_dims,
                                                            "mode": "fast"})]


# --------------------------------------------------------------------------------------- compare / reduce
@converter("MAXIMUM", quant=("maximum",), float=("maximum",))
def convert_maximum(ctx: OpContext) -> list[Expr]:
    return _minmax(ctx, "maximum")


@converter("MINIMUM", quant=("minimum",), float=("minimum",))
def convert_minimum(ctx: OpContext) -> list[Expr]:
    return _minmax(ctx, "minimum")


def _minmax(ctx: OpContext, op: str) -> list[Expr]:
    ctx.check_arity(2)
    _same_dtype(ctx, ctx.tensor(0), ctx.tensor(1), ctx.out_tensor())
    return [ctx.call(op, [ctx.input(0), ctx.input(1)])]


@converter("ARG_MAX", quant=("argmax", "cast"), float=("argmax", "cast"))
def convert_arg_max(ctx: OpContext) -> list[Expr]:
    return _arg(ctx, "argmax")


@converter("ARG_MIN", quant=("argmin", "cast"), float=("argmin", "cast"))
def convert_arg_min(ctx: OpContext) -> list[Expr]:
    return _arg(ctx, "argmin")


def _arg(ctx: OpContext, op: str) -> list[Expr]:
    ctx.check_arity(2)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    if not x_t.shape:
        raise ctx.fail(f"input {x_t.label} is a scalar; {ctx.op.opcode} needs rank ≥ 1")
    axis = _axis(ctx, ctx.int_vector(1, "axis", 1)[0], len(x_t.shape))
    if out_t.dtype not in ("int32", "int64"):
        raise ctx.fail(f"output {out_t.label} is {out_t.dtype}; {ctx.op.opcode} produces int32 or int64")
    y = ctx.call(op, [ctx.input(0)], {"axis": (axis,), "keepdims": False})
    return [y if out_t.dtype == "int32" else ctx.call("cast", [y], {"dtype": "int64"})]


def _reduce_attrs(ctx: OpContext, x_t) -> dict:
    rank = len(x_t.shape)
    axes = []
    for a in ctx.int_vector(1, "axes"):
        a = _axis(ctx, a, rank)
        if a not in axes:
            axes.append(a)
    if not axes:
        raise ctx.fail(f"{ctx.op.opcode} over no axes is not supported")
    if any(x_t.shape[a] == 0 for a in axes):
        raise ctx.fail(f"input {x_t.label} has an empty reduced axis")
    return {"axis": tuple(sorted(axes)), "keepdims": bool(ctx.options.get("keep_dims", 0))}


@converter("REDUCE_MAX", quant=("max",), float=("max",))
def convert_reduce_max(ctx: OpContext) -> list[Expr]:
    return _reduce_extreme(ctx, "max")


@converter("REDUCE_MIN", quant=("min",), float=("min",))
def convert_reduce_min(ctx: OpContext) -> list[Expr]:
    return _reduce_extreme(ctx, "min")


def _reduce_extreme(ctx: OpContext, op: str) -> list[Expr]:
    ctx.check_arity(2)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    _same_dtype(ctx, x_t, out_t)
    _same_quant(ctx, x_t, out_t, ctx.op.opcode)
    return [ctx.call(op, [ctx.input(0)], _reduce_attrs(ctx, x_t))]


@converter("SUM", quant=("cast", "sum", "qnn.requantize"), float=("sum",))
def convert_sum(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    _same_dtype(ctx, x_t, out_t)
    attrs = _reduce_attrs(ctx, x_t)
    x = ctx.input(0)
    if x_t.dtype not in QUANT_DTYPES:
        if x_t.dtype not in ("float32", "int32", "int64"):
            raise ctx.fail(f"input {x_t.label} is {x_t.dtype}; SUM takes float32, int32, int64, int8 or uint8")
        return [ctx.call("sum", [x], attrs)]
    if x_t.dtype == "int16":
        raise ctx.fail("int16 SUM is not supported", hint="LiteRT's reference kernel reads int16 SUM as bytes")
    s_in, zp_in = ctx.quant(x_t, "input")
    s_out, zp_out = ctx.quant(out_t, "output")
    n = 1
    for a in attrs["axis"]:
        n *= x_t.shape[a]
    as_bytes = x_t.dtype == "int8" and ctx.semantics == "litert"
    acc_dtype = "uint8" if as_bytes else x_t.dtype
    if as_bytes:
        x = ctx.call("cast", [x], {"dtype": "uint8"})  # wraps: the same bytes read as uint8
    total = ctx.call("sum", [ctx.call("cast", [x], {"dtype": "int32"})], attrs)
    y = ctx.call("qnn.requantize", [total, ctx.const(s_in, "float32"), ctx.const(zp_in * n, "int32"),
                                    ctx.const(s_out, "float32"), ctx.const(zp_out, "int32")],
                 {"axis": -1, "rounding": "TFLITE", "out_dtype": acc_dtype})
    if as_bytes:
        y = ctx.call("cast", [y], {"dtype": "int8"})  # the stored byte, read back as int8
    return [y]


@converter("PRELU", quant=("qnn.prelu",), float=("maximum", "minimum", "multiply", "add"))
def convert_prelu(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t, a_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    _same_dtype(ctx, x_t, a_t, out_t)
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


# ------------------------------------------------------------------------------------- resize / batch matmul
@converter("RESIZE_BILINEAR", quant=("image.resize2d",), float=("image.resize2d",))
def convert_resize_bilinear(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t = ctx.nhwc_input(0)
    _same_dtype(ctx, x_t, ctx.out_tensor())
    if x_t.dtype not in LINEAR_DTYPES:
        raise ctx.fail(f"input {x_t.label} is {x_t.dtype}; RESIZE_BILINEAR takes " + ", ".join(LINEAR_DTYPES))
    size, align, half = ctx.resize_options()
    mode = "align_corners" if align else "half_pixel" if half else "asymmetric"
    if x_t.dtype in ("int8", "int16"):
        for axis, (out, inn) in enumerate(zip(size, x_t.shape[1:3])):
            s, _, _ = linear_int_taps(out, inn, mode)
            if int(s.max()) // 1024 >= inn:
                raise ctx.fail(f"resizing {'height' if axis == 0 else 'width'} {inn} to {out}: LiteRT's 10-bit kernel "
                               f"would read row/column {int(s.max()) // 1024}, past the input's edge",
                               hint="its result is undefined (an out-of-bounds read); use a smaller ratio or float")
    return [ctx.call("image.resize2d", [ctx.input(0)], {
        "size": tuple(size), "layout": "NHWC", "method": "linear", "coordinate_transformation_mode": mode,
        "rounding_method": ""})]


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
    if a_t.dtype != b_t.dtype:
        raise ctx.fail(f"operands {a_t.label} ({a_t.dtype}) and {b_t.label} ({b_t.dtype}) differ in dtype; hybrid "
                       "BATCH_MATMUL is not supported")
    if a_t.dtype not in ("float32", "int8"):
        why = ("LiteRT's BATCH_MATMUL takes float32, int8 or int16 (it refuses this model too)"
               if a_t.dtype != "int16" else "int16 BATCH_MATMUL (an int64 accumulator) is not supported")
        raise ctx.fail(f"operands are {a_t.dtype}; {why}")
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
                     dict(attrs, out_dtype="int32"))
        scale = conv_scale_products(s_a, np.array([s_b]))[0]
        y = ctx.call("qnn.requantize", [y, ctx.const(scale, "float64"), ctx.const(0, "int32"),
                                        ctx.const(s_out, "float32"), ctx.const(zp_out, "int32")],
                     {"axis": -1, "rounding": "TFLITE", "out_dtype": out_t.dtype})
    final = out_batch + (m, n)
    if final != (int(np.prod(out_batch, dtype=np.int64)), m, n):
        y = ctx.call("reshape", [y], {"newshape": final})
    return [y]
