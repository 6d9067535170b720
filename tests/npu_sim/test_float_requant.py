"""The PPU's float32 output stage (Rounding.FLOAT32_HALF_EVEN, ppu.float_scale) on a standalone ONNX requantize:
every int8 input against numpy's float32 formula (MLAS: float32(x − zp) · float32(s_in / s_out), round half to
even, + zp, saturate); a fixed-point configuration refuses it."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import ByocError


def _requantize(s_in, s_out, zp_in, zp_out):
    x = relay.var("x", shape=(1, 4, 4, 16), dtype="int8")
    y = relay.qnn.op.requantize(x, relay.const(np.float32(s_in)), relay.const(zp_in), relay.const(np.float32(s_out)),
                                relay.const(zp_out), axis=3, out_dtype="int8", rounding="ONNX")
    return byoc.IRModule.from_expr(relay.Function([x], y))


@pytest.mark.parametrize("s_in, s_out, zp_in, zp_out", [(0.0371, 0.0742, 3, -5), (0.5, 0.25, 0, 0),
                                                         (0.013, 0.0071, -17, 90)])
def test_every_int8_input_matches_the_float32_formula(s_in, s_out, zp_in, zp_out):
    mod = _requantize(s_in, s_out, zp_in, zp_out)
    part = byoc.partition_for("npu", mod)
    assert any(f.attrs.get("Compiler") == "npu" for _, f in part.items())
    v = np.arange(-128, 128, dtype=np.int8).reshape(1, 4, 4, 16)
    real = np.float32(np.float32(s_in) / np.float32(s_out))
    want = np.clip(np.rint((v.astype(np.float32) - np.float32(zp_in)) * real) + zp_out, -128, 127).astype(np.int8)
    for cfg in ("ethos-u55-256-like", "ethos-n78-like"):
        np.testing.assert_array_equal(byoc.build(part, target="npu,llvm", npu_config=cfg).run({"x": v})[0], want)


def test_a_fixed_point_output_stage_refuses_it():
    part = byoc.partition_for("npu", _requantize(0.0371, 0.0742, 3, -5))
    with pytest.raises(ByocError, match="float_scale"):
        byoc.build(part, target="npu,llvm", npu_config="ethos-u55-256").run(
            {"x": np.zeros((1, 4, 4, 16), np.int8)})
