"""Closed-form cycle costs per command (npu-model.md §5.2), shared by the simulator and the tile search.

Pure functions of (config, command shape): the event simulator charges them per command, and the compiler's
tile search uses the same functions to estimate a whole layer before choosing its tiling.
"""
from __future__ import annotations

import math

from .config import NPUConfig
from .isa import DTYPE_BYTES, Load, Mac, MacOp, Ppu, PpuOp, Store, TileKind

__all__ = ["mac_cycles", "ppu_cycles", "transfer_cycles", "fm_transfer_cycles", "brick_ratio", "window_traffic",
           "dma_command_cost"]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def mac_cycles(cfg: NPUConfig, op: int, oh: int, ow: int, oc: int, ic: int, kh: int, kw: int) -> int:
    """MAC-array cycles of one tile (Vela's ublock model): conv depth-first or part-kernel, or depthwise."""
    m = cfg.mac
    n_xy = _cdiv(oh, m.ublock_h) * _cdiv(ow, m.ublock_w)
    n_z = _cdiv(oc, m.ublock_c)
    k = kh * kw
    if op == MacOp.DEPTHWISE:
        core = n_z * _cdiv(k, m.dw_kernel_group) * max(m.weight_buffer_min, m.dw_cycles_per_ublock * n_xy)
    else:
        c_xy = m.ifm_block_depth // m.dot_depth
        step = max(m.weight_buffer_min, c_xy * n_xy)
        blocks = _cdiv(ic, m.ifm_block_depth)
        core = n_z * k * blocks * step
        if m.part_kernel and ic < m.ifm_block_depth:
            # Shallow IFM: kernel taps share the dot depth (Vela's part-kernel-first traversal).
            part = n_z * _cdiv(k, c_xy) * _cdiv(min(ic, m.ifm_block_depth), m.dot_depth) * blocks * step
            core = min(core, part)
    return cfg.overheads.cmd_issue + m.pipe_fill + core


def pool_cycles(cfg: NPUConfig, op: int, oh: int, ow: int, oc: int, kh: int, kw: int) -> int:
    """A pooling tile on the MAC engine (Ethos-U): per 8x8 sub-kernel at least 4 cycles per OFM micro-block, one
    per tap beyond that; the output stage (requantizing for average pooling, a plain pass for max) runs in
    parallel, so the slower of the two bounds the tile."""
    m, p = cfg.mac, cfg.ppu
    n_ub = _cdiv(oh, m.ublock_h) * _cdiv(ow, m.ublock_w) * _cdiv(oc, m.ublock_c)
    dpu = 0
    for y in range(0, kh, 8):
        for x in range(0, kw, 8):
            dpu += max(4, min(8, kh - y) * min(8, kw - x)) * n_ub
    out = oh * ow * _cdiv(oc, p.channel_quantum) * p.channel_quantum * p.cost(
        "requant" if op == PpuOp.AVG_POOL else "copy")
    return cfg.overheads.cmd_issue + p.command_overhead + max(dpu, math.ceil(out))


def ppu_cycles(cfg: NPUConfig, op: int, oh: int, ow: int, oc: int, ih: int, iw: int, ic: int,
               taps: int = 1, from_mac: bool = False, kernel: tuple[int, int] = (1, 1)) -> int:
    p = cfg.ppu
    if p.pool_on_mac and op in (PpuOp.MAX_POOL, PpuOp.AVG_POOL):
        return pool_cycles(cfg, op, oh, ow, oc, *kernel)
    q = p.channel_quantum if from_mac or not p.elementwise_quantum else p.elementwise_quantum
    out_elems = oh * ow * _cdiv(oc, q) * q
    if op == PpuOp.REQUANT:
        work = out_elems * p.cost("requant")
    elif op == PpuOp.ADD:
        work = out_elems * p.cost("add")
    elif op == PpuOp.MUL:
        work = out_elems * p.cost("mul")
    elif op == PpuOp.MAX_POOL:
        work = out_elems * taps * p.cost("max_pool_tap")
    elif op == PpuOp.AVG_POOL:
        work = out_elems * taps * p.cost("avg_pool_tap")
    elif op == PpuOp.MEAN:
        work = ih * iw * _cdiv(ic, q) * q * p.cost("mean_input") + out_elems * p.cost("requant")
    elif op == PpuOp.LUT:
        work = out_elems * p.cost("lut")
    else:
        work = out_elems * p.cost("copy")
    return cfg.overheads.cmd_issue + p.command_overhead + math.ceil(work)


def ppu_command_cycles(cfg: NPUConfig, c: Ppu) -> int:
    pool = c.op in (PpuOp.MAX_POOL, PpuOp.AVG_POOL)
    kernel = (c.param("kh"), c.param("kw")) if pool else (1, 1)
    return ppu_cycles(cfg, c.op, c.oh, c.ow, c.oc, c.ih, c.iw, c.ic, kernel[0] * kernel[1],
                      from_mac=c.in_dtype == 3, kernel=kernel)


def mac_command_cycles(cfg: NPUConfig, c: Mac) -> int:
    return mac_cycles(cfg, c.op, c.oh, c.ow, c.oc, c.ic, c.kh, c.kw)


def window_traffic(img_h: int, img_w: int, img_c: int, y0: int, x0: int, h: int, w: int, c: int,
                   elem: int) -> tuple[int, int]:
    """(bytes moved, contiguous run in bytes) of an HWC window; out-of-image parts are not read (padding)."""
    rows = max(0, min(y0 + h, img_h) - max(y0, 0))
    cols = max(0, min(x0 + w, img_w) - max(x0, 0))
    nbytes = rows * cols * c * elem
    if c < img_c:
        run = c * elem
    elif cols < img_w:
        run = cols * c * elem
    else:
        run = rows * cols * c * elem
    return nbytes, run


def transfer_cycles(cfg: NPUConfig, area_index: int, nbytes: int, run: int, ratio: float = 1.0) -> int:
    """Cycles the memory area's port is busy: burst-efficiency-scaled bytes over bandwidth. ``ratio`` scales
    the bytes on the wire (encoded weights: encoded / raw size)."""
    if nbytes <= 0:
        return 0
    a = cfg.memory_areas[area_index]
    eff = nbytes * a.burst_bytes / min(a.burst_bytes, max(run, 1)) * ratio
    return math.ceil(eff / a.bytes_per_cycle)


def brick_ratio(cfg: NPUConfig, channels: int) -> float:
    """Bytes moved per useful byte of a feature-map window ``channels`` deep (channels padded to bricks)."""
    q = cfg.fm_channel_quantum
    return _cdiv(channels, q) * q / channels if channels > 0 else 1.0


def fm_transfer_cycles(cfg: NPUConfig, area_index: int, nbytes: int, run: int, channels: int, elem: int,
                       linear: bool = False) -> int:
    """Port cycles of a feature-map window. Bricked (intermediate) maps move whole bricks, in runs of at least
    one brick. ``linear`` maps (a partition's inputs and outputs stay NHWC for the host) with more channels than
    the window are fetched one pixel's window-depth (rounded to the IFM micro-block) per burst."""
    if cfg.fm_channel_quantum == 1:
        return transfer_cycles(cfg, area_index, nbytes, run)
    if linear:
        q = cfg.mac.dot_depth
        return transfer_cycles(cfg, area_index, nbytes, min(run, _cdiv(channels, q) * q * elem))
    q = min(cfg.fm_channel_quantum, channels)
    return transfer_cycles(cfg, area_index, nbytes, max(run, q * elem), brick_ratio(cfg, channels))


def dma_command_cost(cfg: NPUConfig, c: Load | Store, weight_ratio: float = 1.0,
                     linear: bool = False) -> tuple[int, int, int]:
    """(bytes moved, area-port cycles, latency) of a DMA command; ``weight_ratio`` (encoded / raw bytes of the
    layer's weights and tables) applies to weight and table loads."""
    elem = DTYPE_BYTES[c.dtype]
    nbytes, run = window_traffic(c.img_h, c.img_w, c.img_c, c.y0, c.x0, c.h, c.w, c.c, elem)
    a = cfg.memory_areas[c.area]
    if isinstance(c, Load):
        if c.kind in (TileKind.WEIGHT, TileKind.TABLE):
            return nbytes, transfer_cycles(cfg, c.area, nbytes, run, weight_ratio), a.read_latency
        return nbytes, fm_transfer_cycles(cfg, c.area, nbytes, run, c.c, elem, linear), a.read_latency
    return nbytes, fm_transfer_cycles(cfg, c.area, nbytes, run, c.c, elem, linear), a.write_latency
