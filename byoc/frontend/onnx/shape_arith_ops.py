"""The shape-arithmetic ops torch's legacy exporter writes around attention (``Sqrt`` of a head size, ``Mod`` of a
sequence length, ``Where`` / ``Equal`` on shapes, ...). They are in ``shape_ops.FOLDABLE``, so on constant inputs
they are evaluated at import; they are listed here so that the up-front support check accepts them.

On run-time tensors the exactly-rounded IEEE ones run as IR ops (``Sqrt``, ``Abs``, ``Neg``, ``Floor``, two-input
``Max`` / ``Min``); the others are refused naming the computed input."""
from __future__ import annotations

from ...errors import ModelError
from ...ir.expr import Span
from ...relay.op import make_call
from .model import node_label
from .shape_ops import FOLDABLE

__all__ = ["SHAPE_ARITH_CONVERTERS"]

_RUNTIME_OPS = {"Sqrt": "sqrt", "Abs": "abs", "Neg": "negative", "Floor": "floor", "Max": "maximum",
                "Min": "minimum"}


def _elementwise(op):
    def conv(imp, node, attrs):
        ins = [n for n in node.input if n]
        if len(ins) != (1 if op in ("sqrt", "abs", "negative", "floor") else 2):
            raise ModelError(f"{node_label(node)}: {node.op_type} with {len(ins)} run-time inputs is not supported",
                             hint="only constant (shape) arithmetic or the one/two-input form")
        return make_call(op, tuple(imp.expr(n) for n in ins), None, span=Span(node.name or node.output[0]))
    return conv


def _constant_only(imp, node, attrs):
    computed = [n for n in node.input if n and not _is_const(imp, n)]
    raise ModelError(f"{node_label(node)}: {node.op_type} is supported only on constant (shape) inputs; "
                     f"{computed[0]!r} is computed at run time" if computed else f"{node_label(node)}: {node.op_type}"
                     " could not be evaluated at import", hint="constant-fold the model first (onnxsim)")


def _is_const(imp, name):
    import numpy as np
    return isinstance(imp.values.get(name), np.ndarray)


SHAPE_ARITH_CONVERTERS = {op: (_elementwise(_RUNTIME_OPS[op]) if op in _RUNTIME_OPS else _constant_only)
                          for op in sorted(FOLDABLE)}
