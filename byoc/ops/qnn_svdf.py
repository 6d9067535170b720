"""Quantized SVDF (TFLite's singular value decomposition filter, int8 input and output).

``qnn.svdf(data, weights_feature, weights_time, bias, input_scale, input_zero_point, weights_feature_scale,
weights_time_scale, state_scale, state_zero_point, output_scale, output_zero_point)``, attrs ``rank``:

* data [batch, input_size] int8; weights_feature [num_filters, input_size] int8; weights_time
  [num_filters, memory_size] int16 (int16 state) or int8 (int8 state, TFLite Micro only); bias [num_units] int32
  (num_units = num_filters / rank); the result [batch, num_units] int8.
* The op is ONE inference of TFLite's SVDF from its initial activation state, which TFLite resets to 0 (int16)
  or to the state's zero point (int8). The state is a variable tensor that TFLite carries from one invoke to the
  next; here it is not an operand: each call starts from the reset state, so only the newest memory column is
  non-zero after the shift, and the time product reduces to weights_time[:, -1].
* Arithmetic (LiteRT ``reference_ops::EvalIntegerSVDF``, TFLite Micro ``EvalIntegerSvdfReference<T>``):
  feature = MBQM(Σ wf·(x − zp_in), M1) clamped to the state type, stored as (zp_state + feature) wrapped to the
  state type; scratch[f] = Σ_j wt[f, j]·(state[f, j] − zp_state) in wrapping int32; per unit the sum of its
  ``rank`` filters plus the bias; output = clamp_int8(MBQM(·, M2) + zp_out). No fused activation (both kernels
  ignore it on the integer path; LiteRT requires it to be RELU). Multipliers from ``byoc.quant.params.svdf_params``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType
from ..quant.fixedpoint import mbqm, wrap32
from ..quant.params import svdf_params
from .registry import FusionKind, register_op
from .rel import expect_dtype, expect_scalar_or_vector, fail, tensor_arg

__all__ = ["SvdfAttrs", "svdf_int", "SVDF_ARGS"]

SVDF_ARGS = ("data", "weights_feature", "weights_time", "bias", "input_scale", "input_zero_point",
             "weights_feature_scale", "weights_time_scale", "state_scale", "state_zero_point", "output_scale",
             "output_zero_point")


@dataclass(frozen=True)
class SvdfAttrs(Attrs):
    rank: int = 1


def _scalar_int(v) -> int:
    return int(np.asarray(v).reshape(-1)[0])


def svdf_int(x, wf, wt, bias, input_scale, input_zp: int, wf_scale, wt_scale, state_scale, state_zp: int,
             output_scale, output_zp: int, rank: int) -> np.ndarray:
    """One SVDF inference from the reset state (see the module docstring), int8 [batch, num_units]."""
    p = svdf_params(input_scale, wf_scale, wt_scale, state_scale, output_scale)
    state_t = np.dtype(wt.dtype)
    lo, hi = np.iinfo(state_t).min, np.iinfo(state_t).max
    x = np.asarray(x, np.int64) - input_zp
    dot = wrap32(x @ np.asarray(wf, np.int64).T)                              # [batch, num_filters]
    feature = np.clip(mbqm(dot, p.feature_multiplier, p.feature_shift), lo, hi)
    newest = (feature + state_zp).astype(state_t).astype(np.int64)           # C++ store into T: wraps
    scratch = wrap32(np.asarray(wt, np.int64)[:, -1] * (newest - state_zp))  # older columns hold zp_state
    batch, filters = scratch.shape
    acc = wrap32(scratch.reshape(batch, filters // rank, rank).sum(-1) + np.asarray(bias, np.int64))
    out = mbqm(acc, p.output_multiplier, p.output_shift) + output_zp
    return np.clip(out, -128, 127).astype(np.int8)


def _svdf_rel(types, attrs):
    name = "qnn.svdf"
    x, wf, wt, bias = (tensor_arg(name, SVDF_ARGS, types, i) for i in range(4))
    expect_dtype(name, "data", x, "int8")
    expect_dtype(name, "weights_feature", wf, "int8")
    expect_dtype(name, "weights_time", wt, ("int16", "int8"))
    expect_dtype(name, "bias", bias, "int32")
    for t, arg in ((x, "data"), (wf, "weights_feature"), (wt, "weights_time")):
        if t.ndim != 2:
            raise fail(name, arg, "a 2-D tensor", t)
    rank = attrs.rank
    filters, mem = wt.shape
    if rank < 1 or wf.shape[0] != filters or wf.shape[1] != x.shape[1] or filters % rank or mem < 1:
        raise fail(name, "weights", f"weights_feature [F, {x.shape[1]}] and weights_time [F, memory ≥ 1] with F "
                   f"a multiple of rank {rank}", f"{list(wf.shape)} and {list(wt.shape)}")
    units = filters // rank
    if bias.shape != (units,):
        raise fail(name, "bias", f"shape [{units}]", list(bias.shape))
    for i in range(4, 12):
        expect_scalar_or_vector(name, SVDF_ARGS[i], types[i], 1)
    return TensorType((x.shape[0], units), "int8")


def _svdf_compute(args, attrs):
    x, wf, wt, bias, s_in, zp_in, s_wf, s_wt, s_st, zp_st, s_out, zp_out = args
    return svdf_int(x, wf, wt, bias, s_in, _scalar_int(zp_in), s_wf, s_wt, s_st, _scalar_int(zp_st), s_out,
                    _scalar_int(zp_out), attrs.rank)


register_op("qnn.svdf", SVDF_ARGS, attrs=SvdfAttrs, rel=_svdf_rel, fusion=FusionKind.OPAQUE, compute=_svdf_compute,
            doc="TFLite SVDF (int8 input, int16 or int8 state): one inference from the reset activation state, "
                "LiteRT / TFLite Micro integer reference arithmetic.")
