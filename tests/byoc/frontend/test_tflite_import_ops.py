"""Every supported TFLite op end to end: writer-built single-op models → from_tflite → byoc.evaluate, compared
with LiteRT BUILTIN_REF bit for bit (float models: to float32 rounding), over dtypes, per-tensor/per-channel
weights, fused activations and padding modes, with seeded random parameters.
"""
from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest

from byoc.frontend import from_tflite
from byoc.testing import TFLiteWriter

from tflite_oracles import compare_tensors, ir_run, litert_run, random_inputs

pytest.importorskip("ai_edge_litert")
ACTS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
SAMPLES = 2  # input draws per model


def _product(*its):
    return list(itertools.product(*its))


def _seed(*key) -> int:
    return zlib.crc32(repr(key).encode())


def check(data: bytes, seed: int, float_model: bool = False) -> None:
    mod, _ = from_tflite(data)
    rng = np.random.default_rng(seed)
    for _ in range(SAMPLES):
        inputs = random_inputs(mod, rng)
        ref_outs, ref_tensors = litert_run(data, inputs)
        outs, taps = ir_run(mod, inputs)
        assert len(outs) == len(ref_outs)
        for o, r in zip(outs, ref_outs):
            assert o.shape == r.shape and o.dtype == r.dtype, (o.shape, r.shape, o.dtype, r.dtype)
            if float_model:
                np.testing.assert_allclose(o, r, rtol=2e-5, atol=2e-5)
            else:
                assert (o == r).all(), f"{int((o != r).sum())}/{o.size} mismatches\n{o}\n{r}"
        if not float_model:
            compared, bad = compare_tensors(ref_tensors, taps)
            assert compared >= 1 and not bad, bad


def _act_scale(rng):
    return float(rng.uniform(0.01, 0.1)), int(rng.integers(-20, 20))


def _q_input(w: TFLiteWriter, rng, shape, dtype):
    s = float(rng.uniform(0.01, 0.1))
    zp = int(rng.integers(-20, 20)) if dtype == "int8" else int(rng.integers(100, 156))
    return w.input("x", shape, dtype, scale=s, zero_point=zp)


def _weights(rng, shape, dtype, per_channel, axis):
    if dtype == "int8":
        q = rng.integers(-127, 128, shape).astype(np.int8)
        zp = 0
    else:
        q = rng.integers(0, 256, shape).astype(np.uint8)
        zp = int(rng.integers(100, 156))
    n = shape[axis] if per_channel else 1
    return q, rng.uniform(0.002, 0.02, n).astype(np.float32), zp


def _out_params(rng, x, w_scale, k, dtype):
    s = float(x.scale[0]) * float(np.mean(w_scale)) * np.sqrt(k) * 5500 / 40
    zp = int(rng.integers(-20, 20)) if dtype == "int8" else int(rng.integers(100, 156))
    return s, zp


CONV_CASES = [(d, pc, act, pad) for d, pc, act, pad in _product(("int8", "uint8"), (True, False), ACTS,
                                                                          ("SAME", "VALID"))
              if not (d == "uint8" and pc)]


@pytest.mark.parametrize("dtype,per_channel,act,padding", CONV_CASES)
def test_conv2d(dtype, per_channel, act, padding):
    seed = _seed((dtype, per_channel, act, padding))
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()
    k, s, d = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    cin, cout = int(rng.integers(1, 5)), int(rng.integers(1, 6))
    x = _q_input(w, rng, (1, int(rng.integers(6, 11)), int(rng.integers(6, 11)), cin), dtype)
    q, ws, wzp = _weights(rng, (cout, k, k, cin), dtype, per_channel, 0)
    os_, ozp = _out_params(rng, x, ws, k * k * cin, dtype)
    y = w.conv2d(x, q, rng.integers(-3000, 3000, cout), weight_scale=ws, weight_zp=wzp, strides=(s, s),
                 dilation=(d, d), padding=padding, activation=act, out_scale=os_, out_zp=ozp)
    w.output(y)
    check(w.finish(), seed)


@pytest.mark.parametrize("dtype,per_channel,act,padding", CONV_CASES)
def test_depthwise_conv2d(dtype, per_channel, act, padding):
    seed = _seed(("dw", dtype, per_channel, act, padding))
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()
    k, s = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    cin, dm = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    x = _q_input(w, rng, (1, int(rng.integers(5, 10)), int(rng.integers(5, 10)), cin), dtype)
    q, ws, wzp = _weights(rng, (1, k, k, cin * dm), dtype, per_channel, 3)
    os_, ozp = _out_params(rng, x, ws, k * k, dtype)
    y = w.depthwise_conv2d(x, q, rng.integers(-3000, 3000, cin * dm), weight_scale=ws, weight_zp=wzp,
                           strides=(s, s), padding=padding, activation=act, out_scale=os_, out_zp=ozp)
    w.output(y)
    check(w.finish(), seed)


@pytest.mark.parametrize("dtype,per_channel,act", [(d, pc, a) for d, pc, a in _product(
    ("int8", "uint8"), (True, False), ACTS) if not (d == "uint8" and pc)])
def test_fully_connected(dtype, per_channel, act):
    seed = _seed(("fc", dtype, per_channel, act))
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()
    kdim, units = int(rng.integers(2, 40)), int(rng.integers(1, 12))
    keep = bool(rng.integers(0, 2))
    x = _q_input(w, rng, (2, 3, kdim) if keep else (2, 3, kdim), dtype)
    q, ws, wzp = _weights(rng, (units, kdim), dtype, per_channel, 0)
    os_, ozp = _out_params(rng, x, ws, kdim, dtype)
    y = w.fully_connected(x, q, rng.integers(-3000, 3000, units), weight_scale=ws, weight_zp=wzp,
                          keep_num_dims=keep, activation=act, out_scale=os_, out_zp=ozp)
    w.output(y)
    check(w.finish(), seed)


@pytest.mark.parametrize("per_channel,padding", _product((True, False), ("SAME", "VALID")))
def test_transpose_conv(per_channel, padding):
    seed = _seed(("tconv", per_channel, padding))
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()
    k, s = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    cin, cout, h = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(3, 7))
    x = _q_input(w, rng, (1, h, h, cin), "int8")
    q, ws, _ = _weights(rng, (cout, k, k, cin), "int8", per_channel, 0)
    oh = h * s if padding == "SAME" else (h - 1) * s + k
    os_, ozp = _out_params(rng, x, ws, k * k * cin, "int8")
    y = w.transpose_conv(x, q, (1, oh, oh, cout), rng.integers(-3000, 3000, cout), weight_scale=ws,
                         strides=(s, s), padding=padding, out_scale=os_, out_zp=ozp)
    w.output(y)
    check(w.finish(), seed)


@pytest.mark.parametrize("op,dtype,act", _product(("add", "sub", "mul"), ("int8", "uint8"), ACTS))
def test_binary(op, dtype, act):
    seed = _seed((op, dtype, act))
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()
    a = _q_input(w, rng, (1, 4, 5, 3), dtype)
    bshape = [(1, 4, 5, 3), (1, 1, 1, 3), (1, 4, 1, 1)][int(rng.integers(0, 3))]
    s2 = float(rng.uniform(0.01, 0.1))
    b = w.input("y", bshape, dtype, scale=s2, zero_point=int(a.zero_point[0]) + int(rng.integers(-5, 5)))
    os_ = float(rng.uniform(0.02, 0.2)) * (0.1 if op == "mul" else 1)
    ozp = int(rng.integers(-10, 10)) + (0 if dtype == "int8" else 128)
    y = getattr(w, op)(a, b, activation=act, out_scale=os_, out_zp=ozp)
    w.output(y)
    check(w.finish(), seed)


@pytest.mark.parametrize("kind,dtype,padding,act", _product(
    ("average_pool2d", "max_pool2d"), ("int8", "uint8"), ("SAME", "VALID"), ("NONE", "RELU6")))
def test_pool(kind, dtype, padding, act):
    seed = _seed((kind, dtype, padding, act))
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()
    x = _q_input(w, rng, (1, int(rng.integers(4, 9)), int(rng.integers(4, 9)), 3), dtype)
    f, s = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    y = getattr(w, kind)(x, (f, f + 1), (s, s), padding, activation=act)
    w.output(y)
    check(w.finish(), seed)


@pytest.mark.parametrize("dtype,axes,keep", [("int8", (1, 2), True), ("int8", (1,), False), ("uint8", (2,), True),
                                             ("int8", (3,), True), ("uint8", (1, 2, 3), False)])
def test_mean(dtype, axes, keep):
    seed = _seed(("mean", dtype, axes, keep))
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()
    x = _q_input(w, rng, (1, 5, 6, 4), dtype)
    s, zp = _act_scale(rng)
    y = w.mean(x, axes, keep, out_scale=s, out_zp=zp + (0 if dtype == "int8" else 128))
    w.output(y)
    check(w.finish(), seed)


@pytest.mark.parametrize("op,dtype", _product(
    ("softmax", "logistic", "tanh", "hard_swish", "leaky_relu", "relu", "relu6", "relu_n1_to_1"),
    ("int8", "uint8")))
def test_activation(op, dtype):
    seed = _seed((op, dtype))
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()
    x = _q_input(w, rng, (2, 3, 17), dtype)
    kwargs = {}
    if op in ("hard_swish", "leaky_relu", "relu", "relu6", "relu_n1_to_1"):
        s, zp = _act_scale(rng)
        kwargs = dict(out_scale=s, out_zp=zp + (0 if dtype == "int8" else 128))
    if op == "softmax":
        y = w.softmax(x, float(rng.uniform(0.5, 2.0)))
    elif op == "leaky_relu":
        y = w.leaky_relu(x, float(rng.uniform(-0.5, 1.5)), **kwargs)
    else:
        y = getattr(w, op)(x, **kwargs)
    w.output(y)
    check(w.finish(), seed)


@pytest.mark.parametrize("dtype", ("int8", "uint8", "float32"))
def test_data_movement(dtype):
    rng = np.random.default_rng(3)
    w = TFLiteWriter()
    x = (w.input("x", (1, 6, 8, 4), "float32") if dtype == "float32" else _q_input(w, rng, (1, 6, 8, 4), dtype))
    p = w.pad(x, [[0, 0], [1, 2], [0, 1], [0, 0]])
    p2 = w.padv2(p, [[0, 0], [0, 0], [2, 0], [0, 0]], 3)
    t = w.transpose(p2, [0, 2, 1, 3])
    r = w.reshape(t, [1, 11, 9, 4])
    sl = w.strided_slice(r, [0, 1, -1, 0], [1, 10, 0, 4], [1, 3, -2, 1], shrink_axis_mask=1)
    sq = w.squeeze(w.reshape(sl, [1, 3, 1, 4, 4]), [2])
    a, b = w.split(sq, 2, 3)
    c = w.concatenation([b, a, b], 3)
    rs = w.resize_nearest_neighbor(c, [7, 11])
    rs2 = w.resize_nearest_neighbor(c, [5, 9], align_corners=True)
    rs3 = w.resize_nearest_neighbor(c, [6, 10], half_pixel_centers=True)
    w.output(rs, rs2, rs3)
    check(w.finish(), 5, float_model=dtype == "float32")


def test_quantize_dequantize():
    rng = np.random.default_rng(9)
    w = TFLiteWriter()
    xf = w.input("xf", (2, 50), "float32")
    q8 = w.quantize(xf, out_scale=0.02, out_zp=3, out_dtype="int8")
    rq = w.quantize(q8, out_scale=0.037, out_zp=-9, out_dtype="int8")
    ru = w.quantize(rq, out_scale=0.037, out_zp=119, out_dtype="uint8")
    d = w.dequantize(ru)
    w.output(q8, rq, ru, d)
    data = w.finish()
    check(data, 9)
    del rng


def test_concatenation_uint8_rescales():
    rng = np.random.default_rng(4)
    w = TFLiteWriter()
    a = w.input("a", (1, 3, 4), "uint8", scale=0.05, zero_point=120)
    b = w.input("b", (1, 2, 4), "uint8", scale=0.11, zero_point=131)
    w.output(w.concatenation([a, b], 1, out_scale=0.07, out_zp=125))
    check(w.finish(), 4)
    del rng


@pytest.mark.parametrize("act", ("NONE", "RELU6"))
def test_float_model(act):
    rng = np.random.default_rng(12)
    w = TFLiteWriter()
    x = w.input("x", (1, 8, 8, 3), "float32")
    y = w.conv2d(x, rng.standard_normal((4, 3, 3, 3)).astype(np.float32), rng.standard_normal(4), padding="SAME",
                 strides=(2, 2), activation=act)
    y = w.depthwise_conv2d(y, rng.standard_normal((1, 3, 3, 8)).astype(np.float32), rng.standard_normal(8),
                           activation=act)
    y = w.add(y, y, activation=act)
    y = w.average_pool2d(y, (2, 2), (2, 2), "VALID")
    y = w.mean(y, [1, 2], True)
    y = w.reshape(y, [1, 8])
    y = w.fully_connected(y, rng.standard_normal((5, 8)).astype(np.float32), rng.standard_normal(5))
    y = w.hard_swish(w.leaky_relu(w.logistic(y), 0.3))
    w.output(w.softmax(y, 1.5))
    check(w.finish(), 12, float_model=True)


@pytest.mark.parametrize("seed", range(4))
def test_tflm_semantics_matches_tflite_micro(seed):
    from tflite_oracles import tflm_run
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()
    x = w.input("x", (1, 256), "int8", scale=float(rng.uniform(0.01, 0.2)), zero_point=int(rng.integers(-20, 20)))
    q, ws, _ = _weights(rng, (16, 256), "int8", bool(seed % 2), 0)
    os_, ozp = _out_params(rng, x, ws, 256, "int8")
    fc = w.fully_connected(x, q, rng.integers(-3000, 3000, 16), weight_scale=ws, out_scale=os_, out_zp=ozp)
    w.output(w.logistic(x), w.tanh(x), fc)
    data = w.finish()
    mod, _ = from_tflite(data, semantics="tflm")
    for _ in range(3):
        inputs = random_inputs(mod, rng)
        outs, _ = ir_run(mod, inputs)
        for o, r in zip(outs, tflm_run(data, inputs)):
            assert (o == r).all(), f"{int((o != r).sum())} mismatches"
