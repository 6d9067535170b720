"""MatMul / Gemm nodes onnxruntime rewrites into com.microsoft ``MatMulNBits`` (``ort_fusion.matmul_nbits_nodes``),
imported as ``nn.matmul_nbits`` (onnxruntime's kernel, ``byoc/ops/matmul_nbits.py``) with the weight, scales and
zero points in the form the rewrite gives the kernel: unsigned values (signed + 2^(bits-1)), one scale and zero
point per block along K and column (32 for per-tensor / per-column weights). Block lengths other than 16 and 32
stay refused (``ort_refusals``)."""
from __future__ import annotations

import numpy as np

from ...errors import ModelError, UnsupportedOpsError
from ...ir.expr import Constant, Span
from ...ops.matmul_nbits import BLOCK
from ...relay.op import make_call
from .model import node_attrs, node_label

__all__ = ["nbits_block", "convert_matmul_nbits"]


def nbits_block(imp, nodes, i) -> int | None:
    """The block length onnxruntime's MatMulNBits uses for node ``i`` (32 unless the weight is blocked), or None
    when the weight's form is one byoc does not take (float16 scales, a run-time bias)."""
    node = nodes[i]
    dq = nodes[imp.producer[node.input[1]]]
    s = imp.values.get(dq.input[1])
    if not isinstance(s, np.ndarray) or s.dtype != np.float32:
        return None
    if node.op_type == "Gemm" and len(node.input) > 2 and node.input[2] and \
            not isinstance(imp.values.get(node.input[2]), np.ndarray):
        return None
    block = int(node_attrs(dq).get("block_size", 0))
    return block if block > 0 else BLOCK


def _bias_add(imp, node, nodes, i, ash, n):
    """What MatMulAddFusion makes of MatMul ``i`` and the Add that is its only reader: (add index, bias) when C
    is a constant [N] (MatMulNBits' bias, added before the block-sum correction); "gemm" for the other C shapes it
    fuses, with a 2-D A ([1, N], [M, N], [M, 1]: a float Gemm, not rewritten); None when it does not fuse (a
    scalar C, or [1, N] with a 3-D A: MatMulNBits, then the Add; measured with onnxruntime 1.32).
    A run-time [N] C (MatMulNBits with a run-time bias) is refused."""
    out = node.output[0]
    users = imp.consumers.get(out, [])
    if len(users) != 1 or out in imp.graph_outputs:
        return None
    add = nodes[users[0]]
    if add.op_type != "Add" or add.domain not in ("", "ai.onnx") or len(add.input) != 2 or \
            list(add.input).count(out) != 1:
        return None
    c = add.input[1] if add.input[0] == out else add.input[0]
    if c not in imp.values:
        return None
    cv = imp.values[c]
    csh = tuple(cv.shape) if isinstance(cv, np.ndarray) else tuple(imp.shape_of(imp.expr(c)))
    if csh == (n,):
        if isinstance(cv, np.ndarray) and cv.dtype == np.float32:
            return users[0], cv
        raise UnsupportedOpsError(
            f"{node_label(node)} + {node_label(add)}: onnxruntime runs them as MatMulNBits with a run-time bias, "
            "which byoc does not import", hint="make the bias an initializer")
    if len(ash) == 2 and csh in [(1, n), (ash[0], n), (ash[0], 1)]:
        return "gemm"
    return None


def _call(op, args, attrs, node):
    return make_call(op, args, attrs, span=Span(node.name or node.output[0]))


def convert_matmul_nbits(imp, node, nodes, i):
    dq = nodes[imp.producer[node.input[1]]]
    wname = dq.input[0]
    w = np.asarray(imp.values[wname])
    s = np.asarray(imp.values[dq.input[1]], np.float32)
    z = imp.values.get(dq.input[2]) if len(dq.input) > 2 and dq.input[2] else None
    kind = imp.four_bit.get(wname, w.dtype.name)
    bits = 4 if kind in ("int4", "uint4") else 8
    off = (1 << (bits - 1)) if kind in ("int4", "int8") else 0
    k, n = w.shape
    block = int(node_attrs(dq).get("block_size", 0)) or BLOCK
    nb = -(-k // block)
    if s.ndim == 2:  # blocked along K
        sb, zb = s, (np.zeros(s.shape, np.int64) if z is None else np.asarray(z, np.int64))
    else:  # per tensor (rank 0) or per column [N]: one block row repeated
        sb = np.broadcast_to(s, (nb, n))
        zb = np.broadcast_to(np.zeros(n, np.int64) if z is None else np.asarray(z, np.int64), (nb, n))
    wu = (w.astype(np.int64) + off).astype(np.uint8)
    zu = (zb.astype(np.int64) + off).astype(np.uint8)
    bias = np.zeros(n, np.float32)
    if node.op_type == "Gemm" and len(node.input) > 2 and node.input[2]:
        bias = np.asarray(imp.values[node.input[2]], np.float32).reshape(n)
    a = imp.expr(node.input[0])
    ash = tuple(imp.shape_of(a))
    if ash[-1] != k:
        raise ModelError(f"{node_label(node)}: A has {ash[-1]} columns, the weight {k} rows")
    add = None
    if node.op_type == "MatMul":  # onnxruntime's MatMulAddFusion runs first
        fused = _bias_add(imp, node, nodes, i, ash, n)
        if fused == "gemm":  # a float Gemm onnxruntime does not rewrite (C [1, N], [M, N], [M, 1])
            from .float_ops import FLOAT_CONVERTERS
            return FLOAT_CONVERTERS["MatMul"](imp, node, node_attrs(node))
        if fused is not None:
            add, bias = nodes[fused[0]], fused[1]
            imp.absorbed.add(fused[0])
    rows = int(np.prod(ash[:-1])) if len(ash) > 1 else 1
    a2 = a if len(ash) == 2 else _call("reshape", (a,), {"newshape": (rows, k)}, node)
    out = _call("nn.matmul_nbits", (a2, Constant(np.ascontiguousarray(wu)), Constant(np.ascontiguousarray(sb)),
                                     Constant(np.ascontiguousarray(zu)), Constant(bias)),
                {"bits": bits, "block_size": block}, node)
    out = out if len(ash) == 2 else _call("reshape", (out,), {"newshape": tuple(ash[:-1]) + (n,)}, node)
    if add is not None:
        imp.values[add.output[0]] = out
    return out
