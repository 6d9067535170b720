"""Elementwise ADD/MUL with a broadcast operand (squeeze-and-excitation, per-channel and scalar constants).

The NPU broadcasts its second operand (Ethos-U's IFM2 broadcast flags): the PPU command carries per-axis flags
and reads a tile that is one element deep along each broadcast axis; the compiler puts the broadcast operand
second whatever its position in the graph. Oracles: byoc.evaluate (random composites, every preset), a numpy
formula of TFLite's MUL written here, and LiteRT's reference kernels for a writer-built SE block.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import byoc
import npu_sim
from byoc import relay
from byoc.errors import NPUError
from npu_sim.isa import BCAST_C, BCAST_H, BCAST_W, Load, Ppu, PpuOp
from npu_sim.program import Program

from npu_builders import (_s, _z, clip_composite, composite, litert_outputs, npu_composites, partition,
                          simulate_on_presets)


def _data(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype)


def _zp(rng, dtype):
    return int(rng.integers(0, 256)) if dtype == "uint8" else int(rng.integers(-128, 128))


def broadcast_fn(kind, full, small, *, dtype="int8", swap=False, const=None, scales=(0.05, 0.07, 0.1),
                 zps=(0, 0, 0), clip=None):
    """A partition holding one npu.qnn_<kind> of a ``full``-shaped and a ``small``-shaped operand (``small``
    first when ``swap``); ``const`` makes the small operand a constant (bound inside the composite's call)."""
    shapes = (small, full) if swap else (full, small)
    a = relay.var("a", shape=shapes[0], dtype=dtype)
    b = relay.var("b", shape=shapes[1], dtype=dtype)
    op = relay.qnn.op.add if kind == "add" else relay.qnn.op.mul
    y = op(a, b, _s(scales[0]), _z(zps[0]), _s(scales[1]), _z(zps[1]), _s(scales[2]), _z(zps[2]))
    if clip is not None:
        y = relay.clip(y, clip[0], clip[1])
    comp = composite(f"npu.qnn_{kind}", [a, b], y)
    params = [relay.var("p0", shape=full, dtype=dtype)]
    if const is None:
        params.append(relay.var("p1", shape=small, dtype=dtype))
        args = (params[1], params[0]) if swap else (params[0], params[1])
    else:
        args = (relay.const(const), params[0]) if swap else (params[0], relay.const(const))
    return partition(params, comp(*args))


# Small-operand shapes for a (1, H, W, C) output: per-channel vectors, scalars, and single-axis broadcasts.
def _small_shape(rng, h, w, c):
    return [(1, 1, 1, c), (c,), (1, 1, 1, 1), (1,), (), (1, 1, w, c), (1, h, 1, c), (1, h, w, 1),
            (1, h, 1, 1)][int(rng.integers(0, 9))]


def make_case(seed):
    rng = np.random.default_rng(seed)
    dtype = "uint8" if rng.random() < 0.3 else "int8"
    kind = "add" if rng.random() < 0.5 else "mul"
    h, w, c = (int(rng.integers(1, n)) for n in (12, 12, 48))
    full, small = (1, h, w, c), _small_shape(rng, h, w, c)
    lo, hi = (0, 255) if dtype == "uint8" else (-128, 127)
    clip = None
    if rng.random() < 0.5:
        a = int(rng.integers(lo, hi - 10))
        clip = (a, int(rng.integers(a, hi + 1)))
    const = _data(rng, small, dtype) if rng.random() < 0.3 else None
    fn = broadcast_fn(kind, full, small, dtype=dtype, swap=bool(rng.random() < 0.5), const=const,
                      scales=tuple(float(2.0 ** rng.uniform(-8, -2)) for _ in range(3)),
                      zps=tuple(_zp(rng, dtype) for _ in range(3)), clip=clip)
    inputs = {"p0": _data(rng, full, dtype)}
    if const is None:
        inputs["p1"] = _data(rng, small, dtype)
    return fn, inputs


@pytest.mark.parametrize("chunk", range(12))
def test_random_broadcast_composites_bit_exact(chunk):
    for seed in range(chunk * 12, (chunk + 1) * 12):
        simulate_on_presets(*make_case(seed))


@pytest.mark.parametrize("kind,dtype,swap,small", [("mul", "int8", False, (1, 1, 1, 96)),
                                                   ("add", "uint8", True, (1, 1, 1, 96)),
                                                   ("mul", "uint8", True, (1, 1, 1, 1)),
                                                   ("add", "int8", False, (96,))])
def test_tiled_large_shapes_bit_exact(kind, dtype, swap, small):
    """Many spatial tiles and several channel slices: each slice reads its own part of the vector."""
    rng = np.random.default_rng(5)
    full = (1, 40, 37, 96)
    fn = broadcast_fn(kind, full, small, dtype=dtype, swap=swap, scales=(0.03, 0.011, 0.02),
                      zps=(_zp(rng, dtype), _zp(rng, dtype), _zp(rng, dtype)), clip=(20, 250) if dtype == "uint8"
                      else (-90, 127))
    runs = simulate_on_presets(fn, {"p0": _data(rng, full, dtype), "p1": _data(rng, small, dtype)})
    tiles = {p: prog.layers[0].tile for p, (prog, _, _) in runs.items()}
    assert any(t[2] < 96 for t in tiles.values()) and all(t[0] < 40 for t in tiles.values()), tiles


def test_mul_matches_independent_numpy_oracle():
    """TFLite MUL (quant-semantics: (a−za)(b−zb)·MBQM(s_a·s_b/s_out) + zo, clamp) computed here in numpy."""
    from byoc.quant.fixedpoint import quantize_multiplier
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, size=(1, 9, 13, 24)).astype(np.int8)
    se = rng.integers(-128, 128, size=(1, 1, 1, 24)).astype(np.int8)
    sa, sb, so, za, zb, zo = 0.04, 1 / 256, 0.03, 3, -128, -7
    fn = broadcast_fn("mul", x.shape, se.shape, swap=True, scales=(sb, sa, so), zps=(zb, za, zo), clip=(-100, 110))
    (out,), _ = npu_sim.simulate(npu_sim.compile(fn, "ethos-u55-256-like"), {"p0": x, "p1": se})
    m, shift = quantize_multiplier(float(np.float32(np.float32(sa) * np.float32(sb)) / np.float32(so)))
    want = np.empty(x.shape, np.int64)
    for idx in np.ndindex(*x.shape):
        prod = (int(x[idx]) - za) * (int(se[0, 0, 0, idx[3]]) - zb)
        v = prod * (1 << max(shift, 0)) * m
        hi = (v + (1 << 30)) >> 31                       # SRDHM, ties up
        right = max(-shift, 0)
        if right:
            mask = (1 << right) - 1
            hi = (hi >> right) + (1 if (hi & mask) > (mask >> 1) + (1 if hi < 0 else 0) else 0)
        want[idx] = min(max(hi + zo, -100), 110)
    assert np.array_equal(out, want)


def _src1_loads(prog, region_name):
    rid = next(r.id for r in prog.regions if r.name == region_name)
    r = prog.regions[rid]
    return [c for c in prog.commands if isinstance(c, Load) and c.area == r.area and c.base == r.base]


def test_broadcast_operand_is_read_once_per_tile():
    """Bytes and cycles: the vector is loaded as one (1, 1, bc) window per tile, never H·W times; the PPU still
    produces every output element (Vela's elementwise cost: 0.75 cycles per element for ADD on U55-256)."""
    full = (1, 56, 56, 64)
    n = 56 * 56 * 64
    bc_prog = npu_sim.compile(broadcast_fn("add", full, (1, 1, 1, 64)), "ethos-u55-256-like")
    eq_prog = npu_sim.compile(broadcast_fn("add", full, full), "ethos-u55-256-like")
    loads = _src1_loads(bc_prog, "p1")
    ppus = [c for c in bc_prog.commands if isinstance(c, Ppu)]
    assert len(loads) == len(ppus) > 1
    assert all((ld.h, ld.w, ld.y0, ld.x0, ld.img_h, ld.img_w, ld.img_c) == (1, 1, 0, 0, 1, 1, 64) for ld in loads)
    assert all(p.src1_bcast == BCAST_H | BCAST_W and p.op == PpuOp.ADD for p in ppus)
    bh, bw, _ = bc_prog.layers[0].tile
    n_spatial = -(-56 // bh) * -(-56 // bw)
    assert sum(ld.c for ld in loads) == n_spatial * 64     # every spatial tile reads each channel once
    rng = np.random.default_rng(2)
    x = _data(rng, full, "int8")
    _, bc_stats = npu_sim.simulate(bc_prog, {"p0": x, "p1": _data(rng, (1, 1, 1, 64), "int8")})
    _, eq_stats = npu_sim.simulate(eq_prog, {"p0": x, "p1": x})
    assert bc_stats.per_layer[0].bytes_by_area == {"sram": 2 * n + n_spatial * 64}
    assert eq_stats.per_layer[0].bytes_by_area == {"sram": 3 * n}
    assert dict(bc_prog.layers[0].bytes_by_area) == {"sram": 2 * n + 64}   # compulsory: the vector once
    assert bc_stats.per_layer[0].engine_busy["ppu"] >= 0.75 * n
    assert bc_stats.total_cycles <= eq_stats.total_cycles


def test_constant_vector_is_read_from_the_weight_area():
    fn = broadcast_fn("mul", (1, 20, 20, 32), (1, 1, 1, 32), const=np.arange(-16, 16, dtype=np.int8).reshape(1, 1, 1, 32))
    prog = npu_sim.compile(fn, "ethos-u55-256-like")
    (const,) = [r for r in prog.regions if r.kind == "constant"]
    assert prog.config.memory_areas[const.area].name == "flash" and const.size == 32
    loads = [c for c in prog.commands if isinstance(c, Load) and c.area == const.area]
    _, st = npu_sim.simulate(prog, {"p0": np.zeros((1, 20, 20, 32), np.int8)})
    assert st.per_layer[0].bytes_by_area["flash"] == sum(ld.c for ld in loads) <= len(loads) * 32


def _with_ppu_flags(prog, flags):
    """``prog`` with its first PPU command's src1 broadcast flags replaced."""
    i = next(k for k, c in enumerate(prog.commands) if isinstance(c, Ppu))
    cmds = list(prog.commands)
    cmds[i] = dataclasses.replace(cmds[i], src1_bcast=flags)
    return Program(prog.config, prog.regions, prog.constants, prog.inputs, prog.outputs, prog.layers, tuple(cmds),
                   prog.name)


def test_program_round_trip_disassembly_and_validation():
    fn = broadcast_fn("mul", (1, 6, 5, 20), (), const=np.array(-7, np.int8), swap=True)
    prog = npu_sim.compile(fn, "ethos-u55-256-like")
    again = Program.from_bytes(prog.to_bytes())       # decodes, validates tokens and every hazard
    assert again.commands == prog.commands
    assert "[1x1x1 bcast=hwc]" in prog.disassemble()
    with pytest.raises(NPUError) as e:
        Program.from_bytes(_with_ppu_flags(prog, BCAST_H | 8).to_bytes())
    assert "unknown src1 broadcast flags 0x9" in "\n".join(e.value.notes)


def test_flags_on_an_op_without_src1_are_refused():
    ps, body = clip_composite((1, 4, 4, 8), -10, 10)
    prog = npu_sim.compile(partition(ps, body), "ethos-u55-256-like")
    with pytest.raises(NPUError) as e:
        _with_ppu_flags(prog, BCAST_C).validate()
    assert "broadcast flags on a PPU op without src1" in "\n".join(e.value.notes)


def test_broadcasting_both_operands_is_refused_by_the_compiler():
    a = relay.var("a", shape=(1, 4, 1, 8), dtype="int8")
    b = relay.var("b", shape=(1, 1, 5, 8), dtype="int8")
    y = relay.qnn.op.add(a, b, _s(0.05), _z(0), _s(0.05), _z(0), _s(0.1), _z(0))
    pa, pb = relay.var("p0", shape=(1, 4, 1, 8), dtype="int8"), relay.var("p1", shape=(1, 1, 5, 8), dtype="int8")
    fn = partition([pa, pb], composite("npu.qnn_add", [a, b], y)(pa, pb))
    with pytest.raises(NPUError) as e:
        npu_sim.compile(fn)
    text = "\n".join([e.value.message, *e.value.notes])
    assert "neither operand has the output's shape" in text and "(1, 4, 1, 8)" in text


# -- end to end: a TFLite squeeze-and-excitation block ------------------------------------------------------

def _se_model(dtype="int8", swap=False, const_add=False):
    from byoc.testing import TFLiteWriter
    rng = np.random.default_rng(3)
    zp_in = -5 if dtype == "int8" else 120
    w = TFLiteWriter()
    x = w.input("x", (1, 12, 10, 24), dtype, scale=0.05, zero_point=zp_in)
    w_zp = 0 if dtype == "int8" else 128  # TFLite's uint8 convolutions take uint8 weights with a zero point

    def wt(shape):
        return rng.integers(-127, 128, shape).astype(np.int8) if dtype == "int8" else \
            rng.integers(0, 256, shape).astype(np.uint8)

    feat = w.conv2d(x, wt((24, 3, 3, 24)), rng.integers(-500, 500, 24), weight_scale=0.004, weight_zp=w_zp,
                    activation="RELU6", out_scale=0.03, out_zp=-128 if dtype == "int8" else 0)
    sq = w.mean(feat, (1, 2), keep_dims=True, out_scale=0.02, out_zp=-100 if dtype == "int8" else 30)
    ex = w.conv2d(sq, wt((24, 1, 1, 24)), rng.integers(-300, 300, 24), weight_scale=0.01, weight_zp=w_zp,
                  out_scale=0.1, out_zp=3 if dtype == "int8" else 128)
    gate = w.logistic(ex)
    y = w.mul(gate, feat, out_scale=0.025, out_zp=-120 if dtype == "int8" else 5) if swap else \
        w.mul(feat, gate, out_scale=0.025, out_zp=-120 if dtype == "int8" else 5)
    if const_add:
        info = np.iinfo(dtype)
        bias = w.const("bias", rng.integers(info.min, info.max + 1, (1, 1, 1, 24)).astype(dtype), dtype, 0.04,
                       7 if dtype == "int8" else 140)
        y = w.add(y, bias, activation="RELU", out_scale=0.05, out_zp=-128 if dtype == "int8" else 0)
    w.output(y)
    return w.finish(), rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, (1, 12, 10, 24)).astype(dtype)


@pytest.mark.parametrize("dtype,swap,const_add", [("int8", False, False), ("int8", True, True),
                                                  ("uint8", False, True)])
def test_se_block_end_to_end_matches_litert(dtype, swap, const_add):
    from byoc.frontend import from_tflite
    model, x = _se_model(dtype, swap, const_add)
    mod, params = from_tflite(model)
    pm = byoc.partition_for("npu", mod, params)
    comps = npu_composites(pm)
    assert "npu.qnn_mul" in comps and ("npu.qnn_add" in comps) == const_add, comps
    exe = byoc.build(pm, target="npu,llvm", npu_config="ethos-u55-256-like")
    (got,) = exe.run({mod["main"].params[0].name_hint: x})
    want = litert_outputs(model, x)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
