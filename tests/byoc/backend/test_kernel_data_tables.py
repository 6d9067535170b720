"""Build-time tables of a kernel (``Kernel.data``) are keyed by the identity of the array passed in. A regression:
a temporary array (``w.astype(np.int16)`` of non-contiguous weights) was copied and freed, and the next table
built in the same kernel got its id, so the NHWC depthwise fallback schedule read its weights where it expected
its zero-point correction (outputs off by 65,537 on every channel). The oracle is ``byoc.evaluate``."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.ir.module import IRModule
from byoc.transform.infer_type import InferType


def _depthwise(rng, c: int, w: int, k: int, pad: int, rounding: str, dtype: str, zp_out: int):
    v = relay.var("d", shape=(1, 1, w, c), dtype=dtype)
    # OIHW weights: their HWIO view (what the schedules read) is not contiguous.
    wt = relay.const(rng.integers(-127, 128, (c, 1, 1, k)).astype(np.int8))
    y = relay.qnn.op.conv2d(v, wt, relay.const(0), relay.const(0), relay.const(np.float32(0.0089)),
                            relay.const(np.float32([0.0044])), padding=[0, pad, 0, pad], groups=c, channels=c,
                            kernel_size=[1, k], data_layout="NHWC", out_dtype="int32")
    y = relay.nn.bias_add(y, relay.const(rng.integers(-2000, 2000, c).astype(np.int32)), axis=3)
    y = relay.qnn.op.requantize(y, relay.const(np.float32(3.9e-5)), relay.const(0), relay.const(np.float32(0.0127)),
                                relay.const(zp_out), axis=3, rounding=rounding, out_dtype=dtype)
    return InferType()(IRModule.from_expr(relay.Function([v], y)))


# rounding "ONNX" has no vector epilogue, so the per-pixel depthwise schedule runs (with "TFLITE" the paired one)
@pytest.mark.parametrize("rounding", ["ONNX", "TFLITE"])
@pytest.mark.parametrize("dtype,zp_out", [("uint8", 100), ("int8", -3)])
@pytest.mark.parametrize("c,k,pad", [(16, 3, 1), (32, 3, 0), (40, 5, 2), (16, 1, 0)])
def test_nhwc_depthwise_equals_evaluate(rounding, dtype, zp_out, c, k, pad):
    rng = np.random.default_rng(c * 100 + k * 10 + pad)
    mod = _depthwise(rng, c, 24, k, pad, rounding, dtype, zp_out)
    exe = byoc.build(mod, target="llvm")
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    for _ in range(2):
        x = rng.integers(lo, hi, (1, 1, 24, c)).astype(dtype)
        ref = byoc.evaluate(mod, {"d": x})
        ref = ref[0] if isinstance(ref, (list, tuple)) else ref
        got = exe.run({"d": x})[0]
        assert np.array_equal(got, ref), f"{int((got != ref).sum())}/{ref.size} differ"
