"""``LayerNormalization`` (opset 17; transformers) ⇒ ``mean``, ``subtract``, ``mean`` of the square, ``add(ε)``,
``sqrt``, reciprocal, then ``multiply(scale)`` and ``add(bias)`` — ONNX's function body, in float32 steps."""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Constant, Span
from ...relay.op import make_call
from .model import node_axis, node_label

__all__ = ["NORM_CONVERTERS"]


def _call(op, args, attrs=None, node=None):
    return make_call(op, args, attrs, span=Span(node.name or node.output[0]) if node is not None else None)


def _layer_norm(imp, node, attrs):
    x = imp.expr(node.input[0])
    shape = imp.shape_of(x)
    rank = len(shape)
    if imp.dtype_of(x) != "float32":
        raise ModelError(f"{node_label(node)}: only float32 LayerNormalization is supported")
    axis = node_axis(node, attrs, rank, -1)
    if int(attrs.get("stash_type", 1)) != 1:
        raise ModelError(f"{node_label(node)}: stash_type {attrs['stash_type']} is not supported")
    axes = tuple(range(axis, rank))
    eps = Constant(np.asarray(attrs.get("epsilon", 1e-5), np.float32))
    mean = _call("mean", (x,), {"axis": axes, "keepdims": True}, node)
    d = _call("subtract", (x, mean), None, node)
    var = _call("mean", (_call("multiply", (d, d), None, node),), {"axis": axes, "keepdims": True}, node)
    inv = _call("divide", (Constant(np.asarray(1.0, np.float32)),
                           _call("sqrt", (_call("add", (var, eps), None, node),), None, node)), None, node)
    y = _call("multiply", (_call("multiply", (d, inv), None, node), imp.expr(node.input[1])), None, node)
    if len(node.input) > 2 and node.input[2]:
        y = _call("add", (y, imp.expr(node.input[2])), None, node)
    return [y, mean, inv]  # Y, Mean, InvStdDev (reduced axes kept as 1)


NORM_CONVERTERS = {"LayerNormalization": _layer_norm}
