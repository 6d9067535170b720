"""Float32 ``ReduceSum`` / ``ReduceMean`` over trailing axes in onnxruntime's summation order.

onnxruntime reduces the rows of the (kept, reduced) view with Eigen's vectorized sum (``FastReduceKR``; the mean
then divides each row sum by the count in float32). On x86-64 onnxruntime's Eigen uses 4-lane SSE packets, and its
order depends on where a row starts relative to a 16-byte boundary (the buffer itself is 64-byte aligned, so a row
``r`` of ``n`` floats starts ``r·n mod 4`` floats past one):

* ``start`` = the first aligned element (0 when fewer than 4 elements); the aligned part is whole packets;
* packet accumulators p0 = packet 0, p1 = packet 1, then pairs of packets added to p0 and p1; p0 += p1, then one
  odd packet; the packet reduced as (l0 + l2) + (l1 + l3);
* then the elements before ``start`` and after the aligned part, one by one, in order.
(Fewer than 4 aligned elements: a plain left-to-right sum.) torch's dynamo exporter writes adaptive_avg_pool2d(x, 1)
as such a ReduceMean; in a QDQ model it runs in float between DequantizeLinear and QuantizeLinear, so the last bit
of its sum decides quantized values. The order is built from IR slices and float32 adds (the same in every
executor). Rows longer than ``MAX_ROW`` keep the plain ``sum``/``mean`` op (within 1e-5)."""
from __future__ import annotations

from math import gcd

import numpy as np

from ...ir.expr import Constant, Span
from ...relay.op import make_call

__all__ = ["eigen_trailing_reduce", "MAX_ROW"]

MAX_ROW = 1024
_P = 4  # SSE float lanes


def _c(node):
    span = Span(node.name or node.output[0])
    return lambda op, args, attrs=None: make_call(op, args, attrs, span=span)  # noqa: E731


def _cols(call, x, rows, lo, hi):
    return call("strided_slice", (x,), {"begin": (0, lo), "end": (rows, hi), "strides": (1, 1)})


def _row_sums(call, x, rows: int, n: int, offset: int):
    """(rows, 1) sums of a (rows, n) tensor whose rows start ``offset`` floats past a 16-byte boundary."""
    col = lambda j: _cols(call, x, rows, j, j + 1)  # noqa: E731
    add = lambda a, b: call("add", (a, b))  # noqa: E731
    start = min((-offset) % _P, n) if n >= _P else 0
    size = ((n - start) // _P) * _P
    if not size:
        acc = col(0)
        for j in range(1, n):
            acc = add(acc, col(j))
        return acc
    end, end2 = start + size, start + ((n - start) // (2 * _P)) * (2 * _P)
    pk = lambda j: _cols(call, x, rows, j, j + _P)  # noqa: E731
    p0 = pk(start)
    if size > _P:
        p1 = pk(start + _P)
        for j in range(start + 2 * _P, end2, 2 * _P):
            p0, p1 = add(p0, pk(j)), add(p1, pk(j + _P))
        p0 = add(p0, p1)
        if end > end2:
            p0 = add(p0, pk(end2))
    lane = lambda k: _cols(call, p0, rows, k, k + 1)  # noqa: E731
    acc = add(add(lane(0), lane(2)), add(lane(1), lane(3)))
    for j in list(range(0, start)) + list(range(end, n)):
        acc = add(acc, col(j))
    return acc


def eigen_trailing_reduce(node, x, shape, first_axis: int, mean: bool, keepdims: bool):
    """``x`` summed (or averaged) over axes first_axis.. in onnxruntime's order; None when a row is too long."""
    call = _c(node)
    rows = int(np.prod(shape[:first_axis], dtype=np.int64))
    n = int(np.prod(shape[first_axis:], dtype=np.int64))
    if n > MAX_ROW or rows == 0 or n == 0:
        return None
    x2 = call("reshape", (x,), {"newshape": (rows, n)})
    period = _P // gcd(n, _P)
    if period == 1 or rows == 1:
        out = _row_sums(call, x2, rows, n, 0)
    else:
        parts, order = [], []
        for r0 in range(min(period, rows)):
            sel = list(range(r0, rows, period))
            xa = call("strided_slice", (x2,), {"begin": (r0, 0), "end": (rows, n), "strides": (period, 1)})
            parts.append(_row_sums(call, xa, len(sel), n, (r0 * n) % _P))
            order += sel
        cat = call("concatenate", (_tuple(parts),), {"axis": 0})
        inv = np.argsort(np.asarray(order)).astype(np.int32)
        out = call("take", (cat, Constant(inv)), {"axis": 0, "mode": "fast"})
    if mean:
        out = call("divide", (out, Constant(np.asarray(n, np.float32))))
    kept = tuple(shape[:first_axis]) + ((1,) * (len(shape) - first_axis) if keepdims else ())
    return call("reshape", (out,), {"newshape": kept})


def _tuple(parts):
    from ...ir.expr import Tuple
    return Tuple(tuple(parts))
