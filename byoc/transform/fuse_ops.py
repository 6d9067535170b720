"""FuseOps: TVM's Relay fusion. Each group of ``fusion_groups`` becomes a primitive function literal
(``Primitive=1``; ``relay.reshape_only=1`` when it only reshapes) called with the group's external inputs, whose
parameters are ``p0, p1, ...`` in first-use order. Scalar int32/int64/float32/float64/bool constants are fused
into the body; other constants stay arguments. Primitive functions and functions for an external compiler are
left alone, as are nested function literals. ``fuse_opt_level=-1`` takes the PassContext's opt_level; 0 makes
every op its own primitive function. Values are unchanged: only the nesting changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.traversal import children, post_order, rebuild
from ..ir.types import TensorType
from ..ops.registry import get_op_attr
from .fusion_groups import MAX_FUSE_DEPTH, FusionGroup, partition_groups
from .pass_infra import FunctionPass, PassContext

__all__ = ["FuseOps", "fuse_ops"]

# TVM's TReshapeOp ops (a user may register more with register_op_attr(name, "TReshapeOp", True)).
_RESHAPE_OPS = frozenset({"reshape", "squeeze", "expand_dims", "reverse_reshape", "contrib_reverse_reshape"})


def _is_reshape(op: Op) -> bool:
    return op.name in _RESHAPE_OPS or bool(get_op_attr(op.name, "TReshapeOp", False))


class _GroupInfo:
    __slots__ = ("params", "arguments")

    def __init__(self):
        self.params: list[Var] = []
        self.arguments: list[Expr] = []

    def param_for(self, arg: Expr, type_) -> Var:
        for a, p in zip(self.arguments, self.params):
            if a is arg:
                return p
        p = Var(f"p{len(self.params)}", type_)
        self.params.append(p)
        self.arguments.append(arg)
        return p


def _make_function(info: _GroupInfo, ret_type, body: Expr) -> Call:
    has_call = reshape_only = False
    calls = [n for n in post_order(body, enter_functions=False) if isinstance(n, Call)]
    if calls:
        has_call = True
        reshape_only = all(isinstance(c.op, Op) and _is_reshape(c.op) for c in calls) and \
            all(isinstance(p.type_annotation, TensorType) for p in info.params)
    attrs = {"Primitive": 1 if has_call else 0}
    if reshape_only:
        attrs["relay.reshape_only"] = 1
    func = Function(tuple(info.params), body, ret_type)
    for k, v in attrs.items():
        func = func.with_attr(k, v)
    return Call(func, tuple(info.arguments))


def fuse_ops(body: Expr, opt_level: int = 2, max_depth: int = MAX_FUSE_DEPTH) -> Expr:
    """The fused form of a typed function body."""
    nodes, gmap = partition_groups(body, opt_level, max_depth)
    ginfo: dict[int, _GroupInfo] = {}
    memo: dict[int, Expr] = {}

    def new_args(args, group: FusionGroup) -> tuple[Expr, ...]:
        out = []
        for a in args:
            new = memo.get(id(a), a)
            if gmap.get(id(a)) is not group:
                info = ginfo.setdefault(id(group), _GroupInfo())
                out.append(info.param_for(new, a._checked_type))
            else:
                out.append(new)
        return tuple(out)

    for node in post_order(body, enter_functions=False):
        group = gmap.get(id(node))
        if isinstance(node, Call) and isinstance(node.op, Op) and \
                not get_op_attr(node.op.name, "TNonComputational", False):
            call = Call(node.op, new_args(node.args, group), node.attrs, node.span)
            new = _make_function(ginfo.setdefault(id(group), _GroupInfo()), node._checked_type, call) \
                if group.root is node else call
        elif isinstance(node, Tuple) and group is not None and group.root is not node:
            new = Tuple(new_args(node.fields, group), node.span)
        elif isinstance(node, TupleGetItem) and group is not None:
            inner = TupleGetItem(new_args((node.tuple_value,), group)[0], node.index, node.span)
            if group.root is not node:
                new = inner
            elif gmap.get(id(node.tuple_value)) is not group:  # the tuple comes from an opaque op
                new = rebuild(node, (memo.get(id(node.tuple_value), node.tuple_value),))
            else:
                new = _make_function(ginfo.setdefault(id(group), _GroupInfo()), node._checked_type, inner)
        elif isinstance(node, (Var, Constant, Op, Function)):
            new = node
        else:
            new = rebuild(node, tuple(memo.get(id(c), c) for c in children(node)))
        memo[id(node)] = new
    return memo[id(body)]


@dataclass(frozen=True)
class FuseOps(FunctionPass):
    """``relay.transform.FuseOps(fuse_opt_level=-1)``; the group size cap is the PassContext config
    ``relay.FuseOps.max_depth`` (256)."""

    fuse_opt_level: int = -1

    name: ClassVar[str] = "FuseOps"
    opt_level: ClassVar[int] = 0
    typed: ClassVar[bool] = True

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        if int(func.attrs.get("Primitive", 0) or 0):
            return func
        level = ctx.opt_level if self.fuse_opt_level == -1 else self.fuse_opt_level
        depth = int(ctx.config.get("relay.FuseOps.max_depth", MAX_FUSE_DEPTH))
        body = fuse_ops(func.body, level, depth)
        return func if body is func.body else Function(func.params, body, func.ret_type, func.attrs, func.span)
