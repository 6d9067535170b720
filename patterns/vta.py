"""The ``vta`` pattern table: a small TVM-VTA-like int8 GEMM core (1×16×16 MACs, int32 accumulators).

VTA's loads pad with at most 15 elements per side (4-bit fields), its GEMM runs ordinary convolutions and dense
layers, and its ALU does add, min/max and shifts — so the table offloads convolutions, dense layers, additions
and ReLU/clip, nothing else.

Codegen: ``vta`` partitions run on the NPU simulator with the ``vta-default`` preset (1×16×16 int8 GEMM, 100 MHz,
VTA's inp/wgt/acc/out buffers; npu_sim/config.py): ``VTA_LOWERING`` maps each composite onto a simulator layer
kind. One honest difference from real VTA: the simulator requantizes with TFLite's fixed-point multiplier (so the
results are bit-exact with the reference), while VTA's ALU has only add/min/max/shift and would need a
power-of-two rescale; the requantization's cycles are modelled on the ALU (``shares_mac_engine``).
"""
from __future__ import annotations

from byoc.relay.dataflow_pattern import is_constant, is_op, wildcard
from byoc.relay.dataflow_pattern.check import Check, rule

from .common import (batch_one_rule, capture, clip_range_rule, conv_chain, dtype_rule, fixed_point_rule,
                     input_of, layout_rule, optional_clip, per_tensor_rule, root, ttype)
from .registry import CompositePattern, register_pattern_table

__all__ = ["pattern_table", "MAX_PAD", "VTA_LOWERING", "VTA_PRESET"]

MAX_PAD = 15


@rule("groups is 1 (VTA's GEMM has no depthwise mode)")
def _groups(ctx):
    g = ctx["conv"].attrs.groups
    return None if g == 1 else f"found groups={g}"


@rule(f"padding is at most {MAX_PAD} per side (4-bit load padding) and an nn.pad pads only height and width")
def _pad(ctx):
    total = list(ctx["conv"].attrs.padding)
    pad = ctx.get("pad")
    if pad is not None:
        pw = [tuple(p) for p in pad.attrs.pad_width]
        if len(pw) != 4 or pw[0] != (0, 0) or pw[3] != (0, 0):
            return f"found pad_width {pw}"
        total = [total[0] + pw[1][0], total[1] + pw[2][0], total[2] + pw[1][1], total[3] + pw[2][1]]
    return None if max(total) <= MAX_PAD else f"found {tuple(total)}"


@rule("dilation is 1")
def _dilation(ctx):
    d = tuple(ctx["conv"].attrs.dilation)
    return None if d == (1, 1) else f"found {d}"


_ZPS = per_tensor_rule("zero points", [input_of("conv", 2), input_of("conv", 3), input_of("rq", 2),
                                       input_of("rq", 4)])
_IO = dtype_rule("input and output", [capture("data"), root], ("int8",))

CONV_CHECK = Check((_groups, layout_rule("conv", "data_layout", ("NHWC",)), _IO, batch_one_rule(capture("data")),
                    _pad, _dilation, _ZPS, fixed_point_rule("rq"), clip_range_rule()), summary="convolution")
DENSE_CHECK = Check((_IO, _ZPS, fixed_point_rule("rq"), clip_range_rule()), summary="dense")


@rule("both inputs and the output have the same shape")
def _same(ctx):
    c = ctx["core"]
    shapes = {t.shape if t else None for t in (ttype(c.args[0]), ttype(c.args[1]), ttype(ctx.root))}
    return None if len(shapes) == 1 and None not in shapes else f"found {sorted(map(str, shapes))}"


ADD_CHECK = Check((dtype_rule("inputs and output", [input_of("core", 0), input_of("core", 1), root], ("int8",)),
                   _same, per_tensor_rule("scales and zero points", [input_of("core", i) for i in range(2, 8)]),
                   clip_range_rule()), summary="addition on the ALU")
ACT_CHECK = Check((dtype_rule("input", [input_of("act", 0)], ("int8", "uint8")),), summary="ReLU / clip on the ALU")


@register_pattern_table("vta")
def pattern_table() -> list[CompositePattern]:
    add = optional_clip(is_op("qnn.add")(wildcard("lhs"), wildcard("rhs"), *[is_constant() for _ in range(6)])
                        .named("core"))
    act = is_op("nn.relu")(wildcard("data")).named("act") | is_op("clip")(wildcard("data")).named("act")
    return [
        CompositePattern("vta.qnn_conv2d", conv_chain("qnn.conv2d"), CONV_CHECK),
        CompositePattern("vta.qnn_dense", conv_chain("qnn.dense", with_pad=False), DENSE_CHECK),
        CompositePattern("vta.qnn_add", add, ADD_CHECK),
        CompositePattern("vta.relu", act, ACT_CHECK),
    ]


VTA_PRESET = "vta-default"
# composite → the NPU simulator's layer kind (npu_sim/layer_kinds.py)
VTA_LOWERING = {"vta.qnn_conv2d": "conv2d", "vta.qnn_dense": "dense", "vta.qnn_add": "add", "vta.relu": "relu"}


def _register_codegen() -> None:
    from runtime.npu_codegen import register_simulator_codegen
    register_simulator_codegen("vta", VTA_LOWERING, npu_config=VTA_PRESET, builtin=True)


_register_codegen()
