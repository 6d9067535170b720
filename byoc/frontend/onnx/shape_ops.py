"""Shape arithmetic (what torch exports around reshapes and attention): ``Shape``, ``Size``, ``Cast``, ``Slice``,
``Gather``, ``ConstantOfShape``, ``Expand``, ``Range``.

Shapes are static in the IR, so ``Shape`` is a constant, and any node of ``FOLDABLE`` whose inputs are all
constants is evaluated at import time by the onnx package's reference evaluator (``fold_constant_node``): the
Shape → Gather → Unsqueeze → Concat → Reshape chains fold away and the Reshape sees a constant target.
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Constant, Span
from ...relay.op import make_call
from .model import ONNX_DTYPES, MAX_ELEMENTS, node_axis, node_label, onnx_type_name

__all__ = ["SHAPE_CONVERTERS", "FOLDABLE", "fold_constant_node"]

FOLDABLE = frozenset({"Shape", "Size", "Gather", "Slice", "Concat", "Unsqueeze", "Squeeze", "Cast", "Add", "Sub",
                      "Mul", "Div", "Reshape", "Equal", "Where", "ConstantOfShape", "Range", "Expand", "Less",
                      "Greater", "Not", "Floor", "Ceil", "Neg", "Abs", "Min", "Max", "ReduceProd", "Transpose",
                      "Identity", "Tile", "Mod", "Sqrt", "Flatten"})


def _call(op, args, attrs=None, node=None):
    return make_call(op, args, attrs, span=Span(node.name or node.output[0]) if node is not None else None)


def fold_constant_node(imp, node) -> list[np.ndarray] | None:
    """The outputs of a default-domain node of FOLDABLE whose inputs are all constants, or None."""
    if node.op_type not in FOLDABLE or node.domain not in ("", "ai.onnx"):
        return None
    vals = [imp.values.get(n) if n else None for n in node.input]
    if not all(isinstance(v, np.ndarray) for v, n in zip(vals, node.input) if n):
        return None
    if node.op_type == "ConstantOfShape" and vals and int(np.prod(vals[0], dtype=np.int64)) > MAX_ELEMENTS:
        raise ModelError(f"{node_label(node)}: output of {int(np.prod(vals[0]))} elements is over the import limit")
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    names = [f"i{k}" if n else "" for k, n in enumerate(node.input)]
    n2 = helper.make_node(node.op_type, names, [f"o{k}" for k in range(len(node.output))])
    n2.attribute.extend(node.attribute)
    feeds = {nm: v for nm, v in zip(names, vals) if nm}
    ins = [helper.make_tensor_value_info(nm, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for nm, v in feeds.items()]
    outs = [helper.make_tensor_value_info(f"o{k}", 0, None) for k in range(len(node.output))]
    g = helper.make_graph([n2], "fold", ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", imp.opset)])
    try:
        res = ReferenceEvaluator(m).run(None, feeds)
    except Exception as e:  # noqa: BLE001 - the reference's own error, reported against the node
        raise ModelError(f"{node_label(node)}: cannot evaluate this constant node ({type(e).__name__}: {e})") from e
    out = []
    for r in res:
        a = np.array(r, copy=True)
        if a.dtype.name not in ONNX_DTYPES.values():
            raise ModelError(f"{node_label(node)}: folded to an unsupported element type {a.dtype}")
        a.setflags(write=False)
        out.append(a)
    return out


def _shape(imp, node, attrs):
    shp = list(imp.shape_of(imp.expr(node.input[0])))
    start, end = int(attrs.get("start", 0)), attrs.get("end")
    return np.array(shp[start:(int(end) if end is not None else None)], np.int64)


def _size(imp, node, attrs):
    return np.array(int(np.prod(imp.shape_of(imp.expr(node.input[0])), dtype=np.int64)), np.int64)


def _cast(imp, node, attrs):
    code = int(attrs.get("to", 0))
    dtype = ONNX_DTYPES.get(code)
    if dtype is None:
        raise ModelError(f"{node_label(node)}: Cast to {onnx_type_name(code)} is not supported")
    x = imp.expr(node.input[0])
    if imp.dtype_of(x) == dtype:
        return x
    return _call("cast", (x,), {"dtype": dtype}, node)


def _slice(imp, node, attrs):
    x = imp.expr(node.input[0])
    shape = imp.shape_of(x)
    rank = len(shape)
    if imp.opset < 10:
        starts, ends = list(attrs.get("starts", [])), list(attrs.get("ends", []))
        axes = list(attrs.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        ins = list(node.input) + [""] * 5
        starts = [int(v) for v in imp.const(ins[1], node, "starts").reshape(-1)]
        ends = [int(v) for v in imp.const(ins[2], node, "ends").reshape(-1)]
        axes = [int(v) for v in imp.const(ins[3], node, "axes").reshape(-1)] if ins[3] else list(range(len(starts)))
        steps = [int(v) for v in imp.const(ins[4], node, "steps").reshape(-1)] if ins[4] else [1] * len(starts)
    begin, end, stride = [0] * rank, list(shape), [1] * rank
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = a + rank if a < 0 else a
        if not 0 <= a < rank or st == 0:
            raise ModelError(f"{node_label(node)}: invalid axis {a} or step {st} for rank {rank}")
        d = shape[a]
        # numpy's slice normalisation is ONNX's
        b_, e_, st_ = slice(s, e, st).indices(d)
        begin[a], end[a], stride[a] = b_, e_, st_
        if st_ < 0 and e_ < 0:
            end[a] = -d - 1  # through index 0
    if any(st < 0 for st in stride):
        # the IR's strided_slice takes positive strides here: index explicitly
        idx = [np.arange(d)[slice(b, (e if e >= 0 else None), st)] for d, b, e, st in zip(shape, begin, end, stride)]
        out = x
        for a, ix in enumerate(idx):
            if len(ix) != shape[a] or np.any(ix != np.arange(shape[a])):
                out = _call("take", (out, Constant(ix.astype(np.int32))), {"axis": a, "mode": "fast"}, node)
        return out
    return _call("strided_slice", (x,), {"begin": tuple(begin), "end": tuple(end), "strides": tuple(stride)}, node)


def _gather(imp, node, attrs):
    x = imp.expr(node.input[0])
    shape = imp.shape_of(x)
    axis = node_axis(node, attrs, len(shape), 0)
    idx = imp.values[node.input[1]]
    if isinstance(idx, np.ndarray):
        d = shape[axis]
        if np.any(idx < -d) or np.any(idx >= d):
            raise ModelError(f"{node_label(node)}: indices out of range for axis {axis} of size {d}")
        return _call("take", (x, Constant(np.where(idx < 0, idx + d, idx).astype(np.int32))),
                     {"axis": axis, "mode": "fast"}, node)
    # indices fed at run time: negative ones count from the end (modulo the axis size)
    return _call("take", (x, imp.expr(node.input[1])), {"axis": axis, "mode": "wrap"}, node)


def _expand(imp, node, attrs):
    x = imp.expr(node.input[0])
    want = [int(v) for v in imp.const(node.input[1], node, "shape").reshape(-1)]
    try:
        shape = tuple(np.broadcast_shapes(tuple(imp.shape_of(x)), tuple(want)))
    except ValueError as e:
        raise ModelError(f"{node_label(node)}: cannot expand {list(imp.shape_of(x))} to {want}") from e
    return _call("broadcast_to", (x,), {"shape": shape}, node)


def _const_only(what):
    def conv(imp, node, attrs):
        raise ModelError(f"{node_label(node)}: {what} needs constant inputs (its output shape depends on them)",
                         hint="byoc's IR has static shapes")
    return conv


SHAPE_CONVERTERS = {"Shape": _shape, "Size": _size, "Cast": _cast, "Slice": _slice, "Gather": _gather,
                    "Expand": _expand, "ConstantOfShape": _const_only("ConstantOfShape"),
                    "Range": _const_only("Range")}
