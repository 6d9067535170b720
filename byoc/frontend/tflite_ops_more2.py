"""TFLite converters for LOG_SOFTMAX, SQUARED_DIFFERENCE and RSQRT (registered on import by tflite_ops_more).

* LOG_SOFTMAX: float → ``nn.log_softmax(axis=-1)``; int8/uint8 → ``qnn.log_softmax`` (LiteRT's reference integer
  kernel, byoc/ops/elementwise_more.py). LiteRT requires the output scale 16/256 and zero point 127 (int8) or 255
  (uint8); a model with other output parameters is refused here as LiteRT refuses it.
* SQUARED_DIFFERENCE: float32/int32 → ``d = subtract(a, b); multiply(d, d)`` (LiteRT's ``diff * diff``, exact);
  int8 → ``qnn.squared_difference``. LiteRT refuses uint8 and int16 outputs, and so does the importer.
* RSQRT: float32 → ``rsqrt`` (1.f / sqrtf(x), exact); int8 → ``qnn.rsqrt``. int16 (a table) is not supported.
"""
from __future__ import annotations

import numpy as np

from ..errors import ByocError
from ..ir.expr import Expr
from ..quant.params import log_softmax_params, squared_difference_params
from .tflite_context import OpContext, converter


def _q(ctx: OpContext, t, role: str) -> list[Expr]:
    s, zp = ctx.quant(t, role)
    return [ctx.const(s, "float32"), ctx.const(zp, "int32")]


def _one_dtype(ctx: OpContext, *tensors) -> str:
    if len({t.dtype for t in tensors}) != 1:
        raise ctx.fail("operands and result must share one dtype, found "
                       + ", ".join(f"{t.label}: {t.dtype}" for t in tensors))
    return tensors[0].dtype


@converter("LOG_SOFTMAX", quant=("qnn.log_softmax",), float=("nn.log_softmax",))
def convert_log_softmax(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    dtype = _one_dtype(ctx, x_t, out_t)
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
    args = [ctx.input(0)] + _q(ctx, x_t, "input") + _q(ctx, out_t, "output")
    _prepare(ctx, lambda: log_softmax_params(ctx.quant(x_t, "input")[0]))
    return [ctx.call("qnn.log_softmax", args, {"axis": -1})]


def _prepare(ctx: OpContext, fn) -> None:
    """Run LiteRT's Prepare-time parameter derivation at import, so broken scales are refused here."""
    try:
        fn()
    except ByocError as e:
        raise ctx.fail(e.message, hint=e.hint) from None


@converter("SQUARED_DIFFERENCE", quant=("qnn.squared_difference",), float=("subtract", "multiply"))
def convert_squared_difference(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    a_t, b_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.out_tensor()
    dtype = _one_dtype(ctx, a_t, b_t, out_t)
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
    q = _q(ctx, a_t, "lhs") + _q(ctx, b_t, "rhs") + _q(ctx, out_t, "output")
    _prepare(ctx, lambda: squared_difference_params(ctx.quant(a_t, "lhs")[0], ctx.quant(b_t, "rhs")[0],
                                                    ctx.quant(out_t, "output")[0]))
    return [ctx.call("qnn.squared_difference", [ctx.input(0), ctx.input(1)] + q)]


@converter("RSQRT", quant=("qnn.rsqrt",), float=("rsqrt",))
def convert_rsqrt(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(1)
    x_t, out_t = ctx.tensor(0), ctx.out_tensor()
    dtype = _one_dtype(ctx, x_t, out_t)
    if dtype == "float32":
        return [ctx.call("rsqrt", [ctx.input(0)])]
    if dtype != "int8":
        raise ctx.fail(f"input {x_t.label} is {dtype}; RSQRT is supported for float32 and int8"
                       + (" (int16's table is not implemented)" if dtype == "int16" else ""))
    return [ctx.call("qnn.rsqrt", [ctx.input(0)] + _q(ctx, x_t, "input") + _q(ctx, out_t, "output"))]
