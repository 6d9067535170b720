"""A float Conv or MatMul whose weight is not an initializer (a graph input, or DequantizeLinear of an int8 weight: the float
fallback of a QDQ group onnxruntime leaves unfused) runs in onnxruntime through MLAS's im2col SGEMM; byoc imports
it as ``nn.conv2d(accumulation="mlas")`` and must give onnxruntime's float32 output bit for bit on the
interpreter and the CPU backend (expected values: onnxruntime, one intra-op thread)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.frontend import from_onnx

ort = pytest.importorskip("onnxruntime")

# (cin, cout, hw, k, stride, group, dilation): im2col blocks of 128 and (N < K) of 256 and 512, pointwise
# (GEMM direct), 7x7 on 3 channels, grouped, depthwise (the M = 1 kernel), depth multiplier 2, dilation
SHAPES = [(16, 32, 12, 3, 1, 1, 1), (64, 32, 7, 3, 1, 1, 1), (128, 16, 4, 3, 2, 1, 1), (96, 24, 9, 1, 1, 1, 1),
          (40, 24, 9, 1, 2, 1, 1), (3, 16, 20, 7, 2, 1, 1), (16, 32, 10, 3, 1, 2, 1), (16, 16, 10, 3, 1, 16, 1),
          (24, 24, 9, 5, 2, 24, 1), (8, 16, 10, 3, 1, 8, 1), (8, 8, 11, 3, 1, 1, 2), (300, 1, 3, 3, 1, 1, 1),
          # one output pixel (SgemmKernelM1TransposeB: 4/2/1-row blocks): squeeze-excite 1x1 and a 3x3 on 3x3
          (40, 7, 1, 1, 1, 1, 1), (24, 11, 3, 3, 1, 1, 1), (33, 1, 1, 1, 1, 1, 1)]


def _session(model_bytes):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def _conv_model(cin, cout, hw, k, s, group, dil, dq_weight: bool, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, (1, cin, hw, hw)).astype(np.float32)
    b = rng.normal(0, .1, cout).astype(np.float32)
    pads = [dil * (k // 2)] * 4 if hw > 1 and hw != k else [0] * 4
    wshape = (cout, cin // group, k, k)
    inits = [nh.from_array(b, "b")]
    inputs = [h.make_tensor_value_info("x", TP.FLOAT, x.shape)]
    feeds = {"x": x}
    nodes = []
    if dq_weight:
        wq = rng.integers(-127, 128, wshape).astype(np.int8)
        inits += [nh.from_array(wq, "wq"), nh.from_array(np.float32(0.013), "ws"), nh.from_array(np.int8(0), "wz")]
        nodes.append(h.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"]))
    else:
        inputs.append(h.make_tensor_value_info("w", TP.FLOAT, wshape))
        feeds["w"] = rng.normal(0, .2, wshape).astype(np.float32)
    nodes.append(h.make_node("Conv", ["x", "w", "b"], ["y"], pads=pads, strides=[s, s], group=group,
                             dilations=[dil, dil]))
    g = h.make_graph(nodes, "conv", inputs, [h.make_tensor_value_info("y", TP.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString(), feeds


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dq_weight", [True, False], ids=["dq-weight", "fed-weight"])
def test_float_conv_matches_onnxruntime_bit_for_bit(shape, dq_weight):
    data, feeds = _conv_model(*shape, dq_weight=dq_weight)
    ref = _session(data).run(None, feeds)[0]
    mod, _ = from_onnx(data)
    assert 'accumulation="mlas"' in str(mod)
    got = byoc.evaluate(mod, feeds)[0]
    assert got.dtype == np.float32 and np.array_equal(got.view(np.int32), ref.view(np.int32)), \
        f"interpreter: {int(np.sum(got != ref))} of {ref.size} differ"
    cpu = byoc.build(mod, target="llvm").run(feeds)[0]
    assert np.array_equal(cpu.view(np.int32), ref.view(np.int32)), \
        f"CPU backend: {int(np.sum(cpu != ref))} of {ref.size} differ"


def test_float64_accumulation_would_differ():
    """The check above can fail: summing in float64 and rounding once (byoc's default float conv) is not
    onnxruntime's result on this shape."""
    from byoc.ops.nn import Conv2DAttrs, conv2d_compute
    data, feeds = _conv_model(64, 32, 7, 3, 1, 1, 1, dq_weight=False)
    ref = _session(data).run(None, feeds)[0]
    rng = np.random.default_rng(0)  # _conv_model's draws: x, then the bias
    rng.normal(0, 1, feeds["x"].shape)
    bias = rng.normal(0, .1, 32).astype(np.float32)
    once = conv2d_compute(feeds["x"], feeds["w"], Conv2DAttrs(padding=(1, 1, 1, 1)), integer=False)
    once = once.astype(np.float32) + bias[None, :, None, None]
    assert np.max(np.abs(once - ref)) < 1e-5  # the same convolution
    assert np.sum(once != ref) > 0  # summed in another order


def test_initializer_weight_keeps_default_accumulation():
    """A constant weight is NCHWc-blocked by onnxruntime (another order, not reproduced): no ``mlas`` there."""
    rng = np.random.default_rng(1)
    w = rng.normal(0, .2, (8, 4, 3, 3)).astype(np.float32)
    g = h.make_graph([h.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "c",
                     [h.make_tensor_value_info("x", TP.FLOAT, (1, 4, 6, 6))],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)], [nh.from_array(w, "w")])
    mod, _ = from_onnx(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString())
    assert "accumulation" not in str(mod)


def _matmul_model(m, k, n, batch=None, seed=0):
    """x → QuantizeLinear(int8) → DequantizeLinear read by two MatMuls (the fan-out keeps it int8, which x86
    onnxruntime does not fuse): both run as float MatMul with a DequantizeLinear weight."""
    rng = np.random.default_rng(seed)
    ash = (batch, m, k) if batch else (m, k)
    x = rng.normal(0, 1, ash).astype(np.float32)
    inits = [nh.from_array(np.float32(0.02), "xs"), nh.from_array(np.int8(3), "xz")]
    nodes = [h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"])]
    outs = []
    for i in range(2):
        inits += [nh.from_array(rng.integers(-127, 128, (k, n)).astype(np.int8), f"wq{i}"),
                  nh.from_array(np.float32(0.01), f"ws{i}"), nh.from_array(np.int8(0), f"wz{i}")]
        nodes += [h.make_node("DequantizeLinear", [f"wq{i}", f"ws{i}", f"wz{i}"], [f"w{i}"]),
                  h.make_node("MatMul", ["xd", f"w{i}"], [f"y{i}"])]
        outs.append(h.make_tensor_value_info(f"y{i}", TP.FLOAT, None))
    g = h.make_graph(nodes, "mm", [h.make_tensor_value_info("x", TP.FLOAT, ash)], outs, inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString(), {"x": x}


# (M, K, N, batch): K blocks (N >= K and N < K), M = 1 (SgemmKernelM1), N = 1 (M1TransposeB, 4/2/1-row
# blocks), a 3-D activation flattened to rows
MATMULS = [(64, 256, 128, None), (1, 512, 64, None), (8, 64, 32, 4), (64, 100, 50, None), (16, 300, 1, None),
           (7, 1000, 1, None)]


@pytest.mark.parametrize("shape", MATMULS, ids=lambda s: "x".join(map(str, s)))
def test_unfused_qdq_matmul_matches_onnxruntime_bit_for_bit(shape):
    data, feeds = _matmul_model(*shape)
    ref = _session(data).run(None, feeds)
    mod, _ = from_onnx(data)
    assert str(mod).count('accumulation="mlas"') == 2
    for name, got in (("interpreter", byoc.evaluate(mod, feeds)),
                      ("CPU backend", byoc.build(mod, target="llvm").run(feeds))):
        for g_, r in zip(got, ref):
            assert np.array_equal(g_.view(np.int32), r.view(np.int32)), \
                f"{name}: {int(np.sum(g_ != r))} of {r.size} differ"


@pytest.mark.parametrize("net, act", [("residual", "int16"), ("residual", "uint16"), ("concat_branches", "int16"),
                                      ("concat_branches", "uint16"), ("swish", "int16"), ("swish", "uint16")])
def test_16bit_qdq_nets_run_in_float_like_onnxruntime(tmp_path, net, act):
    """16-bit activations are never fused by onnxruntime's CPU provider: every conv runs as DequantizeLinear →
    float Conv (MLAS order) → QuantizeLinear, and Sigmoid as MLAS's logistic (tabulated over all 65,536 inputs)."""
    from onnx_ort_nets import NETS, quantize
    q = quantize(NETS[net](), tmp_path, act=act, weight="int8" if act == "int16" else "uint8")
    data = q.SerializeToString()
    sess = _session(data)
    mod, _ = from_onnx(data)
    exe = byoc.build(mod, target="llvm")
    shape = [d.dim_value for d in q.graph.input[0].type.tensor_type.shape.dim]
    for seed in range(3):
        x = np.random.default_rng(seed).normal(0, 1, shape).astype(np.float32)
        ref = sess.run(None, {"x": x})[0]
        np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ref)
        np.testing.assert_array_equal(exe.run({"x": x})[0], ref)


# (cin, cout, hw, k, stride, pad, group): one K block, K blocks of 128 (cin 200), one input pixel (M = 1 kernel),
# grouped, output cropping by padding
TRANSPOSES = [(8, 4, 5, 2, 2, 0, 1), (16, 8, 4, 3, 2, 1, 1), (200, 4, 3, 3, 1, 0, 1), (4, 6, 1, 3, 1, 0, 1),
              (9, 6, 1, 2, 2, 0, 1), (8, 8, 4, 3, 2, 1, 2)]


@pytest.mark.parametrize("shape", TRANSPOSES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dq_weight", [True, False], ids=["dq-weight", "fed-weight"])
def test_float_conv_transpose_matches_onnxruntime_bit_for_bit(shape, dq_weight):
    cin, cout, hw, k, s, p, group = shape
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (1, cin, hw, hw)).astype(np.float32)
    wshape = (cin, cout // group, k, k)
    inits = [nh.from_array(rng.normal(0, .1, cout).astype(np.float32), "b")]
    inputs = [h.make_tensor_value_info("x", TP.FLOAT, x.shape)]
    feeds = {"x": x}
    nodes = []
    if dq_weight:
        inits += [nh.from_array(rng.integers(-127, 128, wshape).astype(np.int8), "wq"),
                  nh.from_array(np.float32(0.011), "ws"), nh.from_array(np.int8(1), "wz")]
        nodes.append(h.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"]))
    else:
        inputs.append(h.make_tensor_value_info("w", TP.FLOAT, wshape))
        feeds["w"] = rng.normal(0, .3, wshape).astype(np.float32)
    nodes.append(h.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[s, s], pads=[p] * 4, group=group))
    g = h.make_graph(nodes, "ct", inputs, [h.make_tensor_value_info("y", TP.FLOAT, None)], inits)
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()
    ref = _session(data).run(None, feeds)[0]
    mod, _ = from_onnx(data)
    assert 'accumulation="mlas"' in str(mod)
    got = byoc.evaluate(mod, feeds)[0]
    assert np.array_equal(got.view(np.int32), ref.view(np.int32)), f"interpreter: {int(np.sum(got != ref))} differ"
    cpu = byoc.build(mod, target="llvm").run(feeds)[0]
    assert np.array_equal(cpu.view(np.int32), ref.view(np.int32)), f"CPU backend: {int(np.sum(cpu != ref))} differ"


# (A shape, B shape): attention-style batches, a 2-D right operand (one GEMM over all rows), M = 1 per batch,
# N = 1 per batch, 2-D, one row
BATCHED = [((2, 4, 8, 16), (2, 4, 16, 8)), ((3, 5, 64), (64, 7)), ((6, 1, 300), (6, 300, 9)),
           ((4, 7, 200), (4, 200, 1)), ((8, 130), (130, 20)), ((1, 130), (130, 20))]


@pytest.mark.parametrize("shapes", BATCHED, ids=lambda s: "x".join(map(str, s[0])) + "-" + "x".join(map(str, s[1])))
def test_run_time_matmul_matches_onnxruntime_bit_for_bit(shapes):
    """MatMul of two run-time tensors (attention's Q·Kᵀ and P·V in an int8 QDQ transformer run in float):
    MlasGemm per batch."""
    ash, bsh = shapes
    rng = np.random.default_rng(2)
    feeds = {"a": rng.normal(0, 1, ash).astype(np.float32), "b": rng.normal(0, 1, bsh).astype(np.float32)}
    g = h.make_graph([h.make_node("MatMul", ["a", "b"], ["y"])], "mm",
                     [h.make_tensor_value_info("a", TP.FLOAT, ash), h.make_tensor_value_info("b", TP.FLOAT, bsh)],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)])
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()
    ref = _session(data).run(None, feeds)[0]
    mod, _ = from_onnx(data)
    assert 'accumulation="mlas"' in str(mod)
    for name, got in (("interpreter", byoc.evaluate(mod, feeds)[0]),
                      ("CPU backend", byoc.build(mod, target="llvm").run(feeds)[0])):
        assert np.array_equal(got.view(np.int32), ref.view(np.int32)), f"{name}: {int(np.sum(got != ref))} differ"


def _gemm_model(m, k, n, trans_b, c_shape, weight, seed=0):
    """Gemm of a float input; B an initializer ("init": prepacked by onnxruntime), a DequantizeLinear of an
    int16 weight ("dq": not prepacked, and not a MatMulNBits weight form) or a graph input ("fed")."""
    rng = np.random.default_rng(seed)
    bshape = (n, k) if trans_b else (k, n)
    inits, ins, inputs = [], ["x", "b"], [h.make_tensor_value_info("x", TP.FLOAT, (m, k))]
    nodes = []
    if weight == "init":
        inits.append(nh.from_array(rng.normal(0, 1, bshape).astype(np.float32), "b"))
    elif weight == "dq":
        inits += [nh.from_array(rng.integers(-3000, 3000, bshape).astype(np.int16), "bq"),
                  nh.from_array(np.float32(3e-4), "bs"), nh.from_array(np.int16(0), "bz")]
        nodes.append(h.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["b"]))
    else:
        inputs.append(h.make_tensor_value_info("b", TP.FLOAT, bshape))
    if c_shape is not None:
        inits.append(nh.from_array(rng.normal(0, 1, c_shape).astype(np.float32), "c"))
        ins.append("c")
    nodes.append(h.make_node("Gemm", ins, ["y"], transB=int(trans_b)))
    g = h.make_graph(nodes, "gemm", inputs, [h.make_tensor_value_info("y", TP.FLOAT, (m, n))], inits)
    feeds = {"x": rng.normal(0, 3, (m, k)).astype(np.float32)}
    if weight == "fed":
        feeds["b"] = rng.normal(0, 1, bshape).astype(np.float32)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)], ir_version=10).SerializeToString(), feeds


# (M, K, N): one K block, several (FMA kernel: 128 traded by N vs K; prepacked: 256), M = 1 (SgemmKernelM1 /
# M1TransposeB over B's rows), N = 1, both 1, K = 1
GEMMS = [(8, 64, 20), (8, 300, 20), (8, 200, 300), (5, 700, 130), (1, 64, 20), (1, 200, 7), (1, 13, 5),
         (8, 64, 1), (200, 600, 3), (1, 64, 1), (3, 1, 9)]


@pytest.mark.parametrize("weight", ["dq", "fed", "init"])
@pytest.mark.parametrize("trans_b", [True, False], ids=["transB", "B"])
@pytest.mark.parametrize("shape", GEMMS, ids=lambda s: "x".join(map(str, s)))
def test_float_gemm_matches_onnxruntime_bit_for_bit(shape, trans_b, weight):
    """onnxruntime copies C into Y, then MlasGemm adds every K block onto it (the bias enters before the first
    block); a prepacked B takes the FMA kernel in K blocks of 256. Before nn.mlas_gemm, a 16-bit 8x64x20 Gemm
    had 1 of 160 outputs off and a float 5x700x130 one 1695 of 1950."""
    m, k, n = shape
    for c_shape in ((n,), (m, 1), None):
        data, feeds = _gemm_model(m, k, n, trans_b, c_shape, weight, seed=m + k + n)
        ref = _session(data).run(None, feeds)[0]
        mod, _ = from_onnx(data)
        assert "nn.mlas_gemm" in str(mod)
        for name, got in (("interpreter", byoc.evaluate(mod, feeds)[0]),
                          ("CPU backend", byoc.build(mod, target="llvm").run(feeds)[0])):
            assert np.array_equal(got.view(np.int32), ref.view(np.int32)), \
                f"{name}, C {c_shape}: {int(np.sum(got != ref))} of {ref.size} differ"


@pytest.mark.parametrize("ashape, n", [((8, 64), 20), ((1, 64), 20), ((8, 64), 1), ((2, 5, 300), 20),
                                       ((3, 4, 700), 130), ((700,), 3)], ids=str)
def test_float_matmul_with_initializer_weight_matches_onnxruntime_bit_for_bit(ashape, n):
    # prepacked B (MlasGemmPackB): K blocks of 256 over all rows; before: plain float32 dot products, 2834 of
    # 1560 x 2 outputs off for the 3x4x700 · 700x130 case
    rng = np.random.default_rng(n)
    w = rng.normal(0, 1, (ashape[-1], n)).astype(np.float32)
    g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["y"])], "mm", [h.make_tensor_value_info("x", TP.FLOAT, ashape)],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)], [nh.from_array(w, "w")])
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()
    feeds = {"x": rng.normal(0, 3, ashape).astype(np.float32)}
    ref = _session(data).run(None, feeds)[0]
    mod, _ = from_onnx(data)
    for name, got in (("interpreter", byoc.evaluate(mod, feeds)[0]),
                      ("CPU backend", byoc.build(mod, target="llvm").run(feeds)[0])):
        assert np.array_equal(got.view(np.int32), ref.view(np.int32)), f"{name}: {int(np.sum(got != ref))} differ"


def test_16bit_qdq_gemm_bit_exact(tmp_path):
    """The 16-bit QDQ Gemm of docs/onnx-import.md (8x64x20, transB=1): onnxruntime runs DQ → float Gemm → Q."""
    from onnx_ort_nets import quantize
    rng = np.random.default_rng(0)
    g = h.make_graph([h.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)], "g",
                     [h.make_tensor_value_info("x", TP.FLOAT, (8, 64))], [h.make_tensor_value_info("y", TP.FLOAT, (8, 20))],
                     [nh.from_array(rng.normal(0, .2, (20, 64)).astype(np.float32), "w"),
                      nh.from_array(rng.normal(0, .1, 20).astype(np.float32), "b")])
    q = quantize(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), tmp_path, act="int16", weight="int8")
    data = q.SerializeToString()
    sess = _session(data)
    mod, _ = from_onnx(data)
    exe = byoc.build(mod, target="llvm")
    for seed in range(12):
        x = np.random.default_rng(seed).normal(0, 1, (8, 64)).astype(np.float32)
        ref = sess.run(None, {"x": x})[0]
        np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ref)
        np.testing.assert_array_equal(exe.run({"x": x})[0], ref)


def _matmul_add_model(ashape, n, c_shape, c_fed=False, b_kind="init", add_first=False, t_read_twice=False):
    k = ashape[-1]
    rng = np.random.default_rng(k + n)
    inits, nodes = [], []
    inputs = [h.make_tensor_value_info("x", TP.FLOAT, ashape)]
    feeds = {"x": rng.normal(0, 3, ashape).astype(np.float32)}
    if b_kind == "init":
        inits.append(nh.from_array(rng.normal(0, 1, (k, n)).astype(np.float32), "w"))
    elif b_kind == "dq":
        inits += [nh.from_array(rng.integers(-3000, 3000, (k, n)).astype(np.int16), "wq"),
                  nh.from_array(np.float32(3e-4), "ws"), nh.from_array(np.int16(0), "wz")]
        nodes.append(h.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"]))
    else:
        inputs.append(h.make_tensor_value_info("w", TP.FLOAT, (k, n)))
        feeds["w"] = rng.normal(0, 1, (k, n)).astype(np.float32)
    c = rng.normal(0, 1, c_shape).astype(np.float32)
    if c_fed:
        inputs.append(h.make_tensor_value_info("c", TP.FLOAT, c_shape))
        feeds["c"] = c
    else:
        inits.append(nh.from_array(c, "c"))
    nodes += [h.make_node("MatMul", ["x", "w"], ["t"]), h.make_node("Add", ["c", "t"] if add_first else ["t", "c"], ["y"])]
    outs = [h.make_tensor_value_info("y", TP.FLOAT, None)]
    if t_read_twice:
        nodes.append(h.make_node("Relu", ["t"], ["z"]))
        outs.append(h.make_tensor_value_info("z", TP.FLOAT, None))
    g = h.make_graph(nodes, "mm_add", inputs, outs, inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)], ir_version=10).SerializeToString(), feeds


# K = 300: two prepacked K blocks of 256, where the bias's place in the sum shows. Fused by onnxruntime into a
# Gemm: C [N], [1, N], [M, N], [M, 1], fed C, a DequantizeLinear or fed B, Add(C, t), a 3-D and a 1-D A
# (reshaped around the Gemm); not fused: a scalar C, a 3-D C, a MatMul output read twice
MATMUL_ADDS = {"c_n": dict(ashape=(8, 300), n=20, c_shape=(20,)), "c_1n": dict(ashape=(8, 300), n=20, c_shape=(1, 20)),
               "c_mn": dict(ashape=(8, 300), n=20, c_shape=(8, 20)), "c_m1": dict(ashape=(8, 300), n=20, c_shape=(8, 1)),
               "c_fed": dict(ashape=(8, 300), n=20, c_shape=(20,), c_fed=True),
               "b_dq": dict(ashape=(8, 300), n=20, c_shape=(20,), b_kind="dq"),
               "b_fed": dict(ashape=(8, 300), n=20, c_shape=(20,), b_kind="fed"),
               "add_c_first": dict(ashape=(8, 300), n=20, c_shape=(20,), add_first=True),
               "a_3d": dict(ashape=(2, 4, 300), n=20, c_shape=(20,)), "a_1d": dict(ashape=(300,), n=20, c_shape=(20,)),
               "a_row": dict(ashape=(1, 300), n=20, c_shape=(20,), b_kind="dq"),
               "c_scalar": dict(ashape=(8, 300), n=20, c_shape=()), "c_3d": dict(ashape=(8, 300), n=20, c_shape=(1, 8, 20)),
               "t_read_twice": dict(ashape=(8, 300), n=20, c_shape=(20,), t_read_twice=True)}


@pytest.mark.parametrize("case", sorted(MATMUL_ADDS))
def test_float_matmul_add_follows_onnxruntimes_gemm_fusion_bit_for_bit(case):
    # before: MatMul then Add, 43 of 160 outputs off for 8x300 · 300x20 + [20]
    data, feeds = _matmul_add_model(**MATMUL_ADDS[case])
    ref = _session(data).run(None, feeds)
    mod, _ = from_onnx(data)
    for name, got in (("interpreter", byoc.evaluate(mod, feeds)),
                      ("CPU backend", byoc.build(mod, target="llvm").run(feeds))):
        for g_, r in zip(got, ref):
            assert np.array_equal(g_.view(np.int32), r.view(np.int32)), \
                f"{name}: {int(np.sum(g_ != r))} of {r.size} differ"
