"""onnxruntime's com.microsoft QOperator ops (what ``quantize_static(quant_format=QOperator)`` emits) → qnn chains.

Each converter reproduces the onnxruntime CPU kernel (contrib_ops/cpu/quantization/*.cc) bit for bit:

* ``QLinearConcat``  ⇒ ``concatenate``; an input whose (scale, zero point) differ from the output's goes through
  ``qnn.dequantize → qnn.quantize(ONNX)`` (the kernel's 256-entry table is MlasQuantizeLinear(DequantizeLinear(q)))
* ``QLinearSigmoid`` ⇒ ``qnn.sigmoid(rounding="ONNX")``: table of MlasQuantizeLinear(MlasComputeLogistic(x))
* ``QLinearLeakyRelu`` ⇒ ``qnn.leaky_relu(rounding="ONNX")``: table of MlasQuantizeLinear(x ≥ 0 ? x : α·x)
* ``QLinearAveragePool`` ⇒ ``qnn.dequantize → nn.avg_pool2d (float32, row-major sum, ÷ count) → divide(s_y) →
  add(zp_y) → qnn.quantize(scale 1, ONNX)`` (``qdq.avg_pool_chain``, shared with DQ → AveragePool → Q): the
  kernel rounds ``y/s_y + zp_y`` in float32 (zero point added *before* rounding). A window that covers the whole
  unpadded image falls back, as in onnxruntime, to the QLinearGlobalAveragePool integer kernel
  (``cast → sum → qnn.requantize``).
* ``QGemm`` ⇒ ``[transpose →] qnn.dense → [nn.bias_add | add] → qnn.requantize(ONNX)`` with the float32
  output scale ``(α·s_a·s_b[n]) / s_y``; without y_scale the output is float:
  ``cast(float32) → multiply(α·s_a·s_b[n])``.
* ``QLinearSoftmax`` ⇒ ``qnn.softmax(rounding="ONNX")`` (float32 exp table, float32 row sum in element order,
  ``byoc.quant.onnxrt.qlinear_softmax``). The node's ``opset`` attribute picks the axis semantics as the kernel
  does: below 13 the input is coerced to [N, D] at ``axis``, so the softmax runs over a reshape; from 13 it is
  the single ``axis``. ``axis`` defaults to −1 under both (the schema's default, filled in by onnxruntime).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...errors import ModelError
from ...ir.expr import Constant, Tuple
from .importer import QTensor
from .model import node_label
from .qdq import (_call, _const_q, _i32, _out, _qout, _qtensor, _requantize, _same_params,
                  _scalar_params, avg_pool_chain, dense_acc, quantize_expr, softmax_chain, table_activation)

__all__ = ["QLINEAR_CONVERTERS", "UNSUPPORTED_REASONS"]

UNSUPPORTED_REASONS: dict[str, str] = {}  # com.microsoft QOperator ops refused with a reason (none today)


def _per_tensor_out(node, out) -> tuple[np.float32, int]:
    if out[0].size != 1:
        raise ModelError(f"{node_label(node)}: the output must be quantized per tensor, found {out[0].size} scales")
    return np.float32(out[0].reshape(-1)[0]), int(out[1].reshape(-1)[0])


def _same_dtype(node, x: QTensor, out) -> None:
    if x.dtype != out[3]:
        raise ModelError(f"{node_label(node)}: input type {x.dtype} and output type {out[3]} differ",
                         hint="onnxruntime's kernel reads and writes the same 8-bit type")


# ------------------------------------------------------------------------------------------ lookup tables
def _qlinear_table_activation(op: str):
    def convert(imp, node, attrs):
        x = _qtensor(imp, node, 0, 1, 2, "input X")
        out = _out(imp, node, 3, 4, x.dtype)
        sx, zx = _scalar_params(x, node, "input X")
        sy, zy = _per_tensor_out(node, out)
        _same_dtype(node, x, out)
        return table_activation(op, node, attrs, x, (sx, zx, sy, zy), out)
    return convert


_qlinear_sigmoid = _qlinear_table_activation("qnn.sigmoid")
_qlinear_leaky_relu = _qlinear_table_activation("qnn.leaky_relu")


def _qlinear_concat(imp, node, attrs):
    if "axis" not in attrs:
        raise ModelError(f"{node_label(node)}: QLinearConcat needs an axis attribute")
    n_tuple = len(node.input) - 2
    if n_tuple < 3 or n_tuple % 3:
        raise ModelError(f"{node_label(node)}: expected Y_scale, Y_zero_point and then (tensor, scale, zero point) "
                         f"triples, found {len(node.input)} inputs")
    first = _qtensor(imp, node, 2, 3, 4, "input 0")
    out = _out(imp, node, 0, 1, first.dtype)
    _per_tensor_out(node, out)
    parts = []
    for i in range(n_tuple // 3):
        q = first if i == 0 else _qtensor(imp, node, 2 + 3 * i, 3 + 3 * i, 4 + 3 * i, f"input {i}")
        _scalar_params(q, node, f"input {i}")
        _same_dtype(node, q, out)
        # Inputs with the output's parameters are copied; others mapped through Q(DQ(q)) (the kernel's table).
        parts.append(q.expr if _same_params(q, out) else
                     quantize_expr(imp, node, imp.dequantize(q), out[0], out[1], -1, out[3]))
    return _qout(_call("concatenate", (Tuple(tuple(parts)),), {"axis": int(attrs["axis"])}, node), out)


# ------------------------------------------------------------------------------------------ softmax
def _qlinear_softmax(imp, node, attrs):
    if "opset" not in attrs:
        raise ModelError(f"{node_label(node)}: QLinearSoftmax needs its 'opset' attribute",
                         hint="onnxruntime refuses the node without it (it selects the axis semantics)")
    opset = int(attrs["opset"])
    x = _qtensor(imp, node, 0, 1, 2, "input X")
    out = _out(imp, node, 3, 4, x.dtype)
    _scalar_params(x, node, "input X")
    _per_tensor_out(node, out)
    _same_dtype(node, x, out)
    return softmax_chain(imp, node, x, out, opset, int(attrs.get("axis", -1)))


# ------------------------------------------------------------------------------------------ average pool
def _qlinear_avg_pool(imp, node, attrs):
    if attrs.get("channels_last", 0):
        raise ModelError(f"{node_label(node)}: channels_last=1 is not supported", hint="NCHW input only")
    x = _qtensor(imp, node, 0, 1, 2, "input X")
    out = _out(imp, node, 3, 4, x.dtype)
    _per_tensor_out(node, out)
    _same_dtype(node, x, out)
    return avg_pool_chain(imp, node, attrs, x, out)


# ------------------------------------------------------------------------------------------ QGemm
def _qgemm(imp, node, attrs):
    a = _qtensor(imp, node, 0, 1, 2, "input A")
    b = _qtensor(imp, node, 3, 4, 5, "input B", axis=1)
    bdata = _const_q(b)
    if bdata is None or bdata.ndim != 2:
        raise ModelError(f"{node_label(node)}: QGemm needs a constant 2-D input B")
    if a.dtype == "int8" and b.dtype != "int8":
        raise ModelError(f"{node_label(node)}: int8 A needs int8 B, found {b.dtype}")
    if len(imp.shape_of(a.expr)) != 2:
        raise ModelError(f"{node_label(node)}: QGemm needs a 2-D input A, found {imp.shape_of(a.expr)}")
    if attrs.get("transA", 0):
        a = replace(a, expr=_call("transpose", (a.expr,), {"axes": (1, 0)}, node))
    w_nk = bdata if attrs.get("transB", 0) else bdata.T
    n = w_nk.shape[0]
    if b.scale.size not in (1, n) or b.zero_point.size != b.scale.size:
        raise ModelError(f"{node_label(node)}: B's scale {b.scale.shape} and zero point {b.zero_point.shape} must "
                         f"be scalars or {n}-vectors of the same size")
    acc, ash = dense_acc(imp, node, a, np.ascontiguousarray(w_nk), b)
    if len(node.input) > 6 and node.input[6]:
        acc = _add_bias(imp, node, acc, (ash[0], n))
    alpha = np.float32(attrs.get("alpha", 1.0))
    # onnxruntime's output scale: alpha · s_a · s_b[n] (left to right, float32), then / s_y.
    a_scaled = replace(a, scale=(np.float32(alpha * np.float32(a.scale.reshape(-1)[0])) if alpha != 1 else a.scale))
    if len(node.input) > 7 and node.input[7]:
        if len(node.input) < 9 or not node.input[8]:
            raise ModelError(f"{node_label(node)}: y_scale is given without y_zero_point")
        out = _out(imp, node, 7, 8, a.dtype)
        _per_tensor_out(node, out)
        if out[3] != a.dtype:
            raise ModelError(f"{node_label(node)}: output type {out[3]} differs from A's type {a.dtype}")
        return _qout(_requantize(imp, node, acc, a_scaled, b, out, axis=1), out)
    # No y_scale: float output float32(acc) · (alpha · s_a · s_b[n]).
    scale = (np.float32(a_scaled.scale.reshape(-1)[0]) * b.scale.astype(np.float32)).astype(np.float32)
    f = _call("cast", (acc,), {"dtype": "float32"}, node)
    return _call("multiply", (f, Constant(scale.reshape(-1) if scale.size > 1 else scale.reshape(()))), None, node)


def _add_bias(imp, node, acc, mn: tuple[int, int]):
    bias = imp.const(node.input[6], node, "bias C")
    if bias.dtype != np.int32:
        raise ModelError(f"{node_label(node)}: bias C must be int32, found {bias.dtype}")
    m, n = mn
    if bias.size == 1 or bias.shape in ((n,), (1, n)):
        return _call("nn.bias_add", (acc, _i32(np.broadcast_to(bias.reshape(-1), (n,)))), {"axis": 1}, node)
    if bias.shape in ((m, 1), (m, n)):
        return _call("add", (acc, _i32(bias)), None, node)  # int32 wrap-around, as the kernel's accumulator
    raise ModelError(f"{node_label(node)}: bias C of shape {bias.shape} does not broadcast to [{m}, {n}]")


QLINEAR_CONVERTERS = {
    "QLinearConcat": _qlinear_concat, "QLinearAveragePool": _qlinear_avg_pool, "QLinearSigmoid": _qlinear_sigmoid,
    "QLinearLeakyRelu": _qlinear_leaky_relu, "QGemm": _qgemm, "QLinearSoftmax": _qlinear_softmax,
}
