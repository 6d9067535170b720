"""Tiling under small local SRAM: a big layer still compiles to double-buffered tiles and stays bit-exact."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
import npu_sim
from byoc.errors import ConfigError, NPUError
from npu_sim.config import LocalBuffer
from npu_sim.isa import Mac

from npu_builders import conv_composite, dense_composite, partition, requant_scales

KIB = 1024


def _with_sram(preset: str, size: int):
    cfg = npu_sim.preset(preset)
    return cfg.replace(name=f"{preset}-{size // KIB}k",
                       local_buffers=(LocalBuffer("sram", size, ("ifm", "weight", "table", "acc", "ofm")),))


def test_224x224x64_conv3x3_in_64k_sram_is_bit_exact():
    rng = np.random.default_rng(2024)
    shape = (1, 224, 224, 64)
    w = rng.integers(-128, 128, size=(64, 3, 3, 64)).astype(np.int8)
    p, body = conv_composite(shape, w, padding=(1, 1, 1, 1), zp_in=-5, s_in=0.02, s_w=requant_scales(rng, 64),
                             s_out=0.5, zp_out=3, bias=rng.integers(-20000, 20000, 64), clip=(-128, 100))
    fn = partition([p], body)
    x = rng.integers(-128, 128, size=shape).astype(np.int8)
    cfg = _with_sram("ethos-n78-like", 64 * KIB)
    prog = npu_sim.compile(fn, cfg)
    (out,), st = npu_sim.simulate(prog, {"p0": x})
    assert np.array_equal(out, byoc.evaluate(fn, {"p0": x})[0])
    macs = [c for c in prog.commands if isinstance(c, Mac)]
    assert len(macs) > 1
    assert st.sram_high_water["sram"] <= 64 * KIB
    assert st.per_layer[0].macs == 224 * 224 * 64 * 64 * 9
    # The tile plan really uses the SRAM: more than a third of it, never more than all of it.
    assert st.sram_high_water["sram"] > 64 * KIB // 3


def test_same_results_under_every_sram_size():
    rng = np.random.default_rng(5)
    shape = (1, 40, 40, 32)
    w = rng.integers(-128, 128, size=(48, 3, 3, 32)).astype(np.int8)
    p, body = conv_composite(shape, w, padding=(1, 1, 1, 1), s_w=requant_scales(rng, 48), zp_in=9)
    fn = partition([p], body)
    x = rng.integers(-128, 128, size=shape).astype(np.int8)
    want = byoc.evaluate(fn, {"p0": x})[0]
    for size in (24, 48, 512):
        prog = npu_sim.compile(fn, _with_sram("ethos-n78-like", size * KIB))
        (out,), st = npu_sim.simulate(prog, {"p0": x})
        assert np.array_equal(out, want), size
        assert st.sram_high_water["sram"] <= size * KIB


def test_layer_that_cannot_fit_names_the_layer_and_sizes():
    rng = np.random.default_rng(1)
    w = rng.integers(-128, 128, size=(16, 2000)).astype(np.int8)
    p, body = dense_composite((1, 2000), w, s_w=requant_scales(rng, 16))
    # a ConfigError (an NPUError) naming the layer, the buffer's size_bytes field and what it must hold (the
    # smallest block streams its IFM in 16-deep slices, the IFM block depth; its weights stay whole-depth)
    with pytest.raises(ConfigError, match=r"cannot run layer .*even its smallest block .* does not fit the local "
                                          r"SRAM \(local buffer 'sram': size_bytes 8192 B < 2×ifm 16 B \+ "
                                          r"2×weight 32000 B"):
        npu_sim.compile(partition([p], body), _with_sram("vta-default", 8 * KIB))
