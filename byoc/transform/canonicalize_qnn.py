"""CanonicalizeQnnChains: TVM's float forms of quantized activations back into the exact integer op.

The TFLite importer emits LOGISTIC / TANH / SOFTMAX / HARD_SWISH / LEAKY_RELU / MEAN in the forms TVM's TFLite
frontend emitted, which TVM's pattern tables (Ethos-U, CMSIS-NN) match::

    qnn.dequantize → sigmoid | tanh | nn.leaky_relu → qnn.quantize(kernel=…)
    qnn.dequantize → [multiply(β)] → nn.softmax → qnn.quantize(kernel="qnn.softmax")
    qnn.dequantize → add(3) → clip(0, 6) → multiply(x, ·) → divide(6) → qnn.quantize(kernel="qnn.hardswish")
    cast(int32) → mean → qnn.requantize(kernel="qnn.mean")

Evaluated op by op in float these differ from LiteRT's integer kernels in the last bit. The ``kernel`` attribute on
the chain's end names the integer kernel (and ``kernel_rounding`` its rounding: LiteRT's LUT or TFLite Micro's
fixed point); this pass — the analogue of TVM's QnnCanonicalize — replaces every *intact* attributed chain by that
op (``qnn.sigmoid``, ``qnn.tanh``, ``qnn.softmax``, ``qnn.hardswish``, ``qnn.leaky_relu``, ``qnn.mean``), which
computes the reference bits. Every executor runs it first: ``byoc.evaluate``, the LLVM build (``lower_for_host``)
and the NPU simulator's lowering (``npu_sim.lower_function``). A chain a user's pass broke apart (a different
float op in the middle, a changed constant, a dropped ``kernel``) is left alone and evaluates in float.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from ..ir.expr import Call, Constant, Expr, Function, Op
from ..ir.module import IRModule
from ..ir.traversal import post_order, rewrite_post_order
from .pass_infra import FunctionPass, PassContext

__all__ = ["CanonicalizeQnnChains", "ExactChain", "EXACT_CHAINS", "as_integer_op", "canonicalize_function",
           "canonicalize_module", "chain_kernel"]


def _op(e: Expr, name: str) -> bool:
    return type(e) is Call and type(e.op) is Op and e.op.name == name


def _scalar(e: Expr) -> float | None:
    if isinstance(e, Constant) and e.data.size == 1:
        return float(np.asarray(e.data).reshape(-1)[0])
    return None


def _call(name: str, args, attrs: dict, root: Call) -> Call:
    return Call(Op.get(name), tuple(args), attrs, root.span)


@dataclass(frozen=True)
class ExactChain:
    """One TVM form: ``match(end)`` returns the integer op the intact chain ending at ``end`` stands for."""
    kernel: str
    form: str                                     # the chain, in words (docs, error messages)
    match: Callable[[Call], Call | None]


def _source(e: Expr, out_dtype: str) -> Call | None:
    """The chain's qnn.dequantize (per-tensor), when it reads the type the chain writes."""
    if not _op(e, "qnn.dequantize"):
        return None
    t = getattr(e.args[0], "_checked_type", None)
    if t is not None and getattr(t, "dtype", out_dtype) != out_dtype:
        return None
    return e


def _quant_args(deq: Call, q: Call) -> tuple:
    return (deq.args[0], deq.args[1], deq.args[2], q.args[1], q.args[2])


def _unary_lut(float_op: str, kernel: str):
    def match(q: Call) -> Call | None:
        f = q.args[0]
        if not _op(f, float_op):
            return None
        deq = _source(f.args[0], q.attrs.out_dtype)
        if deq is None:
            return None
        attrs = {"rounding": q.attrs.kernel_rounding or "TFLITE"}
        if kernel == "qnn.leaky_relu":
            attrs["alpha"] = float(f.attrs.alpha)
        return _call(kernel, _quant_args(deq, q), attrs, q)
    return match


def _softmax(q: Call) -> Call | None:
    f = q.args[0]
    if not _op(f, "nn.softmax"):
        return None
    x, beta = f.args[0], 1.0
    if _op(x, "multiply") and _op(x.args[0], "qnn.dequantize") and _scalar(x.args[1]) is not None:
        x, beta = x.args[0], _scalar(x.args[1])
    if not _op(x, "qnn.dequantize"):
        return None
    attrs = {"axis": int(f.attrs.axis), "beta": beta, "out_dtype": q.attrs.out_dtype,
             "rounding": q.attrs.kernel_rounding or "TFLITE"}
    return _call("qnn.softmax", _quant_args(x, q), attrs, q)


def _hardswish(q: Call) -> Call | None:
    div = q.args[0]
    if not (_op(div, "divide") and _scalar(div.args[1]) == 6.0):
        return None
    mul = div.args[0]
    if not _op(mul, "multiply"):
        return None
    deq, clip = mul.args
    if not (_op(clip, "clip") and float(clip.attrs.a_min) == 0.0 and float(clip.attrs.a_max) == 6.0):
        return None
    add = clip.args[0]
    if not (_op(add, "add") and add.args[0] is deq and _scalar(add.args[1]) == 3.0):
        return None
    if _source(deq, q.attrs.out_dtype) is None:
        return None
    return _call("qnn.hardswish", _quant_args(deq, q), {}, q)


def _mean(rq: Call) -> Call | None:
    m = rq.args[0]
    if not _op(m, "mean"):
        return None
    cast = m.args[0]
    if not (_op(cast, "cast") and cast.attrs.dtype == "int32"):
        return None
    t = getattr(cast.args[0], "_checked_type", None)
    if t is not None and getattr(t, "dtype", rq.attrs.out_dtype) != rq.attrs.out_dtype:
        return None
    attrs = {"axis": m.attrs.axis, "keepdims": bool(m.attrs.keepdims), "exclude": bool(m.attrs.exclude)}
    return _call("qnn.mean", (cast.args[0],) + tuple(rq.args[1:5]), attrs, rq)


EXACT_CHAINS: dict[str, ExactChain] = {c.kernel: c for c in (
    ExactChain("qnn.sigmoid", "qnn.dequantize → sigmoid → qnn.quantize", _unary_lut("sigmoid", "qnn.sigmoid")),
    ExactChain("qnn.tanh", "qnn.dequantize → tanh → qnn.quantize", _unary_lut("tanh", "qnn.tanh")),
    ExactChain("qnn.leaky_relu", "qnn.dequantize → nn.leaky_relu → qnn.quantize",
               _unary_lut("nn.leaky_relu", "qnn.leaky_relu")),
    ExactChain("qnn.softmax", "qnn.dequantize → [multiply(β)] → nn.softmax → qnn.quantize", _softmax),
    ExactChain("qnn.hardswish", "qnn.dequantize → add(3) → clip(0, 6) → multiply → divide(6) → qnn.quantize",
               _hardswish),
    ExactChain("qnn.mean", "cast(int32) → mean → qnn.requantize", _mean),
)}


def chain_kernel(e: Expr) -> str:
    """The integer kernel named by ``e`` when it ends a TVM-form chain (its ``kernel`` attribute), else ""."""
    if type(e) is Call and type(e.op) is Op and e.op.name in ("qnn.quantize", "qnn.requantize"):
        return getattr(e.attrs, "kernel", "") or ""
    return ""


def as_integer_op(e: Expr) -> Call | None:
    """The exact integer op an intact chain ending at ``e`` stands for (typed like ``e``), else None."""
    kernel = chain_kernel(e)
    if not kernel:
        return None
    out = EXACT_CHAINS[kernel].match(e)
    if out is not None and getattr(e, "_checked_type", None) is not None:
        object.__setattr__(out, "_checked_type", e._checked_type)
    return out


def _has_chains(root: Expr) -> bool:
    return any(chain_kernel(n) for n in post_order(root))


def canonicalize_function(func: Function, origin: dict | None = None) -> Function:
    """``func`` (and the functions inside it: composites, partitions) with every intact chain replaced. The
    rewrite keeps every type (an integer op has its chain's type), so a typed function stays typed. ``origin``
    (optional) receives ``id(new op) → (new op, chain end)``."""
    if not _has_chains(func):
        return func

    def fn(old: Expr, new: Expr) -> Expr | None:
        out = as_integer_op(new)
        if out is not None:
            if origin is not None:
                origin[id(out)] = (out, old)
            t = getattr(old, "_checked_type", None)
            if t is not None:
                out._set_checked_type(t)
            return out
        if new is not old and getattr(new, "_checked_type", None) is None:
            t = getattr(old, "_checked_type", None)
            if t is not None:
                new._set_checked_type(t)
        return None
    out = rewrite_post_order(func, fn, preserves_types=True)
    assert isinstance(out, Function)
    return out


def canonicalize_module(mod: IRModule, origin: dict | None = None) -> IRModule:
    """Every function of ``mod`` canonicalized (partitions included: their codegens run the integer ops)."""
    changed = {gv: canonicalize_function(f, origin) for gv, f in mod.items() if isinstance(f, Function)}
    if all(changed[gv] is mod[gv] for gv in changed):
        return mod
    out = mod.copy()
    for gv, f in changed.items():
        if f is not mod[gv]:
            out[gv] = f
    return out


class CanonicalizeQnnChains(FunctionPass):
    """The pass form of ``canonicalize_module`` (``byoc.transform.CanonicalizeQnnChains()``)."""

    name: ClassVar[str] = "CanonicalizeQnnChains"
    opt_level: ClassVar[int] = 0
    skip_external: ClassVar[bool] = False

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return canonicalize_module(mod)

    def transform_function(self, func: Function, mod, ctx) -> Function:
        return canonicalize_function(func)
