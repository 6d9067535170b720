"""byoc.testing: the .tflite writer and the model zoo, checked with the ``tflite`` package's generated readers and
by running the files in LiteRT's reference kernels (BUILTIN_REF); the zoo models also round-trip through
from_tflite bit-exactly.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import tflite

import byoc
from byoc.frontend import from_tflite
from byoc.testing import TFLiteWriter, models

litert = pytest.importorskip("ai_edge_litert.interpreter")


def _ops(data: bytes) -> Counter:
    m = tflite.Model.GetRootAs(data, 0)
    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    sg = m.Subgraphs(0)
    out = Counter()
    for i in range(sg.OperatorsLength()):
        code = m.OperatorCodes(sg.Operators(i).OpcodeIndex())
        out[names[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())]] += 1
    return out


def _litert(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    it = litert.Interpreter(model_content=data, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, v in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], v)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def test_writer_fields_round_trip():
    rng = np.random.default_rng(0)
    w = TFLiteWriter()
    x = w.input("image", (1, 6, 6, 2), "int8", scale=0.05, zero_point=-3, shape_signature=(-1, 6, 6, 2))
    scales = np.array([0.01, 0.02, 0.03], np.float32)
    wq = rng.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8)
    y = w.conv2d(x, wq, np.array([1, -2, 3]), weight_scale=scales, strides=(2, 1), dilation=(1, 2),
                 padding="VALID", activation="RELU6", out_scale=0.1, out_zp=-128, name="")
    w.output(y)
    data = w.finish()
    m = tflite.Model.GetRootAs(data, 0)
    assert m.Version() == 3 and tflite.Model.ModelBufferHasIdentifier(data, 0)
    sg = m.Subgraphs(0)
    op = sg.Operators(0)
    xin, wt, bias = (sg.Tensors(op.Inputs(i)) for i in range(3))
    assert xin.Name() == b"image" and list(xin.ShapeSignatureAsNumpy()) == [-1, 6, 6, 2]
    assert xin.Type() == tflite.TensorType.INT8 and xin.Quantization().ZeroPoint(0) == -3
    assert list(wt.Quantization().ScaleAsNumpy()) == list(scales) and wt.Quantization().QuantizedDimension() == 0
    wbuf = m.Buffers(wt.Buffer()).DataAsNumpy()
    assert (wbuf.view(np.int8).reshape(3, 3, 3, 2) == wq).all()
    assert bias.Type() == tflite.TensorType.INT32
    assert np.allclose(bias.Quantization().ScaleAsNumpy(), np.float32(0.05) * scales)
    assert sg.Tensors(op.Outputs(0)).Name() is None  # name="" writes no name
    opts = tflite.Conv2DOptions()
    opts.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
    assert (opts.Padding(), opts.StrideH(), opts.StrideW(), opts.DilationWFactor(), opts.FusedActivationFunction()) \
        == (tflite.Padding.VALID, 2, 1, 2, tflite.ActivationFunctionType.RELU6)
    # Output shape rule: VALID, dilated kernel (3, 5) over 6x6 with strides (2, 1) → 2x2.
    assert list(sg.Tensors(op.Outputs(0)).ShapeAsNumpy()) == [1, 2, 2, 3]
    assert _litert(data, [np.zeros((1, 6, 6, 2), np.int8)])[0].shape == (1, 2, 2, 3)


def test_writer_is_deterministic():
    def build():
        w = TFLiteWriter()
        x = w.input("x", (1, 4, 4, 3), "uint8", scale=0.1, zero_point=128)
        a, b, c = w.split(x, 3, 3)
        w.output(w.concatenation([c, a, b], 3, out_scale=0.1, out_zp=128))
        return w.finish()
    assert build() == build()


@pytest.mark.parametrize("kwargs", [dict(input_size=64), dict(input_size=48, padding="same", pool="avg", seed=3)])
def test_mobilenet_v2_builder_runs_in_litert_and_imports_bit_exact(kwargs):
    data = models.mobilenet_v2(**kwargs)
    ops = _ops(data)
    assert ops["DEPTHWISE_CONV_2D"] == 17 and ops["ADD"] == 10 and ops["FULLY_CONNECTED"] == 1
    assert ops["SOFTMAX"] == 1 and ops["MEAN" if kwargs.get("pool", "mean") == "mean" else "AVERAGE_POOL_2D"] == 1
    assert (ops["PAD"] > 0) == (kwargs.get("padding", "explicit") == "explicit")
    mod, _ = from_tflite(data)
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, kwargs["input_size"], kwargs["input_size"], 3)).astype(np.int8)
    (ref,) = _litert(data, [x])
    (out,) = byoc.evaluate(mod, {"input": x})
    assert (out == ref).all()
    assert len(set(ref.reshape(-1).tolist())) > 1  # not a saturated constant output


def test_resnet_builder_runs_in_litert_and_imports_bit_exact():
    data = models.resnet(32, seed=1)
    ops = _ops(data)
    assert ops["ADD"] == 3 and ops["MAX_POOL_2D"] == 1 and ops["AVERAGE_POOL_2D"] == 1
    mod, _ = from_tflite(data)
    x = np.random.default_rng(1).integers(-128, 128, (1, 32, 32, 3)).astype(np.int8)
    (ref,) = _litert(data, [x])
    (out,) = byoc.evaluate(mod, {"input": x})
    assert (out == ref).all()
