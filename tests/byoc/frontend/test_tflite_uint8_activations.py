"""uint8 activations (TF1-era quantized models, e.g. google-coral's automl video detector with a uint8 LOGISTIC),
held to LiteRT BUILTIN_REF bit for bit in every executor: the reference interpreter, the LLVM CPU build and the
NPU simulator (ethos-u), imported as ``byoc`` commands import them for ethos-u (``load_model``).

TFLite Micro has no uint8 LOGISTIC / TANH kernel (int8, int16 and float only): ``semantics="tflm"`` refuses one
with a ModelError saying so (before: "qnn.sigmoid: argument 'data' expected dtype int8 or int16, found uint8",
which the NPU benchmark hit on traffic_model), and ``load_model`` imports such a model with LiteRT's semantics."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc.frontend import from_tflite

litert = pytest.importorskip("ai_edge_litert.interpreter")
TFLiteWriter = pytest.importorskip("byoc.testing.tflite_writer").TFLiteWriter

SHAPE = (1, 16, 16, 16)   # 4096 values: every uint8 input value occurs


def _model(kind: str, zp: int, scale: float) -> bytes:
    w = TFLiteWriter()
    x = w.input("x", SHAPE, "uint8", scale=scale, zero_point=zp)
    if kind == "logistic":
        y = w.logistic(x)
    elif kind == "tanh":
        y = w.tanh(x)
    elif kind == "hard_swish":
        y = w.hard_swish(x, out_scale=0.03, out_zp=40)
    else:
        y = w.leaky_relu(x, 0.3, out_scale=0.04, out_zp=100)
    w.output(y)
    return w.finish()


def _litert(data: bytes, x: np.ndarray) -> np.ndarray:
    it = litert.Interpreter(model_content=data, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"]).copy()


def _input() -> np.ndarray:
    # every uint8 value, then random ones
    flat = np.concatenate([np.arange(256), np.random.default_rng(5).integers(0, 256, np.prod(SHAPE) - 256)])
    return flat.astype(np.uint8).reshape(SHAPE)


@pytest.mark.parametrize("kind,zp,scale", [("logistic", 128, 0.06), ("logistic", 37, 0.11), ("tanh", 128, 0.03),
                                           ("tanh", 200, 0.05), ("hard_swish", 100, 0.05),
                                           ("leaky_relu", 90, 0.07)])
def test_uint8_activation_matches_litert_in_every_executor(kind, zp, scale, tmp_path):
    from byoc.cli.common import load_model
    data = _model(kind, zp, scale)
    x = _input()
    ref = _litert(data, x)
    path = tmp_path / f"{kind}.tflite"
    path.write_bytes(data)
    m = load_model(str(path), "auto", target="ethos-u")
    assert m.semantics == ("litert" if kind in ("logistic", "tanh") else "tflm")
    mod, params = m.mod, m.params
    name = mod["main"].params[0].name_hint
    got = byoc.evaluate(mod, {name: x})
    np.testing.assert_array_equal(np.asarray(got[0] if isinstance(got, (list, tuple)) else got), ref)
    cpu = byoc.build(mod, target="llvm").run({name: x})
    np.testing.assert_array_equal(np.asarray(cpu[0] if isinstance(cpu, (list, tuple)) else cpu), ref)
    from byoc.partition import partition_for
    pmod = partition_for("ethos-u", mod, params)
    exe = byoc.build(pmod, target="ethos-u,llvm", npu_config="ethos-u55-256")
    assert exe.npu_programs, "the uint8 activation was not offloaded"
    npu = exe.run({name: x})
    np.testing.assert_array_equal(np.asarray(npu[0] if isinstance(npu, (list, tuple)) else npu), ref)


@pytest.mark.parametrize("kind", ["logistic", "tanh"])
def test_tflm_semantics_refuse_uint8_logistic_and_tanh_as_tflite_micro_does(kind):
    from byoc.errors import ModelError
    data = _model(kind, 128, 0.06)
    with pytest.raises(ModelError, match="TFLite Micro has no uint8"):
        from_tflite(data, semantics="tflm")
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    with pytest.raises(Exception):   # Micro itself has no kernel for it
        it = runtime.Interpreter.from_bytes(data)
        it.set_input(_input(), 0)
        it.invoke()
