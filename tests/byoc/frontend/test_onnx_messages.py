"""Bad or unsupported ONNX input is reported clearly: element types by name, zero-size dimensions as such,
every unsupported op type and attribute-level feature in one error, the opset checked, schema types checked."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.errors import ModelError, UnsupportedOpsError
from byoc.frontend import from_onnx

from onnx_models import make_model


def _vi(name, shape, dt=TP.FLOAT):
    return h.make_tensor_value_info(name, dt, shape)


def test_reshape_opset_1_reads_its_shape_attribute():
    m = make_model([h.make_node("Reshape", ["x"], ["y"], shape=[3, 2])], [_vi("x", [2, 3])], [_vi("y", [3, 2])], [],
                   opset=1)
    mod, _ = from_onnx(m)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], x.reshape(3, 2))


def test_element_types_are_named():
    m = make_model([h.make_node("Identity", ["x"], ["y"])], [_vi("x", [4], TP.INT4)], [_vi("y", [4], TP.INT4)], [])
    with pytest.raises(ModelError, match=r"INT4 \(22\)"):
        from_onnx(m)


def test_zero_size_dimension_is_not_called_unknown():
    m = make_model([h.make_node("Relu", ["x"], ["y"])], [_vi("x", [0, 3])], [_vi("y", [0, 3])], [])
    with pytest.raises(ModelError, match="zero-size dimension") as ei:
        from_onnx(m)
    assert "?" not in str(ei.value)


def test_unsupported_ops_and_attribute_features_are_listed_together():
    nodes = [h.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], storage_order=1, name="mp"),
             h.make_node("Pad", ["p", "pads"], ["q"], mode="mirror", name="pad"),
             h.make_node("Frobnicate", ["q"], ["y"], name="frob")]
    m = make_model(nodes, [_vi("x", [1, 1, 4, 4])], [_vi("y", None)],
                   [nh.from_array(np.zeros(8, np.int64), "pads")])
    with pytest.raises(UnsupportedOpsError) as ei:
        from_onnx(m)
    msg = str(ei.value)
    assert "Frobnicate" in msg and "'mp' (MaxPool): storage_order=1" in msg and "'pad' (Pad): Pad mode 'mirror'" in msg


def test_attribute_features_alone_are_listed_together():
    nodes = [h.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2, 2], name="mp3"),
             h.make_node("BatchNormalization", ["p", "s", "b", "m", "v"], ["y"], training_mode=1, name="bn")]
    inits = [nh.from_array(np.ones(1, np.float32), n) for n in "sbmv"]
    m = make_model(nodes, [_vi("x", [1, 1, 4, 4, 4])], [_vi("y", None)], inits)
    with pytest.raises(UnsupportedOpsError, match=r"2 unsupported attribute-level") as ei:
        from_onnx(m)
    assert "'mp3' (MaxPool): 3-D pooling" in str(ei.value) and "'bn' (BatchNormalization): training_mode" in str(ei.value)


@pytest.mark.parametrize("opset", [99, 0])
def test_opset_outside_the_known_range_is_refused(opset):
    m = make_model([h.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])], [], opset=opset)
    with pytest.raises(ModelError, match=f"opset {opset} is outside"):
        from_onnx(m)


def test_model_without_a_default_domain_opset_is_refused():
    g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g", [_vi("x", [2])], [_vi("y", [2])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("com.microsoft", 1)])
    with pytest.raises(ModelError, match="no opset for the default ONNX domain"):
        from_onnx(m)


def test_int8_gemm_is_not_onnx():
    m = make_model([h.make_node("Gemm", ["x", "w"], ["y"], name="g8")], [_vi("x", [2, 3], TP.INT8)],
                   [_vi("y", [2, 4], TP.INT8)], [nh.from_array(np.ones((3, 4), np.int8), "w")])
    with pytest.raises(ModelError, match=r"'g8' \(Gemm\): input A .* element type int8, which ONNX's Gemm-13"):
        from_onnx(m)


def test_int64_input_plus_int64_constant():
    m = make_model([h.make_node("Add", ["x", "c"], ["y"])], [_vi("x", [2, 3], TP.INT64)], [_vi("y", [2, 3], TP.INT64)],
                   [nh.from_array(np.array([1, 2, 3], np.int64), "c")])
    mod, _ = from_onnx(m)
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    got = byoc.evaluate(mod, {"x": x})[0]
    assert got.dtype == np.int64 and got.tolist() == (x + [1, 2, 3]).tolist()
