"""TFLite converters for pooling and reductions: AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, SUM, REDUCE_MAX,
REDUCE_MIN, ARG_MAX, ARG_MIN.

REDUCE_MAX/MIN and ARG_MAX/MIN compare raw values; LiteRT requires equal input/output quantization for
REDUCE_MAX/MIN and a model without it is refused here as LiteRT refuses it.

SUM requantizes like MEAN without the 1/N: ``cast(int32) → sum → qnn.requantize(input zero point zp_in·N)``
(QuantizeMultiplier(double(s_in)/double(s_out)), TFLite's rounding). LiteRT's reference SUM reads int8 tensors
as uint8 (reduce.cc passes ``GetTensorData<uint8_t>`` to QuantizedMeanOrSum for every 8-bit type), clamps to
[0, 255] and stores the byte; ``semantics="litert"`` reproduces that with wrapping casts around the uint8 path.
TFLite Micro sums int8 as int8.
"""
from __future__ import annotations


from ..ir.expr import Expr
from .tflite_context import OpContext, QUANT_DTYPES, converter
from .tflite_quant import same_padding
from ..transform.canonicalize_qnn import as_integer_op


# ------------------------------------------------------------------------------------------------- pooling
def _pool(ctx: OpContext, kind: str) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    if len(x_t.shape) != 4 or 0 in x_t.shape:
        raise ctx.fail(f"input {x_t.label} has shape {list(x_t.shape)}; expected a non-empty NHWC tensor")
    ctx.same_dtype(x_t, out_t)
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


@converter("MEAN", quant=("cast", "mean", "qnn.requantize"), float=("mean",))
def convert_mean(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    ctx.same_dtype(x_t, out_t)
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
    if x_t.dtype not in QUANT_DTYPES:
        return [ctx.call("mean", [x], attrs)]
    # TVM's form: cast(int32) → mean → qnn.requantize, whose ``kernel="qnn.mean"`` names LiteRT's integer MEAN;
    # executors run that kernel for the intact chain (byoc/transform/canonicalize_qnn.py).
    total = ctx.call("mean", [ctx.call("cast", [x], {"dtype": "int32"})], attrs)
    end = ctx.call("qnn.requantize", [total] + ctx.quant_operands((x_t, "input"), (out_t, "output")),
                   {"out_dtype": out_t.dtype, "kernel": "qnn.mean"})
    exact = as_integer_op(end)
    assert exact is not None, "MEAN: the emitted chain is not the canonical form"
    ctx.call(exact.op.name, exact.args, exact.attrs)  # qnn.mean's own type rules, checked at import
    return [end]


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
    axis = ctx.axis(ctx.int_vector(1, "axis", 1)[0], len(x_t.shape))
    if out_t.dtype not in ("int32", "int64"):
        raise ctx.fail(f"output {out_t.label} is {out_t.dtype}; {ctx.op.opcode} produces int32 or int64")
    y = ctx.call(op, [ctx.input(0)], {"axis": (axis,), "keepdims": False})
    return [y if out_t.dtype == "int32" else ctx.call("cast", [y], {"dtype": "int64"})]


def _reduce_attrs(ctx: OpContext, x_t) -> dict:
    rank = len(x_t.shape)
    axes = []
    for a in ctx.int_vector(1, "axes"):
        a = ctx.axis(a, rank)
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
    ctx.same_dtype(x_t, out_t)
    ctx.same_quant(x_t, out_t, ctx.op.opcode)
    return [ctx.call(op, [ctx.input(0)], _reduce_attrs(ctx, x_t))]


@converter("SUM", quant=("cast", "sum", "qnn.requantize"), float=("sum",))
def convert_sum(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    ctx.same_dtype(x_t, out_t)
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
