"""Patterns found in real torch.onnx exports (tests/byoc/frontend/onnx_zoo/export.py), rebuilt with onnx.helper
so that torch is not needed: 1-D GlobalAveragePool (the legacy exporter's adaptive_avg_pool1d(x, 1)), 1-D
ConvInteger (quantize_dynamic on Conv1d), Split (the dynamo exporter's torch.chunk in ShuffleNetV2). Expected
values come from onnxruntime (ORT_ENABLE_ALL, one thread)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.frontend import from_onnx

from onnx_models import make_model
from onnx_ort_nets import quantize
from onnx_ort_nets import ort_session as _sess

ort = pytest.importorskip("onnxruntime")


def _check(model, n=3, seed=0, exact=True):
    mod, _ = from_onnx(model)
    sess = _sess(model)
    exe = byoc.build(mod, target="llvm")
    name = model.graph.input[0].name
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = rng.normal(0, 1, shape).astype(np.float32)
        refs = sess.run(None, {name: x})
        for got in (byoc.evaluate(mod, {name: x}), exe.run({name: x})):
            got = got if isinstance(got, (list, tuple)) else [got]
            for r, g in zip(refs, got):
                if exact:
                    np.testing.assert_array_equal(np.asarray(g), r)
                else:
                    np.testing.assert_allclose(np.asarray(g), r, rtol=1e-5, atol=1e-5)


def audio_gap(seed=0):
    """Conv1d → Relu → GlobalAveragePool over NCL (legacy export of adaptive_avg_pool1d(x, 1)) → Flatten → Gemm."""
    rng = np.random.default_rng(seed)
    inits = [nh.from_array(rng.normal(0, .3, (6, 4, 3)).astype(np.float32), "w"),
             nh.from_array(rng.normal(0, .1, 6).astype(np.float32), "b"),
             nh.from_array(rng.normal(0, .3, (5, 6)).astype(np.float32), "fw"),
             nh.from_array(rng.normal(0, .1, 5).astype(np.float32), "fb")]
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1], strides=[2]),
             h.make_node("Relu", ["c"], ["r"]), h.make_node("GlobalAveragePool", ["r"], ["g"]),
             h.make_node("Flatten", ["g"], ["f"]), h.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    m = make_model(nodes, [h.make_tensor_value_info("x", TP.FLOAT, [1, 4, 20])],
                   [h.make_tensor_value_info("y", TP.FLOAT, [1, 5])], inits)
    onnx.checker.check_model(m)
    return m


def test_float_1d_global_average_pool():
    _check(audio_gap(), exact=False)


@pytest.mark.parametrize("cfg", ["int8", "uint8", "QOperator-uint8", "QOperator-int8"])
def test_quantized_1d_global_average_pool_bit_exact(tmp_path, cfg):
    fmt = "QOperator" if cfg.startswith("QOperator") else "QDQ"
    _check(quantize(audio_gap(), tmp_path, fmt=fmt, act=cfg.removeprefix("QOperator-")))


def test_dynamic_quantized_conv1d_is_conv_integer(tmp_path):
    from onnxruntime.quantization import quantize_dynamic
    src, dst = tmp_path / "f.onnx", tmp_path / "d.onnx"
    m = audio_gap()
    onnx.save(m, src)
    quantize_dynamic(str(src), str(dst), op_types_to_quantize=["Conv"])
    q = onnx.load(dst)
    assert "ConvInteger" in {n.op_type for n in q.graph.node}
    _check(q, exact=False)  # the float Gemm after it sums in another order (ULPs)


def _split_model(opset, sizes=None, n_out=2, num_outputs=None, axis=1, shape=(1, 6, 3, 3)):
    inits, ins = [], ["x"]
    if sizes is not None:
        inits.append(nh.from_array(np.array(sizes, np.int64), "sizes"))
        ins.append("sizes")
    outs = [f"y{k}" for k in range(n_out)]
    kw = {"axis": axis}
    if num_outputs is not None:
        kw["num_outputs"] = num_outputs
    # a Relu after each part so that the outputs are computed, not just views
    nodes = [h.make_node("Split", ins, [f"s{k}" for k in range(n_out)], **kw)] + \
            [h.make_node("Relu", [f"s{k}"], [o]) for k, o in enumerate(outs)]
    m = make_model(nodes, [h.make_tensor_value_info("x", TP.FLOAT, list(shape))],
                   [h.make_tensor_value_info(o, TP.FLOAT, [f"d{i}" for i in range(len(shape))]) for o in outs], inits, opset=opset)
    onnx.checker.check_model(m)
    return m


@pytest.mark.parametrize("case", [dict(opset=18, num_outputs=2), dict(opset=13, n_out=3),
                                  dict(opset=13, sizes=[1, 2, 3], n_out=3), dict(opset=18, num_outputs=4, n_out=4, shape=(1, 7, 2, 2)),
                                  dict(opset=18, num_outputs=2, axis=-1, shape=(1, 2, 3, 5))])
def test_split_matches_onnxruntime(case):
    _check(_split_model(**case))


def test_split_bad_sizes_is_a_model_error():
    from byoc.errors import ModelError
    m = _split_model(13, sizes=[1, 2, 2], n_out=3)
    with pytest.raises(ModelError, match="split sizes"):
        from_onnx(m)


def _attention_scale_model():
    """The legacy exporter's attention scaling on shapes: Shape → Gather → Cast → Sqrt → Div, and a Mod on the
    sequence length feeding a Slice end (both folded at import)."""
    c = lambda name, v: nh.from_array(np.array(v, np.int64), name)  # noqa: E731
    inits = [c("i2", 2), c("three", 3), c("ax", [2]), c("zero", [0]), c("u0", [0]),
             nh.from_array(np.array(1.0, np.float32), "one")]
    nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "i2"], ["d"], axis=0),
             h.make_node("Cast", ["d"], ["df"], to=TP.FLOAT), h.make_node("Sqrt", ["df"], ["sq"]),
             h.make_node("Div", ["one", "sq"], ["scale"]), h.make_node("Mul", ["x", "scale"], ["xs"]),
             h.make_node("Mod", ["d", "three"], ["m"]), h.make_node("Sub", ["d", "m"], ["k"]),
             h.make_node("Unsqueeze", ["k", "u0"], ["ke"]),
             h.make_node("Slice", ["xs", "zero", "ke", "ax"], ["y"])]
    m = make_model(nodes, [h.make_tensor_value_info("x", TP.FLOAT, [1, 4, 8])],
                   [h.make_tensor_value_info("y", TP.FLOAT, [1, 4, 6])], inits)
    onnx.checker.check_model(m)
    return m


def test_legacy_attention_shape_arithmetic_folds():
    from byoc.ir.expr import Call
    from byoc.ir.traversal import post_order
    m = _attention_scale_model()
    mod, _ = from_onnx(m)
    ops = {n.op.name for n in post_order(mod["main"]) if isinstance(n, Call)}
    assert ops == {"multiply", "strided_slice"}, ops  # x · folded scale, sliced to the folded length
    _check(m, exact=False)  # a float model: within 1e-5


@pytest.mark.parametrize("op, kw", [("Mod", {"fmod": 1}), ("Sqrt", {})])
def test_shape_arithmetic_on_a_runtime_tensor_is_refused_naming_it(op, kw):
    from byoc.errors import ModelError
    ins = ["x", "x"] if op == "Mod" else ["x"]
    m = make_model([h.make_node(op, ins, ["y"], **kw)],
                   [h.make_tensor_value_info("x", TP.FLOAT, [2])], [h.make_tensor_value_info("y", TP.FLOAT, [2])], [])
    with pytest.raises(ModelError, match=f"{op} is supported only on constant.*'x' is computed at run time"):
        from_onnx(m)


def _resize_model(coord, in_hw=(6, 6), out_hw=None, scale=2.0, conv=False, seed=0):
    """[Conv →] Resize(linear) [→ Conv]: torch's F.interpolate(mode="bilinear") in a UNet decoder."""
    rng = np.random.default_rng(seed)
    inits, nodes, src = [], [], "x"
    if out_hw is None:
        inits.append(nh.from_array(np.array([1, 1, scale, scale], np.float32), "sc"))
        rin = [src, "", "sc"]
    else:
        inits.append(nh.from_array(np.array([1, 4, *out_hw], np.int64), "sz"))
        rin = [src, "", "", "sz"]
    if conv:
        inits += [nh.from_array(rng.normal(0, .3, (4, 4, 3, 3)).astype(np.float32), f"w{i}") for i in (0, 1)]
        nodes.append(h.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]))
        rin[0] = "c0"
    nodes.append(h.make_node("Resize", rin, ["r"], mode="linear", coordinate_transformation_mode=coord))
    if conv:
        nodes.append(h.make_node("Conv", ["r", "w1"], ["y"], pads=[1, 1, 1, 1]))
    else:
        nodes[-1].output[0] = "y"
    oh, ow = out_hw or (int(in_hw[0] * scale), int(in_hw[1] * scale))
    m = make_model(nodes, [h.make_tensor_value_info("x", TP.FLOAT, [1, 4, *in_hw])],
                   [h.make_tensor_value_info("y", TP.FLOAT, [1, 4, oh, ow])], inits)
    onnx.checker.check_model(m)
    return m


@pytest.mark.parametrize("coord, in_hw, out_hw", [("half_pixel", (6, 6), None), ("pytorch_half_pixel", (6, 6), None),
                                                  ("align_corners", (5, 7), (8, 9)), ("asymmetric", (5, 7), (8, 9)),
                                                  ("half_pixel", (5, 7), (11, 3))])
def test_float_bilinear_resize_is_onnxruntimes_arithmetic_bit_for_bit(coord, in_hw, out_hw):
    _check(_resize_model(coord, in_hw, out_hw))  # exact, not just within 1e-5


@pytest.mark.parametrize("act", ["int8", "uint8", "int16"])
def test_qdq_bilinear_resize_between_convs_bit_exact(tmp_path, act):
    # onnxruntime runs this Resize in float between DequantizeLinear and QuantizeLinear: its float32 blend decides
    # the quantized value (LiteRT's blend order put UNet decoders 1 LSB off on 33 of 8192 outputs)
    _check(quantize(_resize_model("half_pixel", conv=True), tmp_path, act=act))


def _reduce_model(shape, axes, op="ReduceMean", keep=1):
    ax = nh.from_array(np.array(axes, np.int64), "ax")
    out = [d if i not in [a % len(shape) for a in axes] else 1 for i, d in enumerate(shape)] if keep else \
        [d for i, d in enumerate(shape) if i not in [a % len(shape) for a in axes]]
    m = make_model([h.make_node(op, ["x", "ax"], ["y"], keepdims=keep)],
                   [h.make_tensor_value_info("x", TP.FLOAT, shape)], [h.make_tensor_value_info("y", TP.FLOAT, out)],
                   [ax], opset=18)
    onnx.checker.check_model(m)
    return m


@pytest.mark.parametrize("shape, axes, op, keep", [
    ([1, 64, 2, 2], [2, 3], "ReduceMean", 1), ([1, 64, 3, 3], [2, 3], "ReduceMean", 1),  # rows start unaligned
    ([1, 64, 7, 7], [2, 3], "ReduceMean", 1), ([2, 24, 5, 5], [2, 3], "ReduceMean", 1),
    ([1, 12, 32], [2], "ReduceMean", 0), ([1, 7, 9], [-1], "ReduceMean", 1), ([1, 3, 33, 5], [1, 2, 3], "ReduceMean", 1),
    ([1, 64, 3, 3], [2, 3], "ReduceSum", 1)])
def test_float_trailing_reduce_is_onnxruntimes_sum_order_bit_for_bit(shape, axes, op, keep):
    # the dynamo exporter's adaptive_avg_pool2d(x, 1); squeezenet's QDQ output was 1 ULP off on 3 of 10 values
    rng = np.random.default_rng(0)
    m = _reduce_model(shape, axes, op, keep)
    mod, _ = from_onnx(m)
    exe = byoc.build(mod, target="llvm")
    sess = _sess(m)
    x = (np.abs(rng.normal(0, 1, shape)) * rng.uniform(.1, 10, shape[:2] + [1] * (len(shape) - 2))).astype(np.float32)
    ref = sess.run(None, {"x": x})[0]
    np.testing.assert_array_equal(np.asarray(byoc.evaluate(mod, {"x": x})[0]), ref)
    np.testing.assert_array_equal(np.asarray(exe.run({"x": x})[0]), ref)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("coord, out_hw", [("half_pixel", (16, 16)), ("align_corners", (11, 13)),
                                           ("asymmetric", (12, 10))])
def test_8bit_bilinear_resize_truncates_like_onnxruntime(dtype, coord, out_hw):
    # a QOperator model resizes the 8-bit tensor itself (UNet QOperator: 653-718 of 8192 outputs were 1 LSB off
    # with LiteRT's +0.5 rounding)
    tp = TP.UINT8 if dtype == "uint8" else TP.INT8
    m = make_model([h.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear",
                                coordinate_transformation_mode=coord)],
                   [h.make_tensor_value_info("x", tp, [1, 5, 8, 8])],
                   [h.make_tensor_value_info("y", tp, [1, 5, *out_hw])],
                   [nh.from_array(np.array([1, 5, *out_hw], np.int64), "sz")])
    onnx.checker.check_model(m)
    info = np.iinfo(dtype)
    x = np.random.default_rng(1).integers(info.min, info.max + 1, (1, 5, 8, 8)).astype(dtype)
    ref = _sess(m).run(None, {"x": x})[0]
    mod, _ = from_onnx(m)
    np.testing.assert_array_equal(np.asarray(byoc.evaluate(mod, {"x": x})[0]), ref)
    np.testing.assert_array_equal(np.asarray(byoc.build(mod, target="llvm").run({"x": x})[0]), ref)


def _shared_bias_model():
    """Two convs whose zero biases are one initializer read through Identity nodes (torch's legacy exporter
    deduplicates the folded BatchNorm biases of a fresh network this way), and a residual Add."""
    rng = np.random.default_rng(2)
    inits = [nh.from_array(rng.normal(0, .3, (16, 3, 3, 3)).astype(np.float32), "w0"),
             nh.from_array(rng.normal(0, .2, (16, 16, 3, 3)).astype(np.float32), "w1"),
             nh.from_array(np.zeros(16, np.float32), "b")]
    nodes = [h.make_node("Conv", ["x", "w0", "b"], ["c0"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c0"], ["r0"]),
             h.make_node("Identity", ["b"], ["b1"]),
             h.make_node("Conv", ["r0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c1"], ["r1"]),
             h.make_node("Add", ["r1", "r0"], ["y"])]
    m = make_model(nodes, [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 16, 16])],
                   [h.make_tensor_value_info("y", TP.FLOAT, [1, 16, 16, 16])], inits)
    onnx.checker.check_model(m)
    return m


@pytest.mark.parametrize("act", ["uint8", "int8"])
def test_conv_with_bias_behind_identity_is_not_fused_like_onnxruntime(tmp_path, act):
    # onnxruntime's Conv selector wants a DequantizeLinear behind every input: with the bias behind an Identity
    # the conv runs in float between DQ and Q (regnet legacy QDQ uint8: 6 of 10 outputs were off)
    from byoc.ir.expr import Call
    from byoc.ir.traversal import post_order
    q = quantize(_shared_bias_model(), tmp_path, act=act)
    assert "Identity" in {n.op_type for n in q.graph.node}
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    ort.InferenceSession(q.SerializeToString(), so, providers=["CPUExecutionProvider"])
    ort_ops = [n.op_type for n in onnx.load(tmp_path / "opt.onnx").graph.node]
    mod, _ = from_onnx(q)
    ops = [n.op.name for n in post_order(mod["main"]) if isinstance(n, Call)]
    # the same convolutions fused (integer) and left in float as onnxruntime's optimized graph
    assert (ops.count("qnn.conv2d"), ops.count("nn.conv2d")) == (ort_ops.count("QLinearConv"), ort_ops.count("Conv"))
    assert ort_ops.count("Conv") >= 1
    _check(q, n=6)
