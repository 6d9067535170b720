"""Data movement, reductions and image.resize2d: type relations and semantics against independent oracles."""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import byoc
from byoc import relay
from byoc.errors import TypeInferenceError

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


def _fn(expr):
    from byoc.ir.traversal import post_order
    return relay.Function([n for n in post_order(expr) if isinstance(n, relay.Var)], expr)


def infer(expr):
    return relay.transform.InferType()(relay.IRModule.from_expr(_fn(expr)))["main"].body.checked_type


def run(expr, **inputs):
    out = byoc.evaluate(_fn(expr), inputs)
    return out[0] if len(out) == 1 else out


def expect_type_error(expr, *words):
    with pytest.raises(TypeInferenceError) as e:
        infer(expr)
    for w in words:
        assert w in str(e.value), f"{w!r} not in: {e.value}"


def arange(shape, dtype="int32"):
    return np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)


# ------------------------------------------------------------------------------------------------ reshape
@pytest.mark.parametrize("shape,newshape,expect", [
    ((2, 3, 4), (-1,), (24,)),
    ((2, 3, 4), (0, -1), (2, 12)),
    ((2, 3, 4), (4, 0, 2), (4, 3, 2)),
    ((2, 3, 4), (-2,), (2, 3, 4)),
    ((2, 3, 4), (2, -2), (2, 3, 4)),
    ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4), (0, -3), (2, 12)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, 4), (2, 1, 3, 4)),
    ((1, 1280, 1, 1), (1, -1), (1, 1280)),
])
def test_reshape_codes(shape, newshape, expect):
    # Relay's documented examples of the special values 0, -1, -2, -3, -4.
    v = relay.var("x", shape=shape, dtype="int32")
    e = relay.reshape(v, newshape)
    assert infer(e) == relay.TensorType(expect, "int32")
    x = arange(shape)
    assert np.array_equal(run(e, x=x), x.reshape(expect))


def test_reshape_errors():
    v = relay.var("x", shape=(2, 3, 4), dtype="int8")
    expect_type_error(relay.reshape(v, (5, -1)), "reshape", "newshape")
    expect_type_error(relay.reshape(v, (-1, -1)), "reshape", "newshape")
    expect_type_error(relay.reshape(v, (7,)), "reshape", "24 elements")
    expect_type_error(relay.reshape(v, (-5,)), "reshape", "newshape")


# --------------------------------------------------------------------------- squeeze / expand / transpose
def test_squeeze_expand_transpose():
    x = arange((1, 3, 1, 2))
    v = relay.var("x", shape=x.shape, dtype="int32")
    assert run(relay.squeeze(v), x=x).shape == (3, 2)
    assert run(relay.squeeze(v, axis=[2]), x=x).shape == (1, 3, 2)
    assert run(relay.squeeze(v, axis=[-4]), x=x).shape == (3, 1, 2)
    expect_type_error(relay.squeeze(v, axis=[1]), "squeeze", "axis")
    assert infer(relay.expand_dims(v, 1, 2)) == relay.TensorType((1, 1, 1, 3, 1, 2), "int32")
    assert run(relay.expand_dims(v, -1), x=x).shape == (1, 3, 1, 2, 1)
    expect_type_error(relay.expand_dims(v, 6), "expand_dims", "axis")
    assert np.array_equal(run(relay.transpose(v), x=x), x.transpose())
    assert np.array_equal(run(relay.transpose(v, (0, 3, -3, 2)), x=x), x.transpose(0, 3, 1, 2))
    expect_type_error(relay.transpose(v, (0, 1, 1, 2)), "transpose", "axes")


# ----------------------------------------------------------------------------- concatenate / split
@SETTINGS
@given(st.integers(1, 3), st.integers(0, 2), st.integers(0, 2**31 - 1))
def test_concatenate_then_split_roundtrip(n, axis, seed):
    rng = np.random.default_rng(seed)
    base = [2, 3, 2]
    parts = []
    for _ in range(n):
        s = list(base)
        s[axis] = int(rng.integers(1, 4))
        parts.append(rng.integers(-128, 128, s).astype(np.int8))
    vs = [relay.var(f"x{i}", shape=p.shape, dtype="int8") for i, p in enumerate(parts)]
    cat = relay.concatenate(vs, axis)
    # Oracle: element by element, axis offset by the preceding parts.
    total = sum(p.shape[axis] for p in parts)
    shape = list(base)
    shape[axis] = total
    expect = np.zeros(shape, np.int8)
    off = 0
    for p in parts:
        for idx in np.ndindex(p.shape):
            j = list(idx)
            j[axis] += off
            expect[tuple(j)] = p[idx]
        off += p.shape[axis]
    got = byoc.evaluate(relay.Function(vs, cat), {f"x{i}": p for i, p in enumerate(parts)})[0]
    assert np.array_equal(got, expect)
    bounds = list(np.cumsum([p.shape[axis] for p in parts])[:-1])
    sp = relay.split(cat, [int(b) for b in bounds], axis=axis)
    outs = byoc.evaluate(relay.Function(vs, sp.astuple()), {f"x{i}": p for i, p in enumerate(parts)})
    assert len(outs) == n and all(np.array_equal(o, p) for o, p in zip(outs, parts))


def test_split_sections_and_errors():
    x = arange((2, 6))
    v = relay.var("x", shape=x.shape, dtype="int32")
    sp = relay.split(v, 3, axis=1)
    assert len(sp) == 3
    assert infer(sp.astuple()) == relay.TupleType([relay.TensorType((2, 2), "int32")] * 3)
    assert np.array_equal(run(sp[2], x=x), x[:, 4:])
    expect_type_error(relay.split(v, 4, axis=1).astuple(), "split", "indices_or_sections")
    expect_type_error(relay.split(v, 2, axis=2).astuple(), "split", "axis")
    a = relay.var("a", shape=(2, 3), dtype="int8")
    b = relay.var("b", shape=(3, 3), dtype="int8")
    expect_type_error(relay.concatenate([a, b], 1), "concatenate", "data[1]")
    expect_type_error(relay.concatenate([a, relay.var("c", shape=(2, 3), dtype="int32")], 0), "concatenate",
                      "dtype")


# ------------------------------------------------------------------------------------------ strided_slice
@SETTINGS
@given(st.lists(st.tuples(st.integers(-7, 7), st.integers(-7, 7), st.sampled_from([1, 2, 3, -1, -2])),
                min_size=1, max_size=3), st.integers(0, 2**31 - 1))
def test_strided_slice_matches_python_slicing(specs, seed):
    shape = (5, 4, 6)
    x = np.random.default_rng(seed).integers(0, 100, shape).astype(np.int32)
    begin, end, strides = zip(*specs)
    v = relay.var("x", shape=shape, dtype="int32")
    e = relay.strided_slice(v, begin, end, strides)
    # Oracle: Python's own list slicing on nested lists, axis by axis.
    nested = x.tolist()

    def slice_axis(obj, depth, axis, sl):
        if depth == axis:
            return obj[sl]
        return [slice_axis(o, depth + 1, axis, sl) for o in obj]

    for axis, (b, en, s) in enumerate(specs):
        nested = slice_axis(nested, 0, axis, slice(b, en, s))
    expect = np.array(nested, np.int32).reshape(infer(e).shape)
    assert np.array_equal(run(e, x=x), expect)


def test_strided_slice_axes_and_size_mode():
    x = arange((3, 4, 5))
    v = relay.var("x", shape=x.shape, dtype="int32")
    assert np.array_equal(run(relay.strided_slice(v, [1], [4], axes=[2]), x=x), x[:, :, 1:4])
    assert np.array_equal(run(relay.strided_slice(v, [1, 0], [2, -1], slice_mode="size"), x=x), x[1:3, 0:])
    expect_type_error(relay.strided_slice(v, [0], [1], strides=[0]), "strided_slice", "strides")
    expect_type_error(relay.strided_slice(v, [0], [1], axes=[3]), "strided_slice", "axes")


# ------------------------------------------------------------------------------------------- reductions
@SETTINGS
@given(st.sampled_from(["sum", "mean", "max", "min"]), st.one_of(st.none(), st.lists(st.integers(-3, 2),
       min_size=1, max_size=2, unique=True)), st.booleans(), st.booleans(), st.sampled_from(["int32", "int8",
       "float32"]), st.integers(0, 2**31 - 1))
def test_reductions(name, axis, keepdims, exclude, dtype, seed):
    shape = (2, 3, 4)
    if axis is not None and len({a % 3 for a in axis}) != len(axis):
        return
    rng = np.random.default_rng(seed)
    x = (rng.integers(-128, 128, shape) if dtype != "float32" else rng.normal(size=shape)).astype(dtype)
    v = relay.var("x", shape=shape, dtype=dtype)
    e = getattr(relay, name)(v, axis=axis, keepdims=keepdims, exclude=exclude)
    axes = set(range(3)) if axis is None else {a % 3 for a in axis}
    if exclude:
        axes = set(range(3)) - axes
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keepdims else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    # Oracle: group the elements of every output position and reduce them with Python arithmetic.
    groups: dict = {}
    for idx in np.ndindex(shape):
        key = tuple(0 if i in axes else j for i, j in enumerate(idx))
        groups.setdefault(key, []).append(x[idx].item())
    vals = []
    for key in sorted(groups):
        g = groups[key]
        if name == "sum":
            r = math.fsum(g) if dtype == "float32" else sum(g)
        elif name == "mean":
            r = math.fsum(g) / len(g) if dtype == "float32" else int(abs(sum(g)) // len(g)) * (1 if sum(g) >= 0
                                                                                               else -1)
        else:
            r = max(g) if name == "max" else min(g)
        vals.append(r)
    if dtype == "float32":
        expect = np.array(vals, np.float64).reshape(out_shape)
        assert np.allclose(run(e, x=x), expect, rtol=1e-5, atol=1e-5)
    else:
        bits = np.dtype(dtype).itemsize * 8
        wrapped = [((v_ + 2 ** (bits - 1)) % 2**bits) - 2 ** (bits - 1) for v_ in vals]  # integer sums wrap
        expect = np.array(wrapped, np.int64).astype(dtype).reshape(out_shape)
        assert infer(e) == relay.TensorType(out_shape, dtype)
        assert np.array_equal(run(e, x=x), expect)


def test_reduce_errors():
    v = relay.var("x", shape=(2, 3), dtype="float32")
    expect_type_error(relay.sum(v, axis=2), "sum", "axis")
    expect_type_error(relay.mean(v, axis=(0, -2)), "mean", "axis")


# ------------------------------------------------------------------------------------------- resize2d
def _f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def tflite_nearest(out_i, in_size, out_size, align_corners, half_pixel):
    """GetNearestNeighbor from TFLite's reference kernel, with float32 steps emulated."""
    scale = _f32((in_size - 1) / _f32(out_size - 1)) if align_corners and out_size > 1 else \
        _f32(in_size / _f32(out_size))
    offset = 0.5 if half_pixel else 0.0
    v = _f32(_f32(out_i + offset) * scale)
    if align_corners:
        r = int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)
    else:
        r = math.floor(v)
    r = min(r, in_size - 1)
    return max(0, r) if half_pixel else r


@SETTINGS
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 20), st.integers(1, 20),
       st.sampled_from([(False, False), (True, False), (False, True)]), st.sampled_from(["NHWC", "NCHW"]))
def test_resize_nearest_tflite_flags(h, w, oh, ow, flags, layout):
    align, half = flags
    x = arange((1, h, w, 2), "int8") if layout == "NHWC" else arange((1, 2, h, w), "int8")
    v = relay.var("x", shape=x.shape, dtype="int8")
    mode = "align_corners" if align else ("half_pixel" if half else "asymmetric")
    e = relay.image.resize2d(v, size=(oh, ow), layout=layout, method="nearest_neighbor",
                             coordinate_transformation_mode=mode,
                             rounding_method="round_prefer_ceil" if half else "")
    ys = [tflite_nearest(i, h, oh, align, half) for i in range(oh)]
    xs = [tflite_nearest(i, w, ow, align, half) for i in range(ow)]
    if layout == "NHWC":
        expect = x[:, ys][:, :, xs]
    else:
        expect = x[:, :, ys][:, :, :, xs]
    assert np.array_equal(run(e, x=x), expect)


def test_resize_errors():
    v = relay.var("x", shape=(1, 4, 4, 2), dtype="int8")
    expect_type_error(relay.image.resize2d(v, size=(8, 8), layout="NHWC", method="cubic"), "image.resize2d", "method")
    expect_type_error(relay.image.resize2d(v, size=(8, 8), layout="NHWC", method="linear",
                                           coordinate_transformation_mode="pytorch_half_pixel"),
                      "coordinate_transformation_mode")
    expect_type_error(relay.image.resize2d(v, size=(8,), layout="NHWC", method="nearest_neighbor"),
                      "image.resize2d", "size")
    expect_type_error(relay.image.resize2d(v, size=(8, 8), layout="NHWC", method="nearest_neighbor",
                                           coordinate_transformation_mode="bogus"), "coordinate_transformation_mode")
