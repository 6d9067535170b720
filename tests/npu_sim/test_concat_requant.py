"""Concatenation whose inputs have other quantization than the output (inception/detection heads).

The NPU writes each input as one block of the output: a PPU COPY when the input has the output's (scale, zero
point), else a PPU LUT whose 256-entry table is qnn.concatenate's own rescale of that input (and the fused
clip), stored straight into its slice. Oracles: byoc.evaluate (every preset, every tiling), LiteRT's float32
ConcatenationWithScaling written here in numpy, and LiteRT BUILTIN_REF on writer-built TFLite models.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import byoc
import npu_sim
from byoc import relay
from byoc.errors import NPUError
from npu_sim.isa import Load, Ppu, PpuOp, Store, TileKind

from npu_builders import composite, litert_outputs, npu_composites, partition, simulate_on_presets

PRESETS = tuple(npu_sim.PRESETS)


def _data(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype)


def concat_fn(shapes, axis, quant, out_quant, *, dtype="int8", clip=None):
    """A partition holding one npu.qnn_concatenate of ``shapes`` with per-input (scale, zp) ``quant``."""
    xs = [relay.var(f"x{i}", shape=s, dtype=dtype) for i, s in enumerate(shapes)]
    y = relay.qnn.op.concatenate(xs, [relay.const(np.float32(s)) for s, _ in quant],
                                 [relay.const(z, "int32") for _, z in quant], relay.const(np.float32(out_quant[0])),
                                 relay.const(out_quant[1], "int32"), axis=axis)
    if clip is not None:
        y = relay.clip(y, clip[0], clip[1])
    ps = [relay.var(f"p{i}", shape=s, dtype=dtype) for i, s in enumerate(shapes)]
    return partition(ps, composite("npu.qnn_concatenate", xs, y)(*ps))


def make_case(seed):
    """2-4 inputs on a random axis (4-D channels/width/height/batch, 3-D, 2-D), each with the output's
    quantization or its own, int8 or uint8, with or without a fused clip."""
    rng = np.random.default_rng(seed)
    dtype = "uint8" if rng.random() < 0.4 else "int8"
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    rank = int(rng.choice([4, 4, 4, 3, 2]))
    base = [int(rng.integers(1, 7)) for _ in range(rank)]
    if rank == 4:
        base[0] = 1 if rng.random() < 0.7 else 2
    axis = int(rng.integers(0, rank))
    if rank == 4 and axis == 1:
        base[0] = 1  # height with batch > 1 is refused (tested below)
    n = int(rng.integers(2, 5))
    shapes = []
    for _ in range(n):
        s = list(base)
        s[axis] = int(rng.integers(1, 9))
        shapes.append(tuple(s))
    out_q = (float(2.0 ** rng.uniform(-7, -2)), int(rng.integers(lo, hi)))
    quant = [out_q if rng.random() < 0.35 else (float(2.0 ** rng.uniform(-8, -1)), int(rng.integers(lo, hi)))
             for _ in range(n)]
    quant[int(rng.integers(0, n))] = (float(2.0 ** rng.uniform(-8, -1)), int(rng.integers(lo, hi)))  # >= 1 LUT
    clip = None
    if rng.random() < 0.4:
        a = int(rng.integers(lo, hi - 20))
        clip = (a, int(rng.integers(a + 1, hi)))
    axis_arg = axis - rank if rng.random() < 0.3 else axis
    fn = concat_fn(shapes, axis_arg, quant, out_q, dtype=dtype, clip=clip)
    inputs = {f"p{i}": _data(rng, s, dtype) for i, s in enumerate(shapes)}
    return fn, inputs, quant, out_q


@pytest.mark.parametrize("chunk", range(4))
def test_random_concat_with_requant_bit_exact(chunk):
    for seed in range(chunk * 20, chunk * 20 + 20):
        fn, inputs, quant, out_q = make_case(seed)
        runs = simulate_on_presets(fn, inputs)
        prog = runs["ethos-u55-256-like"][0]
        # one layer per input, no intermediate tensor: a LUT exactly where the parameters differ
        kinds = [layer.kind for layer in prog.layers]
        want = ["copy" if (np.float32(s), z) == (np.float32(out_q[0]), out_q[1]) else "lut" for s, z in quant]
        assert kinds == want, (seed, kinds, want)
        assert not [r for r in prog.regions if r.kind == "activation"], seed


def _litert_rescale(q, s_in, zp_in, s_out, zp_out, lo, hi):
    """LiteRT reference ConcatenationWithScaling (quant-semantics §3.14), written independently: float32 scale
    s_in·(1/s_out) and bias −zp_in·scale, value rounded half away from zero, plus zp_out, clamped."""
    f32 = np.float32
    scale = f32(f32(s_in) * f32(f32(1.0) / f32(s_out)))
    bias = f32(f32(-zp_in) * scale)
    v = (q.astype(f32) * scale).astype(f32) + bias
    v = v.astype(np.float64)
    r = np.sign(v) * np.floor(np.abs(v) + 0.5)
    return np.clip(r.astype(np.int64) + zp_out, lo, hi)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_matches_independent_numpy_oracle(dtype):
    rng = np.random.default_rng(11)
    info = np.iinfo(dtype)
    shapes = [(1, 8, 8, 6), (1, 8, 8, 9), (1, 8, 8, 4)]
    out_q = (0.043, 128 if dtype == "uint8" else -3)
    quant = [(0.0117, 140 if dtype == "uint8" else 12), out_q, (0.31, 3 if dtype == "uint8" else -100)]
    clip = (int(info.min) + 7, int(info.max) - 30)
    fn = concat_fn(shapes, 3, quant, out_q, dtype=dtype, clip=clip)
    xs = [_data(rng, s, dtype) for s in shapes]
    # every input value appears, so the whole table is checked
    for i in (0, 2):
        xs[i].reshape(-1)[:256] = np.arange(int(info.min), int(info.max) + 1).astype(dtype)
    want = np.concatenate([_litert_rescale(x, s, z, *out_q, *clip) for x, (s, z) in zip(xs, quant)], axis=3)
    for preset in PRESETS:
        (got,), _ = npu_sim.simulate(npu_sim.compile(fn, preset), {f"p{i}": x for i, x in enumerate(xs)})
        np.testing.assert_array_equal(got.astype(np.int64), want, err_msg=preset)


@pytest.mark.parametrize("axis,shapes", [(3, [(1, 40, 48, 96), (1, 40, 48, 64)]),
                                         (2, [(1, 40, 30, 80), (1, 40, 50, 80), (1, 40, 8, 80)]),
                                         (1, [(1, 33, 40, 72), (1, 31, 40, 72)])])
def test_tiled_large_shapes_bit_exact(axis, shapes):
    rng = np.random.default_rng(axis)
    n = len(shapes)
    out_q = (0.05, 4)
    quant = [(0.02, -7), out_q, (0.11, 20)][:n]
    fn = concat_fn(shapes, axis, quant, out_q, clip=(-100, 120))
    runs = simulate_on_presets(fn, {f"p{i}": _data(rng, s, "int8") for i, s in enumerate(shapes)})
    tiled = [(p, layer) for p, _, _ in runs.values() for layer in p.layers
             if layer.tile[0] * layer.tile[1] * layer.tile[2] < layer.ppu_elements]
    assert any(layer.kind == "lut" for _, layer in tiled), "no LUT layer was tiled"


def test_lut_layer_commands_table_and_timing():
    """Each LUT layer loads its 256-entry table once, runs LUT PPU commands over its input's tiles and stores
    them at its offset in the output; its PPU time is the config's LUT cost per element, a COPY's the copy
    cost (computed here from the config). (Ethos-U presets run lone copies and tables as 1x1 average pools on
    the MAC engine instead, as Vela does: test_vela_mechanisms.)"""
    shapes = [(1, 6, 10, 24), (1, 6, 10, 40)]
    out_q = (0.05, 0)
    fn = concat_fn(shapes, 3, [(0.02, 5), out_q], out_q)
    cfg = npu_sim.preset("ethos-n78-like")
    prog = npu_sim.compile(fn, cfg)
    _, st = npu_sim.simulate(prog, {"p0": np.zeros(shapes[0], "int8"), "p1": np.zeros(shapes[1], "int8")})
    out_region = prog.outputs[0].region
    issue, p = cfg.overheads.cmd_issue, cfg.ppu
    quantum = p.elementwise_quantum or p.channel_quantum
    for li, (kind, c_lo, c_hi) in enumerate((("lut", 0, 24), ("copy", 24, 64))):
        cmds = [c for c in prog.commands if c.layer == li]
        tables = [c for c in cmds if isinstance(c, Load) and c.kind == TileKind.TABLE]
        ppus = [c for c in cmds if isinstance(c, Ppu)]
        stores = [c for c in cmds if isinstance(c, Store)]
        assert prog.layers[li].kind == kind
        if kind == "lut":
            assert len(tables) == 1 and tables[0].c == 256
            assert all(c.op == PpuOp.LUT and (c.table_buf, c.table_off) == (tables[0].buf, tables[0].off)
                       for c in ppus)
        else:
            assert not tables and all(c.op == PpuOp.COPY for c in ppus)
        assert sum(c.oh * c.ow * c.oc for c in ppus) == 6 * 10 * (c_hi - c_lo)
        assert all(prog.regions[out_region].base == s.base and c_lo <= s.c0 and s.c0 + s.c <= c_hi for s in stores)
        expected_ppu = sum(issue + p.command_overhead + math.ceil(c.oh * c.ow * -(-c.oc // quantum) * quantum *
                                                                 p.cost(kind)) for c in ppus)
        assert st.per_layer[li].engine_busy["ppu"] == expected_ppu
    # LUT: 41/32 cycles per element vs 6/32 for a copy on this config
    assert st.per_layer[0].engine_busy["ppu"] > st.per_layer[1].engine_busy["ppu"] * 24 / 40


def test_equal_parameters_still_copy():
    fn = concat_fn([(1, 4, 4, 8), (1, 4, 4, 8)], 3, [(0.05, 3), (0.05, 3)], (0.05, 3))
    prog = npu_sim.compile(fn, "ethos-u55-256-like")
    assert [layer.kind for layer in prog.layers] == ["copy", "copy"]
    assert not any(isinstance(c, Load) and c.kind == TileKind.TABLE for c in prog.commands)


def test_program_round_trip_and_validation():
    fn = concat_fn([(1, 6, 5, 8), (1, 6, 3, 8)], 2, [(0.02, 5), (0.3, -9)], (0.05, 0), dtype="int8")
    prog = npu_sim.compile(fn, "ethos-n78-like")
    again = type(prog).from_bytes(prog.to_bytes())
    assert again.to_bytes() == prog.to_bytes()
    assert again.validate() is not None
    assert "lut" in prog.disassemble()


def test_height_with_batch_is_refused_by_the_compiler():
    fn = concat_fn([(2, 3, 4, 8), (2, 5, 4, 8)], 1, [(0.02, 5), (0.05, 0)], (0.05, 0))
    with pytest.raises(NPUError) as e:
        npu_sim.compile(fn, "ethos-u55-256-like")
    assert "interleaves" in str(e.value) and "batch 2" in str(e.value)


# -- end to end: writer-built TFLite models, partitioned and built for npu,llvm, against LiteRT -----------------

def _inception_model(axis):
    """uint8 conv branches with their own output quantization, concatenated (and one graph input copied)."""
    from byoc.testing import TFLiteWriter
    rng = np.random.default_rng(5)
    w = TFLiteWriter()
    x = w.input("x", (1, 8, 8, 6), "uint8", scale=0.04, zero_point=120)

    def branch(k, cout, s, zp):
        wt = rng.integers(0, 256, (cout, k, k, 6)).astype(np.uint8)
        return w.conv2d(x, wt, rng.integers(-400, 400, cout), weight_scale=0.005, weight_zp=128, padding="SAME",
                        activation="RELU", out_scale=s, out_zp=zp)
    cout = 6 if axis != 3 else None
    parts = [branch(1, cout or 5, 0.02, 3), branch(3, cout or 7, 0.05, 0), x, branch(1, cout or 4, 0.035, 10)]
    y = w.concatenation(parts, axis, out_scale=0.06, out_zp=5)
    w.output(y)
    return w.finish(), rng.integers(0, 256, (1, 8, 8, 6)).astype(np.uint8)


@pytest.mark.parametrize("axis", [3, 1, 2])
def test_inception_block_end_to_end_matches_litert(axis):
    from byoc.frontend import from_tflite
    model, x = _inception_model(axis)
    want = litert_outputs(model, x)[0]
    mod, params = from_tflite(model)
    pm = byoc.partition_for("npu", mod, params)
    assert "npu.qnn_concatenate" in npu_composites(pm)
    assert "qnn.concatenate" not in pm["main"].astext()  # offloaded, not left on the CPU
    exe = byoc.build(pm, target="npu,llvm", npu_config="ethos-u55-256-like")
    (got,) = exe.run({mod["main"].params[0].name_hint: x})
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_tflm_import_follows_the_same_op_semantics():
    """from_tflite(semantics="tflm") imports CONCATENATION as the same qnn.concatenate (TFLite Micro has no
    uint8 CONCATENATION and requires equal int8 parameters, so there is no other rescale to follow): the NPU
    result equals byoc.evaluate of the module and LiteRT."""
    from byoc.frontend import from_tflite
    model, x = _inception_model(3)
    mod, params = from_tflite(model, semantics="tflm")
    pm = byoc.partition_for("npu", mod, params)
    assert "npu.qnn_concatenate" in npu_composites(pm)
    exe = byoc.build(pm, target="npu,llvm", npu_config="ethos-u55-256-like")
    name = mod["main"].params[0].name_hint
    (got,) = exe.run({name: x})
    (ref,) = byoc.evaluate(mod, {name: x}, params)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got, litert_outputs(model, x)[0])
