"""Quantized ops against scalar oracles transcribed from quant-semantics.md §2-§3 (qnn_oracle.py helpers).

LiteRT itself is the oracle in test_litert_single_op.py; here every op is also checked element by element against
the spec in plain Python integers, including per-channel parameters and the type relations' diagnostics.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import byoc
import qnn_oracle as O
from byoc import relay
from byoc.errors import IRError, TypeInferenceError
from byoc.quant import params as qp

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True)
SEEDS = st.integers(0, 2**31 - 1)


def _fn(expr):
    from byoc.ir.traversal import post_order
    return relay.Function([n for n in post_order(expr) if isinstance(n, relay.Var)], expr)


def infer(expr):
    return relay.transform.InferType()(relay.IRModule.from_expr(_fn(expr)))["main"].body.checked_type


def run(expr, **inputs):
    return byoc.evaluate(_fn(expr), inputs)[0]


def expect_type_error(expr, *words):
    with pytest.raises(TypeInferenceError) as e:
        infer(expr)
    for w in words:
        assert w in str(e.value), f"{w!r} not in: {e.value}"


def f32(x) -> float:
    return O.f32(float(x))


def rand_scale(rng, lo=0.001, hi=0.2) -> float:
    return f32(rng.uniform(lo, hi))


def qrange(dtype):
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


# ------------------------------------------------------------------------------------- quantize / dequantize
@SETTINGS
@given(SEEDS, st.sampled_from(["int8", "uint8", "int16"]), st.booleans())
def test_quantize(seed, dtype, per_channel):
    rng = np.random.default_rng(seed)
    c = 3
    scales = [rand_scale(rng) for _ in range(c if per_channel else 1)]
    lo, hi = qrange(dtype)
    zps = [int(rng.integers(lo, hi + 1)) for _ in scales]
    x = (rng.normal(0, 100, (4, c)) * scales[0]).astype(np.float32)
    x[0] = (np.arange(c) + 0.5) * np.float32(scales[0])  # ties
    v = relay.var("x", shape=x.shape)
    e = relay.qnn.op.quantize(v, relay.const(np.array(scales, np.float32)), relay.const(np.array(zps, np.int32)),
                              axis=1, out_dtype=dtype)
    got = run(e, x=x)
    for (i, j), val in np.ndenumerate(x):
        k = j if per_channel else 0
        q = O.rha(O.f32(float(np.float32(val) / np.float32(scales[k]))))  # float32 division, then std::round
        assert got[i, j] == O.clamp(q + zps[k], lo, hi), (val, scales[k], zps[k])


@SETTINGS
@given(SEEDS, st.sampled_from(["int8", "uint8", "int32"]), st.booleans())
def test_dequantize(seed, dtype, per_channel):
    rng = np.random.default_rng(seed)
    scales = [rand_scale(rng) for _ in range(3 if per_channel else 1)]
    lo, hi = qrange("int8" if dtype == "int32" else dtype)
    zps = [int(rng.integers(lo, hi + 1)) for _ in scales]
    q = rng.integers(lo, hi + 1, (5, 3)).astype(dtype)
    v = relay.var("q", shape=q.shape, dtype=dtype)
    got = run(relay.qnn.op.dequantize(v, relay.const(np.array(scales, np.float32)),
                                      relay.const(np.array(zps, np.int32)), axis=-1), q=q)
    assert got.dtype == np.float32
    for (i, j), val in np.ndenumerate(q):
        k = j if per_channel else 0
        assert got[i, j] == f32(scales[k] * (int(val) - zps[k]))  # double product, rounded once to float32


def test_quantize_type_errors():
    expect_type_error(relay.qnn.op.quantize(relay.var("x", shape=(2,), dtype="int8"), 0.1, 0), "qnn.quantize",
                      "data", "float")
    expect_type_error(relay.qnn.op.quantize(relay.var("x", shape=(2, 3)), relay.const(np.ones(2, np.float32)), 0,
                                            axis=1), "qnn.quantize", "output_scale")
    expect_type_error(relay.qnn.op.quantize(relay.var("x", shape=(2,)), 0.1, 0, out_dtype="float32"),
                      "qnn.quantize", "out_dtype")
    expect_type_error(relay.qnn.op.dequantize(relay.var("x", shape=(2,)), 0.1, 0), "qnn.dequantize", "data")


# -------------------------------------------------------------------------------------- add / sub / mul
def add_oracle(q1, q2, s1, z1, s2, z2, so, zo, dtype, sign):
    twice = f32(2 * max(s1, s2))
    m1, e1 = O.quantize_multiplier(s1 / twice)
    m2, e2 = O.quantize_multiplier(s2 / twice)
    mo, eo = O.quantize_multiplier(twice / (2**20 * so))
    a = O.rdbpot(O.srdhm((q1 - z1) * 2**20, m1), -e1)
    b = O.rdbpot(O.srdhm((q2 - z2) * 2**20, m2), -e2)
    raw = O.rdbpot(O.srdhm(O.wrap32(a + sign * b), mo), -eo) + zo
    return O.clamp(raw, *qrange(dtype))


def mul_oracle(q1, q2, s1, z1, s2, z2, so, zo, dtype):
    m, e = O.quantize_multiplier(f32(f32(s1 * s2) / so))
    return O.clamp(O.mbqm((q1 - z1) * (q2 - z2), m, e) + zo, *qrange(dtype))


@SETTINGS
@given(SEEDS, st.sampled_from(["add", "subtract", "mul"]), st.sampled_from(["int8", "uint8"]), st.booleans())
def test_binary(seed, op, dtype, per_channel):
    rng = np.random.default_rng(seed)
    lo, hi = qrange(dtype)
    c = 3
    a = rng.integers(lo, hi + 1, (2, 4, c)).astype(dtype)
    b = rng.integers(lo, hi + 1, (4, c)).astype(dtype)
    s1 = [rand_scale(rng) for _ in range(c if per_channel else 1)]
    z1 = [int(rng.integers(lo, hi + 1)) for _ in s1]
    s2, z2 = rand_scale(rng), int(rng.integers(lo, hi + 1))
    so = rand_scale(rng, 0.01, 0.3) if op != "mul" else rand_scale(rng, 0.0005, 0.01)
    zo = int(rng.integers(lo, hi + 1))
    va, vb = relay.var("a", shape=a.shape, dtype=dtype), relay.var("b", shape=b.shape, dtype=dtype)
    build = getattr(relay.qnn.op, op)
    e = build(va, vb, relay.const(np.array(s1, np.float32)), relay.const(np.array(z1, np.int32)), s2, z2, so, zo,
              lhs_axis=2)
    assert infer(e) == relay.TensorType(a.shape, dtype)
    got = run(e, a=a, b=b)
    for idx, q1 in np.ndenumerate(a):
        k = idx[2] if per_channel else 0
        q2 = int(b[idx[1:]])
        if op == "mul":
            want = mul_oracle(int(q1), q2, s1[k], z1[k], s2, z2, so, zo, dtype)
        else:
            want = add_oracle(int(q1), q2, s1[k], z1[k], s2, z2, so, zo, dtype, 1 if op == "add" else -1)
        assert got[idx] == want, (op, idx, int(q1), q2)


def test_binary_params_and_errors():
    p = qp.add_params(0.5, 0.25, 0.7)
    assert (int(p.lhs_multiplier[0]), int(p.lhs_shift[0])) == (2**30, 0)  # the larger scale gets exactly ×0.5
    with pytest.raises(IRError, match="qnn.add"):
        qp.add_params(1.0, 1.0, 1e-9)  # output multiplier ≥ 1: TFLite aborts
    m, e = qp.mul_params(0.1, 0.2, 0.03)
    assert (int(m[0]), int(e[0])) == O.quantize_multiplier(f32(f32(f32(0.1) * f32(0.2)) / f32(0.03)))
    a = relay.var("a", shape=(2, 3), dtype="int8")
    expect_type_error(relay.qnn.op.add(a, relay.var("b", shape=(2, 3), dtype="uint8"), 1.0, 0, 1.0, 0, 1.0, 0),
                      "qnn.add", "rhs", "dtype")
    expect_type_error(relay.qnn.op.add(a, relay.var("b", shape=(4,), dtype="int8"), 1.0, 0, 1.0, 0, 1.0, 0),
                      "qnn.add", "broadcast")
    expect_type_error(relay.qnn.op.mul(a, a, relay.const(np.ones(4, np.float32)), 0, 1.0, 0, 1.0, 0,
                                       lhs_axis=1), "qnn.mul", "lhs_scale")
    expect_type_error(relay.qnn.op.subtract(relay.var("f", shape=(2,)), relay.var("g", shape=(2,)), 1.0, 0, 1.0,
                                            0, 1.0, 0), "qnn.subtract", "lhs", "int8")


# ------------------------------------------------------------------------------------------------ mean
@SETTINGS
@given(SEEDS, st.sampled_from(["int8", "uint8"]), st.sampled_from([(1, 2), (1,), (3,), (0, 1, 2, 3)]),
       st.booleans())
def test_mean(seed, dtype, axes, keepdims):
    rng = np.random.default_rng(seed)
    lo, hi = qrange(dtype)
    x = rng.integers(lo, hi + 1, (1, int(rng.integers(1, 8)), int(rng.integers(1, 8)), 3)).astype(dtype)
    s_in, s_out = rand_scale(rng), rand_scale(rng)
    z_in, z_out = int(rng.integers(lo, hi + 1)), int(rng.integers(lo, hi + 1))
    v = relay.var("x", shape=x.shape, dtype=dtype)
    e = relay.qnn.op.mean(v, s_in, z_in, s_out, z_out, axis=axes, keepdims=keepdims)
    got = run(e, x=x)
    n = int(np.prod([x.shape[a] for a in axes]))
    m, sh = O.quantize_multiplier(s_in / s_out)
    shift = min(n.bit_length() - 1, 32, 31 + sh)
    m2, sh2 = (m << shift) // n, sh - shift  # 1/N folded in with a truncating division (§3.19)
    sums = x.astype(np.int64).sum(axis=axes, keepdims=keepdims)
    for idx, total in np.ndenumerate(sums):
        assert got[idx] == O.clamp(O.mbqm(int(total) - z_in * n, m2, sh2) + z_out, lo, hi)
    assert qp.mean_params(s_in, s_out, n) == (m2, sh2)


# ----------------------------------------------------------------------------------------- concatenate
@SETTINGS
@given(SEEDS, st.sampled_from(["int8", "uint8"]))
def test_concatenate(seed, dtype):
    rng = np.random.default_rng(seed)
    lo, hi = qrange(dtype)
    so, zo = rand_scale(rng), int(rng.integers(lo, hi + 1))
    params = [(so, zo), (rand_scale(rng), int(rng.integers(lo, hi + 1))), (rand_scale(rng), zo)]
    xs = [rng.integers(lo, hi + 1, (2, int(rng.integers(1, 4)))).astype(dtype) for _ in params]
    vs = [relay.var(f"x{i}", shape=x.shape, dtype=dtype) for i, x in enumerate(xs)]
    e = relay.qnn.op.concatenate(vs, [p[0] for p in params], [p[1] for p in params], so, zo, axis=1)
    got = byoc.evaluate(relay.Function(vs, e), {f"x{i}": x for i, x in enumerate(xs)})[0]
    col = 0
    for x, (s, z) in zip(xs, params):
        for (i, j), q in np.ndenumerate(x):
            if (s, z) == (so, zo):
                want = int(q)
            else:
                k = f32(s * f32(1.0 / so))
                bias = f32(-z * k)
                want = O.clamp(O.rha(f32(f32(int(q) * k) + bias)) + zo, lo, hi)
            assert got[i, col + j] == want
        col += x.shape[1]
    bad = relay.qnn.op.concatenate(vs, [so], [zo], so, zo, axis=1)
    expect_type_error(bad, "qnn.concatenate", "input_scales")


# ---------------------------------------------------------------------------------------------- softmax
def softmax_oracle(row, s_in, beta, out_bits):
    real = min(f32(beta) * s_in * 2**26, 2**31 - 1.0)
    mb, lsb = O.quantize_multiplier(real)
    diff_min = -math.floor(31 * 2**26 / 2**lsb)
    mx = max(row)
    exps = {}
    total = 0
    for c, q in enumerate(row):
        d = q - mx
        if d >= diff_min:
            z = O.srdhm(O.wrap32(d * 2**lsb), mb)
            exps[c] = O.expn(z, 5)
            total = O.wrap32(total + O.rdbpot(exps[c], 12))
    h = O.clz32(total)
    r = O.recip(O.wrap32(((total << h) & 0xFFFFFFFF) - 2**31))
    exponent = (12 - h) + 31 - out_bits
    lo = -(2 ** (out_bits - 1))
    return [O.clamp(O.rdbpot(O.srdhm(r, exps[c]), exponent) + lo, lo, -lo - 1) if c in exps else lo
            for c in range(len(row))]


@SETTINGS
@given(SEEDS, st.sampled_from(["int8", "int16"]), st.sampled_from([1.0, 0.5, 2.0]), st.integers(1, 40))
def test_softmax(seed, out_dtype, beta, depth):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (3, depth)).astype(np.int8)
    s_in = rand_scale(rng, 0.01, 0.5)
    v = relay.var("x", shape=x.shape, dtype="int8")
    e = relay.qnn.op.softmax(v, s_in, 0, 1 / 256, -128, beta=beta, out_dtype=out_dtype)
    assert infer(e) == relay.TensorType(x.shape, out_dtype)
    got = run(e, x=x)
    bits = 8 if out_dtype == "int8" else 16
    for i in range(x.shape[0]):
        assert got[i].tolist() == softmax_oracle([int(q) for q in x[i]], s_in, beta, bits)
    # axis other than the last: the same rows read along axis 0
    et = relay.qnn.op.softmax(relay.transpose(v), s_in, 0, 1 / 256, -128, axis=0, beta=beta, out_dtype=out_dtype)
    assert np.array_equal(run(et, x=x), got.T)


def test_softmax_errors():
    v = relay.var("x", shape=(2, 4), dtype="int8")
    expect_type_error(relay.qnn.op.softmax(v, 0.1, 0, 1 / 256, -128, out_dtype="uint8"), "qnn.softmax",
                      "out_dtype")
    expect_type_error(relay.qnn.op.softmax(v, 0.1, 0, 1 / 256, -128, axis=2), "qnn.softmax", "axis")
    with pytest.raises(IRError, match="qnn.softmax"):
        qp.softmax_params(1e-9)


# ------------------------------------------------------------------------------------- sigmoid / tanh (LUT)
@SETTINGS
@given(SEEDS, st.sampled_from(["sigmoid", "tanh"]), st.sampled_from(["int8", "uint8"]))
def test_lut_activations(seed, kind, dtype):
    rng = np.random.default_rng(seed)
    lo, hi = qrange(dtype)
    s_in, zp = rand_scale(rng, 0.005, 0.3), int(rng.integers(lo, hi + 1))
    s_out, z_out = (1 / 256, lo) if kind == "sigmoid" else (1 / 128, 0 if dtype == "int8" else 128)
    x = np.arange(lo, hi + 1).astype(dtype)
    v = relay.var("x", shape=x.shape, dtype=dtype)
    build = relay.qnn.op.sigmoid if kind == "sigmoid" else relay.qnn.op.tanh
    got = run(build(v, s_in, zp, s_out, z_out), x=x)
    inv = f32(1.0 / f32(s_out))
    for q, g in zip(x.tolist(), got.tolist()):
        xf = f32(s_in * f32(q - zp))
        y = f32(1.0 / f32(1.0 + f32(math.exp(-xf)))) if kind == "sigmoid" else f32(math.tanh(xf))
        assert g == O.clamp(int(f32(O.rha(f32(y * inv)) + z_out)), lo, hi), (q, xf)


def test_lut_errors():
    v = relay.var("x", shape=(4,), dtype="uint8")
    expect_type_error(relay.qnn.op.sigmoid(v, 0.1, 0, 1 / 256, 0, rounding="TFLM"), "qnn.sigmoid", "int8")
    expect_type_error(relay.qnn.op.tanh(relay.var("y", shape=(4,), dtype="int32"), 0.1, 0, 1 / 128, 0),
                      "qnn.tanh", "data")
    with pytest.raises(IRError, match="rounding"):
        relay.qnn.op.tanh(v, 0.1, 0, 1 / 128, 0, rounding="NEAREST")


# ---------------------------------------------------------------------------------------------- hardswish
def _sat16(v):
    return O.clamp(v, -32768, 32767)


def _srdhm16(a, b):
    if a == b == -32768:
        return 32767
    p = a * b
    return O.tdiv(p + (2**14 if p >= 0 else 1 - 2**14), 2**15)


def _q16(m):
    return 32767 if m >= 2**31 - 1 - 2**15 else (m + 2**15) >> 16


def hardswish_multipliers(s_in, s_out):
    hires = f32(f32(1 / 128) * s_in)
    return O.quantize_multiplier(f32(hires / s_out)) + O.quantize_multiplier(f32(hires / f32(3 / 32768)))


def hardswish_oracle(q, zp_in, zp_out, dtype, mults):
    mo, eo, mr, er = mults
    h = (q - zp_in) * 128
    pre = _srdhm16(h, _q16(mo))
    r = h
    if er > 0:
        r = _sat16(r * 2 ** (er - 1))
    r = _srdhm16(r, _q16(mr))
    if er > 0:
        r = _sat16(r * 2)
    elif er < 0:
        r = O.rdbpot(r, -er)
    r = (r + 2**15) >> 1
    y = O.tdiv(r * pre, 2**15)
    out = O.rdbpot(y, -eo) + zp_out
    return O.clamp(out, *qrange(dtype))


@SETTINGS
@given(SEEDS, st.sampled_from(["int8", "uint8"]))
def test_hardswish(seed, dtype):
    rng = np.random.default_rng(seed)
    lo, hi = qrange(dtype)
    s_in = rand_scale(rng, 0.005, 0.3)
    s_out = f32(s_in * rng.uniform(0.2, 3.0))
    zp_in, zp_out = int(rng.integers(lo, hi + 1)), int(rng.integers(lo, hi + 1))
    x = np.arange(lo, hi + 1).astype(dtype)
    v = relay.var("x", shape=x.shape, dtype=dtype)
    got = run(relay.qnn.op.hardswish(v, s_in, zp_in, s_out, zp_out), x=x)
    mults = hardswish_multipliers(s_in, s_out)
    assert got.tolist() == [hardswish_oracle(q, zp_in, zp_out, dtype, mults) for q in x.tolist()]


def test_hardswish_rejects_output_multiplier_above_one():
    with pytest.raises(IRError, match="qnn.hardswish"):
        qp.hardswish_params(1.0, 0.001)


# --------------------------------------------------------------------------------------------- leaky relu
@SETTINGS
@given(SEEDS, st.sampled_from(["int8", "uint8", "int16"]), st.sampled_from([0.1, 0.25, -0.5, 1.5]))
def test_leaky_relu(seed, dtype, alpha):
    rng = np.random.default_rng(seed)
    lo, hi = qrange(dtype)
    s_in, s_out = rand_scale(rng), rand_scale(rng)
    zp_in, zp_out = (0, 0) if dtype == "int16" else (int(rng.integers(lo, hi + 1)), int(rng.integers(lo, hi + 1)))
    x = rng.integers(lo, hi + 1, 300).astype(dtype)
    v = relay.var("x", shape=x.shape, dtype=dtype)
    got = run(relay.qnn.op.leaky_relu(v, alpha, s_in, zp_in, s_out, zp_out), x=x)
    mi, ei = O.quantize_multiplier(f32(s_in / s_out))
    ma, ea = O.quantize_multiplier(f32(f32(s_in * f32(alpha)) / s_out))
    for q, g in zip(x.tolist(), got.tolist()):
        d = q - zp_in
        if d >= 0:
            want = zp_out + O.mbqm(d, mi, ei)
        else:
            scaled = O.mbqm(d, abs(ma), ea)
            want = zp_out + (-scaled if ma < 0 else scaled)
        assert g == O.clamp(want, lo, hi)


# ------------------------------------------------------------------------------- dense / conv2d_transpose
@SETTINGS
@given(SEEDS, st.sampled_from(["int8", "uint8"]), st.booleans())
def test_qnn_dense(seed, dtype, per_channel_zp):
    rng = np.random.default_rng(seed)
    lo, hi = qrange(dtype)
    b, k, u = int(rng.integers(1, 4)), int(rng.integers(1, 20)), int(rng.integers(1, 6))
    x = rng.integers(lo, hi + 1, (b, k)).astype(dtype)
    w = rng.integers(lo, hi + 1, (u, k)).astype(dtype)
    zp_in = int(rng.integers(lo, hi + 1))
    zp_w = [int(rng.integers(lo, hi + 1)) for _ in range(u if per_channel_zp else 1)]
    v = relay.var("x", shape=x.shape, dtype=dtype)
    e = relay.qnn.op.dense(v, relay.const(w), zp_in, relay.const(np.array(zp_w, np.int32)), 0.1,
                           relay.const(np.full(u, 0.01, np.float32)), units=u)
    assert infer(e) == relay.TensorType((b, u), "int32")
    got = run(e, x=x)
    for i in range(b):
        for n in range(u):
            zw = zp_w[n if per_channel_zp else 0]
            assert got[i, n] == O.wrap32(sum((int(x[i, j]) - zp_in) * (int(w[n, j]) - zw) for j in range(k)))
    expect_type_error(relay.qnn.op.dense(v, relay.const(w), zp_in, 0, 0.1, relay.const(np.ones(u + 1, np.float32))),
                      "qnn.dense", "kernel_scale")


@SETTINGS
@given(SEEDS, st.integers(1, 2), st.integers(1, 3))
def test_qnn_conv2d_transpose(seed, stride, k):
    rng = np.random.default_rng(seed)
    cin, cout, h, w = 2, 3, int(rng.integers(1, 4)), int(rng.integers(1, 4))
    x = rng.integers(0, 256, (1, h, w, cin)).astype(np.uint8)
    wt = rng.integers(0, 256, (cout, k, k, cin)).astype(np.uint8)
    zp_in, zp_w = int(rng.integers(0, 256)), int(rng.integers(0, 256))
    pad = int(rng.integers(0, k))
    v = relay.var("x", shape=x.shape, dtype="uint8")
    e = relay.qnn.op.conv2d_transpose(v, relay.const(wt), zp_in, zp_w, 0.1, 0.01, strides=(stride, stride),
                                      padding=(pad, pad, 0, 0), data_layout="NHWC", kernel_layout="OHWI")
    got = run(e, x=x)
    oh, ow = (h - 1) * stride - pad + k, (w - 1) * stride - pad + k
    assert got.shape == (1, oh, ow, cout)
    expect = np.zeros((1, oh, ow, cout), np.int64)
    for iy in range(h):
        for ix in range(w):
            for ic in range(cin):
                for ky in range(k):
                    for kx in range(k):
                        oy, ox = iy * stride - pad + ky, ix * stride - pad + kx
                        if 0 <= oy < oh and 0 <= ox < ow:
                            for oc in range(cout):
                                expect[0, oy, ox, oc] += (int(x[0, iy, ix, ic]) - zp_in) * (int(wt[oc, ky, kx, ic])
                                                                                             - zp_w)
    assert np.array_equal(got, expect)


# ------------------------------------------------------------------------------------------- requantize
@SETTINGS
@given(SEEDS, st.sampled_from(["TFLITE", "TFLITE_FLOAT", "UPWARD", "TONEAREST"]))
def test_requantize_rounding_modes(seed, rounding):
    rng = np.random.default_rng(seed)
    x = rng.integers(-2**20, 2**20, 200).astype(np.int32)
    s_in, s_out = rng.uniform(1e-4, 1e-2), rand_scale(rng, 0.01, 0.1)
    zp_out = int(rng.integers(-128, 128))
    v = relay.var("x", shape=x.shape, dtype="int32")
    got = run(relay.qnn.op.requantize(v, relay.const(np.float64(s_in)), 0, s_out, zp_out, rounding=rounding), x=x)
    m, e = O.quantize_multiplier(s_in / s_out)
    for q, g in zip(x.tolist(), got.tolist()):
        if rounding == "TFLITE":
            r = O.mbqm(q, m, e)
        elif rounding == "TFLITE_FLOAT":
            r = O.rha(q * (s_in / s_out))
        else:  # single rounding at 2^(31 − shift): ties up, or away from zero for TONEAREST
            total = 31 - e
            p = q * m
            r = (p + (1 << (total - 1)) - (1 if rounding == "TONEAREST" and p < 0 else 0)) >> total
        assert g == O.clamp(r + zp_out, -128, 127)
