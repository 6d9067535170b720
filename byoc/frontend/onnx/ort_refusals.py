"""Preflight refusals: onnxruntime graph rewrites whose arithmetic byoc does not reproduce. Each check lists every
offending node in one ``UnsupportedOpsError`` before anything is converted (docs/onnx-import.md, "Known
differences"), so such a model is refused rather than run to a different result."""
from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOpsError
from ...ir.expr import Var
from .importer import QDQ_DOMAINS
from .model import node_label

__all__ = ["refuse_matmul_nbits", "refuse_float16_dq_into_float_ops"]


def refuse_matmul_nbits(imp, nodes) -> set[int]:
    """onnxruntime rewrites DequantizeLinear(constant 8/4-bit weight) → MatMul/Gemm on a float (or 16-bit
    QDQ) activation into MatMulNBits, which quantizes the activation to int8 per block inside the kernel
    (accuracy level 4). byoc reproduces that kernel for block lengths 16 and 32 (``nn.matmul_nbits``): the indices of
    those nodes are returned; the others (blocked weights with block 64, 128, ...; float16 scales; a run-time
    Gemm bias) are refused, all at once, rather than computed to a different float result."""
    from ...ops.matmul_nbits import BLOCKS
    from .matmul_nbits_ops import nbits_block
    from .ort_fusion import matmul_nbits_nodes

    def dq_type(name):
        i = imp.producer.get(name)
        if i is None or nodes[i].op_type != "DequantizeLinear" or nodes[i].domain not in QDQ_DOMAINS:
            return None
        v = imp.values.get(nodes[i].input[0])
        if isinstance(v, np.ndarray):
            return v.dtype.name
        if isinstance(v, Var):
            return v.type_annotation.dtype
        j = imp.producer.get(nodes[i].input[0])
        if j is None:
            return None
        if nodes[j].op_type == "QuantizeLinear" and len(nodes[j].input) > 2 and nodes[j].input[2]:
            z = imp.values.get(nodes[j].input[2])
            if nodes[j].input[2] in imp.four_bit:
                return imp.four_bit[nodes[j].input[2]]
            return z.dtype.name if isinstance(z, np.ndarray) else None
        if nodes[j].op_type == "QuantizeLinear" or nodes[j].op_type.startswith("QLinear") or \
                nodes[j].op_type == "DynamicQuantizeLinear":
            return "uint8"  # an 8-bit kernel's output (its exact signedness does not matter here)
        return None
    found = matmul_nbits_nodes(nodes, imp.consumers, imp.graph_outputs, imp.values, dq_type)
    hits = [i for i in found if nbits_block(imp, nodes, i) not in BLOCKS]
    if hits:
        names = [node_label(nodes[i]) for i in hits]
        raise UnsupportedOpsError(
            f"{len(hits)} MatMul/Gemm node(s) read a DequantizeLinear weight that onnxruntime rewrites into "
            f"com.microsoft MatMulNBits (the activation quantized to int8 per block, accuracy level 4) in a "
            f"form whose arithmetic byoc does not reproduce (byoc takes block lengths 16 and 32 with float32 "
            f"scales only):\n  " + "\n  ".join(names[:20])
            + ("\n  ..." if len(names) > 20 else ""),
            hint="quantize the weight per column or in blocks of 16 or 32, or the activations to 8 bits (QDQ uint8 / "
                 "int8); see docs/onnx-import.md, 'Known differences'")
    return set(found)

def refuse_float16_dq_into_float_ops(imp, nodes) -> None:
    """A DequantizeLinear with float16 scales outputs float16. Read by a Cast, a QuantizeLinear or as a graph
    output, byoc computes what onnxruntime does; read by an op onnxruntime's CPU provider has no float16
    kernel for, onnxruntime inserts float32 Casts and may fold them into the DequantizeLinear (skipping the
    float16 rounding), which byoc does not reproduce: refused, all at once."""
    bad = []
    for i, n in enumerate(nodes):
        if n.op_type != "DequantizeLinear" or n.domain not in QDQ_DOMAINS or len(n.input) < 2:
            continue
        sc = imp.values.get(n.input[1])
        half = sc.dtype == np.float16 if isinstance(sc, np.ndarray) else \
            isinstance(sc, Var) and sc.type_annotation.dtype == "float16"
        if not half or not n.output or not n.output[0]:
            continue
        users = [nodes[j] for j in imp.consumers.get(n.output[0], [])]
        if any(u.op_type not in ("Cast", "QuantizeLinear") for u in users):
            bad.append(node_label(n) + " → " + ", ".join(sorted({u.op_type for u in users})))
    if bad:
        raise UnsupportedOpsError(
            f"{len(bad)} DequantizeLinear node(s) with float16 scales feed float16 ops onnxruntime runs in "
            f"float32 between inserted Casts (folded into the DequantizeLinear), which byoc does not "
            f"reproduce:\n  " + "\n  ".join(bad[:20]) + ("\n  ..." if len(bad) > 20 else ""),
            hint="float16 scales are supported where the DequantizeLinear output is Cast to float32, "
                 "re-quantized or a graph output; or quantize a float32 model")
