"""MIRROR_PAD, TILE, BROADCAST_TO, CAST, ABS, NEG, the six comparisons, SELECT_V2 and GATHER_ND end to end.

Each case writes a single-op model (random shapes and parameters, seeded per case), imports it, and requires
``byoc.evaluate`` to equal LiteRT BUILTIN_REF bit for bit and the LLVM CPU build to equal ``byoc.evaluate`` bit
for bit. Every op here is exact (data movement, integer arithmetic, IEEE negation/abs/compare), so float outputs
are compared bit for bit too. The oracle is LiteRT; nothing here computes expected values.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import byoc
from byoc.errors import ByocError
from byoc.frontend import from_tflite
from byoc.testing import TFLiteWriter

from tflite_oracles import check_against_litert as check, litert_run

pytest.importorskip("ai_edge_litert")


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _input(w: TFLiteWriter, rng, shape, dtype, name="x"):
    if dtype not in ("int8", "uint8"):
        return w.input(name, shape, dtype)
    zp = int(rng.integers(-20, 20)) if dtype == "int8" else int(rng.integers(100, 156))
    return w.input(name, shape, dtype, scale=float(rng.uniform(0.01, 0.3)), zero_point=zp)


def _shape(rng, rank, lo=1, hi=5):
    return tuple(int(d) for d in rng.integers(lo, hi + 1, rank))


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "float32":
        return rng.uniform(-100, 100, shape).astype(np.float32)
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -(1 << 20)), min(int(info.max), 1 << 20)
    return rng.integers(lo, hi + 1, shape, dtype=np.int64).astype(dtype)


DTYPES = ("int8", "uint8", "float32", "int32")


# ----------------------------------------------------------------------------------------------- data movement
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ("REFLECT", "SYMMETRIC"))
def test_mirror_pad(dtype, mode):
    rng = _rng("mirror_pad", dtype, mode)
    w = TFLiteWriter()
    shape = _shape(rng, int(rng.integers(1, 5)), 2, 5)
    extra = 1 if mode == "REFLECT" else 0
    pads = [[int(rng.integers(0, d - extra + 1)), int(rng.integers(0, d - extra + 1))] for d in shape]
    w.output(w.mirror_pad(_input(w, rng, shape, dtype), pads, mode))
    check(w.finish(), rng)


def test_mirror_pad_refusals():
    w = TFLiteWriter()
    w.output(w.mirror_pad(w.input("x", (2, 3), "float32"), [[0, 0], [3, 0]], "REFLECT"))  # 3 > size − 1
    with pytest.raises(ByocError, match=r"axes \[1\] pad outside"):
        from_tflite(w.finish())


@pytest.mark.parametrize("dtype", DTYPES + ("bool",))
def test_tile(dtype):
    rng = _rng("tile", dtype)
    w = TFLiteWriter()
    shape = _shape(rng, int(rng.integers(1, 5)), 1, 4)
    reps = [int(r) for r in rng.integers(1, 4, len(shape))]
    w.output(w.tile(_input(w, rng, shape, dtype), reps))
    check(w.finish(), rng, inputs=lambda r: [_values(r, shape, dtype)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_to(dtype):
    rng = _rng("broadcast_to", dtype)
    w = TFLiteWriter()
    shape = tuple(1 if rng.random() < 0.5 else int(d) for d in _shape(rng, 3))
    target = (int(rng.integers(1, 4)),) + tuple(int(rng.integers(2, 4)) if d == 1 else d for d in shape)
    w.output(w.broadcast_to(_input(w, rng, shape, dtype), target))
    check(w.finish(), rng)


@pytest.mark.parametrize("dtype", DTYPES + ("bool",))
def test_select_v2(dtype):
    rng = _rng("select_v2", dtype)
    w = TFLiteWriter()
    shape = _shape(rng, 3)
    c = w.input("c", (shape[0], 1, shape[2]), "bool")
    x = _input(w, rng, shape[1:], dtype, "x")
    y = w.input("y", (shape[0], shape[1], 1), dtype, scale=x.scale, zero_point=x.zero_point)
    w.output(w.select_v2(c, x, y))
    check(w.finish(), rng, inputs=lambda r: [_values(r, c.shape, "bool"), _values(r, x.shape, dtype),
                                             _values(r, y.shape, dtype)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("const_indices", (True, False))
def test_gather_nd(dtype, const_indices):
    rng = _rng("gather_nd", dtype, const_indices)
    w = TFLiteWriter()
    shape = _shape(rng, int(rng.integers(2, 5)), 2, 5)
    depth = int(rng.integers(1, len(shape) + 1))
    lead = _shape(rng, int(rng.integers(1, 3)), 1, 4)

    def indices(r):
        return np.stack([r.integers(0, d, lead) for d in shape[:depth]], -1).astype(np.int32)
    x = _input(w, rng, shape, dtype)
    if const_indices:
        w.output(w.gather_nd(x, indices(rng)))
        check(w.finish(), rng, inputs=lambda r: [_values(r, shape, dtype)])
    else:
        w.output(w.gather_nd(x, w.input("i", lead + (depth,), "int32")))
        check(w.finish(), rng, inputs=lambda r: [_values(r, shape, dtype), indices(r)])


def test_gather_nd_bad_indices():
    w = TFLiteWriter()
    w.output(w.gather_nd(w.input("x", (3, 4), "float32"), [[0, 4]]))
    with pytest.raises(ByocError, match=r"hold \[0, 4\], outside params shape \[3, 4\]"):
        from_tflite(w.finish())
    w = TFLiteWriter()
    w.output(w.gather_nd(w.input("x", (3, 4), "float32"), w.input("i", (2, 2), "int32")))
    data = w.finish()
    mod, _ = from_tflite(data)
    exe = byoc.build(mod, target="llvm")
    ins = {"x": np.zeros((3, 4), np.float32), "i": np.array([[0, 1], [0, 4]], np.int32)}  # flat offset in range
    with pytest.raises(Exception, match="out of bounds"):
        litert_run(data, list(ins.values()))
    for run in (lambda: byoc.evaluate(mod, ins), lambda: exe.run(ins)):
        with pytest.raises(byoc.ExecutionError):
            run()


# ------------------------------------------------------------------------------------------------------ unary
_CASTS = [("int8", "int32"), ("int32", "int8"), ("uint8", "int8"), ("int8", "float32"), ("float32", "int32"),
          ("int32", "float32"), ("bool", "int32"), ("float32", "bool"), ("int32", "bool"), ("int8", "uint8"),
          ("int64", "int32"), ("int16", "int8"), ("uint8", "float32"), ("int32", "int64")]


@pytest.mark.parametrize("src,dst", _CASTS)
def test_cast(src, dst):
    rng = _rng("cast", src, dst)
    w = TFLiteWriter()
    shape = _shape(rng, 3)
    w.output(w.cast(_input(w, rng, shape, src), dst))

    def inputs(r):
        v = _values(r, shape, src)
        if src == "float32":  # in range of the target (C's static_cast is undefined outside it), some zeros
            v = np.where(r.random(shape) < 0.2, 0, v).astype(np.float32)
        return [v]
    check(w.finish(), rng, inputs=inputs)


@pytest.mark.parametrize("dtype", ("float32", "int32", "int64", "int8"))
def test_neg(dtype):
    rng = _rng("neg", dtype)
    w = TFLiteWriter()
    shape = _shape(rng, 3)
    w.output(w.neg(_input(w, rng, shape, dtype)))
    extremes = {"int8": -128, "int32": -(1 << 31), "int64": -(1 << 63)}

    def inputs(r):
        v = _values(r, shape, dtype)
        if dtype in extremes:  # the type minimum wraps, as in LiteRT
            v.flat[0] = extremes[dtype]
        return [v]
    check(w.finish(), rng, inputs=inputs)


@pytest.mark.parametrize("dtype", ("int8", "int16"))
@pytest.mark.parametrize("case", range(3))
def test_abs_quantized(dtype, case):
    rng = _rng("abs", dtype, case)
    w = TFLiteWriter()
    s_in = float(rng.uniform(0.01, 0.3))
    zp_in = int(rng.integers(-40, 40)) if dtype == "int8" else 0
    x = w.input("x", _shape(rng, 3, 2, 6), dtype, scale=s_in, zero_point=zp_in)
    # case 0: equal scales (no rescale, a shifted zero point); 1, 2: a rescale down and up
    s_out = [s_in, s_in * float(rng.uniform(1.1, 3)), s_in * float(rng.uniform(0.3, 0.9))][case]
    zp_out = int(rng.integers(-128, -60)) if dtype == "int8" else 0
    w.output(w.abs(x, out_scale=s_out, out_zp=zp_out))
    check(w.finish(), rng, samples=3)


@pytest.mark.parametrize("dtype", ("float32", "int32"))
def test_abs_plain(dtype):
    rng = _rng("abs_plain", dtype)
    w = TFLiteWriter()
    shape = _shape(rng, 2)
    w.output(w.abs(w.input("x", shape, dtype)))
    check(w.finish(), rng, inputs=lambda r: [_values(r, shape, dtype)])


# ------------------------------------------------------------------------------------------------ comparisons
_OPS = ("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")


@pytest.mark.parametrize("op,dtype", [(op, dt) for op in _OPS for dt in ("float32", "int32", "int64", "bool")
                                      if dt != "bool" or op in ("EQUAL", "NOT_EQUAL")])  # LiteRT orders numbers only
def test_compare_plain(op, dtype):
    rng = _rng("compare", op, dtype)
    w = TFLiteWriter()
    shape = _shape(rng, 3)
    w.output(w.compare(op, w.input("a", shape, dtype), w.input("b", shape[-1:], dtype)))

    def inputs(r):  # few distinct values, so equal pairs occur
        if dtype == "bool":
            return [_values(r, shape, dtype), _values(r, shape[-1:], dtype)]
        return [r.integers(-3, 3, shape).astype(dtype), r.integers(-3, 3, shape[-1:]).astype(dtype)]
    check(w.finish(), rng, inputs=inputs)


@pytest.mark.parametrize("op", _OPS)
@pytest.mark.parametrize("dtype", ("int8", "uint8"))
def test_compare_quantized(op, dtype):
    """Different parameters on the two operands, and a small shared scale where neighbouring values compare
    equal after LiteRT's rescale (the raw comparison would differ there)."""
    rng = _rng("compare_q", op, dtype)
    base = 0 if dtype == "int8" else 128
    w = TFLiteWriter()
    a = w.input("a", (3, 4, 5), dtype, scale=float(rng.uniform(0.005, 0.3)), zero_point=base + int(rng.integers(-9, 9)))
    b = w.input("b", (4, 1), dtype, scale=float(rng.uniform(0.005, 0.3)), zero_point=base + int(rng.integers(-9, 9)))
    w.output(w.compare(op, a, b))
    check(w.finish(), rng, samples=3)
    w = TFLiteWriter()
    a = w.input("a", (256,), dtype, scale=0.001, zero_point=base)
    w.output(w.compare(op, a, w.input("b", (256,), dtype, scale=0.001, zero_point=base)))
    info = np.iinfo(dtype)
    x = np.arange(int(info.min), int(info.max) + 1).astype(dtype)
    check(w.finish(), rng, inputs=lambda r: [x, np.roll(x, -1)], samples=1)


def test_compare_refusals():
    w = TFLiteWriter()
    a = w.input("a", (3,), "int8", scale=1.5, zero_point=0)
    w.output(w.compare("LESS", a, a))
    with pytest.raises(ByocError, match="scale 1.5 is not below 1"):
        from_tflite(w.finish())


# -------------------------------------------------------------------------------------------------------- DIV
@pytest.mark.parametrize("dtype", ("float32", "int32"))
@pytest.mark.parametrize("activation", ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"))
def test_div(dtype, activation):
    rng = _rng("div", dtype, activation)
    w = TFLiteWriter()
    shape = _shape(rng, 3)
    bshape = tuple(1 if rng.random() < 0.5 else d for d in shape)
    w.output(w.div(w.input("a", shape, dtype), w.input("b", bshape, dtype), activation=activation))

    def inputs(r):
        sign = np.where(r.random(bshape) < 0.5, -1, 1)
        if dtype == "float32":
            return [r.uniform(-10, 10, shape).astype(dtype), (sign * r.uniform(0.1, 3, bshape)).astype(dtype)]
        return [r.integers(-1000, 1000, shape).astype(dtype), (sign * r.integers(1, 30, bshape)).astype(dtype)]
    check(w.finish(), rng, inputs=inputs)


def test_div_by_zero_and_refusals():
    w = TFLiteWriter()
    w.output(w.div(w.input("a", (3,), "int32"), w.input("b", (3,), "int32")))
    data = w.finish()
    ins = [np.int32([1, 2, 3]), np.int32([1, 0, 1])]
    with pytest.raises(Exception):
        litert_run(data, ins)
    mod, _ = from_tflite(data)
    exe = byoc.build(mod, target="llvm")
    for run in (lambda: byoc.evaluate(mod, {"a": ins[0], "b": ins[1]}), lambda: exe.run({"a": ins[0], "b": ins[1]})):
        with pytest.raises(byoc.ExecutionError):
            run()
    w = TFLiteWriter()
    a = w.input("a", (3,), "uint8", scale=0.1, zero_point=128)
    w.output(w.div(a, a))
    with pytest.raises(ByocError, match="uint8 fixed-point DIV is not implemented"):
        from_tflite(w.finish())
