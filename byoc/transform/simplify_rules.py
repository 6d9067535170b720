"""The rewrites of TVM's SimplifyExpr (``src/relay/transforms/simplify_expr.cc`` at 21095b98bb), in TVM's order.

Each rule is ``rule(pre, post) -> Expr | None``: ``pre`` is the original (typed) call, ``post`` the same call over
already simplified operands (typed too: every rewrite keeps its node's type). ``None`` means "does not apply".

Rules for ops byoc does not have (full / full_like, reshape_like, collapse_sum_like, broadcast_to_like,
cast_like, contrib_reverse_reshape, argsort) are absent: no graph can contain them. Where TVM's rewrite can change
values, the rule here applies only in the value-preserving cases (noted at the rule): consecutive casts fold only
when the first cast is exact, clip-then-cast drops only casts that cannot change the clipped integers,
dequantize-then-argmax needs a positive per-tensor scale."""
from __future__ import annotations

import math

import numpy as np

from ..ir.expr import Call, Constant, Expr
from ..ir.types import TensorType
from .scale_axis import op_call, op_name

__all__ = ["SIMPLIFY_EXPR_RULES", "POST_ALTER_OP_RULES"]


def _on(*ops: str):
    """The ops a rule can apply to (none named: every broadcast op); the engine only tries matching rules."""
    def mark(rule):
        rule.ops = ops or None
        return rule
    return mark


def _t(e: Expr) -> TensorType | None:
    t = e._checked_type  # type: ignore[attr-defined]
    return t if isinstance(t, TensorType) else None


def _scalar(e: Expr) -> float | None:
    if type(e) is Constant and e.data.ndim == 0:
        return float(np.asarray(e.data).item())
    return None


def _const(value, dtype: str) -> Constant:
    return Constant(np.array(value, dtype=dtype))


def _pairs(call: Call):
    """Operand orders a pattern may match: both for add / multiply (TVM's matcher treats them as commutative)."""
    a, b = call.args
    return ((a, b), (b, a)) if op_name(call) in ("add", "multiply") else ((a, b),)


def _fold(name: str, a: Expr, b: Expr) -> Expr:
    from .fold_constant import fold_constant
    return fold_constant(op_call(name, (a, b)))


# --- concretize *_like
@_on("zeros_like", "ones_like")
def concretize_zeros_like(pre: Call, post: Call) -> Expr | None:
    if op_name(post) in ("zeros_like", "ones_like") and (t := _t(pre)) is not None:
        return op_call(op_name(post)[:-5], (), shape=t.shape, dtype=t.dtype)  # type: ignore[index]
    return None


# --- add(x, x) -> x * 2
@_on("add")
def simplify_add(pre: Call, post: Call) -> Expr | None:
    if op_name(post) == "add" and post.args[0] is post.args[1] and (t := _t(pre)) is not None:
        return op_call("multiply", (post.args[0], _const(2, t.dtype)))
    return None


# --- n / sqrt(x) -> n * rsqrt(x)
@_on("divide")
def simplify_rsqrt(pre: Call, post: Call) -> Expr | None:
    if op_name(post) == "divide" and op_name(post.args[1]) == "sqrt":
        return op_call("multiply", (post.args[0], op_call("rsqrt", (post.args[1].args[0],))))
    return None


# --- x + 0, x - 0, x * 1, x / 1 -> x (when x already has the result's type)
_IDENTITY = {"add": (0, "zeros"), "subtract": (0, "zeros"), "multiply": (1, "ones"), "divide": (1, "ones")}


@_on("add", "subtract", "multiply", "divide")
def eliminate_identity(pre: Call, post: Call) -> Expr | None:
    spec = _IDENTITY.get(op_name(post))  # type: ignore[arg-type]
    if spec is None:
        return None
    value, maker = spec
    for x, other in _pairs(post):
        name = op_name(other)
        if name in (maker, maker + "_like") or _scalar(other) == value:
            if _t(x) == _t(pre):
                return x
    return None


# --- reshape(reshape(x)) -> reshape(x)
@_on("reshape")
def simplify_reshape(pre: Call, post: Call) -> Expr | None:
    if op_name(post) == "reshape" and op_name(post.args[0]) == "reshape" and (t := _t(pre)) is not None:
        return op_call("reshape", (post.args[0].args[0],), newshape=t.shape)
    return None


_TRANSPOSES = ("transpose", "layout_transform")


def _axis_order(call: Call, ndim: int) -> list[int]:
    if op_name(call) == "transpose":
        axes = call.attrs.axes
        if axes is None:
            return list(range(ndim - 1, -1, -1))
        return [int(a) + ndim if int(a) < 0 else int(a) for a in axes]
    src, dst = call.attrs.src_layout, call.attrs.dst_layout
    return [src.index(d) for d in dst]


def _rank(layout: str) -> int:
    return sum(ch.isalpha() for ch in layout)


def _rank_changing(call: Call) -> bool:
    return op_name(call) == "layout_transform" and _rank(call.attrs.src_layout) != _rank(call.attrs.dst_layout)


def _permutation(call: Call) -> bool:
    """A transpose, or a layout_transform that only reorders plain axes (NCHW -> NHWC)."""
    if op_name(call) == "transpose":
        return True
    src, dst = call.attrs.src_layout, call.attrs.dst_layout
    return src.isupper() and dst.isupper() and sorted(src) == sorted(dst)


def _layout_transform(x: Expr, src: str, dst: str) -> Expr:
    return x if src == dst else op_call("layout_transform", (x,), src_layout=src, dst_layout=dst)


def _fold_rank_changing(post: Call, inner: Call, x: Expr) -> Expr | None:
    """A permutation next to a layout_transform that adds or removes axes becomes one layout_transform."""
    if _rank_changing(post) and _permutation(inner):
        src, dst, other = post.attrs.src_layout, post.attrs.dst_layout, inner
    elif _rank_changing(inner) and _permutation(post):
        src, dst, other = inner.attrs.src_layout, inner.attrs.dst_layout, post
    else:
        return None
    if _rank(src) < _rank(dst) and src.isupper():  # e.g. NHWC -transpose-> NCHW -> NCHW4c
        axes = _axis_order(other, len(src))
        inverse = [0] * len(axes)
        for i, a in enumerate(axes):
            inverse[a] = i
        return _layout_transform(x, "".join(src[i] for i in inverse), dst)
    if _rank(src) > _rank(dst) and dst.isupper():  # e.g. NCHW4c -> NCHW -transpose-> NHWC
        axes = _axis_order(other, len(dst))
        return _layout_transform(x, src, "".join(dst[i] for i in axes))
    return None


# --- transpose / layout_transform of transpose / layout_transform -> one of them
@_on("transpose", "layout_transform")
def simplify_transpose(pre: Call, post: Call) -> Expr | None:
    if op_name(post) not in _TRANSPOSES or op_name(inner := post.args[0]) not in _TRANSPOSES:
        return None
    x = inner.args[0]
    if op_name(post) == op_name(inner) == "layout_transform" and inner.attrs.dst_layout == post.attrs.src_layout:
        return _layout_transform(x, inner.attrs.src_layout, post.attrs.dst_layout)  # A->B->C is A->C
    if not (_permutation(post) and _permutation(inner)):
        return _fold_rank_changing(post, inner, x)
    ndim = len(_t(pre).shape)  # type: ignore[union-attr]
    outer, first = _axis_order(post, ndim), _axis_order(inner, ndim)
    return op_call("transpose", (x,), axes=tuple(first[o] for o in outer))


# --- a transpose that keeps every axis in place -> its input
@_on("transpose", "layout_transform")
def simplify_noop_transpose(pre: Call, post: Call) -> Expr | None:
    name = op_name(post)
    if name == "layout_transform":
        return post.args[0] if post.attrs.src_layout == post.attrs.dst_layout else None
    if name == "transpose" and (t := _t(pre)) is not None:
        return post.args[0] if _axis_order(post, len(t.shape)) == list(range(len(t.shape))) else None
    return None


# --- cast to the dtype it already has
@_on("cast")
def simplify_same_cast(pre: Call, post: Call) -> Expr | None:
    if op_name(post) == "cast" and _t(post.args[0]) is not None and _t(post.args[0]).dtype == _t(pre).dtype:
        return post.args[0]
    return None


_MANTISSA = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _exact_cast(src: str, dst: str) -> bool:
    """Every ``src`` value survives a cast to ``dst`` unchanged. (TVM's IsWidenCast also accepts int8 -> uint8
    and int32 -> float32, which change values; those are not folded here.)"""
    s, d = np.dtype(src) if src != "bfloat16" else None, np.dtype(dst) if dst != "bfloat16" else None
    if s is None or d is None:
        return src == dst
    if s.kind == "b":
        return True
    if s.kind in "iu" and d.kind in "iu":
        info_s, info_d = np.iinfo(s), np.iinfo(d)
        return info_d.min <= info_s.min and info_s.max <= info_d.max
    if s.kind in "iu" and d.kind == "f":
        bits = s.itemsize * 8 - (1 if s.kind == "i" else 0)
        return bits <= _MANTISSA[dst]
    if s.kind == "f" and d.kind == "f":
        return d.itemsize >= s.itemsize
    return False


# --- cast(cast(x, wider), t) -> cast(x, t)
@_on("cast")
def simplify_consecutive_cast(pre: Call, post: Call) -> Expr | None:
    if op_name(post) != "cast" or op_name(inner := post.args[0]) != "cast":
        return None
    x = inner.args[0]
    if _t(x) is None or not _exact_cast(_t(x).dtype, inner.attrs.dtype):
        return None
    return op_call("cast", (x,), dtype=post.attrs.dtype)


def _kind(dtype: str) -> str:
    return "f" if dtype == "bfloat16" else np.dtype(dtype).kind


def _holds(dtype: str, lo: float, hi: float) -> bool:
    """Every integer in [lo, hi] is a value of ``dtype`` (exactly, for a float dtype)."""
    k = _kind(dtype)
    if k in "iu":
        info = np.iinfo(np.dtype(dtype))
        return float(info.min) <= lo and hi <= float(info.max)
    if k == "f":
        return max(abs(lo), abs(hi)) <= 2.0 ** _MANTISSA[dtype]
    return False


# --- cast(...cast(clip(x))): casts that cannot change the clipped values go (TVM drops every cast whose dtype holds
# the clip range, which can change values, e.g. after a wrapping cast; here the values are tracked cast by cast)
@_on("cast")
def simplify_clip_and_consecutive_cast(pre: Call, post: Call) -> Expr | None:
    if op_name(post) != "cast":
        return None
    chain = []
    e = post
    while op_name(e) == "cast":
        chain.append(e.attrs.dtype)
        e = e.args[0]
    if op_name(e) != "clip" or _t(e) is None or _kind(_t(e).dtype) not in "iuf":
        return None
    dtypes = chain[::-1]  # bottom-up
    cur = _t(e).dtype
    lo, hi = float(e.attrs.a_min), float(e.attrs.a_max)
    if _kind(cur) in "iu":
        info = np.iinfo(np.dtype(cur))
        lo, hi = max(lo, float(info.min)), min(hi, float(info.max))
    ints = _kind(cur) in "iu"  # the values are integers in [lo, hi]
    fresh_float = not ints  # float values in [lo, hi] that no cast has touched yet
    out: list[str] = []
    pending: str | None = None  # a float -> int cast that a later int cast may perform instead
    for i, d in enumerate(dtypes):
        top = i == len(dtypes) - 1
        k = _kind(d)
        if pending is not None:
            if k in "iu" and _holds(d, lo, hi):
                pending = cur = d  # truncating straight to d gives the same integers
                if top:
                    out.append(d)
                continue
            out.append(pending)
            pending = None
        if fresh_float and k in "iu" and _holds(d, lo, hi):
            pending, cur, ints, fresh_float = d, d, True, False
            if top:
                out.append(d)
            continue
        fresh_float = False
        if ints and _holds(d, lo, hi):  # the values pass unchanged
            if not top or cur == d:
                continue
            out.append(d)
            cur = d
            continue
        out.append(d)
        cur = d
        if k in "iu":
            info = np.iinfo(np.dtype(d))
            ints, lo, hi = True, float(info.min), float(info.max)
        else:
            ints = False
    if len(out) >= len(dtypes):
        return None
    res: Expr = e
    for d in out:
        res = op_call("cast", (res,), dtype=d)
    return res


# --- clip whose bounds cover the whole dtype -> its input
@_on("clip")
def simplify_clip(pre: Call, post: Call) -> Expr | None:
    if op_name(post) != "clip" or (t := _t(pre)) is None:
        return None
    if op_name(post.args[0]) in ("qnn.requantize", "qnn.add"):
        return None
    if t.dtype == "bfloat16" or _kind(t.dtype) not in "iuf":
        return None
    d = np.dtype(t.dtype)
    info = np.iinfo(d) if d.kind in "iu" else np.finfo(d)
    a_min, a_max = float(post.attrs.a_min), float(post.attrs.a_max)
    return post.args[0] if a_max >= float(info.max) and a_min <= float(info.min) else None


# --- broadcast op with zeros / ones (of any shape) -> the same op with a scalar
@_on()
def full_elementwise(pre: Call, post: Call) -> Expr | None:
    from ..ops.registry import FusionKind, get_op_def
    name = op_name(post)
    if name is None or len(post.args) != 2 or get_op_def(name).fusion != FusionKind.BROADCAST:
        return None
    for i in (0, 1):
        full, x = post.args[i], post.args[1 - i]
        kind = op_name(full)
        if kind in ("zeros", "ones", "zeros_like", "ones_like") and _t(x) == _t(pre) and _t(full) is not None:
            value = _const(0 if kind.startswith("zeros") else 1, _t(full).dtype)  # type: ignore[union-attr]
            args = (value, x) if i == 0 else (x, value)
            return Call(post.op, args, post.attrs, post.span)
    return None


# --- (x + c1) * c2 -> x * c2 + (c1 * c2)
@_on("multiply")
def switch_add_multiply(pre: Call, post: Call) -> Expr | None:
    if op_name(post) != "multiply":
        return None
    for add, c2 in _pairs(post):
        if op_name(add) != "add" or type(c2) is not Constant:
            continue
        for x, c1 in _pairs(add):
            if type(c1) is Constant and type(x) is not Constant:
                return op_call("add", (op_call("multiply", (x, c2)), _fold("multiply", c1, c2)))
    return None


# --- (x * c1) * c2 -> x * (c1 * c2); (x + c1) + c2 -> x + (c1 + c2)
@_on("add", "multiply")
def simplify_adjacent_multiply_or_add(pre: Call, post: Call) -> Expr | None:
    name = op_name(post)
    if name not in ("add", "multiply"):
        return None
    for inner, c2 in _pairs(post):
        if op_name(inner) != name or type(c2) is not Constant:
            continue
        for x, c1 in _pairs(inner):
            if type(c1) is Constant and type(x) is not Constant:
                return op_call(name, (x, _fold(name, c1, c2)))
    return None


# --- argmax / argmin of a dequantize -> of the quantized values (a positive per-tensor scale keeps the order)
@_on("argmax", "argmin")
def simplify_dq_arg(pre: Call, post: Call) -> Expr | None:
    if op_name(post) not in ("argmax", "argmin") or op_name(post.args[0]) != "qnn.dequantize":
        return None
    scale = post.args[0].args[1]
    if type(scale) is not Constant or scale.data.size != 1 or not float(np.asarray(scale.data).item()) > 0:
        return None
    return Call(post.op, (post.args[0].args[0],), post.attrs, post.span)


def _binomial_term(e: Expr):
    """``k * (p * q)``, ``p * (k * q)`` (any operand order) or ``p * q`` as (k, (p, q)); k a scalar constant."""
    if op_name(e) != "multiply":
        return None
    for u, v in _pairs(e):
        if op_name(v) != "multiply":
            continue
        k = _scalar(u)
        if k is not None and all(_scalar(w) is None for w in v.args):
            return k, tuple(v.args)
        for kk, q in _pairs(v):
            k = _scalar(kk)
            if k is not None and _scalar(u) is None and _scalar(q) is None:
                return k, (u, q)
    if all(_scalar(w) is None for w in e.args):
        return 1.0, tuple(e.args)
    return None


# --- a·x² + b·xy + c·y² with real roots -> a·(x + r1·y)·(x + r2·y)
@_on("add")
def simplify_binomial(pre: Call, post: Call) -> Expr | None:
    if op_name(post) != "add" or (t := _t(pre)) is None or t.dtype not in ("int32", "float32", "float64"):
        return None
    for inner, last in _pairs(post):
        if op_name(inner) != "add":
            continue
        terms = [_binomial_term(e) for e in (*inner.args, last)]
        if any(tm is None for tm in terms):
            continue
        squares = [(k, p) for k, (p, q) in terms if p is q]  # type: ignore[misc]
        cross = [(k, p, q) for k, (p, q) in terms if p is not q]  # type: ignore[misc]
        if len(squares) != 2 or len(cross) != 1 or squares[0][1] is squares[1][1]:
            continue
        (a, x), (c, y) = squares
        b, p, q = cross[0]
        if {id(p), id(q)} != {id(x), id(y)}:
            continue
        if c == 1 and a > 1:
            x, y, a, c = y, x, c, a
        disc = b * b - 4 * a * c
        if disc < 0:
            return None
        root = math.sqrt(disc)
        r1, r2 = (b + root) / (2 * a), (b - root) / (2 * a)
        if t.dtype == "int32" and not all(float(v).is_integer() for v in (a, r1, r2)):
            return None  # the factors would not be exact in integers
        first = op_call("add", (x, op_call("multiply", (y, _const(r1, t.dtype)))))
        second = first if disc < 10e-5 else op_call("add", (x, op_call("multiply", (y, _const(r2, t.dtype)))))
        return op_call("multiply", (_const(a, t.dtype), op_call("multiply", (first, second))))
    return None


SIMPLIFY_EXPR_RULES = (concretize_zeros_like, simplify_add, simplify_rsqrt, eliminate_identity, simplify_reshape,
                       simplify_transpose, simplify_noop_transpose, simplify_same_cast, simplify_consecutive_cast,
                       full_elementwise, switch_add_multiply, simplify_adjacent_multiply_or_add, simplify_dq_arg,
                       simplify_clip_and_consecutive_cast, simplify_clip, simplify_binomial)

POST_ALTER_OP_RULES = (eliminate_identity, simplify_reshape, simplify_same_cast, simplify_consecutive_cast,
                       simplify_clip_and_consecutive_cast, simplify_clip)
