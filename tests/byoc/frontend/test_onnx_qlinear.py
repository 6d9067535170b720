"""onnxruntime's com.microsoft QOperator ops (QLinearConcat, QLinearAveragePool, QLinearSigmoid, QLinearLeakyRelu,
QGemm, QLinearSoftmax) against onnxruntime bit for bit; import-time size limits.

Every oracle is onnxruntime itself (CPU EP), on models built here with onnx.helper or produced by its own
``quantize_static(quant_format=QOperator)``. Where a simpler formula would also be plausible, the test shows that
onnxruntime really distinguishes it (so agreement is not luck).
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.errors import ModelError, UnsupportedOpsError
from byoc.frontend import from_onnx
from byoc.ir.expr import Call
from byoc.ir.traversal import post_order
from byoc.quant import onnxrt

from onnx_models import (cnn, concat_pool_cnn, make_model, ort_run, quantize_qoperator,
                         scale_init as _sc, value_info as _vi, zp_init as _zp)

pytest.importorskip("onnxruntime")

TT = {"int8": TP.INT8, "uint8": TP.UINT8}


def _calls(mod) -> list[Call]:
    return [n for n in post_order(mod["main"]) if isinstance(n, Call) and hasattr(n.op, "name")]


def _ops(mod) -> list[str]:
    return [n.op.name for n in _calls(mod)]


def _param_sets(rng, dtype, n):
    info = np.iinfo(dtype)
    for _ in range(n):
        yield (np.float32(rng.uniform(0.002, 0.15)), int(rng.integers(info.min, info.max + 1)),
               np.float32(rng.uniform(0.002, 0.05)), int(rng.integers(info.min, info.max + 1)))


def _all_values(dtype, shape=(1, 256)):
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1).astype(dtype).reshape(shape)


# ------------------------------------------------------------------------------------------ lookup-table ops
# Parameters (found by search) where a table entry sits so close to a rounding boundary that an exact logistic,
# or MLAS's non-FMA (SSE2) kernel, rounds it differently from onnxruntime's FMA3 kernel on this host.
_SIGMOID_EDGES = {"int8": [(0.14348707, -4, 0.007968126, -128), (0.09718048, -120, 0.00390625, -128)],
                  "uint8": [(0.062509656, 89, 0.00390625, 0), (0.11266012, 159, 0.00390625, 0)]}


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu"])
def test_table_activations_match_onnxruntime_on_every_input(op, dtype):
    rng = np.random.default_rng(101)
    x = _all_values(dtype)
    naive_differs = sse_differs = 0
    sets = list(_param_sets(rng, dtype, 6))
    if op == "QLinearSigmoid":
        sets += [tuple(np.float32(v) if isinstance(v, float) else v for v in e) for e in _SIGMOID_EDGES[dtype]]
    for i, (sx, zx, sy, zy) in enumerate(sets):
        if op == "QLinearSigmoid" and i in (1, 3):
            sy, zy = np.float32(1 / 256), np.iinfo(dtype).min  # the quantizer's usual sigmoid output parameters
        attrs = {"alpha": float(rng.choice([0.01, 0.1, 0.3, -0.2]))} if op == "QLinearLeakyRelu" else {}
        inits = [_sc("xs", sx), _zp("xz", zx, dtype), _sc("ys", sy), _zp("yz", zy, dtype)]
        node = h.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft", **attrs)
        model = make_model([node], [_vi("x", x.shape, TT[dtype])], [_vi("y", x.shape, TT[dtype])], inits, ms=True)
        mod, _ = from_onnx(model)
        (call,) = _calls(mod)
        assert call.op.name == ("qnn.sigmoid" if op == "QLinearSigmoid" else "qnn.leaky_relu")
        assert call.attrs.rounding == "ONNX"
        ref = ort_run(model, {"x": x})[0]
        np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ref)
        if op == "QLinearSigmoid":  # plausible but different tables: exact logistic; MLAS without FMA
            v = (sx * (x.astype(np.int64) - zx).astype(np.float32)).astype(np.float32)
            exact = (1 / (1 + np.exp(-v.astype(np.float64)))).astype(np.float32)
            naive_differs += int(np.sum(onnxrt.quantize_linear(exact, sy, zy, dtype) != ref))
            sse = onnxrt.mlas_logistic(v, fused=False)
            sse_differs += int(np.sum(onnxrt.quantize_linear(sse, sy, zy, dtype) != ref))
    if op == "QLinearSigmoid":
        assert naive_differs > 0 and sse_differs > 0


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qdq_sigmoid_and_leaky_relu_fold_to_the_same_tables(dtype):
    # DQ → Sigmoid → Q / DQ → LeakyRelu → Q: onnxruntime fuses them into the QLinear kernels or runs
    # MlasComputeLogistic / LeakyRelu in float; both equal the table, and so must we.
    x = _all_values(dtype)
    info = np.iinfo(dtype)
    inits = [_sc("s0", 0.043), _zp("z0", info.min + 77, dtype), _sc("s1", 1 / 256), _zp("z1", info.min, dtype),
             _sc("s2", 0.021), _zp("z2", info.min + 140, dtype)]
    nodes = [h.make_node("DequantizeLinear", ["x", "s0", "z0"], ["f"]),
             h.make_node("Sigmoid", ["f"], ["sg"]), h.make_node("QuantizeLinear", ["sg", "s1", "z1"], ["y1"]),
             h.make_node("LeakyRelu", ["f"], ["lr"], alpha=0.15),
             h.make_node("QuantizeLinear", ["lr", "s2", "z2"], ["y2"])]
    model = make_model(nodes, [_vi("x", x.shape, TT[dtype])], [_vi("y1", x.shape, TT[dtype]),
                                                                  _vi("y2", x.shape, TT[dtype])], inits)
    mod, _ = from_onnx(model)
    assert sorted(o for o in _ops(mod) if o.startswith("qnn.")) == ["qnn.leaky_relu", "qnn.sigmoid"]
    got = byoc.evaluate(mod, {"x": x})
    for optimize in (True, False):
        for g, r in zip(got, ort_run(model, {"x": x}, optimize=optimize)):
            np.testing.assert_array_equal(g, r)


# ------------------------------------------------------------------------------------------ QLinearConcat
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qlinear_concat(dtype):
    rng = np.random.default_rng(202)
    info = np.iinfo(dtype)
    shapes = [(2, 3, 4, 5), (2, 1, 4, 5), (2, 4, 4, 5)]
    for axis in (1, -3):
        sy, zy = np.float32(rng.uniform(0.01, 0.05)), int(rng.integers(info.min, info.max + 1))
        params = [(sy, zy), (np.float32(rng.uniform(0.005, 0.08)), int(rng.integers(info.min, info.max + 1))),
                  (sy, zy + (1 if zy < info.max else -1))]  # copied; rescaled; same scale, other zero point
        inits = [_sc("ys", sy), _zp("yz", zy, dtype)]
        ins = ["ys", "yz"]
        for i, (s, z) in enumerate(params):
            inits += [_sc(f"s{i}", s), _zp(f"z{i}", z, dtype)]
            ins += [f"x{i}", f"s{i}", f"z{i}"]
        node = h.make_node("QLinearConcat", ins, ["y"], domain="com.microsoft", axis=axis)
        model = make_model([node], [_vi(f"x{i}", s, TT[dtype]) for i, s in enumerate(shapes)],
                           [_vi("y", None, TT[dtype])], inits, ms=True)
        feeds = {f"x{i}": rng.integers(info.min, info.max + 1, s).astype(dtype) for i, s in enumerate(shapes)}
        mod, _ = from_onnx(model)
        assert _ops(mod).count("qnn.quantize") == 2 and _ops(mod)[-1] == "concatenate"
        np.testing.assert_array_equal(byoc.evaluate(mod, feeds)[0], ort_run(model, feeds)[0])


# ------------------------------------------------------------------------------------------ QLinearAveragePool
def _avg_pool_model(dtype, sx, zx, sy, zy, shape, **attrs):
    inits = [_sc("xs", sx), _zp("xz", zx, dtype), _sc("ys", sy), _zp("yz", zy, dtype)]
    node = h.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft", **attrs)
    return make_model([node], [_vi("x", shape, TT[dtype])], [_vi("y", None, TT[dtype])], inits, ms=True)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("attrs", [
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1),
    dict(kernel_shape=[2, 3], strides=[1, 2], pads=[0, 1, 1, 0]),
    dict(kernel_shape=[3, 2], auto_pad="SAME_UPPER", strides=[2, 1]),
    dict(kernel_shape=[2, 2], strides=[2, 2]),
])
def test_qlinear_avg_pool(dtype, attrs):
    rng = np.random.default_rng(303)
    info = np.iinfo(dtype)
    shape = (2, 5, 9, 8)
    for sx, zx, sy, zy in _param_sets(rng, dtype, 4):
        sy = np.float32(sx * rng.uniform(0.3, 2.0))  # mostly within the output range
        model = _avg_pool_model(dtype, sx, zx, sy, zy, shape, **attrs)
        mod, _ = from_onnx(model)
        assert "nn.avg_pool2d" in _ops(mod)
        x = rng.integers(info.min, info.max + 1, shape).astype(dtype)
        np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ort_run(model, {"x": x})[0])


def test_qlinear_avg_pool_zero_point_is_added_before_rounding():
    # y/s_y lands on exact .5 ties; with zp_y odd, rne(y/s + zp) and rne(y/s) + zp disagree on every tie.
    dtype = "int8"
    x = np.array([[[[1, 2, 3, 4], [0, 0, 0, 0]]]], np.int8)  # window sums 3 and 7 → averages .75, 1.75
    model = _avg_pool_model(dtype, np.float32(1.0), 0, np.float32(0.5), 3, x.shape, kernel_shape=[2, 2],
                            strides=[2, 2])
    mod, _ = from_onnx(model)
    ref = ort_run(model, {"x": x})[0]
    np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ref)
    # .75/.5 = 1.5 → +3 = 4.5 → 4 (even); QuantizeLinear would give rne(1.5) + 3 = 5.
    assert ref.reshape(-1).tolist() == [4, 6]
    assert onnxrt.quantize_linear(np.float32([0.75, 1.75]), 0.5, 3, dtype).tolist() == [5, 7]


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qdq_avg_pool_folds_to_the_qlinear_kernel(tmp_path, dtype):
    # onnxruntime fuses DQ → AveragePool → Q into QLinearAveragePool; on exact ties its own unfused float path
    # (QuantizeLinear adds the zero point after rounding) gives other results than the fused kernel it runs.
    from onnx_models import ort_fused_op_types
    x = np.array([[[[1, 2, 3, 4], [0, 0, 0, 0]]]], dtype)
    inits = [_sc("s0", 1.0), _zp("z0", 0, dtype), _sc("s1", 0.5), _zp("z1", 3, dtype)]
    nodes = [h.make_node("DequantizeLinear", ["x", "s0", "z0"], ["f"]),
             h.make_node("AveragePool", ["f"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             h.make_node("QuantizeLinear", ["p", "s1", "z1"], ["y"])]
    model = make_model(nodes, [_vi("x", x.shape, TT[dtype])], [_vi("y", None, TT[dtype])], inits)
    assert "QLinearAveragePool" in ort_fused_op_types(model, tmp_path)
    mod, _ = from_onnx(model)
    assert "qnn.dequantize" in _ops(mod) and _ops(mod)[-1] == "qnn.quantize" and "add" in _ops(mod)
    ref = ort_run(model, {"x": x})[0]
    np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ref)
    assert ref.reshape(-1).tolist() == [4, 6]
    assert ort_run(model, {"x": x}, optimize=False)[0].reshape(-1).tolist() == [5, 7]


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qlinear_avg_pool_over_the_whole_image_uses_the_global_kernel(dtype):
    rng = np.random.default_rng(404)
    info = np.iinfo(dtype)
    shape = (1, 6, 7, 5)
    for sx, zx, sy, zy in _param_sets(rng, dtype, 3):
        model = _avg_pool_model(dtype, sx, zx, sy, zy, shape, kernel_shape=[7, 5])
        mod, _ = from_onnx(model)
        assert "nn.avg_pool2d" not in _ops(mod) and "sum" in _ops(mod)  # integer sum → requantize
        x = rng.integers(info.min, info.max + 1, shape).astype(dtype)
        np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ort_run(model, {"x": x})[0])


# ------------------------------------------------------------------------------------------ QGemm
def _qgemm_model(dtype_a, dtype_b, b, b_scale, b_zp, m, k, bias=None, y=None, **attrs):
    inits = [_sc("as", 0.031), _zp("az", np.iinfo(dtype_a).min + 101, dtype_a), nh.from_array(b, "b"),
             _sc("bs", b_scale), nh.from_array(np.asarray(b_zp, dtype_b), "bz")]
    ins = ["a", "as", "az", "b", "bs", "bz"]
    if bias is not None:
        inits.append(nh.from_array(bias, "c"))
    ins.append("c" if bias is not None else "")
    out_t = TP.FLOAT
    if y is not None:
        inits += [_sc("ys", y[0]), _zp("yz", y[1], dtype_a)]
        ins += ["ys", "yz"]
        out_t = TT[dtype_a]
    node = h.make_node("QGemm", ins, ["y"], domain="com.microsoft", **attrs)
    a_shape = [k, m] if attrs.get("transA") else [m, k]
    return make_model([node], [_vi("a", a_shape, TT[dtype_a])], [_vi("y", None, out_t)], inits, ms=True), a_shape


@pytest.mark.parametrize("dtype_a, dtype_b, per_column, trans_a, trans_b, bias_shape, alpha, quantized", [
    ("uint8", "int8", False, 0, 1, (5,), 1.0, True),
    ("int8", "int8", True, 0, 1, (5,), 1.0, True),
    ("uint8", "uint8", True, 1, 0, (1, 5), 0.7, True),
    ("int8", "int8", False, 0, 0, (3, 5), 1.0, True),
    ("int8", "int8", True, 0, 1, (), 1.3, True),
    ("uint8", "int8", True, 0, 1, (3, 1), 1.0, False),
    ("int8", "int8", False, 1, 1, None, 1.0, False),
])
def test_qgemm(dtype_a, dtype_b, per_column, trans_a, trans_b, bias_shape, alpha, quantized):
    rng = np.random.default_rng(505)
    m, k, n = 3, 12, 5
    ib = np.iinfo(dtype_b)
    b = rng.integers(ib.min, ib.max + 1, (n, k) if trans_b else (k, n)).astype(dtype_b)
    b_scale = rng.uniform(0.002, 0.02, n if per_column else ()).astype(np.float32)
    b_zp = (rng.integers(ib.min // 2, ib.max // 2, n) if per_column else int(ib.min // 2 + 60))
    bias = None if bias_shape is None else rng.integers(-5000, 5000, bias_shape).astype(np.int32)
    y = (np.float32(0.11), int(np.iinfo(dtype_a).min + 90)) if quantized else None
    model, a_shape = _qgemm_model(dtype_a, dtype_b, b, b_scale, b_zp, m, k, bias, y, transA=trans_a,
                                  transB=trans_b, alpha=alpha)
    mod, _ = from_onnx(model)
    assert "qnn.dense" in _ops(mod) and ("qnn.requantize" in _ops(mod)) == quantized
    ia = np.iinfo(dtype_a)
    for _ in range(3):
        a = rng.integers(ia.min, ia.max + 1, a_shape).astype(dtype_a)
        np.testing.assert_array_equal(byoc.evaluate(mod, {"a": a})[0], ort_run(model, {"a": a})[0])


# ------------------------------------------------------------------------------------------ quantize_static
@pytest.mark.parametrize("activation", ["int8", "uint8"])
def test_quantize_static_qoperator_cnn_is_bit_exact(tmp_path, activation):
    q = quantize_qoperator(concat_pool_cnn(), tmp_path, activation)
    used = {n.op_type for n in q.graph.node}
    for op in ("QLinearConcat", "QLinearAveragePool", "QLinearSigmoid", "QLinearLeakyRelu", "QGemm"):
        assert op in used  # onnxruntime's quantizer really emitted them
    mod, _ = from_onnx(q)
    ops = _ops(mod)
    assert "qnn.sigmoid" in ops and "qnn.leaky_relu" in ops and "nn.avg_pool2d" in ops and "qnn.dense" in ops
    rng = np.random.default_rng(606)
    xs = [rng.normal(0, 1.2, (1, 3, 16, 16)).astype(np.float32) for _ in range(6)]
    exe = byoc.build(mod, target="llvm")  # the CPU backend agrees with the interpreter and onnxruntime too
    for x in xs:
        ref = ort_run(q, {"x": x})[0]
        np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ref)
        np.testing.assert_array_equal(exe.run({"x": x})[0], ref)


# ------------------------------------------------------------------------------------------ QLinearSoftmax
def _softmax_model(dtype, xs, xz, ys, yz, shape, axis, name="sm", opset=13):
    inits = [_sc("xs", xs), _zp("xz", xz, dtype), _sc("ys", ys), _zp("yz", yz, dtype)]
    kw = {} if axis is None else {"axis": axis}
    if opset is not None:
        kw["opset"] = opset
    node = h.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft", name=name,
                       **kw)
    return make_model([node], [_vi("x", shape, TT[dtype])], [_vi("y", shape, TT[dtype])], inits, ms=True)


# (shape, axis attribute or None, the node's opset attribute): single axes (opset 13), inputs coerced to 2-D at
# the axis (opset < 13), the schema's default axis.
_SOFTMAX_CASES = [([4, 10], 1, 13), ([2, 3, 5], 1, 13), ([2, 3, 4, 5], -3, 13), ([6, 2], 0, 13),
                  ([2, 3, 5], 1, 12), ([2, 3, 4, 5], 2, 11), ([2, 3, 5], 0, 1), ([3, 7], 1, 12),
                  ([2, 3, 5], None, 1), ([2, 4, 3], None, 13), ([5, 200], -1, 13)]


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qlinear_softmax_imports_bit_exact_with_onnxruntime(dtype):
    rng = np.random.default_rng(808)
    info = np.iinfo(dtype)
    total = mismatches = 0
    for shape, axis, opset in _SOFTMAX_CASES:
        xs = np.float32(rng.choice([0.004, 0.05, 0.3, 1.7]) * rng.uniform(0.8, 1.2))
        ys = np.float32(rng.choice([1 / 256, 1 / 255, 0.003, 0.0011, 0.02]))
        yz, xz = int(rng.choice([info.min, 0, 9])), int(rng.integers(info.min, info.max + 1))
        model = _softmax_model(dtype, xs, xz, ys, yz, shape, axis, opset=opset)
        mod, _ = from_onnx(model)
        (sm,) = [c for c in _calls(mod) if c.op.name == "qnn.softmax"]
        assert sm.attrs.rounding == "ONNX"
        assert ("reshape" in _ops(mod)) == (opset < 13 and axis not in (None, -1, len(shape) - 1))
        exe = byoc.build(mod, target="llvm")
        for k in range(3):
            x = rng.integers(info.min, info.max + 1, shape).astype(dtype)
            if k == 1:  # few distinct values: ties, repeated maxima, dominant elements
                x = (x // 64 * 64).astype(dtype)
            ref = ort_run(model, {"x": x})[0]
            total += ref.size
            mismatches += int((byoc.evaluate(mod, {"x": x})[0] != ref).sum())
            mismatches += int((exe.run({"x": x})[0] != ref).sum())
    assert mismatches == 0, f"{mismatches} mismatches over {total} outputs (interpreter and CPU backend)"


def test_qlinear_softmax_axis_semantics_follow_the_opset_attribute():
    # onnxruntime really distinguishes them: opset < 13 takes one row over all of shape[axis:], opset 13 one axis,
    # and a missing axis is −1 for every opset (the schema default, not the kernel's opset-12 default of 1).
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (2, 3, 5)).astype(np.uint8)
    args = ("uint8", 0.1, 0, 1 / 256, 0, [2, 3, 5])
    coerced = ort_run(_softmax_model(*args, 1, opset=12), {"x": x})[0]
    single = ort_run(_softmax_model(*args, 1, opset=13), {"x": x})[0]
    default_old = ort_run(_softmax_model(*args, None, opset=1), {"x": x})[0]
    assert not np.array_equal(coerced, single)
    np.testing.assert_array_equal(default_old, ort_run(_softmax_model(*args, -1, opset=13), {"x": x})[0])
    assert not np.array_equal(default_old, coerced)
    for model, ref in [(_softmax_model(*args, 1, opset=12), coerced), (_softmax_model(*args, 1, opset=13), single),
                       (_softmax_model(*args, None, opset=1), default_old)]:
        np.testing.assert_array_equal(byoc.evaluate(from_onnx(model)[0], {"x": x})[0], ref)


def test_qlinear_softmax_saturates_int8_and_keeps_large_quotients_finite():
    # A dominant element with the quantizer's int8 output parameters (1/256, −128) must give 127 (onnxruntime
    # before PR #29728 wrapped it to −128); four equal elements with s_y = 0.001 give 250 − 128 although
    # T·floor(1/s_y) exceeds FLT_MAX in float32.
    for x, ys, expect in [([[-128, 127, -128, -128]], 1 / 256, [[-128, 127, -128, -128]]),
                          ([[0, 0, 0, 0]], 0.001, [[122, 122, 122, 122]])]:
        model = _softmax_model("int8", 0.5, 0, ys, -128, [1, 4], 1)
        xa = np.array(x, np.int8)
        assert ort_run(model, {"x": xa})[0].tolist() == expect
        mod, _ = from_onnx(model)
        assert byoc.evaluate(mod, {"x": xa})[0].tolist() == expect
        assert byoc.build(mod, target="llvm").run({"x": xa})[0].tolist() == expect


def test_qlinear_softmax_bad_nodes_are_named():
    with pytest.raises(ModelError, match=r"node 'sm' \(QLinearSoftmax\): QLinearSoftmax needs its 'opset' attribute"):
        from_onnx(_softmax_model("uint8", 0.1, 0, 1 / 256, 0, [2, 10], 1, opset=None))
    with pytest.raises(ModelError, match=r"'sm' .*output scale 1.0000002153053333e-39 has no finite float32 "
                                         r"reciprocal"):
        from_onnx(_softmax_model("uint8", 0.1, 0, np.float32(1e-39), 0, [2, 10], 1))
    with pytest.raises(ModelError, match=r"'sm' .*axis 2 is out of range for an input of shape \[2, 10\]"):
        from_onnx(_softmax_model("int8", 0.1, 0, 1 / 256, 0, [2, 10], 2))


def test_unsupported_ops_are_reported_together_and_qlinear_softmax_is_not_among_them():
    sm = _softmax_model("uint8", 0.1, 0, 1 / 256, 0, [2, 10], 1)
    bad_pool = h.make_node("MaxPool", ["y"], ["p"], name="mp", kernel_shape=[2, 2], pads=[2 ** 31 - 1] * 4)
    erf = h.make_node("Celu", ["x"], ["e"], name="erf")
    model = make_model(list(sm.graph.node) + [erf, bad_pool], list(sm.graph.input),
                       [_vi("y", [2, 10], TP.UINT8), _vi("e", [2, 10], TP.UINT8), _vi("p", None, TP.UINT8)],
                       list(sm.graph.initializer), ms=True)
    with pytest.raises(UnsupportedOpsError) as info:
        from_onnx(model)
    msg = str(info.value)
    assert "1 unsupported ONNX op type(s):\n  Celu ×1: erf\n" in msg and "QLinearSoftmax ×" not in msg
    assert "'mp' (MaxPool): attribute 'pads' has value 2147483647" in msg  # reported in the same error


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qlinear_softmax_reference_model_matches_onnxruntime(dtype):
    rng = np.random.default_rng(707)
    info = np.iinfo(dtype)
    for d, shape, axis in [(10, [4, 10], 1), (3, [2, 3, 5], 1), (100, [3, 100], -1), (2, [6, 2], 1)]:
        xs, xz = np.float32(rng.uniform(0.01, 0.5)), int(rng.integers(info.min, info.max + 1))
        ys, yz = np.float32(rng.choice([1 / 256, 1 / 255, 0.003])), int(rng.choice([info.min, 0]))
        model = _softmax_model(dtype, xs, xz, ys, yz, shape, axis)
        x = rng.integers(info.min, info.max + 1, shape).astype(dtype)
        np.testing.assert_array_equal(onnxrt.qlinear_softmax(x, xs, ys, yz, axis), ort_run(model, {"x": x})[0])
    if dtype == "uint8":  # two equal maxima make an exact tie at 99.5: decided by logf (float) in the table shift
        xs, ys = np.float32(0.277157), np.float32(0.0050191376)
        x = np.array([[253, 61, 253, 62]], np.uint8)
        ref = ort_run(_softmax_model(dtype, xs, 25, ys, 0, [1, 4], 1), {"x": x})[0]
        assert ref.tolist() == [[100, 0, 100, 0]]
        np.testing.assert_array_equal(onnxrt.qlinear_softmax(x, xs, ys, 0, 1), ref)


@pytest.mark.parametrize("activation", ["int8", "uint8"])
def test_quantize_static_qoperator_cnn_ending_in_softmax_is_bit_exact(tmp_path, activation):
    q = quantize_qoperator(cnn(batch_norm=False), tmp_path, activation)
    assert [n.op_type for n in q.graph.node][-2:] == ["QLinearSoftmax", "DequantizeLinear"]
    mod, _ = from_onnx(q)
    assert "qnn.softmax" in _ops(mod)
    rng = np.random.default_rng(909)
    exe = byoc.build(mod, target="llvm")
    for _ in range(8):
        x = rng.normal(0, 1.2, (1, 3, 16, 16)).astype(np.float32)
        ref = ort_run(q, {"x": x})[0]
        np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ref)
        np.testing.assert_array_equal(exe.run({"x": x})[0], ref)


# ------------------------------------------------------------------------------------------ size limits
def _conv_model(**attrs):
    w = nh.from_array(np.ones((2, 3, 3, 3), np.float32), "w")
    node = h.make_node("Conv", ["x", "w"], ["y"], name="c", **attrs)
    return make_model([node], [_vi("x", [1, 3, 8, 8], TP.FLOAT)], [_vi("y", None, TP.FLOAT)], [w])


@pytest.mark.parametrize("attr, value", [("pads", [2 ** 31 - 1] * 4), ("strides", [1, 2 ** 31]),
                                         ("kernel_shape", [2 ** 31 - 1, 3]), ("dilations", [1, 2 ** 30])])
def test_size_attributes_near_2_31_are_refused_at_import(attr, value):
    with pytest.raises(ModelError, match=rf"node 'c' \(Conv\): attribute '{attr}' has value {max(value)}, over the "
                                         r"import limit of 1048576"):
        from_onnx(_conv_model(**{attr: value}))


def test_every_oversized_attribute_is_reported_at_once():
    x = _vi("x", [1, 3, 8, 8], TP.FLOAT)
    nodes = [h.make_node("MaxPool", ["x"], ["a"], name="p1", kernel_shape=[2, 2], strides=[2 ** 31 - 1, 1]),
             h.make_node("AveragePool", ["x"], ["b"], name="p2", kernel_shape=[2, 2 ** 40])]
    with pytest.raises(ModelError) as info:
        from_onnx(make_model(nodes, [x], [_vi("a", None, TP.FLOAT), _vi("b", None, TP.FLOAT)], []))
    msg = str(info.value)
    assert msg.startswith("2 size attribute(s) over the import limit")
    assert "'p1' (MaxPool): attribute 'strides' has value 2147483647" in msg
    assert f"'p2' (AveragePool): attribute 'kernel_shape' has value {2 ** 40}" in msg


def test_output_sizes_derived_from_attributes_are_limited():
    # Each pad is within the per-value limit, but the output would hold 2 × (2^21 + 6)^2 ≈ 8.8e12 elements.
    with pytest.raises(ModelError, match=rf"'c' \(Conv\): output shape \(1, 2, 2097158, 2097158\) has "
                                         rf"{2 * 2097158 ** 2} elements, over the import limit of 2147483647 "
                                         r".*pads=\[1048576"):
        from_onnx(_conv_model(pads=[2 ** 20] * 4))
    pad = h.make_node("Pad", ["x", "p"], ["y"], name="pd")
    model = make_model([pad], [_vi("x", [1, 3, 8, 8], TP.FLOAT)], [_vi("y", None, TP.FLOAT)],
                       [nh.from_array(np.array([0, 0, 2 ** 31, 0, 0, 0, 0, 0], np.int64), "p")])
    with pytest.raises(ModelError, match=r"'pd' \(Pad\): pads has value 2147483648, over the import limit of 1048576"):
        from_onnx(model)


def test_dequantize_memo_never_confuses_a_freed_qtensor_with_a_new_one():
    # Converters dequantize short-lived QTensors; CPython reuses a freed object's id for the next allocation, so a
    # memo keyed by id alone once handed a later tensor the dequantize of an earlier one (a wrong graph).
    from byoc import relay
    from byoc.frontend.onnx.importer import Importer, QTensor
    imp = Importer(make_model([], [], [], []), None)
    scale, zp = np.float32(0.5), np.int64(0)
    exprs = [relay.var(f"v{i}", shape=(2,), dtype="int8") for i in range(20)]
    for e in exprs:
        assert imp.dequantize(QTensor(e, scale, zp, 1, "int8")).args[0] is e


def test_onnx_table_roundings_are_refused_where_onnxruntime_has_no_kernel():
    from byoc import relay
    from byoc.errors import IRError, TypeInferenceError
    from byoc.relay.op import make_call

    def infer(e):
        return relay.transform.InferType()(relay.IRModule.from_expr(e))

    def leaky(x, rounding):
        params = (relay.const(np.float32(0.1)), relay.const(np.int32(0)), relay.const(np.float32(0.2)),
                  relay.const(np.int32(0)))
        return make_call("qnn.leaky_relu", (x,) + params, {"alpha": 0.1, "rounding": rounding})

    with pytest.raises(TypeInferenceError, match="qnn.tanh.*rounding"):
        infer(relay.qnn.op.tanh(relay.var("x", shape=(4,), dtype="int8"), 0.1, 0, 1 / 128, 0, rounding="ONNX"))
    x16 = relay.var("y", shape=(4,), dtype="int16")
    x32 = relay.var("z", shape=(4,), dtype="int32")
    with pytest.raises(TypeInferenceError, match="qnn.leaky_relu.*int32"):
        infer(leaky(x32, "ONNX"))
    infer(leaky(x16, "ONNX"))  # a 16-bit QDQ group's float path, tabulated
    infer(leaky(x16, "TFLITE"))
    with pytest.raises(IRError, match="unknown rounding 'HALF'"):
        leaky(x16, "HALF")
