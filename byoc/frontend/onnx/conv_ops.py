"""1-D convolution and ConvTranspose (audio models, UNet decoders, detection heads).

* 1-D ``Conv`` (NCL input, OIL weight) runs as the 2-D op over (1, L): ``reshape → nn.conv2d → reshape``
* ``ConvTranspose`` ⇒ ``nn.conv2d_transpose`` (weight IOHW as ONNX stores it), 1-D through the same reshape.
  ``output_shape`` or ``auto_pad`` become explicit pads as ONNX's shape formula defines them:
  ``total = stride·(in − 1) + output_padding + (k − 1)·dilation + 1 − out``, SAME_UPPER putting the odd unit at
  the end (onnxruntime's convention), SAME_LOWER at the beginning.
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Constant, Span
from ...relay.op import make_call
from .model import node_label

__all__ = ["CONV_CONVERTERS"]


def _call(op, args, attrs=None, node=None):
    return make_call(op, args, attrs, span=Span(node.name or node.output[0]) if node is not None else None)


def lift_attrs_to_2d(attrs):
    """A 1-D conv/pool node's attributes for the 2-D op over a unit height."""
    attrs = dict(attrs)
    for key in ("strides", "dilations", "kernel_shape", "output_padding", "output_shape"):
        if key in attrs:
            attrs[key] = [1] + list(attrs[key])
    if "pads" in attrs:
        attrs["pads"] = [0, attrs["pads"][0], 0, attrs["pads"][1]]
    return attrs


def _to_2d(imp, node, attrs, x, w):
    """(x, w, attrs) with a 1-D op's tensors and attributes lifted to 2-D over a unit height."""
    xs = imp.shape_of(x)
    attrs = lift_attrs_to_2d(attrs)
    x = _call("reshape", (x,), {"newshape": (xs[0], xs[1], 1, xs[2])}, node)
    ws = imp.shape_of(w)
    w = _call("reshape", (w,), {"newshape": (ws[0], ws[1], 1, ws[2])}, node)
    return x, w, attrs


def _from_2d(imp, node, out):
    s = imp.shape_of(out)
    return _call("reshape", (out,), {"newshape": (s[0], s[1], s[3])}, node)


def conv_1d_or_2d(imp, node, attrs, conv_2d):
    x, w = imp.expr(node.input[0]), imp.expr(node.input[1])
    if len(imp.shape_of(x)) == 3 and len(imp.shape_of(w)) == 3:
        x, w, attrs = _to_2d(imp, node, attrs, x, w)
        return _from_2d(imp, node, conv_2d(imp, node, attrs, x, w))
    return conv_2d(imp, node, attrs, x, w)


def _conv_transpose_2d(imp, node, attrs, x, w):
    from .float_ops import _spatial_attrs
    xs, ws = imp.shape_of(x), imp.shape_of(w)
    if len(xs) != 4 or len(ws) != 4:
        raise ModelError(f"{node_label(node)}: only 1-D and 2-D ConvTranspose is supported, input {xs}, weight {ws}")
    strides, dil = _spatial_attrs(node, attrs)
    group = int(attrs.get("group", 1))
    k = ws[2:]
    opad = list(attrs.get("output_padding", [0, 0]))
    auto = attrs.get("auto_pad", "NOTSET")
    if "output_shape" in attrs or auto in ("SAME_UPPER", "SAME_LOWER"):
        out = list(attrs["output_shape"])[-2:] if "output_shape" in attrs else [xs[2] * strides[0],
                                                                               xs[3] * strides[1]]
        pads = [0, 0, 0, 0]
        for i in range(2):
            total = strides[i] * (xs[2 + i] - 1) + opad[i] + (k[i] - 1) * dil[i] + 1 - out[i]
            if total < 0:  # the requested size is larger: the extra rows come from output_padding
                opad[i] += -total
                total = 0
            small, big = total // 2, total - total // 2
            lo, hi = (big, small) if auto == "SAME_LOWER" else (small, big)
            pads[i], pads[i + 2] = lo, hi
    elif auto in ("NOTSET", "", "VALID"):
        pads = list(attrs.get("pads", [0, 0, 0, 0])) if auto != "VALID" else [0, 0, 0, 0]
    else:
        raise ModelError(f"{node_label(node)}: unknown auto_pad {auto!r}")
    if len(pads) != 4 or min(pads) < 0:
        raise ModelError(f"{node_label(node)}: pads must be 4 non-negative values for 2-D, found {pads}")
    if any(p >= max(s, d) for p, s, d in zip(opad, strides, dil)):
        raise ModelError(f"{node_label(node)}: output_padding {opad} must be smaller than the stride or dilation")
    from .float_ops import _not_folded_by_ort
    # a weight that is not an initializer is not prepacked: onnxruntime's GEMM + Col2im order (ops/mlas_order.py)
    mlas = imp.dtype_of(x) == "float32" and _not_folded_by_ort(imp, node.input[1])
    wc = imp.constant_value(node.input[1]) if mlas else None
    if isinstance(wc, np.ndarray) and wc.shape == tuple(ws):
        w = Constant(wc)
    out = _call("nn.conv2d_transpose", (x, w), dict(
        channels=ws[1] * group, kernel_size=tuple(k), strides=strides, padding=tuple(pads),
        output_padding=tuple(opad), dilation=dil, groups=group, data_layout="NCHW", kernel_layout="IOHW",
        **({"accumulation": "mlas"} if mlas else {})), node)
    if len(node.input) > 2 and node.input[2]:
        out = _call("nn.bias_add", (out, imp.expr(node.input[2])), {"axis": 1}, node)
    return out


def _conv_transpose(imp, node, attrs):
    if len(node.input) < 2:
        raise ModelError(f"{node_label(node)}: ConvTranspose needs X and W")
    return conv_1d_or_2d(imp, node, attrs, _conv_transpose_2d)


def _conv(imp, node, attrs):
    from .float_ops import conv_2d
    return conv_1d_or_2d(imp, node, attrs, conv_2d)


CONV_CONVERTERS = {"Conv": _conv, "ConvTranspose": _conv_transpose}
_ = np
