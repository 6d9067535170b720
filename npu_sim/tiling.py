"""Tile (block) shape search under local-SRAM capacity, scored with the shared cost model.

A layer's OFM is cut into (bh, bw, bc) tiles. Every tile kind (IFM, weights, tables, accumulators, OFM) gets two
slots in the local buffer that holds it (double buffering); a candidate fits when each buffer can hold all its
slots. Among fitting candidates the one with the lowest estimated cycles wins (ties: larger tiles, then the
candidate order), as Vela searches block configs. The estimate is the steady-state bottleneck (MAC, PPU, each
memory port, each DMA engine) plus one tile of pipeline fill.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from byoc.errors import ConfigError

from .config import TABLE_ENTRY_BYTES, NPUConfig
from .cost import (fm_transfer_cycles, mac_cycles, mac_op, ppu_cycles, transfer_cycles, weight_transfer_cycles,
                   window_traffic)
from .isa import PpuOp, src1_tile_shape

__all__ = ["TilePlan", "Geometry", "plan_layer", "fitting_plans", "best_plan", "ifm_slices", "ALIGN"]

ALIGN = 16


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _align(n: int) -> int:
    return _cdiv(n, ALIGN) * ALIGN


@dataclass(frozen=True)
class Geometry:
    """Everything the tiler needs about one layer, independent of how it will be tiled."""
    kind: str                   # "conv" | "depthwise" | "ppu"
    ppu_op: int                 # PpuOp of the post-processing step
    out_hwc: tuple[int, int, int]
    in_hwc: tuple[int, int, int]
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    dm: int = 1
    n_inputs: int = 1
    in_bytes: int = 1           # element size of the IFM tile
    out_bytes: int = 1
    has_weights: bool = False
    has_table: bool = False     # per-channel table (REQUANT) or a 256-entry LUT
    lut: bool = False
    whole_plane: bool = False   # MEAN: one tile spans the whole H×W
    channel_step: int = 1       # tile channel counts must be multiples of this (depth multiplier)
    in2_bcast: int = 0          # binary ops: src1 broadcast flags (isa.BCAST_*); its tile is one deep there
    in2_in_weights: bool = False  # binary ops: src1 is a constant in the weight area (read through its port)
    weight_ratio: float = 1.0   # encoded / raw bytes of the weights and tables (weight_encoding.py)
    in_linear: bool = False     # the IFM / OFM is a partition input / output (NHWC, not bricked)
    out_linear: bool = False
    whole_channels: bool = False  # SOFTMAX: a tile holds whole rows (every channel)
    perm: tuple[int, int, int] = (0, 1, 2)  # TRANSPOSE: the IFM tile is the OFM tile's box with axes permuted
    resize: bool = False        # RESIZE: an IFM tile is the window of the input an OFM tile's outputs read
    bilinear: bool = False
    half_pixel: bool = False
    whole: tuple[int, ...] = ()  # SOFTMAX (rows,), RESIZE (in_h, in_w, out_h, out_w, channels): the sizes Vela's sequence runs on
    binary: tuple[int, int, int] = (0, 0, 0)  # ADD / MUL: (in2_area, in2_burst, nhwc), cost.binary_timing
    in0: tuple[int, int] = (0, 0)   # RAW_BINARY: (src0's area + 1, burst bytes) of a constant src0 read per element
    all_in_channels: bool = False  # ARG_MAX: an IFM tile holds every channel of its rows; its OFM tile is one deep
    in_area: int = -1           # memory area of the IFM / OFM (-1: the feature-map area)
    out_area: int = -1
    lut_bytes: int = 256        # a LUT's table (2048: an interpolated int16 table, isa.lut_table_bytes)

    def in_tile(self, th: int, tw: int) -> tuple[int, int]:
        if self.whole_plane:
            return self.in_hwc[0], self.in_hwc[1]
        if self.resize:
            # rows/columns a tile's outputs read (an upscale): their share of the input, one more on each side
            (H, W, _), (OH, OW, _) = self.in_hwc, self.out_hwc
            return min(_cdiv(th * H, OH) + 2, H), min(_cdiv(tw * W, OW) + 2, W)
        return ((th - 1) * self.stride[0] + (self.kernel[0] - 1) * self.dilation[0] + 1,
                (tw - 1) * self.stride[1] + (self.kernel[1] - 1) * self.dilation[1] + 1)

    def in_channels(self, tc: int) -> int:
        if self.kind == "conv" or self.all_in_channels:
            return self.in_hwc[2]
        return tc // self.dm if self.kind == "depthwise" else tc

    def weight_bytes(self, tc: int) -> int:
        k = self.kernel[0] * self.kernel[1]
        return tc * k * (self.in_hwc[2] if self.kind == "conv" else 1) if self.has_weights else 0

    def in2_tile(self, ih: int, iw: int, ic: int) -> tuple[int, int, int]:
        return src1_tile_shape(ih, iw, ic, self.in2_bcast)

    def table_bytes(self, tc: int) -> int:
        if self.lut:
            return self.lut_bytes
        return tc * TABLE_ENTRY_BYTES if self.has_table else 0


@dataclass(frozen=True)
class TilePlan:
    bh: int
    bw: int
    bc: int
    order: str                  # "depth_outer": weights resident, IFM re-read per channel slice;
    # "spatial_outer": IFM resident, weights re-read per spatial tile
    slot_bytes: tuple[tuple[str, int], ...]   # kind → bytes of one slot
    estimate: int
    # a convolution's IFM depth per load (0: the whole depth): when a tile's whole-depth IFM window does not fit
    # the local buffer, the IFM streams through it in slices of this many channels (``ifm_slices``)
    ic_slice: int = 0

    def slot(self, kind: str) -> int:
        return dict(self.slot_bytes).get(kind, 0)


def _candidates(n: int, q: int) -> list[int]:
    vals = {n}
    v = q
    while v < n:
        vals.add(v)
        v *= 2
    for k in range(2, 9):
        s = _cdiv(_cdiv(n, k), q) * q
        if 0 < s < n:
            vals.add(s)
    return sorted(vals)


def _splits(n: int, b: int) -> list[tuple[int, int]]:
    """(size, count) of the tiles cutting n into pieces of b (the last one may be smaller)."""
    full, rem = divmod(n, b)
    out = [(b, full)] if full else []
    if rem:
        out.append((rem, 1))
    return out


def ifm_slices(cfg: NPUConfig, g: Geometry) -> list[int]:
    """The IFM depths a convolution may stream its IFM in, largest first: the MAC array's IFM block depth (half
    for a 16-bit IFM, as Vela's) times powers of two, below the whole depth. Ethos-U's SHRAM holds one IFM block
    depth of a block's window at a time (Vela's ifm block depth: 32 channels for 8 bits); a whole-depth window
    that does not fit is read in such slices, the accumulators kept across them."""
    if g.kind != "conv":
        return []
    C = g.in_hwc[2]
    d = cfg.mac.ifm_block_depth // (2 if g.in_bytes == 2 else 1)
    out = []
    while 0 < d < C:
        out.append(d)
        d *= 2
    return out[::-1]


def _slots(g: Geometry, bh: int, bw: int, bc: int, order: str, ic_slice: int = 0) -> dict[str, int]:
    ih, iw = g.in_tile(bh, bw)
    ic = g.in_channels(bc) if order == "depth_outer" or g.kind != "conv" else g.in_hwc[2]
    if ic_slice:
        ic = ic_slice
    ifm = _align(ih * iw * ic * g.in_bytes)
    if g.n_inputs == 2:  # src0 then src1 (broadcast: one deep along its broadcast axes)
        h2, w2, c2 = g.in2_tile(ih, iw, ic)
        ifm += _align(h2 * w2 * c2 * g.in_bytes)
    else:
        ifm *= g.n_inputs
    slots = {"ifm": ifm, "ofm": _align(bh * bw * bc * g.out_bytes)}
    if g.kind in ("conv", "depthwise"):
        slots["acc"] = _align(bh * bw * bc * 4)
        slots["weight"] = _align(g.weight_bytes(bc))
    tb = g.table_bytes(bc)
    if tb:
        slots["table"] = _align(tb)
    return slots


def _fits(cfg: NPUConfig, slots: dict[str, int]) -> bool:
    for b in cfg.local_buffers:
        if sum(2 * slots.get(k, 0) for k in b.holds) > b.size_bytes:
            return False
    return True


def _tile_costs(cfg: NPUConfig, g: Geometry, th: int, tw: int, tc: int) -> tuple[int, int, int, int]:
    """(MAC cycles, PPU cycles, IFM window h, w) of one th×tw×tc tile."""
    ih, iw = g.in_tile(th, tw)
    m = mac_cycles(cfg, mac_op(g.kind, g.out_hwc, g.kernel), th, tw, tc,
                   g.in_channels(tc), *g.kernel, ih, iw, ifm_bits=8 * g.in_bytes) if g.kind != "ppu" else 0
    taps = g.kernel[0] * g.kernel[1] if g.ppu_op in (PpuOp.MAX_POOL, PpuOp.AVG_POOL) else 1
    p = ppu_cycles(cfg, g.ppu_op, th, tw, tc, ih, iw, g.in_channels(tc), taps,
                   from_mac=g.kind != "ppu", kernel=g.kernel, in_bytes=g.in_bytes, out_bytes=g.out_bytes,
                   perm=g.perm, elem_bytes=g.in_bytes, bilinear=g.bilinear, half_pixel=g.half_pixel, whole=g.whole,
                   binary=g.binary, in0=g.in0)
    return m, p, ih, iw


def _terms(cfg: NPUConfig, g: Geometry, bh: int, bw: int, bc: int, order: str, fm_area: int, w_area: int,
           memo: dict, ic_slice: int = 0) -> tuple:
    """Everything ``estimate`` needs that does not depend on the weight ratio (``memo``: tile costs already
    computed for this workload): (compute, DMA-in cycles without the weights, port cycles without the weights,
    DMA-out cycles, pipeline fill without the weights, weight loads, weight bytes, table bytes)."""
    oh, ow, oc = g.out_hwc
    H, W, C = g.in_hwc
    ov = cfg.overheads
    in_area = fm_area if g.in_area < 0 else g.in_area
    out_area = fm_area if g.out_area < 0 else g.out_area
    fm, out_mem = cfg.memory_areas[in_area], cfg.memory_areas[out_area]
    n_c = _cdiv(oc, bc)
    n_sp = _cdiv(oh, bh) * _cdiv(ow, bw)
    mac_t = ppu_t = 0
    first = None
    for th, nh in _splits(oh, bh):
        for tw, nw in _splits(ow, bw):
            for tc, nc in _splits(oc, bc):
                cnt = nh * nw * nc
                key = (th, tw, tc)
                costs = memo.get(key)
                if costs is None:
                    costs = memo[key] = _tile_costs(cfg, g, th, tw, tc)
                m, p, ih, iw = costs
                mac_t += m * cnt
                ppu_t += p * cnt
                if first is None:
                    first = (m, p)
    ih, iw = g.in_tile(bh, bw)
    ic = g.in_channels(bc)
    if g.perm != (0, 1, 2):   # a transpose reads the OFM tile's box with its axes permuted
        box = [0, 0, 0]
        for i, a in enumerate(g.perm):
            box[a] = (bh, bw, bc)[i]
        ih, iw, ic = box
    ih_r, iw_r = min(ih, H), min(iw, W)
    if g.kind == "conv" and order == "spatial_outer":
        ifm_loads, ifm_tile = n_sp * g.n_inputs, ih_r * iw_r * C * g.in_bytes
        w_loads = n_sp * n_c if n_c > 1 else 1
    else:
        ifm_loads, ifm_tile = n_sp * n_c, ih_r * iw_r * ic * g.in_bytes  # src0 (src1 below)
        w_loads = n_c
    run_in = ic * g.in_bytes if ic < C else (iw_r * C * g.in_bytes if iw_r < W else ifm_tile)
    ifm_cyc = fm_transfer_cycles(cfg, in_area, ifm_tile, run_in, ic if order == "depth_outer" else C, g.in_bytes,
                                 g.in_linear, read=True)
    lat_in = fm.read_latency + ov.cmd_issue
    tile_in = ifm_cyc + lat_in   # DMA-in time of one tile's IFM: one load, or one per depth slice
    if ic_slice:
        ifm_cyc = tile_in = 0
        for sc, cnt in _splits(C, ic_slice):
            cyc = fm_transfer_cycles(cfg, in_area, ih_r * iw_r * sc * g.in_bytes, sc * g.in_bytes, sc, g.in_bytes,
                                     g.in_linear, read=True)
            ifm_cyc += cyc * cnt
            tile_in += (cyc + lat_in) * cnt
    ofm_tile = bh * bw * bc * g.out_bytes
    run_out = bc * g.out_bytes if bc < oc else (bw * oc * g.out_bytes if bw < ow else ofm_tile)
    ofm_cyc = fm_transfer_cycles(cfg, out_area, ofm_tile, run_out, bc, g.out_bytes, g.out_linear)
    wb, tb = g.weight_bytes(bc), g.table_bytes(bc)
    n_tiles = n_sp * n_c
    port = [0] * len(cfg.memory_areas)   # busy cycles of each area's port (integers: any order sums exactly)
    port[in_area] += ifm_loads * ifm_cyc
    port[out_area] += n_tiles * ofm_cyc
    if g.lut:
        port[w_area] += transfer_cycles(cfg, w_area, g.lut_bytes, g.lut_bytes)
    dma_in = ifm_loads * tile_in
    if g.n_inputs == 2:
        # src1 per tile, from its own area: a broadcast one is a small window (e.g. 1x1xbc), not a full tile.
        in2_area = w_area if g.in2_in_weights else fm_area
        h2, w2, c2 = g.in2_tile(ih_r, iw_r, ic)
        img2 = g.in2_tile(H, W, C)
        in2_bytes, in2_run = window_traffic(*img2, 0, 0, h2, w2, c2, g.in_bytes)
        in2_cyc = fm_transfer_cycles(cfg, in2_area, in2_bytes, in2_run, c2, g.in_bytes)
        port[in2_area] += n_tiles * in2_cyc
        dma_in += n_tiles * (in2_cyc + cfg.memory_areas[in2_area].read_latency + ov.cmd_issue)
    dma_out = n_tiles * (ofm_cyc + out_mem.write_latency + ov.cmd_issue) / ov.dma_out_channels
    compute = mac_t + ppu_t if cfg.ppu.shares_mac_engine else max(mac_t, ppu_t)
    m, p = first  # type: ignore[misc]
    if ic_slice:   # the first tile's MAC starts after its first slice
        ifm_cyc = fm_transfer_cycles(cfg, in_area, ih_r * iw_r * ic_slice * g.in_bytes, ic_slice * g.in_bytes,
                                     ic_slice, g.in_bytes, g.in_linear)
    fill = (ifm_cyc + lat_in + lat_in) + m + p + ofm_cyc + out_mem.write_latency
    return compute, dma_in, tuple(port), dma_out, fill, lat_in, w_loads, wb, tb


def _weight_tile_cycles(cfg: NPUConfig, g: Geometry, wb: int, tb: int, w_area: int) -> int:
    wr = g.weight_ratio if g.has_weights else 1.0
    return weight_transfer_cycles(cfg, w_area, wb, wr) + (
        weight_transfer_cycles(cfg, w_area, tb, wr) if g.has_weights else transfer_cycles(cfg, w_area, tb, tb, wr))


def _weighted(cfg: NPUConfig, g: Geometry, terms: tuple, w_area: int) -> int:
    """The estimate from ``_terms`` and the layer's weight stream (its encoded / raw ratio)."""
    compute, dma_in, ports, dma_out, fill, lat_in, w_loads, wb, tb = terms
    w_cyc = _weight_tile_cycles(cfg, g, wb, tb, w_area)
    if wb or tb:
        dma_in += w_loads * (w_cyc + 2 * lat_in)
        if not g.lut:
            ports = list(ports)
            ports[w_area] += w_loads * w_cyc
    port_max = max(ports)
    dma_in = max(dma_in / cfg.overheads.dma_in_channels, port_max)
    return int(max(compute, dma_in, dma_out, port_max) + (fill + w_cyc))   # integer fill: one float add


def estimate(cfg: NPUConfig, g: Geometry, bh: int, bw: int, bc: int, order: str, fm_area: int,
             w_area: int, memo: dict | None = None, ic_slice: int = 0) -> int:
    """Estimated cycles of the layer tiled bh×bw×bc (``memo``: tile costs already computed for this layer):
    the steady-state bottleneck (MAC and PPU, each memory port, each DMA direction) plus one tile of fill."""
    return _weighted(cfg, g, _terms(cfg, g, bh, bw, bc, order, fm_area, w_area, {} if memo is None else memo,
                                    ic_slice), w_area)


def _fitting_terms(cfg: NPUConfig, g: Geometry, fm_area: int, w_area: int) -> list[tuple]:
    """(bh, bw, bc, order, slot bytes, terms, IFM slice) of every candidate that fits, in search order. A
    convolution tile whose whole-depth IFM window does not fit streams it in the largest depth slice that does
    (depth_outer only: a spatial_outer tile keeps its whole IFM resident)."""
    oh, ow, oc = g.out_hwc
    h_cands, w_cands, c_cands = _axis_candidates(cfg, g)
    orders = ("depth_outer", "spatial_outer") if g.kind == "conv" else ("depth_outer",)
    buffers = [(b.size_bytes, b.holds) for b in cfg.local_buffers]
    slices = ifm_slices(cfg, g)
    out = []
    memo: dict = {}
    for order in orders:
        for bc in c_cands:
            if order == "spatial_outer" and bc == oc:
                continue  # identical to depth_outer
            for bh in h_cands:
                for bw in w_cands:
                    slots = _slots(g, bh, bw, bc, order)
                    ic_slice = 0
                    if any(sum(2 * slots.get(k, 0) for k in holds) > size for size, holds in buffers):
                        if order != "depth_outer":
                            continue
                        for ic_slice in slices:
                            slots = _slots(g, bh, bw, bc, order, ic_slice)
                            if not any(sum(2 * slots.get(k, 0) for k in holds) > size for size, holds in buffers):
                                break
                        else:
                            continue
                    out.append((bh, bw, bc, order, tuple(sorted(slots.items())),
                                _terms(cfg, g, bh, bw, bc, order, fm_area, w_area, memo, ic_slice), ic_slice))
    return out


def _shared_terms(cfg: NPUConfig, g: Geometry, fm_area: int, w_area: int, memo: dict | None) -> list[tuple]:
    if memo is None:
        return _fitting_terms(cfg, g, fm_area, w_area)
    key = (dataclasses.replace(g, weight_ratio=1.0), fm_area, w_area)
    cands = memo.get(key)
    if cands is None:
        cands = memo[key] = _fitting_terms(cfg, g, fm_area, w_area)
    return cands


def fitting_plans(cfg: NPUConfig, g: Geometry, fm_area: int, w_area: int,
                  memo: dict | None = None) -> list[TilePlan]:
    """Every tile plan the search considers that fits the local SRAM, with its estimate, in search order (the
    tuner measures these; ``plan_layer`` picks the cheapest). ``memo`` (one config, one compile) shares the
    search between layers whose workloads differ only in their weights' values (MobileNetV2 repeats its blocks):
    only the weight stream's cycles are recomputed for each."""
    return [TilePlan(bh, bw, bc, order, slots, _weighted(cfg, g, terms, w_area), ic_slice)
            for bh, bw, bc, order, slots, terms, ic_slice in _shared_terms(cfg, g, fm_area, w_area, memo)]


def _axis_candidates(cfg: NPUConfig, g: Geometry) -> tuple[list[int], list[int], list[int]]:
    oh, ow, oc = g.out_hwc
    m = cfg.mac
    cq = g.channel_step * m.ublock_c // math.gcd(g.channel_step, m.ublock_c)
    if g.kind == "ppu":
        cq = max(g.channel_step, min(cfg.ppu.channel_quantum, oc))
    c_cands = [c for c in _candidates(oc, min(cq, oc)) if c % g.channel_step == 0 or c == oc]
    if g.whole_channels:
        c_cands = [oc]
    h_cands = [oh] if g.whole_plane else _candidates(oh, min(m.ublock_h, oh))
    w_cands = [ow] if g.whole_plane else _candidates(ow, min(m.ublock_w, ow))
    return h_cands, w_cands, c_cands


# A tile streaming its IFM in depth slices issues an IFM load and a MAC command per slice; with two IFM slots the
# DMA runs one slice ahead of the MAC, a turnaround the estimate does not see (the simulator ran a 14x14x576
# 1x1 convolution on U55-128 18% slower than its sliced estimate): a whole-depth plan within this factor of a
# cheaper sliced one is preferred.
SLICED_MARGIN = 1.10


def _prefer_whole_depth(keys: list[tuple], sliced: list[bool], k: int) -> int:
    """Index of the plan to take given the cheapest ``k`` (keys: (estimate, -tile volume))."""
    if not sliced[k]:
        return k
    whole = [i for i in range(len(keys)) if not sliced[i]]
    if not whole:
        return k
    w = min(whole, key=keys.__getitem__)
    return w if keys[w][0] <= keys[k][0] * SLICED_MARGIN else k


def best_plan(plans: list[TilePlan], g: Geometry) -> TilePlan:
    """The default heuristic's choice: the lowest estimate; ties go to the larger tile, then search order (a
    whole-depth plan within ``SLICED_MARGIN`` of a cheaper IFM-sliced one wins)."""
    keys = [(p.estimate, -(p.bh * p.bw * p.bc)) for p in plans]
    best = plans[_prefer_whole_depth(keys, [bool(p.ic_slice) for p in plans],
                                     min(range(len(keys)), key=keys.__getitem__))]
    if not g.whole:
        return best
    # softmax / resize are charged their share of Vela's whole-tensor sequence: smaller tiles only shorten the
    # pipeline fill, so among tiles within 5% of the best estimate the largest (fewest commands) wins
    limit = best.estimate * 1.05
    return max((p for p in plans if p.estimate <= limit), key=lambda p: (p.bh * p.bw * p.bc, -p.estimate))


def plan_layer(cfg: NPUConfig, g: Geometry, name: str, fm_area: int, w_area: int,
               plans: list[TilePlan] | None = None, memo: dict | None = None) -> TilePlan:
    """The cheapest fitting tile plan; ConfigError naming the layer and the buffer when even the smallest tile
    does not fit.
    ``plans``: ``fitting_plans``'s answer when the caller has it already; ``memo``: as for ``fitting_plans``."""
    if plans is None and not g.whole:
        # the lowest estimate, ties to the larger tile, then search order (best_plan's choice), without a plan
        # object per candidate
        cands = _shared_terms(cfg, g, fm_area, w_area, memo)
        if cands:
            keys = [(_weighted(cfg, g, t[5], w_area), -(t[0] * t[1] * t[2])) for t in cands]
            k = _prefer_whole_depth(keys, [bool(t[6]) for t in cands], min(range(len(keys)), key=keys.__getitem__))
            bh, bw, bc, order, slots, _, ic_slice = cands[k]
            return TilePlan(bh, bw, bc, order, slots, keys[k][0], ic_slice)
    plans = fitting_plans(cfg, g, fm_area, w_area, memo) if plans is None else plans
    if not plans:
        h_cands, w_cands, c_cands = _axis_candidates(cfg, g)
        slices = ifm_slices(cfg, g)
        smallest = _slots(g, min(h_cands), min(w_cands), min(c_cands), "depth_outer", slices[-1] if slices else 0)
        short = [(b, sum(2 * smallest.get(k, 0) for k in b.holds)) for b in cfg.local_buffers]
        short = [(b, need) for b, need in short if need > b.size_bytes]
        detail = "; ".join(f"local buffer {b.name!r}: size_bytes {b.size_bytes} B < "
                           + " + ".join(f"2×{k} {smallest[k]} B" for k in b.holds if smallest.get(k))
                           + f" = {need} B" for b, need in short)
        raise ConfigError(f"config {cfg.name!r} cannot run layer {name!r}: even its smallest block "
                          f"({min(h_cands)}x{min(w_cands)}x{min(c_cands)}) does not fit the local SRAM ({detail})",
                          hint="raise that buffer's size_bytes (or use a preset with more local SRAM)")
    return best_plan(plans, g)
