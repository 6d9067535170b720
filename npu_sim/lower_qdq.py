"""Lowering of ONNX's quantized groups the way onnxruntime computes them (``npu`` composites ``npu.qdq_*`` and
``npu.qnn_global_avg_pool``; patterns/npu.py matches them).

* ``npu.qdq_elementwise``: ``qnn.dequantize → elementwise float ops → qnn.quantize`` (ONNX's HardSwish, HardSigmoid,
  ... between a DequantizeLinear and a QuantizeLinear, which onnxruntime runs in float32). Every output value
  depends only on its own input value, so the body evaluated by the ops' own compute on all 256 input values is a
  lookup table equal to the float path for every input that can occur (``qdq_table``).
* ``npu.qdq_resize``: ``qnn.dequantize → image.resize2d(nearest) → qnn.quantize``. Nearest-neighbour resizing
  copies values, so the group is the NPU's RESIZE on the integers (its index map checked equal to the op's along
  both axes, ``nearest_code``), then the 256-entry table of ``quantize(dequantize(v))`` when that is not the
  identity (onnxruntime drops an equal-parameter pair; the table is then the identity, checked).
* ``npu.qnn_global_avg_pool``: ``cast(int32) → sum(H, W) → qnn.requantize`` (onnxruntime's
  QLinearGlobalAveragePool as the importer writes it: an integer sum, then one requantization). The sum runs on
  the MAC array as a depthwise convolution with an all-ones H×W kernel (exact in int32), the requantization on the
  PPU, in float32 where the requantize is ONNX's.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from byoc.errors import ByocError
from byoc.ir.expr import Call, Constant, Expr, Op, Var
from byoc.ops.image import nearest_indices
from byoc.ops.registry import FusionKind

from .execute import RESIZE_MODES
from .lower import (ConvLayer, PpuLayer, _Body, _clamp, _elementwise_lut_composite, _Lowerer, _requant_tables,
                    _tensor_type)

__all__ = ["qdq_table", "requantize_table", "nearest_code", "global_pool_fits", "QDQ_COMPOSITES"]

_ELEMENTWISE = (FusionKind.ELEMWISE, FusionKind.BROADCAST)


def qdq_table(root: Expr, data: Expr, dtype: str, consts=None) -> np.ndarray | str:
    """The values of ``root`` for every ``dtype`` value of ``data`` (a 256-entry table), or why there is none:
    every op between them must be elementwise and every other operand one constant value. ``consts`` resolves a
    composite parameter bound to a constant. Walks only the ops between ``root`` and ``data``."""
    info = np.iinfo(dtype)
    v = np.arange(int(info.min), int(info.max) + 1).astype(dtype)
    values: dict[int, Any] = {id(data): v}
    stack = [(root, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in values:
            continue
        if isinstance(e, Constant) or (consts is not None and isinstance(e, Var) and consts(e) is not None):
            c = np.asarray(e.data if isinstance(e, Constant) else consts(e))
            if c.size != 1:
                return f"an operand has {c.size} values (the op would depend on the position, not only the value)"
            values[id(e)] = c.reshape(())
            continue
        if not isinstance(e, Call) or not isinstance(e.op, Op):
            return f"found a {type(e).__name__} operand besides the input"
        if e.op.op_def.fusion not in _ELEMENTWISE:
            return f"{e.op.name} is not elementwise"
        if not ready:
            stack.append((e, True))
            stack.extend((a, False) for a in e.args if id(a) not in values)
            continue
        try:
            out = np.asarray(e.op.op_def.compute([values[id(a)] for a in e.args], e.attrs))
        except ByocError as err:
            return f"{e.op.name} cannot be evaluated on every input value: {err.message}"
        values[id(e)] = out
    table = np.asarray(values[id(root)])
    if table.shape != v.shape or table.dtype != np.dtype(dtype):
        return f"the group gives {table.size} {table.dtype} values for the {v.size} {dtype} inputs"
    return table


def requantize_table(dq: Call, q: Call, dtype: str, const) -> np.ndarray | str:
    """``q(dq(v))`` for every ``dtype`` value ``v``: what a nearest-neighbour resize between them does to each value
    it copies. ``const(expr, what)`` reads a quantization parameter."""
    params = [np.asarray(const(e, what)) for e, what in ((dq.args[1], "input scale"), (dq.args[2], "input zero point"),
                                                          (q.args[1], "output scale"), (q.args[2], "output zero point"))]
    if any(p.size != 1 for p in params):
        return "a scale or zero point has several values (per-channel)"
    info = np.iinfo(dtype)
    v = np.arange(int(info.min), int(info.max) + 1).astype(dtype)
    try:
        real = dq.op.op_def.compute([v, params[0].reshape(()), params[1].reshape(())], dq.attrs)  # type: ignore[union-attr]
        out = np.asarray(q.op.op_def.compute([real, params[2].reshape(()), params[3].reshape(())], q.attrs))  # type: ignore[union-attr]
    except ByocError as err:
        return f"dequantize → quantize cannot be evaluated on every value: {err.message}"
    if out.shape != v.shape or out.dtype != np.dtype(dtype):
        return f"dequantize → quantize gives {out.dtype} for {dtype}"
    return out


def nearest_code(attrs, in_hw: tuple[int, int], out_hw: tuple[int, int]) -> int | str:
    """The NPU RESIZE command's coordinate mode (execute.RESIZE_MODES) whose nearest-neighbour index maps along
    height and width equal those of ``image.resize2d`` with ``attrs``, or why none does."""
    want = [nearest_indices(o, i, attrs.coordinate_transformation_mode, attrs.rounding_method)
            for i, o in zip(in_hw, out_hw)]
    for code, (mode, rounding) in enumerate(RESIZE_MODES):
        got = [nearest_indices(o, i, mode, rounding) for i, o in zip(in_hw, out_hw)]
        if all(np.array_equal(a, b) for a, b in zip(want, got)):
            return code
    return (f"its source indices ({attrs.coordinate_transformation_mode}, {attrs.rounding_method or 'default'} "
            f"rounding, {in_hw[0]}x{in_hw[1]} → {out_hw[0]}x{out_hw[1]}) are none of the NPU's three modes")


def global_pool_fits(cfg, h: int, w: int, c: int, in_dtype: str) -> str | None:
    """Why the depthwise all-ones H×W convolution does not fit ``cfg``'s local SRAM (its smallest block reads the
    whole H×W plane and holds an H×W kernel per channel), or None."""
    from .isa import PpuOp
    from .tiling import Geometry, fitting_plans
    g = Geometry("depthwise", PpuOp.REQUANT, (1, 1, c), (h, w, c), (h, w), (1, 1), (1, 1), 1, 1,
                 np.dtype(in_dtype).itemsize, 1, True, True)
    if fitting_plans(cfg, g, 0, 0):
        return None
    return (f"{cfg.name!r}'s local SRAM does not hold an {h}x{w} plane of one channel block twice "
            f"({', '.join(f'{b.name} {b.size_bytes} B' for b in cfg.local_buffers)})")


def _consts(body: _Body):
    def get(e):
        b = body.binding.get(id(e))
        return b.data if isinstance(b, Constant) else None
    return get


def _root_op(body: _Body) -> tuple[Call, dict[str, Call]]:
    """The composite's last op before an optional clip, and {"clip": clip}."""
    e = body.fn.body
    if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "clip":
        return e.args[0], {"clip": e}
    return e, {}


def _dequantize_below(body: _Body, q: Call) -> Call:
    """The qnn.dequantize reading the composite's input, below ``q``."""
    for e in body.chain():
        if e.op.name == "qnn.dequantize":  # type: ignore[union-attr]
            return e
    raise body.fail("no qnn.dequantize in the body", hint="qnn.dequantize → … → qnn.quantize")


def _table_layer(low: _Lowerer, body: _Body, comp: str, ifm: int, table: np.ndarray, out_call: Call,
                 dtype: str) -> None:
    ofm = low.out_tensor(out_call, body.name)
    low.layers.append(PpuLayer(body.name, comp, "lut", (ifm,), ofm, dict(qmin=int(np.iinfo(dtype).min)),
                               table=table))


def _with_clip(body: _Body, ops: dict[str, Call], table: np.ndarray, dtype: str) -> np.ndarray:
    lo, hi = _clamp(body, ops, dtype)
    return np.clip(table, lo, hi).astype(dtype)


def _qdq_elementwise(low: _Lowerer, body: _Body, comp: str) -> None:
    q, ops = _root_op(body)
    if not isinstance(q, Call) or getattr(q.op, "name", "") != "qnn.quantize":
        raise body.fail("the body does not end in qnn.quantize", hint="qnn.dequantize → elementwise ops → "
                                                                       "qnn.quantize")
    dq = _dequantize_below(body, q)
    in_t, out_t = _tensor_type(dq.args[0]), _tensor_type(body.call)
    if in_t.dtype not in ("int8", "uint8") or out_t.dtype != in_t.dtype or tuple(in_t.shape) != tuple(out_t.shape):
        raise body.fail(f"a lookup table maps int8/uint8 to the same type and shape, found {in_t.dtype}"
                        f"{list(in_t.shape)} → {out_t.dtype}{list(out_t.shape)}")
    table = qdq_table(q, dq.args[0], in_t.dtype, _consts(body))
    if isinstance(table, str):
        raise body.fail(table, hint="a lookup table holds ops whose outputs depend only on their own input value")
    _table_layer(low, body, comp, body.tensor(dq.args[0], "data"), _with_clip(body, ops, table, in_t.dtype),
                 body.call, in_t.dtype)


def _qdq_resize(low: _Lowerer, body: _Body, comp: str) -> None:
    ops = body.expect(body.chain(), [("qnn.dequantize", False), ("image.resize2d", False), ("qnn.quantize", False),
                                     ("clip", True)])
    dq, rs, q = ops["qnn.dequantize"], ops["image.resize2d"], ops["qnn.quantize"]
    in_t, out_t = _tensor_type(dq.args[0]), _tensor_type(body.call)
    if in_t.dtype not in ("int8", "uint8") or out_t.dtype != in_t.dtype:
        raise body.fail(f"resize {in_t.dtype} → {out_t.dtype} is not supported", hint="int8 or uint8 in and out")
    a = rs.attrs
    if a.method != "nearest_neighbor" or a.layout != "NHWC" or len(in_t.shape) != 4 or in_t.shape[0] != 1:
        raise body.fail(f"{a.method} resize in {a.layout} of {tuple(in_t.shape)}",
                        hint="nearest-neighbour, NHWC, batch 1")
    hw_in, hw_out = tuple(in_t.shape[1:3]), tuple(out_t.shape[1:3])
    if hw_out[0] < hw_in[0] or hw_out[1] < hw_in[1]:
        raise body.fail(f"resizing {hw_in} down to {hw_out}", hint="the NPU upscales")
    code = nearest_code(a, hw_in, hw_out)
    if isinstance(code, str):
        raise body.fail(code)
    table = requantize_table(dq, q, in_t.dtype, lambda e, what: body.const(e, what))
    if isinstance(table, str):
        raise body.fail(table)
    table = _with_clip(body, ops, np.asarray(table), in_t.dtype)
    info = np.iinfo(in_t.dtype)
    identity = np.array_equal(table, np.arange(int(info.min), int(info.max) + 1))
    src = body.tensor(dq.args[0], "data")
    name = body.name if identity else f"{body.name}.resize"
    resized = low.out_tensor(body.call, name)
    low.layers.append(PpuLayer(name, comp, "resize", (src,), resized, dict(bilinear=0, ctm=code)))
    if not identity:
        ofm = low.out_tensor(body.call, body.name)
        low.layers.append(PpuLayer(body.name, comp, "lut", (resized,), ofm, dict(qmin=int(info.min)), table=table))


def _global_avg_pool(low: _Lowerer, body: _Body, comp: str) -> None:
    ops = body.expect(body.chain(), [("cast", False), ("sum", False), ("qnn.requantize", False), ("clip", True)])
    cast, total, rq = ops["cast"], ops["sum"], ops["qnn.requantize"]
    in_t, out_t = _tensor_type(cast.args[0]), _tensor_type(body.call)
    if in_t.dtype not in ("int8", "uint8") or out_t.dtype not in ("int8", "uint8") or cast.attrs.dtype != "int32":
        raise body.fail(f"cast({in_t.dtype} → {cast.attrs.dtype}) → sum → {out_t.dtype}",
                        hint="int8/uint8 cast to int32, out int8/uint8")
    a = total.attrs
    axes = tuple(sorted(int(x) % 4 for x in (a.axis or ()))) if len(in_t.shape) == 4 else ()
    if axes != (1, 2) or not a.keepdims or a.exclude or in_t.shape[0] != 1:
        raise body.fail(f"sum over axes {a.axis} (keepdims {a.keepdims}) of {tuple(in_t.shape)}",
                        hint="the NPU sums height and width of one NHWC image, keeping the axes")
    _, h, w, c = in_t.shape
    m, s, zp_rq, zp_out, rounding = _requant_tables(body, rq, c)
    lo, hi = _clamp(body, ops, out_t.dtype)
    ofm = low.out_tensor(body.call, body.name)
    ones = np.ones((c, h, w), np.int8)
    low.layers.append(ConvLayer(body.name, comp, "depthwise", body.tensor(cast.args[0], "data"), ofm, (h, w),
                                (1, 1), (1, 1), (0, 0, 0, 0), 0, 0, 0, 1, ones, np.zeros(c, np.int64), m, s, zp_rq,
                                zp_out, lo, hi, rounding, out_t.dtype, h * w * c))


QDQ_COMPOSITES = {"npu.qdq_elementwise": _qdq_elementwise, "npu.qdq_resize": _qdq_resize,
                  "npu.qnn_global_avg_pool": _global_avg_pool,
                  # QLinearLeakyRelu (qnn.leaky_relu, or TVM's dequantize → leaky_relu → quantize): its table
                  "npu.qnn_leaky_relu": _elementwise_lut_composite}
