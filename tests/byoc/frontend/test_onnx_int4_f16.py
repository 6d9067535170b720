"""4-bit weights (INT4 / UINT4 initializers, two to a byte, low nibble first: held unpacked), blocked
DequantizeLinear (``block_size``, opset 21) and float16 scales, against onnxruntime (one thread, ORT_ENABLE_ALL):
bit for bit on the interpreter and the CPU backend where onnxruntime runs them and byoc reproduces it, refused
with a ByocError naming the nodes otherwise."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import byoc
from byoc.errors import UnsupportedOpsError
from byoc.frontend import from_onnx

ort = pytest.importorskip("onnxruntime")


def _session(model):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _check(model, shape, n=3, dtype=np.float32):
    sess = _session(model)
    mod, _ = from_onnx(model)
    exe = byoc.build(mod, target="llvm")
    for seed in range(n):
        x = np.random.default_rng(seed).normal(0, 1, shape).astype(dtype)
        ref = sess.run(None, {"x": x})[0]
        for name, got in (("interpreter", byoc.evaluate(mod, {"x": x})[0]), ("CPU backend", exe.run({"x": x})[0])):
            assert got.dtype == ref.dtype or ref.dtype.kind not in "f", name
            assert np.array_equal(np.asarray(got).astype(np.float64), np.asarray(ref).astype(np.float64)), \
                f"{name}: {int(np.sum(np.asarray(got) != np.asarray(ref)))} of {ref.size} differ"
    return mod


def _quantize_4bit(net, tmp_path, act, weight, per_channel):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    types = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8, "int16": QuantType.QInt16,
             "int4": QuantType.QInt4, "uint4": QuantType.QUInt4}
    rng = np.random.default_rng(1)
    shape = [d.dim_value for d in net.graph.input[0].type.tensor_type.shape.dim]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"x": rng.normal(0, 1, shape).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.batches, None)
    onnx.save(net, tmp_path / "f.onnx")
    quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=types[act], weight_type=types[weight], per_channel=per_channel)
    return onnx.load(tmp_path / "q.onnx"), shape


_NETS = [("residual", "uint8"), ("residual", "int8"), ("residual", "int16"), ("audio_1d", "uint8"),
         ("audio_1d", "int8"), ("mlp_skip", "uint8"), ("mlp_skip", "int8"), ("unet_up", "uint8"),
         ("mobilenet_v3_block", "int8")]


@pytest.mark.parametrize("per_channel", [False, True], ids=["pt", "pc"])
@pytest.mark.parametrize("weight", ["int4", "uint4"])
@pytest.mark.parametrize("net, act", _NETS, ids=lambda v: str(v))
def test_4bit_weight_qdq_nets_bit_exact(tmp_path, net, act, weight, per_channel):
    """quantize_static with QInt4 / QUInt4 weights. Below opset 21 it writes com.microsoft Quantize/
    DequantizeLinear, which onnxruntime's QDQ fusion matches like the default-domain ones (byoc did not: 3 to 6
    of 12 audio_1d outputs differed); no CPU QDQ selector takes a 4-bit weight, so those convs run in float."""
    from onnx_ort_nets import ARCHS, NETS
    q, shape = _quantize_4bit({**NETS, **ARCHS}[net](), tmp_path, act, weight, per_channel)
    assert any(t.data_type in (TP.INT4, TP.UINT4) for t in q.graph.initializer)
    _check(q, shape)


def test_16bit_activation_4bit_weight_mlp_runs_as_matmul_nbits(tmp_path):
    # before: refused (onnxruntime rewrites its MatMuls into MatMulNBits); now nn.matmul_nbits, bit for bit
    from onnx_ort_nets import NETS
    q, shape = _quantize_4bit(NETS["mlp_skip"](), tmp_path, "int16", "int4", False)
    assert "nn.matmul_nbits" in from_onnx(q)[0].astext()
    _check(q, shape)


def _int4(name, arr, signed=True):
    return h.make_tensor(name, TP.INT4 if signed else TP.UINT4, list(np.shape(arr)), np.asarray(arr).reshape(-1).tolist())


def _model(nodes, inits, shape, opset=21, in_type=TP.FLOAT, out_type=TP.FLOAT, out_shape=None):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", in_type, list(shape))],
                     [h.make_tensor_value_info("y", out_type, list(out_shape or shape))], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=10)
    onnx.checker.check_model(m)
    return m


@pytest.mark.parametrize("signed", [True, False], ids=["int4", "uint4"])
def test_quantize_to_4bit_saturates_to_the_4bit_range(signed):
    # before: a 4-bit zero point was refused as an element type; held as int8 it must still clip to [-8, 7]
    zp = _int4("yz", 3 if signed else 9, signed)
    nodes = [h.make_node("QuantizeLinear", ["x", "ys", "yz"], ["q"]), h.make_node("DequantizeLinear", ["q", "ys", "yz"], ["y"])]
    m = _model(nodes, [nh.from_array(np.float32(0.25), "ys"), zp], (4, 16))
    sess = _session(m)
    mod, _ = from_onnx(m)
    x = np.linspace(-6, 6, 64, dtype=np.float32).reshape(4, 16)
    ref = sess.run(None, {"x": x})[0]
    assert ref.min() > x.min() + 1 and ref.max() < x.max() - 1  # both ends saturate: the case tests something
    np.testing.assert_array_equal(byoc.evaluate(mod, {"x": x})[0], ref)
    np.testing.assert_array_equal(byoc.build(mod, target="llvm").run({"x": x})[0], ref)


@pytest.mark.parametrize("block", [2, 4])
def test_blocked_4bit_conv_weight_runs_in_float_like_onnxruntime(block):
    # DequantizeLinear(int4 weight, block_size along the output channels) → Conv: a non-constant weight for
    # onnxruntime (MlasConv's order), computed at import as onnxruntime's DequantizeLinear computes it
    rng = np.random.default_rng(block)
    w = rng.integers(-8, 8, (8, 3, 3, 3))
    scale = rng.uniform(0.01, 0.05, (8 // block, 3, 3, 3)).astype(np.float32)
    zp = rng.integers(-2, 3, (8 // block, 3, 3, 3))
    nodes = [h.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0, block_size=block),
             h.make_node("Conv", ["x", "wf"], ["y"], pads=[1, 1, 1, 1])]
    _check(_model(nodes, [_int4("w", w), nh.from_array(scale, "ws"), _int4("wz", zp)], (1, 3, 8, 8),
                  out_shape=(1, 8, 8, 8)), (1, 3, 8, 8))


def test_blocked_matmul_weight_below_block_16_runs_16_and_32_are_matmul_nbits_and_64_is_refused():
    rng = np.random.default_rng(0)
    w = rng.integers(-8, 8, (128, 6))
    for block, refused in ((8, False), (16, False), (32, False), (64, True)):
        nb = -(-128 // block)
        nodes = [h.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0, block_size=block),
                 h.make_node("MatMul", ["x", "wf"], ["y"])]
        m = _model(nodes, [_int4("w", w), nh.from_array(rng.uniform(.01, .05, (nb, 6)).astype(np.float32), "ws"),
                           _int4("wz", np.zeros((nb, 6), np.int64))], (5, 128), out_shape=(5, 6))
        if refused:  # onnxruntime's MatMulNBits with a block length other than 16 and 32
            with pytest.raises(UnsupportedOpsError, match="MatMulNBits"):
                from_onnx(m)
        else:
            _check(m, (5, 128))


@pytest.mark.parametrize("per_channel", [False, True])
def test_float16_scale_weight_cast_to_float_is_exact(per_channel):
    rng = np.random.default_rng(0)
    w = nh.from_array(rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8), "w")
    ws = nh.from_array(np.full(8, 0.01, np.float16) if per_channel else np.float16(0.013), "ws")
    wz = nh.from_array(np.zeros(8, np.int8) if per_channel else np.int8(0), "wz")
    nodes = [h.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wh"], axis=0),
             h.make_node("Cast", ["wh"], ["wf"], to=TP.FLOAT), h.make_node("Conv", ["x", "wf"], ["y"], pads=[1, 1, 1, 1])]
    _check(_model(nodes, [w, ws, wz], (1, 3, 8, 8), out_shape=(1, 8, 8, 8)), (1, 3, 8, 8))


def test_float16_qdq_round_trip_is_exact():
    nodes = [h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["y"])]
    m = _model(nodes, [nh.from_array(np.float16(0.02), "xs"), nh.from_array(np.int8(3), "xz")], (4, 16),
               in_type=TP.FLOAT16, out_type=TP.FLOAT16)
    _check(m, (4, 16), dtype=np.float16)


def test_float16_dequantize_into_a_float16_conv_is_refused():
    # onnxruntime runs the Conv in float32 and folds the inserted Cast into the activation's DequantizeLinear
    # (no float16 rounding there); byoc gave 573 of 1536 outputs different before refusing it
    rng = np.random.default_rng(0)
    inits = [nh.from_array(rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8), "w"),
             nh.from_array(np.float16(0.01), "ws"), nh.from_array(np.int8(0), "wz"),
             nh.from_array(np.float16(0.02), "xs"), nh.from_array(np.int8(0), "xz")]
    nodes = [h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             h.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wh"]), h.make_node("Conv", ["xd", "wh"], ["y"], pads=[1, 1, 1, 1])]
    m = _model(nodes, inits, (1, 3, 8, 8), in_type=TP.FLOAT16, out_type=TP.FLOAT16, out_shape=(1, 8, 8, 8))
    _session(m)  # onnxruntime runs it
    with pytest.raises(UnsupportedOpsError, match=r"2 DequantizeLinear node\(s\) with float16 scales") as e:
        from_onnx(m)
    assert "'xd'" in str(e.value) and "'wh'" in str(e.value)
