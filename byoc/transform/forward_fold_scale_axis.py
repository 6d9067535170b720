"""ForwardFoldScaleAxis: a per-channel ``multiply`` by a scale before a conv2d / dense moves into the consumer's
weight (TVM's ``src/relay/transforms/fold_scale_axis.cc``, forward half).

Two linear sweeps. Preparation (users before operands): each consumer says which axes of its input could take a
scale — conv2d its data's channel axis, dense axis 1 — relu / leaky_relu pass the demand on and then need a
non-negative scale, add / subtract pass it to the operand that carries the axes; a node's demand is the
intersection over all its users, so one user that cannot take a scale (a tuple, a let, any other op) stops the
fold. Rewrite (operands before users): ``multiply(x, s)`` with a demand becomes "x scaled by s on these axes",
relu carries it, add / subtract divide their other operand by s, and conv2d / dense multiply their weight by s.
A scale that reaches no consumer is multiplied back in (TVM asserts instead)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.expr import Call, Expr, Function, If, Let, Tuple
from ..ir.traversal import children, post_order, rebuild
from .pass_infra import FunctionPass
from .scale_axis import (Message, conv_channel_info, expand_to_axis, intersect, is_all_nonnegative_constant,
                         match_broadcast_to_left_axes, op_call, op_name, squeezed_scale, tensor_type)

__all__ = ["ForwardFoldScaleAxis"]

_RELU = ("nn.relu", "nn.leaky_relu")
_ADD = ("add", "subtract")


@dataclass(frozen=True)
class _Scaled:
    """``value`` whose true result is ``value`` times ``scale`` (1-D per axis) on ``axes``."""
    value: Expr
    axes: tuple[int, ...]
    scale: Expr


def _prep(call: Call, out: Message | None) -> tuple[Message | None, ...]:
    """The demand this call puts on each operand, given the demand on its result."""
    name = op_name(call)
    none = (None,) * len(call.args)
    if name in _RELU:
        return (Message(out.axes, True),) if out is not None else none
    if name in _ADD:
        if out is None:
            return none
        lt, rt = tensor_type(call.args[0]), tensor_type(call.args[1])
        if lt is None or rt is None:
            return none
        if match_broadcast_to_left_axes(lt, rt, out.axes):
            return (out, None)
        if match_broadcast_to_left_axes(rt, lt, out.axes):
            return (None, out)
        return none
    if name == "nn.conv2d":
        wt, dt = tensor_type(call.args[1]), tensor_type(call.args[0])
        info = conv_channel_info(call, wt, output=False) if wt is not None and dt is not None else None
        return (Message((info[0],)), None) if info is not None else none
    if name == "nn.dense":
        dt = tensor_type(call.args[0])
        return (Message((1,)), None) if dt is not None and len(dt.shape) == 2 else none
    return none


def _demands(body: Expr, order: list[Expr]) -> dict[int, Message | None]:
    msgs: dict[int, Message | None] = {id(body): None}

    def update(node: Expr, m: Message | None) -> None:
        k = id(node)
        msgs[k] = intersect(msgs[k], m) if k in msgs else m

    for node in reversed(order):  # every user before its operands
        t = type(node)
        if t is Call:
            if op_name(node) is None:  # a call of a function value: nothing passes through it
                for c in children(node):
                    update(c, None)
            else:
                for arg, m in zip(node.args, _prep(node, msgs.get(id(node)))):
                    update(arg, m)
        elif t is Tuple:
            for f in node.fields:
                update(f, None)
        elif t in (Let, If):
            for c in children(node):
                update(c, None)
        elif t is Function:
            update(node.body, None)
    return msgs


def _realize(r: Expr | _Scaled) -> Expr:
    if type(r) is not _Scaled:
        return r
    ndim = len(tensor_type(r.value).shape)  # type: ignore[union-attr]
    return op_call("multiply", (r.value, expand_to_axis(r.scale, ndim, r.axes[0])))


def _rewrite(call: Call, args: list, msg: Message | None) -> Expr | _Scaled | None:
    name = op_name(call)
    if name in _RELU:
        a = args[0]
        if type(a) is _Scaled:
            return _Scaled(Call(call.op, (a.value,), call.attrs, call.span), a.axes, a.scale)
        return None
    if name in _ADD:
        sl, sr = type(args[0]) is _Scaled, type(args[1]) is _Scaled
        if sl == sr:
            return None
        i = 0 if sl else 1
        s = args[i]
        ndim = len(tensor_type(call.args[i]).shape)  # type: ignore[union-attr]
        other = op_call("divide", (_realize(args[1 - i]), expand_to_axis(s.scale, ndim, s.axes[0])))
        new = (s.value, other) if i == 0 else (other, s.value)
        return _Scaled(Call(call.op, new, call.attrs, call.span), s.axes, s.scale)
    if name == "multiply":
        if msg is None or any(type(a) is _Scaled for a in args):
            return None
        lt, rt = tensor_type(call.args[0]), tensor_type(call.args[1])
        for v, s, vt, st in ((0, 1, lt, rt), (1, 0, rt, lt)):
            if vt is None or st is None or not match_broadcast_to_left_axes(vt, st, msg.axes, scalar_ok=True):
                continue
            scale = squeezed_scale(args[s], vt, st, msg.axes)
            if msg.require_positive and not is_all_nonnegative_constant(scale):
                continue
            return _Scaled(args[v], msg.axes, scale)
        return None
    if name == "nn.conv2d":
        d, w = args
        if type(d) is not _Scaled or type(w) is _Scaled:
            return None
        info = conv_channel_info(call, tensor_type(call.args[1]), output=False)  # type: ignore[arg-type]
        if info is None or d.axes != (info[0],):
            return None
        wt = tensor_type(call.args[1])
        weight = op_call("multiply", (w, expand_to_axis(d.scale, len(wt.shape), info[1])))  # type: ignore[union-attr]
        return Call(call.op, (d.value, weight), call.attrs, call.span)
    if name == "nn.dense":
        d, w = args
        if type(d) is not _Scaled or type(w) is _Scaled or d.axes != (1,):
            return None
        return Call(call.op, (d.value, op_call("multiply", (w, d.scale))), call.attrs, call.span)
    return None


def forward_fold_scale_axis(func: Function) -> Function:
    order = post_order(func)
    msgs = _demands(func.body, order)
    if not any(m is not None for m in msgs.values()):
        return func
    out: dict[int, Expr | _Scaled] = {}
    realized: dict[int, Expr] = {}

    def plain(node: Expr) -> Expr:
        r = out[id(node)]
        if type(r) is not _Scaled:
            return r  # type: ignore[return-value]
        k = id(node)
        if k not in realized:
            realized[k] = _realize(r)
        return realized[k]

    for node in order:
        if type(node) is Call and op_name(node) is not None:
            args = [out[id(a)] for a in node.args]
            r = _rewrite(node, args, msgs.get(id(node)))
            if r is not None:
                out[id(node)] = r
                continue
        out[id(node)] = rebuild(node, tuple(plain(c) for c in children(node)))
    result = plain(func)
    assert isinstance(result, Function)
    return result


class ForwardFoldScaleAxis(FunctionPass):
    """``relay.transform.ForwardFoldScaleAxis()``."""

    name: ClassVar[str] = "ForwardFoldScaleAxis"
    opt_level: ClassVar[int] = 3
    typed: ClassVar[bool] = True

    def transform_function(self, func: Function, mod, ctx) -> Function:
        return forward_fold_scale_axis(func)
