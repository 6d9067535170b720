"""npu_sim/lower_qdq.py: the lowerings of ONNX's quantized groups, on relay-built graphs, against numpy formulas
written here (the ONNX-model tests against onnxruntime are tests/byoc/frontend/test_onnx_npu_groups.py)."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.ir.expr import Call, Function
from byoc.ir.traversal import post_order
from byoc.ops.image import Resize2DAttrs
from byoc.relay.op import make_call
from npu_sim.lower_qdq import nearest_code, qdq_table


def _composites(part):
    return [n.op.attrs["Composite"] for _, f in part.items() if f.attrs.get("Compiler")
            for n in post_order(f) if isinstance(n, Call) and isinstance(n.op, Function)]


def _scaled_group(dtype="int8", zp_in=-3, zp_out=7, factor=None):
    x = relay.var("x", shape=(1, 4, 4, 16), dtype=dtype)
    d = relay.qnn.op.dequantize(x, relay.const(np.float32(0.05)), relay.const(zp_in))
    f = relay.multiply(d, relay.const(np.float32(1.7) if factor is None else factor))
    y = make_call("qnn.quantize", [f, relay.const(np.float32(0.07)), relay.const(zp_out)],
                  {"out_dtype": dtype, "rounding": "ONNX"})   # ONNX's QuantizeLinear: x / scale, half to even
    return x, y


def test_elementwise_table_is_the_float32_formula_on_every_value():
    x, y = _scaled_group()
    v = np.arange(-128, 128).astype(np.int8)
    f32 = np.float32
    real = (v.astype(f32) - f32(-3)) * f32(0.05) * f32(1.7)
    want = np.clip(np.rint(real / f32(0.07)) + 7, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(qdq_table(y, x, "int8"), want)
    mod = byoc.IRModule.from_expr(relay.Function([x], y))
    part = byoc.partition_for("npu", mod)
    assert _composites(part) == ["npu.qdq_elementwise"]
    got = byoc.build(part, target="npu,llvm").run({"x": v.reshape(1, 4, 4, 16)})[0]
    np.testing.assert_array_equal(got.reshape(-1), want)


def test_elementwise_table_refuses_position_dependent_operands():
    x, y = _scaled_group(factor=np.linspace(1, 2, 16).astype(np.float32))
    assert "16 values" in qdq_table(y, x, "int8")
    mod = byoc.IRModule.from_expr(relay.Function([x], y))
    part, rep = byoc.partition_for("npu", mod, return_report=True)
    assert not _composites(part)
    assert any("16 values" in n.reason for n in rep.cpu_ops())


@pytest.mark.parametrize("mode, rounding", [("asymmetric", "floor"), ("half_pixel", "round_prefer_floor"),
                                            ("align_corners", "round"), ("half_pixel", "round_prefer_ceil")])
@pytest.mark.parametrize("in_hw, out_hw", [((8, 12), (16, 24)), ((5, 5), (15, 15)), ((3, 4), (12, 16))])
def test_nearest_code_is_a_mode_with_the_same_source_indices(mode, rounding, in_hw, out_hw):
    from byoc.ops.image import nearest_indices
    from npu_sim.execute import RESIZE_MODES
    a = Resize2DAttrs(size=out_hw, layout="NHWC", method="nearest_neighbor", coordinate_transformation_mode=mode,
                      rounding_method=rounding)
    code = nearest_code(a, in_hw, out_hw)
    if isinstance(code, str):
        pytest.skip(code)
    m, r = RESIZE_MODES[code]
    for i, o in zip(in_hw, out_hw):
        np.testing.assert_array_equal(nearest_indices(o, i, m, r), nearest_indices(o, i, mode, rounding))


def test_nearest_code_of_a_2x_floor_upscale():
    a = Resize2DAttrs(size=(16, 16), layout="NHWC", method="nearest_neighbor",
                      coordinate_transformation_mode="asymmetric", rounding_method="floor")
    assert nearest_code(a, (8, 8), (16, 16)) == 0   # TFLite's asymmetric: source y // 2


def test_nearest_code_refuses_a_map_of_no_npu_mode():
    a = Resize2DAttrs(size=(16, 16), layout="NHWC", method="nearest_neighbor",
                      coordinate_transformation_mode="asymmetric", rounding_method="ceil")
    assert isinstance(nearest_code(a, (8, 8), (16, 16)), str)


@pytest.mark.parametrize("rounding, dtype", [("ONNX", "int8"), ("ONNX", "uint8"), ("TFLITE", "int8")])
def test_global_pool_is_the_integer_sum_then_one_requantize(rounding, dtype):
    """cast → sum(H, W) → requantize as a depthwise all-ones convolution: against numpy's exact int sum and
    MLAS's float32 requantize (ONNX), and the reference interpreter."""
    x = relay.var("x", shape=(1, 7, 5, 12), dtype=dtype)
    zp = 3 if dtype == "int8" else 131
    s = relay.sum(relay.cast(x, "int32"), axis=[1, 2], keepdims=True)
    y = relay.qnn.op.requantize(s, relay.const(np.float32(0.04)), relay.const(35 * zp),
                                relay.const(np.float32(0.01 * 35)), relay.const(-2 if dtype == "int8" else 120),
                                axis=3, out_dtype=dtype, rounding=rounding)
    mod = byoc.IRModule.from_expr(relay.Function([x], y))
    part = byoc.partition_for("npu", mod)
    assert _composites(part) == ["npu.qnn_global_avg_pool"]
    info = np.iinfo(dtype)
    v = np.random.default_rng(0).integers(info.min, int(info.max) + 1, (1, 7, 5, 12)).astype(dtype)
    got = byoc.build(part, target="npu,llvm").run({"x": v})[0]
    if rounding == "ONNX":
        acc = v.astype(np.int64).sum(axis=(1, 2), keepdims=True) - 35 * zp
        real = np.float32(np.float32(0.04) / np.float32(0.01 * 35))
        want = np.clip(np.rint(acc.astype(np.float32) * real) - 2 if dtype == "int8" else
                       np.rint(acc.astype(np.float32) * real) + 120, info.min, info.max).astype(dtype)
        np.testing.assert_array_equal(got, want)
    # TFLite's fixed-point requantize is checked against LiteRT elsewhere; here the NPU equals the interpreter
    np.testing.assert_array_equal(got, byoc.evaluate(mod, {"x": v})[0])
