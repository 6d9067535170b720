"""int16 qnn.sigmoid / qnn.tanh (rounding TFLM): TFLite's interpolated int16 kernel, checked on every int16 input
against TFLite Micro's and LiteRT's own int16 LOGISTIC / TANH kernels (the same reference_integer_ops code the
LSTM gates call), for several power-of-two input scales; and the LLVM lowering against the interpreter."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.errors import ExecutionError
from byoc.testing.tflite_writer import TFLiteWriter

sys.path.insert(0, str(Path(__file__).parents[1] / "frontend"))
from tflite_oracles import litert_run  # noqa: E402

_ALL = np.arange(-32768, 32768, dtype=np.int16).reshape(16, 1, 4096)


def _tflm(data: bytes, x: np.ndarray) -> np.ndarray:
    from tflite_micro import runtime
    it = runtime.Interpreter.from_bytes(data, arena_size=1 << 20)   # the default arena is 10x the model size
    it.set_input(x, 0)
    it.invoke()
    return np.array(it.get_output(0))


def _qnn(kind: str, x: np.ndarray, scale_log2: int, rounding: str = "TFLM") -> np.ndarray:
    from byoc.ops.registry import get_op_def
    args = [x, np.float32(2.0 ** scale_log2), np.int32(0), np.float32(2.0 ** -15), np.int32(0)]
    op = get_op_def(f"qnn.{kind}")
    return np.asarray(op.compute(args, op.attrs_type(rounding=rounding)))


@pytest.mark.parametrize("kind,scale_log2", [("sigmoid", -12), ("sigmoid", -11), ("tanh", -12), ("tanh", -11),
                                             ("tanh", -13)])
def test_interpolated_kernel_equals_tflm_and_litert_on_every_int16(kind, scale_log2):
    w = TFLiteWriter()
    x = w.input("x", (1, 4096), "int16", scale=2.0 ** scale_log2, zero_point=0)
    y = (w.logistic if kind == "sigmoid" else w.tanh)(x, out_scale=2.0 ** -15, out_zp=0)
    w.output(y)
    data = w.finish()
    tflm = np.concatenate([_tflm(data, v).reshape(-1) for v in _ALL])
    litert = np.concatenate([litert_run(data, [v])[0][0].reshape(-1) for v in _ALL])
    ours = _qnn(kind, _ALL.reshape(-1), scale_log2)
    assert ours.dtype == np.int16
    assert np.array_equal(ours, tflm), f"{int((ours != tflm).sum())} of 65536 differ from TFLite Micro"
    assert np.array_equal(ours, litert), f"{int((ours != litert).sum())} of 65536 differ from LiteRT"


def test_int16_gate_activations_need_power_of_two_q15_parameters():
    x = np.zeros(4, np.int16)
    from byoc.ops.registry import get_op_def
    op = get_op_def("qnn.sigmoid")
    with pytest.raises(ExecutionError, match="power-of-two"):
        op.compute([x, np.float32(0.001), np.int32(0), np.float32(2.0 ** -15), np.int32(0)],
                   op.attrs_type(rounding="TFLM"))
    with pytest.raises(ExecutionError, match="2\\^-15"):
        op.compute([x, np.float32(2.0 ** -12), np.int32(0), np.float32(1 / 256), np.int32(0)],
                   op.attrs_type(rounding="GEMMLOWP"))
