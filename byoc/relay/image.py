"""``relay.image``: image op builders with TVM's signatures."""
from __future__ import annotations

from .op import make_call

__all__ = ["resize2d"]


def resize2d(data, roi=None, size=None, layout="NCHW", method="linear", coordinate_transformation_mode="half_pixel",
             rounding_method="", cubic_alpha=-0.5, cubic_exclude=0, extrapolation_value=0.0, out_dtype=None):
    """``method="nearest_neighbor"`` or ``"linear"`` with TFLite's arithmetic (byoc/ops/image.py)."""
    return make_call("image.resize2d", (data,), dict(
        roi=None if roi is None else tuple(roi), size=tuple(size or ()), layout=layout, method=method,
        coordinate_transformation_mode=coordinate_transformation_mode, rounding_method=rounding_method,
        cubic_alpha=float(cubic_alpha), cubic_exclude=int(cubic_exclude),
        extrapolation_value=float(extrapolation_value), out_dtype=out_dtype or ""))
