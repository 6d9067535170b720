"""TFLite converter for SVDF (int8 input / weights_feature / output; int16 state, or int8 state under TFLite
Micro's semantics) → ``qnn.svdf`` (byoc/ops/qnn_svdf.py).

The fifth input is TFLite's variable activation state. The IR op is one inference from the state TFLite resets
it to (0 for int16, the zero point for int8), so the state is not an operand; its type and quantization become
the op's weights_time dtype and state_scale / state_zero_point. Refused, with LiteRT's or TFLite Micro's reason:
float or hybrid SVDF, under LiteRT a fused activation other than RELU (its integer kernel ENSUREs RELU,
then clamps only to int8), an int16 state with a non-zero zero point (LiteRT's kernel assumes 0, TFLite Micro's does
not), a missing bias under TFLite Micro (its Prepare dereferences it), and an int8 state under ``semantics="litert"`` (LiteRT's kernel reads every state as int16).
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Expr
from ..quant.params import svdf_params
from .tflite_context import OpContext, converter


@converter("SVDF", quant=("qnn.svdf",), float=("qnn.svdf",))
def convert_svdf(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(5)
    x_t, wf_t, wt_t, st_t, out_t = ctx.tensor(0), ctx.tensor(1), ctx.tensor(2), ctx.tensor(4), ctx.out_tensor()
    if x_t.dtype != "int8" or wf_t.dtype != "int8" or out_t.dtype != "int8":
        raise ctx.fail(f"input {x_t.label} ({x_t.dtype}), weights_feature {wf_t.label} ({wf_t.dtype}) and output "
                       f"{out_t.label} ({out_t.dtype}) must be int8; float and hybrid SVDF are not supported")
    if wt_t.dtype not in ("int16", "int8") or st_t.dtype != wt_t.dtype:
        raise ctx.fail(f"weights_time {wt_t.label} ({wt_t.dtype}) and state {st_t.label} ({st_t.dtype}) must both "
                       "be int16 or both int8", hint="TFLite Micro picks the state type from weights_time")
    if not st_t.is_variable:
        raise ctx.fail(f"state {st_t.label} must be a variable tensor", hint="LiteRT and TFLite Micro require it")
    if wt_t.dtype == "int8" and ctx.semantics == "litert":
        raise ctx.fail("an int8 activation state is TFLite Micro's kernel; LiteRT's reads the state as int16",
                       hint='import with semantics="tflm" (LiteRT runs this model out of bounds)')
    if ctx.semantics == "litert" and ctx.activation() != 1:
        raise ctx.fail("LiteRT's integer SVDF requires fused_activation_function RELU (which it then does not "
                       f"apply), found {ctx.activation()}", hint='TFLite Micro ignores it: semantics="tflm"')
    for name in ("weights_feature", "weights_time"):
        t = wf_t if name == "weights_feature" else wt_t
        if ctx.model.constant(t) is None:
            raise ctx.fail(f"{name} {t.label} must be a constant tensor")
    if len(x_t.shape) != 2 or len(wf_t.shape) != 2 or len(wt_t.shape) != 2:
        raise ctx.fail(f"input, weights_feature and weights_time must be 2-D, found {list(x_t.shape)}, "
                       f"{list(wf_t.shape)}, {list(wt_t.shape)}")
    rank = int(ctx.options.get("rank", 0))
    filters, memory = wt_t.shape
    if rank < 1 or filters % rank or wf_t.shape != (filters, x_t.shape[1]):
        raise ctx.fail(f"rank {rank} must be ≥ 1 and divide num_filters {filters}; weights_feature must be "
                       f"[{filters}, {x_t.shape[1]}], found {list(wf_t.shape)}")
    units = filters // rank
    if st_t.shape != (x_t.shape[0], filters * memory) or out_t.shape != (x_t.shape[0], units):
        raise ctx.fail(f"state must be [{x_t.shape[0]}, {filters * memory}] and output [{x_t.shape[0]}, {units}], "
                       f"found {list(st_t.shape)} and {list(out_t.shape)}")
    s_in, zp_in = ctx.quant(x_t, "input")
    s_wf, _ = ctx.quant(wf_t, "weights_feature")
    s_wt, _ = ctx.quant(wt_t, "weights_time")
    s_st, zp_st = ctx.quant(st_t, "state")
    s_out, zp_out = ctx.quant(out_t, "output")
    if wt_t.dtype == "int16" and zp_st != 0:
        raise ctx.fail(f"int16 state {st_t.label} has zero point {zp_st}; LiteRT's kernel assumes 0",
                       hint="LiteRT and TFLite Micro would disagree on this model")
    ctx.prepare(lambda: svdf_params(s_in, s_wf, s_wt, s_st, s_out))
    if ctx.has_input(3):
        b_t = ctx.tensor(3)
        if b_t.dtype != "int32" or b_t.shape != (units,):
            raise ctx.fail(f"bias {b_t.label} must be int32 [{units}], found {b_t.dtype} {list(b_t.shape)}")
        bias = ctx.input(3)
    elif ctx.semantics == "tflm":
        raise ctx.fail("SVDF has no bias; TFLite Micro's Prepare reads the bias's scale (it crashes on this model)",
                       hint="add a zero int32 bias, or import with LiteRT's semantics")
    else:
        bias = ctx.const(np.zeros(units, np.int32), "int32")
    scales = [ctx.const(s_in, "float32"), ctx.const(zp_in, "int32"), ctx.const(s_wf, "float32"),
              ctx.const(s_wt, "float32"), ctx.const(s_st, "float32"), ctx.const(zp_st, "int32"),
              ctx.const(s_out, "float32"), ctx.const(zp_out, "int32")]
    return [ctx.call("qnn.svdf", [ctx.input(0), ctx.input(1), ctx.input(2), bias] + scales, {"rank": rank})]
