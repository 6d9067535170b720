"""int16 RSQRT (LiteRT's interpolated 513-sample table, ``byoc.quant.interpolated_lut``) against LiteRT's
BUILTIN_REF kernel on every valid int16 input, through the importer, ``byoc.evaluate`` and the LLVM CPU build.
Expected values come from LiteRT only."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc.errors import ExecutionError
from byoc.frontend import from_tflite

litert = pytest.importorskip("ai_edge_litert.interpreter")
from byoc.testing.tflite_writer import TFLiteWriter  # noqa: E402

SHAPE = (1, 128, 256)   # every non-negative int16 value once


def _run_litert(model: bytes, x: np.ndarray) -> np.ndarray:
    it = litert.Interpreter(model_content=model, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def _model(s_in: float, s_out: float) -> bytes:
    w = TFLiteWriter()
    x = w.input("x", SHAPE, "int16", scale=s_in, zero_point=0)
    w.output(w.rsqrt(x, out_scale=s_out, out_zp=0))
    return w.finish()


@pytest.mark.parametrize("s_in,s_out", [(6.1e-5, 3.05e-5), (0.01, 0.002), (1e-3, 1e-3), (0.5, 1e-4), (2e-4, 0.05)])
def test_int16_rsqrt_matches_litert_on_every_valid_input(s_in, s_out):
    data = _model(s_in, s_out)
    x = np.arange(0, 32768).reshape(SHAPE).astype(np.int16)
    want = _run_litert(data, x)
    assert np.unique(want).size > 100   # a real curve, not a saturated constant
    mod, params = from_tflite(data)
    ref = byoc.evaluate(mod, {"x": x})
    np.testing.assert_array_equal(np.asarray(ref[0] if isinstance(ref, (list, tuple)) else ref), want)
    exe = byoc.build(mod, target="llvm", params=params)
    np.testing.assert_array_equal(exe.run({"x": x})[0], want)


def test_int16_rsqrt_of_a_negative_value_fails_in_every_executor():
    data = _model(1e-3, 1e-3)
    x = np.full(SHAPE, 7, np.int16)
    x[0, 3, 5] = -2
    with pytest.raises(Exception, match="only defined for positive values"):
        _run_litert(data, x)
    mod, params = from_tflite(data)
    with pytest.raises(ExecutionError):
        byoc.evaluate(mod, {"x": x})
    with pytest.raises(ExecutionError):
        byoc.build(mod, target="llvm", params=params).run({"x": x})
