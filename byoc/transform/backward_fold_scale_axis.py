"""BackwardFoldScaleAxis: a per-channel ``multiply`` by a scale after a conv2d / dense moves back into the
producer's weight (TVM's ``src/relay/transforms/fold_scale_axis.cc``, backward half).

Preparation (operands before users): a conv2d offers its output channel axis, dense axis 1; relu / leaky_relu,
add / subtract (per-channel bias or two scaled branches of one shape) and nn.bias_add pass the offer on — but only
from a node with exactly one use, so rescaling it changes nothing else. Rewrite (operands before users):
``multiply(y, s)`` whose ``y`` carries an offer on the scale's axes (a non-negative constant scale if a relu lies
between) becomes ``y`` rebuilt with the scale pushed down its single-use chain: conv2d / dense weights times s,
the other operand of add / subtract and a bias times s. The chain is a tree (every node in it has one use), so it
is rebuilt with an explicit stack, once."""
from __future__ import annotations

from typing import ClassVar

from ..ir.expr import Call, Expr, Function
from ..ir.traversal import children, post_order, rebuild
from .pass_infra import FunctionPass
from .scale_axis import (Message, conv_channel_info, expand_to_axis, is_all_nonnegative_constant,
                         match_broadcast_to_left_axes, op_call, op_name, squeezed_scale, tensor_type)

__all__ = ["BackwardFoldScaleAxis"]

_RELU = ("nn.relu", "nn.leaky_relu")
_ADD = ("add", "subtract")


def _scaled_sides(call: Call, msg: Message, msgs: dict[int, Message]) -> tuple[bool, ...]:
    """Which operands of a chain node carry the scale further down (the others are multiplied by it)."""
    name = op_name(call)
    if name in _RELU or name == "nn.bias_add":
        return (True,) + (False,) * (len(call.args) - 1)
    if name in _ADD:
        return tuple(id(a) in msgs and msgs[id(a)].axes == msg.axes for a in call.args)
    return (False,) * len(call.args)


def _prep(call: Call, ins: list[Message | None], msgs: dict[int, Message]) -> Message | None:
    name = op_name(call)
    if name in _RELU:
        return Message(ins[0].axes, True) if ins[0] is not None else None
    if name in _ADD:
        lt, rt = tensor_type(call.args[0]), tensor_type(call.args[1])
        if lt is None or rt is None:
            return None
        a, b = ins
        if a is not None and match_broadcast_to_left_axes(lt, rt, a.axes):
            out = a
        elif b is not None and match_broadcast_to_left_axes(rt, lt, b.axes):
            out = b
        elif a is not None and b is not None and a.axes == b.axes and lt.shape == rt.shape:
            out = a
        else:
            return None
        # every operand the scale will reach must allow it (TVM keeps only the first one's requirement)
        positive = any(m is not None and m.axes == out.axes and m.require_positive for m in ins)
        return Message(out.axes, out.require_positive or positive)
    if name == "nn.bias_add":
        t = tensor_type(call.args[0])
        if ins[0] is None or t is None or len(ins[0].axes) != 1:
            return None
        axis = int(call.attrs.axis)
        return ins[0] if (axis + len(t.shape) if axis < 0 else axis) == ins[0].axes[0] else None
    if name == "nn.conv2d":
        wt = tensor_type(call.args[1])
        info = conv_channel_info(call, wt, output=True) if wt is not None else None
        return Message((info[0],)) if info is not None else None
    if name == "nn.dense":
        t = tensor_type(call)
        return Message((1,)) if t is not None and len(t.shape) == 2 else None
    return None


def _offers(order: list[Expr], root: Expr) -> dict[int, Message]:
    uses: dict[int, int] = {id(root): 1}
    for node in order:
        for c in children(node):
            uses[id(c)] = uses.get(id(c), 0) + 1
    msgs: dict[int, Message] = {}
    for node in order:
        if type(node) is Call and op_name(node) is not None and uses.get(id(node)) == 1:
            m = _prep(node, [msgs.get(id(a)) for a in node.args], msgs)
            if m is not None:
                msgs[id(node)] = m
    return msgs


def _push_scale(top: Call, msg: Message, scale: Expr, msgs: dict[int, Message], memo: dict[int, Expr]) -> Expr:
    """``top`` (a chain carrying ``msg``) rebuilt so that its result is multiplied by ``scale`` on ``msg.axes``."""
    tree: list[Call] = []
    stack = [top]
    while stack:  # the chain is a tree: every node in it has a single use
        node = stack.pop()
        tree.append(node)
        stack += [a for a, s in zip(node.args, _scaled_sides(node, msg, msgs)) if s]
    axis = msg.axes[0]
    done: dict[int, Expr] = {}
    for node in reversed(tree):  # children before parents
        name = op_name(node)
        sides = _scaled_sides(node, msg, msgs)
        args = [done[id(a)] if s else memo[id(a)] for a, s in zip(node.args, sides)]
        if name in _ADD:
            ndim = len(tensor_type(node.args[sides.index(True)]).shape)  # type: ignore[union-attr]
            args = [a if s else op_call("multiply", (a, expand_to_axis(scale, ndim, axis)))
                    for a, s in zip(args, sides)]
        elif name == "nn.bias_add":
            args[1] = op_call("multiply", (args[1], scale))
        elif name == "nn.conv2d":
            wt = tensor_type(node.args[1])
            info = conv_channel_info(node, wt, output=True)  # type: ignore[arg-type]
            args[1] = op_call("multiply", (args[1], expand_to_axis(scale, len(wt.shape), info[1])))  # type: ignore
        elif name == "nn.dense":
            args[1] = op_call("multiply", (args[1], expand_to_axis(scale, 2, 0)))
        done[id(node)] = Call(node.op, tuple(args), node.attrs, node.span)
    return done[id(top)]


def _fold(call: Call, msgs: dict[int, Message], memo: dict[int, Expr]) -> Expr | None:
    for v, s in ((0, 1), (1, 0)):
        msg = msgs.get(id(call.args[v]))
        if msg is None:
            continue
        vt, st = tensor_type(call.args[v]), tensor_type(call.args[s])
        if vt is None or st is None or not match_broadcast_to_left_axes(vt, st, msg.axes, scalar_ok=True):
            return None
        scale = squeezed_scale(memo[id(call.args[s])], vt, st, msg.axes)
        if msg.require_positive and not is_all_nonnegative_constant(scale):
            return None
        return _push_scale(call.args[v], msg, scale, msgs, memo)  # type: ignore[arg-type]
    return None


def backward_fold_scale_axis(func: Function) -> Function:
    order = post_order(func)
    msgs = _offers(order, func.body)
    if not msgs:
        return func
    memo: dict[int, Expr] = {}
    for node in order:
        new = rebuild(node, tuple(memo[id(c)] for c in children(node)))
        if op_name(node) == "multiply":
            folded = _fold(node, msgs, memo)  # type: ignore[arg-type]
            if folded is not None:
                new = folded
        memo[id(node)] = new
    out = memo[id(func)]
    assert isinstance(out, Function)
    return out


class BackwardFoldScaleAxis(FunctionPass):
    """``relay.transform.BackwardFoldScaleAxis()``."""

    name: ClassVar[str] = "BackwardFoldScaleAxis"
    opt_level: ClassVar[int] = 3
    typed: ClassVar[bool] = True

    def transform_function(self, func: Function, mod, ctx) -> Function:
        return backward_fold_scale_axis(func)
