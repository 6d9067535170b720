"""Operand types an op determines from its other operands and attributes (Relay solves these in its type
relations): ``InferType`` uses them for variables declared without a type, e.g. the weights of
``relay.testing.create_workload`` networks."""
from __future__ import annotations

from ..ir.types import TensorType
from .registry import register_arg_types


def _axis(attrs_axis: int, ndim: int) -> int | None:
    a = attrs_axis + ndim if attrs_axis < 0 else attrs_axis
    return a if 0 <= a < ndim else None


def _per_channel(first_param: int):
    def hint(types, attrs):
        data = types[0]
        if not isinstance(data, TensorType):
            return types
        axis = _axis(attrs.axis, data.ndim)
        if axis is None:
            return types
        vec = TensorType((data.shape[axis],), data.dtype)
        return [t if (i < first_param or t is not None) else vec for i, t in enumerate(types)]
    return hint


register_arg_types("nn.batch_norm", _per_channel(1))
register_arg_types("nn.bias_add", _per_channel(1))


def _conv2d_weight(types, attrs):
    data, weight = types[0], types[1]
    if weight is not None or not isinstance(data, TensorType) or attrs.channels is None or not attrs.kernel_size:
        return types
    layout, klayout = attrs.data_layout, attrs.kernel_layout
    if sorted(layout) != sorted("NCHW") or sorted(klayout) != sorted("OIHW") or data.ndim != 4:
        return types
    cin = data.shape[layout.index("C")]
    if cin % attrs.groups:
        return types
    kh, kw = attrs.kernel_size
    size = {"O": int(attrs.channels), "I": cin // attrs.groups, "H": int(kh), "W": int(kw)}
    return [data, TensorType(tuple(size[c] for c in klayout), data.dtype)] + list(types[2:])


register_arg_types("nn.conv2d", _conv2d_weight)


def _dense_weight(types, attrs):
    data, weight = types[0], types[1]
    if weight is not None or not isinstance(data, TensorType) or attrs.units is None or data.ndim < 1:
        return types
    return [data, TensorType((int(attrs.units), data.shape[-1]), data.dtype)]


register_arg_types("nn.dense", _dense_weight)
