"""The simulator's memory-saving paths compute the same bytes as the plain ones.

* Convolutions whose im2col matrix would exceed ``IM2COL_BLOCK_BYTES`` run a band of output rows at a time: with
  the bound forced to one byte every conv is banded, and the outputs still equal ``byoc.evaluate`` (an
  independent executor) bit for bit.
* An area holding only constants is read in place, not copied per run; a store into it (never emitted by the
  compiler, possible in a hand-made program) first materialises the area, so the bytes written are exactly what
  a fresh copy of the constant images would hold, and the program's own constant images stay untouched.
* A program decoded from a memoryview or bytearray equals the one decoded from bytes and keeps no view into the
  caller's buffer.
"""
from __future__ import annotations

import numpy as np
import pytest

import byoc
import npu_sim
import npu_sim.execute as execute
from npu_sim.isa import Store
from npu_sim.program import Program

from npu_builders import conv_composite, partition, requant_scales
from test_exact import make_case


def _conv_seeds(n: int) -> list[int]:
    seeds = []
    s = 0
    while len(seeds) < n:
        if make_case(s)[0] in ("conv", "depthwise"):
            seeds.append(s)
        s += 1
    return seeds


@pytest.mark.parametrize("seed", _conv_seeds(8))
def test_banded_convolution_is_bit_exact(seed, monkeypatch):
    monkeypatch.setattr(execute, "IM2COL_BLOCK_BYTES", 1)   # every conv tile is split into one-row bands
    name, fn, inputs = make_case(seed)
    ref = byoc.evaluate(fn, inputs)
    for preset in npu_sim.PRESETS:
        outs, _ = npu_sim.simulate(npu_sim.compile(fn, preset), inputs)
        for o, r in zip(outs, ref):
            assert o.dtype == r.dtype and np.array_equal(o, r), (seed, name, preset)


def _conv_program():
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, size=(1, 5, 6, 4)).astype(np.int8)
    w = rng.integers(-128, 128, size=(3, 3, 3, 4)).astype(np.int8)
    p, body = conv_composite(x.shape, w, padding=(1, 1, 1, 1), s_w=requant_scales(rng, 3), zp_in=2, zp_out=-1)
    return npu_sim.compile(partition([p], body), "ethos-u55-256-like"), {"p0": x}


def test_constant_area_is_read_in_place_and_copied_on_store():
    prog, feed = _conv_program()
    areas = {r.area for r in prog.regions if r.kind == "constant"}
    only_const = [a for a in areas if all(r.kind == "constant" for r in prog.regions if r.area == a)]
    assert only_const, "the default placement keeps weights in an area of their own"
    area = only_const[0]
    before = [bytes(d) for _, d in prog.constants]

    m = execute.Machine(prog)
    assert m.mem[area] is None          # not copied
    # The image a fresh copy would hold, assembled here from the regions and their constant bytes.
    size = max(r.base + r.size for r in prog.regions if r.area == area)
    want = np.zeros(size, np.uint8)
    images = dict(prog.constants)
    for r in prog.regions:
        if r.area == area:
            want[r.base:r.base + r.size] = np.frombuffer(images[r.id], np.uint8)
    region = next(r for r in prog.regions if r.area == area and r.size >= 8)
    tile = np.arange(1, 9, dtype=np.int8).reshape(1, 1, 8)
    m.local[(0, 0)] = tile
    m.step(0, Store(0, 0, 0, area, 0, region.base, 1, 1, region.size, 0, 0, 0, 1, 1, 8, 0, 0))
    want[region.base:region.base + 8] = tile.reshape(-1).view(np.uint8)
    assert m.mem[area] is not None and np.array_equal(m.mem[area], want)
    assert [bytes(d) for _, d in prog.constants] == before   # the program's images are not written through


def test_run_is_unchanged_by_in_place_constants():
    """Outputs equal byoc.evaluate of the same partition (the in-place constant path is the default path)."""
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, size=(1, 7, 7, 6)).astype(np.int8)
    w = rng.integers(-128, 128, size=(5, 3, 3, 6)).astype(np.int8)
    p, body = conv_composite(x.shape, w, strides=(2, 2), padding=(1, 1, 1, 1), s_w=requant_scales(rng, 5))
    fn = partition([p], body)
    ref = byoc.evaluate(fn, {"p0": x})
    for preset in npu_sim.PRESETS:
        (out,), _ = npu_sim.simulate(npu_sim.compile(fn, preset), {"p0": x})
        assert np.array_equal(out, ref[0]), preset


def test_program_decodes_from_any_buffer_without_keeping_it():
    prog, feed = _conv_program()
    blob = prog.to_bytes()
    ref = Program.from_bytes(blob)
    buf = bytearray(blob)
    for src in (memoryview(blob), buf, memoryview(buf)[0:len(buf)]):
        got = Program.from_bytes(src)
        assert got.commands == ref.commands and got.regions == ref.regions
        assert got.to_bytes() == blob
        assert all(type(d) is bytes for _, d in got.constants)
    del src
    buf[:] = b"\0" * len(buf)             # the decoded programs hold no view into the caller's buffer
    buf.extend(b"x")                       # (a live export of the bytearray would forbid resizing)
    (out,), _ = npu_sim.simulate(got, feed)
    (want,), _ = npu_sim.simulate(ref, feed)
    assert np.array_equal(out, want)
