"""Sweep spaces and points: sampling, axis parsing, overrides and the resume key."""
from __future__ import annotations

import numpy as np
import pytest

import npu_sim
from byoc.errors import ConfigError
from explore.points import UnknownAxisError, apply_overrides, point_id
from explore.space import Axis, Space, parse_axis


def test_grid_is_every_combination_in_order():
    sp = Space((Axis("mac.ublock_c", values=(4, 8)), Axis("clock_hz", values=(1e8, 2e8, 3e8))))
    pts = sp.points()
    assert len(pts) == 6 and pts[0] == {"mac.ublock_c": 4, "clock_hz": 1e8} and pts[-1] == {"mac.ublock_c": 8,
                                                                                           "clock_hz": 3e8}


def test_latin_hypercube_puts_one_sample_in_each_stratum_and_is_seeded():
    n = 37
    sp = Space((Axis("a", low=0.0, high=1.0), Axis("b", low=10.0, high=20.0)), "lhs", n, seed=5)
    pts = sp.points()
    a = np.array([p["a"] for p in pts])
    b = (np.array([p["b"] for p in pts]) - 10.0) / 10.0
    for col in (a, b):
        assert sorted(np.floor(col * n).astype(int)) == list(range(n))
    assert pts == sp.points()
    assert pts != Space(sp.axes, "lhs", n, seed=6).points()


def test_log_integer_range_and_random_sampling_stay_in_bounds():
    ax = parse_axis("buffer.shram.size_bytes=16384:262144:log:int")
    pts = Space((ax,), "random", 50, seed=1).points()
    vals = [p["buffer.shram.size_bytes"] for p in pts]
    assert all(isinstance(v, int) and 16384 <= v <= 262144 for v in vals)
    assert min(vals) < 40000 and max(vals) > 100000   # log-uniform spreads over the decades


def test_parse_axis_values_and_errors():
    assert parse_axis("weight_compression=on,off").values == (True, False)
    assert parse_axis("mac.ublock_c=4,8").values == (4, 8)
    assert parse_axis("preset=ethos-n78-like,vta-default").values == ("ethos-n78-like", "vta-default")
    with pytest.raises(ConfigError, match="PATH=VALUES"):
        parse_axis("mac.ublock_c")
    with pytest.raises(ConfigError, match="needs explicit values"):
        Space((parse_axis("clock_hz=1e8:1e9"),))


def test_overrides_change_the_named_fields():
    base = npu_sim.preset("ethos-u55-256-like")
    p = apply_overrides({"mac.ublock_c": 16, "area.flash.bytes_per_cycle": 2, "buffer.shram.size_bytes": 65536,
                         "weight_compression": False, "clock_hz": 1e9}, "ethos-u55-256-like")
    c = p.config
    assert c.mac.ublock_c == 16 and c.mac.macs_per_cycle == 2 * 2 * 16 * 8
    assert c.area("flash").bytes_per_cycle == 2.0 and c.area("sram") == base.area("sram")
    assert [b.size_bytes for b in c.local_buffers] == [65536, base.local_buffers[1].size_bytes]
    assert c.weight_compression == 1.0 and c.clock_hz == 1e9
    scaled = apply_overrides({"sram_kib": 128}, "ethos-u55-256-like").config
    assert abs(sum(b.size_bytes for b in scaled.local_buffers) - 128 * 1024) <= len(scaled.local_buffers)
    with pytest.raises(UnknownAxisError, match="mac.bogus"):
        apply_overrides({"mac.bogus": 1}, "ethos-u55-256-like")
    with pytest.raises(ConfigError, match="no memory area 'flash'"):
        apply_overrides({"area.flash.bytes_per_cycle": 1}, "ethos-n78-like")


def test_point_id_is_the_hardware_not_its_spelling():
    base = npu_sim.preset("ethos-u55-256-like")
    same = apply_overrides({"mac.ublock_c": base.mac.ublock_c}, "ethos-u55-256-like").config
    other = apply_overrides({"mac.ublock_c": 16}, "ethos-u55-256-like").config
    assert point_id("m", "npu", base) == point_id("m", "npu", same)
    assert len({point_id("m", "npu", base), point_id("m", "npu", other), point_id("m2", "npu", base),
                point_id("m", "vta", base)}) == 4
