"""The shape-arithmetic ops torch's legacy exporter writes around attention (``Sqrt`` of a head size, ``Mod`` of a
sequence length, ``Where`` / ``Equal`` on shapes, ...) that have no converter of their own. They are in
``shape_ops.FOLDABLE``, so on constant inputs they are evaluated at import; the up-front support check accepts
them (``fold_only``), and one left with a run-time input is refused naming that input. They are not claimed as
ops (ONNX's conformance cases feed them tensors)."""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from .model import node_label
from .shape_ops import FOLDABLE

__all__ = ["fold_only", "refuse_unfolded"]


def fold_only(converters) -> frozenset[str]:
    return frozenset(FOLDABLE) - set(converters)


def refuse_unfolded(imp, node) -> None:
    computed = [n for n in node.input if n and not isinstance(imp.values.get(n), np.ndarray)]
    raise ModelError(f"{node_label(node)}: {node.op_type} is supported only on constant (shape) inputs; "
                     + (f"{computed[0]!r} is computed at run time" if computed else "it could not be folded"),
                     hint="constant-fold the model first (onnxsim)")
