"""The ``ethos-u`` pattern table: Arm Ethos-U55/U65 placement, following Vela's TFLite supported-operator
constraints (``ethosu/vela/tflite_supported_operators.py``, the source of Vela's SUPPORTED_OPS.md).

Each rule below states one of Vela's limits in our words (kernel, stride, dilation, padding, tensor dimension,
weight sum, mean sizes ...). Two more kinds of rule are byoc's own and say so:

* bit-exactness: a requantization must be fixed-point. LiteRT's FULLY_CONNECTED rescales in double; the hardware
  (and TFLite Micro) does not. The ``ethos-u`` target therefore asks the importer for TFLite Micro's arithmetic
  (``PREFERRED_SEMANTICS``), so FULLY_CONNECTED goes to the NPU without the user naming ``semantics=``, and
  ``compare`` holds the NPU to TFLite Micro's kernels.
* the simulator: an op Vela lowers that ``npu_sim`` has no lowering for would stay on the CPU with a reason that
  says it differs from Vela (``VELA_DIFFERENCES``; empty now). SOFTMAX, TRANSPOSE, RESIZE_*, ARG_MAX,
  TRANSPOSE_CONV, PRELU, SQUARED_DIFFERENCE, MAXIMUM/MINIMUM, unquantized int32 ADD/SUB/MUL, int16 LEAKY_RELU and
  int8/int16 RSQRT run as Vela runs them (``npu_sim/lower_vela_ops.py``), under Vela 5's (Regor's) constraints:
  elementwise ops take any batch (Regor's "Batch must be 1" is MEAN's only).

Codegen: the NPU simulator with ``ETHOS_U_LOWERING`` on the ``ethos-u55-256-like`` preset.
"""
from __future__ import annotations

import numpy as np

from byoc.ops.kernels import kernel_hwio_shape, kernel_to_hwio
from byoc.relay.dataflow_pattern import is_constant, is_op, is_tuple, wildcard
from byoc.relay.dataflow_pattern.check import Check, Rule, rule
from npu_sim.int16_layers import BIAS_BITS   # an int16 layer's int64 bias: Vela's "must fit within 40-bits"

from . import npu as _npu
from . import npu_qdq as _qdq
from .common import (QUANT_DTYPES, capture, clip_range_rule, const_value, conv_chain, dtype_rule, fixed_point_rule,
                     hw_mean_input, input_of, layout_rule, on_integer_op, optional_clip, per_tensor_rule,
                     quantized_activation, quantized_mean, root, ttype)
from .registry import (CompositePattern, register_op_predicate, register_pattern_table, set_vendor_placement,
                       set_preferred_semantics)

__all__ = ["pattern_table", "TARGET", "ETHOS_U_LOWERING", "ETHOS_U_PRESET", "PREFERRED_SEMANTICS",
           "VELA_DIFFERENCES", "VELA_CPU_OPS", "TENSOR_DIM_MAX", "WEIGHTS_LIMIT"]

TARGET = "ethos-u"
ETHOS_U_PRESET = "ethos-u55-256-like"
PREFERRED_SEMANTICS = "tflm"   # the NPU requantizes in fixed point, as TFLite Micro does

# Vela's limits (tflite_supported_operators.py)
TENSOR_DIM_MAX = 65535
STRIDE_MAX = 3
DILATED_HEIGHT_MAX = 64
DILATED_PRODUCT_MAX = 64 * 64
WEIGHTS_LIMIT = 127 * 65536
SAME_FILTER_MAX = 8
VALID_FILTER_HEIGHT_MAX = 256
VALID_FILTER_PRODUCT_MAX = 256 * 256
MEAN_AXIS_MAX = 64 * 64
MEAN_PRODUCT_MAX = {"int8": 2 ** 24, "uint8": 2 ** 23, "int16": 2 ** 16}

# Ops Vela runs on the NPU that byoc keeps on the CPU, and why (the report and `byoc patterns` print these).
VELA_DIFFERENCES: dict[str, str] = {}

# Ops Vela has no NPU operator for: they stay on the CPU in both (Vela's warning: "Unsupported opType").
VELA_CPU_OPS = {
    "qnn.svdf": "Vela has no SVDF operator (its warning: 'Unsupported opType'), so SVDF stays on the CPU, as in Vela",
}


# -- generic: tensor dimensions, batch --------------------------------------------------------------------

@rule(f"every dimension of the tensors it reads and writes is in [1, {TENSOR_DIM_MAX}], rank at most 4 "
      f"(Vela's tensor limits)")
def _tens_dims(ctx):
    for e in (ctx.root, *ctx.captures.values()):
        t = ttype(e)
        if t is None:
            continue
        if t.ndim > 4:
            return f"found rank {t.ndim} {tuple(t.shape)}"
        if any(not 1 <= d <= TENSOR_DIM_MAX for d in t.shape):
            return f"found {tuple(t.shape)}"
    return None


def _batch_one(getter, what: str, vela: bool = False) -> Rule:
    """Batch 1: Regor's own rule for MEAN (``vela``); elsewhere byoc's (its NPU lowering of convolutions and pools
    runs one image; Vela 5.2 decomposes a larger batch and runs it on the NPU: a difference from Vela)."""
    why = "Vela's MEAN batch rule" if vela else "byoc's NPU lowering runs one image; Vela 5.2 runs larger batches"

    @rule(f"{what} has batch size 1 ({why})")
    def test(ctx):
        t = ttype(getter(ctx))
        if t is not None and t.ndim == 4 and t.shape[0] != 1:
            return f"found batch {t.shape[0]} in {tuple(t.shape)}"
        return None
    return test


# -- convolutions -----------------------------------------------------------------------------------------

def _kernel_hw(ctx) -> tuple[int, int]:
    w = const_value(ctx["conv"].args[1])
    layout = ctx["conv"].attrs.kernel_layout
    return (w.shape[layout.index("H")], w.shape[layout.index("W")]) if w is not None else (0, 0)


# the convolution-kind rules are the npu table's (one definition each)
_cin, _ordinary, _depthwise = _npu._cin, _npu._ordinary, _npu._depthwise


def _resized_stride(ifm_width: int, stride: int) -> int:
    """The stride width Vela ends with after folding a wide stride into the IFM width (its calc_resize_factor)."""
    if stride <= 1:
        return stride
    factor = stride
    if ifm_width % factor != 0:
        divisors = [s for s in (2, 3) if factor % s == 0 and ifm_width % (factor // s) == 0]
        new = factor // (divisors[0] if divisors else 1)
        factor = new if new != factor else 1
    return stride // factor


def _stride_ok(sh: int, sw: int, ifm_w: int, ofm_h: int, ofm_w: int) -> bool:
    h_ok = ofm_h == 1 or 1 <= sh <= STRIDE_MAX
    w_ok = ofm_w == 1 or (sw >= 1 and _resized_stride(ifm_w, sw) <= STRIDE_MAX)
    return h_ok and w_ok


def _io_hw(ctx, data_key: str) -> tuple[int, int, int]:
    ti, to = ttype(ctx[data_key]), ttype(ctx.root)
    ifm_w = ti.shape[2] if ti is not None and ti.ndim == 4 else 1
    oh, ow = (to.shape[1], to.shape[2]) if to is not None and to.ndim == 4 else (1, 1)
    return ifm_w, oh, ow


@rule(f"stride height is 1..{STRIDE_MAX} (unless the output height is 1); stride width is 1..{STRIDE_MAX}, or "
      f"larger when Vela can fold it into the input width down to 2 or 3 (unless the output width is 1)")
def _conv_stride(ctx):
    sh, sw = ctx["conv"].attrs.strides
    ifm_w, oh, ow = _io_hw(ctx, "data")
    return None if _stride_ok(sh, sw, ifm_w, oh, ow) else f"found strides ({sh}, {sw}), output {oh}x{ow}"


@rule(f"strides are 1..{STRIDE_MAX} in height and width (depthwise)")
def _dw_stride(ctx):
    sh, sw = ctx["conv"].attrs.strides
    return None if 1 <= sh <= STRIDE_MAX and 1 <= sw <= STRIDE_MAX else f"found ({sh}, {sw})"


@rule(f"the dilated kernel height is 1..{DILATED_HEIGHT_MAX} and the dilated kernel area at most "
      f"{DILATED_PRODUCT_MAX}")
def _dilated_kernel(ctx):
    kh, kw = _kernel_hw(ctx)
    dh, dw = ctx["conv"].attrs.dilation
    h, w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    return None if 1 <= h <= DILATED_HEIGHT_MAX and h * w <= DILATED_PRODUCT_MAX else f"found {h}x{w}"


@rule("weights are constant 8-bit values")
def _weights_8bit(ctx):
    t = ttype(ctx["conv"].args[1])
    w = const_value(ctx["conv"].args[1])
    if w is None:
        return "found non-constant weights"
    return None if t is not None and t.dtype in ("int8", "uint8") else f"found {t.dtype if t else w.dtype}"


@rule(f"for every output channel, the sum of |weight - weight zero point| is at most {WEIGHTS_LIMIT}")
def _weights_limit(ctx):
    conv = ctx["conv"]
    w, zp = const_value(conv.args[1]), const_value(conv.args[3])
    if w is None or zp is None:
        return None  # the constant-weights rule names it
    if conv.op.name == "qnn.dense":
        o = 0
    else:   # per output channel of the grouped HWIO view (TVM's depthwise HWOI [KH, KW, Cin, M] included)
        w, o = kernel_to_hwio(w, conv.attrs.kernel_layout, conv.attrs.groups, _cin(ctx)), 3
    vals = np.abs(w.astype(np.int64) - (zp.astype(np.int64).reshape(-1)[0] if zp.size == 1 else 0))
    axes = tuple(i for i in range(w.ndim) if i != o)
    worst = int(np.max(np.sum(vals, axis=axes))) if vals.size else 0
    return None if worst <= WEIGHTS_LIMIT else f"found {worst}"


@rule(f"an optional bias is a 1-D int32 constant (int64 for int16x8 layers, its values within {BIAS_BITS} bits: "
      f"-2^{BIAS_BITS - 1}..2^{BIAS_BITS - 1}-1, the hardware's signed bias field)")
def _bias(ctx):
    b = ctx.get("bias")
    if b is None:
        return None
    v = const_value(b.args[1])
    if v is not None and v.ndim == 1 and v.dtype == np.int32:
        return None
    if v is not None and v.ndim == 1 and v.dtype == np.int64 and _is_int16x8(ctx):
        lim = 1 << (BIAS_BITS - 1)
        return None if v.size == 0 or (int(v.min()) >= -lim and int(v.max()) < lim) else \
            f"found int64 values {int(v.min())}..{int(v.max())}"
    return f"found {None if v is None else (v.dtype, v.shape)}"


@rule("for a depth multiplier above 1 the input has one channel and the output has multiplier channels")
def _depth_multiplier(ctx):
    w = const_value(ctx["conv"].args[1])
    cin = _cin(ctx)
    if w is None or cin is None:
        return None
    a = ctx["conv"].attrs
    oc = kernel_hwio_shape(w.shape, a.kernel_layout, a.groups, cin)[3]
    mult = oc // max(cin, 1)
    return None if mult == 1 or cin == 1 else f"found multiplier {mult} with {cin} input channels"


@rule("an nn.pad in front pads only height and width, with the input zero point")
def _pad_fuses(ctx):
    pad = ctx.get("pad")
    if pad is None:
        return None
    pw = [tuple(p) for p in pad.attrs.pad_width]
    if len(pw) != 4 or pw[0] != (0, 0) or pw[3] != (0, 0):
        return f"found pad_width {pw}"
    pv, zp = const_value(pad.args[1]), const_value(ctx["conv"].args[2])
    if pv is None or zp is None or int(pv.reshape(-1)[0]) != int(zp.reshape(-1)[0]):
        return "found a pad value other than the input zero point"
    return None


def _reworded(r: Rule, description: str) -> Rule:
    return Rule(description, r.test, r.guard)


def _is_int16x8(ctx) -> bool:
    ti, to = ttype(ctx["data"]), ttype(ctx.root)
    return ti is not None and to is not None and ti.dtype == to.dtype == "int16"


@rule("input and output dtype is int8 or uint8, or both int16 (an int16x8 layer: int8 weights, zero points 0, "
      "an int64 accumulator and bias, requantized by TFLite's int64 MultiplyByQuantizedMultiplier), or int8 in and "
      "int16 out with an int32 accumulator (Vela's LSTM gate FULLY_CONNECTED)")
def _io_dtypes(ctx):
    ti, to = ttype(ctx["data"]), ttype(ctx.root)
    if ti is None or to is None:
        return "found a non-tensor"
    if ti.dtype in QUANT_DTYPES and to.dtype in QUANT_DTYPES:
        return None
    if (ti.dtype, to.dtype) == ("int8", "int16"):   # Vela's LSTM gate FC (lstm.py): int32 accumulator, int16 OFM
        acc = ttype(ctx["rq"].args[0])
        if acc is not None and acc.dtype == "int32":
            return None
        return f"found int8 → {acc.dtype if acc else None} → int16"
    if not _is_int16x8(ctx):
        return f"found {ti.dtype}, {to.dtype}"
    acc = ttype(ctx["rq"].args[0])
    if acc is None or acc.dtype != "int64":
        return f"found int16 with a {acc.dtype if acc else None} accumulator (int64 needed)"
    zps = [const_value(ctx["conv"].args[i]) for i in (2, 3)] + [const_value(ctx["rq"].args[i]) for i in (2, 4)]
    if any(z is None or np.any(z != 0) for z in zps):
        return "found an int16x8 layer with a nonzero zero point"
    if ctx["rq"].attrs.rounding not in ("TFLITE", "TFLITE_FLOAT"):   # TFLITE_FLOAT: the fixed-point rule names it
        return f"found int16x8 requantize rounding {ctx['rq'].attrs.rounding!r}"
    return None


_IO_8BIT = _io_dtypes
_QZP = per_tensor_rule("the input zero point and requantize zero points",
                       [input_of("conv", 2), input_of("rq", 2), input_of("rq", 4)])
_CONV_COMMON = (_IO_8BIT, _batch_one(capture("data"), "the input"), _dilated_kernel, _weights_8bit,
                _weights_limit, _bias, _pad_fuses, _QZP, fixed_point_rule("rq"), clip_range_rule(), _tens_dims)

CONV_CHECK = Check((_ordinary, layout_rule("conv", "data_layout", ("NHWC",)), _conv_stride, *_CONV_COMMON),
                   summary="CONV_2D with bias, requantization and fused ReLU/ReLU6/ReLU_N1_TO_1")
DEPTHWISE_CHECK = Check((_depthwise, layout_rule("conv", "data_layout", ("NHWC",)),
                         layout_rule("conv", "kernel_layout", ("HWOI", "HWIO")), _dw_stride, _depth_multiplier,
                         *_CONV_COMMON), summary="DEPTHWISE_CONV_2D")


@rule("the input is 2-D [rows, K] (FULLY_CONNECTED is exempt from the batch rule)")
def _dense_2d(ctx):
    t = ttype(ctx["data"])
    return None if t is not None and t.ndim == 2 else f"found {t.shape if t else None}"


DENSE_CHECK = Check((_dense_2d, _IO_8BIT, _weights_8bit, _bias, _QZP, fixed_point_rule("rq"), clip_range_rule(),
                     _tens_dims), summary="FULLY_CONNECTED (TFLite Micro's fixed-point requantization)")


# -- pooling -----------------------------------------------------------------------------------------------

def _pool_padded(ctx) -> bool:
    return any(int(p) != 0 for p in ctx["pool"].attrs.padding)


def _pool_hw(ctx) -> tuple[int, int]:
    return tuple(int(v) for v in ctx["pool"].attrs.pool_size)  # type: ignore[return-value]


@rule(f"with padding (SAME): the window is at most {SAME_FILTER_MAX}x{SAME_FILTER_MAX} (a window as wide as the "
      f"stride may be wider) and strides are 1..{STRIDE_MAX}; without padding (VALID): window height at most "
      f"{VALID_FILTER_HEIGHT_MAX} and area at most {VALID_FILTER_PRODUCT_MAX}, stride height 1..{STRIDE_MAX} "
      f"unless the output height is 1, stride width foldable as for CONV_2D")
def _avg_window(ctx):
    kh, kw = _pool_hw(ctx)
    sh, sw = (int(v) for v in ctx["pool"].attrs.strides)
    ifm_w, oh, ow = _io_hw(ctx, "data")
    if _pool_padded(ctx):
        if not ((1 <= kw <= SAME_FILTER_MAX or kw == sw) and 1 <= kh <= SAME_FILTER_MAX):
            return f"found a {kh}x{kw} window with padding"
        if not (sw <= STRIDE_MAX and _stride_ok(sh, sw, ifm_w, oh, ow)):
            return f"found strides ({sh}, {sw}) with padding"
        return None
    if not (kh <= VALID_FILTER_HEIGHT_MAX and kh * kw <= VALID_FILTER_PRODUCT_MAX):
        return f"found a {kh}x{kw} window"
    return None if _stride_ok(sh, sw, ifm_w, oh, ow) else f"found strides ({sh}, {sw}), output {oh}x{ow}"


@rule(f"strides are 1..{STRIDE_MAX}; window height at most {VALID_FILTER_HEIGHT_MAX} and area at most "
      f"{VALID_FILTER_PRODUCT_MAX}")
def _max_window(ctx):
    kh, kw = _pool_hw(ctx)
    sh, sw = (int(v) for v in ctx["pool"].attrs.strides)
    if not (1 <= sh <= STRIDE_MAX and 1 <= sw <= STRIDE_MAX):
        return f"found strides ({sh}, {sw})"
    return None if kh <= VALID_FILTER_HEIGHT_MAX and kh * kw <= VALID_FILTER_PRODUCT_MAX else f"found {kh}x{kw}"


@rule("dilation is 1, ceil_mode is off and padding is not counted in the average (TFLite's pools)")
def _plain_pool(ctx):
    a = ctx["pool"].attrs
    if tuple(a.dilation) != (1, 1) or a.ceil_mode or getattr(a, "count_include_pad", False):
        return f"found dilation {tuple(a.dilation)}, ceil_mode {a.ceil_mode}"
    return None


_POOL_DTYPES = ("int8", "uint8", "int16")   # Regor pools 16-bit tensors too (TFLite's int16 pools: the 8-bit kernels)
AVG_POOL_CHECK = Check((_npu._avg_casts, dtype_rule("input and output", [input_of("cast_in", 0), root], _POOL_DTYPES),
                        layout_rule("pool", "layout", ("NHWC",)), _batch_one(root, "the output"), _avg_window,
                        _plain_pool, clip_range_rule(), _tens_dims), summary="AVERAGE_POOL_2D")
MAX_POOL_CHECK = Check((dtype_rule("input and output", [input_of("pool", 0), root], _POOL_DTYPES),
                        layout_rule("pool", "layout", ("NHWC",)), _batch_one(root, "the output"), _max_window,
                        _plain_pool, clip_range_rule(), _tens_dims), summary="MAX_POOL_2D")


@rule(f"it reduces height and width (axes 1 and 2) of a 4-D tensor (Vela also reduces other axes; byoc's "
      f"simulator lowers only this one); the reduced area is at most 2^24 (int8) / 2^23 (uint8) / 2^16 (int16) and "
      f"the width "
      f"at most {MEAN_AXIS_MAX}")
def _mean_axes(ctx):
    t, problem = hw_mean_input(ctx)
    if problem:
        return problem
    if t.shape[2] > MEAN_AXIS_MAX or t.shape[1] * t.shape[2] > MEAN_PRODUCT_MAX.get(t.dtype, 2 ** 16):
        return f"found {t.shape[1]}x{t.shape[2]} {t.dtype}"
    return None


MEAN_CHECK = Check((_mean_axes, dtype_rule("input and output", [input_of("core", 0), root], _POOL_DTYPES),
                    _batch_one(root, "the output", vela=True),
                     per_tensor_rule("scales and zero points", [input_of("core", i) for i in range(1, 5)]),
                    clip_range_rule()), summary="MEAN")


@rule("inputs and output dtype is int8 or uint8, or all int16 with zero points 0 (LiteRT's general int16 path; "
      "its power-of-two-scale ADD path, rounding TFLITE_POT, stays on the CPU)")
def _binary_dtypes(ctx):
    core = ctx["core"]
    ts = [ttype(core.args[0]), ttype(core.args[1]), ttype(ctx.root)]
    if any(t is None for t in ts):
        return "found a non-tensor"
    dts = [t.dtype for t in ts]
    if all(d in QUANT_DTYPES for d in dts):
        return None
    if dts != ["int16"] * 3:
        return f"found {', '.join(dts)}"
    zps = [const_value(core.args[i]) for i in (3, 5, 7)]
    if any(z is None or np.any(z != 0) for z in zps):
        return "found int16 with a nonzero zero point"
    return None


@rule("one input has the output's shape and the other has it too or broadcasts along height, width and/or "
      "channels (the NPU's IFM2 broadcast: a per-channel vector (1,1,1,C), a scalar, ...), in either order; or both "
      "broadcast so (TFLite rounding), as (48,48,1) − (1,17): Vela materialises the first at the output's shape "
      "with an extra elementwise operation, then broadcasts the second")
def _ethos_broadcast_shapes(ctx):
    from npu_sim.lower_vela_ops import both_broadcast_flags
    why = _npu._broadcast_shapes.test(ctx)
    if why is None:
        return None
    core = ctx["core"]
    ts = [ttype(core.args[0]), ttype(core.args[1]), ttype(ctx.root)]
    if any(t is None for t in ts) or core.attrs.rounding != "TFLITE":
        return why
    both = both_broadcast_flags(*(tuple(t.shape) for t in ts))
    return f"{why}; both broadcasting: {both}" if isinstance(both, str) else (None if both else why)


def _binary_check(what: str) -> Check:
    # no batch rule: Regor checks "Batch must be 1" on MEAN only; an elementwise op's batches stack along the rows
    return Check((_binary_dtypes,
                  _npu._tflite_arithmetic, _ethos_broadcast_shapes,
                  per_tensor_rule("scales and zero points", [input_of("core", i) for i in range(2, 8)]),
                  clip_range_rule(), _tens_dims), summary=what)


def _lut(what: str) -> Check:
    c = _npu._lut_check(what)
    return Check(c.rules + (_tens_dims,), summary=c.summary)


def _eight_bit_or_int16(ctx) -> str | None:
    """None when the core op's input and the output are both int8 or both uint8, "int16" when both are int16
    (the caller's int16 conditions follow), else the failure."""
    a, b = ttype(ctx["core"].args[0]), ttype(ctx.root)
    if a is None or b is None:
        return "found a non-tensor"
    if a.dtype == b.dtype and a.dtype in QUANT_DTYPES:
        return None
    if (a.dtype, b.dtype) != ("int16", "int16"):
        return f"found {a.dtype}, {b.dtype}"
    return "int16"


@rule("input and output are both int8 or both uint8, or both int16 with rounding TFLM (TFLite Micro's "
      "interpolated int16 kernel: a power-of-two input scale, a Q0.15 output, zero points 0, no clip; Vela's LSTM "
      "gate and cell activations)")
def _gate_activation_dtypes(ctx):
    core = ctx["core"]
    pair = _eight_bit_or_int16(ctx)
    if pair != "int16":
        return pair
    if core.attrs.rounding != "TFLM" or ctx.get("clip") is not None:
        return f"found int16 with rounding {core.attrs.rounding!r}" + (" and a clip" if ctx.get("clip") else "")
    from byoc.errors import ByocError
    from byoc.ops.qnn_activation import int16_gate_scale_log2
    values = [const_value(core.args[i]) for i in range(1, 5)]
    if any(v is None for v in values):
        return "found non-constant quantization parameters"
    try:
        int16_gate_scale_log2(core.op.name.split(".")[-1], "TFLM", *values)
    except ByocError as e:
        return e.message
    return None


@rule("both operands are int16 tensors of the output's shape, cast to int32 and multiplied; the requantize has "
      "rounding TFLITE, one input scale and zero point 0, and an int16 or int8 output (Vela's LSTM gate products: a "
      "MUL with explicit scaling)")
def _int16_product(ctx):
    rq, mul = ctx["rq"], ctx["mul"]
    ts = [ttype(mul.args[0].args[0]), ttype(mul.args[1].args[0]), ttype(ctx.root)]
    if any(t is None for t in ts):
        return "found a non-tensor"
    if (ts[0].dtype, ts[1].dtype) != ("int16", "int16") or ts[2].dtype not in ("int8", "int16"):
        return f"found {ts[0].dtype} × {ts[1].dtype} → {ts[2].dtype}"
    if not tuple(ts[0].shape) == tuple(ts[1].shape) == tuple(ts[2].shape):
        return f"found shapes {tuple(ts[0].shape)}, {tuple(ts[1].shape)} → {tuple(ts[2].shape)}"
    if any(c.attrs.dtype != "int32" for c in mul.args):
        return "found a cast to " + ", ".join(c.attrs.dtype for c in mul.args)
    if rq.attrs.rounding != "TFLITE":
        return f"found rounding {rq.attrs.rounding!r}"
    s_in, zp_in = const_value(rq.args[1]), const_value(rq.args[2])
    if s_in is None or s_in.size != 1 or zp_in is None or np.any(zp_in != 0):
        return "found a per-channel or non-zero input quantization"
    return None


INT16_MUL_CHECK = Check((_int16_product, per_tensor_rule("output zero point", [input_of("rq", 4)]),
                         clip_range_rule(), _tens_dims), summary="MUL of two int16 tensors (an LSTM gate product)")


@rule("input and output are both int8 or both uint8 (a lookup table), or both int16 with TFLite's rounding and "
      "alpha ≥ 0 (Vela's 16-bit LeakyReLU: its LRELU elementwise operation when the input and output scales are "
      "equal, else MUL by alpha, the identity MUL and MAXIMUM)")
def _leaky_relu_dtypes(ctx):
    core = ctx["core"]
    pair = _eight_bit_or_int16(ctx)
    if pair != "int16":
        return pair
    if core.attrs.rounding != "TFLITE":
        return f"found int16 with rounding {core.attrs.rounding!r}"
    if float(core.attrs.alpha) < 0:
        return f"found int16 with alpha {float(core.attrs.alpha)}"
    return None


LEAKY_RELU_CHECK = Check((_leaky_relu_dtypes,) + _npu._lut_check("LEAKY_RELU").rules[2:] + (_tens_dims,),
                         summary="LEAKY_RELU (8-bit by lookup table, int16 as TFLite's two-multiplier formula)")


@rule("input and output are both int8, or both int16 with no clip (Vela's RSQRT: an 8-bit or an interpolating "
      "16-bit lookup table)")
def _rsqrt_dtypes(ctx):
    a, b = ttype(ctx["core"].args[0]), ttype(ctx.root)
    pair = (a.dtype if a else None, b.dtype if b else None)
    if pair == ("int8", "int8") or (pair == ("int16", "int16") and ctx.get("clip") is None):
        return None
    return f"found {pair[0]} → {pair[1]}" + (" with a clip" if ctx.get("clip") is not None else "")


RSQRT_CHECK = Check((_rsqrt_dtypes,
                     per_tensor_rule("scales and zero points", [input_of("core", i) for i in range(1, 5)]),
                     clip_range_rule(), _tens_dims),
                    summary="RSQRT by lookup table (LiteRT's fixed-point 1/√(q − zp))")


def _gate_activation(what: str) -> Check:
    """LOGISTIC / TANH: the 8-bit table rules, or the int16 gate activation of an LSTM."""
    c = _npu._lut_check(what)
    return Check((_gate_activation_dtypes,) + c.rules[2:] + (_tens_dims,), summary=c.summary)


# -- SOFTMAX, TRANSPOSE, RESIZE (Vela's Regor core lowers each to a sequence of NPU operations) -----------------
# Vela 5's constraints are its Regor core's (``regor.tflite_operator_constraints("EthosU55")``, what
# ``vela --supported-ops-report`` prints), not the legacy Python tables.

SOFTMAX_WH_MAX = 65536
TRANSPOSE_AXIS_MAX = 2 ** 16
RESIZE_FACTORS = (2, 4, 8)


def _softmax_types(ctx):
    """(input, output) types of a softmax composite: the one place that reads its operands (tvmforms' softmax
    form changes only this)."""
    return ttype(ctx["core"].args[0]), ttype(ctx.root)


@rule("input and output are both int8 or both uint8, or int8 → int16 (TFLite's 8-bit softmax written to 16 bits, "
      "as Vela runs it; Vela also runs int16 → int16 softmax, which byoc's importer does not produce)")
def _softmax_dtypes(ctx):
    ti, to = _softmax_types(ctx)
    pair = (ti.dtype if ti else None, to.dtype if to else None)
    if pair not in (("int8", "int8"), ("uint8", "uint8"), ("int8", "int16")):
        return f"found {pair[0]} → {pair[1]}"
    return None


@rule(f"the product of the input's width and height (its 4-D view, leading 1s added) is less than "
      f"{SOFTMAX_WH_MAX} (Vela's softmax rule)")
def _softmax_wh(ctx):
    ti, _ = _softmax_types(ctx)
    if ti is None:
        return None
    four = (1,) * max(0, 4 - ti.ndim) + tuple(ti.shape)
    return None if four[1] * four[2] < SOFTMAX_WH_MAX else f"found {four[1]}x{four[2]}"


@rule("it runs along the last axis with TFLite's fixed-point arithmetic, on a tensor of rank 1 to 4 (TFLite's "
      "SOFTMAX; byoc's simulator)")
def _softmax_axis(ctx):
    core = ctx["core"]
    ti, _ = _softmax_types(ctx)
    if ti is None or not 1 <= ti.ndim <= 4:
        return f"found {tuple(ti.shape) if ti else None}"
    if core.attrs.axis % ti.ndim != ti.ndim - 1 or core.attrs.rounding != "TFLITE":
        return f"found axis {core.attrs.axis}, rounding {core.attrs.rounding}"
    return None


SOFTMAX_CHECK = Check((_softmax_dtypes, _softmax_wh, _softmax_axis,
                       per_tensor_rule("scales and zero points", [input_of("core", i) for i in range(1, 5)])),
                      summary="SOFTMAX, as Vela's 30-operation sequence (exp table, sums, reciprocal)")


def _move_dtypes(what: str) -> Rule:
    return _reworded(dtype_rule("input and output", [lambda ctx: ctx.root.args[0], root],
                                allowed=("int8", "uint8", "int16")),
                     f"input and output dtype is int8, uint8 or int16 (Vela's 8/16-bit {what}; it also "
                     f"runs int32 ones, which byoc's simulator does not, so they stay on the CPU)")


def _perm(ctx) -> tuple[tuple[int, ...], tuple[int, ...]]:
    t = ttype(ctx.root.args[0])
    shape = tuple(t.shape) if t is not None else ()
    axes = ctx.root.attrs.axes
    rank = len(shape)
    perm = tuple(int(a) % rank for a in axes) if axes is not None else tuple(reversed(range(rank)))
    return shape, perm


@rule(f"the permutation moves height, width and channels only and each is at most {TRANSPOSE_AXIS_MAX} (a 3-D "
      f"tensor, or one whose other axes are 1), or else every product of rank - 2 axes is at most "
      f"{TRANSPOSE_AXIS_MAX} (Vela's transpose rule for 8/16-bit tensors)")
def _transpose_shape(ctx):
    import itertools
    shape, perm = _perm(ctx)
    rank = len(shape)
    if perm == tuple(range(rank)) or rank <= 2:   # rank 2: no rank - 2 axes to multiply
        return None
    hwc = shape[-3:]
    if rank == 3 or (all(d == 1 for d in shape[:-3]) and tuple(perm[:-3]) == tuple(range(rank - 3))):
        return None if all(d <= TRANSPOSE_AXIS_MAX for d in hwc) else f"found {shape}"
    worst = max(int(np.prod(c)) for c in itertools.combinations(shape, rank - 2))
    return None if worst <= TRANSPOSE_AXIS_MAX else f"found {shape} (a product of {rank - 2} axes is {worst})"


@rule("at most three of its axes are longer than 1 (byoc's simulator permutes a height×width×channels view)")
def _transpose_view(ctx):
    from npu_sim.lower_vela_ops import transpose_view
    shape, perm = _perm(ctx)
    v = transpose_view(shape, perm)
    return v if isinstance(v, str) else None


TRANSPOSE_CHECK = Check((_move_dtypes("transposes"), _transpose_shape, _transpose_view),
                        summary="TRANSPOSE, as Vela's 1x1 average pools with swapped output strides")


def _resize_factors(ih: int, iw: int, oh: int, ow: int, align: bool) -> tuple[float, float]:
    if align:
        return ((oh - 1) / (ih - 1) if ih != 1 else 1.0), ((ow - 1) / (iw - 1) if iw != 1 else 1.0)
    return oh / ih, ow / iw


@rule(f"unless the input is 1x1 or the output has the input's shape: the height and width factors (output / "
      f"input; (output - 1) / (input - 1) with align_corners) are equal and one of "
      f"{'/'.join(f'{f}x' for f in RESIZE_FACTORS)}, or the output height or width is 1 with factor 1 there; "
      f"bilinear with half_pixel_centers: 2x (Vela's resize rules)")
def _resize_scale(ctx):
    ti, to = ttype(ctx.root.args[0]), ttype(ctx.root)
    if ti is None or to is None or ti.ndim != 4:
        return None
    a = ctx.root.attrs
    _, ih, iw, _ = ti.shape
    _, oh, ow, _ = to.shape
    if (ih, iw) == (1, 1) or tuple(ti.shape) == tuple(to.shape):
        return None
    fh, fw = _resize_factors(ih, iw, oh, ow, a.coordinate_transformation_mode == "align_corners")
    allowed = (2.0,) if a.method == "linear" and a.coordinate_transformation_mode == "half_pixel" else \
        tuple(float(f) for f in RESIZE_FACTORS)
    if fh != fw:
        ok = (oh == 1 and fh == 1 and fw in allowed) or (ow == 1 and fw == 1 and fh in allowed)
    else:
        ok = fh in allowed
    return None if ok else f"found {ih}x{iw} → {oh}x{ow} (factors {fh:g}, {fw:g})"


@rule("it is an NHWC RESIZE_NEAREST_NEIGHBOR or RESIZE_BILINEAR of one image (batch 1) with TFLite's coordinate "
      "modes (byoc's simulator)")
def _resize_form(ctx):
    from npu_sim.lower_vela_ops import resize_mode
    ti = ttype(ctx.root.args[0])
    if ti is None or ti.ndim != 4 or ti.shape[0] != 1:
        return f"found {tuple(ti.shape) if ti else None}"
    code = resize_mode(ctx.root.attrs)
    return code if isinstance(code, str) else None


RESIZE_CHECK = Check((_move_dtypes("resizes"), _resize_form, _resize_scale),
                     summary="RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR, as Vela's upscaling average pools")


# -- TRANSPOSE_CONV (npu_sim/lower_vela_ops.py: a stride-1 convolution over the upscaled IFM, as Vela runs it) -------

@rule("input and output dtype is int8 or uint8, or both int16 (int16x8: int8 weights, zero points 0, an int64 "
      "accumulator and bias, TFLite's int64 requantization; Vela's 16-bit TRANSPOSE_CONV)")
def _tconv_dtypes(ctx):
    ti, to = ttype(ctx["data"]), ttype(ctx.root)
    if ti is None or to is None:
        return "found a non-tensor"
    if ti.dtype in ("int8", "uint8") and to.dtype in ("int8", "uint8"):
        return None
    if not _is_int16x8(ctx):
        return f"found {ti.dtype} → {to.dtype}"
    return _io_dtypes.test(ctx)


def _vela_tconv_stride(strides, in_hw, kernel_hw) -> bool:
    """Vela's TRANSPOSE_CONV stride rule on (height, width) strides: 1x1 or 2x2; 2 along one axis only when the
    input and kernel are 1 along the other."""
    (ih, iw), (kh, kw) = in_hw, kernel_hw
    s = tuple(strides)
    return s in ((1, 1), (2, 2)) or (s == (1, 2) and ih == kh == 1) or (s == (2, 1) and iw == kw == 1)


def _tconv_geometry(ctx):
    ti, to = ttype(ctx["data"]), ttype(ctx.root)
    w = const_value(ctx["conv"].args[1])
    if ti is None or to is None or ti.ndim != 4 or to.ndim != 4 or w is None or w.ndim != 4:
        return None
    return ti.shape[1:3], to.shape[1:3], w.shape[1:3], tuple(ctx["conv"].attrs.strides)


@rule("strides (height, width) are (1, 1) or (2, 2), or (1, 2) when the input height and kernel height are 1, or "
      "(2, 1) when the input width and kernel width are 1 (Vela's TRANSPOSE_CONV stride rule)")
def _tconv_stride(ctx):
    g = _tconv_geometry(ctx)
    if g is None:
        return None
    (ih, iw), _, (kh, kw), s = g
    return None if _vela_tconv_stride(s, (ih, iw), (kh, kw)) else \
        f"found strides {s} with input {ih}x{iw}, kernel {kh}x{kw}"


@rule("the output is the input times the stride (SAME padding) or the input times the stride plus (kernel - stride) "
      "(VALID), in height and width (Vela's TRANSPOSE_CONV shape rule)")
def _tconv_shape(ctx):
    g = _tconv_geometry(ctx)
    if g is None:
        return None
    (ih, iw), (oh, ow), (kh, kw), (sh, sw) = g
    same = (oh, ow) == (ih * sh, iw * sw)
    valid = (oh, ow) == (ih * sh + kh - sh, iw * sw + kw - sw) and not any(ctx["conv"].attrs.padding)
    return None if same or valid else f"found input {ih}x{iw} → output {oh}x{ow} (strides {(sh, sw)}, kernel {kh}x{kw})"


@rule("NHWC data, OHWI kernel, no dilation or groups, padding before at most kernel - 1 (TFLite's TRANSPOSE_CONV; "
      "byoc's simulator)")
def _tconv_form(ctx):
    from npu_sim.lower_vela_ops import transpose_conv_form
    g = _tconv_geometry(ctx)
    if g is None:
        return "found a non-4-D input, output or kernel"
    form = transpose_conv_form(g[0], g[1], g[2], ctx["conv"].attrs)
    return form if isinstance(form, str) else None


TRANSPOSE_CONV_CHECK = Check((_tconv_dtypes, _batch_one(capture("data"), "the input"), _tconv_form, _tconv_stride,
                              _tconv_shape, _weights_8bit, _weights_limit, _bias, _QZP, fixed_point_rule("rq"),
                              clip_range_rule(), _tens_dims),
                             summary="TRANSPOSE_CONV, as Vela's convolution over the zero-inserted (upscaled) IFM")


# -- PACK (npu_sim/lower_vela_ops.py: a concatenation of the inputs reshaped with the new axis, as Vela runs it) ---

@rule("the inputs are int8, uint8 or int16 (Vela's 8/16-bit concatenation) and the output has rank 1 to 4, each "
      "input a block of its height×width×channels view (Vela's PACK: CONCATENATION of the reshaped inputs)")
def _stack_form(ctx):
    from npu_sim.lower_vela_ops import stack_origins
    core = ctx["core"]
    fields = getattr(core.args[0], "fields", None)
    t = ttype(fields[0]) if fields else None
    if t is None:
        return "found a non-tensor input"
    if t.dtype not in ("int8", "uint8", "int16"):
        return f"found {t.dtype}"
    form = stack_origins(tuple(t.shape), len(fields), core.attrs.axis)
    return form if isinstance(form, str) else None


STACK_CHECK = Check((_stack_form,), summary="PACK, as Vela's concatenation of the reshaped inputs")


# -- ARG_MAX; unquantized int32 ADD/SUB/MUL and MAXIMUM/MINIMUM (npu_sim/lower_vela_ops.py) --------------------

@rule("input dtype is int8 or uint8 and the indices int32 or int64 (Vela shifts 8-bit values 7 bits left into int16 "
      "to append the index; 64-bit indices are Vela's one 64-bit feature map)")
def _argmax_dtypes(ctx):
    ti, to = ttype(ctx["core"].args[0]), ttype(ctx.root)
    if ti is None or to is None or ti.dtype not in ("int8", "uint8") or to.dtype not in ("int32", "int64"):
        return f"found {ti.dtype if ti else None} → {to.dtype if to else None}"
    return None


@rule("it runs along the depth (last) axis, returning the first index of equal largest values, without keepdims "
      "(Vela's ARG_MAX axis rule)")
def _argmax_axis(ctx):
    a, ti = ctx["core"].attrs, ttype(ctx["core"].args[0])
    rank = ti.ndim if ti is not None else 0
    axes = tuple(int(x) % rank for x in a.axis) if a.axis is not None and rank else None
    if axes != (rank - 1,) or a.exclude or a.keepdims or a.select_last_index:
        return f"found axis {a.axis} of {tuple(ti.shape) if ti else None}"
    return None


@rule("the input depth (its last axis) is at most 127 (Vela's ARG_MAX depth rule: the index fits the 7 bits below "
      "the shifted value)")
def _argmax_depth(ctx):
    from npu_sim.lower_vela_ops import ARGMAX_DEPTH_MAX
    ti = ttype(ctx["core"].args[0])
    return None if ti is None or (ti.ndim and ti.shape[-1] <= ARGMAX_DEPTH_MAX) else \
        f"found depth {ti.shape[-1] if ti.ndim else None}"


@rule("a cast after it widens the int32 indices to int64 (TFLite's int64 ARG_MAX output)")
def _argmax_cast(ctx):
    cast = ctx.get("cast")
    if cast is None:
        return None
    t = ttype(cast)
    return None if t is not None and t.dtype == "int64" else f"found a cast to {t.dtype if t else None}"


ARGMAX_CHECK = Check((_argmax_dtypes, _argmax_axis, _argmax_depth, _argmax_cast,
                      _batch_one(capture("data"), "the input"), _tens_dims),
                     summary="ARG_MAX, as Vela's depthwise convolution, max pools, LUT and casts")


def _on_root_core(r: Rule) -> Rule:
    """A composite rule reading ``ctx["core"]`` applied to a bare op (the op is its own core)."""
    from byoc.relay.dataflow_pattern.check import MatchContext
    return Rule(r.description, lambda ctx: r.test(MatchContext(ctx.root, {**ctx.captures, "core": ctx.root})),
                r.guard)


def _raw_dtypes(op: str) -> Rule:
    from npu_sim.lower_vela_ops import RAW_DTYPES
    allowed = RAW_DTYPES[op]
    if op in ("maximum", "minimum"):
        what = (f"inputs and output are all {' or all '.join(allowed)} (Vela: no 32-bit MAXIMUM/MINIMUM; byoc's IR "
                f"compares raw values and keeps no quantization, so Vela's matching-quantization rule is not checked: "
                f"TFLite's converter writes these ops with matching parameters)")
    else:
        what = ("inputs and output are int32 (TFLite's unquantized int32 arithmetic: Vela's int32 elementwise ops, "
                "zero points 0; the results wrap as TFLite's int32 kernels)")

    @rule(what)
    def test(ctx):
        ts = [ttype(ctx.root.args[0]), ttype(ctx.root.args[1]), ttype(ctx.root)]
        dts = [t.dtype if t is not None else None for t in ts]
        return None if len(set(dts)) == 1 and dts[0] in allowed else f"found {', '.join(map(str, dts))}"
    return test


def _raw_check(op: str, what: str) -> Check:
    return Check((_raw_dtypes(op), _on_root_core(_npu._broadcast_shapes), _tens_dims),
                 summary=what)


def _qbinary_check(op: str, dtypes: tuple[str, ...], what: str, summary: str) -> Check:
    @rule(f"inputs and output are all {' or all '.join(dtypes)} ({what})")
    def types(ctx):
        ts = [ttype(ctx.root.args[0]), ttype(ctx.root.args[1]), ttype(ctx.root)]
        dts = [t.dtype if t is not None else None for t in ts]
        return None if len(set(dts)) == 1 and dts[0] in dtypes else f"found {', '.join(map(str, dts))}"

    @rule("alpha broadcasts over the input (the NPU's IFM2 broadcast; an input smaller than alpha stays on the CPU)")
    def alpha_over_input(ctx):
        ti, to = ttype(ctx.root.args[0]), ttype(ctx.root)
        if ti is None or to is None:
            return None
        padded = (1,) * (to.ndim - ti.ndim) + tuple(ti.shape)
        return None if padded == tuple(to.shape) else f"found input {tuple(ti.shape)} → output {tuple(to.shape)}"

    rules = (types, _on_root_core(_npu._broadcast_shapes)) + ((alpha_over_input,) if op == "qnn.prelu" else ()) + (
        per_tensor_rule("scales and zero points", [lambda ctx, i=i: ctx.root.args[i] for i in range(2, 8)]),
        _tens_dims)
    return Check(rules, summary=summary)


PRELU_CHECK = _qbinary_check("qnn.prelu", ("int8", "uint8"), "Vela: no 32-bit PRELU",
                             "PRELU, as Vela's elementwise sequence (the negative part times alpha, the positive part "
                             "rescaled, their sum)")
SQUARED_DIFFERENCE_CHECK = _qbinary_check("qnn.squared_difference", ("int8",),
                                          "Vela: no 32-bit SQUARED_DIFFERENCE; byoc's importer reads int8 ones",
                                          "SQUARED_DIFFERENCE, as Vela's rescales, subtraction and multiplication")


_ETHOS_MOVE_CHECK = Check((_reworded(dtype_rule("input and output", [lambda ctx: ctx.root.args[0], root],
                                                allowed=("int8", "uint8", "int16", "int32")),
                                     "input and output dtype is int8, uint8, int16 or int32 (Vela's reshapes of "
                                     "16- and 32-bit tensors included)"),) + _npu._MOVE_CHECK.rules[1:],
                          summary=_npu._MOVE_CHECK.summary)
# Unit-stride slices as copies of 8- or 16-bit values (an unrolled LSTM's time steps are int16 slices).
_ETHOS_SLICE_CHECK = Check((dtype_rule("input", [lambda ctx: ctx.root.args[0]], allowed=("int8", "uint8", "int16")),
                            ) + _npu.SLICE_CHECK.rules[1:], summary=_npu.SLICE_CHECK.summary)
@rule("output dtype is int8 or uint8, or int16 from an int16 input (TFLite's int16 → int16 QUANTIZE, which Vela "
      "runs too)")
def _requant_out_dtype(ctx):
    ti, to = ttype(ctx["rq"].args[0]), ttype(ctx.root)
    if to is not None and (to.dtype in QUANT_DTYPES or (to.dtype == "int16" and ti is not None
                                                         and ti.dtype == "int16")):
        return None
    return f"found {ti.dtype if ti else None} → {to.dtype if to else None}"


def _swap_rule(check: Check, description: str, new: Rule) -> tuple[Rule, ...]:
    """``check``'s rules with the one described ``description`` replaced by ``new``."""
    assert any(r.description == description for r in check.rules), description
    return tuple(new if r.description == description else r for r in check.rules)


_ETHOS_REQUANTIZE_CHECK = Check(_swap_rule(_npu.REQUANTIZE_CHECK, "output dtype is int8 or uint8", _requant_out_dtype)
                                + (_tens_dims,), summary="QUANTIZE / requantization")


@rule("the inputs and output are int8 or uint8, or all int16 (Vela's 16-bit concatenation; TFLite copies int16 "
      "values, and byoc's importer writes a qnn.concatenate only for equal quantization)")
def _concat_dtypes(ctx):
    core = ctx["core"]
    dts = [t.dtype if t else None for t in (ttype(f) for f in core.args[0].fields)] + [
        ttype(ctx.root).dtype if ttype(ctx.root) else None]
    if all(d in QUANT_DTYPES for d in dts) or set(dts) == {"int16"}:
        return None
    return f"found {', '.join(map(str, dts))}"


# SPLIT / SPLIT_V of 8- or 16-bit values (one copy per piece)
_ETHOS_SPLIT_CHECK = Check(_swap_rule(_npu.SPLIT_CHECK, "input dtype is int8 or uint8", _reworded(
    dtype_rule("input", [lambda ctx: ctx.root.args[0]], allowed=("int8", "uint8", "int16")),
    "input dtype is int8, uint8 or int16 (Vela splits 16-bit tensors too)")), summary=_npu.SPLIT_CHECK.summary)
# PAD / PADV2 of 8- or 16-bit values (Regor's PAD: any of its IFM types; int16 PADs in SEANet-style audio models)
_ETHOS_PAD_CHECK = Check((_reworded(dtype_rule("input", [lambda ctx: ctx.root.args[0]],
                                               allowed=("int8", "uint8", "int16")),
                                    "input dtype is int8, uint8 or int16 (Vela pads 16-bit tensors too)"),
                          ) + _npu.PAD_CHECK.rules[1:], summary=_npu.PAD_CHECK.summary)

# An unrolled LSTM's initial hidden / cell state (byoc/frontend/tflite_ops_lstm.py): a zero-filled 8- or 16-bit
# tensor, written by a copy as regor copies the variable state tensor before step 0.
_ZEROS_CHECK = Check((dtype_rule("output", [lambda ctx: ctx.root], allowed=("int8", "int16")),
                      Rule("rank 1 to 4", lambda ctx: None if 1 <= len(ttype(ctx.root).shape) <= 4
                           else f"found rank {len(ttype(ctx.root).shape)}")),
                     summary="zeros (an LSTM's initial state), as a copy")


# -- ONNX's QDQ groups (patterns/npu_qdq.py), where Vela's rules for the TFLite op they stand for allow ----------

_HARD_OPS = {"qnn.dequantize", "multiply", "add", "clip", "qnn.quantize"}


@rule("its float ops are those of ONNX's HardSwish or HardSigmoid (multiply, add, clip between the dequantize "
      "and the quantize), which Vela runs as HARD_SWISH / a lookup-table activation")
def _hard_activation(ctx):
    found = _qdq.group_ops(ctx["core"], ctx["dq"].args[0])
    return None if found <= _HARD_OPS else f"found {', '.join(sorted(found - _HARD_OPS))}"


@rule("the dequantize and quantize parameters give back every value (quantize(dequantize(v)) = v: Vela's RESIZE "
      "keeps its input's quantization)")
def _same_quant(ctx):
    from npu_sim.lower_qdq import requantize_table
    t = ttype(ctx["dq"].args[0])
    if t is None or t.dtype not in QUANT_DTYPES:
        return None
    table = requantize_table(ctx["dq"], ctx["core"], t.dtype, lambda e, what: e.data)
    if isinstance(table, str):
        return table
    info = np.iinfo(t.dtype)
    moved = int(np.count_nonzero(table != np.arange(int(info.min), int(info.max) + 1)))
    return None if moved == 0 else f"found {moved} of 256 values changed"


def _on_resize(r: Rule) -> Rule:
    from byoc.relay.dataflow_pattern.check import MatchContext
    return Rule(r.description, lambda ctx: r.test(MatchContext(ctx["resize"], ctx.captures)), r.guard)


QDQ_ELEMENTWISE_CHECK = Check((*_qdq.QDQ_ELEMENTWISE_CHECK.rules[:2], _hard_activation,
                               *_qdq.QDQ_ELEMENTWISE_CHECK.rules[2:], _tens_dims),
                              summary="HARD_SWISH (ONNX's dequantize → HardSwish → quantize) by lookup table")
QDQ_RESIZE_CHECK = Check((*_qdq.QDQ_RESIZE_CHECK.rules, _same_quant, _on_resize(_resize_scale), _tens_dims),
                         summary="RESIZE_NEAREST_NEIGHBOR (ONNX's dequantize → Resize → quantize) on the integers")
GLOBAL_AVG_POOL_CHECK = Check((_qdq.GLOBAL_AVG_POOL_CHECK.rules[0], dtype_rule("output", [root]),
                               _batch_one(root, "the output", vela=True),
                               per_tensor_rule("requantize scales and zero points",
                                               [input_of("rq", i) for i in range(1, 5)]),
                               fixed_point_rule("rq"), clip_range_rule(), _tens_dims),
                              summary="MEAN over height and width (QLinearGlobalAveragePool), as Vela's depthwise "
                                      "convolution")


@register_pattern_table(TARGET)
def pattern_table() -> list[CompositePattern]:
    def binary(op_name: str):
        return optional_clip(is_op(op_name)(wildcard("lhs"), wildcard("rhs"), *[is_constant() for _ in range(6)])
                             .named("core"))

    cast_in = is_op("cast")(wildcard("data")).named("cast_in")
    avg_pool = optional_clip(is_op("cast")(is_op("nn.avg_pool2d")(cast_in).named("pool")).named("cast_out"))
    max_pool = optional_clip(is_op("nn.max_pool2d")(wildcard("data")).named("pool"))
    concat = optional_clip(is_op("qnn.concatenate")(is_tuple(None), is_tuple(None), is_tuple(None), is_constant(),
                                                     is_constant()).named("core"))
    rq = optional_clip(is_op("qnn.requantize")(wildcard("data"), is_constant(), is_constant(), is_constant(),
                                               is_constant()).named("rq"))
    clip = is_op("clip")(wildcard("data")).named("clip")
    product = is_op("multiply")(is_op("cast")(wildcard("lhs")), is_op("cast")(wildcard("rhs"))).named("mul")
    int16_mul = optional_clip(is_op("qnn.requantize")(product, is_constant(), is_constant(), is_constant(),
                                                      is_constant()).named("rq"))
    argmax = is_op("argmax")(wildcard("data")).named("core")
    stack = is_op("stack")(is_tuple(None)).named("core")
    t = TARGET
    table = [
        CompositePattern(f"{t}.int16_mul", int16_mul, INT16_MUL_CHECK),
        CompositePattern(f"{t}.qnn_conv2d", conv_chain("qnn.conv2d"), CONV_CHECK),
        CompositePattern(f"{t}.qnn_depthwise_conv2d", conv_chain("qnn.conv2d"), DEPTHWISE_CHECK),
        CompositePattern(f"{t}.qnn_dense", conv_chain("qnn.dense", with_pad=False), DENSE_CHECK),
        CompositePattern(f"{t}.qnn_conv2d_transpose", conv_chain("qnn.conv2d_transpose", with_pad=False),
                         TRANSPOSE_CONV_CHECK),
        CompositePattern(f"{t}.qnn_add", binary("qnn.add"), _binary_check("ADD")),
        CompositePattern(f"{t}.qnn_subtract", binary("qnn.subtract"), _binary_check("SUB")),
        CompositePattern(f"{t}.qnn_mul", binary("qnn.mul"), _binary_check("MUL")),
        CompositePattern(f"{t}.qnn_avg_pool2d", avg_pool, AVG_POOL_CHECK),
        CompositePattern(f"{t}.qnn_max_pool2d", max_pool, MAX_POOL_CHECK),
        CompositePattern(f"{t}.qnn_mean", quantized_mean(), on_integer_op(MEAN_CHECK)),
        CompositePattern(f"{t}.stack", stack, STACK_CHECK),
        CompositePattern(f"{t}.qnn_concatenate", concat, Check(
            _swap_rule(_npu.CONCAT_CHECK, "output dtype is int8 or uint8", _concat_dtypes) + (_tens_dims,),
            summary="CONCATENATION")),
        CompositePattern(f"{t}.qnn_sigmoid", quantized_activation("sigmoid", "qnn.sigmoid"),
                         on_integer_op(_gate_activation("LOGISTIC"))),
        CompositePattern(f"{t}.qnn_tanh", quantized_activation("tanh", "qnn.tanh"),
                         on_integer_op(_gate_activation("TANH"))),
        CompositePattern(f"{t}.qnn_hardswish", quantized_activation("hardswish", "qnn.hardswish"),
                         on_integer_op(_lut("HARD_SWISH"))),
        CompositePattern(f"{t}.qnn_leaky_relu", quantized_activation("nn.leaky_relu", "qnn.leaky_relu"),
                         on_integer_op(LEAKY_RELU_CHECK)),
        CompositePattern(f"{t}.qnn_rsqrt", optional_clip(is_op("qnn.rsqrt")(
            wildcard("data"), *[is_constant() for _ in range(4)]).named("core")), RSQRT_CHECK),
        CompositePattern(f"{t}.qnn_global_avg_pool", _qdq.global_avg_pool(), GLOBAL_AVG_POOL_CHECK),
        CompositePattern(f"{t}.qdq_resize", _qdq.qdq_resize(), QDQ_RESIZE_CHECK),
        CompositePattern(f"{t}.qdq_elementwise", _qdq.qdq_elementwise(), QDQ_ELEMENTWISE_CHECK),
        CompositePattern(f"{t}.qnn_requantize", rq, _ETHOS_REQUANTIZE_CHECK),
        CompositePattern(f"{t}.qnn_clip", clip, Check(_npu.CLIP_CHECK.rules + (_tens_dims,),
                                                      summary="RELU / RELU6 / RELU_N1_TO_1")),
        CompositePattern(f"{t}.qnn_softmax", quantized_activation("nn.softmax", "qnn.softmax"),
                         on_integer_op(SOFTMAX_CHECK)),
        CompositePattern(f"{t}.argmax", argmax | is_op("cast")(argmax).named("cast"), ARGMAX_CHECK),
    ]
    return table


ETHOS_U_LOWERING = {
    f"{TARGET}.qnn_conv2d": "conv2d", f"{TARGET}.qnn_depthwise_conv2d": "depthwise_conv2d",
    f"{TARGET}.qnn_dense": "dense", f"{TARGET}.qnn_add": "add",
    f"{TARGET}.qnn_subtract": "subtract", f"{TARGET}.qnn_mul": "mul",
    f"{TARGET}.qnn_avg_pool2d": "avg_pool2d", f"{TARGET}.qnn_max_pool2d": "max_pool2d",
    f"{TARGET}.qnn_mean": "mean", f"{TARGET}.qnn_concatenate": "concatenate", f"{TARGET}.qnn_sigmoid": "sigmoid",
    f"{TARGET}.qnn_tanh": "tanh", f"{TARGET}.qnn_hardswish": "lut", f"{TARGET}.qnn_leaky_relu": "leaky_relu", f"{TARGET}.qnn_rsqrt": "rsqrt",
    f"{TARGET}.qnn_requantize": "requantize", f"{TARGET}.qnn_clip": "clip", f"{TARGET}.qnn_softmax": "softmax",
    f"{TARGET}.qnn_global_avg_pool": "global_avg_pool", f"{TARGET}.qdq_resize": "qdq_resize",
    f"{TARGET}.qdq_elementwise": "qdq_elementwise", f"{TARGET}.int16_mul": "int16_mul",
    f"{TARGET}.argmax": "argmax", f"{TARGET}.qnn_conv2d_transpose": "conv2d_transpose", f"{TARGET}.stack": "stack",
}

# Memory-only ops and copies: the simulator runs them as aliases / copies (npu_sim/lower_move.py).
for _op, _check in (("reshape", _ETHOS_MOVE_CHECK), ("squeeze", _ETHOS_MOVE_CHECK),
                    ("expand_dims", _ETHOS_MOVE_CHECK),
                    ("strided_slice", _ETHOS_SLICE_CHECK), ("split", _ETHOS_SPLIT_CHECK), ("nn.pad", _ETHOS_PAD_CHECK),
                    ("nn.depth_to_space", _npu.DEPTH_TO_SPACE_CHECK), ("transpose", TRANSPOSE_CHECK),
                    ("image.resize2d", RESIZE_CHECK),
                    ("maximum", _raw_check("maximum", "MAXIMUM (raw values)")),
                    ("minimum", _raw_check("minimum", "MINIMUM (raw values)")),
                    ("add", _raw_check("add", "ADD of int32 without quantization")),
                    ("subtract", _raw_check("subtract", "SUB of int32 without quantization")),
                    ("multiply", _raw_check("multiply", "MUL of int32 without quantization")),
                    ("qnn.prelu", PRELU_CHECK), ("qnn.squared_difference", SQUARED_DIFFERENCE_CHECK),
                    ("zeros", _ZEROS_CHECK)):
    register_op_predicate(TARGET, _op, _check)

# Vela places these on the NPU; byoc keeps them on the CPU and says why.
for _op, _why in VELA_DIFFERENCES.items():
    register_op_predicate(TARGET, _op, Check((Rule(_why, lambda ctx: f"found {ctx.root.op.name}"),),
                                             summary="kept on the CPU (differs from Vela)"))

def _transpose_conv_stride(ctx):
    """Vela's TRANSPOSE_CONV stride rule (WxH 1x1, 2x2, 2x1 when the IFM and kernel height are 1, 1x2 when the IFM
    and kernel width are 1): a stride it rejects keeps the op on the CPU in Vela too; one it accepts is a
    difference (byoc's NPU lowering takes 8-bit and int16x8 TRANSPOSE_CONV, in the composite)."""
    call = ctx.root
    a = call.attrs
    sh, sw = a.strides
    d = dict(zip(a.data_layout, ttype(call.args[0]).shape))
    kh, kw = a.kernel_size if a.kernel_size is not None else (0, 0)
    if _vela_tconv_stride((sh, sw), (d["H"], d["W"]), (kh, kw)):
        return f"stride {sw}x{sh}, which Vela runs on the NPU: differs from Vela"
    return f"stride {sw}x{sh} with IFM height {d['H']} and kernel {kh}x{kw}: on the CPU in Vela too"


register_op_predicate(TARGET, "qnn.conv2d_transpose", Check((Rule(
    "a TRANSPOSE_CONV outside the ethos-u.qnn_conv2d_transpose composite (a form its rules refuse) stays "
    "on the CPU (Vela runs strides WxH 1x1 and 2x2, 2x1 / 1x2 only for a 1-high / 1-wide IFM and kernel)",
    _transpose_conv_stride),), summary="TRANSPOSE_CONV"))

for _op, _why in VELA_CPU_OPS.items():
    register_op_predicate(TARGET, _op, Check((Rule(_why, lambda ctx: f"found {ctx.root.op.name}"),),
                                             summary="kept on the CPU (as in Vela)"))


set_preferred_semantics(TARGET, PREFERRED_SEMANTICS)
set_vendor_placement(TARGET, "Vela")   # Vela runs every op it supports, wherever it stands


def _register_codegen() -> None:
    from runtime.npu_codegen import register_simulator_codegen
    register_simulator_codegen(TARGET, ETHOS_U_LOWERING, npu_config=ETHOS_U_PRESET, builtin=True)


_register_codegen()
