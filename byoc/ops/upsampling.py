"""``nn.upsampling``: Relay's upsampling, defined (as TVM's TOPI computes it) as an ``image.resize2d`` to
``round(H·scale_h) × round(W·scale_w)`` with "asymmetric" coordinates, or "align_corners" when
``align_corners`` is set; ``bilinear`` is resize's ``linear``. Rounding of nearest-neighbour source indices
follows resize's default for the mode (floor; round for align_corners)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir.attrs import Attrs
from .image import Resize2DAttrs, _compute as _resize_compute, _rel as _resize_rel
from .registry import FusionKind, register_op
from .rel import fail, tensor_arg

__all__ = ["UpSamplingAttrs", "as_resize_attrs"]

_METHODS = {"nearest_neighbor": "nearest_neighbor", "bilinear": "linear"}


@dataclass(frozen=True)
class UpSamplingAttrs(Attrs):
    scale_h: float = 1.0
    scale_w: float = 1.0
    layout: str = "NCHW"
    method: str = "nearest_neighbor"
    align_corners: bool = False


def _round_half_away(v: float) -> int:
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def as_resize_attrs(shape, attrs) -> Resize2DAttrs:
    """The ``image.resize2d`` attributes computing this upsampling of a tensor of ``shape``."""
    if attrs.layout not in ("NCHW", "NHWC"):
        raise fail("nn.upsampling", "layout", "NCHW or NHWC", repr(attrs.layout))
    if attrs.method not in _METHODS:
        raise fail("nn.upsampling", "method", "'nearest_neighbor' or 'bilinear' (bicubic is not implemented)",
                   repr(attrs.method))
    if len(shape) != 4:
        raise fail("nn.upsampling", "data", f"a 4-D tensor in layout {attrs.layout}", tuple(shape))
    h, w = shape[attrs.layout.index("H")], shape[attrs.layout.index("W")]
    size = (_round_half_away(h * float(attrs.scale_h)), _round_half_away(w * float(attrs.scale_w)))
    if min(size) <= 0:
        raise fail("nn.upsampling", "scale_h/scale_w", "scales giving a positive output size",
                   (attrs.scale_h, attrs.scale_w))
    return Resize2DAttrs(size=size, layout=attrs.layout, method=_METHODS[attrs.method],
                         coordinate_transformation_mode="align_corners" if attrs.align_corners else "asymmetric")


def _rel(types, attrs):
    t = tensor_arg("nn.upsampling", ("data",), types, 0)
    return _resize_rel(types, as_resize_attrs(t.shape, attrs))


register_op("nn.upsampling", ("data",), attrs=UpSamplingAttrs, rel=_rel, fusion=FusionKind.INJECTIVE,
            compute=lambda args, attrs: _resize_compute(args, as_resize_attrs(args[0].shape, attrs)),
            doc="Upsample H and W by scale_h / scale_w (nearest neighbour or bilinear), as image.resize2d.")
