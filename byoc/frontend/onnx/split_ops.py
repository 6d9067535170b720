"""``Split`` (torch's ``chunk`` / ``split`` under the dynamo exporter, e.g. ShuffleNetV2's channel split) ⇒
``split`` with explicit indices, one ``TupleGetItem`` per output.

The sizes come from the ``split`` input (opset ≥ 13) or attribute (< 13); without them the axis is cut into
``num_outputs`` (opset ≥ 18) or ``len(outputs)`` parts of ``ceil(d / n)``, the last one smaller (ONNX's rule)."""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Span, TupleGetItem
from ...relay.op import make_call
from .model import node_axis, node_label

__all__ = ["SPLIT_CONVERTERS"]


def split_sizes(node, attrs, dim: int, sizes) -> list[int]:
    n_out = len(node.output)
    if sizes is not None:
        sizes = [int(s) for s in np.asarray(sizes).reshape(-1)]
        if len(sizes) != n_out or min(sizes, default=0) < 0 or sum(sizes) != dim:
            raise ModelError(f"{node_label(node)}: split sizes {sizes} do not cut an axis of {dim} into "
                             f"{n_out} outputs")
        return sizes
    n = int(attrs.get("num_outputs", n_out))
    if n != n_out or n <= 0:
        raise ModelError(f"{node_label(node)}: num_outputs={n} but the node has {n_out} outputs")
    step = -(-dim // n)
    sizes = [min(step, max(0, dim - k * step)) for k in range(n)]
    if sizes[-1] <= 0:
        raise ModelError(f"{node_label(node)}: an axis of {dim} cannot be split into {n} non-empty parts")
    return sizes


def _split(imp, node, attrs):
    x = imp.expr(node.input[0])
    shape = imp.shape_of(x)
    axis = node_axis(node, attrs, len(shape), 0)
    if imp.opset >= 13:
        given = imp.const(node.input[1], node, "split") if len(node.input) > 1 and node.input[1] else None
    else:
        given = attrs.get("split")
    sizes = split_sizes(node, attrs, shape[axis], given)
    span = Span(node.name or node.output[0])
    if len(sizes) == 1:
        return [x]
    tup = make_call("split", (x,), {"indices_or_sections": tuple(int(v) for v in np.cumsum(sizes)[:-1]),
                                    "axis": axis}, span=span)
    return [TupleGetItem(tup, k, span) for k in range(len(sizes))]


SPLIT_CONVERTERS = {"Split": _split}
