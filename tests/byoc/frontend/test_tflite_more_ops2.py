"""LOG_SOFTMAX, SQUARED_DIFFERENCE and RSQRT end to end.

Each case writes a single-op model (random shapes and parameters, seeded per case), imports it, and requires
``byoc.evaluate`` to equal LiteRT BUILTIN_REF bit for bit and the LLVM CPU build to equal ``byoc.evaluate`` bit
for bit. Float LOG_SOFTMAX calls expf/logf (libm in LiteRT and on the CPU, numpy's own in the interpreter), so it
is compared with the project's float tolerance (rtol = atol = 2e-6); float SQUARED_DIFFERENCE and RSQRT are exact
IEEE operations and are compared bit for bit. The oracle is LiteRT; nothing here computes expected values.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import byoc
from byoc.errors import ByocError
from byoc.frontend import from_tflite
from byoc.testing import TFLiteWriter

from tflite_oracles import check_against_litert as check, litert_run, random_inputs

pytest.importorskip("ai_edge_litert")


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _input(w: TFLiteWriter, rng, shape, dtype, name="x"):
    if dtype in ("float32", "int32"):
        return w.input(name, shape, dtype)
    zp = int(rng.integers(-20, 20)) if dtype == "int8" else int(rng.integers(100, 156))
    return w.input(name, shape, dtype, scale=float(rng.uniform(0.01, 0.3)), zero_point=zp)


def _shape(rng, rank, lo=1, hi=5):
    return tuple(int(d) for d in rng.integers(lo, hi + 1, rank))


# ---------------------------------------------------------------------------------------------- LOG_SOFTMAX
@pytest.mark.parametrize("dtype", ("int8", "uint8", "float32"))
@pytest.mark.parametrize("case", range(3))
def test_log_softmax(dtype, case):
    rng = _rng("log_softmax", dtype, case)
    w = TFLiteWriter()
    depth = [int(rng.integers(1, 12)), int(rng.integers(12, 64)), 300][case]  # 300: rows that saturate the sum
    shape = _shape(rng, int(rng.integers(0, 3))) + (depth,)
    x = _input(w, rng, shape, dtype)
    w.output(w.log_softmax(x))
    check(w.finish(), rng, exact_float=False)


@pytest.mark.parametrize("dtype", ("int8", "uint8"))
def test_log_softmax_scales(dtype):
    """Small and large input scales: diff_min cuts rows short (large scale) or nothing is cut (small)."""
    rng = _rng("log_softmax_scales", dtype)
    for scale in (0.002, 0.04, 0.9, 3.0):
        w = TFLiteWriter()
        x = w.input("x", (4, 50), dtype, scale=scale, zero_point=0 if dtype == "int8" else 128)
        w.output(w.log_softmax(x))
        check(w.finish(), rng, samples=1)


def test_log_softmax_refusals():
    w = TFLiteWriter()
    x = w.input("x", (2, 5), "int8", scale=0.1, zero_point=0)
    w.output(w.log_softmax(x, out_scale=1 / 16, out_zp=0))
    data = w.finish()
    with pytest.raises(Exception):
        litert_run(data, [np.zeros((2, 5), np.int8)])
    with pytest.raises(ByocError, match=r"requires \(0.0625, 127\)"):
        from_tflite(data)


# --------------------------------------------------------------------------------------- SQUARED_DIFFERENCE
@pytest.mark.parametrize("dtype", ("int8", "float32", "int32"))
@pytest.mark.parametrize("case", range(3))
def test_squared_difference(dtype, case):
    rng = _rng("squared_difference", dtype, case)
    w = TFLiteWriter()
    shape = _shape(rng, int(rng.integers(1, 5)))
    a = _input(w, rng, shape, dtype, "a")
    bshape = [shape, tuple(1 if rng.random() < 0.5 else d for d in shape), shape[-1:]][case]
    kw = {}
    if dtype == "int8":
        s_b = float(rng.uniform(0.01, 0.3))
        kw = dict(out_scale=max(float(a.scale[0]), s_b) ** 2 * float(rng.uniform(8, 400)),
                  out_zp=int(rng.integers(-128, -90)))
        b = w.input("b", bshape, dtype, scale=s_b, zero_point=int(rng.integers(-20, 20)))
    elif case == 2:  # a constant rhs
        b = rng.integers(-50, 50, bshape).astype(dtype) if dtype == "int32" else \
            rng.standard_normal(bshape).astype(dtype)
    else:
        b = w.input("b", bshape, dtype)
    w.output(w.squared_difference(a, b, **kw))

    def inputs(r):
        vals = random_inputs(from_tflite(data)[0], r)
        return [np.clip(v, -40000, 40000) if v.dtype == np.int32 else v for v in vals]
    data = w.finish()
    check(data, rng, inputs=inputs if dtype == "int32" else None)


def test_squared_difference_refusals():
    w = TFLiteWriter()
    a = w.input("a", (2, 3), "uint8", scale=0.1, zero_point=128)
    w.output(w.squared_difference(a, a, out_scale=1.0, out_zp=0))
    with pytest.raises(ByocError, match="SQUARED_DIFFERENCE takes float32, int32 or int8"):
        from_tflite(w.finish())
    w = TFLiteWriter()
    a = w.input("a", (2, 3), "int8", scale=0.5, zero_point=0)
    w.output(w.squared_difference(a, a, out_scale=1e-5, out_zp=0))  # (2·0.5)² ≥ 2^14·1e-5: LiteRT's CHECK fails
    with pytest.raises(ByocError, match=r"outside \(0, 1\)"):
        from_tflite(w.finish())


# --------------------------------------------------------------------------------------------------- RSQRT
@pytest.mark.parametrize("case", range(4))
def test_rsqrt_int8(case):
    rng = _rng("rsqrt", case)
    w = TFLiteWriter()
    zp = int(rng.integers(-128, 10))
    shape = _shape(rng, 3, 1, 6)
    x = w.input("x", shape, "int8", scale=float(rng.uniform(0.001, 1.0)), zero_point=zp)
    w.output(w.rsqrt(x, out_scale=float(rng.uniform(0.005, 0.5)), out_zp=int(rng.integers(-128, 0))))
    check(w.finish(), rng, inputs=lambda r: [r.integers(zp, 128, shape).astype(np.int8)])


def test_rsqrt_float32_and_negative_inputs():
    rng = _rng("rsqrt_float")
    w = TFLiteWriter()
    w.output(w.rsqrt(w.input("x", (3, 17), "float32")))
    check(w.finish(), rng, inputs=lambda r: [r.uniform(1e-6, 50, (3, 17)).astype(np.float32)])
    w = TFLiteWriter()
    w.output(w.rsqrt(w.input("x", (4,), "int8", scale=0.1, zero_point=-3), out_scale=0.1, out_zp=0))
    data = w.finish()
    bad = np.array([5, -4, 0, 9], np.int8)  # −4 is below the zero point: a negative value
    with pytest.raises(Exception):
        litert_run(data, [bad])
    mod, _ = from_tflite(data)
    exe = byoc.build(mod, target="llvm")
    for run in (lambda: byoc.evaluate(mod, {"x": bad}), lambda: exe.run({"x": bad})):
        with pytest.raises(byoc.ExecutionError):
            run()
