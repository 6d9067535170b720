"""Quantized ONNX: QDQ groups and QLinear* ops → the qnn op chains the TFLite frontend produces.

Arithmetic is onnxruntime's (``byoc.quant.onnxrt``): ``qnn.requantize(rounding="ONNX")`` multiplies the int32
accumulator by the float32 scale ``(s_x·s_w[c])/s_y`` and rounds half to even; ``qnn.quantize``/``qnn.add``/
``qnn.mul`` take ``rounding="ONNX"`` for QuantizeLinear / QLinearAdd / QLinearMul. Each QDQ group folds the way
onnxruntime's QDQ transformer fuses it, so the integer results agree bit for bit:

* ``DQ → Conv → Q``   ⇒ ``qnn.conv2d(NCHW, OIHW, padding inside) → nn.bias_add(axis 1) → qnn.requantize(axis 1)``
* ``DQ → MatMul/Gemm → Q`` ⇒ ``[reshape →] qnn.dense → [nn.bias_add →] qnn.requantize [→ reshape]``
* ``DQ → Add/Mul → Q`` ⇒ ``qnn.add`` / ``qnn.mul``
* ``DQ → GlobalAveragePool → Q`` ⇒ ``cast(int32) → sum(axis=(2, 3)) → qnn.requantize`` (QLinearGlobalAveragePool:
  requantize scale ``s_in / (s_out·N)`` in float32, expressed as input scale ``s_in``, output scale ``s_out·N``)
* ``DQ → MaxPool/Reshape/Flatten/Transpose/Squeeze/Unsqueeze → Q`` with equal parameters ⇒ the op on integers
  (onnxruntime drops such DQ/Q pairs)
* ``DQ → Relu/Clip → Q`` with equal parameters ⇒ ``clip`` to the quantized bounds (exact: quantization is
  monotonic and Q(DQ(q)) = q)
* ``DQ → Concat → Q`` ⇒ ``concatenate`` (inputs with other parameters re-quantized as QLinearConcat does)
* ``DQ → AveragePool → Q`` (8-bit, per tensor) ⇒ QLinearAveragePool's chain (``avg_pool_chain``)
* ``DQ → Sigmoid/LeakyRelu → Q`` (8-bit, per tensor) ⇒ ``qnn.sigmoid`` / ``qnn.leaky_relu`` with
  ``rounding="ONNX"``: the QLinearSigmoid / QLinearLeakyRelu table, which is also exactly what onnxruntime's
  unfused float path (MlasComputeLogistic, then QuantizeLinear) computes
* ``DQ → Softmax → Q`` (8-bit, per tensor) ⇒ ``qnn.softmax(rounding="ONNX")``, as onnxruntime fuses it

Anything else stays float between ``qnn.dequantize`` and ``qnn.quantize``,
which is also what onnxruntime executes for it unless it has a dedicated QLinear kernel (see the tests for the
bounds where it does).
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Constant, Expr, Span, Tuple
from ...quant import onnxrt
from ...relay.op import make_call
from .float_ops import clip_bounds, conv_padding, pool_ceil_mode, pool_padding, reshape_target, transpose_axes
from .importer import Dequantized, QTensor
from .model import node_label
from .quant_general import general_dequantize, general_qlinear_matmul, general_quantize, needs_general_path

__all__ = ["QUANT_CONVERTERS", "QOPERATOR_CONVERTERS"]


def _call(op, args, attrs=None, node=None):
    return make_call(op, args, attrs, span=Span(node.name or node.output[0]) if node is not None else None)


def _f32(v) -> Constant:
    return Constant(np.asarray(v, np.float32))


def _i32(v) -> Constant:
    return Constant(np.asarray(v).astype(np.int32))


def _scalar_params(q: QTensor, node, what: str) -> tuple[np.float32, int]:
    if q.per_channel:
        raise ModelError(f"{node_label(node)}: {what} must be quantized per tensor, found {q.scale.size} scales")
    return np.float32(q.scale.reshape(-1)[0]), int(q.zero_point.reshape(-1)[0])


def _same_params(a: QTensor, out) -> bool:
    scale, zp, _, dtype = out
    return (a.dtype == dtype and a.scale.shape == scale.shape and np.array_equal(a.scale, scale)
            and np.array_equal(a.zero_point, zp))


def _qout(expr: Expr, out, axis: int = 1) -> QTensor:
    scale, zp, q_axis, dtype = out
    return QTensor(expr, scale.astype(np.float32), zp.astype(np.int64), q_axis if scale.size > 1 else axis, dtype)


def _dq_input(imp, name) -> QTensor | None:
    v = imp.values.get(name) if name else None
    return v.q if isinstance(v, Dequantized) else None


def _shift_int8(expr: Expr, node, delta: int, dtype: str) -> Expr:
    """int8 ↔ uint8 with the same real values: q ± 128 (exact through int16)."""
    wide = _call("add", (_call("cast", (expr,), {"dtype": "int16"}, node), Constant(np.array(delta, np.int16))),
                 None, node)
    return _call("cast", (wide,), {"dtype": dtype}, node)


def ort_u8_view(imp, node, names, out, build):
    """Run ``build(inputs, out)`` on the element types onnxruntime sees: where its S8→U8 rewrite made the group
    uint8 (``ort_fusion``), the int8 inputs and output move to uint8 (q + 128, zero point + 128) and the result
    back. It matters for kernels that add the zero point in float32 before rounding (QLinearAdd, QLinearMul,
    QLinearAveragePool): float32(v + zp) rounds differently for zp and zp + 128."""
    ins = [_dq_input(imp, n) for n in names]
    u8 = (out[3] == "int8" and imp.ort_type(imp.group_output, "int8") == "uint8"
          and all(q is not None and q.dtype == "int8" and imp.ort_type(n, "int8") == "uint8"
                  for n, q in zip(names, ins)))
    if not u8:
        return build(ins, out)
    from dataclasses import replace
    ins = [replace(q, expr=_shift_int8(q.expr, node, 128, "uint8"), zero_point=q.zero_point + 128, dtype="uint8")
           for q in ins]
    y = build(ins, (out[0], out[1] + 128, out[2], "uint8"))
    if y is None:
        return None
    return replace(y, expr=_shift_int8(y.expr, node, -128, "int8"), zero_point=y.zero_point - 128, dtype="int8")


def _const_q(q: QTensor | None) -> np.ndarray | None:
    return q.expr.data if q is not None and isinstance(q.expr, Constant) else None


def _requantize(imp, node, acc: Expr, x: QTensor, w: QTensor, out, axis: int) -> Expr:
    sx, _ = _scalar_params(x, node, "the input")
    sy = np.float32(out[0].reshape(-1)[0]) if out[0].size == 1 else None
    if sy is None:
        raise ModelError(f"{node_label(node)}: the output must be quantized per tensor")
    # onnxruntime's output scale: (s_x · s_w[c]) / s_y, each step in float32 (qlinearconv.cc).
    in_scale = onnxrt.f32(np.float32(sx) * w.scale.astype(np.float32))
    return _call("qnn.requantize", (acc, _f32(in_scale), _i32(0), _f32(sy), _i32(out[1].reshape(-1)[0])),
                 {"axis": axis, "rounding": "ONNX", "out_dtype": out[3]}, node)


# ------------------------------------------------------------------------------------------ shared chains
def conv_chain(imp, node, attrs, x: QTensor, w: QTensor, bias: np.ndarray | None, out) -> QTensor:
    wdata = _const_q(w)
    if wdata is None:
        raise ModelError(f"{node_label(node)}: the weight must be a constant")
    xs = imp.shape_of(x.expr)
    if len(xs) == 3 and wdata.ndim == 3:  # 1-D: the 2-D chain over a unit height, as QLinearConv computes it
        from dataclasses import replace
        attrs = dict(attrs)
        for key in ("strides", "dilations", "kernel_shape"):
            if key in attrs:
                attrs[key] = [1] + list(attrs[key])
        if "pads" in attrs:
            attrs["pads"] = [0, attrs["pads"][0], 0, attrs["pads"][1]]
        x4 = replace(x, expr=_call("reshape", (x.expr,), {"newshape": (xs[0], xs[1], 1, xs[2])}, node))
        w4 = replace(w, expr=Constant(np.ascontiguousarray(wdata.reshape(wdata.shape[:2] + (1,) + wdata.shape[2:]))))
        y = conv_chain(imp, node, attrs, x4, w4, bias, out)
        ys = imp.shape_of(y.expr)
        return replace(y, expr=_call("reshape", (y.expr,), {"newshape": (ys[0], ys[1], ys[3])}, node))
    if len(xs) != 4 or wdata.ndim != 4:
        raise ModelError(f"{node_label(node)}: only 2-D convolution is supported, input {xs}, weight {wdata.shape}")
    if w.per_channel and w.scale.size != wdata.shape[0]:
        raise ModelError(f"{node_label(node)}: {w.scale.size} weight scales for {wdata.shape[0]} output channels")
    _, zx = _scalar_params(x, node, "the input")
    strides = tuple(attrs.get("strides", [1, 1]))
    dil = tuple(attrs.get("dilations", [1, 1]))
    pad = conv_padding(node, attrs, xs[2:], wdata.shape[2:], strides, dil)
    acc = _call("qnn.conv2d", (x.expr, w.expr, _i32(zx), _i32(w.zero_point.reshape(-1) if w.per_channel else
                                                               w.zero_point.reshape(-1)[0]),
                               _f32(x.scale.reshape(-1)[0]), _f32(w.scale.reshape(-1))),
                dict(strides=strides, padding=pad, dilation=dil, groups=int(attrs.get("group", 1)),
                     channels=wdata.shape[0], kernel_size=wdata.shape[2:], data_layout="NCHW",
                     kernel_layout="OIHW", out_dtype="int32"), node)
    if bias is not None:
        if bias.shape != (wdata.shape[0],):
            raise ModelError(f"{node_label(node)}: bias shape {bias.shape}, expected ({wdata.shape[0]},)")
        acc = _call("nn.bias_add", (acc, _i32(bias)), {"axis": 1}, node)
    return _qout(_requantize(imp, node, acc, x, w, out, axis=1), out)


def dense_acc(imp, node, a: QTensor, w_nk: np.ndarray, w: QTensor) -> tuple[Expr, tuple[int, ...]]:
    """The int32 ``qnn.dense`` accumulator [M, N] of a[..., K] (reshaped to 2-D) times the constant weight
    w_nk[N, K] (per-channel parameters along N), and a's shape."""
    ash = imp.shape_of(a.expr)
    n, k = w_nk.shape
    if len(ash) < 2 or ash[-1] != k:
        raise ModelError(f"{node_label(node)}: shapes {ash} and weight [{n}, {k}] do not match")
    if w.per_channel and w.scale.size != n:
        raise ModelError(f"{node_label(node)}: {w.scale.size} weight scales for {n} output columns")
    _, za = _scalar_params(a, node, "the input")
    a2 = a.expr if len(ash) == 2 else _call("reshape", (a.expr,), {"newshape": (-1, k)}, node)
    acc = _call("qnn.dense", (a2, Constant(np.ascontiguousarray(w_nk)), _i32(za),
                              _i32(w.zero_point.reshape(-1) if w.per_channel else w.zero_point.reshape(-1)[0]),
                              _f32(a.scale.reshape(-1)[0]), _f32(w.scale.reshape(-1))),
                {"units": n, "out_dtype": "int32"}, node)
    return acc, ash


def dense_chain(imp, node, a: QTensor, w_nk: np.ndarray, w: QTensor, bias: np.ndarray | None, out) -> QTensor:
    """a[..., K] times the constant weight w_nk[N, K] (per-channel parameters along N)."""
    acc, ash = dense_acc(imp, node, a, w_nk, w)
    n = w_nk.shape[0]
    if bias is not None:
        if bias.shape != (n,):
            raise ModelError(f"{node_label(node)}: bias shape {bias.shape}, expected ({n},)")
        acc = _call("nn.bias_add", (acc, _i32(bias)), {"axis": 1}, node)
    y = _requantize(imp, node, acc, a, w, out, axis=1)
    if len(ash) != 2:
        y = _call("reshape", (y,), {"newshape": tuple(ash[:-1]) + (n,)}, node)
    return _qout(y, out, axis=len(ash) - 1)


def binary_chain(imp, node, op: str, a: QTensor, b: QTensor, out) -> QTensor:
    sa, za = _scalar_params(a, node, "input A")
    sb, zb = _scalar_params(b, node, "input B")
    sy, zy = np.float32(out[0].reshape(-1)[0]), int(out[1].reshape(-1)[0])
    if out[0].size != 1:
        raise ModelError(f"{node_label(node)}: the output must be quantized per tensor")
    if a.dtype != b.dtype or a.dtype != out[3]:
        raise ModelError(f"{node_label(node)}: input and output types differ ({a.dtype}, {b.dtype}, {out[3]})")
    e = _call(op, (a.expr, b.expr, _f32(sa), _i32(za), _f32(sb), _i32(zb), _f32(sy), _i32(zy)),
              {"rounding": "ONNX"}, node)
    return _qout(e, out)


def global_avg_pool_chain(imp, node, x: QTensor, out) -> QTensor:
    sx, zx = _scalar_params(x, node, "the input")
    xs = imp.shape_of(x.expr)
    if len(xs) not in (3, 4):
        raise ModelError(f"{node_label(node)}: only 3-D NCL and 4-D NCHW input is supported, found {xs}")
    n = int(np.prod(xs[2:]))
    sy, zy = np.float32(out[0].reshape(-1)[0]), int(out[1].reshape(-1)[0])
    s = _call("sum", (_call("cast", (x.expr,), {"dtype": "int32"}, node),),
              {"axis": tuple(range(2, len(xs))), "keepdims": True}, node)
    # QLinearGlobalAveragePool: rne(float(sum − zp·N) · s_in/(s_out·N)) + zp_out; ONNX requantize computes
    # float32(input_scale / output_scale), so output_scale = float32(s_out·N) reproduces that scale exactly.
    y = _call("qnn.requantize", (s, _f32(sx), _i32(zx * n), _f32(np.float32(sy) * np.float32(n)), _i32(zy)),
              {"axis": 1, "rounding": "ONNX", "out_dtype": out[3]}, node)
    return _qout(y, out)


def avg_pool_chain(imp, node, attrs, x: QTensor, out) -> QTensor:
    """QLinearAveragePool (qlinear_pool.cc): dequantize, float32 window sum in row-major order, ÷ count (the
    padding counted only with count_include_pad), then ``nearbyintf(y/s_y + zp_y)``: the zero point is added in
    float32 *before* rounding. A window covering the whole unpadded image uses the global-pool kernel instead."""
    sx, _ = _scalar_params(x, node, "the input")
    sy, zy = np.float32(out[0].reshape(-1)[0]), int(out[1].reshape(-1)[0])
    xs = imp.shape_of(x.expr)
    if len(xs) == 3 and len(attrs.get("kernel_shape", ())) == 1:  # 1-D: over a unit height
        from dataclasses import replace
        attrs = dict(attrs)
        attrs["kernel_shape"] = [1] + list(attrs["kernel_shape"])
        if "strides" in attrs:
            attrs["strides"] = [1] + list(attrs["strides"])
        if "pads" in attrs:
            attrs["pads"] = [0, attrs["pads"][0], 0, attrs["pads"][1]]
        x4 = replace(x, expr=_call("reshape", (x.expr,), {"newshape": (xs[0], xs[1], 1, xs[2])}, node))
        y = avg_pool_chain(imp, node, attrs, x4, out)
        ys = imp.shape_of(y.expr)
        return replace(y, expr=_call("reshape", (y.expr,), {"newshape": (ys[0], ys[1], ys[3])}, node))
    kernel = tuple(int(k) for k in attrs.get("kernel_shape", ()))
    if len(xs) != 4 or len(kernel) != 2:
        raise ModelError(f"{node_label(node)}: only 2-D pooling of NCHW tensors is supported, input {xs}, "
                         f"kernel {kernel}")
    if any(int(d) != 1 for d in attrs.get("dilations", (1, 1))):
        raise ModelError(f"{node_label(node)}: dilations {attrs['dilations']} are not supported",
                         hint="onnxruntime's QLinearAveragePool has no dilation")
    strides = tuple(int(s) for s in attrs.get("strides", (1, 1)))
    if attrs.get("ceil_mode", 0):
        raise ModelError(f"{node_label(node)}: ceil_mode=1 is not supported for quantized average pooling")
    pad = pool_padding(node, attrs, xs[2:], kernel, strides, (1, 1))
    if kernel == tuple(xs[2:]) and pad == (0, 0, 0, 0):
        return global_avg_pool_chain(imp, node, x, out)  # onnxruntime switches to its global-pool kernel here
    # The kernel converts nearbyintf(y/s_y + zp_y) to int32; beyond 2^31 that conversion is undefined behaviour.
    bound = 255.0 * float(sx) / float(sy) + abs(zy)
    if not bound < 2.0 ** 31:
        raise ModelError(f"{node_label(node)}: scale ratio s_x/s_y = {float(sx) / float(sy):.3g} lets y/s_y + zp "
                         f"reach {bound:.3g}, beyond int32", hint="onnxruntime's result is undefined there")
    pooled = _call("nn.avg_pool2d", (imp.dequantize(x),),
                   dict(pool_size=kernel, strides=strides, dilation=(1, 1), padding=pad, layout="NCHW",
                        count_include_pad=bool(attrs.get("count_include_pad", 0))), node)
    v = _call("add", (_call("divide", (pooled, _f32(sy)), None, node), _f32(float(zy))), None, node)
    y = _call("qnn.quantize", (v, _f32(1.0), _i32(0)), {"axis": -1, "out_dtype": out[3], "rounding": "ONNX"}, node)
    return _qout(y, out)


def quantize_expr(imp, node, x: Expr, scale: np.ndarray, zp: np.ndarray, axis: int, dtype: str) -> Expr:
    return _call("qnn.quantize", (x, _f32(scale.reshape(-1) if scale.size > 1 else scale.reshape(-1)[0]),
                                  _i32(zp.reshape(-1) if zp.size > 1 else zp.reshape(-1)[0])),
                 {"axis": axis if scale.size > 1 else -1, "out_dtype": dtype, "rounding": "ONNX"}, node)


# ------------------------------------------------------------------------------------------ QDQ groups
def _bias_of(imp, name) -> tuple[bool, np.ndarray | None]:
    """(ok, int32 bias) for an optional bias input: it must be a DequantizeLinear of an int32 constant."""
    if not name:
        return True, None
    q = _dq_input(imp, name)
    data = _const_q(q)
    if data is None or data.dtype != np.int32:
        return False, None
    return True, data


def _qdq_conv(imp, node, attrs, out):
    x, w = _dq_input(imp, node.input[0]), _dq_input(imp, node.input[1])
    ok, bias = _bias_of(imp, node.input[2] if len(node.input) > 2 else "")
    if x is None or _const_q(w) is None or not ok or x.per_channel or out[0].size != 1 or \
            len(imp.shape_of(x.expr)) not in (3, 4):
        return None
    return conv_chain(imp, node, attrs, x, w, bias, out)


def _qdq_matmul(imp, node, attrs, out):
    a, b = _dq_input(imp, node.input[0]), _dq_input(imp, node.input[1])
    bdata = _const_q(b)
    if a is None or bdata is None or bdata.ndim != 2 or a.per_channel or out[0].size != 1:
        return None
    if b.per_channel and b.axis not in (1, -1):
        return None
    return dense_chain(imp, node, a, bdata.T, b, None, out)


def _qdq_gemm(imp, node, attrs, out):
    a, b = _dq_input(imp, node.input[0]), _dq_input(imp, node.input[1])
    bdata = _const_q(b)
    ok, bias = _bias_of(imp, node.input[2] if len(node.input) > 2 else "")
    if (a is None or bdata is None or bdata.ndim != 2 or not ok or a.per_channel or out[0].size != 1
            or attrs.get("transA", 0) or float(attrs.get("alpha", 1.0)) != 1.0
            or float(attrs.get("beta", 1.0)) != 1.0):
        return None
    trans_b = bool(attrs.get("transB", 0))
    if b.per_channel and b.axis not in ((0,) if trans_b else (1, -1)):
        return None
    return dense_chain(imp, node, a, bdata if trans_b else bdata.T, b, bias, out)


def _qdq_binary(op):
    def build(ins, out, imp=None, node=None):
        a, b = ins
        if a is None or b is None or a.per_channel or b.per_channel or out[0].size != 1:
            return None
        return binary_chain(imp, node, op, a, b, out)

    def conv(imp, node, attrs, out):
        return ort_u8_view(imp, node, node.input[:2], out, lambda ins, o: build(ins, o, imp, node))
    return conv


def _qdq_gap(imp, node, attrs, out):
    x = _dq_input(imp, node.input[0])
    if x is None or x.per_channel or out[0].size != 1 or x.dtype != out[3]:
        return None
    return global_avg_pool_chain(imp, node, x, out)


def _qdq_avg_pool(imp, node, attrs, out):
    return ort_u8_view(imp, node, node.input[:1], out, lambda ins, o: _avg_pool_group(imp, node, attrs, ins[0], o))


def _avg_pool_group(imp, node, attrs, x, out):
    if (x is None or x.per_channel or out[0].size != 1 or x.dtype != out[3] or x.dtype not in ("int8", "uint8")
            or len(imp.shape_of(x.expr)) not in (3, 4) or attrs.get("ceil_mode", 0)):
        return None
    return avg_pool_chain(imp, node, attrs, x, out)


def _qdq_same_params(build):
    """Data movement and max pooling run on the integers when input and output parameters agree."""
    def conv(imp, node, attrs, out):
        x = _dq_input(imp, node.input[0])
        if x is None or not _same_params(x, out):
            return None
        if node.op_type == "MaxPool" and len(imp.shape_of(x.expr)) != 4:
            return None  # 1-D max pooling: the float path (exact: max commutes with dequantization)
        e, axis = build(imp, node, attrs, x)
        return QTensor(e, x.scale, x.zero_point, axis, x.dtype)
    return conv


def _int_reshape(imp, node, attrs, x):
    if x.per_channel:
        raise ModelError(f"{node_label(node)}: reshaping a per-channel quantized tensor is not supported")
    return _call("reshape", (x.expr,), {"newshape": reshape_target(imp, node, imp.shape_of(x.expr), attrs)},
                 node), x.axis


def _int_transpose(imp, node, attrs, x):
    perm = transpose_axes(imp, node, attrs, len(imp.shape_of(x.expr)))
    axis = perm.index(x.axis) if x.per_channel else x.axis
    return _call("transpose", (x.expr,), {"axes": perm}, node), axis


def _int_max_pool(imp, node, attrs, x):
    if len(node.output) > 1 and node.output[1]:
        raise ModelError(f"{node_label(node)}: the Indices output of MaxPool is not supported")
    xs = imp.shape_of(x.expr)
    kernel = tuple(attrs.get("kernel_shape", ()))
    strides = tuple(attrs.get("strides", [1, 1]))
    dil = tuple(attrs.get("dilations", [1, 1]))
    if len(xs) != 4 or len(kernel) != 2:
        raise ModelError(f"{node_label(node)}: only 2-D pooling of NCHW tensors is supported")
    pad = pool_padding(node, attrs, xs[2:], kernel, strides, dil)
    ceil = pool_ceil_mode(node, attrs, xs[2:], kernel, strides, dil, pad)
    return _call("nn.max_pool2d", (x.expr,), dict(pool_size=kernel, strides=strides, dilation=dil, padding=pad,
                                                  layout="NCHW", ceil_mode=ceil), node), x.axis


def _int_clip(imp, node, attrs, x):
    if x.per_channel:
        raise ModelError(f"{node_label(node)}: clipping a per-channel quantized tensor is not supported")
    lo, hi = (0.0, float("inf")) if node.op_type == "Relu" else clip_bounds(imp, node, attrs)
    info = np.iinfo(x.dtype)
    qlo = int(onnxrt.quantize_linear(np.float32(lo), x.scale, x.zero_point, x.dtype)) if lo > -np.inf else info.min
    qhi = int(onnxrt.quantize_linear(np.float32(hi), x.scale, x.zero_point, x.dtype)) if hi < np.inf else info.max
    if (qlo, qhi) == (info.min, info.max):
        return x.expr, x.axis
    return _call("clip", (x.expr,), {"a_min": qlo, "a_max": qhi}, node), x.axis


def _qdq_concat(imp, node, attrs, out):
    ins = [_dq_input(imp, n) for n in node.input if n]
    if any(q is None for q in ins) or out[0].size != 1 or "axis" not in attrs:
        return None
    parts = []
    for q in ins:
        if _same_params(q, out):
            parts.append(q.expr)
        else:
            # QLinearConcat re-quantizes other inputs through a table of Q(DQ(v)): the same float32 steps.
            parts.append(quantize_expr(imp, node, imp.dequantize(q), out[0], out[1], -1, out[3]))
    return _qout(_call("concatenate", (Tuple(tuple(parts)),), {"axis": int(attrs["axis"])}, node), out)


def table_activation(op: str, node, attrs, x: QTensor, params, out) -> QTensor:
    """``qnn.sigmoid`` / ``qnn.leaky_relu`` with ``rounding="ONNX"``: QLinearSigmoid / QLinearLeakyRelu's 256-entry
    table; ``params`` are (s_x, zp_x, s_y, zp_y), per tensor."""
    sx, zx, sy, zy = params
    a = {"rounding": "ONNX"}
    if op == "qnn.leaky_relu":
        a["alpha"] = float(np.float32(attrs.get("alpha", 0.01)))  # a float32 attribute; the kernel is float32
    return _qout(_call(op, (x.expr, _f32(sx), _i32(zx), _f32(sy), _i32(zy)), a, node), out)


def _qdq_table_activation(op):
    def conv(imp, node, attrs, out):
        x = _dq_input(imp, node.input[0])
        # 16-bit: onnxruntime runs DQ → float op → Q; the same float32 steps tabulated over all 65,536 inputs
        if x is None or x.per_channel or out[0].size != 1 or x.dtype != out[3] or \
                x.dtype not in ("int8", "uint8", "int16", "uint16"):
            return None
        sx, zx = _scalar_params(x, node, "the input")
        return table_activation(op, node, attrs, x, (sx, zx, out[0].reshape(-1)[0], out[1].reshape(-1)[0]), out)
    return conv


def softmax_chain(imp, node, x: QTensor, out, opset: int, axis: int) -> QTensor:
    """onnxruntime's QLinearSoftmax as ``qnn.softmax(rounding="ONNX")``: one axis from opset 13, before that one
    row per index of shape[:axis] running over all of shape[axis:] (reshaped to [N, D] and back)."""
    sx, _ = _scalar_params(x, node, "input X")  # the kernel never reads X's zero point: only x − max(x)
    sy, zy = np.float32(out[0].reshape(-1)[0]), int(out[1].reshape(-1)[0])
    with np.errstate(over="ignore"):
        recip_ok = np.isfinite(np.float32(1.0) / sy)
    if not recip_ok:
        raise ModelError(f"{node_label(node)}: output scale {float(sy)!r} has no finite float32 reciprocal",
                         hint="the kernel multiplies by floor(1/y_scale)")
    shape = imp.shape_of(x.expr)
    rank = len(shape)
    if rank == 0 or not -rank <= axis < rank:
        raise ModelError(f"{node_label(node)}: axis {axis} is out of range for an input of shape {list(shape)}")
    if 0 in shape:
        raise ModelError(f"{node_label(node)}: the input of shape {list(shape)} is empty",
                         hint="onnxruntime's kernel returns without writing an output for it")
    axis %= rank
    params = (_f32(sx), _i32(x.zero_point.reshape(-1)[0]), _f32(sy), _i32(zy))
    sm_attrs = {"rounding": "ONNX"}
    if opset >= 13 or axis == rank - 1:  # one axis (for opset < 13 the last axis is already [N, D])
        return _qout(_call("qnn.softmax", (x.expr,) + params, {**sm_attrs, "axis": axis}, node), out)
    n, d = int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64))
    rows = _call("reshape", (x.expr,), {"newshape": (n, d)}, node)
    y = _call("qnn.softmax", (rows,) + params, {**sm_attrs, "axis": 1}, node)
    return _qout(_call("reshape", (y,), {"newshape": tuple(shape)}, node), out)


def _qdq_softmax(imp, node, attrs, out):
    """DQ → Softmax → Q, which onnxruntime fuses into QLinearSoftmax (its ``opset`` = the Softmax's)."""
    x = _dq_input(imp, node.input[0])
    if x is None or x.per_channel or out[0].size != 1 or x.dtype != out[3] or x.dtype not in ("int8", "uint8"):
        return None
    rank = len(imp.shape_of(x.expr))
    if "axis" not in attrs and imp.opset < 13 and rank > 2:
        return None  # the fused node would default to axis −1 where the float Softmax uses 1: leave it float
    return softmax_chain(imp, node, x, out, imp.opset, int(attrs.get("axis", -1)))


QUANT_CONVERTERS = {
    "Conv": _qdq_conv, "MatMul": _qdq_matmul, "Gemm": _qdq_gemm, "Add": _qdq_binary("qnn.add"),
    "Mul": _qdq_binary("qnn.mul"), "GlobalAveragePool": _qdq_gap, "MaxPool": _qdq_same_params(_int_max_pool),
    "Reshape": _qdq_same_params(_int_reshape), "Flatten": _qdq_same_params(_int_reshape),
    "Squeeze": _qdq_same_params(_int_reshape), "Unsqueeze": _qdq_same_params(_int_reshape),
    "Transpose": _qdq_same_params(_int_transpose), "Relu": _qdq_same_params(_int_clip),
    "Clip": _qdq_same_params(_int_clip), "Concat": _qdq_concat, "Sigmoid": _qdq_table_activation("qnn.sigmoid"),
    "LeakyRelu": _qdq_table_activation("qnn.leaky_relu"), "AveragePool": _qdq_avg_pool, "Softmax": _qdq_softmax,
}


# ------------------------------------------------------------------------------------------ QOperator ops
def _params(imp, node, i_scale, i_zp, what) -> tuple[np.ndarray, np.ndarray, str | None]:
    scale = imp.const(node.input[i_scale], node, f"{what} scale")
    if scale.dtype != np.float32 or scale.ndim > 1 or not np.all(scale > 0) or not np.all(np.isfinite(scale)):
        raise ModelError(f"{node_label(node)}: {what} scale must be positive finite float32 (scalar or 1-D)")
    if i_zp < len(node.input) and node.input[i_zp]:
        zp = imp.const(node.input[i_zp], node, f"{what} zero point")
        if zp.shape != scale.shape and zp.size != 1:
            raise ModelError(f"{node_label(node)}: {what} zero point shape {zp.shape} != scale shape {scale.shape}")
        return scale, zp.astype(np.int64), zp.dtype.name
    return scale, np.zeros(scale.shape, np.int64), None


def _qtensor(imp, node, i_data, i_scale, i_zp, what, axis=1) -> QTensor:
    scale, zp, zdt = _params(imp, node, i_scale, i_zp, what)
    v = imp.values[node.input[i_data]]
    expr = imp.expr(node.input[i_data])
    dtype = v.dtype.name if isinstance(v, np.ndarray) else imp.dtype_of(expr)
    if dtype not in ("int8", "uint8"):
        raise ModelError(f"{node_label(node)}: {what} must be int8 or uint8, found {dtype}")
    if zdt is not None and zdt != dtype:
        raise ModelError(f"{node_label(node)}: {what} zero point type {zdt} differs from the data type {dtype}")
    if zp.size == 1 and scale.size > 1:
        zp = np.full(scale.shape, int(zp.reshape(-1)[0]), np.int64)
    return QTensor(expr, scale, zp.reshape(scale.shape), axis, dtype)


def _out(imp, node, i_scale, i_zp, dtype) -> tuple:
    scale, zp, zdt = _params(imp, node, i_scale, i_zp, "output")
    return scale, zp, 1, zdt or dtype


def _qlinear_conv(imp, node, attrs):
    x = _qtensor(imp, node, 0, 1, 2, "input x")
    w = _qtensor(imp, node, 3, 4, 5, "weight w", axis=0)
    out = _out(imp, node, 6, 7, x.dtype)
    bias = imp.const(node.input[8], node, "bias") if len(node.input) > 8 and node.input[8] else None
    if bias is not None and bias.dtype != np.int32:
        raise ModelError(f"{node_label(node)}: bias must be int32, found {bias.dtype}")
    return conv_chain(imp, node, attrs, x, w, bias, out)


def _qlinear_matmul(imp, node, attrs):
    ins = list(node.input)
    b_const = imp.values.get(ins[3]) if len(ins) > 3 else None
    if any(i and not isinstance(imp.values.get(i), np.ndarray) for i in ins[1:3] + ins[4:8]) or \
            not isinstance(b_const, np.ndarray) or b_const.ndim != 2 or any(
                isinstance(imp.values.get(i), np.ndarray) and imp.values[i].dtype != np.float32
                for i in (ins[1], ins[4], ins[6])):
        return general_qlinear_matmul(imp, node, attrs)
    a = _qtensor(imp, node, 0, 1, 2, "input a")
    b = _qtensor(imp, node, 3, 4, 5, "input b", axis=1)
    bdata = _const_q(b)
    if bdata is None or bdata.ndim != 2:
        raise ModelError(f"{node_label(node)}: QLinearMatMul needs a constant 2-D right operand")
    return dense_chain(imp, node, a, bdata.T, b, None, _out(imp, node, 6, 7, a.dtype))


def _qlinear_binary(op):
    def conv(imp, node, attrs):
        a = _qtensor(imp, node, 0, 1, 2, "input A")
        b = _qtensor(imp, node, 3, 4, 5, "input B")
        return binary_chain(imp, node, op, a, b, _out(imp, node, 6, 7, a.dtype))
    return conv


def _qlinear_gap(imp, node, attrs):
    if attrs.get("channels_last", 0):
        raise ModelError(f"{node_label(node)}: channels_last=1 is not supported")
    x = _qtensor(imp, node, 0, 1, 2, "input x")
    return global_avg_pool_chain(imp, node, x, _out(imp, node, 3, 4, x.dtype))


def _quantize_linear(imp, node, attrs):
    if needs_general_path(imp, node, attrs):
        return general_quantize(imp, node, attrs)
    params = imp.quant_params_of(node)
    if params is None:
        raise ModelError(f"{node_label(node)}: scale and zero point must be constant initializers")
    scale, zp, axis, dtype = params
    v = imp.values[node.input[0]]
    if isinstance(v, Dequantized) and _same_params(v.q, params):
        return v.q  # Q(DQ(q)) = q with the same parameters
    if isinstance(v, np.ndarray):
        if v.dtype != np.float32:
            raise ModelError(f"{node_label(node)}: can only quantize float32 tensors, found {v.dtype}")
        ax = axis + v.ndim if axis < 0 else axis
        return QTensor(Constant(onnxrt.quantize_linear(v, scale, zp, dtype, ax if scale.size > 1 else None)),
                       scale, zp, ax, dtype)
    x = imp.expr(node.input[0])
    rank = len(imp.shape_of(x))
    ax = axis + rank if axis < 0 else axis
    return QTensor(quantize_expr(imp, node, x, scale, zp, ax, dtype), scale, zp, ax, dtype)


def _dequantize_linear(imp, node, attrs):
    if needs_general_path(imp, node, attrs):
        return general_dequantize(imp, node, attrs)
    params = imp.quant_params_of(node)
    if params is None:
        raise ModelError(f"{node_label(node)}: scale and zero point must be constant initializers")
    scale, zp, axis, zdt = params
    v = imp.values[node.input[0]]
    if isinstance(v, np.ndarray):
        dtype, rank, expr = v.dtype.name, v.ndim, Constant(v)
    else:
        expr = imp.expr(node.input[0])
        dtype, rank = imp.dtype_of(expr), len(imp.shape_of(expr))
    if len(node.input) > 2 and node.input[2] and zdt != dtype:
        raise ModelError(f"{node_label(node)}: zero point type {zdt} differs from the data type {dtype}")
    if dtype not in ("int8", "uint8", "int32", "int16", "uint16"):
        raise ModelError(f"{node_label(node)}: cannot dequantize {dtype}")
    ax = axis + rank if axis < 0 else axis
    if scale.size > 1 and not 0 <= ax < rank:
        raise ModelError(f"{node_label(node)}: axis {axis} out of range for rank {rank}")
    return Dequantized(QTensor(expr, scale, zp, ax, dtype))


QOPERATOR_CONVERTERS = {
    "QuantizeLinear": _quantize_linear, "DequantizeLinear": _dequantize_linear, "QLinearConv": _qlinear_conv,
    "QLinearMatMul": _qlinear_matmul, "QLinearAdd": _qlinear_binary("qnn.add"),
    "QLinearMul": _qlinear_binary("qnn.mul"), "QLinearGlobalAveragePool": _qlinear_gap,
}
