"""qnn.prelu: TFLite PRELU on quantized tensors (reference_ops::BroadcastPrelu4DSlow), per-tensor parameters.

x' = q_x − zp_x; x' ≥ 0 → MBQM(x', M1, e1), else MBQM(x'·(q_α − zp_α), M2, e2); then + zp_out, saturated.
Prepare computes both real multipliers in float32 and widens them (``prelu_params``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.types import TensorType
from ..quant.fixedpoint import mbqm, quantize_multiplier, wrap32
from ..quant.params import mul_params
from .registry import FusionKind, NoAttrs, register_op
from .rel import broadcast_shapes, dtype_range, expect_dtype, expect_scalar_or_vector, fail, tensor_arg

__all__ = ["PreluParams", "prelu_params"]

_ARGS = ("data", "alpha", "input_scale", "input_zero_point", "alpha_scale", "alpha_zero_point", "output_scale",
         "output_zero_point")


@dataclass(frozen=True)
class PreluParams:
    identity_multiplier: int
    identity_shift: int
    alpha_multiplier: int
    alpha_shift: int


def _scalar(v) -> float:
    return float(np.asarray(v).reshape(-1)[0])


def prelu_params(input_scale, alpha_scale, output_scale) -> PreluParams:
    """QuantizeMultiplier(float32(s_in / s_out)) and QuantizeMultiplier(float32(float32(s_in·s_α) / s_out))."""
    s_in, s_out = np.float32(_scalar(input_scale)), np.float32(_scalar(output_scale))
    m1, e1 = quantize_multiplier(float(np.float32(s_in / s_out)))
    m2, e2 = mul_params(_scalar(input_scale), _scalar(alpha_scale), _scalar(output_scale))
    return PreluParams(int(m1), int(e1), int(np.asarray(m2).reshape(-1)[0]), int(np.asarray(e2).reshape(-1)[0]))


def _rel(types, attrs):
    name = "qnn.prelu"
    x = tensor_arg(name, _ARGS, types, 0)
    a = tensor_arg(name, _ARGS, types, 1)
    expect_dtype(name, "data", x, ("int8", "uint8"))
    if a.dtype != x.dtype:
        raise fail(name, "alpha", f"dtype {x.dtype} (as data)", a.dtype)
    for i in range(2, 8):
        expect_scalar_or_vector(name, _ARGS[i], types[i], 1)
    return TensorType(broadcast_shapes(name, x.shape, a.shape), x.dtype)


def _compute(args, attrs):
    x, alpha, s_in, zp_in, s_a, zp_a, s_out, zp_out = args
    p = prelu_params(s_in, s_a, s_out)
    shape = np.broadcast_shapes(x.shape, alpha.shape)
    xv = np.broadcast_to(x.astype(np.int64), shape) - int(_scalar(zp_in))
    av = np.broadcast_to(alpha.astype(np.int64), shape) - int(_scalar(zp_a))
    pos = mbqm(xv, p.identity_multiplier, p.identity_shift)
    neg = mbqm(wrap32(xv * av), p.alpha_multiplier, p.alpha_shift)
    raw = np.where(xv >= 0, pos, neg) + int(_scalar(zp_out))
    lo, hi = dtype_range(x.dtype.name)
    return np.clip(raw, lo, hi).astype(x.dtype)


register_op("qnn.prelu", _ARGS, attrs=NoAttrs, rel=_rel, fusion=FusionKind.BROADCAST, compute=_compute,
            doc="TFLite PRELU: identity multiplier for x ≥ 0, MBQM(x'·α') with the alpha multiplier otherwise.")
