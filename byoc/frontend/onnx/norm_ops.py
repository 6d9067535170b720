"""``LayerNormalization`` (opset 17; transformers).

Y is ``nn.mlas_layer_norm`` (onnxruntime's MLAS kernel, byoc/ops/mlas_math.py) over ``reshape``d rows when
the normalized size is at least 8 and scale / bias hold one value per normalized element; otherwise, and for the
Mean / InvStdDev outputs, ONNX's function body in float32 steps: ``mean``, ``subtract``, ``mean`` of the
square, ``add(ε)``, ``sqrt``, reciprocal, then ``multiply(scale)`` and ``add(bias)``."""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Constant, Span
from ...ops.mlas_math import LAYER_NORM_MIN_ROW
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
    has_bias = len(node.input) > 2 and bool(node.input[2])
    y = _mlas_rows(imp, node, x, shape, axis, attrs, has_bias)
    if y is None:
        y = _call("multiply", (_call("multiply", (d, inv), None, node), imp.expr(node.input[1])), None, node)
        if has_bias:
            y = _call("add", (y, imp.expr(node.input[2])), None, node)
    return [y, mean, inv]  # Y, Mean, InvStdDev (reduced axes kept as 1)


def _mlas_rows(imp, node, x, shape, axis, attrs, has_bias):
    """Y as onnxruntime's kernel computes it, or None where byoc does not reproduce it (short rows, a scale
    or bias broadcast from fewer elements)."""
    rows = int(np.prod(shape[:axis], dtype=np.int64))
    n = int(np.prod(shape[axis:], dtype=np.int64))
    if n < LAYER_NORM_MIN_ROW:
        return None
    params = []
    for i in (1, 2) if has_bias else (1,):
        p = imp.expr(node.input[i])
        if int(np.prod(imp.shape_of(p), dtype=np.int64)) != n or imp.dtype_of(p) != "float32":
            return None
        params.append(_call("reshape", (p,), {"newshape": (n,)}, node))
    if not has_bias:  # no bias: the kernel multiplies; fma(t, s, −0.0) is that rounded product
        params.append(Constant(np.full(n, -0.0, np.float32)))
    flat = _call("reshape", (x,), {"newshape": (rows, n)}, node)
    y = _call("nn.mlas_layer_norm", (flat, *params), {"epsilon": float(attrs.get("epsilon", 1e-5))}, node)
    return _call("reshape", (y,), {"newshape": tuple(int(d) for d in shape)}, node)


NORM_CONVERTERS = {"LayerNormalization": _layer_norm}
