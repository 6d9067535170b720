"""nn.batch_matmul and qnn.batch_matmul with TVM's operands and attributes (TFLite BATCH_MATMUL).

As in Relay, both operands are 3-D: ``tensor_a`` is [B, M, K] ([B, K, M] with ``transpose_a``), ``tensor_b`` is
[B, N, K] with ``transpose_b`` (TVM's default, True) or [B, K, N] without; a batch of 1 broadcasts against the
other's. The result is [B, M, N].

* float: out[b, i, j] = Σₖ a[b, i, k]·b[b, k, j] summed in the operands' float type, k ascending from 0, each
  product and sum rounded (no FMA) — LiteRT's reference kernel's order, so float results are bit-exact too.
* integer: the products accumulate in wrapping int32; ``qnn.batch_matmul`` subtracts the (scalar) zero points
  first: Σ (x − zp_x)(y − zp_y). Its scales are carried for the requantize that follows (as in TVM).
  ``out_dtype="int64"`` (int16 operands, LiteRT's int16 BATCH_MATMUL): the exact sum in int64.

TVM's ``qnn.batch_matmul`` builder has no transpose arguments (its canonicalisation assumes transpose_b=True); the
attributes are the same BatchMatmulAttrs, and here every combination is implemented.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType
from ..quant.fixedpoint import wrap32
from .registry import FusionKind, register_op
from .rel import FLOAT_DTYPES, INT_DTYPES, expect_dtype, expect_scalar_or_vector, fail, tensor_arg

__all__ = ["BatchMatmulAttrs", "batch_matmul_out_type", "batch_matmul_float", "batch_matmul_int"]


@dataclass(frozen=True)
class BatchMatmulAttrs(Attrs):
    out_dtype: str = ""
    transpose_a: bool = False
    transpose_b: bool = True
    # "": float32 sequential sums; "mlas": onnxruntime's MlasGemm order per batch (one GEMM over all rows when
    # tensor_b has batch 1), ops/mlas_order.py
    accumulation: str = ""

    def __post_init__(self):
        Attrs.__post_init__(self)
        if self.accumulation not in ("", "mlas"):
            from ..errors import IRError
            raise IRError(f"batch_matmul: unknown accumulation {self.accumulation!r}", hint='use "" or "mlas"')


def batch_matmul_out_type(name: str, a: TensorType, b: TensorType, attrs, out_dtype: str) -> TensorType:
    if a.ndim != 3:
        raise fail(name, "tensor_a", "a 3-D tensor [batch, M, K]" + (" (transposed: [batch, K, M])"
                                                                    if attrs.transpose_a else ""), a)
    if b.ndim != 3:
        raise fail(name, "tensor_b", "a 3-D tensor " + ("[batch, N, K]" if attrs.transpose_b else "[batch, K, N]"),
                   b)
    m, k = (a.shape[2], a.shape[1]) if attrs.transpose_a else (a.shape[1], a.shape[2])
    n, kb = (b.shape[1], b.shape[2]) if attrs.transpose_b else (b.shape[2], b.shape[1])
    if k != kb:
        raise fail(name, "tensor_b", f"a reduction dimension of {k} (as tensor_a's; transpose_a="
                                     f"{attrs.transpose_a}, transpose_b={attrs.transpose_b})", b)
    ba, bb = a.shape[0], b.shape[0]
    if ba != bb and 1 not in (ba, bb):
        raise fail(name, "tensor_b", f"a batch of {ba} or 1 (tensor_a's batch is {ba})", b)
    return TensorType((max(ba, bb), m, n), out_dtype)


def _operands(a: np.ndarray, b: np.ndarray, attrs) -> tuple[np.ndarray, np.ndarray]:
    """a as [B, M, K] and b as [B, K, N] views."""
    return (a.transpose(0, 2, 1) if attrs.transpose_a else a), (b.transpose(0, 2, 1) if attrs.transpose_b else b)


def batch_matmul_float(a: np.ndarray, b: np.ndarray, attrs) -> np.ndarray:
    """Sequential sum over k in the operands' float type (LiteRT's reference order)."""
    a, b = _operands(a, b, attrs)
    acc = np.zeros((max(a.shape[0], b.shape[0]), a.shape[1], b.shape[2]), a.dtype)
    for k in range(a.shape[2]):
        acc = acc + a[:, :, k, None] * b[:, None, k, :]  # two roundings, as the reference's total += a·b
    return acc


def batch_matmul_int(a: np.ndarray, b: np.ndarray, attrs, zp_a: int = 0, zp_b: int = 0,
                     wide: bool = False) -> np.ndarray:
    """Exact Σ (a − zp_a)(b − zp_b), wrapped to int32 (``wide``: kept in int64)."""
    from .kernels import exact_int_matmul
    a, b = _operands(a, b, attrs)
    total = exact_int_matmul(a.astype(np.int64) - zp_a, b.astype(np.int64) - zp_b)
    return np.asarray(total, np.int64) if wide else wrap32(total)


def _rel(types, attrs):
    name = "nn.batch_matmul"
    a = tensor_arg(name, ("tensor_a", "tensor_b"), types, 0)
    b = tensor_arg(name, ("tensor_a", "tensor_b"), types, 1)
    expect_dtype(name, "tensor_a", a, FLOAT_DTYPES + INT_DTYPES)
    if b.dtype != a.dtype:
        raise fail(name, "tensor_b", f"dtype {a.dtype} (as tensor_a)", b.dtype)
    return batch_matmul_out_type(name, a, b, attrs, attrs.out_dtype or a.dtype)


def _compute(args, attrs):
    a, b = args
    out_dtype = attrs.out_dtype or a.dtype.name
    if a.dtype.kind == "f":
        if attrs.accumulation == "mlas" and a.dtype == np.float32 and out_dtype == "float32":
            from .mlas_order import mlas_batch_matmul
            return mlas_batch_matmul(a, b, attrs.transpose_a, attrs.transpose_b)
        return batch_matmul_float(a, b, attrs).astype(out_dtype)
    return batch_matmul_int(a, b, attrs).astype(out_dtype)


register_op("nn.batch_matmul", ("tensor_a", "tensor_b"), attrs=BatchMatmulAttrs, rel=_rel,
            fusion=FusionKind.OUT_ELEMWISE_FUSABLE, compute=_compute,
            doc="Batched a × b (b transposed by default, as in TVM); floats sum sequentially over K, integers "
                "in wrapping int32.")


_Q_ARGS = ("x", "y", "x_zero_point", "y_zero_point", "x_scale", "y_scale")


def _qrel(types, attrs):
    name = "qnn.batch_matmul"
    x = tensor_arg(name, _Q_ARGS, types, 0)
    y = tensor_arg(name, _Q_ARGS, types, 1)
    expect_dtype(name, "x", x, ("int8", "uint8", "int16"))
    expect_dtype(name, "y", y, ("int8", "uint8", "int16"))
    for i in range(2, 6):
        expect_scalar_or_vector(name, _Q_ARGS[i], types[i], 1)
    expect_dtype(name, "x_zero_point", types[2], "int32")
    expect_dtype(name, "y_zero_point", types[3], "int32")
    out_dtype = attrs.out_dtype or "int32"
    if out_dtype not in ("int32", "int64"):
        raise fail(name, "out_dtype", "'int32' or 'int64'", repr(out_dtype))
    return batch_matmul_out_type(name, x, y, attrs, out_dtype)


def _qcompute(args, attrs):
    x, y, zp_x, zp_y = args[:4]
    wide = attrs.out_dtype == "int64"
    return batch_matmul_int(x, y, attrs, int(np.asarray(zp_x).reshape(-1)[0]), int(np.asarray(zp_y).reshape(-1)[0]),
                            wide).astype(np.int64 if wide else np.int32)


register_op("qnn.batch_matmul", _Q_ARGS, attrs=BatchMatmulAttrs, rel=_qrel, fusion=FusionKind.OUT_ELEMWISE_FUSABLE,
            compute=_qcompute, doc="Quantized batch_matmul: wrapping int32 Σ (x − zp_x)(y − zp_y) over K (int64: exact).")
