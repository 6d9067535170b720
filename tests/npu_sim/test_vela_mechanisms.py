"""Ethos-U timing mechanisms taken from Vela's performance model (npu_performance.py, scheduler.py): pooling on
the MAC engine, the next layer's weights buffered during the current one, feature maps moved in 16-deep bricks.
Expected numbers are worked out by hand from Vela's formulas, not read from the code under test."""
from __future__ import annotations

import numpy as np

import byoc
import npu_sim
from npu_builders import conv_composite, partition
from npu_sim.cost import brick_ratio, pool_cycles
from npu_sim.isa import Load, Mac, PpuOp, TileKind


def test_pooling_costs_max_of_four_and_taps_per_micro_block_per_sub_kernel():
    cfg = npu_sim.preset("ethos-u55-256")   # 2x2x8 micro-block, 4 issue cycles per command
    # 8x8x32 OFM = 64 micro-blocks. 3x3 average: 9 cycles each = 576 > output stage 2048 x 0.25 = 512.
    assert pool_cycles(cfg, PpuOp.AVG_POOL, 8, 8, 32, 3, 3) == 4 + 576
    # 2x2 max: the 4-cycle floor (256) ties the output stage 2048 x 0.125.
    assert pool_cycles(cfg, PpuOp.MAX_POOL, 8, 8, 32, 2, 2) == 4 + 256
    # 10x10 splits into 8x8, 8x2, 2x8 and 2x2 (floored to 4) sub-kernels: 64 + 16 + 16 + 4 = 100 per micro-block.
    assert pool_cycles(cfg, PpuOp.MAX_POOL, 2, 2, 8, 10, 10) == 4 + 100
    # U55-32 has a 1x1x4 micro-block and 8x the output cycles per element.
    small = npu_sim.preset("ethos-u55-32")
    assert pool_cycles(small, PpuOp.AVG_POOL, 2, 2, 8, 3, 3) == 4 + max(9 * 8, 32 * 2)


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
