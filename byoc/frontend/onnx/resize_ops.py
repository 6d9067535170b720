"""``Resize`` / ``Upsample`` of an NCHW tensor over H and W ⇒ ``image.resize2d`` (UNet decoders, FPN/detection
heads). Nearest (``nearest_mode`` floor / ceil / round_prefer_floor / round_prefer_ceil) and linear, with the
coordinate modes the IR op computes; the output size comes from constant ``scales`` (only where in·scale is the
exact output size, so the op's in/out ratio equals ONNX's 1/scale) or ``sizes``. Cubic, antialias,
exclude_outside, tf_crop_and_resize and keep_aspect_ratio_policy are refused by name."""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Span
from ...relay.op import make_call
from .model import node_label

__all__ = ["RESIZE_CONVERTERS"]

_NEAREST = {"floor": "floor", "ceil": "ceil", "round_prefer_floor": "round_prefer_floor",
            "round_prefer_ceil": "round_prefer_ceil"}
_COORD = ("asymmetric", "align_corners", "half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn")


def _resize(imp, node, attrs):
    x = imp.expr(node.input[0])
    xs = imp.shape_of(x)
    label = node_label(node)
    mode = attrs.get("mode", "nearest")
    coord = attrs.get("coordinate_transformation_mode", "half_pixel" if node.op_type == "Resize" and imp.opset >= 11
                      else "asymmetric")
    for key, default in (("antialias", 0), ("exclude_outside", 0)):
        if attrs.get(key, default):
            raise ModelError(f"{label}: {key}={attrs[key]} is not supported")
    if attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise ModelError(f"{label}: keep_aspect_ratio_policy {attrs['keep_aspect_ratio_policy']!r} is not supported")
    if mode not in ("nearest", "linear"):
        raise ModelError(f"{label}: Resize mode {mode!r} is not supported", hint="nearest, linear")
    if coord not in _COORD or (mode == "linear" and coord == "tf_half_pixel_for_nn"):
        raise ModelError(f"{label}: coordinate_transformation_mode {coord!r} is not supported for {mode}")
    if len(xs) != 4:
        raise ModelError(f"{label}: only 4-D NCHW input is supported, found {list(xs)}")
    ins = list(node.input) + [""] * 4
    if node.op_type == "Upsample" or imp.opset < 11:
        scales = imp.const(ins[1], node, "scales") if imp.opset >= 9 else np.asarray(attrs.get("scales", []))
        sizes = None
    else:
        scales = imp.const(ins[2], node, "scales") if ins[2] else None
        sizes = imp.const(ins[3], node, "sizes") if ins[3] else None
    if "axes" in attrs:
        axes = [a + 4 if a < 0 else a for a in attrs["axes"]]
        full_s, full_z = [1.0] * 4, list(xs)
        for i, a in enumerate(axes):
            if scales is not None and scales.size:
                full_s[a] = float(scales.reshape(-1)[i])
            if sizes is not None and sizes.size:
                full_z[a] = int(sizes.reshape(-1)[i])
        scales = np.asarray(full_s, np.float32) if scales is not None and scales.size else None
        sizes = np.asarray(full_z, np.int64) if sizes is not None and sizes.size else None
    if sizes is not None and sizes.size:
        out = [int(v) for v in sizes.reshape(-1)]
    elif scales is not None and scales.size:
        sc = [float(v) for v in np.asarray(scales, np.float32).reshape(-1)]
        out = [int(np.floor(d * s)) for d, s in zip(xs, sc)]
        if any(np.float32(o) / np.float32(d) != np.float32(s) for o, d, s in zip(out, xs, sc)):
            raise ModelError(f"{label}: scales {sc} do not give whole output sizes from {list(xs)}",
                             hint="give sizes instead of scales")
    else:
        raise ModelError(f"{label}: Resize needs scales or sizes")
    if len(out) != 4 or out[:2] != list(xs[:2]):
        raise ModelError(f"{label}: only H and W can be resized, output {out} from {list(xs)}")
    if mode == "linear" and coord == "pytorch_half_pixel":
        if min(out[2:]) <= 1:
            raise ModelError(f"{label}: pytorch_half_pixel to a size of 1 is not supported")
        coord = "half_pixel"
    a = {"size": tuple(out[2:]), "layout": "NCHW", "method": "nearest_neighbor" if mode == "nearest" else "linear",
         "coordinate_transformation_mode": coord}
    if mode == "linear" and imp.dtype_of(x) in ("float32", "uint8", "int8"):
        # its float32 blend, bit for bit (a QDQ Resize then quantizes the same; a QOperator one truncates)
        a["arithmetic"] = "onnxruntime"
    if mode == "nearest":
        nm = attrs.get("nearest_mode", "floor" if node.op_type == "Upsample" or imp.opset < 11 else "round_prefer_floor")
        if nm not in _NEAREST:
            raise ModelError(f"{label}: nearest_mode {nm!r} is not supported")
        a["rounding_method"] = _NEAREST[nm]
    return make_call("image.resize2d", (x,), a, span=Span(node.name or node.output[0]))


RESIZE_CONVERTERS = {"Resize": _resize, "Upsample": _resize}
