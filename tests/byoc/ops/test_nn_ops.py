"""nn.* ops (float and integer): type relations and numpy semantics against loop-level oracles."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import byoc
from byoc import relay
from byoc.errors import TypeInferenceError

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


def infer(expr):
    free = _free_vars(expr)
    mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function(free, expr)))
    return mod["main"].body.checked_type


def _free_vars(expr):
    from byoc.ir.traversal import post_order
    return [n for n in post_order(expr) if isinstance(n, relay.Var)]


def run(expr, **inputs):
    free = _free_vars(expr)
    return byoc.evaluate(relay.Function(free, expr), inputs)[0]


def expect_type_error(expr, *words):
    with pytest.raises(TypeInferenceError) as e:
        infer(expr)
    for w in words:
        assert w in str(e.value), f"{w!r} not in: {e.value}"


# ------------------------------------------------------------------------------------------------ dense
@SETTINGS
@given(st.integers(1, 4), st.integers(1, 9), st.integers(1, 6), st.integers(0, 2**31 - 1), st.booleans())
def test_dense(batch, k, units, seed, integer):
    rng = np.random.default_rng(seed)
    if integer:
        x = rng.integers(-128, 128, (batch, k)).astype(np.int8)
        w = rng.integers(-128, 128, (units, k)).astype(np.int8)
        expect = np.array([[sum(int(x[b, i]) * int(w[u, i]) for i in range(k)) for u in range(units)]
                           for b in range(batch)], np.int32)
    else:
        x = rng.normal(size=(batch, k)).astype(np.float32)
        w = rng.normal(size=(units, k)).astype(np.float32)
        expect = np.array([[math.fsum(float(x[b, i]) * float(w[u, i]) for i in range(k)) for u in range(units)]
                           for b in range(batch)])
    vx = relay.var("x", shape=x.shape, dtype=x.dtype.name)
    e = relay.nn.dense(vx, relay.const(w), units=units, out_dtype="int32" if integer else "")
    assert infer(e) == relay.TensorType((batch, units), "int32" if integer else "float32")
    got = run(e, x=x)
    if integer:
        assert np.array_equal(got, expect)
    else:
        assert np.allclose(got, expect, rtol=1e-5, atol=1e-5)


def test_dense_nd_and_type_errors():
    x = relay.var("x", shape=(2, 3, 5), dtype="float32")
    assert infer(relay.nn.dense(x, relay.var("w", shape=(4, 5)))) == relay.TensorType((2, 3, 4), "float32")
    expect_type_error(relay.nn.dense(x, relay.var("w", shape=(4, 6))), "nn.dense", "weight")
    expect_type_error(relay.nn.dense(x, relay.var("w", shape=(4, 5)), units=3), "nn.dense", "units")
    expect_type_error(relay.nn.dense(x, relay.var("w", shape=(4, 5), dtype="int8")), "nn.dense", "dtype")


# ---------------------------------------------------------------------------------------------- pooling
def pool_oracle(x_nhwc, k, s, d, pad, ceil_mode, kind, count_include_pad):
    n, h, w, c = x_nhwc.shape
    t, l, b, r = pad

    def out_size(size, kk, ss, dd, p0, p1):
        eff = (kk - 1) * dd + 1
        num = size + p0 + p1 - eff
        return (num + (ss - 1 if ceil_mode else 0)) // ss + 1

    oh, ow = out_size(h, k[0], s[0], d[0], t, b), out_size(w, k[1], s[1], d[1], l, r)
    out = np.zeros((n, oh, ow, c), x_nhwc.dtype)
    integer = x_nhwc.dtype.kind in "iu"
    for bi in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for ch in range(c):
                    vals, count = [], 0
                    for ky in range(k[0]):
                        for kx in range(k[1]):
                            iy, ix = oy * s[0] - t + ky * d[0], ox * s[1] - l + kx * d[1]
                            inside = 0 <= iy < h and 0 <= ix < w
                            declared = -t <= iy < h + b and -l <= ix < w + r
                            if inside:
                                vals.append(x_nhwc[bi, iy, ix, ch].item())
                            if inside or (count_include_pad and declared):
                                count += 1
                    if kind == "max":
                        # A ceil-mode window past the image sees only padding: the lowest value.
                        lowest = np.iinfo(x_nhwc.dtype).min if integer else -np.inf
                        out[bi, oy, ox, ch] = max(vals) if vals else lowest
                    elif integer:
                        total = sum(vals)
                        q = (abs(total) + count // 2) // count
                        out[bi, oy, ox, ch] = q if total >= 0 else -q
                    else:
                        out[bi, oy, ox, ch] = sum(vals) / count
    return out


@SETTINGS
@given(st.sampled_from(["max", "avg"]), st.sampled_from(["NHWC", "NCHW"]), st.integers(1, 3), st.integers(1, 3),
       st.integers(1, 2), st.integers(1, 2), st.lists(st.integers(0, 2), min_size=4, max_size=4), st.booleans(),
       st.booleans(), st.sampled_from(["int8", "int32", "float32"]), st.integers(0, 2**31 - 1))
def test_pool2d(kind, layout, kh, kw, stride, dil, pad, ceil_mode, include_pad, dtype, seed):
    rng = np.random.default_rng(seed)
    h, w, c = int(rng.integers(kh * dil, 8)), int(rng.integers(kw * dil, 8)), 2
    pad = [min(p, k - 1) for p, k in zip(pad, (kh, kw, kh, kw))]  # every window keeps an image pixel
    x = (rng.integers(-128, 128, (1, h, w, c)) if dtype != "float32" else rng.normal(size=(1, h, w, c)))
    x = x.astype(dtype)
    xin = x if layout == "NHWC" else x.transpose(0, 3, 1, 2).copy()
    v = relay.var("x", shape=xin.shape, dtype=dtype)
    kwargs = dict(pool_size=(kh, kw), strides=(stride, stride), dilation=(dil, dil), padding=tuple(pad),
                  layout=layout, ceil_mode=ceil_mode)
    if kind == "max":
        e = relay.nn.max_pool2d(v, **kwargs)
    else:
        e = relay.nn.avg_pool2d(v, count_include_pad=include_pad, **kwargs)
    try:
        expect = pool_oracle(x, (kh, kw), (stride, stride), (dil, dil), pad, ceil_mode, kind, include_pad)
    except ZeroDivisionError:
        # A ceil-mode window entirely past the image has no taps to average: an error, not a silent value.
        with pytest.raises(byoc.errors.ExecutionError):
            run(e, x=xin)
        return
    if layout == "NCHW":
        expect = expect.transpose(0, 3, 1, 2)
    got = run(e, x=xin)
    assert infer(e) == relay.TensorType(expect.shape, dtype)
    if dtype == "float32":
        assert np.allclose(got, expect, rtol=1e-6, atol=1e-6)
    else:
        assert np.array_equal(got, expect)


def test_integer_avg_pool_rounds_half_away_from_zero():
    x = np.array([[1, 2], [-1, -2], [3, 0], [-3, 0]], np.int32).reshape(1, 4, 2, 1)
    v = relay.var("x", shape=x.shape, dtype="int32")
    got = run(relay.nn.avg_pool2d(v, (1, 2), (1, 2), layout="NHWC"), x=x).ravel()
    assert got.tolist() == [2, -2, 2, -2]  # 1.5 → 2, −1.5 → −2


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_global_pools(layout):
    rng = np.random.default_rng(3)
    x = rng.integers(-100, 100, (2, 3, 5, 4)).astype(np.int32)
    v = relay.var("x", shape=x.shape, dtype="int32")
    axes = (2, 3) if layout == "NCHW" else (1, 2)
    total = x.astype(np.int64).sum(axis=axes, keepdims=True)
    count = x.shape[axes[0]] * x.shape[axes[1]]
    expect = np.sign(total) * ((np.abs(total) * 2 + count) // (2 * count))
    assert np.array_equal(run(relay.nn.global_avg_pool2d(v, layout=layout), x=x), expect)
    assert np.array_equal(run(relay.nn.global_max_pool2d(v, layout=layout), x=x), x.max(axis=axes, keepdims=True))


def test_pool_type_errors():
    v = relay.var("x", shape=(1, 4, 4, 2), dtype="int8")
    expect_type_error(relay.nn.max_pool2d(v, (5, 5), layout="NHWC"), "nn.max_pool2d", "data")
    expect_type_error(relay.nn.avg_pool2d(v, (2, 2), layout="NCWH"), "nn.avg_pool2d", "layout")
    expect_type_error(relay.nn.max_pool2d(relay.var("y", shape=(4, 4), dtype="int8")), "nn.max_pool2d", "4-D")


# ------------------------------------------------------------------------------------ softmax / leaky relu
@SETTINGS
@given(st.integers(1, 4), st.integers(1, 7), st.sampled_from([-1, 0, 1]), st.integers(0, 2**31 - 1))
def test_softmax_and_log_softmax(rows, depth, axis, seed):
    x = np.random.default_rng(seed).normal(0, 3, (rows, depth)).astype(np.float32)
    v = relay.var("x", shape=x.shape)
    e = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    expect = e / e.sum(axis=axis, keepdims=True)
    assert np.allclose(run(relay.nn.softmax(v, axis), x=x), expect, atol=1e-6)
    assert np.allclose(run(relay.nn.log_softmax(v, axis), x=x), np.log(expect), atol=1e-5)


def test_leaky_relu_and_batch_flatten():
    x = np.array([[-2.0, -0.5, 0.0, 3.0]], np.float32).reshape(1, 2, 2)
    v = relay.var("x", shape=x.shape)
    assert run(relay.nn.leaky_relu(v, 0.25), x=x).ravel().tolist() == [-0.5, -0.125, 0.0, 3.0]
    flat = relay.nn.batch_flatten(v)
    assert infer(flat) == relay.TensorType((1, 4), "float32")
    assert run(flat, x=x).tolist() == [[-2.0, -0.5, 0.0, 3.0]]
    expect_type_error(relay.nn.softmax(relay.var("q", shape=(2,), dtype="int8")), "nn.softmax", "float")
    expect_type_error(relay.nn.softmax(v, axis=3), "nn.softmax", "axis")


# ------------------------------------------------------------------------------------- conv2d_transpose
def tconv_oracle(x, w_iohw, s, d, pad, out_pad, groups):
    """Scatter loops (TFLite TRANSPOSE_CONV's structure) on NCHW data and an IOHW kernel."""
    n, c, h, wd = x.shape
    _, cog, kh, kw = w_iohw.shape
    t, l, b, r = pad
    oh = (h - 1) * s[0] - t - b + d[0] * (kh - 1) + 1 + out_pad[0]
    ow = (wd - 1) * s[1] - l - r + d[1] * (kw - 1) + 1 + out_pad[1]
    out = np.zeros((n, cog * groups, oh, ow), np.float64)
    cig = c // groups
    for bi in range(n):
        for ic in range(c):
            g = ic // cig
            for iy in range(h):
                for ix in range(wd):
                    for ky in range(kh):
                        for kx in range(kw):
                            oy, ox = iy * s[0] - t + ky * d[0], ix * s[1] - l + kx * d[1]
                            if 0 <= oy < oh and 0 <= ox < ow:
                                for oc in range(cog):
                                    out[bi, g * cog + oc, oy, ox] += float(x[bi, ic, iy, ix]) * float(
                                        w_iohw[ic, oc, ky, kx])
    return out


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.integers(1, 2), st.integers(1, 2),
       st.lists(st.integers(0, 2), min_size=4, max_size=4), st.integers(0, 1), st.integers(0, 2**31 - 1),
       st.booleans())
def test_conv2d_transpose(k, s, d, groups, cog, pad, out_pad, seed, integer):
    rng = np.random.default_rng(seed)
    c = groups * int(rng.integers(1, 3))
    h, w = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    out_pad = min(out_pad, max(s, d) - 1)
    full = lambda size: (size - 1) * s + d * (k - 1) + 1  # noqa: E731
    pad = [min(p, full(size) - 1) for p, size in zip(pad, (h, w, 0, 0))][:2] + pad[2:]
    pad = [pad[0], pad[1], min(pad[2], full(h) - 1 - pad[0]), min(pad[3], full(w) - 1 - pad[1])]
    if integer:
        x = rng.integers(-128, 128, (1, c, h, w)).astype(np.int8)
        wt = rng.integers(-128, 128, (c, cog, k, k)).astype(np.int8)
    else:
        x = rng.normal(size=(1, c, h, w)).astype(np.float32)
        wt = rng.normal(size=(c, cog, k, k)).astype(np.float32)
    v = relay.var("x", shape=x.shape, dtype=x.dtype.name)
    e = relay.nn.conv2d_transpose(v, relay.const(wt), strides=(s, s), padding=tuple(pad), dilation=(d, d),
                                  groups=groups, output_padding=(out_pad, out_pad),
                                  out_dtype="int32" if integer else "")
    expect = tconv_oracle(x, wt, (s, s), (d, d), pad, (out_pad, out_pad), groups)
    assert infer(e) == relay.TensorType(expect.shape, "int32" if integer else "float32")
    got = run(e, x=x)
    if integer:
        assert np.array_equal(got, expect.astype(np.int32))
    else:
        assert np.allclose(got, expect, rtol=1e-5, atol=1e-5)


def test_conv2d_transpose_layouts_and_errors():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(1, 3, 4, 2)).astype(np.float32)  # NHWC
    w_iohw = rng.normal(size=(2, 3, 3, 3)).astype(np.float32)
    v = relay.var("x", shape=x.shape)
    e = relay.nn.conv2d_transpose(v, relay.const(w_iohw.transpose(1, 2, 3, 0)), strides=(2, 2), padding=(1, 1),
                                  data_layout="NHWC", kernel_layout="OHWI")
    expect = tconv_oracle(x.transpose(0, 3, 1, 2), w_iohw, (2, 2), (1, 1), (1, 1, 1, 1), (0, 0), 1)
    assert np.allclose(run(e, x=x), expect.transpose(0, 2, 3, 1), atol=1e-5)
    bad_in_channels = np.zeros((3, 3, 3, 3), np.float32)  # IOHW with I = 3, but the data has 2 channels
    expect_type_error(relay.nn.conv2d_transpose(v, relay.const(bad_in_channels), data_layout="NHWC"),
                      "nn.conv2d_transpose", "weight")
    expect_type_error(relay.nn.conv2d_transpose(v, relay.const(w_iohw.transpose(1, 2, 3, 0)), data_layout="NHWC",
                                                kernel_layout="OHWI", output_padding=(1, 1)),
                      "nn.conv2d_transpose", "output_padding")


@pytest.mark.parametrize("layout,out_layout", [("NCHW", ""), ("NHWC", ""), ("NCHW", "NHWC"), ("NHWC", "NCHW")])
def test_conv2d_type_matches_the_computed_output_shape(layout, out_layout):
    # The type relation works on shapes alone; the output the reference kernel computes has that shape.
    from byoc.ops.kernels import nhwc_shape, shape_from_nhwc
    from byoc.ops.nn import Conv2DAttrs, conv2d_compute, conv2d_out_type
    from byoc.ir.types import TensorType
    data_shape = (1, 3, 7, 5) if layout == "NCHW" else (1, 7, 5, 3)
    attrs = Conv2DAttrs(strides=(2, 1), padding=(1, 0, 1, 2), channels=6, kernel_size=(3, 2),
                        data_layout=layout, kernel_layout="OIHW", out_layout=out_layout)
    t = conv2d_out_type("nn.conv2d", TensorType(data_shape), TensorType((6, 3, 3, 2)), attrs, "float32")
    out = conv2d_compute(np.zeros(data_shape, np.float32), np.zeros((6, 3, 3, 2), np.float32), attrs, False)
    assert t.shape == out.shape
    x = np.zeros((2, 3, 5, 7))
    assert nhwc_shape(x.shape, "NCHW") == x.transpose(0, 2, 3, 1).shape
    assert shape_from_nhwc(x.shape, "NCHW") == x.transpose(0, 3, 1, 2).shape
    assert nhwc_shape(x.shape, "NHWC") == shape_from_nhwc(x.shape, "NHWC") == x.shape
    with pytest.raises(byoc.errors.IRError, match="unsupported data layout"):
        nhwc_shape(x.shape, "CHWN")
