"""CanonicalizeOps: TVM's canonical forms the op-level passes expect. ``nn.bias_add(x, b, axis)`` becomes
``add(x, expand_dims(b, axis=1, num_newaxis=ndim - axis - 1))`` (just ``add(x, b)`` on the last axis): the same
element-wise addition, so values are bit-identical."""
from __future__ import annotations

from typing import ClassVar

from ..ir.expr import Call, Expr, Function, Op
from ..ir.traversal import rewrite_post_order
from .pass_infra import FunctionPass

__all__ = ["CanonicalizeOps"]


def _bias_add(old: Expr, new: Expr) -> Expr | None:
    if type(new) is not Call or type(new.op) is not Op or new.op.name != "nn.bias_add":
        return None
    ndim = len(old.args[0].checked_type.shape)
    axis = int(new.attrs.axis)
    axis = axis + ndim if axis < 0 else axis
    bias = new.args[1]
    pad = ndim - axis - 1
    if pad > 0:
        bias = Call(Op.get("expand_dims"), (bias,), _expand_attrs(pad))
    return Call(Op.get("add"), (new.args[0], bias))


def _expand_attrs(pad: int):
    from ..ops.registry import get_op_def
    return get_op_def("expand_dims").make_attrs({"axis": 1, "num_newaxis": pad})


class CanonicalizeOps(FunctionPass):
    """``relay.transform.CanonicalizeOps()``."""

    name: ClassVar[str] = "CanonicalizeOps"
    opt_level: ClassVar[int] = 3
    typed: ClassVar[bool] = True

    def transform_function(self, func: Function, mod, ctx) -> Function:
        out = rewrite_post_order(func, _bias_add)
        assert isinstance(out, Function)
        return out
