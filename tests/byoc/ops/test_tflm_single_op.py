"""The TFLite-Micro variants against the tflite-micro interpreter, bit for bit.

qnn.sigmoid / qnn.tanh with ``rounding="TFLM"`` are TFLM's fixed-point reference_integer_ops::Logistic / Tanh;
TFLM's FULLY_CONNECTED requantizes with MBQM and a float32 product multiplier (qnn.requantize "TFLITE" on the
float32 product scale), unlike LiteRT REF's float requantization.
"""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay

runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
TFLiteWriter = pytest.importorskip("byoc.testing.tflite_writer").TFLiteWriter

CASES = 30


def run_tflm(model: bytes, x: np.ndarray) -> np.ndarray:
    it = runtime.Interpreter.from_bytes(model)
    it.set_input(x, 0)
    it.invoke()
    return it.get_output(0)


def evaluate(param, body, x):
    return byoc.evaluate(relay.Function([param], body), {param.name_hint: x})[0]


@pytest.mark.parametrize("kind", ["logistic", "tanh"])
def test_fixed_point_sigmoid_tanh(kind):
    rng = np.random.default_rng(7 if kind == "logistic" else 8)
    build = relay.qnn.op.sigmoid if kind == "logistic" else relay.qnn.op.tanh
    x = np.arange(-128, 128).astype(np.int8).reshape(1, 256)
    # Power-of-two scales put inputs on exact ties where the fixed-point result and LiteRT's table differ.
    fixed = [(2.0**-7, -59), (2.0**-8, -34)] if kind == "logistic" else [(2.0**-8, -17), (2.0**-9, -30)]
    randoms = [(float(np.float32(rng.uniform(0.002, 0.5))), int(rng.integers(-128, 128))) for _ in range(CASES)]
    lut_differs = 0
    for s_in, zp in fixed + randoms:
        w = TFLiteWriter()
        xi = w.input("x", x.shape, "int8", scale=s_in, zero_point=zp)
        y = getattr(w, kind)(xi)
        w.output(y)
        ref = run_tflm(w.finish(), x)
        v = relay.var("x", shape=x.shape, dtype="int8")
        got = evaluate(v, build(v, s_in, zp, y.scale[0], y.zero_point[0], rounding="TFLM"), x)
        assert ref.dtype == got.dtype and np.array_equal(ref, got), \
            f"{kind} s_in={s_in} zp={zp}: {int(np.count_nonzero(ref != got))} mismatches"
        lut = evaluate(v, build(v, s_in, zp, y.scale[0], y.zero_point[0], rounding="TFLITE"), x)
        lut_differs += int(np.count_nonzero(lut != got))
    # The two roundings are different algorithms, and this oracle tells them apart.
    assert lut_differs > 0


def test_fully_connected_fixed_point():
    rng = np.random.default_rng(9)
    for case in range(CASES):
        batch, k, units = int(rng.integers(1, 9)), int(rng.integers(1, 64)), int(rng.integers(1, 17))
        s_in, s_out = float(np.float32(rng.uniform(0.01, 0.1))), float(np.float32(rng.uniform(0.05, 0.5)))
        s_w = np.float32(rng.uniform(0.002, 0.05, units if case % 2 else 1))
        zp_in, zp_out = int(rng.integers(-100, 100)), int(rng.integers(-100, 100))
        x = rng.integers(-128, 128, (batch, k)).astype(np.int8)
        wt = rng.integers(-127, 128, (units, k)).astype(np.int8)
        bias = rng.integers(-5000, 5000, units).astype(np.int32)
        w = TFLiteWriter()
        xi = w.input("x", x.shape, "int8", scale=s_in, zero_point=zp_in)
        w.output(w.fully_connected(xi, wt, bias, weight_scale=s_w, out_scale=s_out, out_zp=zp_out))
        ref = run_tflm(w.finish(), x)

        v = relay.var("x", shape=x.shape, dtype="int8")
        acc = relay.nn.bias_add(relay.qnn.op.dense(v, relay.const(wt), zp_in, 0, s_in, s_w, units=units),
                                relay.const(bias), axis=1)
        f32_product = (np.float32(s_in) * s_w).astype(np.float32).astype(np.float64)
        got = evaluate(v, relay.qnn.op.requantize(acc, relay.const(f32_product), 0, s_out, zp_out, axis=1), x)
        assert np.array_equal(ref, got), f"case {case}: {int(np.count_nonzero(ref != got))} mismatches"
