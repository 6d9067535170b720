"""Timing invariants of the event simulator: rooflines, monotonicity in MAC rate and bandwidth, determinism."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import npu_sim
from npu_sim.simulator import collect_stats, schedule

from test_exact import PRESETS, make_case

SEEDS = range(300, 330)


def _retimed(prog, cfg):
    return collect_stats(prog, schedule(dataclasses.replace(prog, config=cfg)))


def _faster_mac(cfg):
    return cfg.replace(mac=dataclasses.replace(cfg.mac, ublock_c=cfg.mac.ublock_c * 2))


def _slower_memory(cfg, area):
    areas = tuple(dataclasses.replace(a, bytes_per_cycle=a.bytes_per_cycle / 2) if a.name == area else a
                  for a in cfg.memory_areas)
    return cfg.replace(memory_areas=areas)


@pytest.mark.parametrize("preset", PRESETS)
def test_doubling_mac_rate_never_increases_cycles(preset):
    for seed in SEEDS:
        _, fn, _ = make_case(seed)
        prog = npu_sim.compile(fn, preset)
        base = _retimed(prog, prog.config)
        fast = _retimed(prog, _faster_mac(prog.config))
        assert fast.total_cycles <= base.total_cycles, seed
        assert fast.engine_busy["mac"] <= base.engine_busy["mac"], seed


@pytest.mark.parametrize("preset", PRESETS)
def test_halving_a_bandwidth_never_decreases_cycles(preset):
    for seed in SEEDS:
        _, fn, _ = make_case(seed)
        prog = npu_sim.compile(fn, preset)
        base = _retimed(prog, prog.config)
        for area in prog.config.memory_areas:
            slow = _retimed(prog, _slower_memory(prog.config, area.name))
            assert slow.total_cycles >= base.total_cycles, (seed, area.name)


def test_compile_and_cycles_are_deterministic():
    for seed in range(40, 46):
        _, fn, inputs = make_case(seed)
        for preset in PRESETS:
            a, b = npu_sim.compile(fn, preset), npu_sim.compile(fn, preset)
            assert a.to_bytes() == b.to_bytes()
            ra, sa = npu_sim.simulate(a, inputs)
            rb, sb = npu_sim.simulate(b, inputs)
            assert sa.total_cycles == sb.total_cycles
            assert [s.cycles for s in sa.per_layer] == [s.cycles for s in sb.per_layer]


def test_stats_are_consistent_and_trace_is_valid_json():
    _, fn, inputs = make_case(1)
    prog = npu_sim.compile(fn, "ethos-u55-256-like")
    _, st = npu_sim.simulate(prog, inputs)
    assert sum(s.exclusive_cycles for s in st.per_layer) == st.total_cycles
    assert all(0 < v <= st.total_cycles for v in st.engine_busy.values() if v)
    assert st.sram_high_water_total > 0
    for name, used in st.sram_high_water.items():
        assert used <= next(b.size_bytes for b in prog.config.local_buffers if b.name == name)
    layer = st.per_layer[0]
    assert layer.bound in ("mac", "ppu", *(a.name for a in prog.config.memory_areas))
    assert 0 < layer.utilisation <= 1
    trace = json.loads(st.to_trace_json())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == st.command_count
    assert {e["tid"] for e in spans} <= {0, 1, 2, 3}
    assert max(e["args"]["end_cycle"] for e in spans) == st.total_cycles
    assert all(e["dur"] >= 0 for e in spans)


def test_roofline_of_a_bandwidth_bound_layer_is_the_memory_time():
    """A 1×1 conv on U55: SRAM traffic (IFM once + OFM) / 8 B/cycle exceeds MACs/256."""
    from npu_builders import conv_composite, partition
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, size=(8, 1, 1, 16)).astype(np.int8)
    p, body = conv_composite((1, 32, 32, 16), w)
    prog = npu_sim.compile(partition([p], body), "ethos-u55-256-like")
    _, st = npu_sim.simulate(prog, {"p0": rng.integers(-128, 128, (1, 32, 32, 16)).astype(np.int8)})
    layer = st.per_layer[0]
    assert layer.roofline_cycles == (32 * 32 * 16 + 32 * 32 * 8) // 8
    assert layer.bytes_by_area["sram"] >= 32 * 32 * 16 + 32 * 32 * 8
    assert layer.cycles >= layer.roofline_cycles


ETHOS_U = tuple(n for n in npu_sim.PRESETS if n.startswith("ethos-u"))


@pytest.mark.parametrize("preset", PRESETS)
def test_no_layer_runs_below_its_roofline(preset):
    """The roofline counts MACs at the peak rate and every byte a layer moves (weights at their encoded size)
    at its area's bandwidth; the per-block floor and overheads can only add to it."""
    for seed in range(300, 312):
        _, fn, inputs = make_case(seed)
        _, st = npu_sim.simulate(npu_sim.compile(fn, preset), inputs)
        for s in st.per_layer:
            assert s.cycles >= s.roofline_cycles, (seed, s.name, s.cycles, s.roofline_cycles)
        assert st.total_cycles >= max(s.roofline_cycles for s in st.per_layer)


@pytest.mark.parametrize("model", ["ad01_int8.tflite", "kws_ref_model.tflite"])
def test_real_models_on_every_ethos_u_preset_respect_the_roofline_and_repeat_exactly(model):
    import pathlib

    from byoc.cli.summary import profile_partitions
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    path = pathlib.Path(__file__).resolve().parents[1] / "data" / "mlcommons_tiny" / model
    mod, params = from_tflite(str(path), semantics="tflm")
    pmod = partition_for("ethos-u", mod, params)
    for preset in ETHOS_U:
        runs = [profile_partitions(pmod, "ethos-u", preset) for _ in range(2)]
        for prof in runs[0]:
            for s in prof.stats.per_layer:
                assert s.cycles >= s.roofline_cycles, (preset, s.name)
                assert s.roofline_cycles > 0
        assert [p.stats.total_cycles for p in runs[0]] == [p.stats.total_cycles for p in runs[1]], preset


def test_u65_dedicated_sram_keeps_the_network_tensors_in_dram():
    """Vela's default U65 memory mode: the partition's input and output live in DRAM (slower, 500-cycle reads,
    128-byte bursts), intermediate maps in SRAM; Shared_Sram keeps everything in SRAM."""
    _, fn, inputs = make_case(302)
    cycles = {}
    for preset in ("ethos-u65-256", "ethos-u65-256-shared"):
        prog = npu_sim.compile(fn, preset)
        areas = {r.kind: prog.config.memory_areas[r.area].name for r in prog.regions
                 if r.kind in ("input", "output", "activation")}
        want_io = "dram" if preset == "ethos-u65-256" else "sram"
        assert areas["input"] == areas["output"] == want_io, (preset, areas)
        assert areas.get("activation", "sram") == "sram"
        outs, st = npu_sim.simulate(prog, inputs)
        cycles[preset] = st.total_cycles
        assert np.array_equal(outs[0], npu_sim.simulate(npu_sim.compile(fn, "ethos-u55-256"), inputs)[0][0])
    assert cycles["ethos-u65-256"] > cycles["ethos-u65-256-shared"], cycles
