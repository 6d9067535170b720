"""QDQ MatMul / Gemm groups with a float output, which onnxruntime (x86, ORT_ENABLE_ALL) runs as integer kernels:

* ``DQ(A) → MatMul ← DQ(B)`` with no QuantizeLinear reading the MatMul (and no Add it fuses into a Gemm first)
  → com.microsoft ``MatMulIntegerToFloat`` when A is uint8 as onnxruntime sees it (after its S8→U8 rewrite; x86
  refuses int8 activations) and B is 8-bit;
* ``DQ(A), DQ(B)[, DQ(C int32)] → Gemm`` with no QuantizeLinear → ``QGemm`` with a float output (int8 A needs
  int8 B; 16- and 4-bit never).

Both compute the exact int32 product (plus the int32 bias) and scale it once: ``float32(acc) · float32(s_a ·
s_b[n])`` (checked bit for bit against onnxruntime 1.32, ``tests/byoc/frontend/test_onnx_int_to_float.py``).
Byoc emits ``qnn.dense → [nn.bias_add →] cast(float32) → multiply``. Forms onnxruntime fuses that byoc does not
build (a run-time B, per-tensor parameters that are not scalars, transA, alpha ≠ 1) are refused, naming the node.
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Constant, Span
from ...relay.op import make_call
from .importer import Dequantized
from .model import node_label

__all__ = ["int_matmul_to_float"]

_EIGHT = ("int8", "uint8")


def _call(op, args, attrs=None, node=None):
    return make_call(op, args, attrs, span=Span(node.name or node.output[0]) if node is not None else None)


def _dq(imp, name):
    v = imp.values.get(name) if name else None
    return v.q if isinstance(v, Dequantized) else None


def _four_bit(imp, name) -> bool:
    i = imp.producer.get(name)
    return i is not None and imp.four_bit_params(imp.graph.node[i]) is not None


def _has_quantize_reader(imp, out: str) -> bool:
    return any(imp.graph.node[j].op_type == "QuantizeLinear" for j in imp.consumers.get(out, []))


def int_matmul_to_float(imp, node, attrs, ins=None, out=None, gemm=None):
    """The float result of the integer kernel onnxruntime runs for this MatMul / Gemm, or None when it runs none.
    ``ins`` / ``out`` / ``gemm`` describe the Gemm onnxruntime's MatMulAddFusion made of a MatMul and an Add."""
    gemm = node.op_type == "Gemm" if gemm is None else gemm
    ins = list(node.input if ins is None else ins)
    a, b = _dq(imp, ins[0]), _dq(imp, ins[1])
    c_name = ins[2] if gemm and len(ins) > 2 and ins[2] else ""
    c = _dq(imp, c_name) if c_name else None
    if a is None or b is None or (c_name and c is None) or _has_quantize_reader(imp, out or node.output[0]):
        return None
    if _four_bit(imp, ins[0]) or _four_bit(imp, ins[1]) or a.dtype not in _EIGHT or b.dtype not in _EIGHT:
        return None
    a_type = imp.ort_type(ins[0], a.dtype)
    if gemm:
        if a_type == "int8" and b.dtype != "int8":
            return None
        if c is not None and (c.dtype != "int32" or float(attrs.get("beta", 1.0)) != 1.0):
            return None
    elif a_type != "uint8":
        return None
    what = "QGemm (float output)" if gemm else "MatMulIntegerToFloat"
    if gemm and (attrs.get("transA", 0) or float(attrs.get("alpha", 1.0)) != 1.0):
        raise ModelError(f"{node_label(node)}: onnxruntime runs this QDQ Gemm as {what}; transA / alpha ≠ 1 are "
                         "not supported there", hint="transpose A before the Gemm, fold alpha into a scale")
    bdata = b.expr.data if isinstance(b.expr, Constant) else None
    if bdata is None or bdata.ndim != 2 or a.per_channel:
        raise ModelError(f"{node_label(node)}: onnxruntime runs this QDQ group as {what}; byoc supports it with "
                         "a constant 2-D B and a per-tensor A only")
    trans_b = gemm and bool(attrs.get("transB", 0))
    w_nk = bdata if trans_b else bdata.T
    if b.per_channel and b.axis != (0 if trans_b else 1):
        raise ModelError(f"{node_label(node)}: {what} with B quantized along axis {b.axis} is not supported",
                         hint="per-column (output channel) weight parameters only")
    from .qdq import dense_acc
    acc, ash = dense_acc(imp, node, a, np.ascontiguousarray(w_nk), b)
    n = w_nk.shape[0]
    if c is not None:
        cdata = c.expr.data if isinstance(c.expr, Constant) else None
        if cdata is None or cdata.shape != (n,):
            raise ModelError(f"{node_label(node)}: {what}'s bias must be a constant int32 vector of {n}")
        acc = _call("nn.bias_add", (acc, Constant(cdata.astype(np.int32))), {"axis": 1}, node)
    # the kernel's multiplier: s_a · s_b[n] in float32, applied once to the float32 accumulator
    scale = (np.float32(a.scale.reshape(-1)[0]) * b.scale.astype(np.float32).reshape(-1)).astype(np.float32)
    y = _call("multiply", (_call("cast", (acc,), {"dtype": "float32"}, node),
                           Constant(scale.reshape(()) if scale.size == 1 else scale)), None, node)
    if len(ash) != 2:
        y = _call("reshape", (y,), {"newshape": tuple(ash[:-1]) + (n,)}, node)
    return y
