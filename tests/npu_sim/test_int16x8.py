"""int16x8 layers (int16 activations, int8 weights, int64 bias) on the NPU simulator for the ``ethos-u`` target.

Oracles: LiteRT's BUILTIN_REF kernels (and TFLite Micro, the ``ethos-u`` target's import semantics); nothing
here computes an expected value itself. The seanet layers are TFLite Micro's own 16x8 integration-test models
(tests/data/tflm_seanet_16x8/PROVENANCE.md); the generated ones draw inputs with about a fifth of the values at
-32768, -32767, 32767 or 0 and output scales under which many outputs saturate.
"""
from __future__ import annotations

import math
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.cli.common import load_model
from byoc.frontend import from_tflite
from byoc.partition import partition_for
from byoc.testing import TFLiteWriter
from npu_sim.config import PRESETS
from npu_sim.cost import mac_cycles
from npu_sim.isa import MacOp

pytest.importorskip("ai_edge_litert")
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "byoc" / "frontend"))
from tflite_oracles import litert_run, tflm_run  # noqa: E402

SEANET = REPO / "tests" / "data" / "tflm_seanet_16x8"
SEANET_CONVS = sorted(SEANET.glob("conv*.tflite"))
ACTS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _int16(rng, shape, how: str) -> np.ndarray:
    if how == "extremes":
        return rng.choice(np.array([-32768, -32767, 32767], np.int16), shape)
    if how == "small":   # little enough that most outputs do not saturate
        return rng.integers(-300, 301, shape).astype(np.int16)
    v = rng.integers(-32768, 32768, shape).astype(np.int16)
    corners = rng.random(shape) < 0.2
    v[corners] = rng.choice(np.array([-32768, -32767, 32767, 0], np.int16), int(corners.sum()))
    return v


def _offloaded_run(data: bytes, rng, mod=None, params=None, composites=None) -> None:
    """Partition for ethos-u: every op in one NPU partition; the NPU + CPU build equals LiteRT REF and TFLite
    Micro bit for bit on mixed, extreme and small inputs."""
    if mod is None:
        mod, params = from_tflite(data, semantics="tflm")
    pm, report = partition_for("ethos-u", mod, params, return_report=True)
    assert not report.cpu_ops(), [(n.op, n.reason) for n in report.cpu_ops()]
    if composites is not None:
        assert sorted(c for p in report.partitions for c in p.composites) == composites
    exe = byoc.build(pm, target="ethos-u,llvm")
    assert exe.npu_programs
    ps = mod["main"].params
    for how in ("mixed", "extremes", "small"):
        xs = [_int16(rng, tuple(p.type_annotation.shape), how) for p in ps]
        got = exe.run({p.name_hint: x for p, x in zip(ps, xs)})
        ref, _ = litert_run(data, xs)
        micro = tflm_run(data, xs)
        for g, r, m in zip(got, ref, micro):
            assert g.dtype == r.dtype == np.int16 and g.shape == r.shape
            assert np.array_equal(g, r), f"{how}: {int((g != r).sum())}/{r.size} mismatches vs LiteRT REF"
            assert np.array_equal(g, m), f"{how}: {int((g != m).sum())}/{m.size} mismatches vs TFLite Micro"


@pytest.mark.parametrize("path", SEANET_CONVS, ids=lambda p: p.stem)
def test_seanet_16x8_conv_is_offloaded_and_bit_exact(path):
    m = load_model(str(path), "auto", target="ethos-u")
    _offloaded_run(m.data, _rng("seanet", path.stem), m.mod, m.params, ["ethos-u.qnn_conv2d"])


def _bias(rng, n: int, case: int) -> np.ndarray:
    big = 1 << 34 if case % 2 else 1 << 22   # beyond int32: only the 40-bit bias keeps it
    return rng.integers(-big, big, n, dtype=np.int64)


def _out_scale(s_in: float, s_w, k: int, rng) -> float:
    return float(s_in * float(np.mean(s_w)) * math.sqrt(k) * 64 / rng.uniform(0.1, 3.0))


@pytest.mark.parametrize("case", range(6))
def test_generated_conv_16x8_is_bit_exact(case):
    rng = _rng("conv", case)
    w = TFLiteWriter()
    h, wd, cin = int(rng.integers(3, 12)), int(rng.integers(3, 12)), int(rng.integers(1, 40))
    x = w.input("x", (1, h, wd, cin), "int16", scale=float(rng.uniform(1e-5, 1e-3)), zero_point=0)
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    stride = tuple(int(v) for v in rng.integers(1, 3, 2))
    dil = (2, 2) if case == 4 and min(h, wd) > 4 else (1, 1)
    cout = int(rng.integers(1, 24))
    s_w = rng.uniform(1e-3, 2e-2, cout)
    y = w.conv2d(x, rng.integers(-127, 128, (cout, kh, kw, cin)).astype(np.int8), _bias(rng, cout, case),
                 weight_scale=s_w, strides=stride, padding="SAME" if case % 2 else "VALID", dilation=dil,
                 activation=ACTS[case % 4], out_scale=_out_scale(x.scale[0], s_w, kh * kw * cin, rng), out_zp=0)
    w.output(y)
    _offloaded_run(w.finish(), rng, composites=["ethos-u.qnn_conv2d"])


@pytest.mark.parametrize("case", range(4))
def test_generated_depthwise_16x8_is_bit_exact(case):
    rng = _rng("dw", case)
    w = TFLiteWriter()
    h, wd = int(rng.integers(3, 12)), int(rng.integers(3, 12))
    cin = 1 if case == 3 else int(rng.integers(2, 40))
    cout = 4 if case == 3 else cin                    # a depth multiplier only on one input channel (Vela)
    x = w.input("x", (1, h, wd, cin), "int16", scale=float(rng.uniform(1e-5, 1e-3)), zero_point=0)
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    s_w = rng.uniform(1e-3, 2e-2, cout)
    y = w.depthwise_conv2d(x, rng.integers(-127, 128, (1, kh, kw, cout)).astype(np.int8), _bias(rng, cout, case),
                           weight_scale=s_w, strides=(1 + case % 2, 1), padding="SAME" if case % 2 else "VALID",
                           activation=ACTS[case], out_scale=_out_scale(x.scale[0], s_w, kh * kw, rng), out_zp=0)
    w.output(y)
    # one input channel × 4 is an ordinary convolution to the importer (groups 1)
    _offloaded_run(w.finish(), rng, composites=["ethos-u.qnn_conv2d" if cin == 1 else "ethos-u.qnn_depthwise_conv2d"])


@pytest.mark.parametrize("case", range(3))
def test_generated_fully_connected_16x8_is_bit_exact_under_tflite_micro_semantics(case):
    """FC 16x8: TFLite Micro (the ethos-u target's semantics) requantizes the int64 sum in fixed point."""
    rng = _rng("fc", case)
    w = TFLiteWriter()
    k, units = int(rng.integers(1, 60)), int(rng.integers(1, 20))
    x = w.input("x", (1, k), "int16", scale=float(rng.uniform(1e-5, 1e-3)), zero_point=0)
    s_w = rng.uniform(1e-3, 2e-2, units)
    y = w.fully_connected(x, rng.integers(-127, 128, (units, k)).astype(np.int8), _bias(rng, units, case),
                          weight_scale=s_w, activation=ACTS[case], out_scale=_out_scale(x.scale[0], s_w, k, rng),
                          out_zp=0)
    w.output(y)
    data = w.finish()
    mod, params = from_tflite(data, semantics="tflm")
    pm, report = partition_for("ethos-u", mod, params, return_report=True)
    assert [c for p in report.partitions for c in p.composites] == ["ethos-u.qnn_dense"]
    exe = byoc.build(pm, target="ethos-u,llvm")
    for how in ("mixed", "extremes", "small"):
        xs = [_int16(rng, (1, k), how)]
        np.testing.assert_array_equal(exe.run({"x": xs[0]})[0], tflm_run(data, xs)[0])


def test_fully_connected_16x8_under_litert_semantics_stays_on_the_cpu_with_the_reason():
    rng = _rng("fc-litert")
    w = TFLiteWriter()
    x = w.input("x", (1, 12), "int16", scale=3e-4, zero_point=0)
    w.output(w.fully_connected(x, rng.integers(-127, 128, (4, 12)).astype(np.int8), _bias(rng, 4, 0),
                               weight_scale=rng.uniform(1e-3, 2e-2, 4), out_scale=0.01, out_zp=0))
    mod, params = from_tflite(w.finish(), semantics="litert")
    _, report = partition_for("ethos-u", mod, params, return_report=True)
    assert not report.partitions
    assert any("double" in n.reason for n in report.cpu_ops() if n.op == "qnn.dense"), report.cpu_ops()


def test_a_bias_beyond_40_bits_keeps_the_conv_on_the_cpu():
    rng = _rng("bias40")
    w = TFLiteWriter()
    x = w.input("x", (1, 4, 4, 3), "int16", scale=1e-4, zero_point=0)
    bias = np.array([1 << 39, 0], np.int64)                     # one past the signed 40-bit range
    w.output(w.conv2d(x, rng.integers(-127, 128, (2, 1, 1, 3)).astype(np.int8), bias,
                      weight_scale=np.array([1e-2, 1e-2]), out_scale=0.5, out_zp=0))
    mod, params = from_tflite(w.finish(), semantics="tflm")
    _, report = partition_for("ethos-u", mod, params, return_report=True)
    assert not report.partitions
    reasons = " ".join(n.reason for n in report.cpu_ops())
    assert "within 40 bits" in reasons and f"found int64 values 0..{1 << 39}" in reasons


def test_16bit_mac_runs_at_half_the_8bit_rate():
    """Vela (npu_performance): a 16-bit IFM halves the IFM block depth, so a deep conv takes twice the passes,
    and a depthwise micro-block twice the cycles."""
    cfg = PRESETS["ethos-u55-256-like"]
    for op, ic in ((MacOp.CONV, 128), (MacOp.DEPTHWISE, 32)):
        c8 = mac_cycles(cfg, op, 16, 16, 32, ic, 3, 3)
        c16 = mac_cycles(cfg, op, 16, 16, 32, ic, 3, 3, ifm_bits=16)
        fixed = cfg.overheads.cmd_issue + cfg.mac.pipe_fill
        assert c16 - fixed == pytest.approx(2 * (c8 - fixed), rel=0.05), (op, c8, c16)


# -- int16 elementwise (LiteRT's general int16 path: left shift 15 for ADD, MBQM of the product for MUL) --------

@pytest.mark.parametrize("path", sorted(SEANET.glob("add*.tflite")), ids=lambda p: p.stem)
def test_seanet_int16_add_is_offloaded_and_bit_exact(path):
    m = load_model(str(path), "auto", target="ethos-u")
    _offloaded_run(m.data, _rng("seanet", path.stem), m.mod, m.params, ["ethos-u.qnn_add"])


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("case", range(4))
def test_generated_int16_add_mul_is_bit_exact(op, case):
    rng = _rng("binary", op, case)
    w = TFLiteWriter()
    shape = (1,) + tuple(int(v) for v in rng.integers(1, 9, 3))
    bshape = (1, 1, 1, shape[3]) if case % 2 else shape                   # a per-channel operand: IFM2 broadcast
    s1, s2 = (float(v) for v in rng.uniform(1e-5, 1e-3, 2))
    a = w.input("a", shape, "int16", scale=s1, zero_point=0)
    b = w.input("b", bshape, "int16", scale=s2, zero_point=0)
    if op == "add":
        y = w.add(a, b, activation=ACTS[case], out_scale=max(s1, s2) * float(rng.uniform(0.4, 3.0)), out_zp=0)
    else:
        y = w.mul(a, b, activation=ACTS[case], out_scale=s1 * s2 * 32768 * float(rng.uniform(0.1, 3.0)), out_zp=0)
    w.output(y)
    _offloaded_run(w.finish(), rng, composites=[f"ethos-u.qnn_{op}"])


def test_int16_add_on_the_power_of_two_path_stays_on_the_cpu():
    w = TFLiteWriter()
    a = w.input("a", (1, 2, 3, 4), "int16", scale=2.0 ** -10, zero_point=0)
    b = w.input("b", (1, 2, 3, 4), "int16", scale=2.0 ** -12, zero_point=0)
    w.output(w.add(a, b, out_scale=2.0 ** -10, out_zp=0, pot_scale_int16=True))
    mod, params = from_tflite(w.finish(), semantics="tflm")
    _, report = partition_for("ethos-u", mod, params, return_report=True)
    assert not report.partitions
    assert any("TFLITE_POT" in n.reason for n in report.cpu_ops())


# -- SUB: the PPU's ADD with the second operand subtracted (int8 and int16) ------------------------------------

@pytest.mark.parametrize("path", sorted(SEANET.glob("sub*.tflite")), ids=lambda p: p.stem)
def test_seanet_int16_sub_is_offloaded_and_bit_exact(path):
    m = load_model(str(path), "auto", target="ethos-u")
    _offloaded_run(m.data, _rng("seanet", path.stem), m.mod, m.params, ["ethos-u.qnn_subtract"])


@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("case", range(4))
def test_generated_sub_is_bit_exact_whichever_operand_is_broadcast(dtype, case):
    """case 1: b broadcast (src1 = b); case 3: a broadcast, so the PPU computes src1 − src0."""
    rng = _rng("sub", dtype, case)
    w = TFLiteWriter()
    full = (1,) + tuple(int(v) for v in rng.integers(1, 9, 3))
    small = (1, 1, 1, full[3])
    ash, bsh = (small, full) if case == 3 else (full, small) if case == 1 else (full, full)
    if dtype == "int16":
        s1, s2 = (float(v) for v in rng.uniform(1e-5, 1e-3, 2))
        z1 = z2 = zo = 0
        so = max(s1, s2) * float(rng.uniform(0.4, 3.0))
    else:
        s1, s2, so = (float(v) for v in rng.uniform(0.01, 0.1, 3))
        z1, z2, zo = (int(v) for v in rng.integers(-20, 20, 3))
    a = w.input("a", ash, dtype, scale=s1, zero_point=z1)
    b = w.input("b", bsh, dtype, scale=s2, zero_point=z2)
    w.output(w.sub(a, b, activation=ACTS[case], out_scale=so, out_zp=zo))
    data = w.finish()
    mod, params = from_tflite(data, semantics="tflm")
    pm, report = partition_for("ethos-u", mod, params, return_report=True)
    assert [c for p in report.partitions for c in p.composites] == ["ethos-u.qnn_subtract"]
    exe = byoc.build(pm, target="ethos-u,llvm")
    info = np.iinfo(dtype)
    for how in range(3):
        xs = [(_int16(rng, s, ("mixed", "extremes", "small")[how]) if dtype == "int16" else
               rng.integers(info.min, int(info.max) + 1, s).astype(dtype)) for s in (ash, bsh)]
        got = exe.run({"a": xs[0], "b": xs[1]})[0]
        np.testing.assert_array_equal(got, litert_run(data, xs)[0][0])
        np.testing.assert_array_equal(got, tflm_run(data, xs)[0])
