"""Ethos-U timing mechanisms taken from Vela's performance model (npu_performance.py, scheduler.py): pooling on
the MAC engine, the next layer's weights buffered during the current one, feature maps moved in 16-deep bricks.
Expected numbers are worked out by hand from Vela's formulas, not read from the code under test."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import byoc
import npu_sim
from npu_builders import conv_composite, partition
from npu_sim.cost import block_floor, brick_ratio, mac_cycles, pool_cycles, ppu_cycles
from npu_sim.isa import LOAD_CONTINUE, Load, Mac, MacOp, PpuOp, Store, TileKind


def test_pooling_costs_max_of_four_and_taps_per_micro_block_per_sub_kernel():
    cfg = npu_sim.preset("ethos-u55-256")   # 2x2x8 micro-block, 4 issue cycles per command
    # Vela 5.2 (regor): max(4, taps) per micro-block and 8x8 sub-kernel, times ifm_bits / 2 = 4 for int8.
    # 8x8x32 OFM = 64 micro-blocks. 3x3 average: 9 x 4 cycles each = 2304 > output stage 2048 x 0.25 = 512.
    assert pool_cycles(cfg, PpuOp.AVG_POOL, 8, 8, 32, 3, 3) == 4 + 2304
    # 2x2 max: the 4-step floor, 4 x 4 x 64 = 1024 > output stage 2048 x 0.125.
    assert pool_cycles(cfg, PpuOp.MAX_POOL, 8, 8, 32, 2, 2) == 4 + 1024
    # 10x10 splits into 8x8, 8x2, 2x8 and 2x2 (floored to 4) sub-kernels: (64 + 16 + 16 + 4) x 4 per micro-block.
    assert pool_cycles(cfg, PpuOp.MAX_POOL, 2, 2, 8, 10, 10) == 4 + 400
    # int16 input: ifm_bits / 2 = 8 cycles per step.
    assert pool_cycles(cfg, PpuOp.MAX_POOL, 2, 2, 8, 10, 10, in_bytes=2) == 4 + 800
    # U55-32 has a 1x1x4 micro-block, one cycle per step and 8x the output cycles per element.
    small = npu_sim.preset("ethos-u55-32")
    assert pool_cycles(small, PpuOp.AVG_POOL, 2, 2, 8, 3, 3) == 4 + max(9 * 8, 32 * 2)


def test_a_block_costs_at_least_its_serial_work_over_four():
    """Vela's per-block command cost: (IFM-block read + OFM-block write, each with its 32-cycle SRAM latency, +
    output + MAC cycles) / 4, a floor under every block's MAC and output time."""
    cfg = npu_sim.preset("ethos-u55-256")   # SRAM 8 B/cycle, 32-byte bursts, 16-deep bricks, 4 issue cycles
    # ADD of one 1x1x16 block: output 16 x 0.75 = 12 cycles. IFM read 32 + 16 B in a 16-byte run (half a burst:
    # 32 B on the port, 4 cycles), OFM write 32 + 4: (72 + 12) / 4 = 21 > 12.
    assert block_floor(cfg, 12, (1, 1, 16), (1, 1, 16)) == 21
    assert ppu_cycles(cfg, PpuOp.ADD, 1, 1, 16, 1, 1, 16) == 4 + 21
    # A large block is bound by its work, not the floor: 16x16x16 ADD = 4096 x 0.75 = 3072 cycles.
    assert ppu_cycles(cfg, PpuOp.ADD, 16, 16, 16, 16, 16, 16) == 4 + 3072
    # Without the floor (block_overlap 0) the small block costs its output time only.
    no_floor = cfg.replace(overheads=dataclasses.replace(cfg.overheads, block_overlap=0))
    assert ppu_cycles(no_floor, PpuOp.ADD, 1, 1, 16, 1, 1, 16) == 4 + 12


def test_a_single_micro_block_waits_two_cycles_per_kernel_step():
    cfg = npu_sim.preset("ethos-u55-256")   # pipe fill 2 and issue 4 per MAC command
    # 2x2x8 OFM block = one micro-block; 3x3 kernel over 64 channels = 2 IFM passes of 32: 9 steps x 2 passes x
    # 32 cycles (weight-buffer bound) = 576, plus Vela's delay 2 per step and pass = 36.
    assert mac_cycles(cfg, MacOp.CONV, 2, 2, 8, 64, 3, 3) == 4 + 2 + 576 + 36
    # Two micro-blocks in x: no delay.
    assert mac_cycles(cfg, MacOp.CONV, 2, 4, 8, 64, 3, 3) == 4 + 2 + 576
    # U55-32 waits 3 cycles per step (1x1x4 micro-block; 2 micro-blocks in depth: (9 - 1) x 2 steps).
    small = npu_sim.preset("ethos-u55-32")
    assert mac_cycles(small, MacOp.CONV, 1, 1, 8, 32, 3, 3) == 4 + 2 + 2 * 9 * 32 + 3 * 8 * 2


def test_feature_maps_move_in_sixteen_deep_bricks():
    cfg = npu_sim.preset("ethos-u55-256")
    assert (brick_ratio(cfg, 3), brick_ratio(cfg, 16), brick_ratio(cfg, 24)) == (16 / 3, 1.0, 32 / 24)
    assert brick_ratio(npu_sim.preset("vta-default"), 3) == 1.0


def _two_convs():
    rng = np.random.default_rng(3)
    w1 = rng.integers(-127, 128, size=(64, 1, 1, 32)).astype(np.int8)
    w2 = rng.integers(-127, 128, size=(64, 1, 1, 64)).astype(np.int8)
    p1, c1 = conv_composite((1, 8, 8, 32), w1)
    _, c2 = conv_composite((1, 8, 8, 64), w2)
    return partition([p1], c2.replace(args=(c1,))), p1


def test_next_layers_weights_are_queued_while_the_current_layer_computes_and_results_stay_exact():
    fn, p = _two_convs()
    prog = npu_sim.compile(fn, "ethos-u55-256")
    cmds = prog.commands
    first_w2 = next(i for i, c in enumerate(cmds) if isinstance(c, Load) and c.layer == 1
                    and c.kind == TileKind.WEIGHT)
    last_mac1 = max(i for i, c in enumerate(cmds) if isinstance(c, Mac) and c.layer == 0)
    assert first_w2 < last_mac1
    x = np.random.default_rng(4).integers(-128, 128, size=(1, 8, 8, 32)).astype(np.int8)
    outs, stats = npu_sim.simulate(prog, {prog.inputs[0].name: x})
    assert np.array_equal(outs[0], byoc.evaluate(fn, {prog.inputs[0].name: x})[0])
    # the second layer's weight stream (4 KiB over 1 B/cycle flash) overlaps the first layer
    w2_cmd = [i for i, c in enumerate(cmds) if isinstance(c, Load) and c.layer == 1 and c.kind == TileKind.WEIGHT]
    s = stats._schedule
    assert s.start[w2_cmd[0]] < max(s.end[i] for i, c in enumerate(cmds) if c.layer == 0)


def _depthwise_then_project():
    """MobileNetV2's 14x14 inverted-residual tail: a 3x3 depthwise over 384 channels (many channel slices, little
    weight traffic of its own), then a 1x1 projection to 64 channels (24 KiB of weights on 1 B/cycle flash)."""
    rng = np.random.default_rng(7)
    wd = rng.integers(-127, 128, size=(3, 3, 1, 384)).astype(np.int8)
    wp = rng.integers(-127, 128, size=(64, 1, 1, 384)).astype(np.int8)
    p1, c1 = conv_composite((1, 14, 14, 384), wd, depthwise=True, padding=(1, 1, 1, 1))
    _, c2 = conv_composite((1, 14, 14, 384), wp)
    return partition([p1], c2.replace(args=(c1,))), p1


def test_next_layers_first_weights_stream_in_pieces_under_the_current_layers_slices():
    """Vela (regor) counts the next operation's first weight DMA hidden under the whole previous operation
    (slackBufferingCycles). The depthwise layer's weight port is mostly idle, so the projection's first weight
    tile is queued in pieces over several of its channel slices (each piece continuing the tile), not all at its
    last slice, where it would hold the projection's first block back."""
    fn, p = _depthwise_then_project()
    prog = npu_sim.compile(fn, "ethos-u55-256")
    cmds = prog.commands
    assert len(prog.layers) == 2 and prog.layers[0].kind == "depthwise"
    pieces = [i for i, c in enumerate(cmds) if isinstance(c, Load) and c.layer == 1 and c.kind == TileKind.WEIGHT
              and i < max(j for j, d in enumerate(cmds) if isinstance(d, Mac) and d.layer == 0)]
    assert len(pieces) > 1
    assert cmds[pieces[0]].pad & LOAD_CONTINUE == 0
    assert all(cmds[i].pad & LOAD_CONTINUE for i in pieces[1:])
    # the pieces are spread: the first is queued before the depthwise's last channel slice starts
    dw_macs = [i for i, c in enumerate(cmds) if isinstance(c, Mac) and c.layer == 0]
    per_slice = sum(1 for c in cmds if isinstance(c, Store) and c.layer == 0 and c.c0 == 0)
    assert len(dw_macs) > per_slice   # several channel slices
    assert pieces[0] < dw_macs[-per_slice]
    x = np.random.default_rng(8).integers(-128, 128, size=(1, 14, 14, 384)).astype(np.int8)
    outs, stats = npu_sim.simulate(prog, {prog.inputs[0].name: x})
    assert np.array_equal(outs[0], byoc.evaluate(fn, {prog.inputs[0].name: x})[0])
    # Its first weight tile (32 x 384 B, ~12 300 cycles on the 1 B/cycle flash) is in place when the depthwise
    # ends: the first projection block waits only for its IFM window (2x14x384 = 10 752 B at 8 B/cycle, ~1 350
    # cycles, plus latency), not for the weights.
    s = stats._schedule
    dw_end = max(s.end[i] for i in dw_macs)
    first_pw = min(s.start[i] for i, c in enumerate(cmds) if isinstance(c, Mac) and c.layer == 1)
    assert first_pw - dw_end < 2500


def test_u65_512_is_two_256_mac_cores_sharing_each_block():
    """Vela's Ethos-U65-512: two cores with the 256-MAC 2x2x8 micro-block; a block's MAC (and pooling) cycles
    are divided by the core count and the output stage is twice as fast (regor s_EthosU65Configs / PerfInfo)."""
    u512, u256 = npu_sim.preset("ethos-u65-512"), npu_sim.preset("ethos-u65-256")
    assert (u512.mac.ublock_h, u512.mac.ublock_w, u512.mac.ublock_c, u512.mac.cores) == (2, 2, 8, 2)
    assert u512.mac.macs_per_cycle == 512 and u512.ppu.cost("requant") == u256.ppu.cost("requant") / 2
    # 2x4x8 tile, 3x3 kernel over 64 channels: 9 steps x 2 passes x 32 cycles = 576 on one core, 288 on two;
    # plus issue 4 and pipeline fill 2.
    assert mac_cycles(u256, MacOp.CONV, 2, 4, 8, 64, 3, 3) == 4 + 2 + 576
    assert mac_cycles(u512, MacOp.CONV, 2, 4, 8, 64, 3, 3) == 4 + 2 + 288
    # an 8-channel tile uses both cores too (a 2x2x16 array would have left half of it idle)
    assert mac_cycles(u512, MacOp.CONV, 2, 4, 8, 256, 1, 1) == 4 + 2 + 8 * 32 // 2


def test_ethos_u_micro_blocks_are_velas():
    """Every Ethos-U preset's OFM micro-block is Vela's (its accelerator table: Block(width, height, depth)); the
    U55-128's is 2 wide and 1 high, so a 4-row block of a one-wide map is 4 micro-blocks, not 2."""
    pytest.importorskip("ethosu.vela")
    from ethosu.vela.architecture_features import Accelerator, ArchitectureFeatures
    for acc, cfg in ArchitectureFeatures.accelerator_configs.items():
        ours = npu_sim.preset(acc.value).mac
        u = cfg.ofm_ublock
        assert (ours.ublock_h, ours.ublock_w, ours.ublock_c) == (u.height, u.width, u.depth), acc.value
    assert Accelerator.Ethos_U55_128 in ArchitectureFeatures.accelerator_configs


def test_a_channel_of_a_map_under_one_brick_deep_moves_whole_brick_rows():
    """PACK of two 17-element vectors into a 1x17x2 map (MoveNet's keypoint stack): each input is a 1x17x1 window
    of the output. The map is one 16-deep brick per pixel and a row's bricks are contiguous, so the window's
    write moves 17 bricks of 16 B in 272-byte runs, whole 32-byte SRAM bursts: 272 B / 8 B per cycle = 34
    cycles plus the 32-cycle write latency (Vela charges such a copy about 220 cycles in all; one-byte bursts
    were 17 x 16 x 32 / 8 = 1088 port cycles)."""
    from npu_sim.cost import dma_command_cost
    from npu_sim.isa import dtype_code
    cfg = npu_sim.preset("ethos-u55-256")
    store = Store(0, 0, 0, 0, dtype_code("int8"), 0, 1, 17, 2, 0, 0, 1, 1, 17, 1, 0, 0)
    assert dma_command_cost(cfg, store) == (17, 34, 32)
    # a map deeper than a brick keeps per-pixel runs: channel 1 of a 1x17x32 map is 17 one-byte runs, each
    # charged a whole brick (16 B) at one byte per 32-byte burst: 17 x 16 x 32 / 8
    deep = Store(0, 0, 0, 0, dtype_code("int8"), 0, 1, 17, 32, 0, 0, 1, 1, 17, 1, 0, 0)
    assert dma_command_cost(cfg, deep)[1] == 17 * 16 * 32 // 8
