"""onnxruntime's com.microsoft ``MatMulNBits`` CPU kernel (accuracy level 4, block lengths 16 and 32, x86-64
AVX-512 VNNI, one intra-op thread), as a numpy reference: ``nn.matmul_nbits``.

onnxruntime rewrites DequantizeLinear(constant 8/4-bit weight) → MatMul / Gemm into this node
(``frontend/onnx/ort_fusion.py``), so its float32 result is what such a model computes. The arithmetic, read from
MLAS (``QuantizeARow_CompInt8_avx512``, the BlkLen-32 CompInt8 kernels, ``FoldAccumulators``) and checked bit for
bit against onnxruntime 1.32 (tests/byoc/frontend/test_onnx_matmul_nbits.py):

* weight: unsigned (the signed value + 2^(bits-1)), zero point likewise (default 2^(bits-1)), one float32 scale
  per block along K and column (32 for per-tensor / per-column weights); K is padded to a whole block with zeros.
* activation, per row and block: ``amax = max|a|``, ``scale_a = amax / 127``, ``inv = 127 / amax``
  (0 when amax is 0), ``q = round_half_even(a * inv)`` (float32 product); the block sum
  ``asum = scale_a * Σq`` (one rounding).
* main sum, per output: sixteen float32 lanes for each group of 128 k (four blocks of 32, eight of 16), then
  eight (``group_lanes``). Block 32: lane ``4c + p`` (c, p in 0..3) holds block ``(c >= 2) + 2 (p >= 2)`` of the
  group and its eight k in ``{0-3, 8-11}``, ``{4-7, 12-15}``, ``{16-19, 24-27}``, ``{20-23, 28-31}`` (index
  ``2 (c mod 2) + p mod 2``); block 16: block ``c + 4 (p >= 2)``, k ``{0-3, 8-11}`` or ``{4-7, 12-15}`` (p mod 2).
  Each lane is ``fma(int dot, float32(scale_a · scale_b), lane)``. After the groups, lane i (0..7) = lane i +
  lane i + 8; each remaining block adds ``fma(dot of its k i·b/8 .. (i+1)·b/8 − 1, scale, lane i)``.
* reduction: columns in whole groups of four fold as ``((l0 + l1) + l2) + l3 + (((l4 + l5) + l6) + l7)``; the
  last N mod 4 columns as ``(l0 + l4 + l2 + l6) + (l1 + l5 + l3 + l7)`` (hsum: halves, then pairs); + bias.
* zero-point correction, added last: ``Σ_b fma(asum_b, -scale_b · zp_b)`` as an FMA chain from 0 over the
  blocks (MLAS's SGEMM of block sums), added to the main sum in float32.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .mlas_order import fma_f32
from .registry import FusionKind, register_op
from .rel import fail, tensor_arg

__all__ = ["MatMulNBitsAttrs", "BLOCK", "BLOCKS", "group_lanes", "quantize_rows", "matmul_nbits"]

BLOCK = 32  # the block length onnxruntime's rewrite gives per-tensor / per-column weights
BLOCKS = (16, 32)  # the block lengths whose kernels byoc reproduces
_K8 = (np.r_[0:4, 8:12], np.r_[4:8, 12:16], np.r_[16:20, 24:28], np.r_[20:24, 28:32])


def group_lanes(block: int) -> list[tuple[int, np.ndarray]]:
    """For each of the sixteen lanes of a group of 128 // block blocks: (block within the group, its k)."""
    out = []
    for c in range(4):
        for p in range(4):
            if block == 32:
                out.append(((c >= 2) + 2 * (p >= 2), _K8[2 * (c % 2) + p % 2]))
            else:
                out.append((c + 4 * (p >= 2), _K8[p % 2]))
    return out


@dataclass(frozen=True)
class MatMulNBitsAttrs(Attrs):
    bits: int = 8
    block_size: int = 32


def quantize_rows(x: np.ndarray, block: int = BLOCK) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q int64 [M, nb, block], scale_a float32 [M, nb], asum float32 [M, nb]) of float32 x [M, K]."""
    m, k = x.shape
    nb = -(-k // block)
    xp = np.zeros((m, nb * block), np.float32)
    xp[:, :k] = x
    xb = xp.reshape(m, nb, block)
    amax = np.abs(xb).max(-1).astype(np.float32)
    scale = (amax / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(amax != 0, np.float32(127) / np.where(amax != 0, amax, 1), 0).astype(np.float32)
    q = np.rint((xb * inv[..., None]).astype(np.float32)).astype(np.int64)
    asum = (scale * q.sum(-1).astype(np.float32)).astype(np.float32)
    return q, scale, asum


def _fold(a: np.ndarray) -> np.ndarray:
    f = np.float32
    lo = ((a[0] + a[1]).astype(f) + a[2]).astype(f) + a[3]
    hi = ((a[4] + a[5]).astype(f) + a[6]).astype(f) + a[7]
    return (lo.astype(f) + hi.astype(f)).astype(f)


def _hsum(a: np.ndarray) -> np.ndarray:
    f = np.float32
    h = [(a[i] + a[i + 4]).astype(f) for i in range(4)]
    return (((h[0] + h[2]).astype(f)) + ((h[1] + h[3]).astype(f))).astype(f)


def matmul_nbits(x: np.ndarray, w: np.ndarray, scale: np.ndarray, zp: np.ndarray, bias: np.ndarray,
                 block: int = BLOCK) -> np.ndarray:
    """x float32 [M, K]; w unsigned weight [K, N]; scale float32 [nb, N]; zp unsigned [nb, N]; bias float32 [N]."""
    m, k = x.shape
    n = w.shape[1]
    q, sa, asum = quantize_rows(x, block)
    nb = q.shape[1]
    wp = np.zeros((nb * block, n), np.int64)
    wp[:k] = w
    # lanes of four k: dot4[m, b, i, n] = Σ_{k in 4i..4i+3}
    dot4 = np.einsum("mbij,bijn->mbin", q.reshape(m, nb, block // 4, 4), wp.reshape(nb, block // 4, 4, n),
                     optimize=True)
    scale = scale.astype(np.float32)
    comb = (sa[:, :, None] * scale[None, :, :]).astype(np.float32)  # [M, nb, N]
    acc16 = np.zeros((16, m, n), np.float32)
    per_group = 128 // block
    groups = nb // per_group
    lanes = group_lanes(block)
    for g in range(groups):
        for j, (off, ks) in enumerate(lanes):
            b = per_group * g + off
            part = (dot4[:, b, ks[0] // 4] + dot4[:, b, ks[4] // 4]).astype(np.float32)
            acc16[j] = fma_f32(acc16[j], part, comb[:, b])
    acc8 = (acc16[:8] + acc16[8:]).astype(np.float32)
    tail = block // 8  # k per lane in a block past the last whole group
    dot_t = np.einsum("mbij,bijn->mbin", q.reshape(m, nb, 8, tail), wp.reshape(nb, 8, tail, n), optimize=True)
    for b in range(per_group * groups, nb):
        for i in range(8):
            acc8[i] = fma_f32(acc8[i], dot_t[:, b, i].astype(np.float32), comb[:, b])
    whole = n - n % 4
    out = np.empty((m, n), np.float32)
    out[:, :whole] = _fold(acc8[:, :, :whole])
    out[:, whole:] = _hsum(acc8[:, :, whole:])
    out = (out + bias.astype(np.float32)[None, :]).astype(np.float32)
    bsum = (-scale * zp.astype(np.float32)).astype(np.float32)  # [nb, N]
    corr = np.zeros((m, n), np.float32)
    for b in range(nb):
        corr = fma_f32(corr, np.broadcast_to(asum[:, b:b + 1], (m, n)), np.broadcast_to(bsum[b], (m, n)))
    return (out + corr).astype(np.float32)


def _rel(types, attrs):
    name = "nn.matmul_nbits"
    args = ("data", "weight", "scale", "zero_point", "bias")
    data, weight, scale, zp, bias = (tensor_arg(name, args, types, i) for i in range(5))
    if data.dtype != "float32" or data.ndim != 2:
        raise fail(name, "data", "a float32 [M, K] tensor", f"{data.dtype} {list(data.shape)}")
    if weight.ndim != 2 or weight.shape[0] != data.shape[1] or weight.dtype not in ("uint8", "int32"):
        raise fail(name, "weight", f"uint8 [{data.shape[1]}, N]", f"{weight.dtype} {list(weight.shape)}")
    if attrs.block_size not in BLOCKS:
        raise fail(name, "block_size", " or ".join(map(str, BLOCKS)), attrs.block_size)
    nb, n = -(-int(data.shape[1]) // attrs.block_size), weight.shape[1]
    if scale.dtype != "float32" or tuple(scale.shape) != (nb, n):
        raise fail(name, "scale", f"float32 [{nb}, {n}]", f"{scale.dtype} {list(scale.shape)}")
    if tuple(zp.shape) != (nb, n):
        raise fail(name, "zero_point", f"[{nb}, {n}]", list(zp.shape))
    if bias.dtype != "float32" or tuple(bias.shape) != (n,):
        raise fail(name, "bias", f"float32 [{n}]", f"{bias.dtype} {list(bias.shape)}")
    return TensorType((data.shape[0], n), "float32")


def _compute(args, attrs):
    x, w, s, z, b = args
    return matmul_nbits(x, np.asarray(w).astype(np.int64), s, np.asarray(z).astype(np.int64), b,
                        int(attrs.block_size))


register_op("nn.matmul_nbits", ("data", "weight", "scale", "zero_point", "bias"), attrs=MatMulNBitsAttrs,
            rel=_rel, fusion=FusionKind.OPAQUE, compute=_compute,
            doc="onnxruntime's com.microsoft MatMulNBits (accuracy level 4, block 16 or 32): the activation quantized "
                "to int8 per block, int8 dot products, MLAS's lane and block-sum order (ops/matmul_nbits.py).")
