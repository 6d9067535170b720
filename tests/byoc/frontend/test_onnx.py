"""ONNX frontend: float models against onnxruntime, and malformed/unsupported models → ModelError."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.errors import ModelError, UnsupportedOpsError
from byoc.frontend import from_onnx

from onnx_models import cnn, make_model, ort_run

pytest.importorskip("onnxruntime")


def _vi(name, shape, dt=TP.FLOAT):
    return h.make_tensor_value_info(name, dt, shape)


def _check_float(model, feeds, rtol=1e-4, atol=1e-5):
    mod, params = from_onnx(model)
    assert params == {}
    ref = ort_run(model, feeds)
    got = byoc.evaluate(mod, feeds)
    assert len(ref) == len(got)
    for r, g in zip(ref, got):
        assert r.shape == g.shape and r.dtype == g.dtype
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)
    return mod


def test_float_cnn_matches_onnxruntime():
    model = cnn()
    rng = np.random.default_rng(3)
    mod = None
    for _ in range(3):
        mod = _check_float(model, {"x": rng.normal(0, 1, (1, 3, 16, 16)).astype(np.float32)})
    text = mod.astext(show_meta_data=False)
    for op in ("nn.conv2d", "nn.batch_norm", "nn.max_pool2d", "nn.global_avg_pool2d", "nn.mlas_gemm",
               "nn.mlas_softmax"):
        assert op in text
    assert 'data_layout="NHWC"' not in text  # ONNX's NCHW is kept


def test_float_cnn_from_path_is_deterministic(tmp_path):
    p = tmp_path / "m.onnx"
    onnx.save(cnn(), p)
    a, _ = from_onnx(str(p))
    b, _ = from_onnx(p.read_bytes())
    assert a.astext() == b.astext()
    byoc.assert_structural_equal(a["main"], b["main"])


def test_float_misc_ops_match_onnxruntime():
    rng = np.random.default_rng(4)
    inits = [nh.from_array(rng.normal(0, .5, (6, 5)).astype(np.float32), "wm"),
             nh.from_array(np.array([2, 4, 5], np.int64), "shape"),
             nh.from_array(np.array([0, 0, 1, 2, 0, 0, 1, 0], np.int64), "pads"),
             nh.from_array(np.array(0.5, np.float32), "padv"),
             nh.from_array(np.array([1], np.int64), "axes"),
             nh.from_array(rng.normal(0, 1, (1, 4, 1, 1)).astype(np.float32), "cst"),
             nh.from_array(np.array([-0.5], np.float32), "lo")]
    nodes = [
        h.make_node("MatMul", ["a", "wm"], ["mm"]),                       # [2, 4, 6] x [6, 5]
        h.make_node("Reshape", ["mm", "shape"], ["rs"]),
        h.make_node("Transpose", ["rs"], ["tr"], perm=[1, 0, 2]),          # [4, 2, 5]
        h.make_node("Sigmoid", ["tr"], ["sg"]),
        h.make_node("Unsqueeze", ["sg", "axes"], ["us"]),                  # [4, 1, 2, 5]
        h.make_node("Squeeze", ["us", "axes"], ["sq"]),
        h.make_node("Softmax", ["sq"], ["sm"], axis=1),
        h.make_node("Pad", ["img", "pads", "padv"], ["pd"]),              # [1, 4, 7, 8]
        h.make_node("AveragePool", ["pd"], ["ap"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        h.make_node("AveragePool", ["pd"], ["ap2"], kernel_shape=[2, 2], pads=[1, 0, 0, 1],
                    count_include_pad=1),
        h.make_node("Mul", ["ap", "cst"], ["mu"]),
        h.make_node("Sub", ["mu", "cst"], ["su"]),
        h.make_node("Div", ["su", "cst"], ["dv"]),
        h.make_node("Clip", ["dv", "lo", ""], ["cl"]),
        h.make_node("MaxPool", ["pd"], ["mp"], kernel_shape=[3, 3], auto_pad="SAME_UPPER", strides=[2, 2]),
        h.make_node("Concat", ["cl", "mp"], ["cat"], axis=1),
        h.make_node("Conv", ["img", "cst2"], ["cv"], auto_pad="SAME_LOWER", strides=[2, 1]),
    ]
    inits.append(nh.from_array(rng.normal(0, .3, (3, 4, 3, 2)).astype(np.float32), "cst2"))
    model = make_model(nodes, [_vi("a", [2, 4, 6]), _vi("img", [1, 4, 6, 5])],
                       [_vi("sm", [4, 2, 5]), _vi("cat", [1, 8, 4, 4]), _vi("ap2", [1, 4, 7, 8]),
                        _vi("cv", [1, 3, 3, 5])], inits)
    onnx.checker.check_model(model)
    _check_float(model, {"a": rng.normal(0, 1, (2, 4, 6)).astype(np.float32),
                         "img": rng.normal(0, 1, (1, 4, 6, 5)).astype(np.float32)})


def test_gemm_alpha_beta_trans_and_old_opset_softmax():
    rng = np.random.default_rng(5)
    inits = [nh.from_array(rng.normal(0, 1, (5, 3)).astype(np.float32), "b"),
             nh.from_array(rng.normal(0, 1, (4,)).astype(np.float32), "c")]
    nodes = [h.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, alpha=0.5, beta=2.0),
             h.make_node("Reshape", ["y", "shp"], ["y3"]),
             h.make_node("Softmax", ["y3"], ["s"], axis=1)]
    inits[0] = nh.from_array(rng.normal(0, 1, (3, 4)).astype(np.float32), "b")
    inits.append(nh.from_array(np.array([5, 2, 2], np.int64), "shp"))
    model = make_model(nodes, [_vi("a", [3, 5])], [_vi("s", [5, 2, 2])], inits, opset=11)
    _check_float(model, {"a": rng.normal(0, 1, (3, 5)).astype(np.float32)})


# ------------------------------------------------------------------------------------------------ errors
def test_unsupported_ops_are_listed_at_once_with_counts_and_names():
    nodes = [h.make_node("Relu", ["x"], ["a"]), h.make_node("Celu", ["a"], ["b"], name="erf1"),
             h.make_node("Celu", ["b"], ["c"], name="erf2"), h.make_node("LSTMish", ["c"], ["d"], name="odd"),
             h.make_node("Relu", ["d"], ["y"])]
    model = make_model(nodes, [_vi("x", [1, 4])], [_vi("y", [1, 4])], [])
    with pytest.raises(UnsupportedOpsError) as ei:
        from_onnx(model)
    msg = str(ei.value)
    assert "Celu ×2: erf1, erf2" in msg and "LSTMish ×1: odd" in msg and "Relu" not in msg.split("hint")[0]
    assert isinstance(ei.value, ModelError)


@pytest.mark.parametrize("data", [b"", b"\x08\x07garbage\xff\xff\xff", b"\xff" * 64])
def test_corrupt_bytes_raise_model_error(data):
    with pytest.raises(ModelError):
        from_onnx(data)


def test_truncated_file_and_missing_path(tmp_path):
    p = tmp_path / "m.onnx"
    raw = cnn().SerializeToString()
    p.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelError):
        from_onnx(str(p))
    with pytest.raises(ModelError, match="does not exist"):
        from_onnx(str(tmp_path / "nope.onnx"))
    with pytest.raises(ModelError, match="expects a path"):
        from_onnx(42)


def test_every_truncation_of_a_model_is_a_model_error_or_imports():
    raw = cnn().SerializeToString()
    for cut in range(0, len(raw), max(1, len(raw) // 60)):
        try:
            from_onnx(raw[:cut])
        except ModelError:
            pass


def _external_model(tmp_path, location):
    w = nh.from_array(np.ones((4, 4), np.float32), "w")
    model = make_model([h.make_node("MatMul", ["x", "w"], ["y"])], [_vi("x", [1, 4])], [_vi("y", [1, 4])], [w])
    t = model.graph.initializer[0]
    t.ClearField("raw_data")
    t.data_location = TP.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "64")):
        e = t.external_data.add()
        e.key, e.value = k, v
    p = tmp_path / "ext.onnx"
    p.write_bytes(model.SerializeToString())
    return p


def test_external_data_is_read_only_from_the_model_directory(tmp_path):
    (tmp_path / "weights.bin").write_bytes(np.full(16, 2.0, np.float32).tobytes())
    p = _external_model(tmp_path, "weights.bin")
    mod, _ = from_onnx(str(p))
    out = byoc.evaluate(mod, {"x": np.ones((1, 4), np.float32)})[0]
    np.testing.assert_array_equal(out, np.full((1, 4), 8.0, np.float32))
    for loc in ("../outside.bin", "/etc/passwd", "sub/../../x.bin"):
        with pytest.raises(ModelError, match="outside the model directory"):
            from_onnx(str(_external_model(tmp_path, loc)))
    with pytest.raises(ModelError, match="not found"):
        from_onnx(str(_external_model(tmp_path, "missing.bin")))
    with pytest.raises(ModelError, match="in memory"):
        from_onnx(onnx.load(str(_external_model(tmp_path, "weights.bin")), load_external_data=False))


def test_symbolic_input_dims_need_shape():
    model = make_model([h.make_node("Relu", ["x"], ["y"])], [_vi("x", ["N", 4])], [_vi("y", ["N", 4])], [])
    with pytest.raises(ModelError, match="shape="):
        from_onnx(model)
    mod, _ = from_onnx(model, shape={"x": (2, 4)})
    assert mod["main"].params[0].type_annotation.shape == (2, 4)
    with pytest.raises(ModelError, match="unknown input"):
        from_onnx(model, shape={"x": (2, 4), "z": (1,)})


def test_graph_that_is_not_topologically_sorted():
    nodes = [h.make_node("Relu", ["a"], ["y"], name="second"), h.make_node("Relu", ["x"], ["a"], name="first")]
    model = make_model(nodes, [_vi("x", [1, 4])], [_vi("y", [1, 4])], [])
    with pytest.raises(ModelError, match="'second'.*reads tensor 'a'"):
        from_onnx(model)


@pytest.mark.parametrize("node, msg", [
    (h.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1]), "pads must be 4"),
    (h.make_node("Conv", ["x", "w"], ["y"], auto_pad="WEIRD"), "auto_pad"),
    (h.make_node("Reshape", ["x", "x"], ["y"]), "must be a constant"),
    (h.make_node("Transpose", ["x"], ["y"], perm=[0, 0, 1, 2]), "not a permutation"),
    (h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], storage_order=1), "storage_order"),
    (h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2]), "3-D pooling"),
    (h.make_node("Pad", ["x", "w"], ["y"], mode="mirror"), "Pad mode 'mirror'"),
    (h.make_node("Conv", ["x", "w"], ["y"], group=3), "groups"),
])
def test_bad_nodes_raise_model_error_naming_the_node(node, msg):
    w = nh.from_array(np.ones((2, 2, 3, 3), np.float32), "w")
    model = make_model([node], [_vi("x", [1, 2, 5, 5])], [_vi("y", None)], [w])
    with pytest.raises(ModelError, match=msg) as ei:
        from_onnx(model)
    assert node.op_type in str(ei.value)


def test_missing_graph_output():
    model = make_model([h.make_node("Relu", ["x"], ["a"])], [_vi("x", [1, 4])], [_vi("zz", [1, 4])], [])
    with pytest.raises(ModelError, match="'zz' is not produced"):
        from_onnx(model)


def test_deep_chain_imports_without_recursion():
    n = 20000  # import types each new node only, so this stays linear
    nodes = [h.make_node("Relu", [f"t{i}" if i else "x"], [f"t{i + 1}"]) for i in range(n)]
    model = make_model(nodes, [_vi("x", [1, 4])], [_vi(f"t{n}", [1, 4])], [])
    mod, _ = from_onnx(model)
    x = np.linspace(-1, 1, 4, dtype=np.float32).reshape(1, 4)
    np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], np.maximum(x, 0))
