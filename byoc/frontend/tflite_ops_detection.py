"""TFLite converter for the ``TFLite_Detection_PostProcess`` custom op → ``vision.detection_postprocess``
(byoc/ops/detection.py).

The options are a flexbuffer map in the operator's custom_options, read with the ``flatbuffers`` package's
flexbuffers module; a malformed buffer or a missing or mistyped key is a ModelError naming the operator. Quantized
(uint8 / int8) box encodings, class predictions and anchors are dequantized as LiteRT does, (float(q) − zp)·scale,
which is ``qnn.dequantize`` bit for bit (a constant anchor tensor is dequantized here).
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Expr, Span
from .tflite_context import OpContext, converter, tensor_name

__all__ = ["parse_options"]

_INT_KEYS = ("max_detections", "max_classes_per_detection", "num_classes")
_FLOAT_KEYS = ("nms_score_threshold", "nms_iou_threshold", "y_scale", "x_scale", "h_scale", "w_scale")


def parse_options(ctx: OpContext) -> dict:
    """The op's attributes from its flexbuffer options (LiteRT's Init: detections_per_class defaults to 100,
    use_regular_nms to false)."""
    from flatbuffers import flexbuffers
    raw = ctx.op.custom_options
    if not raw:
        raise ctx.fail("has no custom options; TFLite_Detection_PostProcess needs its flexbuffer map")
    try:
        root = flexbuffers.GetRoot(bytearray(raw))
        if not root.IsMap:
            raise ValueError("the root is not a map")
        m = root.AsMap
        keys = set(m.Keys.Value) if hasattr(m.Keys, "Value") else {k.AsString for k in m.Keys}
        opts: dict = {}
        for k in _INT_KEYS + _FLOAT_KEYS:
            if k not in keys:
                raise ctx.fail(f"custom option '{k}' is missing", hint="LiteRT reads every one of them")
            v = m[k]
            opts[k] = int(v.AsInt) if k in _INT_KEYS else float(np.float32(v.AsFloat))
        opts["detections_per_class"] = int(m["detections_per_class"].AsInt) if "detections_per_class" in keys \
            else 100
        opts["use_regular_nms"] = bool(m["use_regular_nms"].AsBool) if "use_regular_nms" in keys else False
    except (ValueError, TypeError, IndexError, KeyError, AttributeError, RecursionError) as e:
        raise ctx.fail(f"custom options are not a valid flexbuffer map ({type(e).__name__}: {e})") from None
    return opts


def _float_input(ctx: OpContext, i: int, what: str) -> Expr:
    t = ctx.tensor(i)
    if t.dtype == "float32":
        return ctx.input(i)
    if t.dtype not in ("uint8", "int8"):
        raise ctx.fail(f"{what} {t.label} is {t.dtype}; LiteRT takes float32, uint8 or int8")
    scale, zp = ctx.quant(t, what)
    value = ctx.model.constant(t)
    if value is not None:
        return ctx.const(((value.astype(np.float32) - np.float32(zp)) * np.float32(scale)).astype(np.float32),
                         "float32")
    return ctx.call("qnn.dequantize", [ctx.input(i), ctx.const(scale, "float32"), ctx.const(zp, "int32")])


@converter("CUSTOM:TFLite_Detection_PostProcess", quant=("qnn.dequantize", "vision.detection_postprocess"),
           float=("vision.detection_postprocess",))
def convert_detection_postprocess(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(3, outputs=4)
    opts = parse_options(ctx)
    args = [_float_input(ctx, 0, "box_encodings"), _float_input(ctx, 1, "class_predictions"),
            _float_input(ctx, 2, "anchors")]
    for j in range(4):
        if ctx.out_tensor(j).dtype != "float32":
            raise ctx.fail(f"output {ctx.out_tensor(j).label} is {ctx.out_tensor(j).dtype}; the outputs are float32")
    tup = ctx.call("vision.detection_postprocess", args, opts)
    return [ctx.item(tup, j, Span(tensor_name(ctx.out_tensor(j)))) for j in range(4)]
