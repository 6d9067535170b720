"""Lowering of the ops Vela turns into a sequence of NPU operations: SOFTMAX, TRANSPOSE, RESIZE_*, ARG_MAX, and
TFLite's elementwise ops on raw integers (int32 ADD/SUB/MUL, MAXIMUM/MINIMUM).

Each becomes one PPU layer whose commands compute the reference integer algorithm per tile (bit-exact with
TFLite Micro and ``byoc.evaluate``); the cycles charged per command are those of the operations Vela emits
(``cost.softmax_cycles`` / ``transpose_cycles`` / ``resize_cycles``).

* softmax (layer kind ``softmax``, a composite): along the last axis; a tile holds whole rows of the
  height×width×channels view, so any leading shape folds into the rows; int8 → int8, uint8 → uint8 and int8 →
  int16 (the OFM tile holds 16-bit values). Its quantization is read by
  ``softmax_quant`` only (the one place to change when the composite body changes form).
* transpose (bare op): unit axes are dropped, so any permutation that moves at most three non-unit axes is a
  permutation of a height×width×channels view; every OFM tile loads the IFM box with its axes permuted.
* image.resize2d (bare op): NHWC, TFLite's three coordinate modes; every OFM tile loads the input window holding
  every tap it reads.
* argmax (layer kind ``argmax``: argmax along the last axis [→ cast to int64]): a tile holds whole rows, the
  output one index per row (int32 or int64), charged as Vela's depthwise / max pool / LUT / cast sequence
  (``cost.argmax_cycles``).
* qnn.conv2d_transpose (layer kind ``conv2d_transpose``, TRANSPOSE_CONV; 8-bit or int16x8): a convolution layer
  whose IFM loads insert the input zero point after every row / column (Ethos-U's IFM upscaling, strides 2), run with stride 1 and
  the kernel flipped; MAC cycles are those of the convolution over the upscaled map, as Vela's.
* stack (layer kind ``stack``, TFLite PACK): Vela's concatenation of the inputs reshaped with the new unit axis;
  one COPY layer per input writes its block of the output (``lower.concat_origins``).
* add / subtract / multiply of int32, maximum / minimum of 8/16-bit (bare ops): one RAW_BINARY command per
  tile, src1 broadcast as ADD's; int32 results wrap as TFLite's int32 kernels.
* leaky_relu (layer kind ``leaky_relu``): 8-bit by lookup table; int16 (alpha ≥ 0) as the PRELU command with a
  constant alpha of 1 and LEAKY_RELU's two multipliers, charged as Regor's LRELU or MUL + MUL + MAXIMUM.
* rsqrt (layer kind ``rsqrt``): int8, a 256-entry LUT; int16, LiteRT's interpolated table on the 16-bit
  interpolating LUT (``isa.LUT16_INTERP``); inputs below the zero point are refused (LiteRT fails there).
"""
from __future__ import annotations

from byoc.ir.expr import Call, Constant
from byoc.quant.params import softmax_params

from .lower import PpuLayer, _BareBody, _Body, _Lowerer, _tensor_type

__all__ = ["softmax_quant", "transpose_view", "resize_mode", "VELA_OPS", "SOFTMAX_DTYPES", "SOFTMAX_TYPE_PAIRS", "MOVE_DTYPES",
           "ARGMAX_DTYPES", "ARGMAX_DEPTH_MAX", "RAW_BINARY", "RAW_DTYPES", "transpose_conv_form",
           "stack_origins", "both_broadcast_flags", "materialise_broadcast"]

SOFTMAX_DTYPES = ("int8", "uint8")
# (input, output) dtype pairs of the NPU softmax: TFLite's 8-bit kernels, and int8 → int16 (the same fixed-point
# algorithm written to 16 bits, output zero point −32768: TFLite Micro's reference Softmax<int8, int16>)
SOFTMAX_TYPE_PAIRS = (("int8", "int8"), ("uint8", "uint8"), ("int8", "int16"))
MOVE_DTYPES = ("int8", "uint8", "int16")   # transpose and resize move values: 16-bit ones too


def softmax_quant(body: _Body, core: Call) -> tuple[float, float, str]:
    """(input scale, beta, output dtype) of a softmax composite's core call ``qnn.softmax(data, scale, zp,
    out_scale, out_zp)``; the output parameters are implied by the dtype (TFLite's kernels require them)."""
    scale = float(body.const(core.args[1], "input scale").reshape(-1)[0])
    return scale, float(core.attrs.beta), core.attrs.out_dtype or _tensor_type(core.args[0]).dtype


def _softmax(low: _Lowerer, body: _Body, comp: str) -> None:
    ops = body.expect(body.chain(), [("qnn.softmax", False)])
    core = ops["qnn.softmax"]
    in_t = _tensor_type(core.args[0])
    if core.attrs.rounding != "TFLITE":
        raise body.fail(f"qnn.softmax rounding {core.attrs.rounding!r} is not supported",
                        hint="the NPU runs TFLite's fixed-point softmax")
    if not in_t.shape or core.attrs.axis % len(in_t.shape) != len(in_t.shape) - 1:
        raise body.fail(f"softmax along axis {core.attrs.axis} of {tuple(in_t.shape)}",
                        hint="the NPU's softmax runs along the last axis (TFLite's)")
    scale, beta, out_dtype = softmax_quant(body, core)
    if (in_t.dtype, out_dtype) not in SOFTMAX_TYPE_PAIRS:
        raise body.fail(f"softmax {in_t.dtype} → {out_dtype} is not supported",
                        hint="int8 → int8, uint8 → uint8 or int8 → int16")
    p = softmax_params(scale, beta)
    ifm = body.tensor(core.args[0], "data")
    ofm = low.out_tensor(body.call, body.name)
    low.layers.append(PpuLayer(body.name, comp, "softmax", (ifm,), ofm,
                               dict(multiplier=p.input_multiplier, left_shift=p.input_left_shift,
                                    diff_min=p.diff_min, rows=low.tensors[ifm].hwc[0] * low.tensors[ifm].hwc[1],
                                    width=low.tensors[ifm].hwc[1])))


def transpose_view(shape: tuple[int, ...], axes) -> tuple[tuple[int, int, int], tuple[int, int, int]] | str:
    """(the input seen as height×width×channels, the permutation of that view) of ``transpose(x, axes)``, or
    why there is none: unit axes are dropped, at most three axes may remain."""
    rank = len(shape)
    perm = tuple(int(a) % rank for a in axes) if axes is not None else tuple(reversed(range(rank)))
    if sorted(perm) != list(range(rank)):
        return f"axes {tuple(axes)} are not a permutation of {rank} axes"
    kept = [a for a in range(rank) if shape[a] != 1]
    if len(kept) > 3:
        return f"it moves {len(kept)} axes longer than 1 (the NPU's view has three)"
    pad = 3 - len(kept)
    in3 = (1,) * pad + tuple(shape[a] for a in kept)
    perm3 = tuple(range(pad)) + tuple(pad + kept.index(a) for a in perm if shape[a] != 1)
    return in3, perm3   # type: ignore[return-value]


def _transpose(low: _Lowerer, call: Call) -> None:
    body = _BareBody(call, low)
    in_t, out_t = _tensor_type(call.args[0]), _tensor_type(call)
    if in_t.dtype not in MOVE_DTYPES:
        raise body.fail(f"{in_t.dtype} tensors are not supported", hint="the NPU transposes int8, uint8 and int16")
    view = transpose_view(tuple(in_t.shape), call.attrs.axes)
    if isinstance(view, str):
        raise body.fail(view, hint="the NPU permutes a height×width×channels view")
    in3, perm3 = view
    src = body.tensor(call.args[0], "data")
    if perm3 == (0, 1, 2):  # only unit axes move: the same bytes
        src = low.contiguous(src)
        base = low.tensors[src]
        root = base.alias_of if base.alias_of is not None else src
        low.value[id(call)] = low.new_tensor(f"{base.name}.transpose", out_t, base.data, alias_of=root)
        return
    ofm = low.out_tensor(call, body.name)
    out3 = tuple(in3[k] for k in perm3)
    low.layers.append(PpuLayer(body.name, body.comp, "transpose", (low.view_as(src, in3),),
                               low.view_as(ofm, out3), dict(perm=perm3)))


# TFLite's coordinate modes as image.resize2d spells them (execute.RESIZE_MODES is the same order)
_RESIZE_MODES = {("asymmetric", ""): 0, ("align_corners", ""): 1, ("half_pixel", "round_prefer_ceil"): 2}


def resize_mode(attrs) -> int | str:
    """The RESIZE command's ``ctm`` code for an image.resize2d, or why the NPU does not run it."""
    mode = attrs.coordinate_transformation_mode
    rounding = attrs.rounding_method if attrs.method != "linear" else ""
    if attrs.method == "linear" and mode == "half_pixel":
        rounding = "round_prefer_ceil"
    code = _RESIZE_MODES.get((mode, rounding))
    if attrs.method not in ("linear", "nearest_neighbor"):
        return f"method {attrs.method!r} is not TFLite's"
    if attrs.layout != "NHWC":
        return f"layout {attrs.layout!r} is not NHWC"
    if code is None:
        return f"coordinate mode {mode!r} with rounding {attrs.rounding_method!r} is not one of TFLite's"
    return code


def _resize(low: _Lowerer, call: Call) -> None:
    body = _BareBody(call, low)
    in_t, out_t = _tensor_type(call.args[0]), _tensor_type(call)
    if in_t.dtype not in MOVE_DTYPES or out_t.dtype != in_t.dtype:
        raise body.fail(f"resize {in_t.dtype} → {out_t.dtype} is not supported", hint="int8, uint8 or int16 in and out")
    code = resize_mode(call.attrs)
    if isinstance(code, str):
        raise body.fail(code, hint="the NPU resizes NHWC tensors with TFLite's coordinate modes")
    if len(in_t.shape) != 4 or in_t.shape[0] != 1:
        raise body.fail(f"input {tuple(in_t.shape)} is not one NHWC image", hint="batch 1")
    if out_t.shape[1] < in_t.shape[1] or out_t.shape[2] < in_t.shape[2]:
        raise body.fail(f"resizing {tuple(in_t.shape)} down to {tuple(out_t.shape)}",
                        hint="the NPU upscales (Vela: 2x/4x/8x); keep a downscale on the CPU")
    src = body.tensor(call.args[0], "data")
    ofm = low.out_tensor(call, body.name)
    low.layers.append(PpuLayer(body.name, body.comp, "resize", (src,), ofm,
                               dict(bilinear=int(call.attrs.method == "linear"), ctm=code)))


ARGMAX_DTYPES = ("int8", "uint8")        # Vela's ARG_MAX reads 8-bit values (shifted 7 bits left into int16)
ARGMAX_DEPTH_MAX = 127                    # the index must fit the 7 bits below the shifted value


def _argmax(low: _Lowerer, body: _Body, comp: str) -> None:
    """argmax along the last axis [→ cast to int64]: one PPU command per tile of whole rows."""
    ops = body.expect(body.chain(), [("argmax", False), ("cast", True)])
    core = ops["argmax"]
    in_t, out_t = _tensor_type(core.args[0]), _tensor_type(body.call)
    a = core.attrs
    rank = len(in_t.shape)
    axes = tuple(int(x) % rank for x in a.axis) if a.axis is not None and rank else None
    if axes != (rank - 1,) or a.exclude or a.keepdims or a.select_last_index:
        raise body.fail(f"argmax over axes {a.axis} of {tuple(in_t.shape)} (keepdims={a.keepdims}, "
                        f"select_last_index={a.select_last_index})",
                        hint="the NPU's ARG_MAX runs along the last axis (the channels), first index on ties")
    if in_t.dtype not in ARGMAX_DTYPES or out_t.dtype not in ("int32", "int64"):
        raise body.fail(f"argmax {in_t.dtype} → {out_t.dtype} is not supported",
                        hint="8-bit values in, int32 or int64 indices out")
    if in_t.shape[-1] > ARGMAX_DEPTH_MAX:
        raise body.fail(f"argmax over {in_t.shape[-1]} channels", hint=f"at most {ARGMAX_DEPTH_MAX} (Vela's limit)")
    ifm = body.tensor(core.args[0], "data")
    ofm = low.out_tensor(body.call, body.name)
    h, w, _ = low.tensors[ifm].hwc
    low.layers.append(PpuLayer(body.name, comp, "argmax", (ifm,),
                               low.view_as(ofm, tuple(in_t.shape[:-1]) + (1,)), dict(rows=h * w)))


# TFLite's unquantized elementwise ops on raw integers (isa.RAW_FUNCTIONS): int32 ADD/SUB/MUL, and
# MAXIMUM/MINIMUM, which compare raw values whatever the quantization
RAW_BINARY = {"add": "add", "subtract": "sub", "multiply": "mul", "maximum": "max", "minimum": "min"}
RAW_DTYPES = {"add": ("int32",), "subtract": ("int32",), "multiply": ("int32",),
              "maximum": ("int8", "uint8", "int16"), "minimum": ("int8", "uint8", "int16")}


def both_broadcast_flags(a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                         out_shape: tuple[int, ...]) -> tuple[int, int] | str | None:
    """(broadcast flags of the first operand over the output, of the second) when both operands of an elementwise op
    broadcast (neither has the output's shape) and each does so along whole height / width / channel axes of the
    HWC view; None when one operand has the output's shape; else why not. Vela materialises the first operand at
    the output's shape, then broadcasts the second as IFM2."""
    from .isa import BCAST_C, BCAST_H, BCAST_W
    from .lower import _hwc
    if len(out_shape) > 4:
        return f"rank-{len(out_shape)} output"
    pa, pb = ((1,) * (len(out_shape) - len(s)) + tuple(s) for s in (a_shape, b_shape))
    if tuple(out_shape) in (pa, pb):
        return None
    full = _hwc(tuple(out_shape), "broadcast")
    flags = []
    for small in (_hwc(pa, "broadcast"), _hwc(pb, "broadcast")):
        f = 0
        for k, bit in enumerate((BCAST_H, BCAST_W, BCAST_C)):
            if small[k] != full[k]:
                if small[k] != 1:
                    return f"seen as height×width×channels, {small} does not broadcast to {full}"
                f |= bit
        flags.append(f)
    return flags[0], flags[1]


def materialise_broadcast(low: _Lowerer, body: _Body, src: int, bcast: int, out_shape: tuple[int, ...]) -> int:
    """A tensor of ``out_shape`` holding ``src`` broadcast (flags ``bcast``): one RAW_BINARY max layer of a
    constant filled with the dtype's lowest value and ``src`` as the broadcast IFM2 (Vela's extra elementwise
    operation that materialises one operand of a both-broadcast op)."""
    import numpy as np
    from byoc.ir.types import TensorType
    from .isa import RAW_FUNCTIONS
    dtype = low.tensors[src].dtype
    floor = low.new_tensor(f"{body.name}.floor", TensorType(tuple(out_shape), dtype),
                           np.full(out_shape, np.iinfo(dtype).min, dtype))
    full = low.new_tensor(f"{body.name}.materialised", TensorType(tuple(out_shape), dtype))
    low.layers.append(PpuLayer(f"{body.name}/materialise", body.comp, "raw_binary", (floor, src), full,
                               dict(fn=RAW_FUNCTIONS.index("max"), bcast=bcast)))
    return full


def _raw_binary(low: _Lowerer, call: Call) -> None:
    from npu_sim.isa import RAW_FUNCTIONS
    from .lower import _broadcast_operands
    body = _BareBody(call, low)
    name = call.op.name   # type: ignore[union-attr]
    a_t, b_t, out_t = _tensor_type(call.args[0]), _tensor_type(call.args[1]), _tensor_type(call)
    if not a_t.dtype == b_t.dtype == out_t.dtype or out_t.dtype not in RAW_DTYPES[name]:
        raise body.fail(f"{name} on {a_t.dtype}, {b_t.dtype} → {out_t.dtype}",
                        hint=f"the NPU runs {name} on {' / '.join(RAW_DTYPES[name])} operands")
    order, bcast = _broadcast_operands(body, a_t, b_t, out_t)
    out_shape = tuple(out_t.shape)
    ins = [low.view_as(body.tensor(call.args[k], f"operand {k}"),
                       (1,) * (len(out_shape) - len(t.shape)) + tuple(t.shape)) for k, t in enumerate((a_t, b_t))]
    fn = RAW_BINARY[name]
    if order == (1, 0):   # the broadcast operand must be src1: swap (subtraction then runs reversed)
        ins.reverse()
        fn = "rsub" if fn == "sub" else fn
    ofm = low.out_tensor(call, body.name)
    low.layers.append(PpuLayer(body.name, body.comp, "raw_binary", tuple(ins), ofm,
                               dict(fn=RAW_FUNCTIONS.index(fn), bcast=bcast)))


def transpose_conv_form(in_hw: tuple[int, int], out_hw: tuple[int, int], kernel: tuple[int, int], attrs):
    """(upscale, top/left padding of the stride-1 convolution over the upscaled IFM) of a qnn.conv2d_transpose, or
    why the NPU does not run it. Every input pixel sits at an even position of the upscaled map, the input zero
    point in between; out[o] = Σ_k up[o + k − pad] · w[K − 1 − k] with pad = K − 1 − (the transposed padding)."""
    if tuple(attrs.dilation) != (1, 1) or attrs.groups != 1:
        return f"dilation {tuple(attrs.dilation)}, groups {attrs.groups} (the NPU's TRANSPOSE_CONV: 1 and 1)"
    if attrs.data_layout != "NHWC" or attrs.kernel_layout != "OHWI":
        return f"layouts {attrs.data_layout}/{attrs.kernel_layout} (TFLite's NHWC/OHWI)"
    up, pads = [], []
    for s, k, p in zip(attrs.strides, kernel, attrs.padding[:2]):
        if s not in (1, 2):
            return f"strides {tuple(attrs.strides)} (1 or 2)"
        if p > k - 1:
            return f"padding {tuple(attrs.padding)} exceeds the kernel {kernel}"
        up.append(s)
        pads.append(k - 1 - p)
    return tuple(up), tuple(pads)


def _transpose_conv(low: _Lowerer, body: _Body, comp: str) -> None:
    """qnn.conv2d_transpose → [bias_add] → requantize → [clip]: a ConvLayer reading its IFM upscaled (the input zero
    point inserted after every row / column), stride 1, the kernel flipped in height and width."""
    import numpy as np
    from .lower import ConvLayer, _check_batch_one, _clamp, _requant_tables, _scalar_int
    ops = body.expect(body.chain(), [("qnn.conv2d_transpose", False), ("nn.bias_add", True),
                                     ("qnn.requantize", False), ("clip", True)])
    from .int16_layers import check_int16x8, int16x8_rounding
    core = ops["qnn.conv2d_transpose"]
    x_t, out_t = _tensor_type(core.args[0]), _tensor_type(body.call)
    acc_dtype = _tensor_type(ops["qnn.requantize"].args[0]).dtype
    int16x8 = "int16" in (x_t.dtype, out_t.dtype)
    if not int16x8 and (x_t.dtype not in ("int8", "uint8") or out_t.dtype not in ("int8", "uint8")):
        raise body.fail(f"transposed convolution {x_t.dtype} → {out_t.dtype}",
                        hint="int8 or uint8 in and out, or int16x8")
    _check_batch_one(body, x_t, "the input")
    w = np.asarray(body.const(core.args[1], "weight"))   # OHWI [Cout, KH, KW, Cin]
    form = transpose_conv_form(tuple(x_t.shape[1:3]), tuple(out_t.shape[1:3]), tuple(w.shape[1:3]), core.attrs)
    if isinstance(form, str):
        raise body.fail(form, hint="Vela's TRANSPOSE_CONV: strides 1 or 2, NHWC, no dilation or groups")
    upscale, (pt, pl) = form
    zp_in = _scalar_int(body.const(core.args[2], "input_zero_point"), "input zero point", body.name)
    zp_w = _scalar_int(body.const(core.args[3], "kernel_zero_point"), "kernel zero point", body.name)
    if int16x8 and (x_t.dtype, out_t.dtype) == ("int8", "int16"):
        raise body.fail("transposed convolution int8 → int16", hint="int8 or uint8 in and out, or int16x8")
    if int16x8:   # int16 activations, zero points 0, an int64 accumulator and 40-bit bias (as int16x8 conv)
        check_int16x8(body, x_t.dtype, out_t.dtype, acc_dtype, zp_in, zp_w)
    packed = np.ascontiguousarray(w[:, ::-1, ::-1, :])   # the NPU's OHWI stream, flipped: a correlation
    oc = packed.shape[0]
    bias = (np.asarray(body.const(ops["nn.bias_add"].args[1], "bias")).reshape(-1).astype(np.int64)
            if "nn.bias_add" in ops else np.zeros(oc, np.int64))
    m, sft, zp_rq, zp_out, rounding = _requant_tables(body, ops["qnn.requantize"], oc)
    if int16x8:
        rounding = int16x8_rounding(body, rounding, bias, sft)
    lo, hi = _clamp(body, ops, out_t.dtype)
    ifm = body.tensor(core.args[0], "data")
    ofm = low.out_tensor(body.call, body.name)
    kh, kw = packed.shape[1:3]
    macs = int(np.prod(x_t.shape[1:])) * oc * kh * kw   # every input pixel times the kernel (Vela's count)
    low.layers.append(ConvLayer(body.name, comp, "conv", ifm, ofm, (kh, kw), (1, 1), (1, 1), (pt, pl, 0, 0), zp_in,
                                zp_in, zp_w, 1, packed, bias, m, sft, zp_rq, zp_out, lo, hi, rounding, out_t.dtype,
                                macs, upscale=upscale))


def _quantized_binary(low: _Lowerer, call: Call) -> None:
    """qnn.prelu (alpha broadcast over the input) and qnn.squared_difference (int8, either operand broadcast): one
    PPU command per tile computing TFLite's integer algorithm, the second operand as src1 (Ethos-U's IFM2)."""
    import numpy as np
    from byoc.quant.params import squared_difference_params
    from byoc.ops.qnn_prelu import prelu_params
    from .lower import _broadcast_operands, _scalar_int
    body = _BareBody(call, low)
    name = call.op.name   # type: ignore[union-attr]
    a_t, b_t, out_t = _tensor_type(call.args[0]), _tensor_type(call.args[1]), _tensor_type(call)
    dtypes = ("int8", "uint8") if name == "qnn.prelu" else ("int8",)
    if not a_t.dtype == b_t.dtype == out_t.dtype or out_t.dtype not in dtypes:
        raise body.fail(f"{name} on {a_t.dtype}, {b_t.dtype} → {out_t.dtype}", hint=" or ".join(dtypes))
    order, bcast = _broadcast_operands(body, a_t, b_t, out_t)
    if name == "qnn.prelu" and order != (0, 1):
        raise body.fail(f"alpha {tuple(b_t.shape)} is larger than the input {tuple(a_t.shape)}",
                        hint="the NPU broadcasts alpha over the input")
    c = [body.const(call.args[i], n) for i, n in ((2, "scale 0"), (3, "zero point 0"), (4, "scale 1"),
                                                  (5, "zero point 1"), (6, "output scale"), (7, "output zero point"))]
    for i in (0, 2, 4):
        if np.asarray(c[i]).size != 1:
            raise body.fail("scales must be per-tensor")
    zp0, zp1, zpo = (_scalar_int(c[i], "zero point", body.name) for i in (1, 3, 5))
    info = np.iinfo(out_t.dtype)
    params = dict(zp_out=zpo, act_min=int(info.min), act_max=int(info.max), bcast=bcast)
    if name == "qnn.prelu":
        p = prelu_params(c[0], c[2], c[4])
        alpha = body.const(call.args[1], "alpha") if isinstance(call.args[1], Constant) else None
        above_one = alpha is None or bool(np.any(float(np.asarray(c[2]).reshape(-1)[0])
                                                 * (alpha.astype(np.int64) - zp1) > 1.0))
        params.update(zp_in=zp0, zp_alpha=zp1, m_id=p.identity_multiplier, shift_id=p.identity_shift,
                      m_alpha=p.alpha_multiplier, shift_alpha=p.alpha_shift, above_one=int(above_one))
        op = "prelu"
    else:
        p = squared_difference_params(c[0], c[2], c[4])
        sides = [(zp0, p.lhs_multiplier, p.lhs_shift), (zp1, p.rhs_multiplier, p.rhs_shift)]
        if order == (1, 0):   # (a − b)² = (b − a)²: the broadcast operand becomes src1 with its own parameters
            sides.reverse()
        (za, ma, sa), (zb, mb, sb) = sides
        params.update(zp_a=za, zp_b=zb, left_shift=p.left_shift, m_a=ma, shift_a=sa, m_b=mb, shift_b=sb,
                      m_out=p.output_multiplier, shift_out=p.output_shift)
        op = "squared_diff"
    out_shape = tuple(out_t.shape)
    ins = [low.view_as(body.tensor(call.args[k], f"operand {k}"),
                       (1,) * (len(out_shape) - len(t.shape)) + tuple(t.shape)) for k, t in enumerate((a_t, b_t))]
    if order == (1, 0):
        ins.reverse()
    ofm = low.out_tensor(call, body.name)
    low.layers.append(PpuLayer(body.name, body.comp, op, tuple(ins), ofm, params))


VELA_OPS = {"transpose": _transpose, "qnn.prelu": _quantized_binary, "qnn.squared_difference": _quantized_binary, "image.resize2d": _resize, **{op: _raw_binary for op in RAW_BINARY}}
def stack_origins(shape: tuple[int, ...], n: int, axis: int) -> tuple[tuple[int, ...], list] | str:
    """(each input's shape with the new unit axis, where each lands in the output's HWC view) of stacking ``n``
    tensors of ``shape`` along ``axis``, or why the NPU cannot: PACK as Vela runs it, a concatenation."""
    from .lower import concat_origins
    rank = len(shape) + 1
    if rank > 4:
        return f"the output has rank {rank} (the NPU's concatenation takes rank 1 to 4)"
    a = axis % rank
    piece = tuple(shape[:a]) + (1,) + tuple(shape[a:])
    origins = concat_origins([piece] * n, a)
    return origins if isinstance(origins, str) else (piece, origins)


def _stack(low: _Lowerer, body: _Body, comp: str) -> None:
    """stack (PACK): every input reshaped with the new unit axis, one COPY layer writing its block of the output."""
    import dataclasses

    import numpy as np
    from byoc.ir.expr import Tuple
    ops = body.expect(body.chain(), [("stack", False)])
    core = ops["stack"]
    data, out_t = core.args[0], _tensor_type(body.call)
    if not isinstance(data, Tuple):
        raise body.fail("stack takes a tuple of tensors")
    in_t = _tensor_type(data.fields[0])
    if in_t.dtype not in MOVE_DTYPES:
        raise body.fail(f"stack of {in_t.dtype} tensors", hint="the NPU stacks int8, uint8 and int16 tensors")
    form = stack_origins(tuple(in_t.shape), len(data.fields), core.attrs.axis)
    if isinstance(form, str):
        raise body.fail(form, hint="the NPU writes each input as one block of its height×width×channels view")
    piece, origins = form
    info = np.iinfo(out_t.dtype)
    layers = [PpuLayer(f"{body.name}/{i}", comp, "copy", (low.view_as(body.tensor(d, f"input {i}"), piece),), -1,
                       dict(act_min=int(info.min), act_max=int(info.max)), out_origin=origins[i])
              for i, d in enumerate(data.fields)]
    ofm = low.out_tensor(body.call, body.name)
    low.layers.extend(dataclasses.replace(layer, ofm=ofm) for layer in layers)


def _leaky_relu(low: _Lowerer, body: _Body, comp: str) -> None:
    """LEAKY_RELU (layer kind ``leaky_relu``): an 8-bit one is a lookup table (the ``lut`` kind); an int16 one is
    one PPU command per tile computing TFLite's two-multiplier formula (the PRELU command, its alpha operand a
    broadcast constant 1), where Vela runs its 16-bit LRELU / MUL + MUL + MAXIMUM sequence."""
    import numpy as np
    from byoc.ir.types import TensorType
    from byoc.quant.params import leaky_relu_params
    from .lower import _clamp, _elementwise_lut_composite, _scalar_int
    ops = body.expect(body.chain(), [("qnn.leaky_relu", False), ("clip", True)])
    core = ops["qnn.leaky_relu"]
    in_t, out_t = _tensor_type(core.args[0]), _tensor_type(body.call)
    if in_t.dtype in ("int8", "uint8"):
        _elementwise_lut_composite(low, body, comp)
        return
    if (in_t.dtype, out_t.dtype) != ("int16", "int16") or core.attrs.rounding != "TFLITE":
        raise body.fail(f"leaky_relu {in_t.dtype} → {out_t.dtype} with rounding {core.attrs.rounding!r}",
                        hint="int8 / uint8 by lookup table, or int16 → int16 with TFLite's rounding")
    c = [body.const(core.args[i], n) for i, n in ((1, "input scale"), (2, "input zero point"),
                                                  (3, "output scale"), (4, "output zero point"))]
    p = leaky_relu_params(c[0], core.attrs.alpha, c[2])
    if p.alpha_multiplier < 0:
        raise body.fail(f"alpha {core.attrs.alpha} is negative", hint="the NPU's int16 LEAKY_RELU takes alpha ≥ 0")
    lo, hi = _clamp(body, ops, out_t.dtype)
    rank = len(out_t.shape)
    one = low.new_tensor(f"{body.name}.alpha", TensorType((1,) * rank, "int16"), np.ones((1,) * rank, np.int16))
    ifm = body.tensor(core.args[0], "data")
    ofm = low.out_tensor(body.call, body.name)
    from .isa import BCAST_C, BCAST_H, BCAST_W
    bcast = 0
    for k, bit in enumerate((BCAST_H, BCAST_W, BCAST_C)):
        if low.tensors[ifm].hwc[k] != 1:
            bcast |= bit
    params = dict(zp_in=_scalar_int(c[1], "input zero point", body.name), zp_alpha=0,
                  zp_out=_scalar_int(c[3], "output zero point", body.name), act_min=lo, act_max=hi, bcast=bcast,
                  m_id=p.identity_multiplier, shift_id=p.identity_shift, m_alpha=p.alpha_multiplier,
                  shift_alpha=p.alpha_shift, above_one=int(float(core.attrs.alpha) > 1.0))
    low.layers.append(PpuLayer(body.name, comp, "prelu", (ifm, one), ofm, params))


def _rsqrt(low: _Lowerer, body: _Body, comp: str) -> None:
    """RSQRT (layer kind ``rsqrt``): int8, a lookup table of LiteRT's fixed-point 1/√(q − zp); int16, LiteRT's
    interpolated 513-sample table as the NPU's 16-bit interpolating LUT (Vela's RSQRT is a LUT of either kind).
    Inputs below the zero point, which LiteRT refuses, are refused by the simulator (``guard``)."""
    import numpy as np
    from byoc.ops.qnn_math import rsqrt_table
    from byoc.quant.interpolated_lut import rsqrt16_table
    from .isa import LUT16_INTERP
    from .lower import _clamp, _deepened, _scalar_int
    ops = body.expect(body.chain(), [("qnn.rsqrt", False), ("clip", True)])
    core = ops["qnn.rsqrt"]
    in_t, out_t = _tensor_type(core.args[0]), _tensor_type(body.call)
    if (in_t.dtype, out_t.dtype) not in (("int8", "int8"), ("int16", "int16")):
        raise body.fail(f"rsqrt {in_t.dtype} → {out_t.dtype}", hint="int8 → int8 or int16 → int16 (a lookup table)")
    if in_t.dtype == "int16":
        if "clip" in ops:
            raise body.fail("an int16 rsqrt with a clip", hint="the interpolated table has no clamp of its own")
        c = [body.const(core.args[i], f"rsqrt operand {i}") for i in range(1, 5)]
        zps = [_scalar_int(c[k], "zero point", body.name) for k in (1, 3)]
        table = rsqrt16_table(c[0], zps[0], c[2], zps[1])
        ifm = body.tensor(core.args[0], "data")
        ofm = low.out_tensor(body.call, body.name)
        (ifm,), ofm = _deepened(low, (ifm,), ofm)
        low.layers.append(PpuLayer(body.name, comp, "lut", (ifm,), ofm,
                                   dict(qmin=-32768, fn16=LUT16_INTERP, guard=1, guard_min=zps[0]), table=table))
        return
    c = [body.const(core.args[i], n) for i, n in ((1, "input scale"), (2, "input zero point"),
                                                  (3, "output scale"), (4, "output zero point"))]
    if any(np.asarray(v).size != 1 for v in c):
        raise body.fail("scales and zero points must be per-tensor")
    zp_in = _scalar_int(c[1], "input zero point", body.name)
    lo, hi = _clamp(body, ops, "int8")
    table = np.clip(rsqrt_table(c[0], zp_in, c[2], _scalar_int(c[3], "output zero point", body.name)),
                    lo, hi).astype(np.int8)
    ifm = body.tensor(core.args[0], "data")
    ofm = low.out_tensor(body.call, body.name)
    (ifm,), ofm = _deepened(low, (ifm,), ofm)
    low.layers.append(PpuLayer(body.name, comp, "lut", (ifm,), ofm,
                               dict(qmin=-128, guard=1, guard_min=zp_in), table=table))


KIND_LOWERINGS = {"rsqrt": _rsqrt, "softmax": _softmax, "argmax": _argmax, "conv2d_transpose": _transpose_conv, "stack": _stack,
                  "leaky_relu": _leaky_relu}
