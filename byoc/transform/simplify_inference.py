"""SimplifyInference: rewrite inference-only ops into elementwise arithmetic (TVM's ``simplify_inference.cc``).

``nn.batch_norm(x, gamma, beta, mean, var)[0]`` becomes, exactly as TVM's ``BatchNormToInferUnpack``::

    scale = 1 / sqrt(var + epsilon)      [* gamma   when attrs.scale]
    shift = negative(mean) * scale       [+ beta    when attrs.center]
    out   = x * expand_dims(scale) + expand_dims(shift)

with ``expand_dims(v, axis=1, num_newaxis=ndim - axis - 1)`` so the vectors broadcast along ``axis`` (no
expand_dims when ``axis`` is the last one). The reference implementation of ``nn.batch_norm`` performs the same
float operations in the same order, so the rewrite is bit-exact. ``epsilon`` is a constant of the data's dtype
(TVM rounds it through float32 first; the two agree for float32 data). ``nn.dropout(x)[0]`` becomes ``x``.
Only field 0 is rewritten; other uses of the tuple keep the original call, as in TVM.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import IRError
from ..ir.expr import Call, Constant, Expr, Function, Op, TupleGetItem
from ..ir.module import IRModule
from ..ir.traversal import children, rewrite_post_order
from ..ir.types import TensorType
from ..relay.op import make_call
from .fold_constant import is_opaque_function
from .infer_type import infer_module
from .pass_infra import FunctionPass, PassContext

__all__ = ["SimplifyInference", "simplify_inference", "batch_norm_to_arithmetic"]


def _scalar(value: float, dtype: str) -> Constant:
    return Constant(np.array(value, dtype=dtype))


def _expand_to_axis(vec: Expr, ndim: int, axis: int) -> Expr:
    trailing = ndim - axis - 1
    if trailing <= 0:
        return vec
    return make_call("expand_dims", (vec,), {"axis": 1, "num_newaxis": trailing})


def batch_norm_to_arithmetic(call: Call, data_type: TensorType) -> Expr:
    """The elementwise expansion of one ``nn.batch_norm`` call (its output field 0)."""
    data, gamma, beta, mean, var = call.args
    attrs = call.attrs
    dt = data_type.dtype
    eps = np.dtype(dt).type(attrs.epsilon)
    scale: Expr = make_call("divide", (_scalar(1.0, dt), make_call("sqrt", (make_call(
        "add", (var, Constant(np.array(eps, dtype=dt)))),))))
    if attrs.scale:
        scale = make_call("multiply", (scale, gamma))
    shift: Expr = make_call("multiply", (make_call("negative", (mean,)), scale))
    if attrs.center:
        shift = make_call("add", (shift, beta))
    ndim = data_type.ndim
    axis = attrs.axis + ndim if attrs.axis < 0 else attrs.axis
    out = make_call("multiply", (data, _expand_to_axis(scale, ndim, axis)), span=call.span)
    return make_call("add", (out, _expand_to_axis(shift, ndim, axis)), span=call.span)


def simplify_inference(expr: Expr) -> Expr:
    """Rewrite batch_norm / dropout in ``expr``; the original nodes must carry types (InferType)."""

    def outside_opaque(node: Expr):
        return () if is_opaque_function(node) else children(node)

    def rewrite(original: Expr, new: Expr) -> Expr | None:
        if not (isinstance(new, TupleGetItem) and new.index == 0 and isinstance(new.tuple_value, Call)):
            return None
        call = new.tuple_value
        if not isinstance(call.op, Op):
            return None
        if call.op.name == "nn.batch_norm":
            orig_call = original.tuple_value  # type: ignore[attr-defined]
            data_type = orig_call.args[0]._checked_type
            if not isinstance(data_type, TensorType):
                raise IRError("SimplifyInference: nn.batch_norm's data has no tensor type",
                              hint="run relay.transform.InferType() first")
            return batch_norm_to_arithmetic(call, data_type)
        if call.op.name == "nn.dropout":
            return call.args[0]
        return None

    # batch_norm's item 0 and dropout's become arithmetic on / the data itself: the same type.
    return rewrite_post_order(expr, rewrite, child_fn=outside_opaque, preserves_types=True)


@dataclass(frozen=True)
class SimplifyInference(FunctionPass):
    """``relay.transform.SimplifyInference()``; types the module first when needed."""

    name: ClassVar[str] = "SimplifyInference"
    opt_level: ClassVar[int] = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return super().run(infer_module(mod.copy()), ctx)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = simplify_inference(func)
        assert isinstance(out, Function)
        return out
