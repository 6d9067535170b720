"""Building blocks shared by the pattern tables: typed accessors and parameterised rules.

Every rule factory returns a ``Rule`` whose description is the sentence printed by the CLI and used in CPU
placement reasons; the test returns ``None`` when the rule holds and a short "found ..." detail otherwise.
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from byoc.ir.expr import Call, Constant, Expr
from byoc.ir.types import TensorType
from byoc.relay.dataflow_pattern import is_constant, is_op, wildcard
from byoc.relay.dataflow_pattern.check import MatchContext, Rule

__all__ = ["ttype", "const_value", "is_scalar", "reduced_axes", "Getter", "capture", "root", "input_of", "dtype_rule",
           "batch_one_rule", "per_tensor_rule", "layout_rule", "fixed_point_rule", "clip_range_rule",
           "optional_clip", "LITERT_FC_REASON", "QUANT_DTYPES", "conv_chain"]

QUANT_DTYPES = ("int8", "uint8")

LITERT_FC_REASON = ("LiteRT's FULLY_CONNECTED requantizes in double precision; fixed-point hardware cannot match "
                    "it bit-exactly (import with semantics='tflm' to offload)")

Getter = Callable[[MatchContext], Expr | None]


def ttype(e: Expr) -> TensorType | None:
    t = getattr(e, "_checked_type", None)
    return t if isinstance(t, TensorType) else None


def const_value(e: Expr | None) -> np.ndarray | None:
    return e.data if isinstance(e, Constant) else None


def is_scalar(e: Expr | None) -> bool:
    v = const_value(e)
    return v is not None and (v.size == 1 or bool(np.all(v.reshape(-1) == v.reshape(-1)[0])))


def reduced_axes(call, ndim: int) -> tuple[int, ...]:
    """The sorted non-negative axes a reduction call (``axis`` attr; None = all) reduces over."""
    axis = call.attrs.axis
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(int(a) % ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))))


def capture(name: str) -> Getter:
    return lambda ctx: ctx.get(name)


def root(ctx: MatchContext) -> Expr:
    return ctx.root


def input_of(name: str, index: int = 0) -> Getter:
    def get(ctx: MatchContext) -> Expr | None:
        c = ctx.captures.get(name)
        return c.args[index] if isinstance(c, Call) and len(c.args) > index else None
    return get


def dtype_rule(what: str, getters: Iterable[Getter], allowed=QUANT_DTYPES) -> Rule:
    getters = tuple(getters)

    def test(ctx: MatchContext):
        found = []
        for g in getters:
            e = g(ctx)
            t = ttype(e) if e is not None else None
            if t is None or t.dtype not in allowed:
                found.append(t.dtype if t is not None else "a non-tensor")
        return f"found {', '.join(found)}" if found else None
    return Rule(f"{what} dtype is {' or '.join(allowed)}", test)


def batch_one_rule(getter: Getter, what: str = "the input") -> Rule:
    def test(ctx: MatchContext):
        t = ttype(getter(ctx))
        if t is not None and t.ndim >= 1 and t.ndim in (2, 4) and t.shape[0] != 1:
            return f"found batch {t.shape[0]} in {t.shape}"
        return None
    return Rule(f"{what} has batch size 1", test)


def per_tensor_rule(what: str, getters: Iterable[Getter]) -> Rule:
    getters = tuple(getters)

    def test(ctx: MatchContext):
        for g in getters:
            e = g(ctx)
            if isinstance(e, Constant) and e.data.size == 1:
                continue  # the common case, without the calls of is_scalar
            if e is not None and not is_scalar(e):
                v = const_value(e)
                return "found a non-constant value" if v is None else f"found {v.size} different values"
        return None
    return Rule(f"{what} are single constant values (per-tensor)", test)


def layout_rule(name: str, key: str, allowed: tuple[str, ...]) -> Rule:
    def test(ctx: MatchContext):
        c = ctx.get(name)
        if c is None:
            return None
        v = c.attrs.get(key)
        return None if v in allowed else f"found {v!r}"
    return Rule(f"{key} is {' or '.join(allowed)}", test)


# The rounding modes the NPU's post-processing unit implements (npu_sim.isa.Rounding).
FIXED_POINT_ROUNDINGS = ("TFLITE", "UPWARD", "TONEAREST")


def fixed_point_rule(name: str) -> Rule:
    """The requantize can be reproduced by a fixed-point multiplier (not LiteRT's double-precision FC path)."""
    def test(ctx: MatchContext):
        rq = ctx.get(name)
        if rq is None:
            return None
        if rq.attrs.rounding == "TFLITE_FLOAT":
            return LITERT_FC_REASON
        if rq.attrs.rounding not in FIXED_POINT_ROUNDINGS:
            return (f"requantize rounding {rq.attrs.rounding!r} is not one the NPU's fixed-point PPU implements "
                    f"({', '.join(FIXED_POINT_ROUNDINGS)})")
        return None
    return Rule("the requantization is fixed-point (rounding is " + " or ".join(FIXED_POINT_ROUNDINGS) + ")", test)


def clip_range_rule(name: str = "clip") -> Rule:
    def test(ctx: MatchContext):
        c = ctx.get(name)
        t = ttype(ctx.root)
        if c is None or t is None or t.dtype not in QUANT_DTYPES:
            return None
        info = np.iinfo(t.dtype)
        lo = max(int(info.min), int(np.ceil(c.attrs.a_min)) if np.isfinite(c.attrs.a_min) else int(info.min))
        hi = min(int(info.max), int(np.floor(c.attrs.a_max)) if np.isfinite(c.attrs.a_max) else int(info.max))
        return None if lo <= hi else f"found [{c.attrs.a_min}, {c.attrs.a_max}]"
    return Rule("a fused activation clip keeps a non-empty range of the output dtype", test)


def optional_clip(p):
    """``p`` optionally followed by a clip (a fused activation), captured as ``clip``."""
    return p.optional(lambda x: is_op("clip")(x).named("clip"))


def conv_chain(core_op: str = "qnn.conv2d", with_pad: bool = True):
    """``[nn.pad →] core(·, 5 constants) → [nn.bias_add] → qnn.requantize → [clip]`` with captures
    data, pad, conv, bias, rq, clip."""
    data = wildcard("data")
    src = (is_op("nn.pad")(data, is_constant()).named("pad") | data) if with_pad else data
    core = is_op(core_op)(src, is_constant(), is_constant(), is_constant(), is_constant(),
                          is_constant()).named("conv")
    biased = core.optional(lambda x: is_op("nn.bias_add")(x, is_constant()).named("bias"))
    rq = is_op("qnn.requantize")(biased, is_constant(), is_constant(), is_constant(), is_constant()).named("rq")
    return optional_clip(rq)
