"""Multiply-accumulate counts of op calls: the one definition the runtime, CLI and report share."""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call, Op
from ..ir.types import TensorType

__all__ = ["macs_of"]

_CONV = ("qnn.conv2d", "nn.conv2d")
_DENSE = ("qnn.dense", "nn.dense")
_TCONV = ("qnn.conv2d_transpose", "nn.conv2d_transpose")
_BMM = ("qnn.batch_matmul", "nn.batch_matmul")


def _shape(e) -> tuple[int, ...] | None:
    t = getattr(e, "_checked_type", None)
    return tuple(int(d) for d in t.shape) if isinstance(t, TensorType) else None


def _channel_axis(layout: str, rank: int) -> int:
    return layout.index("C") if layout and "C" in layout and len(layout) == rank else rank - 1


def macs_of(call: Call) -> int:
    """Multiply-accumulates of one op call (convolutions and matrix products; 0 for everything else)."""
    if not isinstance(call.op, Op):
        return 0
    name = call.op.name
    out, data, weight = _shape(call), _shape(call.args[0]), _shape(call.args[1]) if len(call.args) > 1 else None
    if out is None or data is None or weight is None:
        return 0
    w = int(np.prod(weight, dtype=np.int64))
    if name in _CONV:
        cout = out[_channel_axis(str(getattr(call.attrs, "data_layout", "NHWC")), len(out))]
        return int(np.prod(out, dtype=np.int64)) * w // max(cout, 1)
    if name in _DENSE:
        return int(np.prod(out, dtype=np.int64)) * data[-1]
    if name in _BMM:  # [B, M, N] outputs, each a length-K dot product
        k = data[-2] if getattr(call.attrs, "transpose_a", False) else data[-1]
        return int(np.prod(out, dtype=np.int64)) * k
    if name in _TCONV:
        cin = data[_channel_axis(str(getattr(call.attrs, "data_layout", "NHWC")), len(data))]
        return int(np.prod(data, dtype=np.int64)) * w // max(cin, 1)
    if name == "qnn.svdf":   # the feature product [batch, K]·[F, K]ᵀ and one time weight per filter
        return data[0] * w + data[0] * weight[0]
    return 0

