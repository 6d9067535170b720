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
from byoc.relay.dataflow_pattern.check import Check, MatchContext, Rule
from byoc.transform.canonicalize_qnn import as_integer_op, chain_kernel

__all__ = ["ttype", "const_value", "is_scalar", "reduced_axes", "Getter", "capture", "root", "input_of", "dtype_rule",
           "batch_one_rule", "per_tensor_rule", "layout_rule", "fixed_point_rule", "clip_range_rule",
           "optional_clip", "LITERT_FC_REASON", "QUANT_DTYPES", "conv_chain", "quantized_activation",
           "quantized_mean", "on_integer_op", "not_a_chain_end"]

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


def hw_mean_input(ctx: MatchContext):
    """(input type, problem) of the ``core`` MEAN: the problem is None when it reduces height and width (axes 1
    and 2, not ``exclude``) of a 4-D tensor, the one mean the NPU simulator lowers."""
    core = ctx["core"]
    t = ttype(core.args[0])
    if t is None or t.ndim != 4:
        return t, f"found input {t.shape if t else None}"
    axes = reduced_axes(core, 4)
    if axes != (1, 2) or core.attrs.exclude:
        return t, f"found axes {axes}"
    return t, None


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


# -- quantized activations and MEAN in TVM's forms (byoc/transform/canonicalize_qnn.py) -------------------------

def _float_body(float_op: str, deq):
    if float_op == "nn.softmax":
        return is_op("nn.softmax")(deq | is_op("multiply")(deq, is_constant()))
    if float_op == "hardswish":  # x · clip(x + 3, 0, 6) / 6, as TVM's frontend wrote HARD_SWISH
        relu6 = is_op("clip")(is_op("add")(deq, is_constant()))
        return is_op("divide")(is_op("multiply")(deq, relu6), is_constant())
    return is_op(float_op)(deq)


def quantized_activation(float_op: str, integer_op: str):
    """TVM's form ``qnn.dequantize → float_op → qnn.quantize`` (``float_op`` "hardswish": the arithmetic chain)
    or the exact integer op itself, then an optional clip; captures data, core (the quantize or the integer op)
    and clip. Read the captures through ``on_integer_op``."""
    data = wildcard("data")
    deq = is_op("qnn.dequantize")(data, is_constant(), is_constant())
    chain = is_op("qnn.quantize")(_float_body(float_op, deq), is_constant(), is_constant())
    integer = is_op(integer_op)(data, *[is_constant() for _ in range(4)])
    return optional_clip((chain | integer).named("core"))


def quantized_mean():
    """TVM's MEAN ``cast(int32) → mean → qnn.requantize`` or ``qnn.mean``, then an optional clip (captures as
    ``quantized_activation``)."""
    data = wildcard("data")
    c = [is_constant() for _ in range(4)]
    chain = is_op("qnn.requantize")(is_op("mean")(is_op("cast")(data)), *c)
    return optional_clip((chain | is_op("qnn.mean")(data, *[is_constant() for _ in range(4)])).named("core"))


def _intact(ctx: MatchContext):
    core = ctx.get("core")
    if chain_kernel(core) and as_integer_op(core) is None:
        return f"found a {core.op.name} whose chain is not the {chain_kernel(core)} form"
    return None


_INTACT = Rule("a chain in TVM's form is intact: it is exactly the integer kernel its end names", _intact, True)


def _integer_view(ctx: MatchContext) -> MatchContext:
    core = ctx.captures.get("core")
    exact = as_integer_op(core) if chain_kernel(core) else None
    if exact is None:
        return ctx
    return MatchContext(ctx.root if ctx.root is not core else exact, {**ctx.captures, "core": exact})


def on_integer_op(check: Check) -> Check:
    """``check``'s rules, written for the integer op (``core``: qnn.sigmoid, qnn.softmax, qnn.mean, ...), applied
    to a match of ``quantized_activation`` / ``quantized_mean``: a TVM-form chain is read as the integer op it
    stands for, so each table reads quantization parameters one way for both forms."""
    def wrap(r: Rule) -> Rule:
        return Rule(r.description, lambda ctx, t=r.test: t(_integer_view(ctx)), r.guard)
    return Check((_INTACT,) + tuple(wrap(r) for r in check.rules), summary=check.summary)


def not_a_chain_end(what: str = "rq") -> Rule:
    """Refuses the end of a TVM-form chain on its own (its ``kernel`` attribute is set): offloading it apart from
    its chain would leave the float ops behind and lose the exact kernel."""
    def test(ctx: MatchContext):
        e = ctx.get(what)
        k = chain_kernel(e) if e is not None else ""
        return f"found the end of a {k} chain" if k else None
    return Rule("it is not the end of a TVM-form activation chain (that goes with its chain, or stays on the CPU)",
                test, True)
