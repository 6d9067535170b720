"""ONNX reductions and piecewise-linear activations (what torch's exporters emit for adaptive pooling and
MobileNetV3):

* ``ReduceMean/Sum/Max/Min`` ⇒ ``mean``/``sum``/``max``/``min`` (axes from the attribute before opset 18, from
  the input after); ``ReduceMean`` over H and W of an NCHW tensor with keepdims is ``nn.global_avg_pool2d`` (torch's
  ``adaptive_avg_pool2d(x, 1)`` under the dynamo exporter), which the NPU pattern tables take
* ``HardSigmoid`` ⇒ ``clip(alpha·x + beta, 0, 1)``; ``HardSwish`` ⇒ ``x · clip(x/6 + 1/2, 0, 1)`` — float32 steps
  in the order of ONNX's definition
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Constant, Span
from ...relay.op import make_call
from .model import node_label

__all__ = ["REDUCE_ACTIVATION_CONVERTERS"]


def _call(op, args, attrs=None, node=None):
    return make_call(op, args, attrs, span=Span(node.name or node.output[0]) if node is not None else None)


_REDUCE_INPUT_AXES_SINCE = {"ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18, "ReduceSum": 13}
_REDUCE_OP = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min"}


def _reduce(imp, node, attrs):
    x = imp.expr(node.input[0])
    shape = imp.shape_of(x)
    rank = len(shape)
    if imp.opset >= _REDUCE_INPUT_AXES_SINCE[node.op_type]:
        axes = [int(a) for a in imp.const(node.input[1], node, "axes").reshape(-1)] \
            if len(node.input) > 1 and node.input[1] else []
    else:
        axes = [int(a) for a in attrs.get("axes", [])]
    keep = bool(attrs.get("keepdims", 1))
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return x
        axes = list(range(rank))
    axes = sorted({a + rank if a < 0 else a for a in axes})
    if any(not 0 <= a < rank for a in axes):
        raise ModelError(f"{node_label(node)}: axes {attrs.get('axes', axes)} out of range for rank {rank}")
    if any(shape[a] == 0 for a in axes):
        raise ModelError(f"{node_label(node)}: reducing an empty axis of shape {list(shape)} is not supported")
    if node.op_type == "ReduceMean" and rank == 4 and axes == [2, 3] and keep and imp.dtype_of(x) == "float32":
        return _call("nn.global_avg_pool2d", (x,), {"layout": "NCHW"}, node)
    return _call(_REDUCE_OP[node.op_type], (x,), {"axis": tuple(axes), "keepdims": keep}, node)


def _f32(v):
    return Constant(np.asarray(v, np.float32))


def _hard_sigmoid(imp, node, attrs):
    x = imp.expr(node.input[0])
    a = _call("multiply", (x, _f32(attrs.get("alpha", 0.2))), None, node)
    a = _call("add", (a, _f32(attrs.get("beta", 0.5))), None, node)
    return _call("clip", (a,), {"a_min": 0.0, "a_max": 1.0}, node)


def _hard_swish(imp, node, attrs):
    x = imp.expr(node.input[0])
    a = _call("add", (_call("multiply", (x, _f32(1.0 / 6.0)), None, node), _f32(0.5)), None, node)
    return _call("multiply", (x, _call("clip", (a,), {"a_min": 0.0, "a_max": 1.0}, node)), None, node)


REDUCE_ACTIVATION_CONVERTERS = {**{op: _reduce for op in _REDUCE_OP}, "HardSigmoid": _hard_sigmoid,
                                "HardSwish": _hard_swish}
