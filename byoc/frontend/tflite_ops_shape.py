"""TFLite converters for data movement: PAD, PADV2, MIRROR_PAD, RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE,
CONCATENATION, SPLIT, SPLIT_V, PACK, UNPACK, SLICE, STRIDED_SLICE, TILE, BROADCAST_TO, DEPTH_TO_SPACE,
SPACE_TO_DEPTH, GATHER, GATHER_ND and SHAPE (a constant: every imported tensor has a static shape).

None of them rescales, except uint8 CONCATENATION with differing input parameters (LiteRT's float32 rescale; int8
inputs must match the output exactly, as LiteRT requires; int16 inputs are copied raw whatever their scales, as
LiteRT does). Where LiteRT requires equal input/output quantization (PACK, UNPACK, EXPAND_DIMS) a model without it
is refused here as LiteRT refuses it. MIRROR_PAD → ``nn.mirror_pad`` (REFLECT / SYMMETRIC); GATHER_ND →
``gather_nd`` with the indices transposed to TVM's [M, ...] layout (TVM's frontend does the same).
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Expr, Span
from .tflite_context import OpContext, QUANT_DTYPES, converter, tensor_name


_INT_MAX = 2**31 - 1


_INT_MIN = -(2**31)


def _pad(ctx: OpContext, v2: bool) -> list[Expr]:
    ctx.check_arity(2, 3 if v2 else 2)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    rank = len(x_t.shape)
    p = ctx.paddings(1, rank)
    if np.any(p < 0) or np.any(p > _INT_MAX):
        raise ctx.fail(f"paddings {p.tolist()} must be non-negative")
    if x_t.dtype != out_t.dtype:
        raise ctx.fail(f"output {out_t.label} is {out_t.dtype} but input {x_t.label} is {x_t.dtype}")
    if v2 and ctx.has_input(2):
        c_t = ctx.tensor(2)
        value = ctx.const_value(2, "constant_values").reshape(-1)
        if c_t.dtype != x_t.dtype or value.size != 1:
            raise ctx.fail(f"constant_values {c_t.label} must hold one {x_t.dtype} value")
        pad_value = value[0]
    elif x_t.dtype in QUANT_DTYPES and out_t.quant is not None:
        pad_value = ctx.quant(out_t, "output")[1]  # TFLite pads with the output zero point
    else:
        pad_value = 0
    pad_width = tuple((int(a), int(b)) for a, b in p)
    return [ctx.call("nn.pad", [ctx.input(0), ctx.const(pad_value, x_t.dtype)], {"pad_width": pad_width})]


@converter("PAD", quant=("nn.pad",), float=("nn.pad",))
def convert_pad(ctx: OpContext) -> list[Expr]:
    return _pad(ctx, v2=False)


@converter("PADV2", quant=("nn.pad",), float=("nn.pad",))
def convert_padv2(ctx: OpContext) -> list[Expr]:
    return _pad(ctx, v2=True)


def _resolve_shape(ctx: OpContext, shape: list[int], size: int) -> tuple[int, ...]:
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        raise ctx.fail(f"new shape {shape} may hold at most one -1 and no other negative value")
    known = 1
    for d in shape:
        if d != -1:
            known *= d
    if -1 in shape:
        if known == 0 or size % known:
            raise ctx.fail(f"new shape {shape} is incompatible with {size} elements")
        shape = [size // known if d == -1 else d for d in shape]
    elif known != size:
        raise ctx.fail(f"new shape {shape} holds {known} elements, the input {size}")
    if 0 in shape:
        raise ctx.fail(f"new shape {shape} has an empty dimension")
    return tuple(shape)


@converter("RESHAPE", quant=("reshape",), float=("reshape",))
def convert_reshape(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1, 2)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    if ctx.has_input(1) and ctx.model.constant(ctx.tensor(1)) is not None:
        shape = ctx.int_vector(1, "shape")
    elif ctx.options.get("new_shape") is not None:
        shape = list(ctx.options["new_shape"])
    else:
        shape = list(out_t.shape)
    size = int(np.prod(x_t.shape, dtype=np.int64)) if x_t.shape else 1
    newshape = _resolve_shape(ctx, shape, size)
    return [ctx.call("reshape", [ctx.input(0)], {"newshape": newshape})]


@converter("SQUEEZE", quant=("squeeze",), float=("squeeze",))
def convert_squeeze(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t = ctx.tensor(0)
    rank = len(x_t.shape)
    dims = ctx.options.get("squeeze_dims") or ()
    axes = []
    for a in dims:
        if not -rank <= a < rank or x_t.shape[a % rank] != 1:
            raise ctx.fail(f"cannot squeeze axis {a} of input {x_t.label} with shape {list(x_t.shape)}")
        if a % rank not in axes:
            axes.append(a % rank)
    return [ctx.call("squeeze", [ctx.input(0)], {"axis": tuple(sorted(axes)) if axes else None})]


@converter("TRANSPOSE", quant=("transpose",), float=("transpose",))
def convert_transpose(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t = ctx.tensor(0)
    perm = ctx.int_vector(1, "perm")
    if sorted(perm) != list(range(len(x_t.shape))):
        raise ctx.fail(f"perm {perm} is not a permutation of the {len(x_t.shape)} axes of {x_t.label}")
    return [ctx.call("transpose", [ctx.input(0)], {"axes": tuple(perm)})]


@converter("CONCATENATION", quant=("qnn.concatenate", "concatenate"), float=("concatenate",))
def convert_concatenation(ctx: OpContext) -> list[Expr]:
    n = len(ctx.op.inputs)
    ctx.check_arity(1, max(n, 1))
    ctx.activation()  # validated, then ignored as TFLite's kernels ignore it
    tensors = [ctx.tensor(i) for i in range(n)]
    out_t = ctx.out_tensor()
    rank = len(out_t.shape)
    axis = int(ctx.options.get("axis", 0))
    if not -rank <= axis < rank:
        raise ctx.fail(f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    for t in tensors:
        if t.dtype != out_t.dtype:
            raise ctx.fail(f"input {t.label} is {t.dtype}, the output {out_t.dtype}")
    xs = ctx.tuple([ctx.input(i) for i in range(n)])
    if out_t.dtype not in QUANT_DTYPES:
        return [ctx.call("concatenate", [xs], {"axis": axis})]
    s_out, zp_out = ctx.quant(out_t, "output")
    if out_t.dtype == "int16":
        return [_concat_int16(ctx, xs, tensors, out_t, s_out, zp_out, axis)]
    scales, zps = [], []
    for t in tensors:
        s, zp = ctx.quant(t, "input")
        if out_t.dtype != "uint8" and (np.float32(s) != np.float32(s_out) or zp != zp_out):
            raise ctx.fail(f"input {t.label} has (scale {s}, zero point {zp}) but the output has ({s_out}, "
                           f"{zp_out}); {out_t.dtype} concatenation requires equal parameters",
                           hint="LiteRT rejects this model too")
        scales.append(ctx.const(s, "float32"))
        zps.append(ctx.const(zp, "int32"))
    return [ctx.call("qnn.concatenate", [xs, ctx.tuple(scales), ctx.tuple(zps), ctx.const(s_out, "float32"),
                                         ctx.const(zp_out, "int32")], {"axis": axis})]


def _concat_int16(ctx: OpContext, xs, tensors, out_t, s_out: float, zp_out: int, axis: int) -> Expr:
    """LiteRT's int16 CONCATENATION copies the raw values whatever the input scales (concatenation.cc checks
    only that every zero point is 0): equal parameters keep ``qnn.concatenate``, others a raw ``concatenate``."""
    params = [ctx.quant(t, "input") for t in tensors]
    for t, (_, zp) in zip(list(tensors) + [out_t], params + [(s_out, zp_out)]):
        if zp != 0:
            raise ctx.fail(f"int16 CONCATENATION needs zero point 0 on every tensor, found {zp} on {t.label}",
                           hint="LiteRT rejects this model too")
    if any(np.float32(s) != np.float32(s_out) for s, _ in params):
        return ctx.call("concatenate", [xs], {"axis": axis})
    return ctx.call("qnn.concatenate", [xs, ctx.tuple([ctx.const(s, "float32") for s, _ in params]),
                                        ctx.tuple([ctx.const(0, "int32") for _ in params]),
                                        ctx.const(s_out, "float32"), ctx.const(0, "int32")], {"axis": axis})


@converter("SPLIT", quant=("split",), float=("split",))
def convert_split(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2, 2, outputs=-1)
    axis_v = ctx.int_vector(0, "axis", 1)[0]
    x_t = ctx.tensor(1)
    rank = len(x_t.shape)
    if not -rank <= axis_v < rank:
        raise ctx.fail(f"axis {axis_v} is out of range for input {x_t.label} of rank {rank}")
    axis = axis_v % rank
    num = int(ctx.options.get("num_splits", 0))
    if num <= 0 or num != len(ctx.op.outputs) or x_t.shape[axis] % num:
        raise ctx.fail(f"num_splits {num} with {len(ctx.op.outputs)} outputs cannot split axis {axis} of size "
                       f"{x_t.shape[axis]}")
    tup = ctx.call("split", [ctx.input(1)], {"indices_or_sections": num, "axis": axis})
    return [ctx.item(tup, j, Span(tensor_name(ctx.out_tensor(j)))) for j in range(num)]


def _slice_bounds(begin: int, end: int, stride: int, dim: int, begin_masked: bool, end_masked: bool,
                  shrink: bool) -> tuple[int, int]:
    """TFLite's StartForAxis / StopForAxis (strided_slice_logic.h), offset=False."""
    start = begin
    if begin_masked:
        start = _INT_MIN if stride > 0 else _INT_MAX
    if start < 0:
        start += dim
    start = min(max(start, 0), dim) if stride > 0 else min(max(start, -1), dim - 1)
    if shrink:
        return start, start + 1
    stop = end
    if end_masked:
        stop = _INT_MAX if stride > 0 else _INT_MIN
    if stop < 0:
        stop += dim
    stop = min(max(stop, 0), dim) if stride > 0 else min(max(stop, -1), dim - 1)
    return start, stop


@converter("STRIDED_SLICE", quant=("strided_slice", "reshape"), float=("strided_slice", "reshape"))
def convert_strided_slice(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(4)
    x_t = ctx.tensor(0)
    o = ctx.options
    for key in ("ellipsis_mask", "new_axis_mask", "offset"):
        if int(o.get(key, 0)):
            raise ctx.fail(f"{key} is not supported")
    rank = len(x_t.shape)
    begin, end, strides = (ctx.int_vector(i, name) for i, name in ((1, "begin"), (2, "end"), (3, "strides")))
    if not len(begin) == len(end) == len(strides) <= rank:
        raise ctx.fail(f"begin/end/strides have {len(begin)}/{len(end)}/{len(strides)} values for rank {rank}")
    bm, em, sm = (int(o.get(k, 0)) for k in ("begin_mask", "end_mask", "shrink_axis_mask"))
    b_out, e_out, s_out, shape = [], [], [], []
    for i, dim in enumerate(x_t.shape):
        if i >= len(begin):
            b_out.append(0), e_out.append(dim), s_out.append(1), shape.append(dim)
            continue
        s = strides[i]
        if s == 0:
            raise ctx.fail(f"stride of axis {i} is 0")
        shrink = bool(sm >> i & 1)
        start, stop = _slice_bounds(begin[i], end[i], s, dim, bool(bm >> i & 1), bool(em >> i & 1), shrink)
        if shrink and not 0 <= start < dim:
            raise ctx.fail(f"shrink_axis index {begin[i]} is out of range for axis {i} of size {dim}")
        count = max(0, -(-(stop - start) // s)) if s > 0 else max(0, -(-(start - stop) // -s))
        if count == 0 or (s < 0 and start < 0):
            raise ctx.fail(f"axis {i} slices to an empty range; empty tensors are not supported")
        # Python-slice spelling: a negative stride's stop of -1 means "through index 0".
        b_out.append(start), e_out.append(stop if stop >= 0 else -(dim + 1)), s_out.append(s)
        if not shrink:
            shape.append(count)
    y = ctx.call("strided_slice", [ctx.input(0)], {"begin": tuple(b_out), "end": tuple(e_out),
                                                    "strides": tuple(s_out)})
    if sm:
        y = ctx.call("reshape", [y], {"newshape": tuple(shape)})
    return [y]


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
    axis = ctx.axis(ctx.int_vector(1, "axis", 1)[0], rank + 1)
    ctx.same_quant(x_t, ctx.out_tensor(), "EXPAND_DIMS")
    return [ctx.call("expand_dims", [ctx.input(0)], {"axis": axis, "num_newaxis": 1})]


@converter("SPLIT_V", quant=("split",), float=("split",))
def convert_split_v(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(3, 3, outputs=-1)
    x_t = ctx.tensor(0)
    rank = len(x_t.shape)
    axis = ctx.axis(ctx.int_vector(2, "axis", 1)[0], rank)
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
    ctx.same_dtype(*tensors, out_t)
    axis = ctx.axis(int(ctx.options.get("axis", 0)), len(tensors[0].shape) + 1)
    for t in tensors:
        if t.shape != tensors[0].shape:
            raise ctx.fail(f"input {t.label} has shape {list(t.shape)}, input 0 {list(tensors[0].shape)}")
        ctx.same_quant(t, out_t, "PACK")
    return [ctx.call("stack", [ctx.tuple([ctx.input(i) for i in range(n)])], {"axis": axis})]


@converter("UNPACK", quant=("split", "squeeze"), float=("split", "squeeze"))
def convert_unpack(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1, 1, outputs=-1)
    x_t = ctx.tensor(0)
    rank = len(x_t.shape)
    axis = ctx.axis(int(ctx.options.get("axis", 0)), rank)
    num = int(ctx.options.get("num", 0))
    if num != x_t.shape[axis] or num != len(ctx.op.outputs) or num <= 0:
        raise ctx.fail(f"num {num} with {len(ctx.op.outputs)} outputs cannot unpack axis {axis} of size "
                       f"{x_t.shape[axis]}")
    for j in range(num):
        ctx.same_dtype(x_t, ctx.out_tensor(j))
        ctx.same_quant(x_t, ctx.out_tensor(j), "UNPACK")
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
    ctx.same_dtype(x_t, ctx.out_tensor())
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
    ctx.same_dtype(x_t, ctx.out_tensor())
    if i_t.dtype not in ("int32", "int64"):
        raise ctx.fail(f"indices {i_t.label} are {i_t.dtype}; GATHER takes int32 or int64 positions")
    rank = len(x_t.shape)
    axis = ctx.axis(int(ctx.options.get("axis", 0)), rank)
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


# ------------------------------------------------------------------------------------------------ data movement
@converter("MIRROR_PAD", quant=("nn.mirror_pad",), float=("nn.mirror_pad",))
def convert_mirror_pad(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t = ctx.tensor(0)
    ctx.same_dtype(x_t, ctx.out_tensor())
    rank = len(x_t.shape)
    p = ctx.paddings(1, rank)
    mode = {0: "REFLECT", 1: "SYMMETRIC"}.get(int(ctx.options.get("mode", 0)))
    if mode is None:
        raise ctx.fail(f"mode {ctx.options.get('mode')} is neither REFLECT (0) nor SYMMETRIC (1)")
    extra = 1 if mode == "REFLECT" else 0
    bad = [(axis, (int(a), int(b))) for axis, ((a, b), d) in enumerate(zip(p, x_t.shape))
           if a < 0 or b < 0 or max(a, b) > d - extra]
    if bad:
        raise ctx.fail(f"paddings {p.tolist()}: axes {[a for a, _ in bad]} pad outside [0, size{' − 1' * extra}] "
                       f"of input {list(x_t.shape)} ({mode})", hint="TensorFlow's MirrorPad refuses such pads")
    pad_width = tuple((int(a), int(b)) for a, b in p)
    return [ctx.call("nn.mirror_pad", [ctx.input(0)], {"pad_width": pad_width, "mode": mode})]


@converter("TILE", quant=("tile",), float=("tile",))
def convert_tile(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t = ctx.tensor(0)
    ctx.same_dtype(x_t, ctx.out_tensor())
    reps = ctx.int_vector(1, "multiples", len(x_t.shape))
    if any(r < 0 for r in reps):
        raise ctx.fail(f"multiples {reps} must be non-negative")
    return [ctx.call("tile", [ctx.input(0)], {"reps": tuple(reps)})]


@converter("BROADCAST_TO", quant=("broadcast_to",), float=("broadcast_to",))
def convert_broadcast_to(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    ctx.same_dtype(x_t, out_t)
    shape = ctx.int_vector(1, "shape")
    if len(shape) > 8:
        raise ctx.fail(f"shape {shape} has rank {len(shape)}; LiteRT's BROADCAST_TO supports rank ≤ 8")
    return [ctx.call("broadcast_to", [ctx.input(0)], {"shape": tuple(shape)})]


@converter("GATHER_ND", quant=("gather_nd",), float=("gather_nd",))
def convert_gather_nd(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t, i_t = ctx.tensor(0), ctx.tensor(1)
    ctx.same_dtype(x_t, ctx.out_tensor())
    if i_t.dtype not in ("int32", "int64"):
        raise ctx.fail(f"indices {i_t.label} are {i_t.dtype}; GATHER_ND takes int32 or int64 indices")
    if not i_t.shape or i_t.shape[-1] > len(x_t.shape) or i_t.shape[-1] < 1:
        raise ctx.fail(f"indices {i_t.label} of shape {list(i_t.shape)} must end in an index depth between 1 and "
                       f"the params rank {len(x_t.shape)}")
    m, rank = i_t.shape[-1], len(i_t.shape)
    axes = (rank - 1,) + tuple(range(rank - 1))  # TFLite's [..., M] to TVM's [M, ...]
    if ctx.model.constant(i_t) is not None:
        value = ctx.const_value(1, "indices")
        idx = value.reshape(-1, m)
        bad = (idx < 0) | (idx >= np.asarray(x_t.shape[:m]))
        if bad.any():
            raise ctx.fail(f"indices {i_t.label} hold {idx[bad.any(axis=1)][0].tolist()}, outside params shape "
                           f"{list(x_t.shape)}", hint="LiteRT fails on this model at run time")
        indices = ctx.const(np.ascontiguousarray(np.transpose(value, axes)), i_t.dtype)  # no call to fold later
    else:
        indices = ctx.input(1)
        if rank > 1:
            indices = ctx.call("transpose", [indices], {"axes": axes})
    return [ctx.call("gather_nd", [ctx.input(0), indices], {"batch_dims": 0, "index_rank": m})]


@converter("SHAPE", quant=(), float=())
def convert_shape(ctx: OpContext) -> list[Expr]:
    """SHAPE of a static tensor is a constant (int32 or int64 as out_type says); shape arithmetic on it (STRIDED_SLICE,
    PACK, MUL, ...) is folded where a constant is required (``OpContext.const_value``)."""
    ctx.check_arity(1)
    out_t = ctx.out_tensor()
    if out_t.dtype not in ("int32", "int64"):
        raise ctx.fail(f"output {out_t.label} is {out_t.dtype}; SHAPE produces int32 or int64")
    x_t = ctx.tensor(0)
    return [ctx.const(np.asarray(x_t.shape, out_t.dtype), out_t.dtype)]
