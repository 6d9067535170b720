"""The layer kinds the NPU compiler can lower, and the map from a target's composite names onto them.

A target other than ``npu`` names its composites itself (``myacc.conv_block``, ``vta.qnn_conv2d``); its lowering
map says which kind each one is. The kind fixes the composite body the compiler accepts (the same bodies the
``npu`` table produces, docs/targets.md): a body that does not fit is refused when the partition is compiled, with
the composite named, never lowered to something else.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Mapping

from byoc.errors import CodegenError

__all__ = ["LayerKind", "LAYER_KINDS", "check_composite_map"]


@dataclass(frozen=True)
class LayerKind:
    name: str
    lowering: str      # the npu composite whose lowering runs this kind (npu_sim/lower.py)
    body: str          # the composite body it accepts, innermost op first ([op] = optional)
    unit: str          # where it runs and what else it requires


_CONV_BODY = "[nn.pad →] qnn.conv2d → [nn.bias_add] → qnn.requantize → [clip]"

LAYER_KINDS: dict[str, LayerKind] = {k.name: k for k in (
    LayerKind("conv2d", "npu.qnn_conv2d", _CONV_BODY,
              "MAC array + PPU requantization; NHWC, batch 1, groups 1 or depthwise (groups = input channels); "
              "kernels in any layout kernel_to_hwio reads: HWIO (TVM's TFLite form), OHWI, OIHW, depthwise HWOI "
              "[KH, KW, Cin, M] (TVM's) or HWIO [KH, KW, 1, Cin·M]"),
    LayerKind("depthwise_conv2d", "npu.qnn_depthwise_conv2d", _CONV_BODY, "the same lowering as conv2d"),
    LayerKind("dense", "npu.qnn_dense", "qnn.dense → [nn.bias_add] → qnn.requantize → [clip]",
              "MAC array + PPU requantization; 2-D input"),
    LayerKind("add", "npu.qnn_add", "qnn.add → [clip]", "PPU; TFLITE rounding, broadcasting along H/W/C"),
    LayerKind("subtract", "npu.qnn_subtract", "qnn.subtract → [clip]",
              "PPU (the ADD unit, second operand subtracted); TFLITE rounding, broadcasting along H/W/C"),
    LayerKind("mul", "npu.qnn_mul", "qnn.mul → [clip]", "PPU; TFLITE rounding, broadcasting along H/W/C"),
    LayerKind("avg_pool2d", "npu.qnn_avg_pool2d", "cast(int32) → nn.avg_pool2d → cast → [clip]",
              "PPU; NHWC, batch 1, ceil_mode off"),
    LayerKind("max_pool2d", "npu.qnn_max_pool2d", "nn.max_pool2d → [clip]", "PPU; NHWC, batch 1, ceil_mode off"),
    LayerKind("mean", "npu.qnn_mean", "cast(int32) → mean → qnn.requantize (TVM's form), or qnn.mean; → [clip]",
              "PPU; over H and W of an NHWC tensor, batch 1"),
    LayerKind("sigmoid", "npu.qnn_sigmoid",
              "qnn.dequantize → sigmoid → qnn.quantize (TVM's form), or qnn.sigmoid; → [clip]",
              "PPU lookup table; int8/uint8"),
    LayerKind("tanh", "npu.qnn_tanh", "qnn.dequantize → tanh → qnn.quantize (TVM's form), or qnn.tanh; → [clip]",
              "PPU lookup table; int8/uint8"),
    LayerKind("requantize", "npu.qnn_requantize", "qnn.requantize → [clip]",
              "PPU; per-tensor, or per-channel along the last axis"),
    LayerKind("clip", "npu.qnn_clip", "clip, or nn.relu → [clip]", "PPU copy with a clamp"),
    LayerKind("relu", "npu.qnn_clip", "nn.relu → [clip], or clip", "the same lowering as clip"),
    LayerKind("concatenate", "npu.qnn_concatenate", "qnn.concatenate → [clip]",
              "PPU copies / lookup tables, one block per input; int8/uint8"),
    LayerKind("lut", "elementwise_lut",
              "any chain of elementwise ops on one input, every other operand one constant value (e.g. "
              "TVM's hard-swish and leaky-relu forms qnn.dequantize → … → qnn.quantize, qnn.hardswish)",
              "PPU lookup table: the chain evaluated on all 256 values; int8 → int8 or uint8 → uint8, same shape"),
    LayerKind("leaky_relu", "leaky_relu", "qnn.leaky_relu (or TVM's qnn.dequantize → nn.leaky_relu → qnn.quantize) "
              "→ [clip]", "PPU: int8/uint8 by lookup table (as the lut kind); int16 → int16 (alpha ≥ 0) as TFLite's "
              "two-multiplier formula, one command per tile, charged as Vela's 16-bit sequence"),
    LayerKind("rsqrt", "rsqrt", "qnn.rsqrt → [clip]",
              "PPU lookup table of LiteRT's RSQRT (Vela's RSQRT LUT): int8, or int16 as an interpolating 16-bit table; inputs below "
              "the zero point (LiteRT's error) are refused by the simulator"),
    LayerKind("qdq_elementwise", "npu.qdq_elementwise",
              "qnn.dequantize → elementwise ops whose other operands are the input or single constant values → "
              "qnn.quantize → [clip] (ONNX's HardSwish / HardSigmoid between DequantizeLinear and QuantizeLinear)",
              "PPU lookup table: the group evaluated on all 256 values; int8 → int8 or uint8 → uint8, same shape"),
    LayerKind("qdq_resize", "npu.qdq_resize",
              "qnn.dequantize → image.resize2d (nearest_neighbor, NHWC) → qnn.quantize → [clip]",
              "PPU RESIZE on the integers (index maps equal to one of its three modes), then a lookup table of "
              "quantize(dequantize(v)) when that is not the identity; batch 1, upscaling"),
    LayerKind("global_avg_pool", "npu.qnn_global_avg_pool",
              "cast(int32) → sum (axes 1 and 2, keepdims) → qnn.requantize → [clip] (QLinearGlobalAveragePool)",
              "MAC array (depthwise convolution with an all-ones H×W kernel: the exact int32 sum) + PPU "
              "requantization (float32 for rounding ONNX); NHWC, batch 1"),
    LayerKind("int16_mul", "int16_mul", "cast(int16 → int32) ×2 → multiply → qnn.requantize (TFLITE, input zero point 0) "
              "→ [clip]", "PPU MUL with the requantize's multiplier as explicit scaling (Vela's LSTM gate products); "
              "int16 × int16 → int16 or int8, same shapes"),
    LayerKind("softmax", "softmax", "qnn.softmax (axis −1, rounding TFLITE)",
              "PPU, TFLite's integer softmax per row (a tile holds whole rows); int8 → int8, uint8 → uint8 or "
              "int8 → int16; charged as Vela's 30-operation sequence (cost.softmax_cycles)"),
    LayerKind("conv2d_transpose", "conv2d_transpose",
              "qnn.conv2d_transpose (NHWC, OHWI) → [nn.bias_add] → qnn.requantize → [clip]",
              "MAC array + PPU requantization: a stride-1 convolution with the kernel flipped over the IFM upscaled "
              "2x (the input zero point inserted; strides 1 or 2), int8/uint8 or int16x8, batch 1"),
    LayerKind("stack", "stack", "stack (TFLite PACK: equal shapes and quantization)",
              "PPU COPY of each input into its block of the output (Vela's concatenation of the inputs reshaped "
              "with the new unit axis); int8/uint8/int16, output rank at most 4"),
    LayerKind("argmax", "argmax", "argmax (the last axis, first index on ties) → [cast(int64)]",
              "PPU, the index of each row's largest value (a tile holds whole rows); int8/uint8 in, at most 127 "
              "channels, int32 or int64 out; charged as Vela's depthwise / max pool / LUT / cast sequence "
              "(cost.argmax_cycles)"),
)}


def check_composite_map(target: str, composites: Mapping[str, str]) -> dict[str, str]:
    """``{composite name: layer kind}`` checked: names are ``<target>.<something>`` and every kind is known.
    Every problem is reported at once, each naming its composite."""
    if not isinstance(composites, Mapping) or not composites:
        raise CodegenError(f"target {target!r}: the lowering map must be a non-empty mapping of composite name -> "
                           f"layer kind, got {composites!r:.80}",
                           hint="e.g. {'" + target + ".conv_block': 'conv2d'}; kinds: " + ", ".join(LAYER_KINDS))
    problems = []
    for name, kind in composites.items():
        if not isinstance(name, str) or not name.startswith(f"{target}.") or name == f"{target}.":
            problems.append(f"composite {name!r}: names of target {target!r} start with '{target}.'")
        if not isinstance(kind, str) or kind not in LAYER_KINDS:
            close = difflib.get_close_matches(str(kind), list(LAYER_KINDS), n=1)
            problems.append(f"composite {name!r}: {kind!r} is not a simulator layer kind"
                            + (f" (did you mean {close[0]!r}?)" if close else ""))
    if problems:
        raise CodegenError(f"target {target!r}: bad lowering map ({len(problems)} problem(s))",
                           notes=tuple("  - " + p for p in problems),
                           hint="layer kinds: " + ", ".join(LAYER_KINDS))
    return dict(composites)
