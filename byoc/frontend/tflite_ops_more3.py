"""TFLite converters for MIRROR_PAD, TILE, BROADCAST_TO, CAST, ABS, NEG, EQUAL, NOT_EQUAL, LESS, LESS_EQUAL,
GREATER, GREATER_EQUAL, SELECT_V2, GATHER_ND and DIV (registered on import by tflite_ops_more2).

* MIRROR_PAD → ``nn.mirror_pad`` (REFLECT / SYMMETRIC); TILE → ``tile``; BROADCAST_TO → ``broadcast_to``;
  SELECT_V2 → ``where``; GATHER_ND → ``gather_nd`` with the indices transposed to TVM's [M, ...] layout (TVM's
  frontend does the same). LiteRT copies raw values in all of them, quantized or not, and so does the IR.
* CAST → ``cast``: LiteRT's static_cast of the raw values (quantization is ignored; →bool is ≠ 0).
* NEG → ``negative`` (float32, int32, int64; int8 raw values, wrapping: LiteRT ignores the quantization).
* ABS: float32/int32 → ``abs``; int8/int16 → ``qnn.abs`` (LiteRT's rescale when the scales differ).
* Comparisons: float32/int32/int64 (and bool for EQUAL/NOT_EQUAL) → ``equal`` ...; int8/uint8 → ``qnn.equal`` ...
  (LiteRT rescales both operands by their own scales; scales ≥ 1 are refused, see ``comparison_params``).
"""
from __future__ import annotations

import numpy as np

from ..errors import ByocError
from ..ir.expr import Expr
from ..quant.params import comparison_params
from .tflite_context import OpContext, converter


def _q(ctx: OpContext, t, role: str) -> list[Expr]:
    s, zp = ctx.quant(t, role)
    return [ctx.const(s, "float32"), ctx.const(zp, "int32")]


def _same_dtype(ctx: OpContext, *tensors) -> str:
    if len({t.dtype for t in tensors}) != 1:
        raise ctx.fail("operands and result must share one dtype, found "
                       + ", ".join(f"{t.label}: {t.dtype}" for t in tensors))
    return tensors[0].dtype


def _expect(ctx: OpContext, t, allowed: tuple[str, ...], op: str) -> None:
    if t.dtype not in allowed:
        raise ctx.fail(f"{t.label} is {t.dtype}; {op} takes " + ", ".join(allowed), hint="LiteRT rejects it too")


# ------------------------------------------------------------------------------------------------ data movement
@converter("MIRROR_PAD", quant=("nn.mirror_pad",), float=("nn.mirror_pad",))
def convert_mirror_pad(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t = ctx.tensor(0)
    _same_dtype(ctx, x_t, ctx.out_tensor())
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
    _same_dtype(ctx, x_t, ctx.out_tensor())
    reps = ctx.int_vector(1, "multiples", len(x_t.shape))
    if any(r < 0 for r in reps):
        raise ctx.fail(f"multiples {reps} must be non-negative")
    return [ctx.call("tile", [ctx.input(0)], {"reps": tuple(reps)})]


@converter("BROADCAST_TO", quant=("broadcast_to",), float=("broadcast_to",))
def convert_broadcast_to(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    _same_dtype(ctx, x_t, out_t)
    shape = ctx.int_vector(1, "shape")
    if len(shape) > 8:
        raise ctx.fail(f"shape {shape} has rank {len(shape)}; LiteRT's BROADCAST_TO supports rank ≤ 8")
    return [ctx.call("broadcast_to", [ctx.input(0)], {"shape": tuple(shape)})]


@converter("SELECT_V2", quant=("where",), float=("where",))
def convert_select_v2(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(3)
    c_t, x_t, y_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.tensor(2), ctx.out_tensor()
    if c_t.dtype != "bool":
        raise ctx.fail(f"condition {c_t.label} is {c_t.dtype}; SELECT_V2 needs a bool condition")
    _same_dtype(ctx, x_t, y_t, out_t)
    return [ctx.call("where", [ctx.input(0), ctx.input(1), ctx.input(2)])]


@converter("GATHER_ND", quant=("gather_nd",), float=("gather_nd",))
def convert_gather_nd(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t, i_t = ctx.tensor(0), ctx.tensor(1)
    _same_dtype(ctx, x_t, ctx.out_tensor())
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


# ---------------------------------------------------------------------------------------------------- unary
@converter("CAST", quant=("cast",), float=("cast",))
def convert_cast(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    for t in (x_t, out_t):
        _expect(ctx, t, ("float32", "int8", "uint8", "int16", "int32", "int64", "bool"), "CAST")
    return [ctx.call("cast", [ctx.input(0)], {"dtype": out_t.dtype})]


@converter("NEG", quant=("negative",), float=("negative",))
def convert_neg(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t = ctx.tensor(0)
    _same_dtype(ctx, x_t, ctx.out_tensor())
    _expect(ctx, x_t, ("float32", "int32", "int64", "int8"), "NEG")  # int8: LiteRT negates raw values
    return [ctx.call("negative", [ctx.input(0)])]


@converter("ABS", quant=("qnn.abs",), float=("abs",))
def convert_abs(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    dtype = _same_dtype(ctx, x_t, out_t)
    if dtype in ("float32", "int32"):
        return [ctx.call("abs", [ctx.input(0)])]
    _expect(ctx, x_t, ("float32", "int32", "int8", "int16"), "ABS")
    if dtype == "int16" and x_t.quant is None:
        return [ctx.call("abs", [ctx.input(0)])]  # LiteRT: unquantized int16 is a plain std::abs
    q = _q(ctx, x_t, "input") + _q(ctx, out_t, "output")
    if dtype == "int16" and (ctx.quant(x_t, "input")[1] != 0 or ctx.quant(out_t, "output")[1] != 0):
        raise ctx.fail("int16 ABS needs zero points 0 on input and output", hint="LiteRT rejects this model too")
    return [ctx.call("qnn.abs", [ctx.input(0)] + q)]


# ------------------------------------------------------------------------------------------------ comparisons
_COMPARISONS = {"EQUAL": "equal", "NOT_EQUAL": "not_equal", "LESS": "less", "LESS_EQUAL": "less_equal",
                "GREATER": "greater", "GREATER_EQUAL": "greater_equal"}


def _compare(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    op = _COMPARISONS[ctx.op.opcode]
    a_t, b_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    dtype = _same_dtype(ctx, a_t, b_t)
    if out_t.dtype != "bool":
        raise ctx.fail(f"output {out_t.label} is {out_t.dtype}; comparisons produce bool")
    allowed = ("float32", "int32", "int64", "int8", "uint8") + (("bool",) if op in ("equal", "not_equal") else ())
    _expect(ctx, a_t, allowed, ctx.op.opcode)
    if dtype not in ("int8", "uint8"):
        return [ctx.call(op, [ctx.input(0), ctx.input(1)])]
    for t, role in ((a_t, "lhs"), (b_t, "rhs")):
        try:
            comparison_params(ctx.quant(t, role)[0], "qnn." + op)
        except ByocError as e:
            raise ctx.fail(e.message, hint=e.hint) from None
    q = _q(ctx, a_t, "lhs") + _q(ctx, b_t, "rhs")
    return [ctx.call("qnn." + op, [ctx.input(0), ctx.input(1)] + q)]


for _builtin, _op in _COMPARISONS.items():
    converter(_builtin, quant=("qnn." + _op,), float=(_op,))(_compare)


# ------------------------------------------------------------------------------------------------------- DIV
@converter("DIV", float=("divide", "clip"))
def convert_div(ctx: OpContext) -> list[Expr]:
    """float32 (IEEE a / b) and int32 (C's truncating division; a zero divisor is an ExecutionError) with the
    fused activation as a clip. LiteRT's uint8 DIV (a fixed-point reciprocal) is not supported."""
    ctx.check_arity(2)
    a_t, b_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    dtype = _same_dtype(ctx, a_t, b_t, out_t)
    if dtype not in ("float32", "int32"):
        raise ctx.fail(f"operands are {dtype}; DIV is supported for float32 and int32"
                       + (" (LiteRT's uint8 fixed-point DIV is not implemented)" if dtype == "uint8" else ""))
    return [ctx.apply_activation(ctx.call("divide", [ctx.input(0), ctx.input(1)]), out_t)]
