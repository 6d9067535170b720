"""Which QDQ groups onnxruntime's CPU provider fuses into integer kernels (x86, default ORT_ENABLE_ALL).

byoc follows onnxruntime's *optimized* session (the default ``GraphOptimizationLevel.ORT_ENABLE_ALL``), not
``ORT_DISABLE_ALL``: a group onnxruntime fuses becomes the integer qnn chain of its QLinear kernel, every other
group runs as ``qnn.dequantize → float op → qnn.quantize`` exactly as onnxruntime runs it. Two of onnxruntime's
graph transformations decide which groups fuse, and both change results, so the importer reproduces them:

1. ``EnsureUniqueDQForNodeUnit`` gives every consumer of a DequantizeLinear its own copy; then
   ``QDQS8ToU8Transformer`` rewrites an int8 QuantizeLinear → DequantizeLinear pair to uint8 (zero point + 128,
   the same real values) only when the QuantizeLinear has exactly one consumer edge, that consumer is the
   DequantizeLinear, both zero points are constant int8 scalars of equal value and neither output is a graph
   output (the DequantizeLinear's output may be one). A tensor that fans out (a residual stream, Concat branches, x·sigmoid(x)) therefore stays int8.
2. The QDQ selectors then fuse a group only when the element types line up (after the rewrite above):

   ========================================  =============================================================
   Conv, MatMul                              activation uint8 (x86 refuses int8 activations), output type =
                                             input type; 16-bit never
   Gemm                                      A, output of one 8-bit type (int8 A needs int8 B)
   Add, Mul                                  both inputs and the output of one 8-bit type
   Concat                                    every input and the output of one 8-bit type
   AveragePool, GlobalAveragePool, Softmax   input and output of one 8-bit type
   Sigmoid, LeakyRelu                        (fused or not, the result is the same 256-entry table)
   Reshape, Flatten, Transpose, Squeeze,     dropped when parameters are equal (exact either way)
   Unsqueeze, MaxPool, Relu, Clip
   ========================================  =============================================================

16-bit activations are never fused by the CPU provider (its QLinear kernels are 8-bit only).
"""
from __future__ import annotations

import numpy as np

__all__ = ["s8_to_u8_quantize_nodes", "group_fuses", "EIGHT_BIT"]

EIGHT_BIT = ("int8", "uint8")
_DEFAULT = ("", "ai.onnx")


def _is(node, op) -> bool:
    # onnxruntime matches com.microsoft Quantize/DequantizeLinear as QDQ nodes too
    return node.op_type == op and (node.domain in _DEFAULT or (
        node.domain == "com.microsoft" and op in ("QuantizeLinear", "DequantizeLinear")))


def s8_to_u8_quantize_nodes(nodes, consumers: dict[str, list[int]], graph_outputs: set[str], values) -> set[int]:
    """Indices of the QuantizeLinear nodes that QDQS8ToU8Transformer rewrites to uint8 (see the module doc)."""
    out = set()
    for i, n in enumerate(nodes):
        if not _is(n, "QuantizeLinear") or len(n.input) != 3 or not n.output or n.output[0] in graph_outputs:
            continue
        users = consumers.get(n.output[0], [])
        if len(users) != 1 or not _is(nodes[users[0]], "DequantizeLinear"):
            continue
        dq = nodes[users[0]]
        if len(dq.input) != 3 or dq.input[0] != n.output[0] or not dq.output:
            continue
        if len(consumers.get(dq.output[0], [])) > 1:  # EnsureUniqueDQForNodeUnit would add a second edge
            continue
        zq, zd = values.get(n.input[2]), values.get(dq.input[2])
        if not all(getattr(z, "dtype", None) is not None and z.dtype.name == "int8" and z.size == 1
                   for z in (zq, zd)):
            continue
        if int(zq.reshape(-1)[0]) != int(zd.reshape(-1)[0]):
            continue
        out.add(i)
    return out


_SAME_8BIT = {"Add", "Mul", "Concat", "AveragePool", "GlobalAveragePool", "Softmax"}
# node-group selectors that want a DequantizeLinear behind every present input (CheckQDQNodes with
# num_dq_inputs = -1). torch's legacy exporter shares identical initializers (the zero biases of folded
# BatchNorms) through Identity nodes; onnxruntime removes an Identity first, so a bias that is an Identity of a
# DequantizeLinear still counts as one (the Conv then fuses or not by its bias scale, ``conv_bias_scale_fuses``)
ALL_INPUTS_FROM_DQ = {"Conv", "MatMul", "Gemm", "Add", "Mul", "Concat"}
# measured on onnxruntime 1.32 (x86): a QDQ Conv whose bias DequantizeLinear scale is within 1.5 % of
# s_x · s_w fuses into QLinearConv, which adds the int32 bias as it is; further off, the Conv runs in float
CONV_BIAS_SCALE_TOLERANCE = 0.015


def behind_identity(name: str, producer: dict, nodes) -> str:
    """``name`` with any chain of Identity nodes in front of it skipped."""
    for _ in range(64):
        i = producer.get(name) if name else None
        if i is None or nodes[i].op_type != "Identity" or nodes[i].domain not in _DEFAULT:
            break
        name = nodes[i].input[0]
    return name


def inputs_from_dq(node, producer: dict, nodes) -> bool:
    """Whether every present input of ``node`` (for ALL_INPUTS_FROM_DQ ops) is a DequantizeLinear node's output
    (directly or through Identity nodes) or an initializer (a float bias initializer is fused)."""
    if node.op_type not in ALL_INPUTS_FROM_DQ:
        return True
    for name in node.input:
        name = behind_identity(name, producer, nodes)
        i = producer.get(name) if name else None
        if i is not None and nodes[i].op_type != "DequantizeLinear":
            return False
    return True


def conv_bias_scale_fuses(x_scale, w_scale, b_scale) -> bool:
    """Whether onnxruntime fuses a QDQ Conv with this bias scale (``CONV_BIAS_SCALE_TOLERANCE``)."""
    import numpy as np
    want = (np.asarray(x_scale, np.float32).reshape(-1) * np.asarray(w_scale, np.float32).reshape(-1)).astype(
        np.float64)
    have = np.asarray(b_scale, np.float32).reshape(-1).astype(np.float64)
    if have.size not in (1, want.size) and want.size != 1:
        return False
    return bool(np.all(np.abs(have - want) <= CONV_BIAS_SCALE_TOLERANCE * np.abs(want)))


def group_fuses(op_type: str, in_types: list[str], out_type: str) -> bool:
    """Whether onnxruntime fuses DQ(inputs) → op → Q(out) on x86, given the element types it sees after the
    S8→U8 rewrite (``in_types``: the activation inputs' types; constants are not listed)."""
    if op_type in ("Conv", "MatMul"):
        return bool(in_types) and in_types[0] == "uint8" and out_type == "uint8"
    if op_type == "Gemm":
        return bool(in_types) and in_types[0] in EIGHT_BIT and out_type == in_types[0]
    if op_type in _SAME_8BIT:
        return out_type in EIGHT_BIT and all(t == out_type for t in in_types)
    return True  # exact either way (data movement, max pooling, clipping, table activations)


_NBITS_WEIGHT = ("int8", "uint8", "int4", "uint4", "int2", "uint2")


def _nbits_weight_dq(dq, values) -> bool:
    """Whether ``DequantizeLinear`` node ``dq`` has the weight form onnxruntime's DQMatMulToMatMulNBits rewrite
    takes: a constant 2-D 8/4/2-bit weight [K, N] with constant float32/float16 scales that are per tensor (a rank-0
    scale), per column (rank 1 [N], axis 1) or blocked along K (axis 0, block_size >= 16 and a power of two)."""
    from .model import node_attrs
    if not _is(dq, "DequantizeLinear") or len(dq.input) < 2:
        return False
    w, s = values.get(dq.input[0]), values.get(dq.input[1])
    z = values.get(dq.input[2]) if len(dq.input) > 2 and dq.input[2] else None
    if not all(hasattr(v, "dtype") for v in (w, s)) or (len(dq.input) > 2 and dq.input[2] and z is None):
        return False
    if w.ndim != 2 or w.dtype.name not in _NBITS_WEIGHT or s.dtype.name not in ("float32", "float16"):
        return False
    attrs = node_attrs(dq)
    block = int(attrs.get("block_size", 0))
    if block > 0:
        k, n = w.shape
        return (int(attrs.get("axis", 1)) == 0 and block >= 16 and block & (block - 1) == 0 and s.ndim == 2
                and s.shape == (-(-k // block), n) and (z is None or z.shape == s.shape))
    if s.ndim == 0:
        return z is None or z.ndim == 0
    return (s.ndim == 1 and s.shape[0] == w.shape[1] and int(attrs.get("axis", 1)) == 1
            and (z is None or z.shape == s.shape))


def matmul_nbits_nodes(nodes, consumers: dict[str, list[int]], graph_outputs: set[str], values,
                       dq_input_type) -> list[int]:
    """Indices of the MatMul / Gemm nodes onnxruntime (x86, ORT_ENABLE_ALL) rewrites into com.microsoft
    ``MatMulNBits`` (block size 32 unless the weight is blocked, accuracy level 4: the activation is quantized to
    int8 per block inside the kernel). Measured with onnxruntime 1.32: B is a DequantizeLinear output of the form
    ``_nbits_weight_dq`` read by this node only (and not a graph output); a Gemm needs transA = transB = 0,
    alpha = 1 and a bias of shape [N] with beta = 1; A must not be an 8-bit DequantizeLinear output (those groups
    go to QLinearMatMul / MatMulIntegerToFloat, or stay float when x86 refuses an int8 activation).
    ``dq_input_type(name)`` is the element type dequantized by A's producer, or None."""
    from .model import node_attrs
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    shared = _shared_small_constants(list(values.values()) + _constant_node_values(nodes))
    out = []
    for i, n in enumerate(nodes):
        if not (_is(n, "MatMul") or _is(n, "Gemm")) or len(n.input) < 2:
            continue
        j = producer.get(n.input[1])
        if j is None or not _nbits_weight_dq(nodes[j], values):
            continue
        if _constant_key(values.get(nodes[j].input[1])) in shared:  # ConstantSharing gave the scale 2+ readers
            continue
        if len(consumers.get(n.input[1], [])) != 1 or n.input[1] in graph_outputs:
            continue
        if dq_input_type(n.input[0]) in EIGHT_BIT:
            continue
        if _is(n, "Gemm"):
            a = node_attrs(n)
            if a.get("transA", 0) or a.get("transB", 0) or abs(float(a.get("alpha", 1.0)) - 1.0) > 1e-6:
                continue
            if len(n.input) > 2 and n.input[2]:
                bias = values.get(n.input[2])
                n_cols = values[nodes[j].input[0]].shape[1]
                if abs(float(a.get("beta", 1.0)) - 1.0) > 1e-6 or \
                        (hasattr(bias, "shape") and tuple(bias.shape) != (n_cols,)):
                    continue
        out.append(i)
    return out


_SHARE_MAX = 8  # onnxruntime's ConstantSharing merges equal initializers of at most this many elements


def _constant_key(v):
    if not isinstance(v, np.ndarray) or v.size > _SHARE_MAX:
        return None
    return (v.dtype.str, v.shape, v.tobytes())


def _constant_node_values(nodes) -> list:
    """The tensors of Constant nodes (onnxruntime makes them initializers before ConstantSharing)."""
    from onnx import numpy_helper

    out = []
    for n in nodes:
        if not _is(n, "Constant") or len(n.attribute) != 1:
            continue
        a = n.attribute[0]
        if a.name == "value":
            out.append(numpy_helper.to_array(a.t))
        elif a.name in ("value_float", "value_floats"):
            out.append(np.asarray(a.f if a.name == "value_float" else list(a.floats), np.float32))
        elif a.name in ("value_int", "value_ints"):
            out.append(np.asarray(a.i if a.name == "value_int" else list(a.ints), np.int64))
    return out


def _shared_small_constants(values) -> set:
    """Keys of small initializers that occur more than once by value: onnxruntime's ConstantSharing makes them one
    initializer, and a DequantizeLinear whose scale is then read by another node is not rewritten into
    MatMulNBits (measured: two weights with equal scalar or 8-element scales, or a scale equal to an Add's
    constant, stay MatMul; equal zero points do not matter; 9+ elements are not shared)."""
    seen, twice = set(), set()
    for v in values:
        k = _constant_key(v)
        if k is not None:
            (twice if k in seen else seen).add(k)
    return twice
