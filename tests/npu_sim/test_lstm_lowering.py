"""The NPU lowering steps an unrolled LSTM relies on, each as regor (Vela 5.2's core) lowers the LSTM:

* a slice read only by fully connected layers is read in place (regor MoveSplitSliceToConsumer), no copy layer;
* an int16 add whose sum only an int16 sigmoid / tanh reads is one PPU command, GATE_ADD (regor fuses the
  gate activation into the gate's Add);
* ``zeros`` (the LSTM's initial state) is a copy of a zero constant (regor copies the variable state tensor).

Oracles: numpy written here, and byoc.evaluate on every preset (``simulate_on_presets``).
"""
from __future__ import annotations

import numpy as np

from byoc import relay
from byoc.ir.expr import Call, Op
from npu_sim.isa import Load, Ppu, PpuOp, TileKind

from npu_builders import _s, _z, composite, dense_composite, partition, simulate_on_presets


def _dense_after_slice(consumer: str):
    """x [6, 16] int8 → rows 2..3 → a dense (``consumer='dense'``) or an add with itself ('add')."""
    x = relay.var("x", shape=(6, 16), dtype="int8")
    s = relay.strided_slice(x, begin=(2, 0), end=(4, 16))
    if consumer == "dense":
        w = np.random.default_rng(0).integers(-127, 128, (8, 16)).astype(np.int8)
        _, call = dense_composite((2, 16), w, zp_in=-3, s_in=0.05, s_w=0.01, s_out=0.2)
        body = call.op(s)   # the dense composite over the slice
    else:
        a = relay.var("a", shape=(2, 16), dtype="int8")
        b = relay.var("b", shape=(2, 16), dtype="int8")
        add = relay.qnn.op.add(a, b, _s(0.05), _z(0), _s(0.05), _z(0), _s(0.1), _z(0))
        body = composite("npu.qnn_add", [a, b], add)(s, s)
    return partition([x], body)


def test_a_slice_read_only_by_a_dense_is_read_in_place():
    x = np.random.default_rng(1).integers(-128, 128, (6, 16)).astype(np.int8)
    runs = simulate_on_presets(_dense_after_slice("dense"), {"x": x})   # equals byoc.evaluate on every preset
    prog = runs["ethos-u55-256-like"][0]
    assert [layer.kind for layer in prog.layers] == ["dense"], [layer.kind for layer in prog.layers]
    # the dense's IFM loads read rows 2..3 of the input itself
    assert any(c.img_h == 6 and c.y0 == 2 for c in prog.commands if isinstance(c, Load) and c.kind == TileKind.IFM)


def test_a_slice_read_by_another_layer_stays_a_copy():
    x = np.random.default_rng(2).integers(-128, 128, (6, 16)).astype(np.int8)
    runs = simulate_on_presets(_dense_after_slice("add"), {"x": x})
    kinds = [layer.kind for layer in runs["ethos-u55-256-like"][0].layers]
    assert kinds == ["copy", "add"], kinds


def _gate_fc(x_shape, w: np.ndarray, s_w: float):
    """qnn.dense (int8) → requantize to int16 at 2^-12: an LSTM gate's FC, as a npu.qnn_dense composite."""
    x = relay.var("x", shape=x_shape, dtype="int8")
    d = relay.qnn.op.dense(x, relay.const(w), _z(-3), _z(0), _s(0.05), relay.const(np.full(w.shape[0], s_w,
                                                                                            np.float32)),
                           units=w.shape[0], out_dtype="int32")
    rq = relay.qnn.op.requantize(d, relay.const(np.float64(np.float32(0.05) * np.float32(s_w))), _z(0),
                                 _s(2.0 ** -12), _z(0), axis=1, rounding="TFLITE", out_dtype="int16")
    return composite("npu.qnn_dense", [x], rq)


def _gate(kind: str, from_fcs: bool = True, n: int = 20):
    """An LSTM gate: qnn.add of two int16 Q3.12 tensors (two FCs' outputs, or the inputs themselves), then the
    int16 TFLM sigmoid / tanh."""
    rng = np.random.default_rng(5)
    a = relay.var("a", shape=(1, n), dtype="int16")
    b = relay.var("b", shape=(1, n), dtype="int16")
    q = 2.0 ** -12
    s = relay.qnn.op.add(a, b, _s(q), _z(0), _s(q), _z(0), _s(q), _z(0))
    add = composite("npu.qnn_add", [a, b], s)
    if from_fcs:
        params = [relay.var("p0", shape=(1, 12), dtype="int8"), relay.var("p1", shape=(1, n), dtype="int8")]
        ins = [_gate_fc((1, 12), rng.integers(-127, 128, (n, 12)).astype(np.int8), 0.02)(params[0]),
               _gate_fc((1, n), rng.integers(-127, 128, (n, n)).astype(np.int8), 0.03)(params[1])]
    else:
        params = ins = [relay.var("p0", shape=(1, n), dtype="int16"), relay.var("p1", shape=(1, n), dtype="int16")]
    v = relay.var("v", shape=(1, n), dtype="int16")
    act = Call(Op.get(f"qnn.{kind}"), (v, _s(q), _z(0), _s(2.0 ** -15), _z(0)), {"rounding": "TFLM"})
    return partition(params, composite(f"npu.qnn_{kind}", [v], act)(add(*ins)))


def _ref_gate(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TFLite Micro's int16 gate: saturating int16 sum, then reference_integer_ops::Logistic / Tanh on Q3.12
    (input multiplier 3, shift 0); the sum in numpy here, the activation by the interpolated-table functions that
    tests/byoc/ops/test_int16_gate_activation.py checks against TFLite Micro."""
    from byoc.quant.int16_activation import interpolated_sigmoid16, interpolated_tanh16
    total = np.clip(a.astype(np.int64) + b, -32768, 32767)
    fn = interpolated_sigmoid16 if kind == "sigmoid" else interpolated_tanh16
    return fn(total, 3, 0).astype(np.int16)


def test_an_lstm_gate_add_and_its_activation_are_one_ppu_command():
    rng = np.random.default_rng(3)
    for kind in ("sigmoid", "tanh"):
        x, h = rng.integers(-128, 128, (1, 12)).astype(np.int8), rng.integers(-128, 128, (1, 20)).astype(np.int8)
        runs = simulate_on_presets(_gate(kind), {"p0": x, "p1": h})   # equals byoc.evaluate on every preset
        prog = runs["ethos-u55-256-like"][0]
        assert [layer.kind for layer in prog.layers] == ["dense", "dense", "add"]
        ppu = [c for c in prog.commands if isinstance(c, Ppu) and c.layer == 2]
        assert ppu and all(c.op == PpuOp.GATE_ADD and c.param("fn16") == (1 if kind == "sigmoid" else 2)
                           for c in ppu)


def test_an_int16_add_of_other_layers_keeps_its_activation_apart():
    """Only a gate (the sum of two FCs) is fused: the cell state's tanh reads an add regor writes to the state."""
    rng = np.random.default_rng(4)
    for kind in ("sigmoid", "tanh"):
        a = rng.integers(-32768, 32768, (1, 20)).astype(np.int16)
        b = rng.integers(-32768, 32768, (1, 20)).astype(np.int16)
        runs = simulate_on_presets(_gate(kind, from_fcs=False), {"p0": a, "p1": b})
        prog, _, (got,) = runs["ethos-u55-256-like"]
        np.testing.assert_array_equal(got, _ref_gate(kind, a, b))
        assert [layer.kind for layer in prog.layers] == ["add", "lut"]


def test_zeros_is_a_copy_of_a_zero_constant():
    z = Call(Op.get("zeros"), (), {"shape": (1, 20), "dtype": "int16"})
    a = relay.var("a", shape=(1, 20), dtype="int16")
    b = relay.var("b", shape=(1, 20), dtype="int16")
    q = 2.0 ** -12
    s = relay.qnn.op.add(a, b, _s(q), _z(0), _s(q), _z(0), _s(q), _z(0))
    pa = relay.var("p0", shape=(1, 20), dtype="int16")
    fn = partition([pa], composite("npu.qnn_add", [a, b], s)(pa, z))
    x = np.random.default_rng(4).integers(-32768, 32768, (1, 20)).astype(np.int16)
    runs = simulate_on_presets(fn, {"p0": x})
    prog, _, (got,) = runs["ethos-u55-256-like"]
    np.testing.assert_array_equal(got, x)   # x + 0
    assert [layer.kind for layer in prog.layers] == ["copy", "add"]
