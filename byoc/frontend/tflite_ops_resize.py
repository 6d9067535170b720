"""TFLite converters for RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR (``image.resize2d``).

RESIZE_BILINEAR is ``image.resize2d(method="linear")`` on the raw values (LiteRT interpolates the integers of a
quantized tensor and never rescales; byoc/ops/image.py has its per-dtype arithmetic); TVM's coordinate modes
spell TFLite's flags: align_corners → "align_corners", half_pixel_centers → "half_pixel", neither → "asymmetric".
"""
from __future__ import annotations


from ..ir.expr import Expr
from ..ops.image import LINEAR_DTYPES, linear_int_taps
from .tflite_context import OpContext, converter


@converter("RESIZE_NEAREST_NEIGHBOR", quant=("image.resize2d",), float=("image.resize2d",))
def convert_resize_nearest(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    ctx.nhwc_input(0)
    size, align, half = ctx.resize_options()
    mode, rounding = (("align_corners", "") if align else ("half_pixel", "round_prefer_ceil") if half
                      else ("asymmetric", ""))
    return [ctx.call("image.resize2d", [ctx.input(0)], {
        "size": tuple(size), "layout": "NHWC", "method": "nearest_neighbor",
        "coordinate_transformation_mode": mode, "rounding_method": rounding})]


# ------------------------------------------------------------------------------------- resize / batch matmul
@converter("RESIZE_BILINEAR", quant=("image.resize2d",), float=("image.resize2d",))
def convert_resize_bilinear(ctx: OpContext) -> list[Expr]:
    ctx.check_arity(2)
    x_t = ctx.nhwc_input(0)
    ctx.same_dtype(x_t, ctx.out_tensor())
    if x_t.dtype not in LINEAR_DTYPES:
        raise ctx.fail(f"input {x_t.label} is {x_t.dtype}; RESIZE_BILINEAR takes " + ", ".join(LINEAR_DTYPES))
    size, align, half = ctx.resize_options()
    mode = "align_corners" if align else "half_pixel" if half else "asymmetric"
    if x_t.dtype in ("int8", "int16"):
        for axis, (out, inn) in enumerate(zip(size, x_t.shape[1:3])):
            s, _, _ = linear_int_taps(out, inn, mode)
            if int(s.max()) // 1024 >= inn:
                raise ctx.fail(f"resizing {'height' if axis == 0 else 'width'} {inn} to {out}: LiteRT's 10-bit kernel "
                               f"would read row/column {int(s.max()) // 1024}, past the input's edge",
                               hint="its result is undefined (an out-of-bounds read); use a smaller ratio or float")
    return [ctx.call("image.resize2d", [ctx.input(0)], {
        "size": tuple(size), "layout": "NHWC", "method": "linear", "coordinate_transformation_mode": mode,
        "rounding_method": ""})]
