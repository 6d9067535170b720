"""16x8 TRANSPOSE_CONV (int16 activations, int8 weights, int64 accumulator and bias) against LiteRT BUILTIN_REF and
TFLite Micro in the reference interpreter and the LLVM CPU build, and an output_shape fed as a graph input (as in
tflite-micro's SEANet models): TFLite Micro never reads it, LiteRT resizes to it."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.errors import ModelError
from byoc.frontend import from_tflite
from byoc.testing.tflite_writer import TFLiteWriter
from tests.byoc.frontend.tflite_oracles import litert_run

SEANET = Path("/work/ext/unseen/seanet")
COMMITTED = Path(__file__).resolve().parents[2] / "data" / "tflm_seanet_16x8"   # transpose_conv3 and 4


def _tflm(data: bytes, inputs):
    from tflite_micro import runtime
    it = runtime.Interpreter.from_bytes(data, arena_size=4 << 20)
    for i, v in enumerate(inputs):
        it.set_input(v, i)
    it.invoke()
    return np.array(it.get_output(0))


def _model(strides, out_hw, shape_as_input=False, padding="SAME") -> bytes:
    rng = np.random.default_rng(sum(strides) + out_hw[1])
    w = TFLiteWriter()
    x = w.input("x", (1, 3, 5, 6), "int16", scale=0.0009, zero_point=0)
    y = w.transpose_conv(x, rng.integers(-127, 128, (4, 3, 4, 6)).astype(np.int8), (1, *out_hw, 4),
                         rng.integers(-40000, 40000, 4).astype(np.int64),
                         weight_scale=rng.uniform(0.001, 0.003, 4).astype(np.float32), strides=strides,
                         padding=padding, out_scale=0.0011, out_zp=0, shape_as_input=shape_as_input)
    w.output(y)
    return w.finish()


def _feed(mod, values):
    return {p.name_hint: v for p, v in zip(mod["main"].params, values)}


@pytest.mark.parametrize("strides,out_hw,padding", [((2, 2), (6, 10), "SAME"), ((1, 2), (3, 10), "SAME"),
                                                    ((2, 1), (7, 8), "VALID")])
def test_int16x8_transpose_conv_matches_litert_and_tflm(strides, out_hw, padding):
    data = _model(strides, out_hw, padding=padding)
    rng = np.random.default_rng(1)
    for semantics in ("litert", "tflm"):
        mod, params = from_tflite(data, semantics=semantics)
        exe = byoc.build(mod, target="llvm", params=params)
        for _ in range(3):
            x = rng.integers(-32768, 32768, (1, 3, 5, 6)).astype(np.int16)
            ours = np.asarray(byoc.evaluate(mod, _feed(mod, [x]))[0])
            assert np.unique(ours).size > 20
            np.testing.assert_array_equal(np.asarray(exe.run(_feed(mod, [x]))[0]), ours)
            np.testing.assert_array_equal(ours, litert_run(data, [x])[0][0])
            np.testing.assert_array_equal(ours, _tflm(data, [x]))


def test_an_output_shape_fed_at_run_time_imports_under_tflm_only():
    data = _model((2, 2), (6, 10), shape_as_input=True)
    with pytest.raises(ModelError, match="output_shape .* must be a constant"):
        from_tflite(data)
    mod, params = from_tflite(data, semantics="tflm")
    exe = byoc.build(mod, target="llvm", params=params)
    x = np.random.default_rng(2).integers(-32768, 32768, (1, 3, 5, 6)).astype(np.int16)
    shape = np.asarray([1, 6, 10, 4], np.int32)
    ref = _tflm(data, [x, shape])          # the writer adds the shape input after x
    np.testing.assert_array_equal(np.asarray(byoc.evaluate(mod, _feed(mod, [x, shape]))[0]), ref)
    np.testing.assert_array_equal(np.asarray(exe.run(_feed(mod, [x, shape]))[0]), ref)


@pytest.mark.parametrize("k", range(5))
def test_seanet_transpose_convs_match_tflm(k):
    path = COMMITTED / f"transpose_conv{k}.tflite"
    path = path if path.exists() else SEANET / path.name
    if not path.exists():
        pytest.skip(f"{path} is not present (benchmarks/unseen_models.md)")
    data = path.read_bytes()
    mod, params = from_tflite(data, semantics="tflm")
    exe = byoc.build(mod, target="llvm", params=params)
    shape = np.asarray(mod["main"].checked_type.ret_type.shape, np.int32)
    x_type = mod["main"].params[1].type_annotation
    x = np.random.default_rng(k).integers(-32768, 32768, x_type.shape).astype(np.int16)
    ref = _tflm(data, [shape, x])
    np.testing.assert_array_equal(np.asarray(byoc.evaluate(mod, _feed(mod, [shape, x]))[0]), ref)
    np.testing.assert_array_equal(np.asarray(exe.run(_feed(mod, [shape, x]))[0]), ref)


def _computed_shape_model() -> bytes:
    """TRANSPOSE_CONV whose output_shape is PACK(STRIDED_SLICE(SHAPE(x)), 6, 10, 4): the TF exporter's form for
    a batch dimension taken from the input."""
    rng = np.random.default_rng(0)
    w = TFLiteWriter()
    x = w.input("x", (1, 3, 5, 6), "int8", scale=0.05, zero_point=2)
    shp = w.tensor("shape_of_x", (4,), "int32")
    w.op("SHAPE", [x], [shp], "ShapeOptions", {"out_type": 2})
    batch = w.strided_slice(shp, [0], [1], [1], shrink_axis_mask=1, name="batch")
    dims = [w.const(n, np.asarray(v, np.int32)) for n, v in (("h", 6), ("w", 10), ("c", 4))]
    packed = w.pack([batch, *dims], 0, name="out_shape")
    wref = w.const("wt", rng.integers(-127, 128, (4, 3, 4, 6)).astype(np.int8), "int8", scale=0.01, zero_point=0)
    y = w.tensor("y", (1, 6, 10, 4), "int8", scale=0.1, zero_point=0)
    w.op("TRANSPOSE_CONV", [packed, wref, x], [y], "TransposeConvOptions", dict(padding=0, stride_w=2, stride_h=2))
    w.output(y)
    return w.finish()


def test_output_shape_computed_from_constants_is_folded_at_import():
    data = _computed_shape_model()
    rng = np.random.default_rng(1)
    for semantics in ("litert", "tflm"):
        mod, params = from_tflite(data, semantics=semantics)
        exe = byoc.build(mod, target="llvm", params=params)
        for _ in range(2):
            x = rng.integers(-128, 128, (1, 3, 5, 6)).astype(np.int8)
            ref = litert_run(data, [x])[0][0]
            np.testing.assert_array_equal(np.asarray(byoc.evaluate(mod, _feed(mod, [x]))[0]), ref)
            np.testing.assert_array_equal(np.asarray(exe.run(_feed(mod, [x]))[0]), ref)
            np.testing.assert_array_equal(_tflm(data, [x]), ref)


def test_a_shape_computed_from_a_graph_input_is_not_folded():
    """PAD's paddings computed from a graph input stay non-constant: refused, naming the op and the tensor."""
    w = TFLiteWriter()
    x = w.input("x", (1, 6), "int8", scale=0.05, zero_point=0)
    s = w.input("s", (2, 2), "int32")
    doubled = w.add(s, s, name="paddings")
    y = w.tensor("y", (3, 8), "int8", scale=0.05, zero_point=0)
    w.op("PAD", [x, doubled], [y], "PadOptions", {})
    w.output(y)
    with pytest.raises(ModelError, match=r"PAD.*paddings.*must be a constant"):
        from_tflite(w.finish())
