"""The ``npu`` table's entries for ONNX's quantized groups, as onnxruntime computes them (npu_sim/lower_qdq.py
lowers them):

* ``npu.qdq_elementwise``: DequantizeLinear → float elementwise ops (HardSwish, HardSigmoid, ...) →
  QuantizeLinear, a 256-entry table of the group's own float32 arithmetic;
* ``npu.qdq_resize``: DequantizeLinear → nearest-neighbour Resize → QuantizeLinear, the NPU's RESIZE on the
  integers (and the table of quantize∘dequantize when it is not the identity);
* ``npu.qnn_global_avg_pool``: QLinearGlobalAveragePool (an integer sum, then one requantization).

And the groups that stay on the CPU, each refused by a rule that says why: float ReduceMean / GlobalAveragePool
(a float32 sum), float ConvTranspose (float32 products and sums) and bilinear Resize between DequantizeLinear and
QuantizeLinear.
"""
from __future__ import annotations

from byoc.relay.dataflow_pattern import has_attr, is_constant, is_op, wildcard
from byoc.relay.dataflow_pattern.check import Check, MatchContext, Rule, rule

from .common import (batch_one_rule, clip_range_rule, dtype_rule, input_of, optional_clip, per_tensor_rule, root,
                     ttype)

__all__ = ["qdq_elementwise", "qdq_resize", "global_avg_pool", "group_ops", "QDQ_ELEMENTWISE_CHECK", "QDQ_RESIZE_CHECK",
           "GLOBAL_AVG_POOL_CHECK", "CPU_ONLY", "EXACT_FLOAT_OPS"]


# -- patterns -----------------------------------------------------------------------------------------------------

def _dequantize():
    return is_op("qnn.dequantize")(wildcard("data"), is_constant(), is_constant()).named("dq")


def _quantize(x):
    return is_op("qnn.quantize")(x, is_constant(), is_constant()).named("core")


def qdq_elementwise():
    """``qnn.dequantize`` reaching ``qnn.quantize`` only through elementwise / broadcast ops (TVM's dominator
    pattern), then an optional clip."""
    unary = wildcard().has_attr({"TOpPattern": 0})(wildcard())
    binary = wildcard().has_attr({"TOpPattern": 1})(wildcard(), wildcard())
    group = _quantize(wildcard()).dominates(_dequantize(), unary | binary)
    return optional_clip(group | _quantize(_dequantize()))


def qdq_resize():
    return optional_clip(_quantize(is_op("image.resize2d")(_dequantize()).named("resize")))


def global_avg_pool():
    data = wildcard("data")
    total = is_op("sum")(is_op("cast")(data).named("cast")).named("sum")
    return optional_clip(is_op("qnn.requantize")(total, *[is_constant() for _ in range(4)]).named("rq"))


# -- rules --------------------------------------------------------------------------------------------------------

def _in(ctx: MatchContext):
    return ctx["dq"].args[0]


def group_ops(root, stop) -> set[str]:
    """Names of the ops from ``root`` down to ``stop`` (exclusive), walking only calls in between."""
    from byoc.ir.expr import Call, Op
    seen, names, stack = set(), set(), [root]
    while stack:
        e = stack.pop()
        if id(e) in seen or e is stop or not isinstance(e, Call) or not isinstance(e.op, Op):
            continue
        seen.add(id(e))
        names.add(e.op.name)
        stack.extend(e.args)
    return names


@rule("the input and output have the same 8-bit type and shape")
def _same_type_shape(ctx):
    a, b = ttype(_in(ctx)), ttype(ctx.root)
    if a is None or b is None or a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
        return f"found {a} → {b}"
    return None


@rule("every op between the dequantize and the quantize is elementwise and its other operands are single "
      "constant values, so the group is a 256-entry lookup table of its own float32 arithmetic (evaluated on every "
      "input value: equal to onnxruntime's float path for every input)")
def _tabulates(ctx):
    from npu_sim.lower_qdq import qdq_table
    t = ttype(_in(ctx))
    if t is None or t.dtype not in ("int8", "uint8"):
        return None   # the dtype rule names it
    table = qdq_table(ctx["core"], _in(ctx), t.dtype)
    return table if isinstance(table, str) else None


# float32 ops IEEE 754 rounds exactly (one correctly rounded result each), so byoc's float32 arithmetic is
# onnxruntime's; exp, tanh, erf, ... are approximations (MLAS's polynomials) that the table would not reproduce.
EXACT_FLOAT_OPS = frozenset({"qnn.dequantize", "qnn.quantize", "multiply", "add", "subtract", "divide", "clip",
                             "maximum", "minimum", "negative", "abs", "nn.relu", "sqrt", "floor", "ceil", "round"})


@rule("its float ops are ones IEEE 754 rounds exactly (" + ", ".join(sorted(EXACT_FLOAT_OPS - {"qnn.dequantize",
      "qnn.quantize"})) + "), so their float32 results are onnxruntime's; approximated ones (exp, tanh, erf, "
      "...) stay on the CPU")
def _exact_ops(ctx):
    found = group_ops(ctx["core"], _in(ctx)) - EXACT_FLOAT_OPS
    return f"found {', '.join(sorted(found))}" if found else None


_QDQ_PARAMS = per_tensor_rule("dequantize and quantize scales and zero points",
                              [input_of("dq", 1), input_of("dq", 2), input_of("core", 1), input_of("core", 2)])

QDQ_ELEMENTWISE_CHECK = Check((dtype_rule("input and output", [_in, root]), _same_type_shape, _QDQ_PARAMS,
                               _exact_ops, _tabulates, clip_range_rule()),
                              summary="dequantize → float elementwise ops → quantize (ONNX HardSwish, HardSigmoid, "
                                      "...) by lookup table")


@rule("nearest-neighbour resizing (onnxruntime runs a bilinear Resize between DequantizeLinear and QuantizeLinear "
      "in float32, in NHWC after its layout transformer; at 2x about one output in four falls on a rounding tie "
      "that its float32 order decides, which byoc's import does not reproduce yet and integer interpolation cannot "
      "for every input: it stays on the CPU)")
def _nearest(ctx):
    m = ctx["resize"].attrs.method
    return None if m == "nearest_neighbor" else f"found method {m!r}"


@rule("an NHWC upscale of one image whose source indices along height and width are those of one of the NPU's "
      "RESIZE modes (asymmetric, align_corners or half-pixel centres; checked on every output position)")
def _resize_indices(ctx):
    from npu_sim.lower_qdq import nearest_code
    rs = ctx["resize"]
    ti, to = ttype(_in(ctx)), ttype(ctx.root)
    if ti is None or to is None or ti.ndim != 4 or rs.attrs.layout != "NHWC":
        return f"found layout {rs.attrs.layout} of {ti.shape if ti else None}"
    (ih, iw), (oh, ow) = ti.shape[1:3], to.shape[1:3]
    if oh < ih or ow < iw:
        return f"found {ih}x{iw} → {oh}x{ow} (a downscale)"
    code = nearest_code(rs.attrs, (ih, iw), (oh, ow)) if rs.attrs.method == "nearest_neighbor" else 0
    return code if isinstance(code, str) else None


@rule("quantize(dequantize(v)) can be evaluated on every 8-bit value (the lookup table applied to the copied "
      "values; the identity when the parameters are equal)")
def _requantizes(ctx):
    from npu_sim.lower_qdq import requantize_table
    t = ttype(_in(ctx))
    if t is None or t.dtype not in ("int8", "uint8"):
        return None
    table = requantize_table(ctx["dq"], ctx["core"], t.dtype, lambda e, what: e.data)
    return table if isinstance(table, str) else None


QDQ_RESIZE_CHECK = Check((dtype_rule("input and output", [_in, root]), _QDQ_PARAMS, _nearest,
                          batch_one_rule(root, "the output"), _resize_indices, _requantizes, clip_range_rule()),
                         summary="dequantize → nearest-neighbour resize → quantize, on the integers")


@rule("an 8-bit input cast to int32 and summed over height and width (axes 1 and 2, keepdims) of a 4-D NHWC "
      "tensor, at most 65536 elements per channel (onnxruntime's QLinearGlobalAveragePool)")
def _sum_hw(ctx):
    c, s = ctx["cast"], ctx["sum"]
    t = ttype(c.args[0])
    if t is None or t.dtype not in ("int8", "uint8") or c.attrs.dtype != "int32" or t.ndim != 4:
        return f"found cast {t.dtype if t else None} → {c.attrs.dtype} of {t.shape if t else None}"
    axes = tuple(sorted(int(a) % 4 for a in (s.attrs.axis or ())))
    if axes != (1, 2) or not s.attrs.keepdims or s.attrs.exclude:
        return f"found axes {s.attrs.axis}, keepdims {s.attrs.keepdims}"
    return None if t.shape[1] * t.shape[2] <= 65536 else f"found {t.shape[1]}x{t.shape[2]}"


@rule("one block of channels of the H×W plane (and its all-ones H×W kernel) fits the local SRAM of the npu "
      "target's configuration twice (each output reads the whole plane)")
def _pool_fits(ctx):
    from npu_sim.lower_qdq import global_pool_fits
    from runtime.npu_codegen import resolve_npu_config, simulator_codegen_for
    t = ttype(ctx["cast"].args[0])
    if t is None or t.ndim != 4 or t.dtype not in ("int8", "uint8"):
        return None   # the sum rule names it
    cg = simulator_codegen_for("npu")
    cfg = cg.config() if cg is not None else resolve_npu_config(None)
    return global_pool_fits(cfg, t.shape[1], t.shape[2], t.shape[3], t.dtype)


def _requant(ctx):
    from .npu import _requant_rule
    return _requant_rule("rq").test(ctx)


GLOBAL_AVG_POOL_CHECK = Check(
    (_sum_hw, dtype_rule("output", [root]), batch_one_rule(root, "the output"), _pool_fits,
     per_tensor_rule("requantize scales and zero points", [input_of("rq", i) for i in range(1, 5)]),
     Rule("the requantization is fixed-point (TFLITE, UPWARD or TONEAREST), or ONNX's float32 one (rounding ONNX) "
          "on a configuration whose output stage scales in float32 (ppu.float_scale)", _requant),
     clip_range_rule()),
    summary="integer sum over height and width, then one requantization (QLinearGlobalAveragePool), as a depthwise "
            "convolution with an all-ones kernel")


# -- what stays on the CPU, and why ---------------------------------------------------------------------------------

def _float_refusal(what: str, why: str) -> Check:
    def test(ctx):
        t = ttype(ctx.root.args[0])
        return f"found {ctx.root.op.name} on {t.dtype if t else 'an unknown type'}"
    return Check((Rule(why, test),), summary=what + " (kept on the CPU)")


_FLOAT_SUM = ("onnxruntime runs a ReduceMean / GlobalAveragePool that it does not fuse (int8 or uint8 "
              "DequantizeLinear → op → QuantizeLinear without a QLinear kernel) as a float32 sum in its own order, "
              "whose rounding an integer sum does not reproduce for every input: it stays on the CPU")
_FLOAT_CONV_T = ("onnxruntime runs a QDQ ConvTranspose in float32 (no QLinear kernel on its CPU provider): MLAS "
                 "products and sums of dequantized values, whose rounding the NPU's integer MACs do not reproduce "
                 "for every input: it stays on the CPU")

CPU_ONLY = {
    "nn.global_avg_pool2d": _float_refusal("global average pool", _FLOAT_SUM),
    "mean": _float_refusal("mean", "a mean is offloaded only inside a quantized MEAN group (npu.qnn_mean); "
                                   + _FLOAT_SUM),
    "nn.conv2d_transpose": _float_refusal("transposed convolution", _FLOAT_CONV_T),
}
