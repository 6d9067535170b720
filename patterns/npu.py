"""The ``npu`` pattern table: an Ethos-N-like int8 NPU (see ../shared/docs/npu-model.md §2.3).

Composite names and bodies follow docs/architecture.md, so ``npu_sim`` can lower every partition. Each check is
a list of rules that carry their own sentence; ``patterns.describe_rules("npu")`` prints them.
Order = priority: multi-op chains first, the single requantize and clip last.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from byoc.errors import ByocError
from byoc.ir.expr import Call, Tuple
from byoc.ir.types import TupleType
from byoc.ops.kernels import kernel_hwio_shape
from byoc.ops.transform_ops import strided_slice_indices
from byoc.relay.dataflow_pattern import is_constant, is_op, is_tuple, wildcard
from byoc.relay.dataflow_pattern.check import Check, MatchContext, Rule, rule

from .common import (batch_one_rule, capture, clip_range_rule, const_value, conv_chain, dtype_rule, fixed_point_rule,
                     hw_mean_input, input_of, layout_rule, not_a_chain_end, on_integer_op, optional_clip,
                     per_tensor_rule, quantized_activation, quantized_mean, root, ttype)
from . import npu_qdq
from .registry import CompositePattern, register_op_predicate, register_pattern_table, set_desired_layouts

__all__ = ["pattern_table", "KERNEL_SIZES", "MAX_PAD", "MAX_CHANNELS"]

KERNEL_SIZES = (1, 2, 3, 5, 7, 9)
MAX_PAD = 7
MAX_CHANNELS = 4096
MAX_POOL = 9
MAX_AVG_POOL = 8


# -- convolution family ----------------------------------------------------------------------------------

def _cin(ctx: MatchContext) -> int | None:
    t = ttype(ctx["data"]) if ctx.get("data") is not None else None
    return t.shape[3] if t is not None and t.ndim == 4 and ctx["conv"].attrs.data_layout == "NHWC" else None


@rule("groups is 1 (an ordinary convolution)", guard=True)
def _ordinary(ctx):
    g = ctx["conv"].attrs.groups
    return None if g == 1 else f"found groups={g}"


@rule("groups equals the input channels (a depthwise convolution)", guard=True)
def _depthwise(ctx):
    g, cin = ctx["conv"].attrs.groups, _cin(ctx)
    return None if cin is not None and g == cin and g > 1 else f"found groups={g} with {cin} input channels"


def _kernel_hw(ctx) -> tuple[int, int]:
    w = const_value(ctx["conv"].args[1])
    layout = ctx["conv"].attrs.kernel_layout
    return (w.shape[layout.index("H")], w.shape[layout.index("W")]) if w is not None else (0, 0)


@rule(f"kernel height and width are each one of {', '.join(map(str, KERNEL_SIZES))}")
def _kernel_sizes(ctx):
    kh, kw = _kernel_hw(ctx)
    return None if kh in KERNEL_SIZES and kw in KERNEL_SIZES else f"found {kh}x{kw}"


@rule("strides are 1 or 2, equal in height and width, and 1 for kernels larger than 7")
def _strides(ctx):
    sh, sw = ctx["conv"].attrs.strides
    kh, kw = _kernel_hw(ctx)
    if sh != sw or sh not in (1, 2) or (max(kh, kw) > 7 and sh != 1):
        return f"found strides ({sh}, {sw}) with a {kh}x{kw} kernel"
    return None


@rule("dilation is 1")
def _dilation(ctx):
    d = tuple(ctx["conv"].attrs.dilation)
    return None if d == (1, 1) else f"found {d}"


@rule(f"padding is at most {MAX_PAD} per side; an nn.pad pads only height and width, with the input zero point")
def _padding(ctx):
    conv, pad = ctx["conv"], ctx.get("pad")
    total = list(conv.attrs.padding)
    if pad is not None:
        pw = [tuple(p) for p in pad.attrs.pad_width]
        if len(pw) != 4 or pw[0] != (0, 0) or pw[3] != (0, 0):
            return f"found pad_width {pw}"
        pv, zp = const_value(pad.args[1]), const_value(conv.args[2])
        if pv is None or zp is None or int(pv.reshape(-1)[0]) != int(zp.reshape(-1)[0]):
            return (f"found pad value {None if pv is None else int(pv.reshape(-1)[0])} with input zero point "
                    f"{None if zp is None else int(zp.reshape(-1)[0])}")
        total = [total[0] + pw[1][0], total[1] + pw[2][0], total[2] + pw[1][1], total[3] + pw[2][1]]
    return None if max(total) <= MAX_PAD else f"found (top, left, bottom, right) = {tuple(total)}"


@rule("the depth multiplier is 1 (each output channel reads one input channel)")
def _depth_multiplier(ctx):
    w, cin = const_value(ctx["conv"].args[1]), _cin(ctx)
    if w is None or cin is None:
        return "found an unknown kernel shape"
    a = ctx["conv"].attrs
    oc = kernel_hwio_shape(w.shape, a.kernel_layout, a.groups, cin)[3]
    return None if oc == cin else f"found multiplier {oc // max(cin, 1)} ({cin} → {oc} channels)"


@rule(f"output channels are at most {MAX_CHANNELS}")
def _channels(ctx):
    t = ttype(ctx.root)
    c = t.shape[-1] if t is not None and t.shape else 0
    return None if c <= MAX_CHANNELS else f"found {c}"


def _float_stage() -> tuple[bool, str]:
    """Whether the ``npu`` target's configuration scales in float32 at its output stage (ppu.float_scale)."""
    from runtime.npu_codegen import resolve_npu_config, simulator_codegen_for
    cg = simulator_codegen_for("npu")
    cfg = cg.config() if cg is not None else resolve_npu_config(None)
    return cfg.ppu.float_scale, cfg.name


def _requant_rule(name: str) -> Rule:
    """TFLite's fixed-point requantization, or ONNX's float32 one where the configuration's PPU scales in float32."""
    fixed = fixed_point_rule(name)

    def test(ctx: MatchContext):
        rq = ctx.get(name)
        if rq is None or rq.attrs.rounding != "ONNX":
            return fixed.test(ctx)
        ok, cfg = _float_stage()
        return None if ok else (f"found ONNX's float32 requantization; {cfg!r} has no float32 output stage "
                                "(ppu.float_scale = false)")
    return Rule("the requantization is fixed-point (TFLITE, UPWARD or TONEAREST), or ONNX's float32 one "
                "(rounding ONNX) on a configuration whose output stage scales in float32 (ppu.float_scale)", test)


_QUANT_CONV = per_tensor_rule("the input zero point, kernel zero point and requantize zero points",
                              [input_of("conv", 2), input_of("conv", 3), input_of("rq", 2), input_of("rq", 4)])
_IO_DTYPES = dtype_rule("input and output", [capture("data"), root])
_COMMON_CONV = [_IO_DTYPES, batch_one_rule(capture("data")), _dilation, _padding, _kernel_sizes, _strides,
                _QUANT_CONV, _requant_rule("rq"), _channels, clip_range_rule()]

CONV_CHECK = Check((_ordinary, layout_rule("conv", "data_layout", ("NHWC",)),
                    layout_rule("conv", "kernel_layout", ("HWIO", "OHWI", "OIHW")), *_COMMON_CONV),
                   summary="2-D convolution with bias, requantization and optional activation")
DEPTHWISE_CHECK = Check((_depthwise, layout_rule("conv", "data_layout", ("NHWC",)),
                         layout_rule("conv", "kernel_layout", ("HWOI", "HWIO", "OIHW")), _depth_multiplier, *_COMMON_CONV),
                        summary="depthwise convolution")


@rule("the input is 2-D [rows, K] with one row")
def _dense_input(ctx):
    t = ttype(ctx["data"])
    return None if t is not None and t.ndim == 2 and t.shape[0] == 1 else f"found {t.shape if t else None}"


DENSE_CHECK = Check((_dense_input, _IO_DTYPES,
                     per_tensor_rule("the input zero point, kernel zero point and requantize zero points",
                                     [input_of("conv", 2), input_of("conv", 3), input_of("rq", 2),
                                      input_of("rq", 4)]),
                     _requant_rule("rq"), _channels, clip_range_rule()),
                    summary="fully connected layer")


# -- elementwise ----------------------------------------------------------------------------------------

def _hwc_view(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The NPU's height×width×channels view of a tensor (npu_sim.lower: batch folds into the rows)."""
    if len(shape) == 4:
        return (shape[0] * shape[1], shape[2], shape[3])
    return {3: shape, 2: (shape[0], 1, shape[-1]), 1: (1, 1, shape[-1])}.get(len(shape), (1, 1, 1))


@rule("one input has the output's shape and the other has it too or broadcasts along height, width and/or "
      "channels (the NPU's IFM2 broadcast: a per-channel vector (1,1,1,C), a scalar, ...), in either order")
def _broadcast_shapes(ctx):
    core = ctx["core"]
    ts = [ttype(core.args[0]), ttype(core.args[1]), ttype(ctx.root)]
    if any(t is None for t in ts):
        return f"found {[t.shape if t else None for t in ts]}"
    a, b, out = (tuple(t.shape) for t in ts)
    if len(out) > 4:
        return None  # the rank rule names it
    pa, pb = ((1,) * (len(out) - len(s)) + s for s in (a, b))
    if out not in (pa, pb):
        return f"found {a} and {b} → {out}: neither input has the output's shape (both would be broadcast)"
    small, full = _hwc_view(pb if pa == out else pa), _hwc_view(out)
    if any(s != f and s != 1 for s, f in zip(small, full)):
        return f"found {a} and {b} → {out}: seen as height×width×channels, {small} does not broadcast to {full}"
    return None


@rule("the arithmetic is TFLite's (rounding 'TFLITE'), or ONNX's float32 one (rounding 'ONNX') on same-shape "
      "operands with a float32 output stage (ppu.float_scale)")
def _tflite_arithmetic(ctx):
    mode = ctx["core"].attrs.rounding
    if mode == "TFLITE":
        return None
    if mode != "ONNX":
        return f"found rounding {mode!r}"
    a, b = ttype(ctx["core"].args[0]), ttype(ctx["core"].args[1])
    if a is None or b is None or tuple(a.shape) != tuple(b.shape):
        return f"found rounding 'ONNX' on operands {a.shape if a else None} and {b.shape if b else None}"
    ok, cfg = _float_stage()
    return None if ok else f"found rounding 'ONNX'; {cfg!r} has no float32 output stage (ppu.float_scale = false)"


def _binary_check(what: str) -> Check:
    return Check((dtype_rule("inputs and output", [input_of("core", 0), input_of("core", 1), root]),
                  _tflite_arithmetic, _broadcast_shapes, batch_one_rule(root, "the output"),
                  per_tensor_rule("scales and zero points", [input_of("core", i) for i in range(2, 8)]),
                  clip_range_rule()), summary=what)


# -- pooling and reductions ---------------------------------------------------------------------------------

@rule("the pool runs on int32 between casts (cast to int32 → nn.avg_pool2d → cast back to the input dtype)")
def _avg_casts(ctx):
    c1, c2 = ctx["cast_in"], ctx["cast_out"]
    tin = ttype(c1.args[0])
    if c1.attrs.dtype != "int32" or tin is None or c2.attrs.dtype != tin.dtype:
        return f"found cast to {c1.attrs.dtype} then to {c2.attrs.dtype}"
    return None


def _pool_rules(max_window: int, max_pad: int) -> tuple[Rule, ...]:
    @rule(f"the pool window is at most {max_window}x{max_window}")
    def window(ctx):
        ph, pw = ctx["pool"].attrs.pool_size
        return None if ph <= max_window and pw <= max_window else f"found {ph}x{pw}"

    @rule("strides are 1..3 in each dimension")
    def strides(ctx):
        s = tuple(ctx["pool"].attrs.strides)
        return None if all(1 <= v <= 3 for v in s) else f"found {s}"

    @rule(f"padding is at most {max_pad} per side")
    def padding(ctx):
        p = tuple(ctx["pool"].attrs.padding)
        return None if max(p) <= max_pad else f"found {p}"

    @rule("dilation is 1 and ceil_mode is off")
    def plain(ctx):
        a = ctx["pool"].attrs
        return None if tuple(a.dilation) == (1, 1) and not a.ceil_mode else f"found dilation {a.dilation}, " \
                                                                            f"ceil_mode {a.ceil_mode}"
    return (layout_rule("pool", "layout", ("NHWC",)), window, strides, padding, plain)


@rule("padding is not counted in the average (count_include_pad is false)")
def _no_count_pad(ctx):
    return None if not ctx["pool"].attrs.count_include_pad else "found count_include_pad=True"


AVG_POOL_CHECK = Check((_avg_casts, dtype_rule("input and output", [input_of("cast_in", 0), root]),
                        batch_one_rule(root, "the output"), *_pool_rules(MAX_AVG_POOL, 3), _no_count_pad,
                        clip_range_rule()), summary="average pool")
MAX_POOL_CHECK = Check((dtype_rule("input and output", [input_of("pool", 0), root]),
                        batch_one_rule(root, "the output"), *_pool_rules(MAX_POOL, MAX_PAD), clip_range_rule()),
                       summary="max pool")


@rule("it reduces height and width (axes 1 and 2) of a 4-D NHWC tensor, at most 65536 elements per channel")
def _mean_axes(ctx):
    t, problem = hw_mean_input(ctx)
    if problem:
        return problem
    return None if t.shape[1] * t.shape[2] <= 65536 else f"found {t.shape[1]}x{t.shape[2]}"


MEAN_CHECK = Check((_mean_axes, dtype_rule("input and output", [input_of("core", 0), root]),
                    batch_one_rule(root, "the output"),
                     per_tensor_rule("scales and zero points", [input_of("core", i) for i in range(1, 5)]),
                    clip_range_rule()), summary="mean over height and width (global pool)")


# -- data movement and activations -------------------------------------------------------------------------

@rule("it concatenates along channels, width, or the rows of the NPU's height×width×channels view (batch, or "
      "height when the batch is 1), so each input is one block of the output")
def _concat_axis(ctx):
    core = ctx["core"]
    t = ttype(ctx.root)
    if t is None or not 1 <= t.ndim <= 4:
        return None if t is not None and t.ndim > 4 else f"found output {t.shape if t else None}"  # rank rule
    ins = core.args[0].fields if isinstance(core.args[0], Tuple) else ()
    batches = [ttype(x).shape[0] for x in ins if ttype(x) is not None]
    if t.ndim == 4 and core.attrs.axis % 4 == 1 and any(b != 1 for b in batches):
        return (f"found axis {core.attrs.axis} (height) with batch {max(batches)}: the inputs interleave in the "
                f"NPU's batch×height rows")
    return None


@rule("the quantization parameters are single constant values (per-tensor) and an input whose scale or zero "
      "point differs from the output's is int8/uint8, re-quantized by a 256-entry lookup table of the op's own "
      "rescale (LiteRT's float32 ConcatenationWithScaling)")
def _concat_quant(ctx):
    core = ctx["core"]
    data, scales, zps = core.args[0], core.args[1], core.args[2]
    if not all(isinstance(a, Tuple) for a in (data, scales, zps)):
        return "found non-tuple quantization operands"
    s_out, z_out = const_value(core.args[3]), const_value(core.args[4])
    if s_out is None or z_out is None or s_out.size != 1 or z_out.size != 1:
        return "found a non-constant or per-channel output scale or zero point"
    for i, (x, s, z) in enumerate(zip(data.fields, scales.fields, zps.fields)):
        sv, zv, t = const_value(s), const_value(z), ttype(x)
        if sv is None or zv is None or sv.size != 1 or zv.size != 1:
            return f"found a non-constant or per-channel scale or zero point for input {i}"
        if np.float32(sv.reshape(-1)[0]) == np.float32(s_out.reshape(-1)[0]) and \
                int(zv.reshape(-1)[0]) == int(z_out.reshape(-1)[0]):
            continue
        if t is None or t.dtype not in ("int8", "uint8"):
            return f"input {i} is {t.dtype if t else 'not a tensor'} with scale {float(sv.reshape(-1)[0])} and " \
                   f"zero point {int(zv.reshape(-1)[0])} (a lookup table needs 8-bit values)"
        info = np.iinfo(t.dtype)
        q = np.arange(int(info.min), int(info.max) + 1).astype(t.dtype).reshape((1,) * (t.ndim - 1) + (-1,))
        try:
            y = np.asarray(core.op.op_def.compute([(q,), (sv,), (zv,), s_out, z_out], core.attrs))
        except ByocError as e:
            return f"input {i}'s rescale cannot be tabulated: {e.message}"
        if y.shape != q.shape or y.dtype != q.dtype:
            return f"input {i}'s rescale gave {y.size} {y.dtype} values for the {q.size} {q.dtype} inputs"
    return None


CONCAT_CHECK = Check((_concat_axis, _concat_quant, dtype_rule("output", [root]), clip_range_rule()),
                     summary="concatenation (copies, and lookup tables for inputs with other quantization)")


def _lut_check(what: str) -> Check:
    @rule("input and output have the same dtype")
    def same(ctx):
        a, b = ttype(ctx["core"].args[0]), ttype(ctx.root)
        return None if a is not None and b is not None and a.dtype == b.dtype else "found different dtypes"
    return Check((dtype_rule("input and output", [input_of("core", 0), root]), same,
                  per_tensor_rule("scales and zero points", [input_of("core", i) for i in range(1, 5)]),
                  clip_range_rule()), summary=what + " by lookup table")


@rule("a per-channel requantize runs along the last (channel) axis")
def _rq_axis(ctx):
    rq = ctx["rq"]
    t = ttype(rq.args[0])
    s = const_value(rq.args[1])
    if t is None or s is None or s.size <= 1 or not t.shape:
        return None
    return None if rq.attrs.axis % t.ndim == t.ndim - 1 else f"found axis {rq.attrs.axis}"


REQUANTIZE_CHECK = Check((dtype_rule("input", [input_of("rq", 0)], ("int8", "uint8", "int16", "int32")),
                          dtype_rule("output", [root]), _requant_rule("rq"), _rq_axis, not_a_chain_end("rq"),
                          per_tensor_rule("zero points", [input_of("rq", 2), input_of("rq", 4)]),
                          clip_range_rule()), summary="requantization")
CLIP_CHECK = Check((dtype_rule("input", [input_of("clip", 0)]), clip_range_rule()), summary="clamp (ReLU/ReLU6)")


@rule("every tensor it reads or writes has rank 4 or less (the NPU's tensors are NHWC)")
def _rank4(ctx):
    root_call = ctx.root
    args = root_call.args if isinstance(root_call, Call) else ()
    for e in (root_call, *args, *ctx.captures.values()):
        t = ttype(e)
        if t is not None and t.ndim > 4:
            return f"found rank {t.ndim} {t.shape}"
    return None


def _rank_limited(check: Check) -> Check:
    return Check(check.rules + (_rank4,), summary=check.summary)


_MOVE_CHECK = Check((dtype_rule("input and output", [lambda ctx: ctx.root.args[0], root]), _rank4),
                    summary="data movement as a memory alias")


@register_pattern_table("npu")
def pattern_table() -> list[CompositePattern]:
    def binary(op_name: str):
        return optional_clip(is_op(op_name)(wildcard("lhs"), wildcard("rhs"), *[is_constant() for _ in range(6)])
                             .named("core"))

    cast_in = is_op("cast")(wildcard("data")).named("cast_in")
    avg = is_op("nn.avg_pool2d")(cast_in).named("pool")
    avg_pool = optional_clip(is_op("cast")(avg).named("cast_out"))
    max_pool = optional_clip(is_op("nn.max_pool2d")(wildcard("data")).named("pool"))
    concat = optional_clip(is_op("qnn.concatenate")(is_tuple(None), is_tuple(None), is_tuple(None), is_constant(),
                                                     is_constant()).named("core"))
    rq = optional_clip(is_op("qnn.requantize")(wildcard("data"), is_constant(), is_constant(), is_constant(),
                                               is_constant()).named("rq"))
    clip = is_op("clip")(wildcard("data")).named("clip")
    table = [
        CompositePattern("npu.qnn_conv2d", conv_chain("qnn.conv2d"), CONV_CHECK),
        CompositePattern("npu.qnn_depthwise_conv2d", conv_chain("qnn.conv2d"), DEPTHWISE_CHECK),
        CompositePattern("npu.qnn_dense", conv_chain("qnn.dense", with_pad=False), DENSE_CHECK),
        CompositePattern("npu.qnn_add", binary("qnn.add"), _binary_check("quantized addition")),
        CompositePattern("npu.qnn_mul", binary("qnn.mul"), _binary_check("quantized multiplication")),
        CompositePattern("npu.qnn_avg_pool2d", avg_pool, AVG_POOL_CHECK),
        CompositePattern("npu.qnn_max_pool2d", max_pool, MAX_POOL_CHECK),
        CompositePattern("npu.qnn_mean", quantized_mean(), on_integer_op(MEAN_CHECK)),
        CompositePattern("npu.qnn_concatenate", concat, CONCAT_CHECK),
        CompositePattern("npu.qnn_sigmoid", quantized_activation("sigmoid", "qnn.sigmoid"),
                         on_integer_op(_lut_check("sigmoid"))),
        CompositePattern("npu.qnn_tanh", quantized_activation("tanh", "qnn.tanh"), on_integer_op(_lut_check("tanh"))),
        CompositePattern("npu.qnn_leaky_relu", quantized_activation("nn.leaky_relu", "qnn.leaky_relu"),
                         on_integer_op(_lut_check("leaky ReLU"))),
        CompositePattern("npu.qnn_global_avg_pool", npu_qdq.global_avg_pool(), npu_qdq.GLOBAL_AVG_POOL_CHECK),
        CompositePattern("npu.qdq_resize", npu_qdq.qdq_resize(), npu_qdq.QDQ_RESIZE_CHECK),
        CompositePattern("npu.qdq_elementwise", npu_qdq.qdq_elementwise(), npu_qdq.QDQ_ELEMENTWISE_CHECK),
        CompositePattern("npu.qnn_requantize", rq, REQUANTIZE_CHECK),
        CompositePattern("npu.qnn_clip", clip, CLIP_CHECK),
    ]
    return [dataclasses.replace(p, check=_rank_limited(p.check)) for p in table]


for _op in ("reshape", "squeeze", "expand_dims"):
    register_op_predicate("npu", _op, _MOVE_CHECK)
for _op, _check in npu_qdq.CPU_ONLY.items():   # ONNX's float groups: kept on the CPU, with the reason
    register_op_predicate("npu", _op, _check)
# ONNX's NCHW convolutions are converted to the NHWC the NPU runs (byoc.partition_for)
set_desired_layouts("npu", {"qnn.conv2d": ["NHWC", "default"]})


# -- copies: slice, split, pad, depth_to_space (npu_sim/lower_move.py) ------------------------------------------

def _one_block(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> str | None:
    """Why a non-empty box of ``out_shape`` is not one block of the NPU's height×width×channels view (4-D:
    batch folds into the rows, so a box over several batches must take the whole height)."""
    if any(d <= 0 for d in out_shape):
        return f"found an empty piece {out_shape}"
    if len(in_shape) == 4 and out_shape[0] > 1 and out_shape[1] != in_shape[1]:
        return (f"found {out_shape} out of {in_shape}: part of the height of {out_shape[0]} batches is not one "
                f"block of the NPU's batch×height rows")
    return None


_COPY_DTYPES = dtype_rule("input", [lambda ctx: ctx.root.args[0]])


@rule("strides are 1 and the slice is one block of the height×width×channels view (with batch > 1 it keeps "
      "the whole height)")
def _slice_window(ctx):
    call = ctx.root
    t, out = ttype(call.args[0]), ttype(call)
    if t is None or out is None or t.ndim > 4:
        return None  # the rank rule names it
    try:
        slices = strided_slice_indices(tuple(t.shape), call.attrs)
    except ByocError as e:
        return e.message
    steps = [sl.indices(d)[2] for sl, d in zip(slices, t.shape)]
    if any(s != 1 for s in steps):
        return f"found strides {tuple(steps)}"
    return _one_block(tuple(t.shape), tuple(out.shape))


@rule("every piece is non-empty and one block of the height×width×channels view (with batch > 1, no split "
      "along the height)")
def _split_pieces(ctx):
    call = ctx.root
    t, out = ttype(call.args[0]), call.checked_type
    if t is None or not isinstance(out, TupleType) or t.ndim > 4:
        return None if t is not None and t.ndim > 4 else f"found {t} → {out}"
    for f in out.fields:
        why = _one_block(tuple(t.shape), tuple(f.shape))
        if why:
            return why
    return None


@rule(f"constant padding of height and width only (batch 1), at most {MAX_PAD} per side, with a constant "
      f"scalar pad value in the input's range (the input zero point, as TFLite PAD writes it)")
def _pad_sides(ctx):
    call = ctx.root
    t = ttype(call.args[0])
    if t is None or t.ndim > 4 or t.ndim == 0:
        return None if t is not None and t.ndim > 4 else f"found input {t}"
    if call.attrs.pad_mode != "constant":
        return f"found pad_mode {call.attrs.pad_mode!r}"
    pv = const_value(call.args[1])
    if pv is None or pv.size != 1:
        return "found a pad value that is not a constant scalar"
    info = np.iinfo(t.dtype) if t.dtype in ("int8", "uint8") else None
    if info is not None and not info.min <= int(pv.reshape(-1)[0]) <= info.max:
        return f"found pad value {int(pv.reshape(-1)[0])} outside {t.dtype}"
    pw = [tuple(int(v) for v in p) for p in call.attrs.pad_width]
    hw = {4: (1, 2), 3: (0, 1), 2: (0,), 1: ()}[t.ndim]
    if any(pw[k] != (0, 0) for k in range(t.ndim) if k not in hw):
        return f"found pad_width {tuple(pw)} (it pads an axis other than height and width)"
    if t.ndim == 4 and t.shape[0] != 1 and pw[1] != (0, 0):
        return f"found batch {t.shape[0]} with height padding: the batches interleave in the NPU's rows"
    worst = max((v for k in hw for v in pw[k]), default=0)
    return None if worst <= MAX_PAD else f"found pad_width {tuple(pw)}"


@rule("NHWC layout, DCR order (TFLite's DEPTH_TO_SPACE), 4-D input")
def _depth_to_space(ctx):
    call = ctx.root
    t, a = ttype(call.args[0]), call.attrs
    if a.layout != "NHWC" or a.mode != "DCR" or t is None or t.ndim != 4:
        return f"found layout {a.layout!r}, mode {a.mode!r}, input {t.shape if t else None}"
    return None


SLICE_CHECK = Check((_COPY_DTYPES, _rank4, _slice_window), summary="strided slice with unit strides, as a copy")
SPLIT_CHECK = Check((_COPY_DTYPES, _rank4, _split_pieces), summary="split, one copy per piece")
PAD_CHECK = Check((_COPY_DTYPES, _rank4, _pad_sides), summary="pad, as a copy whose reads past the edge give the "
                                                              "pad value")
DEPTH_TO_SPACE_CHECK = Check((_COPY_DTYPES, _rank4, _depth_to_space),
                             summary="depth_to_space, one copy per block row")

for _op, _check in (("strided_slice", SLICE_CHECK), ("split", SPLIT_CHECK), ("nn.pad", PAD_CHECK),
                    ("nn.depth_to_space", DEPTH_TO_SPACE_CHECK)):
    register_op_predicate("npu", _op, _check)
