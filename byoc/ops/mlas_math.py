"""onnxruntime's float32 Erf and LayerNormalization kernels on x86-64 (MLAS, onnxruntime 1.32), as numpy
references and the ops ``mlas_erf`` and ``nn.mlas_layer_norm``.

A transformer quantized by onnxruntime.quantization keeps LayerNormalization and Erf (GELU) in float between
DequantizeLinear and QuantizeLinear, and the float32 result decides the quantized value, so byoc computes them
the way onnxruntime's CPU provider does (measured bit for bit against onnxruntime 1.32 on an AVX-512 x86-64 host,
``tests/byoc/frontend/test_onnx_mlas_math.py``):

* ``Erf`` (and ``Gelu``, which scales by float32(√½) first) is ``MlasErfKernelFma3``: |x| clamped to 3.925;
  below 0.921875 an odd polynomial in x² (FMA Horner chain), above it ``1 − exp(−p(|x|))`` with MLAS's own exp
  (round-to-integer by the 1.5·2²³ trick, a two-constant ln 2 reduction, a degree-6 polynomial, 2^i by exponent
  bits); the sign copied back. Every step is float32; ``fma`` is a single rounding.
* ``LayerNormalization`` over rows of at least 8 elements is ``MlasLayerNormKernelAvx2``: the mean from a
  float64 sum in four lanes (``(l0 + l2) + (l1 + l3)``, then the tail in order) divided in float64 and rounded
  to float32; the variance from eight float32 FMA lanes of (x − mean)² reduced as ``_mm256`` halves, then a tail
  of four rounded squares added in order (the compiler's 4-wide block) and the last one to three by FMA;
  ``inv = 1 / sqrt(var / n + ε)`` in float32; ``y = fma((x − mean)·inv, scale, bias)`` (no bias: ``−0.0``,
  which makes the FMA a plain rounded product). Shorter rows take onnxruntime's scalar path, which byoc does not
  reproduce (the importer keeps ONNX's function body there).
* ``Softmax`` over the last axis is ``MlasComputeSoftmax`` with the AVX-512F kernels: the row maximum (exact),
  ``e = exp(x + (−max))`` by ``MlasComputeSumExpF32KernelAvx512F`` (clamp at −103.97, round-to-integer by the
  1.5·2²³ trick, two-constant ln 2 reduction, a degree-6 FMA polynomial, ``vscalefps`` by the integer: one
  rounding), the sum in sixteen lanes (element i into lane i mod 16, in order from +0) reduced as
  ``vextractf64x4`` / two ``vhaddps`` / ``vaddss``, then ``e · (1 / sum)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from .mlas_order import fma_f32
from .registry import FusionKind, register_op
from .rel import fail, tensor_arg

__all__ = ["mlas_erf", "mlas_layer_norm", "mlas_softmax", "LAYER_NORM_MIN_ROW", "ERF_CONSTANTS", "EXP_CONSTANTS"]

_F = np.float32

# MlasErfConstants (erf.cpp) with the upper clamp onnxruntime 1.32 applies (3.925: erf rounds to 1 above it)
ERF_CONSTANTS = {
    "upper": 3.925, "split": 0.921875,
    "small": (-5.99104969e-4, 4.99339588e-3, -2.67667342e-2, 1.12818025e-1, -3.76124859e-1, 1.28379151e-1),
    "big": (1.72948930e-5, -3.83208680e-4, 3.88393435e-3, -2.42545605e-2, 1.06777847e-1, 6.34846687e-1,
            1.28717512e-1),
    "exp_lower": -88.3762626647949, "log2_reciprocal": 1.44269504088896341, "log2_hi": -6.93145752e-1,
    "log2_lo": -1.42860677e-6,
    "exp_poly": (1.38319808e-3, 8.37550033e-3, 4.16689515e-2, 1.66664466e-1, 4.99999851e-1, 1.0, 1.0),
    "round_c": 1.25829120e+7,
}
# MlasExpConstants (compute.cpp) as the AVX-512F sum-of-exp kernel uses them
EXP_CONSTANTS = {
    "lower": -103.9720840454, "rounding_bias": 12582912.0, "log2_reciprocal": 1.44269504088896341,
    "log2_hi": -6.93145752e-1, "log2_lo": -1.42860677e-6,
    "poly": tuple(float.fromhex(h) for h in ("0x1.694000p-10", "0x1.125edcp-7", "0x1.555b5ap-5", "0x1.555450p-3",
                                             "0x1.fffff6p-2", "0x1.000000p+0")),
}
LAYER_NORM_MIN_ROW = 8  # MlasLayerNormF32 leaves shorter rows to the scalar path


def _fma(a, b, c) -> np.ndarray:
    """float32 a·b + c, one rounding."""
    a, b, c = np.broadcast_arrays(np.asarray(a, _F), np.asarray(b, _F), np.asarray(c, _F))
    return fma_f32(c, a, b)


def mlas_erf(x: np.ndarray) -> np.ndarray:
    """MlasErfKernelFma3 on a float32 array (module doc)."""
    k = ERF_CONSTANTS
    x = np.asarray(x, _F)
    bits = x.view(np.uint32)
    sign = bits & np.uint32(0x80000000)
    a = (bits & np.uint32(0x7FFFFFFF)).view(_F)
    a = np.where(a < _F(k["upper"]), a, _F(k["upper"]))  # vminps: NaN takes the bound
    s = (a * a).astype(_F)
    r = np.full_like(a, _F(k["small"][0]))
    for p in k["small"][1:]:
        r = _fma(r, s, p)
    r = _fma(r, a, a)
    big = a >= _F(k["split"])
    small = np.where(big, _F(0), r)
    ab = np.where(big, a, _F(0))
    r = np.full_like(a, _F(k["big"][0]))
    for p in k["big"][1:]:
        r = _fma(r, ab, p)
    r = -_fma(r, ab, ab)
    r = np.where(r > _F(k["exp_lower"]), r, _F(k["exp_lower"]))
    c = _F(k["round_c"])
    vr = (_fma(k["log2_reciprocal"], r, c) - c).astype(_F)
    vf = _fma(vr, k["log2_lo"], _fma(vr, k["log2_hi"], r))
    y = np.full_like(a, _F(k["exp_poly"][0]))
    for p in k["exp_poly"][1:]:
        y = _fma(y, vf, p)
    scale = ((vr.astype(np.int32) + 127) << 23).view(_F)
    y = (_F(1) - (y * scale).astype(_F)).astype(_F)
    return (y.view(np.uint32) | small.view(np.uint32) | sign).view(_F)


def _hsum8(lanes: list) -> np.ndarray:
    """_mm256 horizontal sum: halves added lane-wise, then (0 + 2) + (1 + 3)."""
    h = [(lanes[i] + lanes[i + 4]).astype(_F) for i in range(4)]
    return ((h[0] + h[2]).astype(_F) + (h[1] + h[3]).astype(_F)).astype(_F)


def mlas_layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, epsilon: float) -> np.ndarray:
    """MlasLayerNormKernelAvx2 over the rows of ``x`` [R, n] (n ≥ 8), ``scale`` / ``bias`` [n] (module doc)."""
    x = np.asarray(x, _F)
    rows, n = x.shape
    xd = x.astype(np.float64)
    n4 = n - n % 4
    lanes = [np.zeros(rows) for _ in range(4)]
    for i in range(0, n4, 4):
        for lane in range(4):
            lanes[lane] = lanes[lane] + xd[:, i + lane]
    dsum = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3])
    for j in range(n4, n):
        dsum = dsum + xd[:, j]
    mean = (dsum / n).astype(_F)
    d = (x - mean[:, None]).astype(_F)
    n8 = n - n % 8
    vl = [np.zeros(rows, _F) for _ in range(8)]
    for i in range(0, n8, 8):
        for lane in range(8):
            vl[lane] = _fma(d[:, i + lane], d[:, i + lane], vl[lane])
    var = _hsum8(vl)
    j = n8
    if n - j >= 4:
        for j in range(n8, n8 + 4):
            var = (var + (d[:, j] * d[:, j]).astype(_F)).astype(_F)
        j = n8 + 4
    for t in range(j, n):
        var = _fma(d[:, t], d[:, t], var)
    inv = (_F(1) / np.sqrt(((var / _F(n)).astype(_F) + _F(epsilon)).astype(_F))).astype(_F)
    t = (d * inv[:, None]).astype(_F)
    return _fma(t, np.asarray(scale, _F)[None, :], np.asarray(bias, _F)[None, :])


def _mlas_exp(v: np.ndarray) -> np.ndarray:
    """The exp of MlasComputeSumExpF32KernelAvx512F on float32 ``v`` (already x − max)."""
    k = EXP_CONSTANTS
    lo = _F(k["lower"])
    v = np.where(lo < v, v, lo).astype(_F)  # vmaxps(lower, v)
    bias = _F(k["rounding_bias"])
    m = (_fma(v, k["log2_reciprocal"], bias) - bias).astype(_F)
    v = _fma(m, k["log2_lo"], _fma(m, k["log2_hi"], v))
    p = np.full_like(v, _F(k["poly"][0]))
    for c in k["poly"][1:]:
        p = _fma(p, v, c)
    p = _fma(p, v, k["poly"][-1])
    return np.ldexp(p, m.astype(np.int32)).astype(_F)  # vscalefps: one rounding


def mlas_softmax(x: np.ndarray) -> np.ndarray:
    """MlasComputeSoftmax (AVX-512F kernels) over the rows of ``x`` [R, D] (module doc)."""
    x = np.asarray(x, _F)
    rows, d = x.shape
    e = _mlas_exp((x + (-x.max(axis=1))[:, None]).astype(_F))
    acc = np.zeros((rows, 16), _F)
    for i in range(0, d, 16):
        n = min(16, d - i)
        acc[:, :n] = (acc[:, :n] + e[:, i:i + n]).astype(_F)
    a = (acc[:, 8:] + acc[:, :8]).astype(_F)
    h = [(a[:, j] + a[:, j + 1]).astype(_F) for j in (0, 2, 4, 6)]
    total = ((h[0] + h[1]).astype(_F) + (h[2] + h[3]).astype(_F)).astype(_F)
    return (e * (_F(1) / total).astype(_F)[:, None]).astype(_F)


def _erf_rel(types, attrs):
    t = tensor_arg("mlas_erf", ("data",), types, 0)
    if t.dtype != "float32":
        raise fail("mlas_erf", "data", "float32", t.dtype)
    return t


register_op("mlas_erf", ("data",), rel=_erf_rel, fusion=FusionKind.ELEMWISE,
            compute=lambda args, attrs: mlas_erf(args[0]),
            doc="onnxruntime's float32 Erf (MlasErfKernelFma3; ops/mlas_math.py).")


@dataclass(frozen=True)
class MlasLayerNormAttrs(Attrs):
    epsilon: float = 1e-5


def _layer_norm_rel(types, attrs):
    name = "nn.mlas_layer_norm"
    args = ("data", "scale", "bias")
    data, scale, bias = (tensor_arg(name, args, types, i) for i in range(3))
    for what, t in zip(args, (data, scale, bias)):
        if t.dtype != "float32":
            raise fail(name, what, "float32", t.dtype)
    if data.ndim != 2 or int(data.shape[1]) < LAYER_NORM_MIN_ROW:
        raise fail(name, "data", f"[rows, n] with n ≥ {LAYER_NORM_MIN_ROW}", data.shape)
    for what, t in (("scale", scale), ("bias", bias)):
        if tuple(t.shape) != (data.shape[1],):
            raise fail(name, what, f"shape [{data.shape[1]}]", t.shape)
    return data


register_op("nn.mlas_layer_norm", ("data", "scale", "bias"), attrs=MlasLayerNormAttrs, rel=_layer_norm_rel,
            fusion=FusionKind.OPAQUE,
            compute=lambda args, attrs: mlas_layer_norm(args[0], args[1], args[2], attrs.epsilon),
            doc="onnxruntime's float32 LayerNormalization over the rows of data [rows, n] (n ≥ 8; "
                "MlasLayerNormKernelAvx2; ops/mlas_math.py).")


def _softmax_rel(types, attrs):
    t = tensor_arg("nn.mlas_softmax", ("data",), types, 0)
    if t.dtype != "float32" or t.ndim != 2:
        raise fail("nn.mlas_softmax", "data", "a 2-D float32 tensor [rows, D]", f"{t.dtype} {list(t.shape)}")
    return t


register_op("nn.mlas_softmax", ("data",), rel=_softmax_rel, fusion=FusionKind.OPAQUE,
            compute=lambda args, attrs: mlas_softmax(args[0]),
            doc="onnxruntime's float32 Softmax over the rows of data [rows, D] (MlasComputeSoftmax, AVX-512F "
                "kernels; ops/mlas_math.py).")
