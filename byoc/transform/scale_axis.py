"""What FoldScaleAxis's forward and backward passes share: the per-node message (which axes may carry a scale,
and whether the scale must be non-negative because a relu lies on the way), TVM's broadcast matching of a scale
against a tensor's axes, and the expand_dims that lines a 1-D scale up with a weight's axis.

Only the simple layouts byoc's ops take (NCHW/NHWC data, OIHW/HWIO/HWOI/OHWI kernels) are folded; blocked layouts
(``NCHW4c``) have no conv2d here."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.expr import Call, Constant, Expr, Op
from ..ir.types import TensorType

__all__ = ["Message", "intersect", "match_broadcast_to_left_axes", "squeezed_scale", "expand_to_axis",
           "is_all_nonnegative_constant", "op_call", "op_name", "conv_channel_info", "tensor_type"]


@dataclass(frozen=True)
class Message:
    """Axes (sorted) that may carry a scale; ``require_positive`` when a relu lies between scale and consumer."""
    axes: tuple[int, ...]
    require_positive: bool = False


def intersect(a: Message | None, b: Message | None) -> Message | None:
    if a is None or b is None:
        return None
    axes = tuple(x for x in a.axes if x in b.axes)
    # an empty axis set cannot carry a scale: the same as no message (TVM would assert later)
    return Message(axes, a.require_positive or b.require_positive) if axes else None


def op_name(node: Expr) -> str | None:
    if type(node) is Call and type(node.op) is Op:
        return node.op.name
    return None


def op_call(name: str, args: tuple[Expr, ...], **attrs) -> Call:
    from ..ops.registry import get_op_def
    return Call(Op.get(name), tuple(args), get_op_def(name).make_attrs(attrs))


def tensor_type(node: Expr) -> TensorType | None:
    t = node.checked_type
    return t if isinstance(t, TensorType) else None


def match_broadcast_to_left_axes(lhs: TensorType, rhs: TensorType, axes: tuple[int, ...],
                                 scalar_ok: bool = False) -> bool:
    """``rhs`` broadcast against ``lhs`` has ``lhs``'s sizes on ``axes`` and size 1 everywhere else (TVM's
    MatchBroadcastToLeftAxes); with ``scalar_ok`` (a multiply's scale) a scalar matches too: it is repeated
    along the axes."""
    if len(lhs.shape) < len(rhs.shape):
        return False
    if len(rhs.shape) == 0 and scalar_ok:
        return True
    base = len(lhs.shape) - len(rhs.shape)
    for i, d in enumerate(lhs.shape):
        if i in axes:
            if i < base or rhs.shape[i - base] != d:
                return False
        elif i >= base and rhs.shape[i - base] != 1:
            return False
    return True


def squeezed_scale(scale: Expr, lhs: TensorType, rhs: TensorType, axes: tuple[int, ...]) -> Expr:
    """The scale operand reduced to the matched axes only (after ``match_broadcast_to_left_axes``)."""
    if len(rhs.shape) == 0:
        # TVM expands and repeats a scalar along the axes; broadcast_to gives the same values
        return op_call("broadcast_to", (scale,), shape=tuple(lhs.shape[a] for a in axes))
    base = len(lhs.shape) - len(rhs.shape)
    drop = tuple(i - base for i in range(base, len(lhs.shape)) if i not in axes)
    return op_call("squeeze", (scale,), axis=drop) if drop else scale


def expand_to_axis(scale: Expr, ndim: int, axis: int) -> Expr:
    """A 1-D ``scale`` shaped to broadcast along ``axis`` of a rank-``ndim`` tensor (TVM's
    ExpandBiasToMatchAxis for one axis)."""
    pad = ndim - axis - 1
    return op_call("expand_dims", (scale,), axis=1, num_newaxis=pad) if pad > 0 else scale


_PEEL = frozenset({"expand_dims", "reshape", "transpose", "squeeze", "repeat", "broadcast_to"})
_POSITIVE_DTYPES = frozenset({"float32", "float64", "int8", "int32", "uint8", "uint32"})


def is_all_nonnegative_constant(expr: Expr) -> bool:
    """TVM's IsAllPositiveConstant: a constant (through shape-only ops) whose values are all ≥ 0."""
    while op_name(expr) in _PEEL:
        expr = expr.args[0]  # type: ignore[attr-defined]
    if type(expr) is not Constant:
        return False
    data = expr.data
    return data.dtype.name in _POSITIVE_DTYPES and bool(np.all(np.asarray(data) >= 0))


def conv_channel_info(call: Call, weight_type: TensorType, output: bool) -> tuple[int, int, bool] | None:
    """For a conv2d that FoldScaleAxis can fold into (groups 1 or depthwise, simple layouts): the channel axis of
    its data (``output=False``) or output (``output=True``), the weight axis that scale multiplies, and whether it
    is depthwise. ``None`` for grouped convolutions."""
    a = call.attrs
    layout = (a.out_layout or a.data_layout) if output else a.data_layout
    klayout = a.kernel_layout
    if any(ch.islower() for ch in layout + klayout) or "C" not in layout or "O" not in klayout \
            or "I" not in klayout or len(weight_type.shape) != len(klayout):
        return None
    dims = dict(zip(klayout, weight_type.shape))
    depthwise = dims["O"] == a.groups and dims["I"] == 1
    if a.groups != 1 and not depthwise:
        return None
    # Input channels sit on I, except for a depthwise kernel whose channels are its O; output channels on O.
    waxis = klayout.index("O") if (output or depthwise) else klayout.index("I")
    return layout.index("C"), waxis, depthwise
