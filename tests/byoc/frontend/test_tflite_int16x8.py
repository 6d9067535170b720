"""16x8 models (int16 activations with zero point 0, int8 weights, int64 biases) end to end against LiteRT.

Each case writes a random model with ``byoc.testing.tflite_writer`` in which every op's result is also a graph
output (so every intermediate tensor is compared, on both executors), imports it, and requires ``byoc.evaluate``
and the LLVM CPU build to equal LiteRT BUILTIN_REF bit for bit on several inputs, some of them full of the int16
extremes. Output scales are drawn so that a good share of the outputs saturate. LiteRT is the only oracle.
"""
from __future__ import annotations

import math
import zlib
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.errors import ModelError
from byoc.frontend import from_tflite
from byoc.testing import TFLiteWriter

from tflite_oracles import litert_run

pytest.importorskip("ai_edge_litert")

CASES = 8
ACTS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _int16(rng, shape) -> np.ndarray:
    """Random int16 values with about a fifth of them at −32768, −32767, 32767 or 0."""
    v = rng.integers(-32768, 32768, shape).astype(np.int16)
    corners = rng.random(shape) < 0.2
    v[corners] = rng.choice(np.array([-32768, -32767, 32767, 0], np.int16), int(corners.sum()))
    return v


def _inputs(mod, rng) -> list[np.ndarray]:
    out = []
    for p in mod["main"].params:
        t = p.type_annotation
        if t.dtype == "int16":
            out.append(_int16(rng, t.shape))
        elif t.dtype == "int8":
            out.append(rng.integers(-128, 128, t.shape).astype(np.int8))
        elif t.dtype == "int32":
            out.append(rng.integers(-(1 << 31), 1 << 31, t.shape, dtype=np.int64).astype(np.int32))
        else:
            out.append((rng.standard_normal(t.shape) * 40).astype(t.dtype))
    return out


def check(data: bytes, rng, samples: int = 3) -> None:
    """Every graph output of ``byoc.evaluate`` and of the LLVM build equals LiteRT's, bit for bit."""
    mod, _ = from_tflite(data)
    exe = byoc.build(mod, target="llvm")
    names = [p.name_hint for p in mod["main"].params]
    for _ in range(samples):
        ins = _inputs(mod, rng)
        feed = dict(zip(names, ins))
        refs, _ = litert_run(data, ins)
        ours, cpu = byoc.evaluate(mod, feed), exe.run(feed)
        assert len(ours) == len(refs) == len(cpu)
        for i, (r, o, c) in enumerate(zip(refs, ours, cpu)):
            assert o.dtype == r.dtype and o.shape == r.shape, (i, o.dtype, r.dtype, o.shape, r.shape)
            assert np.array_equal(o, r), f"output {i}: {int((o != r).sum())}/{r.size} mismatches vs LiteRT"
            assert np.array_equal(c, r), f"output {i}: {int((c != r).sum())}/{r.size} LLVM mismatches vs LiteRT"


def _x(w, rng, shape, name="x"):
    return w.input(name, shape, "int16", scale=float(rng.uniform(1e-5, 1e-3)), zero_point=0)


def _out_scale(s_in: float, s_w: np.ndarray, k: int, rng) -> float:
    """An output scale for which a typical accumulator (≈ 2^21·√K) lands between 0.1× and 3× the int16 range."""
    return float(s_in * float(np.mean(s_w)) * math.sqrt(k) * 64 / rng.uniform(0.1, 3.0))


def _bias(rng, n: int, case: int) -> np.ndarray:
    big = 1 << 34 if case % 4 == 3 else 1 << 22  # beyond int32 now and then: only an int64 sum keeps it
    return rng.integers(-big, big, n, dtype=np.int64)


# ------------------------------------------------------------------------------------------ conv / dw / fc
@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_16x8(depthwise):
    rng = _rng("conv16x8", depthwise)
    for case in range(CASES):
        w = TFLiteWriter()
        h, wd, cin = (int(v) for v in rng.integers(2, 9, 3))
        x = _x(w, rng, (1, h, wd, cin))
        kh, kw = (int(v) for v in rng.integers(1, 4, 2))
        stride = tuple(int(v) for v in rng.integers(1, 3, 2))
        dil = (2, 2) if case % 3 == 2 else (1, 1)
        padding = "SAME" if case % 2 or (kh - 1) * dil[0] >= h or (kw - 1) * dil[1] >= wd else "VALID"
        cout = cin * int(rng.integers(1, 3)) if depthwise else int(rng.integers(1, 7))
        s_w = rng.uniform(1e-3, 2e-2, cout) if case % 3 else np.full(cout, rng.uniform(1e-3, 2e-2))
        act = ACTS[case % 4]
        if depthwise:
            wt = rng.integers(-127, 128, (1, kh, kw, cout)).astype(np.int8)
            y = w.depthwise_conv2d(x, wt, _bias(rng, cout, case), weight_scale=s_w, strides=stride, padding=padding,
                                   dilation=dil, activation=act, out_scale=_out_scale(x.scale[0], s_w, kh * kw, rng),
                                   out_zp=0)
        else:
            wt = rng.integers(-127, 128, (cout, kh, kw, cin)).astype(np.int8)
            y = w.conv2d(x, wt, _bias(rng, cout, case), weight_scale=s_w, strides=stride, padding=padding,
                         dilation=dil, activation=act, out_scale=_out_scale(x.scale[0], s_w, kh * kw * cin, rng),
                         out_zp=0)
        w.output(y)
        check(w.finish(), rng)


def test_fully_connected_16x8():
    rng = _rng("fc16x8")
    for case in range(CASES):
        w = TFLiteWriter()
        k, units, batch = int(rng.integers(1, 40)), int(rng.integers(1, 9)), int(rng.integers(1, 4))
        keep = case % 3 == 1
        x = _x(w, rng, (batch, 2, k) if keep else (batch, k))
        s_w = rng.uniform(1e-3, 2e-2, units) if case % 2 else rng.uniform(1e-3, 2e-2)
        y = w.fully_connected(x, rng.integers(-127, 128, (units, k)).astype(np.int8),
                              _bias(rng, units, case) if case != 4 else None, weight_scale=s_w,
                              keep_num_dims=keep, activation=ACTS[case % 4],
                              out_scale=_out_scale(x.scale[0], np.atleast_1d(s_w), k, rng), out_zp=0)
        w.output(y)
        check(w.finish(), rng)


@pytest.mark.parametrize("op", ["conv", "fc"])
def test_int32_bias_with_quantized_bias_type(op):
    """quantized_bias_type INT32 selects LiteRT's int32 accumulator (with its wrap) and the int32 MBQM."""
    rng = _rng("int32bias", op)
    for case in range(4):
        w = TFLiteWriter()
        if op == "conv":
            x = _x(w, rng, (1, 5, 5, 3))
            s_w = rng.uniform(1e-3, 2e-2, 4)
            y = w.conv2d(x, rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
                         rng.integers(-(1 << 24), 1 << 24, 4), weight_scale=s_w, quantized_bias_type="int32",
                         out_scale=_out_scale(x.scale[0], s_w, 27, rng), out_zp=0)
        else:
            x = _x(w, rng, (2, 12))
            s_w = rng.uniform(1e-3, 2e-2, 5)
            y = w.fully_connected(x, rng.integers(-127, 128, (5, 12)).astype(np.int8),
                                  rng.integers(-(1 << 24), 1 << 24, 5), weight_scale=s_w, quantized_bias_type="int32",
                                  out_scale=_out_scale(x.scale[0], s_w, 12, rng), out_zp=0)
        w.output(y)
        check(w.finish(), rng)


# ---------------------------------------------------------------------------------------- elementwise
@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("path", ["general", "general_broadcast", "pot"])
def test_add_sub_int16(op, path):
    rng = _rng("addsub16", op, path)
    for case in range(CASES):
        w = TFLiteWriter()
        shape = tuple(int(v) for v in rng.integers(1, 6, 4))
        if path == "pot":
            e_out = int(rng.integers(8, 14))
            e_small = e_out + int(rng.integers(0, 4))
            s1, s2 = (2.0 ** -e_out, 2.0 ** -e_small) if case % 2 else (2.0 ** -e_small, 2.0 ** -e_out)
            so = 2.0 ** -e_out
            pot = None if case % 3 == 0 else True  # absent from the options table means true (schema default)
        else:
            s1, s2 = (float(v) for v in rng.uniform(1e-5, 1e-3, 2))
            so = max(s1, s2) * float(rng.uniform(0.4, 3.0))
            pot = (None, False, True)[case % 3]  # non-power-of-two scales: the general path whatever the flag
        bshape = tuple(d if rng.random() < 0.5 else 1 for d in shape) if path == "general_broadcast" else shape
        a = w.input("a", shape, "int16", scale=s1, zero_point=0)
        b = w.input("b", bshape, "int16", scale=s2, zero_point=0)
        fn = w.add if op == "add" else w.sub
        y = fn(a, b, activation=ACTS[case % 4], out_scale=so, out_zp=0, pot_scale_int16=pot)
        w.output(y)
        check(w.finish(), rng)


@pytest.mark.parametrize("factor", [1.0004, 0.9996, 1.0011, 0.9989])
def test_add_int16_near_power_of_two_scales(factor):
    """LiteRT's CheckedLog2 accepts scales within 1e-3 of a power of two in log2 (factor 1.0004: the power-of-two
    path with the rounded exponents); 1.0011 is outside, so the general path. Both must match."""
    rng = _rng("nearpot", factor)
    for case in range(3):
        w = TFLiteWriter()
        a = w.input("a", (1, 3, 4, 5), "int16", scale=2.0 ** -11 * factor, zero_point=0)
        b = w.input("b", (1, 3, 4, 5), "int16", scale=2.0 ** -(11 + case), zero_point=0)
        w.output(w.add(a, b, out_scale=2.0 ** -11, out_zp=0, pot_scale_int16=True))
        check(w.finish(), rng)


def test_mul_int16():
    rng = _rng("mul16")
    for case in range(CASES):
        w = TFLiteWriter()
        shape = tuple(int(v) for v in rng.integers(1, 6, 4))
        bshape = tuple(d if rng.random() < 0.5 else 1 for d in shape) if case % 2 else shape
        s1, s2 = (float(v) for v in rng.uniform(1e-5, 1e-3, 2))
        a = w.input("a", shape, "int16", scale=s1, zero_point=0)
        b = w.input("b", bshape, "int16", scale=s2, zero_point=0)
        y = w.mul(a, b, activation=ACTS[case % 4], out_scale=s1 * s2 * 32768 * float(rng.uniform(0.1, 3.0)),
                  out_zp=0)
        w.output(y)
        check(w.finish(), rng)


def test_leaky_relu_pad_concat_int16():
    rng = _rng("misc16")
    for case in range(CASES):
        w = TFLiteWriter()
        shape = (1,) + tuple(int(v) for v in rng.integers(1, 6, 3))
        x = _x(w, rng, shape)
        alpha = float(rng.choice([0.1, 0.3, -0.5, 1.5, rng.uniform(-1, 2)]))
        lr = w.leaky_relu(x, alpha, out_scale=x.scale[0] * float(rng.uniform(0.3, 2.0)), out_zp=0)
        pads = [[0, 0]] + [[int(v) for v in rng.integers(0, 3, 2)] for _ in range(3)]
        p = w.pad(lr, pads) if case % 2 else w.padv2(lr, pads, int(rng.integers(-32768, 32768)))
        other = w.input("o", p.shape[:3] + (2,), "int16", zero_point=0,
                        scale=p.scale[0] if case % 3 == 0 else float(rng.uniform(1e-5, 1e-3)))
        c = w.concatenation([p, other, p], 3)
        w.output(lr, p, c)
        check(w.finish(), rng)


def test_quantize_dequantize_int16():
    rng = _rng("q16")
    for case in range(CASES):
        w = TFLiteWriter()
        f = w.input("f", (1, 4, 4, 3), "float32")
        q = w.quantize(f, out_scale=float(rng.uniform(1e-4, 2e-3)), out_zp=0, out_dtype="int16")
        q16 = w.quantize(q, out_scale=float(rng.uniform(1e-4, 2e-3)), out_zp=0, out_dtype="int16")
        q8 = w.quantize(q16, out_scale=float(rng.uniform(0.01, 0.3)), out_zp=int(rng.integers(-20, 20)),
                        out_dtype="int8")
        back = w.quantize(q8, out_scale=float(rng.uniform(1e-4, 2e-3)), out_zp=0, out_dtype="int16")
        w.output(q, q16, q8, back, w.dequantize(back))
        check(w.finish(), rng)


def test_int32_quantize_to_int16_and_int8():
    """LiteRT's int32 → int8/int16 QUANTIZE (a requantize with the int32 MBQM, full int32 inputs)."""
    rng = _rng("q32")
    for case in range(CASES):
        w = TFLiteWriter()
        x = w.input("x", (2, 33), "int32", scale=float(rng.uniform(1e-8, 1e-6)), zero_point=int(rng.integers(-99, 99)))
        dtype = ("int16", "int8")[case % 2]
        zp = 0 if dtype == "int16" else int(rng.integers(-20, 20))
        w.output(w.quantize(x, out_scale=float(rng.uniform(1e-5, 1e-3)), out_zp=zp, out_dtype=dtype))
        check(w.finish(), rng)


SEANET = Path(__file__).resolve().parents[2] / "data" / "tflm_seanet_16x8"


# (the transpose_conv models feed output_shape at run time: LiteRT resizes to it; test_tflite_transpose_conv16.py)
@pytest.mark.parametrize("name", sorted(p.name for p in SEANET.glob("*.tflite") if not p.name.startswith("transpose")))
def test_tflm_seanet_16x8_models(name):
    """Real 16x8 layers from TFLite Micro's integration tests (tests/data/tflm_seanet_16x8/PROVENANCE.md)."""
    check((SEANET / name).read_bytes(), _rng("seanet", name), samples=2)


def test_16x8_network_every_intermediate():
    """int8 in → QUANTIZE int16 → conv → pad → depthwise → add → mul → leaky_relu → concat → FC → int8 out."""
    rng = _rng("net16x8")
    for case in range(4):
        w = TFLiteWriter()
        x = w.input("x", (1, 7, 7, 3), "int8", scale=0.05, zero_point=int(rng.integers(-10, 10)))
        x16 = w.quantize(x, out_scale=float(rng.uniform(2e-4, 1e-3)), out_zp=0, out_dtype="int16")
        s_w = rng.uniform(1e-3, 2e-2, 4)
        c = w.conv2d(x16, rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8), _bias(rng, 4, case),
                     weight_scale=s_w, activation="RELU", out_scale=_out_scale(x16.scale[0], s_w, 27, rng), out_zp=0)
        p = w.pad(c, [[0, 0], [1, 1], [1, 1], [0, 0]])
        s_d = rng.uniform(1e-3, 2e-2, 4)
        d = w.depthwise_conv2d(p, rng.integers(-127, 128, (1, 3, 3, 4)).astype(np.int8), _bias(rng, 4, case),
                               weight_scale=s_d, padding="VALID", out_scale=_out_scale(c.scale[0], s_d, 9, rng),
                               out_zp=0)
        a = w.add(d, c, out_scale=max(c.scale[0], d.scale[0]) * 1.5, out_zp=0, pot_scale_int16=False)
        m = w.mul(a, d, out_scale=a.scale[0] * d.scale[0] * 16384, out_zp=0)
        lr = w.leaky_relu(m, 0.2, out_scale=m.scale[0], out_zp=0)
        cat = w.concatenation([lr, d], 3)
        flat = w.reshape(cat, [1, -1])
        s_f = rng.uniform(1e-3, 2e-2)
        fc = w.fully_connected(flat, rng.integers(-127, 128, (6, flat.shape[1])).astype(np.int8),
                               _bias(rng, 6, case), weight_scale=s_f,
                               out_scale=_out_scale(cat.scale[0], np.array([s_f]), flat.shape[1], rng), out_zp=0)
        o = w.quantize(fc, out_scale=0.05, out_zp=-3, out_dtype="int8")
        w.output(x16, c, p, d, a, m, lr, cat, fc, o)
        check(w.finish(), rng)


_OTHER_INT16 = {
    "average_pool2d": lambda w, x, r: w.average_pool2d(x, 3, 2, "SAME"),
    "max_pool2d": lambda w, x, r: w.max_pool2d(x, 2, 2, "VALID"),
    "mean": lambda w, x, r: w.mean(x, [1, 2], True, out_scale=x.scale[0] * float(r.uniform(0.3, 2.0)), out_zp=0),
    "relu": lambda w, x, r: w.relu(x, out_scale=x.scale[0] * float(r.uniform(0.3, 2.0)), out_zp=0),
    "relu6": lambda w, x, r: w.relu6(x, out_scale=float(r.uniform(1e-4, 4e-4)), out_zp=0),
    "abs": lambda w, x, r: w.abs(x, out_scale=x.scale[0] * float(r.uniform(0.3, 2.0)), out_zp=0),
    "resize_bilinear": lambda w, x, r: w.resize_bilinear(x, [7, 9]),
    "resize_nearest": lambda w, x, r: w.resize_nearest_neighbor(x, [7, 9]),
    "transpose": lambda w, x, r: w.transpose(x, [0, 2, 1, 3]),
    "strided_slice": lambda w, x, r: w.strided_slice(x, [0, 1, 0, 0], [1, 3, 4, 2]),
}


@pytest.mark.parametrize("op", sorted(_OTHER_INT16))
def test_other_int16_ops(op):
    """Ops whose 8-bit lowering also covers LiteRT's int16 kernel (zero point 0)."""
    rng = _rng("other16", op)
    for _ in range(3):
        w = TFLiteWriter()
        x = _x(w, rng, (1, 4, 5, 3))
        w.output(_OTHER_INT16[op](w, x, rng))
        check(w.finish(), rng, samples=2)


# ------------------------------------------------------------------------------------------------ refusals
def _conv_model(bias_dtype: str | None = None, option: str | None = None, zp: int = 0) -> bytes:
    rng = np.random.default_rng(0)
    w = TFLiteWriter()
    x = w.input("x", (1, 4, 4, 2), "int16", scale=1e-3, zero_point=zp)
    bias = w.const("b", np.arange(3), bias_dtype) if bias_dtype else np.arange(3)
    y = w.conv2d(x, rng.integers(-127, 128, (3, 1, 1, 2)).astype(np.int8), bias, weight_scale=0.01,
                 out_scale=0.01, out_zp=0, quantized_bias_type=option)
    w.output(y)
    return w.finish()


@pytest.mark.parametrize("case, message", [
    (dict(bias_dtype="int32"), "16x8 bias is int32 without quantized_bias_type INT32"),
    (dict(bias_dtype="int64", option="int32"), "bias is int64 but quantized_bias_type says int32"),
    (dict(zp=5), "needs an int16 input with zero point 0"),
])
def test_16x8_conv_refusals(case, message):
    with pytest.raises(ModelError, match=message) as e:
        from_tflite(_conv_model(**case))
    assert "CONV_2D" in str(e.value)


@pytest.mark.parametrize("builder, name", [
    (lambda w, x: w.softmax(x), "SOFTMAX"),
    (lambda w, x: w.logistic(x, out_scale=2 ** -15, out_zp=0), "LOGISTIC"),
    (lambda w, x: w.tanh(x, out_scale=2 ** -15, out_zp=0), "TANH"),
    (lambda w, x: w.hard_swish(x, out_scale=1e-3, out_zp=0), "HARD_SWISH"),
])
def test_int16_ops_without_support_are_refused_by_name(builder, name):
    w = TFLiteWriter()
    x = w.input("x", (1, 8), "int16", scale=2 ** -12, zero_point=0)
    w.output(builder(w, x))
    with pytest.raises(ModelError, match=f"int16 {name} is not supported"):
        from_tflite(w.finish())


def test_int16_pot_add_with_broadcast_is_refused():
    w = TFLiteWriter()
    a = w.input("a", (1, 4, 4, 3), "int16", scale=2 ** -10, zero_point=0)
    b = w.input("b", (1, 1, 1, 3), "int16", scale=2 ** -12, zero_point=0)
    w.output(w.add(a, b, out_scale=2 ** -10, out_zp=0))
    with pytest.raises(ModelError, match="power-of-two path does not broadcast"):
        from_tflite(w.finish())


def test_int16_add_nonzero_zero_point_is_refused():
    w = TFLiteWriter()
    a = w.input("a", (1, 4), "int16", scale=1e-3, zero_point=3)
    w.output(w.add(a, a, out_scale=2e-3, out_zp=0))
    with pytest.raises(ModelError, match="zero point 0"):
        from_tflite(w.finish())


# ------------------------------------------------------------------------------------------------------ NPU
def test_npu_keeps_int16_compute_on_the_cpu_and_offloads_int16_quantize_bit_exactly():
    """int16 compute ops stay on the CPU with a dtype reason; the int16 → int8 QUANTIZE the NPU's PPU does
    (npu_sim's requant layer takes int16 input) runs there and equals LiteRT."""
    rng = _rng("npu16")
    w = TFLiteWriter()
    x = _x(w, rng, (1, 8, 8, 4))
    s_w = rng.uniform(1e-3, 2e-2, 4)
    c = w.conv2d(x, rng.integers(-127, 128, (4, 3, 3, 4)).astype(np.int8), _bias(rng, 4, 0), weight_scale=s_w,
                 out_scale=_out_scale(x.scale[0], s_w, 36, rng), out_zp=0)
    a = w.add(c, c, out_scale=c.scale[0] * 2, out_zp=0, pot_scale_int16=False)
    o = w.quantize(a, out_scale=0.05, out_zp=3, out_dtype="int8")
    w.output(o)
    data = w.finish()
    mod, params = from_tflite(data)
    part, report = byoc.partition_for("npu", mod, params, return_report=True)
    placed = {(n.op, n.name): n for n in report.nodes}
    assert placed[("qnn.conv2d", "conv2d_0")].target == "cpu"
    assert "found int16" in placed[("qnn.conv2d", "conv2d_0")].reason
    assert placed[("qnn.add", "add_0")].target == "cpu"
    assert "found int16" in placed[("qnn.add", "add_0")].reason
    assert placed[("npu.qnn_requantize", "quantize_0")].target == "npu"
    exe = byoc.build(part, target="npu,llvm")
    name = mod["main"].params[0].name_hint
    for _ in range(3):
        xi = _int16(rng, (1, 8, 8, 4))
        ref, _ = litert_run(data, [xi])
        assert np.array_equal(exe.run({name: xi})[0], ref[0])


@pytest.mark.parametrize("case", range(4))
def test_batch_matmul_int16(case):
    """LiteRT's int16 BATCH_MATMUL: zero points 0, an int64 accumulator, the int64 MultiplyByQuantizedMultiplier;
    two variable operands (adjoints, broadcast batches) or a constant int16 right-hand side."""
    rng = _rng("bmm16", case)
    w = TFLiteWriter()
    adj_x, adj_y = bool(case & 1), bool(case & 2)
    a_shape = (2, 3, 24, 40) if not adj_x else (2, 3, 40, 24)
    x = _x(w, rng, a_shape, "a")
    k = 40
    b_shape = (1, 3, 16, k) if adj_y else (1, 3, k, 16)
    s_b = float(rng.uniform(1e-4, 1e-2))
    if case == 3:
        b = rng.integers(-32768, 32768, b_shape).astype(np.int16)   # a constant operand
    else:
        b = w.input("b", b_shape, "int16", scale=s_b, zero_point=0)
    s_out = float(np.float32(x.scale[0]) * s_b * rng.uniform(20, 400))
    y = w.batch_matmul(x, b, adj_x=adj_x, adj_y=adj_y, b_scale=s_b, b_zp=0, out_scale=s_out, out_zp=0)
    w.output(y)
    data = w.finish()
    mod, _ = from_tflite(data)
    assert "int64" in mod.astext() and "qnn.batch_matmul" in mod.astext()
    check(data, rng)


@pytest.mark.parametrize("per_channel", [False, True])
def test_batch_matmul_int16_times_int8(per_channel):
    """int16 × int8 (per-tensor) is the int16 kernel with an int8 operand: bit-exact. Per-channel int8 weights
    (LiteRT's static_w8_a16 einsum test models) make LiteRT's kernel return zeros (it reads the per-tensor scale,
    0 there): nothing to reproduce, so the importer refuses it and says why."""
    w = TFLiteWriter()
    x = w.input("x", (4, 32), "int16", scale=3e-5, zero_point=0)
    wt = np.random.default_rng(0).integers(-127, 128, (32, 8)).astype(np.int8)
    scale = np.linspace(1e-4, 3e-4, 8) if per_channel else 2e-4
    ref = w.const("w", wt, "int8", scale=scale, zero_point=0, quantized_dimension=1) if per_channel else \
        w.const("w", wt, "int8", scale=scale, zero_point=0)
    y = w.tensor("y", (4, 8), "int16", scale=6e-6, zero_point=0)
    w.op("BATCH_MATMUL", [x, ref], [y], "BatchMatMulOptions", dict(adj_x=False, adj_y=False))
    w.output(y)
    data = w.finish()
    if not per_channel:
        check(data, _rng("bmm16x8"))
        return
    xs = np.random.default_rng(1).integers(-3000, 3000, (4, 32)).astype(np.int16)
    assert not np.any(litert_run(data, [xs])[0][0])
    with pytest.raises(ModelError, match="returns zeros"):
        from_tflite(data)
