"""Bit-exactness: the simulator's outputs equal byoc.evaluate of the same partitioned function, every bit.

Random single-composite cases (shapes, strides, padding, dilations, zero points, per-channel scales, depth
multipliers, clips, dtypes) are drawn from fixed seeds; each case runs under every preset, whose different local
SRAM sizes and MAC geometries give different tilings of the same layer.
"""
from __future__ import annotations

import numpy as np
import pytest

import byoc
import npu_sim

from npu_builders import (binary_composite, clip_composite, concat_composite, conv_composite, dense_composite,
                       lut_composite, mean_composite, partition, pool_composite, requant_composite, requant_scales)

PRESETS = tuple(npu_sim.PRESETS)
N_CASES = 216          # × 3 presets = 648 simulated cases
CHUNK = 12


def _dt(rng):
    return "uint8" if rng.random() < 0.15 else "int8"


def _zp(rng, dtype):
    return int(rng.integers(0, 256)) if dtype == "uint8" else int(rng.integers(-128, 128))


def _data(rng, shape, dtype):
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    return rng.integers(lo, hi, size=shape).astype(dtype)


def _clip(rng, dtype):
    if rng.random() < 0.5:
        return None
    lo, hi = (0, 255) if dtype == "uint8" else (-128, 127)
    a = int(rng.integers(lo, hi - 10))
    return (a, int(rng.integers(a, hi + 1)))


def _conv_case(rng, depthwise: bool):
    dtype = _dt(rng)
    kh, kw = (int(rng.choice([1, 2, 3, 5])) for _ in range(2))
    sh, sw = (int(rng.integers(1, 4)) for _ in range(2))
    dh, dw = (int(rng.integers(1, 3)) if rng.random() < 0.3 else 1 for _ in range(2))
    pad = tuple(int(rng.integers(0, 3)) for _ in range(4))
    eff_h, eff_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    h = int(rng.integers(max(1, eff_h - pad[0] - pad[2]), 14))
    w = int(rng.integers(max(1, eff_w - pad[1] - pad[3]), 14))
    cin = int(rng.integers(1, 13 if depthwise else 21))
    if depthwise:
        dm = int(rng.choice([1, 1, 2, 3]))
        cout = cin * dm
        wt = rng.integers(-128, 128, size=(kh, kw, 1, cout)).astype(np.int8)
    else:
        cout = int(rng.integers(1, 25))
        wt = rng.integers(-128, 128, size=(cout, kh, kw, cin)).astype(np.int8)
    zp_in = _zp(rng, dtype)
    use_pad_op = rng.random() < 0.5
    kwargs = dict(depthwise=depthwise, strides=(sh, sw), dilation=(dh, dw), zp_in=zp_in,
                  zp_w=int(rng.integers(-3, 4)) if rng.random() < 0.2 else 0, s_in=float(2.0 ** rng.uniform(-8, -3)),
                  s_w=requant_scales(rng, cout), s_out=float(2.0 ** rng.uniform(-8, -2)), zp_out=_zp(rng, dtype),
                  bias=rng.integers(-20000, 20000, size=cout), clip=_clip(rng, dtype), dtype=dtype)
    if use_pad_op:
        kwargs["pad_op"] = pad
    else:
        kwargs["padding"] = pad
    p, body = conv_composite((1, h, w, cin), wt, **kwargs)
    return [p], body, {"p0": _data(rng, (1, h, w, cin), dtype)}


def _dense_case(rng):
    dtype = _dt(rng)
    b, k, units = int(rng.integers(1, 5)), int(rng.integers(1, 70)), int(rng.integers(1, 41))
    wt = rng.integers(-128, 128, size=(units, k)).astype(np.int8)
    p, body = dense_composite((b, k), wt, zp_in=_zp(rng, dtype), s_w=requant_scales(rng, units),
                              s_out=float(2.0 ** rng.uniform(-6, -1)), zp_out=_zp(rng, dtype),
                              bias=rng.integers(-5000, 5000, size=units), clip=_clip(rng, dtype), dtype=dtype)
    return [p], body, {"p0": _data(rng, (b, k), dtype)}


def _shape(rng):
    return (1, int(rng.integers(1, 12)), int(rng.integers(1, 12)), int(rng.integers(1, 40)))


def _binary_case(rng, kind):
    dtype = _dt(rng)
    shape = _shape(rng)
    sc = [float(2.0 ** rng.uniform(-8, -2)) for _ in range(3)]
    ps, body = binary_composite(kind, shape, s_a=sc[0], zp_a=_zp(rng, dtype), s_b=sc[1], zp_b=_zp(rng, dtype),
                                s_out=sc[2], zp_out=_zp(rng, dtype), clip=_clip(rng, dtype), dtype=dtype)
    return ps, body, {"p0": _data(rng, shape, dtype), "p1": _data(rng, shape, dtype)}


def _pool_case(rng, kind):
    dtype = _dt(rng)
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    pad = tuple(int(rng.integers(0, k)) for k in (kh, kw, kh, kw))
    shape = (1, int(rng.integers(kh, 12)), int(rng.integers(kw, 12)), int(rng.integers(1, 33)))
    ps, body = pool_composite(kind, shape, (kh, kw), (int(rng.integers(1, 3)), int(rng.integers(1, 3))), pad,
                              clip=_clip(rng, dtype), count_include_pad=bool(kind == "avg" and rng.random() < 0.2),
                              dtype=dtype)
    return ps, body, {"p0": _data(rng, shape, dtype)}


def _mean_case(rng):
    dtype = _dt(rng)
    shape = (1, int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 48)))
    ps, body = mean_composite(shape, s_in=float(2.0 ** rng.uniform(-7, -3)), zp_in=_zp(rng, dtype),
                              s_out=float(2.0 ** rng.uniform(-7, -3)), zp_out=_zp(rng, dtype), dtype=dtype)
    return ps, body, {"p0": _data(rng, shape, dtype)}


def _lut_case(rng):
    dtype = _dt(rng)
    shape = _shape(rng)
    kind = "sigmoid" if rng.random() < 0.5 else "tanh"
    ps, body = lut_composite(kind, shape, s_in=float(2.0 ** rng.uniform(-6, -2)), zp_in=_zp(rng, dtype),
                             dtype=dtype, rounding="TFLITE" if rng.random() < 0.7 else "TFLM")
    return ps, body, {"p0": _data(rng, shape, dtype)}


def _requant_case(rng):
    dtype = _dt(rng)
    shape = _shape(rng)
    per_channel = rng.random() < 0.5
    s_in = 2.0 ** rng.uniform(-6, -2, size=shape[3] if per_channel else 1)
    ps, body = requant_composite(shape, s_in, _zp(rng, dtype), float(2.0 ** rng.uniform(-6, -2)),
                                 _zp(rng, dtype), clip=_clip(rng, dtype), dtype=dtype, out_dtype=dtype,
                                 rounding=str(rng.choice(["TFLITE", "TFLITE", "UPWARD", "TONEAREST"])))
    return ps, body, {"p0": _data(rng, shape, dtype)}


def _clip_case(rng):
    shape = _shape(rng)
    a = int(rng.integers(-128, 100))
    ps, body = clip_composite(shape, a, int(rng.integers(a, 128)))
    return ps, body, {"p0": _data(rng, shape, "int8")}


def _concat_case(rng):
    h, w = int(rng.integers(1, 10)), int(rng.integers(1, 10))
    shapes = [(1, h, w, int(rng.integers(1, 20))) for _ in range(int(rng.integers(2, 4)))]
    ps, body = concat_composite(shapes, zp=int(rng.integers(-5, 5)))
    return ps, body, {f"p{i}": _data(rng, s, "int8") for i, s in enumerate(shapes)}


_MAKERS = [
    ("conv", lambda r: _conv_case(r, False), 6), ("depthwise", lambda r: _conv_case(r, True), 4),
    ("dense", _dense_case, 2), ("add", lambda r: _binary_case(r, "add"), 1),
    ("mul", lambda r: _binary_case(r, "mul"), 1), ("max_pool", lambda r: _pool_case(r, "max"), 1),
    ("avg_pool", lambda r: _pool_case(r, "avg"), 1), ("mean", _mean_case, 1), ("lut", _lut_case, 1),
    ("requant", _requant_case, 1), ("clip", _clip_case, 0.5), ("concat", _concat_case, 0.5),
]


def make_case(seed: int):
    rng = np.random.default_rng(seed)
    weights = np.array([m[2] for m in _MAKERS], float)
    name, maker, _ = _MAKERS[int(rng.choice(len(_MAKERS), p=weights / weights.sum()))]
    params, body, inputs = maker(rng)
    return name, partition(params, body), inputs


def check_case(seed: int) -> None:
    name, fn, inputs = make_case(seed)
    ref = byoc.evaluate(fn, inputs)
    for preset in PRESETS:
        prog = npu_sim.compile(fn, preset)
        outs, stats = npu_sim.simulate(prog, inputs)
        assert len(outs) == len(ref)
        for o, r in zip(outs, ref):
            assert o.dtype == r.dtype and o.shape == r.shape, (seed, name, preset)
            if not np.array_equal(o, r):
                bad = int(np.sum(o != r))
                raise AssertionError(f"seed {seed} ({name}) under {preset}: {bad}/{r.size} outputs differ; "
                                     f"tile {prog.layers[0].tile}\n{fn.astext()}")
        assert stats.total_cycles > 0
        for layer in stats.per_layer:  # timing invariant: never faster than the physical roofline
            assert layer.cycles >= layer.roofline_cycles > 0, (seed, name, preset, layer)


@pytest.mark.parametrize("chunk", range(N_CASES // CHUNK))
def test_random_single_composites_bit_exact(chunk):
    for seed in range(chunk * CHUNK, (chunk + 1) * CHUNK):
        check_case(seed)


def test_case_mix_covers_every_composite():
    names = {make_case(s)[0] for s in range(N_CASES)}
    assert names == {m[0] for m in _MAKERS}


def _oracle_conv(x, w, bias, s_in, s_w, s_out, zp_in, zp_out, clip):
    """A 3x3 pad-1 conv computed here from quant-semantics §3.1 (not via byoc): per-channel MBQM, zero points,
    clamp."""
    from byoc.quant.fixedpoint import quantize_multiplier
    _, h, wd, _ = x.shape
    xp = np.pad(x.astype(np.int64) - zp_in, ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.empty((h, wd, len(w)), np.int64)
    for oc in range(len(w)):
        real = float(np.float64(s_in) * np.float64(s_w[oc])) / float(s_out)
        m, sh = quantize_multiplier(real)
        for oy in range(h):
            for ox in range(wd):
                acc = int(np.sum(xp[0, oy:oy + 3, ox:ox + 3, :] * w[oc].astype(np.int64))) + int(bias[oc])
                left, right = max(sh, 0), max(-sh, 0)
                v = acc * (1 << left)
                prod = v * m
                hi = (prod + (1 << 30)) >> 31           # SRDHM, ties up
                if right:
                    mask = (1 << right) - 1
                    rem, thr = hi & mask, (mask >> 1) + (1 if hi < 0 else 0)
                    hi = (hi >> right) + (1 if rem > thr else 0)
                want[oy, ox, oc] = min(max(hi + zp_out, clip[0]), clip[1])
    return want


def test_conv_matches_independent_numpy_oracle():
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, size=(1, 6, 7, 5)).astype(np.int8)
    w = rng.integers(-128, 128, size=(4, 3, 3, 5)).astype(np.int8)
    bias = rng.integers(-3000, 3000, size=4).astype(np.int32)
    s_in, s_out, zp_in, zp_out = np.float32(0.04), np.float32(0.15), 5, -3
    s_w = requant_scales(rng, 4)
    p, body = conv_composite(x.shape, w, padding=(1, 1, 1, 1), zp_in=zp_in, s_in=float(s_in), s_w=s_w,
                             s_out=float(s_out), zp_out=zp_out, bias=bias, clip=(-100, 90))
    prog = npu_sim.compile(partition([p], body), "ethos-u55-256-like")
    (out,), _ = npu_sim.simulate(prog, {"p0": x})
    assert np.array_equal(out[0], _oracle_conv(x, w, bias, s_in, s_w, s_out, zp_in, zp_out, (-100, 90)))


def test_requantize_without_right_shift_on_some_channels_matches_the_oracle():
    # multipliers in [0.5, 1) have no right shift (RDBPOT by 2^0 never rounds): channels 0 and 1 here, next to
    # channels with shifts 1..8, on small operands so the outputs land inside the clamp, ties included
    rng = np.random.default_rng(11)
    x = rng.integers(-4, 5, size=(1, 5, 6, 3)).astype(np.int8)
    w = rng.integers(-3, 4, size=(5, 3, 3, 3)).astype(np.int8)
    bias = rng.integers(-40, 40, size=5).astype(np.int32)
    s_in, s_out, zp_in, zp_out = np.float32(0.04), np.float32(0.15), 1, 2
    s_w = np.array([2.0, 3.5, 0.01, 0.5, 1.0], np.float32)
    p, body = conv_composite(x.shape, w, padding=(1, 1, 1, 1), zp_in=zp_in, s_in=float(s_in), s_w=s_w,
                             s_out=float(s_out), zp_out=zp_out, bias=bias)
    prog = npu_sim.compile(partition([p], body), "ethos-u55-256-like")
    (out,), _ = npu_sim.simulate(prog, {"p0": x})
    want = _oracle_conv(x, w, bias, s_in, s_w, s_out, zp_in, zp_out, (-128, 127))
    assert np.abs(want).max() < 127 and len(np.unique(want[..., 0])) > 5
    assert np.array_equal(out[0], want)


def test_in_place_rescale_equals_srdhm_then_rdbpot():
    # the ADD path's in-place rescale (no saturation test, RDBPOT as nudge + shift) against byoc's fixed point,
    # over full int32 inputs, every shift, and INT32_MIN (the saturating case)
    from byoc.quant.fixedpoint import rdbpot, srdhm
    from npu_sim.execute import _scaled
    rng = np.random.default_rng(5)
    for t in range(600):
        x = rng.integers(-(1 << 31), 1 << 31, 200) if t % 2 else rng.integers(-300 << 20, 300 << 20, 200)
        m = int(rng.integers(-(1 << 31), 1 << 31)) if t % 5 == 0 else int(rng.integers(1 << 30, 1 << 31))
        if t % 50 == 0:
            m, x[:3] = -(1 << 31), -(1 << 31)
        e = t % 32
        assert np.array_equal(_scaled(x.copy(), m, e), rdbpot(srdhm(x, m), e)), (t, m, e)
