"""SVDF: one inference from the reset state, bit-exact against LiteRT's BUILTIN_REF kernel (int16 state) and
TFLite Micro (int16 and int8 state), in the reference interpreter and the LLVM CPU build; models built here
(TFLiteWriter) and the tflite-micro keyword_scrambled models when /work/ext/unseen holds them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.errors import ModelError
from byoc.frontend import from_tflite
from byoc.testing.tflite_writer import TFLiteWriter
from tests.byoc.frontend.tflite_oracles import litert_run, tflm_run

UNSEEN = Path("/work/ext/unseen")


def _svdf_model(rng, *, state: str, rank: int, bias: bool, state_zp: int = 0, batch: int = 1, depth: int = 24,
                units: int = 6, memory: int = 5, feature_gain: float, out_gain: float,
                activation: str = "RELU") -> bytes:
    """One SVDF, int8 in and out. ``feature_gain`` is the float32 feature multiplier s_in·s_wf/s_state and
    ``out_gain`` s_state·s_wt/s_out, chosen so the state and the output span their ranges (some saturate)."""
    filters = units * rank
    s_in, s_wf, s_wt = 0.05, 0.01, 0.02
    s_st = s_in * s_wf / feature_gain
    w = TFLiteWriter()
    x = w.input("x", (batch, depth), "int8", scale=s_in, zero_point=-7)
    info = np.iinfo(state)
    wt = rng.integers(info.min // 2 if state == "int16" else -127, (info.max // 2 if state == "int16" else 127) + 1,
                      (filters, memory)).astype(state)
    y = w.svdf(x, rng.integers(-127, 128, (filters, depth)).astype(np.int8), wt,
               rng.integers(-3000, 3000, units).astype(np.int32) if bias else None, rank=rank,
               weights_feature_scale=s_wf, weights_time_scale=s_wt, state_scale=s_st, state_zp=state_zp,
               out_scale=s_st * s_wt / out_gain, out_zp=5, activation=activation)
    w.output(y)
    return w.finish()


def _check(data: bytes, semantics: str, oracles, rng, n: int = 6):
    mod, params = from_tflite(data, semantics=semantics)
    exe = byoc.build(mod, target="llvm", params=params)
    name = mod["main"].params[0].name_hint
    shape = mod["main"].params[0].type_annotation.shape
    seen = set()
    for _ in range(n):
        x = rng.integers(-128, 128, shape).astype(np.int8)
        ours = np.asarray(byoc.evaluate(mod, {name: x})[0])
        built = np.asarray(exe.run({name: x})[0])
        np.testing.assert_array_equal(built, ours)
        for oracle in oracles:
            np.testing.assert_array_equal(ours, oracle(data, [x])[0])
        seen.update(np.unique(ours).tolist())
    assert len(seen) > 8, "the outputs do not exercise the arithmetic"
    return mod


def _litert(data, xs):
    return litert_run(data, xs)[0]


@pytest.mark.parametrize("rank,bias,batch", [(1, True, 1), (2, True, 2), (3, False, 1)])
def test_int16_state_matches_litert_and_tflm(rank, bias, batch):
    rng = np.random.default_rng(rank * 10 + batch)
    data = _svdf_model(rng, state="int16", rank=rank, bias=bias, batch=batch, feature_gain=0.05, out_gain=8e-6)
    if bias:
        _check(data, "litert", (_litert, tflm_run), rng)
        _check(data, "tflm", (tflm_run,), rng)
    else:   # TFLite Micro's Prepare dereferences the missing bias (a crash): refused under its semantics
        _check(data, "litert", (_litert,), rng)
        with pytest.raises(ModelError, match="no bias"):
            from_tflite(data, semantics="tflm")


@pytest.mark.parametrize("state_zp", [0, -50, 90])
def test_int8_state_matches_tflm(state_zp):
    """TFLite Micro stores zp + feature into the int8 state (wrapping: zp 90 plus a feature near 127 wraps)
    and subtracts the zero point again in the time product."""
    rng = np.random.default_rng(700 + state_zp)
    data = _svdf_model(rng, state="int8", rank=2, bias=True, state_zp=state_zp, feature_gain=2e-3, out_gain=0.012)
    _check(data, "tflm", (tflm_run,), rng)


def test_int8_state_is_refused_under_litert_semantics():
    data = _svdf_model(np.random.default_rng(0), state="int8", rank=1, bias=True, feature_gain=2e-3,
                       out_gain=0.02)
    with pytest.raises(ModelError, match="int8 activation state"):
        from_tflite(data)


def test_int16_state_with_a_zero_point_is_refused():
    data = _svdf_model(np.random.default_rng(0), state="int16", rank=1, bias=True, state_zp=3, feature_gain=0.05,
                       out_gain=8e-6)
    with pytest.raises(ModelError, match="zero point 3"):
        from_tflite(data)


def _unseen(stem: str) -> bytes:
    path = UNSEEN / f"{stem}.tflite"
    if not path.exists():
        pytest.skip(f"{path} is not present (benchmarks/unseen_models.md)")
    return path.read_bytes()


def test_keyword_scrambled_every_tensor_matches_litert():
    """All 15 tensors (7 SVDF outputs among them; unnamed, so compared by tensor index) against LiteRT."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    from tests.byoc.frontend.tflite_oracles import ir_run
    data = _unseen("keyword_scrambled")
    mod, params = from_tflite(data)
    exe = byoc.build(mod, target="llvm", params=params)
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = rng.integers(-32768, 32768, (1, 96)).astype(np.int16)
        it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                         experimental_preserve_all_tensors=True)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        outs, taps = ir_run(mod, [x])
        compared = 0
        for name, v in taps.items():
            if name[:1] == "t" and name[1:].isdigit():
                np.testing.assert_array_equal(np.asarray(v), it.get_tensor(int(name[1:])), err_msg=name)
                compared += 1
        assert compared == 15
        np.testing.assert_array_equal(exe.run({mod["main"].params[0].name_hint: x})[0], outs[0])


def test_keyword_scrambled_8bit_matches_tflm():
    data = _unseen("keyword_scrambled_8bit")
    mod, params = from_tflite(data, semantics="tflm")
    exe = byoc.build(mod, target="llvm", params=params)
    name = mod["main"].params[0].name_hint
    rng = np.random.default_rng(4)
    for _ in range(4):
        x = rng.integers(-32768, 32768, (1, 96)).astype(np.int16)
        ref = tflm_run(data, [x])[0]
        np.testing.assert_array_equal(np.asarray(byoc.evaluate(mod, {name: x})[0]), ref)
        np.testing.assert_array_equal(exe.run({name: x})[0], ref)


def test_litert_semantics_refuses_a_non_relu_activation_as_litert_does():
    data = _svdf_model(np.random.default_rng(0), state="int16", rank=1, bias=True, feature_gain=0.05,
                       out_gain=8e-6, activation="NONE")
    with pytest.raises(RuntimeError, match="kTfLiteActRelu"):
        litert_run(data, [np.zeros((1, 24), np.int8)])
    with pytest.raises(ModelError, match="RELU"):
        from_tflite(data)
    _check(data, "tflm", (tflm_run,), np.random.default_rng(1))   # TFLite Micro ignores the activation


def test_svdf_mac_count():
    """batch·F·K feature MACs plus one time-weight MAC per filter and batch (the reset state's only column)."""
    from byoc.ir.expr import Call
    from byoc.ir.traversal import post_order
    from byoc.ops.macs import macs_of
    data = _svdf_model(np.random.default_rng(0), state="int16", rank=2, bias=True, batch=2, feature_gain=0.05,
                       out_gain=8e-6)
    mod, _ = from_tflite(data)
    calls = [n for n in post_order(mod["main"].body) if isinstance(n, Call) and n.op.name == "qnn.svdf"]
    assert [macs_of(c) for c in calls] == [2 * 12 * 24 + 2 * 12]
