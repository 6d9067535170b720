"""onnxruntime's integer arithmetic (CPU execution provider, MLAS kernels), vectorised over numpy arrays.

ONNX defines quantization as ``saturate(round_half_to_even(x / scale) + zero_point)`` and onnxruntime's integer
kernels requantize in float32, not in fixed point as TFLite does. Every function below reproduces one MLAS
kernel step by step in float32 (numpy's float32 operations round like SSE/AVX ones), so the results are bit
exact. ``qnn.requantize(rounding="ONNX")`` (byoc/ops/qnn.py) is MlasRequantizeOutput:
``saturate(rne(float32(acc) · float32(s_in / s_out)) + zp)``. Sources: microsoft/onnxruntime ``onnxruntime/core/mlas/lib/{quantize.cpp, qladd.cpp, qlmul.cpp,
qlgavgpool.cpp, intrinsics/avx2/qladd_avx2.cpp}`` and ``core/providers/cpu/quantization/qlinearconv.cc``.

Where MLAS picks a kernel by CPU feature the result can differ by one unit on rare ties: ``QLinearAdd`` uses
fused multiply-adds on AVX2 hosts (emulated exactly here) and separate multiply and add on SSE2-only hosts.
"""
from __future__ import annotations

import numpy as np

__all__ = ["f32", "rne", "saturate", "fma_f32", "quantize_linear", "qlinear_add", "qlinear_mul",
           "mlas_logistic", "qlinear_lookup_table", "qlinear_pool_quantize", "qlinear_softmax",
           "qlinear_softmax_table", "qlinear_softmax_output_scale"]


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def rne(x) -> np.ndarray:
    """Round half to even (``_mm_cvtps_epi32`` / ``nearbyintf`` in the default rounding mode) to int64."""
    return np.rint(np.asarray(x)).astype(np.int64)


def saturate(x, dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(np.asarray(x, np.int64), info.min, info.max).astype(dtype)


def fma_f32(a, b, c) -> np.ndarray:
    """float32 fused multiply-add ``round_f32(a·b + c)`` with one rounding, emulated exactly.

    ``a·b`` of two float32 values is exact in float64. ``s = a·b + c`` in float64 may round; the exact
    remainder (TwoSum) tells which way, and rounding ``s`` to odd before the final float32 rounding makes the
    two-step rounding equal to a single one (53 ≥ 24 + 2 bits).
    """
    p = f32(a).astype(np.float64) * f32(b).astype(np.float64)
    c64 = f32(c).astype(np.float64)
    p, c64 = np.broadcast_arrays(p, c64)
    s = p + c64
    bp = s - c64
    err = (p - bp) + (c64 - (s - bp))
    bits = s.view(np.int64).copy()
    inexact = (err != 0) & ((bits & 1) == 0) & np.isfinite(s)
    if np.any(inexact):
        # Move s one ulp toward the exact value: it then has an odd last bit (round to odd).
        toward = np.where(inexact, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
        s = toward
    return s.astype(np.float32)


def quantize_linear(x, scale, zero_point, dtype: str, axis: int | None = None) -> np.ndarray:
    """QuantizeLinear (MlasQuantizeLinear): ``saturate(rne(x / scale) + zp)``, the division in float32."""
    x = f32(x)
    scale = f32(scale)
    zp = np.asarray(zero_point, np.int64)
    if axis is not None and scale.ndim == 1 and scale.size > 1:
        shape = [1] * x.ndim
        shape[axis] = scale.size
        scale = scale.reshape(shape)
        zp = zp.reshape(shape) if zp.size > 1 else zp.reshape(())
    else:
        scale = scale.reshape(())
        zp = zp.reshape(-1)[0] if zp.size else np.int64(0)
    with np.errstate(all="ignore"):
        q = np.rint(x / scale)
    info = np.iinfo(dtype)
    q = np.clip(np.nan_to_num(q, nan=0.0), info.min - 2 ** 20, info.max + 2 ** 20).astype(np.int64)
    return saturate(q + zp, dtype)


def qlinear_add(a, sa, za, b, sb, zb, sc, zc, dtype: str, fused: bool = True) -> np.ndarray:
    """QLinearAdd (com.microsoft), MlasQLinearAdd AVX2 kernel (``fused``) or SSE2 kernel.

    ``r_a = s_a/s_c``, ``r_b = s_b/s_c``, ``fixed = zc − fma(r_a, za, r_b·zb)`` in float32; the AVX2 kernel
    computes ``rne(fma(a, r_a, fma(b, r_b, fixed)))`` and saturates. Checked against onnxruntime 1.32 on all
    65,536 int8 pairs for 60 random (scale, zero point) triples.
    """
    ra = f32(f32(sa) / f32(sc))
    rb = f32(f32(sb) / f32(sc))
    za, zb, zc = (int(np.asarray(z).reshape(-1)[0]) for z in (za, zb, zc))
    if fused:
        # The AVX2 kernel is built with FMA contraction: r_a·za + (r_b·zb) is one fused multiply-add.
        fixed = f32(np.float32(zc) - fma_f32(ra, np.float32(za), f32(rb * np.float32(zb))))
    else:
        fixed = f32(np.float32(zc) - f32(f32(ra * np.float32(za)) + f32(rb * np.float32(zb))))
    a = np.asarray(a)
    b = np.asarray(b)
    if b.size == 1 and a.size != 1 or (a.size == 1 and b.size == 1):
        # Scalar B: fixed += b·r_b (separate multiply and add), then one step per element of A.
        fixed = f32(fixed + f32(np.float32(b.reshape(-1)[0]) * rb))
        af = a.astype(np.float32)
        v = fma_f32(af, ra, fixed) if fused else f32(fixed + f32(af * ra))
        v = np.broadcast_to(v, np.broadcast_shapes(a.shape, b.shape))
    elif a.size == 1:
        # onnxruntime swaps the operands so that the scalar is B.
        return qlinear_add(b, sb, zb, a, sa, za, sc, zc, dtype, fused)
    else:
        af, bf = np.broadcast_arrays(a.astype(np.float32), b.astype(np.float32))
        if fused:
            v = fma_f32(af, ra, fma_f32(bf, rb, fixed))
        else:
            v = f32(f32(fixed + f32(af * ra)) + f32(bf * rb))
    return saturate(np.clip(rne(v), -(1 << 20), 1 << 20), dtype)


def qlinear_mul(a, sa, za, b, sb, zb, sc, zc, dtype: str) -> np.ndarray:
    """QLinearMul (com.microsoft), MlasQLinearMul SSE2 kernel: ``rne(float((a−za)(b−zb)) · ratio + zc)``
    with ``ratio = (s_a · s_b) / s_c`` in float32, then saturate."""
    za, zb, zc = (int(np.asarray(z).reshape(-1)[0]) for z in (za, zb, zc))
    ratio = f32(f32(f32(sa) * f32(sb)) / f32(sc))
    prod = (np.asarray(a, np.int64) - za) * (np.asarray(b, np.int64) - zb)
    v = f32(f32(prod.astype(np.float32) * ratio) + np.float32(zc))
    return saturate(rne(v), dtype)


# ------------------------------------------------------------------------- table-based QLinear* activations
# MlasLogisticConstants (core/mlas/lib/logistic.cpp): Eigen's rational approximation on [-18, 18].
_LOGISTIC = {k: np.float32(v) for k, v in dict(
    lo=-18.0, hi=18.0, a9=4.37031012579801e-11, a7=1.15627324459942e-07, a5=6.08574864600143e-05,
    a3=8.51377133304701e-03, a1=2.48287947061529e-01, b10=6.10247389755681e-13, b8=5.76102136993427e-09,
    b6=6.29106785017040e-06, b4=1.70198817374094e-03, b2=1.16817656904453e-01, b0=9.93151921023180e-01).items()}


def mlas_logistic(x, fused: bool = True) -> np.ndarray:
    """MlasComputeLogistic: ``MlasLogisticKernelFma3`` (x86_64/LogisticKernelFma3.S, ``fused``) or the generic
    SSE2 kernel (separate multiply and add, result clamped to [0, 1]); every step in float32."""
    c = _LOGISTIC
    v = np.minimum(np.maximum(f32(x), c["lo"]), c["hi"])
    v2 = f32(v * v)
    mad = fma_f32 if fused else (lambda a, b, d: f32(f32(a * b) + d))
    p = mad(v2, c["a9"], c["a7"])
    for k in ("a5", "a3", "a1"):
        p = mad(p, v2, c[k])
    p = f32(v * p)
    q = mad(v2, c["b10"], c["b8"])
    for k in ("b6", "b4", "b2", "b0"):
        q = mad(q, v2, c[k])
    r = f32(f32(p / q) + np.float32(0.5))
    # The FMA3 kernel clamps only below; the generic one clamps to [0, 1].
    return np.maximum(r, np.float32(0.0)) if fused else np.clip(r, np.float32(0.0), np.float32(1.0))


def qlinear_lookup_table(kind: str, x_scale, x_zero_point, y_scale, y_zero_point, dtype: str,
                         alpha: float = 0.01) -> np.ndarray:
    """QlinearBuildLookupTable (contrib_ops/cpu/quantization/qlinear_lookup_table.cc) for QLinearSigmoid
    (``kind="sigmoid"``: MlasComputeLogistic) and QLinearLeakyRelu (``"leaky_relu"``: ``v >= 0 ? v : alpha·v``
    in float32): the 256 values ``MlasQuantizeLinear(f(float(x_scale) · (q − x_zp)))`` for q = qmin..qmax,
    indexed by ``q − qmin``."""
    info = np.iinfo(dtype)
    q = np.arange(info.min, info.max + 1, dtype=np.int64)
    zx = int(np.asarray(x_zero_point).reshape(-1)[0])
    v = f32(np.float32(np.asarray(x_scale, np.float32).reshape(-1)[0]) * (q - zx).astype(np.float32))
    if kind == "sigmoid":
        y = mlas_logistic(v)
    elif kind == "leaky_relu":
        y = np.where(v >= np.float32(0.0), v, f32(np.float32(alpha) * v))
    else:
        raise ValueError(f"no onnxruntime lookup table for {kind!r}")
    return quantize_linear(y, np.asarray(y_scale, np.float32).reshape(-1)[0], y_zero_point, dtype)


def qlinear_pool_quantize(y, y_scale, y_zero_point, dtype: str) -> np.ndarray:
    """``quantize_value`` of QLinearAveragePool (qlinear_pool.cc): ``clamp(int(nearbyintf(y/s + zp)))``; the zero
    point is added in float32 before rounding (MlasQuantizeLinear adds it after)."""
    v = f32(f32(f32(y) / np.float32(y_scale)) + np.float32(int(np.asarray(y_zero_point).reshape(-1)[0])))
    info = np.iinfo(dtype)
    return np.clip(np.rint(v), info.min, info.max).astype(dtype)


def qlinear_softmax_table(x_scale, reduce_len: int) -> np.ndarray:
    """QlinearBuildLookupTableUint32 of QLinearSoftmax: ``T[d + 255] = float(exp((d + b/s) · s))`` computed in
    double for every difference d = x − max(x) ∈ [−255, 0], with ``b = max(0, logf(FLT_MAX / D) − 5)`` (so a row
    of D table values sums below FLT_MAX / e^5)."""
    xs = np.float64(np.float32(np.asarray(x_scale).reshape(-1)[0]))
    # std::log of a float is logf: float32 result (correctly rounded here; glibc's logf agrees for all but 3 of
    # the first 200,000 row lengths).
    quotient = np.float32(np.finfo(np.float32).max) / np.float32(reduce_len)
    bit_shift = max(0.0, float(np.float32(np.log(np.float64(quotient)))) - 5.0) / xs
    return np.exp((np.arange(-255, 1, dtype=np.float64) + bit_shift) * xs).astype(np.float32)


def qlinear_softmax_output_scale(y_scale) -> np.float32:
    """The kernel's integer-valued float32 output multiplier ``floor(1.0f / y_scale)``."""
    with np.errstate(over="ignore"):  # a subnormal y_scale gives inf, which callers refuse
        return np.floor(np.float32(1.0) / np.float32(np.asarray(y_scale).reshape(-1)[0]))


def qlinear_softmax(x: np.ndarray, x_scale, y_scale, y_zero_point, axis: int = -1) -> np.ndarray:
    """QLinearSoftmax (contrib_ops/cpu/quantization/qlinear_softmax.cc, opset-13 semantics: one axis; opset < 13
    is this over the input coerced to [N, D] at the axis).

    Per row: ``T = qlinear_softmax_table(x_scale, D)[x − max(x) + 255]``; a float32 sum ``Σ`` of T taken
    sequentially in element order; then ``y = saturate(rint(T · k / Σ) + zp)`` with ``k = floor(1/s_y)`` and the
    quotient in double (onnxruntime 1.32: the float32 product T·k would overflow for short rows and small s_y, yet
    its kernel gives the finite result; 0 mismatches on 3.2 M outputs against it, with forced ties; the float32
    form mismatches 12 k of them). int8 saturates to [−128, 127] (onnxruntime before PR #29728 wrapped it).
    """
    dtype = x.dtype.name
    moved = np.moveaxis(np.asarray(x), axis, -1)
    table = qlinear_softmax_table(x_scale, moved.shape[-1])
    diff = moved.astype(np.int64) - moved.max(axis=-1, keepdims=True).astype(np.int64)
    t = table[diff + 255]
    total = np.add.accumulate(t, axis=-1, dtype=np.float32)[..., -1:]  # sequential, in element order
    k = np.float64(qlinear_softmax_output_scale(y_scale))
    with np.errstate(all="ignore"):
        r = np.rint(t.astype(np.float64) * k / total.astype(np.float64))  # T·k is exact in double
    info = np.iinfo(dtype)
    out = np.clip(r + int(np.asarray(y_zero_point).reshape(-1)[0]), info.min, info.max).astype(dtype)
    return np.ascontiguousarray(np.moveaxis(out, -1, axis))
