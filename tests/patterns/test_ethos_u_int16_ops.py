"""Operators Vela 5.2 places on the Ethos-U NPU that byoc kept on the CPU until now: int16 LEAKY_RELU, int16 PAD,
int8 / int16 RSQRT and elementwise ADD / MUL with a batch above 1 (Regor checks "Batch must be 1" on MEAN only).
Each is offloaded under the ``ethos-u`` rules, lowered on the NPU simulator and checked bit for bit against LiteRT's
BUILTIN_REF kernels and TFLite Micro (expected values from those runtimes), on project-built models under every
Ethos-U preset and on the real test-data files of tflite-micro / LiteRT when they are present.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.errors import ExecutionError, ModelError
from byoc.frontend import from_tflite
from byoc.partition import partition_for
from byoc.testing.tflite_writer import TFLiteWriter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "byoc" / "frontend"))
from tflite_oracles import litert_run, tflm_run  # noqa: E402

ETHOS_U_PRESETS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256",
                   "ethos-u65-256-shared", "ethos-u65-512", "ethos-u65-512-shared")
UNSEEN = Path("/work/ext/unseen/misc")


def _model(shape, dtype, build, scale=0.01, zp=0) -> bytes:
    w = TFLiteWriter()
    x = w.input("x", shape, dtype, scale=scale, zero_point=zp)
    out = build(w, x)
    w.output(*(out if isinstance(out, list) else [out]))
    return w.finish()


def _offload(data: bytes, preset: str = "ethos-u55-256", semantics: str = "tflm"):
    mod, params = from_tflite(data, semantics=semantics)
    pm, report = partition_for("ethos-u", mod, params, return_report=True)
    exe = byoc.build(pm, target="ethos-u,llvm", npu_config=preset)
    kinds = [x.kind for p in exe.npu_programs.values() for x in p.layers]
    return mod, report, exe, kinds


def _check(data: bytes, inputs, kinds_expected, preset="ethos-u55-256", tflm=True):
    mod, report, exe, kinds = _offload(data, preset)
    assert not report.cpu_ops(), [(n.op, n.reason) for n in report.cpu_ops()]
    assert kinds == kinds_expected, kinds
    name = mod["main"].params[0].name_hint
    for x in inputs:
        want = litert_run(data, [x])[0][0]
        if tflm:
            np.testing.assert_array_equal(tflm_run(data, [x])[0], want)
        ref = byoc.evaluate(mod, {name: x})
        np.testing.assert_array_equal(np.asarray(ref[0] if isinstance(ref, (list, tuple)) else ref), want)
        got = exe.run({name: x})[0]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def _int16(shape, seed=0, low=-32768):
    rng = np.random.default_rng(seed)
    every = np.resize(np.arange(low, 32768, 7), int(np.prod(shape))).reshape(shape)
    return [rng.integers(low, 32768, size=shape).astype(np.int16), every.astype(np.int16)]


def _cpu_reason(data: bytes, op: str) -> str:
    mod, params = from_tflite(data, semantics="tflm")
    _, report = partition_for("ethos-u", mod, params, return_report=True)
    return " ".join(n.reason for n in report.cpu_ops() if op in (n.op, *n.inner_ops))


# -- int16 LEAKY_RELU -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_int16_leaky_relu_runs_on_the_npu_bit_exact_under_every_preset(preset):
    """Both of Regor's int16 forms: equal input / output scales (its native LRELU) and rescaled (MUL + MUL + MAX),
    alpha below and above 1."""
    shape = (1, 3, 20, 16)
    for alpha, out_scale in ((0.3, 0.01), (0.3, 0.0073), (0.01, 0.02), (1.7, 0.031)):
        data = _model(shape, "int16", lambda w, x: w.leaky_relu(x, alpha, out_scale=out_scale, out_zp=0))
        _check(data, _int16(shape), ["prelu"], preset)


def test_int16_leaky_relu_with_a_negative_alpha_stays_on_the_cpu_and_says_why():
    data = _model((1, 4, 4, 8), "int16", lambda w, x: w.leaky_relu(x, -0.5, out_scale=0.01, out_zp=0))
    why = _cpu_reason(data, "ethos-u.qnn_leaky_relu") or _cpu_reason(data, "nn.leaky_relu")
    assert "alpha ≥ 0" in why and "found int16 with alpha -0.5" in why, why


def test_int8_leaky_relu_is_still_a_lookup_table():
    data = _model((1, 4, 4, 8), "int8", lambda w, x: w.leaky_relu(x, 0.2, out_scale=0.02, out_zp=3), zp=-2)
    x = np.resize(np.arange(-128, 128), (1, 4, 4, 8)).astype(np.int8)
    _check(data, [x], ["lut"])


def test_int16_leaky_relu_cycles_follow_regors_lowering():
    """Equal scales: one LRELU pass (8 bytes per element in Vela's CSV); else MUL, MUL and MAXIMUM (4 + 4 + 6)."""
    from npu_sim.config import preset
    from npu_sim.cost import leaky_relu16_cycles
    cfg = preset("ethos-u55-256")
    native, three = leaky_relu16_cycles(cfg, 2560, True, False), leaky_relu16_cycles(cfg, 2560, False, False)
    # Vela 5.2 (seanet leaky_relu0 / leaky_relu3, 2560 elements each): 2560 and 1280 + 1280 + 1920 cycles
    assert abs(native - 2560) <= 0.05 * 2560 and abs(three - 4480) <= 0.05 * 4480, (native, three)


# -- int16 PAD --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_int16_pad_runs_on_the_npu_bit_exact_under_every_preset(preset):
    shape = (1, 2, 40, 8)
    data = _model(shape, "int16", lambda w, x: w.pad(x, [[0, 0], [1, 2], [3, 3], [0, 0]]))
    _check(data, _int16(shape), ["copy"], preset)


def test_int16_padv2_with_a_pad_value_runs_on_the_npu_bit_exact():
    shape = (1, 5, 6, 3)
    data = _model(shape, "int16", lambda w, x: w.padv2(x, [[0, 0], [2, 1], [0, 4], [0, 0]], -1234))
    _check(data, _int16(shape), ["copy"], tflm=False)


# -- ADD / MUL with batch > 1 (no batch rule on elementwise ops) -------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_elementwise_ops_with_a_batch_above_one_run_on_the_npu_bit_exact(dtype):
    shape = (4, 6, 5, 8)
    info = np.iinfo(dtype)
    zp = 0 if dtype == "int16" else 3

    def build(w, x):
        b = w.const("b", np.resize(np.arange(info.min, int(info.max), 97), (1, 1, 1, 8)).astype(dtype), dtype,
                    scale=0.02, zero_point=zp)
        y = w.add(x, b, out_scale=0.03, out_zp=zp)
        return w.mul(y, x, out_scale=0.5, out_zp=zp)
    data = _model(shape, dtype, build, zp=zp)
    rng = np.random.default_rng(1)
    xs = [rng.integers(info.min, int(info.max) + 1, size=shape).astype(dtype) for _ in range(2)]
    _check(data, xs, ["add", "mul"], tflm=dtype == "int8")


@pytest.mark.parametrize("op", ["maximum", "prelu"])
def test_raw_and_quantized_binary_ops_with_a_batch_above_one_run_on_the_npu_bit_exact(op):
    shape = (3, 5, 4, 16)
    rng = np.random.default_rng(2)
    if op == "maximum":
        data = _model(shape, "int8", lambda w, x: w.maximum(x, w.relu(x)), zp=1)
        kinds = ["requant", "raw_binary"]   # RELU lowers as a clamping requantize
    else:
        data = _model(shape, "int8", lambda w, x: w.prelu(x, rng.integers(-10, 10, (1, 1, 16)).astype(np.int8),
                                                          alpha_scale=0.01), zp=1)
        kinds = ["prelu"]
    xs = [rng.integers(-128, 128, size=shape).astype(np.int8) for _ in range(2)]
    _check(data, xs, kinds, tflm=False)


def test_mean_keeps_the_batch_rule():
    """Regor's one unit-batch constraint: MEAN."""
    data = _model((2, 4, 4, 8), "int8", lambda w, x: w.mean(x, (1, 2), out_scale=0.01, out_zp=0))
    why = _cpu_reason(data, "mean")
    assert "batch size 1 (Vela's MEAN batch rule)" in why and "found batch 2" in why, why


def test_batched_convolutions_and_pools_stay_on_the_cpu_and_say_it_differs_from_vela():
    """Vela 5.2 decomposes a batch above 1 and runs CONV_2D / DEPTHWISE / pools on the NPU; byoc's lowering runs
    one image, so the rule names the difference instead of claiming it is Vela's."""
    rng = np.random.default_rng(4)
    conv = _model((2, 6, 6, 8), "int8", lambda w, x: w.conv2d(x, rng.integers(-127, 127, (8, 3, 3, 8)).astype(np.int8),
                                                             np.zeros(8, np.int32), weight_scale=0.01,
                                                             out_scale=0.1, out_zp=0))
    pool = _model((2, 6, 6, 8), "int8", lambda w, x: w.max_pool2d(x, (2, 2), (2, 2)))
    for data, op in ((conv, "qnn.conv2d"), (pool, "nn.max_pool2d")):
        why = _cpu_reason(data, op)
        assert "byoc's NPU lowering runs one image; Vela 5.2 runs larger batches" in why and "found batch 2" in why


# -- RSQRT ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_int8_rsqrt_runs_on_the_npu_as_a_lookup_table_bit_exact(preset):
    shape = (1, 4, 8, 8)
    for zp_in, s_in, s_out, zp_out in ((-128, 0.05, 0.01, -3), (-20, 0.003, 0.2, 5)):
        data = _model(shape, "int8", lambda w, x: w.rsqrt(x, out_scale=s_out, out_zp=zp_out), scale=s_in, zp=zp_in)
        x = np.resize(np.arange(zp_in, 128), shape).astype(np.int8)   # every valid value (q ≥ zp)
        _check(data, [x, x[:, ::-1].copy()], ["lut"], preset)


@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_int16_rsqrt_runs_on_the_npu_as_an_interpolating_table_bit_exact(preset):
    """LiteRT's int16 RSQRT (TFLite Micro has none): its interpolated 513-sample table, on the NPU's 16-bit LUT."""
    shape = (1, 16, 16, 32)
    for s_in, s_out in ((6.1e-5, 3.05e-5), (0.5, 1e-4)):
        data = _model(shape, "int16", lambda w, x: w.rsqrt(x, out_scale=s_out, out_zp=0), scale=s_in)
        x = np.arange(0, 8192).reshape(shape).astype(np.int16)
        _check(data, [x, x + 8192, x + 16384, x + 24576], ["lut"], preset, tflm=False)


def test_rsqrt_of_a_negative_value_fails_on_the_npu_as_in_litert():
    data = _model((1, 4, 4, 8), "int16", lambda w, x: w.rsqrt(x, out_scale=1e-3, out_zp=0), scale=1e-3)
    mod, _, exe, kinds = _offload(data)
    assert kinds == ["lut"]
    x = np.full((1, 4, 4, 8), 100, np.int16)
    x[0, 1, 2, 3] = -1
    with pytest.raises(Exception, match="Rsqrt is only defined for positive values"):
        litert_run(data, [x])
    with pytest.raises(ExecutionError, match="below 0"):
        exe.run({mod["main"].params[0].name_hint: x})


def test_int16_rsqrt_with_a_zero_point_is_refused_at_import():
    data = _model((1, 4), "int16", lambda w, x: w.rsqrt(x, out_scale=1e-3, out_zp=0), scale=1e-3, zp=5)
    with pytest.raises(ModelError, match="zero point 0"):
        from_tflite(data)


# -- the real test-data files (tflite-micro's SEANet layers, LiteRT's test models) ----------------------------

def _real(pattern: str) -> list[Path]:
    return sorted(UNSEEN.glob(pattern))[:4] if UNSEEN.exists() else []


@pytest.mark.parametrize("path", _real("tensorflow_lite_micro_integration_tests_seanet_leaky_relu_*.tflite")
                         + _real("tensorflow_lite_micro_integration_tests_seanet_pad_*.tflite")
                         + _real("litert_test_testdata_single_rsqrt_*.tflite")
                         + [p for p in (UNSEEN / "litert_test_testdata_mul_quant.tflite",
                                        UNSEEN / "litert_test_testdata_simple_quantized_ops.tflite") if p.exists()],
                         ids=lambda p: p.stem[-40:])
def test_real_files_run_on_the_npu_bit_exact(path):
    data = path.read_bytes()
    mod, report, exe, kinds = _offload(data, semantics="litert")
    assert not report.cpu_ops(), [(n.op, n.reason) for n in report.cpu_ops()]
    assert kinds
    rng = np.random.default_rng(7)
    feeds = []
    for p in mod["main"].params:
        t = p.checked_type
        info = np.iinfo(t.dtype)
        low = 0 if "rsqrt" in path.name else info.min   # RSQRT: valid inputs only (zero points 0 / −128)
        feeds.append(rng.integers(max(low, info.min), int(info.max) + 1, size=tuple(t.shape)).astype(t.dtype))
    want = litert_run(data, feeds)[0]
    got = exe.run({p.name_hint: v for p, v in zip(mod["main"].params, feeds)})
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_int16_quantize_and_concatenation_around_an_int16_batch_matmul_run_on_the_npu_bit_exact():
    """LiteRT's matmul_quant pattern: Vela keeps int16 BATCH_MATMUL on the CPU and runs the int16 → int16
    QUANTIZE and the int16 CONCATENATION; so does byoc, bit for bit with LiteRT."""
    w = TFLiteWriter()
    a = w.input("a", (1, 1, 24, 32), "int16", scale=2.3e-5, zero_point=0)
    b = w.input("b", (1, 1, 40, 32), "int16", scale=4.6e-4, zero_point=0)
    c = w.input("c", (1, 1, 24, 8), "int16", scale=3.6e-4, zero_point=0)
    y = w.batch_matmul(a, b, adj_y=True, out_scale=3.05e-9, out_zp=0)
    q = w.quantize(y, out_scale=3.6e-4, out_zp=0, out_dtype="int16")
    w.output(w.concatenation([q, c], 3, out_scale=3.6e-4, out_zp=0))
    data = w.finish()
    mod, params = from_tflite(data, semantics="litert")
    pm, report = partition_for("ethos-u", mod, params, return_report=True)
    assert {n.op for n in report.cpu_ops()} == {"qnn.batch_matmul", "qnn.requantize"}
    assert all("int64" in n.reason or "composite" in n.reason for n in report.cpu_ops())
    exe = byoc.build(pm, target="ethos-u,llvm")
    kinds = [x.kind for p in exe.npu_programs.values() for x in p.layers]
    assert kinds.count("requant") == 1 and set(kinds) == {"copy", "requant"}, kinds   # reshapes copy too
    rng = np.random.default_rng(3)
    feeds = [rng.integers(-32768, 32768, size=s).astype(np.int16) for s in ((1, 1, 24, 32), (1, 1, 40, 32),
                                                                            (1, 1, 24, 8))]
    want = litert_run(data, feeds)[0][0]
    np.testing.assert_array_equal(exe.run(dict(zip(("a", "b", "c"), feeds)))[0], want)


# -- int16 pools, MEAN and SPLIT (Regor pools, reduces and splits 16-bit tensors) ----------------------------------------------

@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_int16_pools_mean_and_split_run_on_the_npu_bit_exact_under_every_preset(preset):
    shape = (1, 9, 10, 16)
    cases = [
        (lambda w, x: w.max_pool2d(x, (3, 3), (2, 2), "SAME"), ["max_pool"]),
        (lambda w, x: w.average_pool2d(x, (3, 2), (1, 2), "SAME"), ["avg_pool"]),
        (lambda w, x: w.average_pool2d(x, (2, 2), (2, 2), "VALID"), ["avg_pool"]),
        (lambda w, x: w.split(x, 2, 3), ["copy", "copy"]),
        (lambda w, x: w.mean(x, (1, 2), out_scale=0.0037, out_zp=0), ["mean"]),
    ]
    for build, kinds in cases:
        data = _model(shape, "int16", build)
        mod, report, exe, got_kinds = _offload(data, preset)
        assert not report.cpu_ops(), [(n.op, n.reason) for n in report.cpu_ops()]
        assert got_kinds == kinds, got_kinds
        for x in _int16(shape):
            want = litert_run(data, [x])[0]
            got = exe.run({"x": x})
            for wv, gv in zip(want, got):
                np.testing.assert_array_equal(gv, wv)
            if kinds[0] != "copy":
                np.testing.assert_array_equal(tflm_run(data, [x])[0], want[0])
