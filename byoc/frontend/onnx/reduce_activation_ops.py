"""ONNX reductions and piecewise-linear activations (what torch's exporters emit for adaptive pooling and
MobileNetV3):

* ``ReduceMean/Sum/Max/Min`` ⇒ ``mean``/``sum``/``max``/``min`` (axes from the attribute before opset 18, from
  the input after); ``ReduceMean`` over H and W of an NCHW tensor with keepdims is ``nn.global_avg_pool2d`` (torch's
  ``adaptive_avg_pool2d(x, 1)`` under the dynamo exporter), which the NPU pattern tables take
* ``HardSigmoid`` ⇒ ``clip(alpha·x + beta, 0, 1)``; ``HardSwish`` ⇒ ``x · clip(x/6 + 1/2, 0, 1)`` — float32 steps
  in the order of ONNX's definition
* ``Erf`` ⇒ ``mlas_erf`` on float32 (onnxruntime's MLAS polynomial, byoc/ops/mlas_math.py; float64: ``erf``);
  ``Gelu`` (opset 20) ⇒ onnxruntime's steps ``(0.5·x)·(erf(x·float32(√½)) + 1)`` with the same erf, or with
  ``approximate="tanh"`` ONNX's function body ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`` (byoc's tanh is
  correctly rounded where MLAS uses a polynomial: within 1e-5, not bit-exact). In a QDQ model they run in float
  between DequantizeLinear and QuantizeLinear (onnxruntime's CPU provider has no quantized kernel for them)
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
    if node.op_type in ("ReduceMean", "ReduceSum") and imp.dtype_of(x) == "float32" and \
            axes == list(range(axes[0], rank)):
        from .eigen_reduce import eigen_trailing_reduce  # onnxruntime's (Eigen's) summation order
        out = eigen_trailing_reduce(node, x, shape, axes[0], node.op_type == "ReduceMean", keep)
        if out is not None:
            return out
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


def _float_input(imp, node):
    if len(node.input) != 1 or not node.input[0]:
        raise ModelError(f"{node_label(node)} takes one input, found {len(node.input)}")
    x = imp.expr(node.input[0])
    dt = imp.dtype_of(x)
    if dt not in ("float32", "float64"):
        raise ModelError(f"{node_label(node)}: {node.op_type} of element type {dt} is not supported",
                         hint="float32 and float64 inputs are")
    return x, dt


def _erf(imp, node, attrs):
    x, dt = _float_input(imp, node)
    return _call("mlas_erf" if dt == "float32" else "erf", (x,), None, node)


def _gelu(imp, node, attrs):
    x, dt = _float_input(imp, node)
    approx = attrs.get("approximate", "none")
    approx = approx.decode() if isinstance(approx, bytes) else str(approx)

    def c(v):
        return Constant(np.asarray(v, dt))
    if approx == "none":
        inner = _call("mlas_erf" if dt == "float32" else "erf",
                      (_call("multiply", (x, c(1 / np.sqrt(2.0))), None, node),), None, node)
    elif approx == "tanh":
        x3 = _call("multiply", (_call("multiply", (x, x), None, node), x), None, node)
        poly = _call("add", (x, _call("multiply", (c(0.044715), x3), None, node)), None, node)
        inner = _call("tanh", (_call("multiply", (c(np.sqrt(2.0 / np.pi)), poly), None, node),), None, node)
    else:
        raise ModelError(f"{node_label(node)}: Gelu approximate={approx!r} is not supported",
                         hint='ONNX defines "none" and "tanh"')
    half_x = _call("multiply", (c(0.5), x), None, node)
    return _call("multiply", (half_x, _call("add", (c(1.0), inner), None, node)), None, node)


REDUCE_ACTIVATION_CONVERTERS = {**{op: _reduce for op in _REDUCE_OP}, "HardSigmoid": _hard_sigmoid,
                                "HardSwish": _hard_swish, "Erf": _erf, "Gelu": _gelu}
