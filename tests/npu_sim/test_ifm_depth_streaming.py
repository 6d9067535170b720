"""Ethos-U mechanisms of deep-input and fully connected layers, as Vela 5.2 models them:

* the IFM streams through SHRAM in depth slices: Vela's block search (regor ArchEthosU55::FindBlockConfig) sizes
  the IFM block at min(IFM depth, 32) channels for 8-bit depth-first convolutions, so a convolution whose
  whole-depth IFM window would not fit SHRAM still runs (Vela compiles MobileNetV2's 3x3x1280 head conv on U55-64
  with a 7x7x32 IFM block), its accumulators kept across the slices;
* a fully connected layer reads its weights while it runs: Vela never buffers them ahead of the op.

Expected outputs come from the reference interpreter (byoc.evaluate); expected timing bounds from Vela's numbers.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import byoc
import npu_sim
from byoc import relay
from byoc.errors import NPUError
from npu_builders import conv_composite, dense_composite, partition, requant_scales
from npu_sim.isa import Load, Mac, Ppu, TileKind
from npu_sim.program import Program
from npu_sim.simulator import schedule

# MobileNetV2's head: 3x3 conv, 7x7x1280 → 5x5x32 (mobilenet_v2_1.0_224_quant, "sequential/conv2d")
HEAD_IN, HEAD_OUT = (1, 7, 7, 1280), 32


def _head(dtype: str, seed: int = 3):
    rng = np.random.default_rng(seed)
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    # weights symmetric about the zero point (TFLite's int8 rule): a -128 would widen every uncompressed MLW
    # symbol to 9 bits (Vela's encoder), not the 1 B/weight stream Vela's measurement below reflects
    w = rng.integers(lo + 1, hi, size=(HEAD_OUT, 3, 3, HEAD_IN[3])).astype(dtype)
    zp = 128 if dtype == "uint8" else 0
    p, body = conv_composite(HEAD_IN, w, zp_in=zp - 3 if zp else 5, zp_w=zp, s_in=0.02, s_out=0.5,
                             s_w=requant_scales(rng, HEAD_OUT) / 64, zp_out=zp, dtype=dtype)
    x = rng.integers(lo, hi, size=HEAD_IN).astype(dtype)
    return partition([p], body), x


@pytest.mark.parametrize("preset", ["ethos-u55-64", "ethos-u55-128"])
def test_deep_input_conv_streams_its_ifm_in_32_deep_slices_and_stays_exact(preset):
    fn, x = _head("uint8")
    want = byoc.evaluate(fn, {"p0": x})[0]
    prog = npu_sim.compile(fn, preset)   # the whole-depth 3x3x1280 window (11.5 KB x 2) does not fit SHRAM
    (out,), _ = npu_sim.simulate(prog, {"p0": x})
    assert np.array_equal(out, want)
    macs = [c for c in prog.commands if isinstance(c, Mac)]
    # every MAC reads a depth slice whose size is a multiple of Vela's 8-bit IFM block depth (32)
    assert all(c.w_ic == HEAD_IN[3] and c.ic % 32 == 0 and c.ic < HEAD_IN[3] for c in macs)
    # the slices of each tile cover the whole depth once, in order, the first one starting the accumulator
    firsts = [c for c in macs if c.ic0 == 0]
    assert sum(c.ic for c in macs) == len(firsts) * HEAD_IN[3]
    ifm_loads = [c for c in prog.commands if isinstance(c, Load) and c.kind == TileKind.IFM]
    assert all(c.c == m.ic and c.c0 == m.ic0 for c, m in zip(ifm_loads, macs))


def test_int8_deep_input_conv_is_exact_on_every_small_u55():
    fn, x = _head("int8", seed=7)
    want = byoc.evaluate(fn, {"p0": x})[0]
    for preset in ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256"):
        (out,), _ = npu_sim.simulate(npu_sim.compile(fn, preset), {"p0": x})
        assert np.array_equal(out, want), preset


def test_deep_input_head_conv_is_bound_by_its_weight_stream_as_in_vela():
    """Vela (U55-256): op cycles 369008 = the flash weight stream (3x3x1280x32 B at 1 B/cycle), MAC 52040: the
    layer is weight-bound. Without IFM streaming the whole-depth window forced 2x2 blocks and the layer was
    MAC-bound at 1.42x Vela (1.40x its weight stream); within Vela's ±20% band it stays weight-bound."""
    fn, x = _head("uint8")
    (out,), st = npu_sim.simulate(npu_sim.compile(fn, "ethos-u55-256"), {"p0": x})
    layer = st.per_layer[0]
    assert layer.bound == "flash"
    assert layer.cycles <= 1.20 * layer.roofline_cycles


def test_sliced_mac_commands_round_trip_and_bad_slices_are_refused():
    fn, x = _head("uint8")
    prog = npu_sim.compile(fn, "ethos-u55-64")
    again = Program.from_bytes(prog.to_bytes())
    assert [c for c in again.commands if isinstance(c, Mac)] == [c for c in prog.commands if isinstance(c, Mac)]
    i, mac = next((i, c) for i, c in enumerate(prog.commands) if isinstance(c, Mac) and c.ic0)
    bad = dataclasses.replace(mac, ic0=mac.w_ic - mac.ic + 16)   # reaches past the weights' depth
    broken = dataclasses.replace(prog, commands=prog.commands[:i] + (bad,) + prog.commands[i + 1:])
    with pytest.raises(NPUError, match="IFM depth slice"):
        broken.validate()


def test_fully_connected_weights_stream_only_once_the_previous_layer_has_computed():
    """micro_speech's FullyConnected (4000 → 4) after a conv: Vela charges its whole 18 KB weight stream to the
    FC op itself; the weights are not fetched while the conv still computes."""
    rng = np.random.default_rng(2)
    w_conv = rng.integers(-128, 128, size=(8, 10, 8, 1)).astype(np.int8)
    p0, conv = conv_composite((1, 49, 40, 1), w_conv, strides=(2, 2), padding=(4, 3, 5, 3),
                              s_w=requant_scales(rng, 8))
    flat = relay.reshape(conv, (1, 25 * 20 * 8))
    w_fc = rng.integers(-128, 128, size=(4, 4000)).astype(np.int8)
    _, fc = dense_composite((1, 4000), w_fc, s_w=requant_scales(rng, 4))
    body = relay.Call(fc.op, [flat])
    fn = partition([p0], body)
    prog = npu_sim.compile(fn, "ethos-u55-256")
    sched = schedule(prog)
    dense = max(c.layer for c in prog.commands)
    first_w = next(i for i, c in enumerate(prog.commands)
                   if isinstance(c, Load) and c.layer == dense and c.kind == TileKind.WEIGHT)
    last_prev = max(i for i, c in enumerate(prog.commands) if isinstance(c, (Mac, Ppu)) and c.layer < dense)
    assert sched.start[first_w] >= sched.end[last_prev]


def test_a_blocks_depth_slices_share_its_cycles_as_vela_counts_one_block():
    """Vela times a block once: per kernel step max(32, 4 x micro-blocks) cycles per 8-channel OFM micro-block
    depth, times ceil(IFM depth / 32) passes. 8x8x16 OFM block, 1x1 kernel, 256 IFM channels on U55-256:
    16 micro-blocks -> 64 cycles, x 2 (OFM depth) x 8 passes = 1024, + 4 issue + 2 pipeline fill; the IFM
    window (8x8x32 per pass) and OFM block are small enough that the per-block floor does not bind.
    Streamed in 32-deep slices, the 8 commands add up to the same block."""
    from npu_sim.cost import mac_command_cycles
    cfg = npu_sim.preset("ethos-u55-256")
    fields = dict(wait=0, signal=0, layer=0, op=0, in_dtype=0, w_dtype=0, ifm_buf=0, ifm_off=0, ih=8, iw=8,
                  w_buf=1, w_off=0, acc_buf=0, acc_off=0, oh=8, ow=8, oc=16, kh=1, kw=1, sh=1, sw=1, dh=1, dw=1,
                  zp_in=0, zp_w=0, dm=1)
    whole = mac_command_cycles(cfg, Mac(ic=256, **fields))
    assert whole == 1024 + 4 + 2
    slices = [mac_command_cycles(cfg, Mac(ic=32, ic0=d, w_ic=256, **fields)) for d in range(0, 256, 32)]
    assert sum(slices) == whole
    # uneven slices (192 + 64) add up too
    assert mac_command_cycles(cfg, Mac(ic=192, ic0=0, w_ic=256, **fields)) + \
        mac_command_cycles(cfg, Mac(ic=64, ic0=192, w_ic=256, **fields)) == whole


def test_the_smallest_ifm_slice_is_velas_ifm_block_depth():
    """regor FindBlockConfig: ifmBlockDepth = min(depth, 32) for 8-bit depth-first convolutions, min(depth, 16)
    for 16-bit; slices grow by doubling and stay below the whole depth. Depthwise layers keep the IFM depth of
    their OFM block (no slicing)."""
    from npu_sim.isa import PpuOp
    from npu_sim.tiling import Geometry, ifm_slices
    cfg = npu_sim.preset("ethos-u55-64")
    g = Geometry("conv", PpuOp.REQUANT, (5, 5, 32), (7, 7, 1280), (3, 3), has_weights=True, has_table=True)
    assert ifm_slices(cfg, g) == [1024, 512, 256, 128, 64, 32]
    assert ifm_slices(cfg, dataclasses.replace(g, in_bytes=2, in_hwc=(7, 7, 64))) == [32, 16]
    assert ifm_slices(cfg, dataclasses.replace(g, in_hwc=(7, 7, 32))) == []
    assert ifm_slices(cfg, dataclasses.replace(g, kind="depthwise")) == []


def test_a_fully_connected_chain_keeps_streaming_weights_back_to_back():
    """Two fully connected layers in a row: the second one's weights follow the first one's on the weight port
    (no wait for the first layer's compute: that would only expose the load latency, which Vela does not
    charge per op)."""
    rng = np.random.default_rng(4)
    w1 = rng.integers(-128, 128, size=(64, 256)).astype(np.int8)
    w2 = rng.integers(-128, 128, size=(16, 64)).astype(np.int8)
    p0, d1 = dense_composite((1, 256), w1, s_w=requant_scales(rng, 64))
    _, d2 = dense_composite((1, 64), w2, s_w=requant_scales(rng, 16))
    fn = partition([p0], relay.Call(d2.op, [d1]))
    prog = npu_sim.compile(fn, "ethos-u55-256")
    sched = schedule(prog)
    first_w = next(i for i, c in enumerate(prog.commands)
                   if isinstance(c, Load) and c.layer == 1 and c.kind == TileKind.WEIGHT)
    last_prev = max(i for i, c in enumerate(prog.commands) if isinstance(c, (Mac, Ppu)) and c.layer == 0)
    assert sched.start[first_w] < sched.end[last_prev]
    x = rng.integers(-128, 128, size=(1, 256)).astype(np.int8)
    (out,), _ = npu_sim.simulate(prog, {"p0": x})
    assert np.array_equal(out, byoc.evaluate(fn, {"p0": x})[0])
