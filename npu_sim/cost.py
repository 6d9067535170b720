"""Closed-form cycle costs per command (npu-model.md §5.2), shared by the simulator and the tile search.

Pure functions of (config, command shape): the event simulator charges them per command, and the compiler's
tile search uses the same functions to estimate a whole layer before choosing its tiling.
"""
from __future__ import annotations

import math

from .config import NPUConfig
from .isa import (DTYPE_BYTES, LOAD_UPSCALE_H, LOAD_UPSCALE_W, Load, Mac, MacOp, Ppu, PpuOp, Store, TileKind,
                  load_source_window, src1_tile_shape)

__all__ = ["mac_op", "mac_cycles", "ppu_cycles", "pool_cycles", "unary_pool_cycles", "deepened_shape", "block_floor", "block_memory_cycles", "softmax_cycles",
           "transpose_cycles", "resize_cycles", "elementwise_block", "operand_read_burst",
           "operand_reread_cycles", "broadcast_resize_cycles", "binary_timing", "constant_operand_timing", "binary_reread_cycles", "argmax_cycles", "argmax_pool_cycles", "quantized_binary_cycles", "transfer_cycles", "weight_transfer_cycles", "fm_transfer_cycles", "brick_ratio", "window_traffic",
           "dma_command_cost"]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


_FM_CACHE: dict[int, tuple] = {}


def _fm_constants(cfg: NPUConfig) -> tuple:
    """(latency sum, burst bytes, bytes per cycle, brick quantum) of the feature-map area, cached per config."""
    hit = _FM_CACHE.get(id(cfg))
    if hit is not None and hit[0] is cfg:
        return hit[1]
    a = next((a for a in cfg.memory_areas if a.name == cfg.placement.feature_maps), cfg.memory_areas[0])
    consts = (a.read_latency + a.write_latency, a.burst_bytes, a.bytes_per_cycle, cfg.fm_channel_quantum)
    if len(_FM_CACHE) > 64:
        _FM_CACHE.clear()
    _FM_CACHE[id(cfg)] = (cfg, consts)
    return consts


def block_memory_cycles(cfg: NPUConfig, in_hwc: tuple[int, int, int], out_hwc: tuple[int, int, int],
                        in_bytes: int = 1, out_bytes: int = 1) -> float:
    """Cycles to read one IFM block and write one OFM block of the feature-map area, each with its latency
    (bricked maps move in rows of 16-deep bricks)."""
    lat, burst, bpc, q = _fm_constants(cfg)
    total = float(lat)
    for (h, w, c), e in ((in_hwc, in_bytes), (out_hwc, out_bytes)):
        nbytes = h * w * (-(-c // q)) * q * e
        run = w * min(c, q) * e if q > 1 else w * c * e
        total += nbytes * burst / min(burst, max(run, 1)) / bpc
    return total


def block_floor(cfg: NPUConfig, work: float, in_hwc: tuple[int, int, int], out_hwc: tuple[int, int, int],
                in_bytes: int = 1, out_bytes: int = 1) -> float:
    """The least a block command costs (Vela's per-block command cost): its serial work, the IFM-block read
    and OFM-block write included, over ``overheads.block_overlap`` overlapping stages; 0 when there is none."""
    d = cfg.overheads.block_overlap
    if d <= 0:
        return 0.0
    return (block_memory_cycles(cfg, in_hwc, out_hwc, in_bytes, out_bytes) + work) / d


def _output_cycles(cfg: NPUConfig, oh: int, ow: int, oc: int) -> float:
    p = cfg.ppu
    return oh * ow * _cdiv(oc, p.channel_quantum) * p.channel_quantum * p.cost("requant")


def mac_op(kind: str, out_hwc: tuple[int, int, int], kernel: tuple[int, int]) -> MacOp:
    """The MAC operation of a layer: DEPTHWISE, or CONV_ROW for a convolution whose whole OFM is one row of
    even width under a one-row kernel (Vela's 1x4 micro-block case), else CONV."""
    if kind == "depthwise":
        return MacOp.DEPTHWISE
    if kind == "conv" and out_hwc[0] == 1 and out_hwc[1] % 2 == 0 and kernel[0] == 1:
        return MacOp.CONV_ROW
    return MacOp.CONV


def mac_cycles(cfg: NPUConfig, op: int, oh: int, ow: int, oc: int, ic: int, kh: int, kw: int,
               ih: int = 0, iw: int = 0, ifm_bits: int = 8) -> int:
    """MAC-array cycles of one tile (Vela's ublock model): conv depth-first or part-kernel, or depthwise (a
    ``CONV_ROW`` tile, of a one-row OFM, in 1x4 micro-blocks when the array's are two high). A block
    one micro-block wide in x/y waits ``step_delay`` per kernel step; with ``overheads.block_overlap`` the block
    costs at least its serial work (``block_floor``; ``ih``/``iw`` is its IFM window). A 16-bit IFM runs at half
    the 8-bit rate, as Vela models it: half the IFM block depth per pass (conv), half the taps per part-kernel
    step, twice the cycles per depthwise micro-block."""
    m = cfg.mac
    wide = 2 if ifm_bits == 16 else 1
    block_depth = m.ifm_block_depth // wide
    ub_h, ub_w = (1, 4) if op == MacOp.CONV_ROW and m.ublock_h == 2 else (m.ublock_h, m.ublock_w)
    n_xy = _cdiv(oh, ub_h) * _cdiv(ow, ub_w)
    n_z = _cdiv(oc, m.ublock_c)
    k = kh * kw
    delay = 0
    if op == MacOp.DEPTHWISE:
        steps = _cdiv(k, m.dw_kernel_group)
        core = n_z * steps * max(m.weight_buffer_min, m.dw_cycles_per_ublock * n_xy * wide)
        passes = 1
    else:
        c_xy = m.ifm_block_depth // m.dot_depth
        step = max(m.weight_buffer_min, c_xy * n_xy)
        passes = _cdiv(ic, block_depth)
        core = n_z * k * passes * step
        steps = k
        if m.part_kernel and ic < block_depth:
            # Shallow IFM: kernel taps share the dot depth (Vela's part-kernel-first traversal).
            steps = _cdiv(k, max(1, c_xy // wide))
            part = n_z * steps * _cdiv(min(ic, block_depth), m.dot_depth) * passes * step
            if part < core:
                core = part
                passes *= _cdiv(min(ic, block_depth), m.dot_depth)
            else:
                steps = k
    if m.step_delay and n_xy == 1:
        delay = m.step_delay * (steps if n_z == 1 else (steps - 1) * n_z) * passes
    dpu = _cdiv(core + delay, m.cores)   # cores share the block's OFM depth
    if cfg.overheads.block_overlap:
        ibc = min(ic, block_depth) if op != MacOp.DEPTHWISE else ic
        floor = block_floor(cfg, dpu + _output_cycles(cfg, oh, ow, oc), (ih or oh, iw or ow, ibc), (oh, ow, oc))
        dpu = max(dpu, math.ceil(floor))
    return cfg.overheads.cmd_issue + m.pipe_fill + dpu


def pool_cycles(cfg: NPUConfig, op: int, oh: int, ow: int, oc: int, kh: int, kw: int, ih: int = 0, iw: int = 0,
                in_bytes: int = 1, out_rate: float = 0.0) -> int:
    """A pooling tile on the MAC engine (Ethos-U): per 8x8 sub-kernel at least 4 steps per OFM micro-block, one
    per tap beyond that, each step ``pool_tap_cycles`` per byte of input element; the output stage (requantizing
    for average pooling, a plain pass for max) runs in parallel, so the slower of the two bounds the tile, and
    the tile costs at least its per-block floor."""
    m, p = cfg.mac, cfg.ppu
    n_ub = _cdiv(oh, m.ublock_h) * _cdiv(ow, m.ublock_w) * _cdiv(oc, m.ublock_c)
    dpu = 0
    for y in range(0, kh, 8):
        for x in range(0, kw, 8):
            dpu += max(4, min(8, kh - y) * min(8, kw - x)) * n_ub
    dpu *= m.pool_tap_cycles * (in_bytes if m.pool_tap_cycles > 1 else 1)
    dpu = _cdiv(dpu, m.cores)
    out = oh * ow * _cdiv(oc, p.channel_quantum) * p.channel_quantum * (out_rate or p.cost(
        "requant" if op == PpuOp.AVG_POOL else "copy"))
    floor = block_floor(cfg, dpu + out, (ih or oh, iw or ow, oc), (oh, ow, oc), in_bytes) if dpu else 0.0
    return cfg.overheads.cmd_issue + p.command_overhead + math.ceil(max(dpu, out, floor))


def ppu_cycles(cfg: NPUConfig, op: int, oh: int, ow: int, oc: int, ih: int, iw: int, ic: int,
               taps: int = 1, from_mac: bool = False, kernel: tuple[int, int] = (1, 1), in_bytes: int = 1,
               out_bytes: int = 1, perm: tuple[int, int, int] = (0, 1, 2), elem_bytes: int = 1,
               bilinear: bool = False, half_pixel: bool = False, whole: tuple[int, ...] = (),
               binary: tuple[int, int, int] = (0, 0, 0), in0: tuple[int, int] = (0, 0)) -> int:
    """Cycles of one PPU command (its output stage; with ``overheads.block_overlap`` at least the block floor).
    SOFTMAX / TRANSPOSE / RESIZE are charged their share of Vela's operation sequence (``lowered_op_cycles``).
    ``binary``: an ADD / MUL's (in2_area, in2_burst, nhwc) timing parameters (``binary_timing``); a RAW_BINARY's
    too, and ``in0``: its constant src0's (area + 1, burst) (``constant_operand_timing``)."""
    if op in (PpuOp.SOFTMAX, PpuOp.TRANSPOSE, PpuOp.RESIZE):   # Vela's multi-operation lowerings (below)
        return lowered_op_cycles(cfg, op, oh, ow, oc, perm, elem_bytes, bilinear, half_pixel, whole)
    if op in (PpuOp.PRELU, PpuOp.SQUARED_DIFF):   # Vela's elementwise sequences (below); src1 taken full size
        return quantized_binary_cycles(cfg, op, oh * ow * oc, oh * ow * oc)
    if op == PpuOp.ARGMAX:   # Vela's depthwise / max pools / LUT / casts sequence (below)
        rows = whole[0] if whole else oh * ow
        return _cdiv(argmax_cycles(cfg, rows, ic, out_bytes) * oh * ow, max(rows, 1))
    p = cfg.ppu
    if p.pool_on_mac and op in (PpuOp.MAX_POOL, PpuOp.AVG_POOL):
        return pool_cycles(cfg, op, oh, ow, oc, *kernel, ih, iw, in_bytes)
    if p.pool_on_mac and op in UNARY_AS_POOL and not from_mac and in_bytes <= 2:
        return unary_pool_cycles(cfg, op, oh, ow, oc, in_bytes)
    q = p.channel_quantum if from_mac or not p.elementwise_quantum else p.elementwise_quantum
    if op in (PpuOp.ADD, PpuOp.MUL) and binary[2] & 2:
        q = 1   # an NHWC OFM (read by the host): Vela's elementwise output stage counts its exact elements
    out_elems = oh * ow * _cdiv(oc, q) * q
    if op == PpuOp.REQUANT:
        work = out_elems * p.cost("requant")
    elif op == PpuOp.ADD:
        work = max(out_elems * p.cost("add"), binary_reread_cycles(cfg, binary, oh, ow, oc, in_bytes))
    elif op == PpuOp.GATE_ADD:   # regor's output rate of an Add with a fused table activation: the slower of the two
        work = out_elems * max(p.cost("add"), p.cost("lut"))
    elif op == PpuOp.RAW_BINARY:
        # Vela's output rates: MAXIMUM / MINIMUM at its 'other elementwise' rate (the requantize rate on every
        # Ethos-U preset), 32-bit operands at about its add rate (both mostly bound by their memory traffic)
        work = out_elems * p.cost("add" if in_bytes == 4 else "requant")
        work = max(work, _raw_binary_port_cycles(cfg, binary, in0, oh, ow, oc, in_bytes))
    elif op == PpuOp.MUL:
        work = max(out_elems * p.cost("mul"), binary_reread_cycles(cfg, binary, oh, ow, oc, in_bytes))
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
    if cfg.overheads.block_overlap:
        # the IFM window of a MAC's output stage was read by its MAC command
        src = (oh, ow, 0) if from_mac else (ih, iw, ic)
        work = max(work, block_floor(cfg, work, src, (oh, ow, oc), in_bytes, out_bytes))
    return cfg.overheads.cmd_issue + p.command_overhead + math.ceil(work)


# Ethos-U runs a lone requantize (TFLite QUANTIZE), a lone activation (clip / relu; a lookup table is one) and a
# memory copy as a 1x1 average pool on the MAC engine (Vela's AvgPool "nop": regor ArchEthosU55::UseAvgPoolNop,
# GetHWOp -> Pooling).
UNARY_AS_POOL = (PpuOp.REQUANT, PpuOp.COPY, PpuOp.LUT)


def deepened_shape(h: int, w: int, c: int, min_depth: int = 16) -> tuple[int, int, int]:
    """Vela's reshape of an elementwise-like op whose OFM is shallow (fewer than 8 channels, more than 16
    elements; regor ``ReshapeToIncreaseDepth``): the element count's prime factors, smallest first, make a depth
    of at least ``min_depth``; the rest is split between height and width, height the larger."""
    n = h * w * c
    if c >= 8 or n <= 16:
        return h, w, c
    primes, m = [], n
    while m % 2 == 0:
        primes.append(2)
        m //= 2
    f = 3
    while f * f <= m:
        while m % f == 0:
            primes.append(f)
            m //= f
        f += 2
    if m > 1:
        primes.append(m)
    depth, i = 1, 0
    while i < len(primes) and depth < min_depth:
        depth *= primes[i]
        i += 1
    hh = ww = 1
    for q in primes[i:]:
        if ww < hh:
            ww *= q
        else:
            hh *= q
    return max(hh, ww), min(hh, ww), depth


def unary_pool_cycles(cfg: NPUConfig, op: int, oh: int, ow: int, oc: int, in_bytes: int = 1) -> int:
    """A lone requantize / clip / lookup-table tile as Vela runs it on Ethos-U: a 1x1 average pool whose output
    stage runs at the average pool's rate (a table costs more only as a second, fused op: Vela's activation
    rates apply to fused activations). Shallow maps are viewed deeper when lowered, as Vela reshapes them
    (``deepened_shape``)."""
    return pool_cycles(cfg, PpuOp.AVG_POOL, oh, ow, oc, 1, 1, in_bytes=in_bytes, out_rate=cfg.ppu.cost("requant"))


def ppu_command_cycles(cfg: NPUConfig, c: Ppu) -> int:
    if c.op == PpuOp.TRANSPOSE:
        perm = (c.param("perm0"), c.param("perm1"), c.param("perm2"))
        return ppu_cycles(cfg, c.op, c.oh, c.ow, c.oc, c.ih, c.iw, c.ic, perm=perm,
                          elem_bytes=DTYPE_BYTES[c.in_dtype])
    if c.op == PpuOp.RESIZE:
        return ppu_cycles(cfg, c.op, c.oh, c.ow, c.oc, c.ih, c.iw, c.ic, bilinear=bool(c.param("bilinear")),
                          half_pixel=c.param("ctm") == 2,
                          whole=tuple(c.param(k) for k in ("in_h", "in_w", "out_h", "out_w", "channels")))
    if c.op == PpuOp.SOFTMAX:
        return ppu_cycles(cfg, c.op, c.oh, c.ow, c.oc, c.ih, c.iw, c.ic, whole=(c.param("rows"), c.param("width")))
    if c.op == PpuOp.PRELU and DTYPE_BYTES[c.in_dtype] == 2:   # an int16 LEAKY_RELU (its alpha operand a constant)
        identity = (c.param("m_id"), c.param("shift_id")) == (1 << 30, 1)
        return leaky_relu16_cycles(cfg, c.oh * c.ow * c.oc, identity, bool(c.param("above_one")))
    if c.op in (PpuOp.PRELU, PpuOp.SQUARED_DIFF):
        h2, w2, c2 = src1_tile_shape(c.ih, c.iw, c.ic, c.src1_bcast)
        general = c.op == PpuOp.PRELU and bool(c.param("above_one"))
        return quantized_binary_cycles(cfg, c.op, c.oh * c.ow * c.oc, h2 * w2 * c2, general)
    if c.op == PpuOp.ARGMAX:
        return ppu_cycles(cfg, c.op, c.oh, c.ow, c.oc, c.ih, c.iw, c.ic, out_bytes=DTYPE_BYTES[c.out_dtype],
                          whole=(c.param("rows"),))
    if c.op == PpuOp.RAW_BINARY:   # int32 operands are feature maps here, not a MAC's accumulators
        return ppu_cycles(cfg, c.op, c.oh, c.ow, c.oc, c.ih, c.iw, c.ic, in_bytes=DTYPE_BYTES[c.in_dtype],
                          out_bytes=DTYPE_BYTES[c.out_dtype],
                          binary=(c.param("in2_area"), c.param("in2_burst"), c.param("nhwc")),
                          in0=(c.param("in0_area"), c.param("in0_burst")))
    pool = c.op in (PpuOp.MAX_POOL, PpuOp.AVG_POOL)
    kernel = (c.param("kh"), c.param("kw")) if pool else (1, 1)
    binary = (c.param("in2_area"), c.param("in2_burst"), c.param("nhwc")) if c.op in (PpuOp.ADD, PpuOp.MUL) \
        else (0, 0, 0)
    return ppu_cycles(cfg, c.op, c.oh, c.ow, c.oc, c.ih, c.iw, c.ic, kernel[0] * kernel[1],
                      from_mac=c.in_dtype == 3, kernel=kernel, in_bytes=DTYPE_BYTES[c.in_dtype],
                      out_bytes=DTYPE_BYTES[c.out_dtype], binary=binary)


def mac_command_cycles(cfg: NPUConfig, c: Mac) -> int:
    if c.w_ic and c.w_ic != c.ic:
        # one IFM depth slice of a block: its share (by channels) of the whole block's cycles, so the slices of
        # a block add up to the block as Vela costs it (one command issue, one per-block floor)
        block = mac_cycles(cfg, c.op, c.oh, c.ow, c.oc, c.w_ic, c.kh, c.kw, c.ih, c.iw, 8 * DTYPE_BYTES[c.in_dtype])
        return block * (c.ic0 + c.ic) // c.w_ic - block * c.ic0 // c.w_ic
    return mac_cycles(cfg, c.op, c.oh, c.ow, c.oc, c.ic, c.kh, c.kw, c.ih, c.iw, 8 * DTYPE_BYTES[c.in_dtype])


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


def weight_transfer_cycles(cfg: NPUConfig, area_index: int, nbytes: int, ratio: float = 1.0) -> int:
    """Port cycles of a weight stream: its encoded bytes (``ratio``: encoded / raw) over the bandwidth. The
    streams are contiguous and 16-byte aligned, so a short one pays no partial-burst penalty (Vela charges the
    encoded size: ElementTransferToBytes)."""
    if nbytes <= 0:
        return 0
    return math.ceil(nbytes * ratio / cfg.memory_areas[area_index].bytes_per_cycle)


def brick_ratio(cfg: NPUConfig, channels: int) -> float:
    """Bytes moved per useful byte of a feature-map window ``channels`` deep (channels padded to bricks)."""
    q = cfg.fm_channel_quantum
    return _cdiv(channels, q) * q / channels if channels > 0 else 1.0


def fm_transfer_cycles(cfg: NPUConfig, area_index: int, nbytes: int, run: int, channels: int, elem: int,
                       linear: bool = False, read: bool = False) -> int:
    """Port cycles of a feature-map window. Bricked (intermediate) maps move whole bricks, in runs of at least
    one brick. ``linear`` maps (a partition's inputs and outputs stay NHWC for the host) are fetched one pixel's
    window-depth (rounded to the IFM micro-block) per burst, except windows holding every channel of a map a
    whole number of micro-blocks deep (a ``read``; a write only up to 16 bytes deep): the row stride is the
    block depth, so the pixels' runs join (Vela's EstimateMemoryTransfer, NHWC with xStride == block depth)."""
    if cfg.fm_channel_quantum == 1:
        return transfer_cycles(cfg, area_index, nbytes, run)
    if linear:
        q = cfg.mac.dot_depth
        if run > channels * elem and channels % q == 0 and (read or channels * elem <= 16):
            return transfer_cycles(cfg, area_index, nbytes, run)
        burst = _cdiv(channels, q) * q * elem
        if not read:   # an NHWC write goes out at most 16 elements per core a burst (64 bytes at most)
            burst = min(burst, 16 * elem * cfg.mac.cores, 64)
        return transfer_cycles(cfg, area_index, nbytes, min(run, burst))
    q = min(cfg.fm_channel_quantum, channels)
    return transfer_cycles(cfg, area_index, nbytes, max(run, q * elem), brick_ratio(cfg, channels))


def dma_command_cost(cfg: NPUConfig, c: Load | Store, weight_ratio: float = 1.0,
                     linear: bool = False, table_stream: bool = False) -> tuple[int, int, int]:
    """(bytes moved, area-port cycles, latency) of a DMA command; ``weight_ratio`` (encoded / raw bytes of the
    layer's weights and tables) applies to weight and table loads. Weights, and a MAC layer's bias/scale table
    (``table_stream``), are contiguous encoded streams (``weight_transfer_cycles``)."""
    elem = DTYPE_BYTES[c.dtype]
    if isinstance(c, Load) and c.pad & (LOAD_UPSCALE_H | LOAD_UPSCALE_W):
        # an upscaled IFM window reads only its source pixels (the NPU inserts the rest)
        y0, x0, h, w = load_source_window(c)
        nbytes, run = window_traffic(c.img_h, c.img_w, c.img_c, y0, x0, h, w, c.c, elem)
    else:
        nbytes, run = window_traffic(c.img_h, c.img_w, c.img_c, c.y0, c.x0, c.h, c.w, c.c, elem)
    a = cfg.memory_areas[c.area]
    if isinstance(c, Load):
        if c.kind == TileKind.WEIGHT or (c.kind == TileKind.TABLE and table_stream):
            return nbytes, weight_transfer_cycles(cfg, c.area, nbytes, weight_ratio), a.read_latency
        if c.kind == TileKind.TABLE:
            return nbytes, transfer_cycles(cfg, c.area, nbytes, run, weight_ratio), a.read_latency
        if nbytes == 1 and cfg.fm_channel_quantum > 1:
            # an 8-bit scalar operand: Ethos-U takes it from the command's registers, no memory read
            # (Vela's MeasureElementAccess counts no IFM2 access for it)
            return nbytes, 0, 0
        return nbytes, fm_transfer_cycles(cfg, c.area, nbytes, _brick_row_run(cfg, c, run, linear), c.c, elem,
                                          linear, read=True), a.read_latency
    return nbytes, fm_transfer_cycles(cfg, c.area, nbytes, _brick_row_run(cfg, c, run, linear), c.c, elem, linear), \
        a.write_latency


def _brick_row_run(cfg: NPUConfig, c: Load | Store, run: int, linear: bool) -> int:
    """The contiguous run of a window of some channels of a bricked map at most one brick deep: each pixel is
    one brick and a row's bricks are contiguous, so the window moves whole brick rows (Vela's NHCWB16 burst, 16
    elements x the block width)."""
    if linear or not c.c < c.img_c <= cfg.fm_channel_quantum:
        return run
    return max(run, min(c.w, c.img_w) * cfg.fm_channel_quantum * DTYPE_BYTES[c.dtype])


# -- ops Vela lowers to a sequence of NPU operations ------------------------------------------------------------
# The simulator computes these with one PPU command per tile (the reference integer algorithm); the cycles it
# charges are those of the operations Vela's Regor core emits for them (its per-layer CSV lists them with the
# original operator), each costed from the config: compute at the output stage's rates, memory over the
# feature-map (or weight) port, one round-trip latency per operation that streams a full-size tensor.

def _area(cfg: NPUConfig, name: str) -> int:
    return [m.name for m in cfg.memory_areas].index(name)


def _stream(cfg: NPUConfig, nbytes: int, area: str | None = None) -> int:
    """Port cycles of streaming ``nbytes`` contiguously through a memory area (default: the feature maps')."""
    return transfer_cycles(cfg, _area(cfg, area or cfg.placement.feature_maps), nbytes, nbytes)


def _fm_latency(cfg: NPUConfig) -> int:
    a = cfg.memory_areas[_area(cfg, cfg.placement.feature_maps)]
    return a.read_latency + a.write_latency


# SOFTMAX, 8-bit (Regor's sequence): per row of channels a max over the channels (a 1×C max pool), an exp LUT
# subtract, a shift by 12, a sum over the channels; 23 passes on one 32-bit value per row (CLZ, SUB, SHL, MUL,
# ADD: the headroom and a Newton-Raphson reciprocal); then over every element the multiply by the broadcast
# reciprocal (its constant 32-bit operand read from the weight area), the add of the rounding term and the
# shift to the output type.
SOFTMAX_ROW_PASSES = (("add",) * 12) + (("mul",) * 11)
SOFTMAX_FULL_PASSES = 5   # full-size passes that pay a memory round trip (the rest pipeline)


def softmax_cycles(cfg: NPUConfig, rows: int, channels: int, width: int = 0) -> int:
    """Vela's 8-bit SOFTMAX over ``rows`` rows of ``channels`` values (its 30 NPU operations), ``width`` of them
    a row of the map (its blocks; default: all)."""
    p, m = cfg.ppu, cfg.mac
    issue = cfg.overheads.cmd_issue + p.command_overhead
    q = p.elementwise_quantum or p.channel_quantum
    full = rows * channels
    # the channel max: each row's channels are the window of a pool, a micro-block row of outputs at a time
    max_pool = issue + _cdiv(rows, m.ublock_h) * channels * m.dw_cycles_per_ublock
    exp_lut = issue + math.ceil(_cdiv(full, q) * q * p.cost("lut"))
    shift12 = issue + max(math.ceil(full * p.cost("lut")), _stream(cfg, full * 8))          # int32 in and out
    reduce_sum = issue + _stream(cfg, full * 4)
    row_pass = [issue + max(math.ceil(_cdiv(rows, q) * q * p.cost(u)), _stream(cfg, rows * 12))
                for u in SOFTMAX_ROW_PASSES]
    scale = issue + _stream(cfg, full * 12)                                                   # 2 reads, 1 write
    # the rounding ADD's OFM-sized int32 constant, read from the weight area in its NHWC bursts (a row of 16
    # channels is a 64-byte burst: twice a 128-byte flash burst's cycles)
    width = width if 0 < width <= rows else rows
    block = elementwise_block(cfg, _cdiv(rows, width), width, channels, 4)
    burst = operand_read_burst(block, width, channels, 4, True)
    rounding = issue + max(operand_reread_cycles(cfg, _area(cfg, cfg.placement.weights), full, 4, burst),
                           _stream(cfg, full * 8))
    to_out = issue + max(math.ceil(full * p.cost("lut")), _stream(cfg, full * 5))
    return (max_pool + exp_lut + shift12 + reduce_sum + sum(row_pass) + scale + rounding + to_out
            + SOFTMAX_FULL_PASSES * _fm_latency(cfg))


def transpose_passes(perm: tuple[int, int, int]) -> int:
    """How many axis swaps Vela chains for a permutation of height×width×channels: 0, 1 (a swap) or 2 (a
    rotation)."""
    moved = sum(1 for i, a in enumerate(perm) if a != i)
    return 0 if moved == 0 else (1 if moved == 2 else 2)


def transpose_cycles(cfg: NPUConfig, elems: int, elem_bytes: int, perm: tuple[int, int, int]) -> int:
    """Vela's TRANSPOSE: per swap a 1x1 average pool over every element whose OFM strides swap two axes. A swap
    of height and width keeps channel runs contiguous (one read and one write per byte, 8 elements a cycle); a
    swap that moves the channels writes element by element (each byte costs two on the port, 4 a cycle).
    The simulator's tile DMA moves each byte in and out once; a height/width swap is charged its compute only
    (the DMA is its memory traffic), a channel-moving pass its whole port traffic (the strided writes)."""
    p = cfg.ppu
    nbytes = elems * elem_bytes
    issue = cfg.overheads.cmd_issue + p.command_overhead
    n = transpose_passes(perm)
    if n == 0 or (n == 1 and perm[2] == 2):
        # channel runs stay contiguous: the simulator's DMA moves the bytes; the pool streams them
        return issue + math.ceil(elems * p.cost("copy"))
    # element-wise strided writes, invisible to the tile DMA: each pass is bound by its port traffic
    return n * (issue + max(math.ceil(elems * p.cost("copy") * 2), _stream(cfg, 3 * nbytes)))


def resize_cycles(cfg: NPUConfig, in_hw: tuple[int, int], out_hw: tuple[int, int], channels: int,
                  bilinear: bool, half_pixel: bool = False) -> int:
    """Vela's RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR at a 2x/4x/8x factor: one average pool per doubling,
    each reading its IFM through the NPU's 2x nearest upscaling (the output stage at twice its requantize rate,
    every micro-block resampled: ``dw_cycles_per_ublock`` per tap); bilinear's last pass averages a
    factor×factor window. Bilinear with half-pixel centres is Vela's edge-padding copies then four 2x2
    depthwise convolutions, each writing a quarter of the OFM with stride 2 (a whole brick moved per element).
    A 1x1 input is Vela's broadcast ADD (``broadcast_resize_cycles``), an unchanged size one copy."""
    p, m = cfg.ppu, cfg.mac
    issue = cfg.overheads.cmd_issue + p.command_overhead
    (ih, iw), (oh, ow) = in_hw, out_hw
    factor = max(oh // max(ih, 1), ow // max(iw, 1), 1)
    if (ih, iw) == (1, 1) and factor > 1:
        return broadcast_resize_cycles(cfg, oh, ow, channels)
    if factor == 1:
        return issue + max(math.ceil(oh * ow * channels * p.cost("copy")), _stream(cfg, oh * ow * channels * 2)) \
            + _fm_latency(cfg)
    rate = 2 * p.cost("requant") + p.cost("copy") / 2
    if bilinear and half_pixel:
        quarter = _cdiv(oh, 2) * _cdiv(ow, 2) * channels
        # the input copied into a one-pixel border, then the top/bottom rows and the left/right columns (corners
        # included) copied out into the border: MemoryCopy ops, each a 1x1 average pool as Vela runs a copy
        copies = (unary_pool_cycles(cfg, PpuOp.COPY, ih, iw, channels)
                  + 2 * unary_pool_cycles(cfg, PpuOp.COPY, 1, iw, channels)
                  + 2 * unary_pool_cycles(cfg, PpuOp.COPY, ih + 2, 1, channels))
        dw = issue + max(mac_cycles(cfg, MacOp.DEPTHWISE, _cdiv(oh, 2), _cdiv(ow, 2), channels, channels, 2, 2),
                         _stream(cfg, quarter * (4 + cfg.fm_channel_quantum)))
        return copies + 4 * dw + 9 * _fm_latency(cfg)
    total, h, w = 0, ih, iw
    steps = max(int(round(math.log2(factor))), 1)
    for k in range(steps):
        h, w = min(h * 2, oh), min(w * 2, ow)
        taps = factor * factor if bilinear and k == steps - 1 else 1
        n_ub = _cdiv(h, m.ublock_h) * _cdiv(w, m.ublock_w) * _cdiv(channels, m.ublock_c)
        total += issue + max(taps * n_ub * m.dw_cycles_per_ublock, math.ceil(h * w * channels * rate)) \
            + _fm_latency(cfg)
    return total


def lowered_op_cycles(cfg: NPUConfig, op: int, oh: int, ow: int, oc: int, perm: tuple[int, int, int],
                      elem_bytes: int, bilinear: bool, half_pixel: bool, whole: tuple[int, ...]) -> int:
    """One ``oh``×``ow``×``oc`` OFM tile of SOFTMAX, TRANSPOSE or RESIZE. Vela runs softmax and resize as
    operations over the whole tensor (``whole``: SOFTMAX (rows,), RESIZE (in_h, in_w, out_h, out_w, channels)); a tile
    is charged its share of them, so the tiles of a layer add up to Vela's sequence."""
    if op == PpuOp.TRANSPOSE:
        return transpose_cycles(cfg, oh * ow * oc, elem_bytes, perm)
    if op == PpuOp.SOFTMAX:
        rows = whole[0] if whole else oh * ow
        width = whole[1] if len(whole) > 1 else 0
        return _cdiv(softmax_cycles(cfg, rows, oc, width) * oh * ow, max(rows, 1))
    in_h, in_w, out_h, out_w = whole[:4] if whole else (oh, ow, oh, ow)
    channels = whole[4] if len(whole) > 4 and whole[4] else oc   # the whole tensor's depth (Vela's bursts)
    total = resize_cycles(cfg, (in_h, in_w), (out_h, out_w), channels, bilinear, half_pixel)
    return _cdiv(total * oh * ow * oc, max(out_h * out_w * channels, 1))


# -- elementwise operands as Vela accounts them ------------------------------------------------------------------
# Vela 5.2 (regor EthosU55Performance::MeasureElementAccess) counts a binary elementwise op's second operand as
# read once per OFM element whenever it has more than one element, broadcast or not, with the burst length its
# format and the op's block give (EstimateMemoryTransfer): a broadcast per-channel constant read from flash in
# 8-byte bursts costs 16 flash cycles per output element. Its block is the largest OFM block whose IFM(s) fit
# the SHRAM banks left for elementwise inputs (ArchEthosU55::FindBlockConfig / TryBlockConfig).

# Elementwise IFM bank granule by SHRAM bank count (Vela's accelerator table: U55-256/U65 48 banks: 8,
# U55-128 24: 4, U55-32/64 16: 2).
EW_BANK_GRANULE = {48: 8, 24: 4, 16: 2}
SHRAM_BANK_BYTES = 1024
SHRAM_RESERVED_BANKS = 2       # output banks at the start (the LUT's two at the end are not in the local buffer)
EW_BLOCK_MAX = (32, 64, 128)   # Vela's largest OFM block (h, w, c)


def elementwise_block(cfg: NPUConfig, oh: int, ow: int, oc: int, elem_bytes: int = 1,
                      scalar: bool = False) -> tuple[int, int, int]:
    """Vela's OFM block of an elementwise op: the fewest blocks (largest h×w×c) whose IFM block(s), double
    buffered in 1 KiB banks rounded to the bank granule, fit the SHRAM (one IFM for a scalar operand, two
    otherwise); the first found wins a tie (depth outermost, from 16, then height, then width)."""
    m = cfg.mac
    shram = next((b for b in cfg.local_buffers if b.name == "shram"), cfg.local_buffers[0])
    banks = shram.size_bytes // SHRAM_BANK_BYTES + SHRAM_RESERVED_BANKS
    granule = EW_BANK_GRANULE.get(banks, 8)
    free = banks - 2 * SHRAM_RESERVED_BANKS
    sh = _cdiv(min(oh, EW_BLOCK_MAX[0]), m.ublock_h) * m.ublock_h
    sw = _cdiv(min(ow, EW_BLOCK_MAX[1]), m.ublock_w) * m.ublock_w
    sd = _cdiv(min(oc, EW_BLOCK_MAX[2]), m.ublock_c) * m.ublock_c
    depth = max(m.ublock_c, min(sd, 16))
    if depth < oc:
        depth = _cdiv(depth, 16) * 16
    best, best_cost = (min(oh, m.ublock_h), min(ow, m.ublock_w), m.ublock_c), math.inf
    while depth <= sd:
        for h in range(m.ublock_h, sh + 1, m.ublock_h):
            for w in range(m.ublock_w, sw + 1, m.ublock_w):
                nbytes = h * w * _cdiv(depth * elem_bytes, 8) * 8
                ifm_banks = _cdiv(_cdiv(nbytes, SHRAM_BANK_BYTES) * 2, granule) * granule
                if ifm_banks * (1 if scalar else 2) > free:
                    break
                cost = oh * ow * oc / (h * w * depth)
                if oh * ow * oc < 2 * h * w * depth:   # both buffers hold the whole map: preferred
                    cost /= 2
                if cost < best_cost:
                    best, best_cost = (h, w, depth), cost
        depth += m.ublock_c
        if depth < oc:
            depth = _cdiv(depth, 16) * 16
    return best


def operand_read_burst(block: tuple[int, int, int], img_w: int, img_c: int, elem_bytes: int, nhwc: bool) -> int:
    """Burst bytes of an elementwise operand read (Vela's EstimateMemoryTransfer): NHWC reads a block's whole
    rows when the operand is exactly one block deep, else one block depth per burst; a bricked (NHCWB16) map
    reads a whole block when one brick row is the block's depth, else a brick per block column."""
    bh, bw, bd = block
    if nhwc:
        return bw * bd * elem_bytes if img_c * elem_bytes == bd else bd * elem_bytes
    return bw * bd * elem_bytes if img_w * 16 * elem_bytes == bd else 16 * bw * elem_bytes


def operand_reread_cycles(cfg: NPUConfig, area_index: int, elems: int, elem_bytes: int, burst: int) -> int:
    """Port cycles of a second operand read once per output element (``elems``) in ``burst``-byte bursts."""
    a = cfg.memory_areas[area_index]
    return math.ceil(elems * elem_bytes * a.burst_bytes / min(a.burst_bytes, max(burst, 1)) / a.bytes_per_cycle)


def broadcast_resize_cycles(cfg: NPUConfig, oh: int, ow: int, channels: int, elem_bytes: int = 1) -> int:
    """Vela's resize of a 1x1 input (regor RewriteResize): an ADD of the broadcast input and an OFM-sized
    zero-point constant, which it reads from the weight area in the op's block-depth bursts (the input is counted
    once per output element too, a whole block per burst). The slowest of the output stage and the two ports."""
    p = cfg.ppu
    q = cfg.fm_channel_quantum
    elems = oh * ow * _cdiv(channels, q) * q
    block = elementwise_block(cfg, oh, ow, channels, elem_bytes)
    const = operand_reread_cycles(cfg, _area(cfg, cfg.placement.weights), oh * ow * channels, elem_bytes,
                                  operand_read_burst(block, ow, channels, elem_bytes, True))
    fm = _stream(cfg, 2 * elems * elem_bytes)
    return cfg.overheads.cmd_issue + p.command_overhead + max(math.ceil(elems * p.cost("add")), const, fm)


def binary_timing(cfg: NPUConfig, out_hwc: tuple[int, int, int], in2_hwc: tuple[int, int, int], in2_area: int,
                  in2_nhwc: bool, src0_nhwc: bool, out_nhwc: bool, elem_bytes: int = 1) -> tuple[int, int, int]:
    """An ADD / MUL's timing parameters (in2_area, in2_burst, nhwc) as Vela accounts the op: a second operand
    of more than one element that is broadcast (a per-channel vector, a row, ...) is still read once per output
    element (in2_area: its area + 1, in2_burst: its burst bytes, ``operand_read_burst`` under the op's
    ``elementwise_block``); nhwc bit 0: src0 is NHWC (the re-read counts exact channels, else whole bricks),
    bit 1: the OFM is NHWC (the output stage counts exact channels)."""
    nhwc = int(src0_nhwc) | 2 * int(out_nhwc)
    if in2_hwc == out_hwc or in2_hwc[0] * in2_hwc[1] * in2_hwc[2] <= 1:
        return 0, 0, nhwc
    block = elementwise_block(cfg, *out_hwc, elem_bytes)
    return in2_area + 1, operand_read_burst(block, in2_hwc[1], in2_hwc[2], elem_bytes, in2_nhwc), nhwc


def constant_operand_timing(cfg: NPUConfig, out_hwc: tuple[int, int, int], area: int,
                            elem_bytes: int = 1) -> tuple[int, int]:
    """(area + 1, burst bytes) of an OFM-sized NHWC constant first operand of an elementwise op: regor
    materialises one operand of a both-broadcast op as an ADD of an OFM-sized zero constant (from the weight area)
    and that operand broadcast (``ReplaceBroadcastWithAdd``), and reads the constant in the bursts its NHWC rows
    and the op's block give (``operand_read_burst``): a 48x48x17 one costs 8 flash cycles a byte in 16-byte bursts."""
    block = elementwise_block(cfg, *out_hwc, elem_bytes)
    return area + 1, operand_read_burst(block, out_hwc[1], out_hwc[2], elem_bytes, True)


def _raw_binary_port_cycles(cfg: NPUConfig, binary: tuple[int, int, int], in0: tuple[int, int], oh: int, ow: int,
                            oc: int, elem_bytes: int) -> int:
    """The busiest port's cycles for a RAW_BINARY tile's per-element operand reads (a broadcast src1, a constant
    src0): both on one port add up."""
    ports: dict[int, int] = {}
    if binary[0]:
        ports[binary[0]] = binary_reread_cycles(cfg, binary, oh, ow, oc, elem_bytes)
    if in0[0]:
        ports[in0[0]] = ports.get(in0[0], 0) + operand_reread_cycles(cfg, in0[0] - 1, oh * ow * oc, elem_bytes,
                                                                     in0[1])
    return max(ports.values(), default=0)


def binary_reread_cycles(cfg: NPUConfig, binary: tuple[int, int, int], oh: int, ow: int, oc: int,
                         elem_bytes: int = 1) -> int:
    """Port cycles of a broadcast second operand read once per output element of an oh×ow×oc tile (0 when
    ``binary`` charges none): the tile's elements, whole bricks when src0 is bricked."""
    area, burst, nhwc = binary
    if not area:
        return 0
    q = 1 if nhwc & 1 else cfg.fm_channel_quantum
    return operand_reread_cycles(cfg, area - 1, oh * ow * _cdiv(oc, q) * q, elem_bytes, burst)


# ARG_MAX along the channels, 8-bit input, as Vela's Regor core lowers it (GraphIrOptimiser::RewriteArgmax) and
# costs it (its per-layer CSV and debug database): a 1x1 depthwise convolution scaling every value by 2^7 into
# an int16 NHWC map and adding each channel's reversed index as its bias; a max pool over the channels, the map
# viewed as rows × channels × 1 (kernel channels × 1) writing one int16 per row; a 16-bit LUT turning the low 7
# bits back into the index (a 1x1 pool over the deepened map, after the table's DMA into the SHRAM); a cast to
# int32 (and one to int64).
ARGMAX_POOL_ROWS = 4         # the pool's OFM block: every block height costs the same, so FindBlockConfig's tie
                             # rule keeps the tallest up to 4 rows
ARGMAX_MAX_DIM = 65536       # Regor's largest OFM dimension: a longer pool is cut into one op per OFM block
ARGMAX_LUT_BYTES = 2048      # the 16-bit table: 512 32-bit entries
ARGMAX_SPLIT_DEPTH = 16      # Regor's OFM block depth once a map is deeper than one micro-block (OFMSplitDepth)


def _argmax_shift_cycles(cfg: NPUConfig, rows: int, channels: int) -> int:
    """The 1x1 depthwise pass: the output stage over every element (or the MAC array's micro-blocks), or the
    feature-map port when slower: the 8-bit NHWC IFM read and the int16 NHWC OFM written in bursts as long as
    the block's depth allows (whole-pixel runs only when a pixel is exactly one block deep)."""
    m, p = cfg.mac, cfg.ppu
    _, burst, bpc, _ = _fm_constants(cfg)
    depth = m.ublock_c if channels <= m.ublock_c else ARGMAX_SPLIT_DEPTH
    ifm_run = burst if channels == depth else min(burst, depth)
    ofm_run = burst if 2 * channels == depth else min(burst, 2 * depth)
    memory = (rows * channels * burst / ifm_run + rows * channels * 2 * burst / ofm_run) / bpc
    ublocks = _cdiv(rows, m.ublock_h * m.ublock_w) * _cdiv(channels, m.ublock_c)
    compute = max(rows * channels * p.cost("requant"), ublocks * m.dw_cycles_per_ublock / m.cores)
    return math.ceil(max(memory, compute))


def _argmax_pool_op_cycles(cfg: NPUConfig, rows: int, channels: int) -> int:
    """One Regor max pool op over ``rows`` int16 rows of ``channels`` (kernel channels × 1), Vela's cycle
    estimate of an op on its own: blocks of ARGMAX_POOL_ROWS rows, each per 8-wide sub-kernel at least 4 steps
    per OFM micro-block (16-bit: ``pool_tap_cycles`` × 2 cycles each, one step delay per sub-kernel when the
    block is one micro-block), the output stage and a quarter of the block's serial work (the command issue
    limit) beside it, and the first IFM block's read and last OFM block's write with their latencies. The
    blocks are NHWC, ``ublock_c`` deep, so each read or write moves bursts of at most two bytes per channel."""
    m, p, o = cfg.mac, cfg.ppu, cfg.overheads
    a = cfg.memory_areas[_area(cfg, cfg.placement.feature_maps)]
    block = min(rows, ARGMAX_POOL_ROWS)
    n_ub = _cdiv(block, m.ublock_h)
    wide = m.pool_tap_cycles * 2 if m.pool_tap_cycles > 1 else 1
    subs = [min(8, channels - x) for x in range(0, channels, 8)]
    mac = sum(max(4, s) for s in subs) * n_ub * wide
    if n_ub == 1 and m.step_delay:
        mac += m.step_delay * len(subs)
    mac //= m.cores
    blocks = _cdiv(rows, m.ublock_h) / n_ub
    ao = math.ceil(p.cost("max_pool_tap") * block)
    run = min(a.burst_bytes, 2 * m.ublock_c)
    in_w = min(channels, _cdiv(m.ublock_w - 1 + min(channels, 8), m.ublock_w) * m.ublock_w)
    ifm = a.read_latency + int(block * in_w * 2 * a.burst_bytes // run / a.bytes_per_cycle)
    ofm = a.write_latency + int(block * 2 * a.burst_bytes // run / a.bytes_per_cycle)
    cmd = ((abs(ofm - ifm) if blocks > 1 else 0) + mac + ao) / o.block_overlap if o.block_overlap else 0.0
    bal_mac, bal_ao = max(mac, cmd), max(ao, cmd)
    if bal_mac > bal_ao:
        total = int(int(bal_mac * blocks) + bal_ao)
    else:
        total = int(bal_ao * blocks + bal_mac)
    # ... or the port, when slower: each OFM block re-reads its IFM block once per sub-kernel
    fetched = block * in_w * len(subs) * _cdiv(rows, ARGMAX_POOL_ROWS) + rows
    return max(total + ifm + ofm, int(fetched * 2 * a.burst_bytes // run / a.bytes_per_cycle))


def argmax_pool_cycles(cfg: NPUConfig, rows: int, channels: int) -> tuple[int, int]:
    """(cycles of the whole max pool step, cycles of its last op): one op, or one per OFM block when the rows
    exceed ARGMAX_MAX_DIM."""
    if rows <= ARGMAX_MAX_DIM:
        one = _argmax_pool_op_cycles(cfg, rows, channels)
        return one, one
    full, last = divmod(rows, ARGMAX_POOL_ROWS)
    block = _argmax_pool_op_cycles(cfg, ARGMAX_POOL_ROWS, channels)
    tail = _argmax_pool_op_cycles(cfg, last, channels) if last else block
    return full * block + (tail if last else 0), tail


def argmax_cycles(cfg: NPUConfig, rows: int, channels: int, out_bytes: int = 4) -> int:
    """Vela's ARG_MAX over ``rows`` rows of ``channels`` 8-bit values, writing ``out_bytes``-wide indices."""
    p = cfg.ppu
    issue = cfg.overheads.cmd_issue + p.command_overhead
    shift = _argmax_shift_cycles(cfg, rows, channels)
    pools, last_pool = argmax_pool_cycles(cfg, rows, channels)
    # the table's DMA (from the weight area into the SHRAM at a byte per cycle) hides under the op before it
    w = cfg.memory_areas[_area(cfg, cfg.placement.weights)]
    table = max(ARGMAX_LUT_BYTES / w.bytes_per_cycle + w.read_latency, ARGMAX_LUT_BYTES)
    h, wd, d = deepened_shape(rows, 1, 1)
    lut = unary_pool_cycles(cfg, PpuOp.LUT, h, wd, d, in_bytes=2) + max(0, math.ceil(table) - last_pool)
    q = cfg.fm_channel_quantum
    # int16 → int32: an ADD of zero at its output rate, or the bricked int16 read and the NHWC int32 write
    cast = max(math.ceil(rows * p.cost("add")), _stream(cfg, h * wd * _cdiv(d, q) * q * 2 + rows * 4))
    if out_bytes == 8:
        cast += issue + _stream(cfg, rows * 12)             # int32 → int64
    return 3 * issue + shift + pools + lut + cast


# PRELU and SQUARED_DIFFERENCE (Regor's sequences, their per-layer CSVs): elementwise passes over the whole map,
# each streaming its operands and result through the feature-map port: bytes per element of each pass, and which
# operand's size it runs over ("a": the first input's / output's, "b": the second input's, so a broadcast second
# operand's passes are short).
# PRELU whose alphas are all at most 1: MUL by alpha of the 8-bit input, the identity rescale, MAXIMUM of the two.
PRELU_PASSES = (("a", 3), ("a", 8), ("a", 3))
# any alpha above 1: RELU of the input, MINIMUM with 0, MUL by alpha (the constant read through the weight port,
# "w": a broadcast alpha 8 bytes per output element, as Vela's CSV charges it; a full-size one its own bytes), ADD
# of the two parts.
PRELU_GENERAL_PASSES = (("a", 4), ("a", 2), ("w", 8), ("a", 6))
# SQUARED_DIFFERENCE: per operand a cast copy to int32 and its rescale (a MUL); the int32 SUB, its square (MUL) and
# the output rescale (MUL).
SQUARED_DIFF_PASSES = (("a", 5), ("a", 9), ("b", 5), ("b", 9), ("a", 12), ("a", 12), ("a", 9))


# int16 LEAKY_RELU (Regor's ConvertLeakyRelu): with equal input and output scales the U55's LRELU elementwise
# operation (8 bytes per element in its CSV); else MUL by alpha, the identity MUL (16-bit in and out) and MAXIMUM
# (two 16-bit operands); an alpha above 1 (not measured): MINIMUM with 0, MUL by alpha, RELU, ADD.
LEAKY_RELU16_NATIVE_PASSES = (("a", 8),)
LEAKY_RELU16_PASSES = (("a", 4), ("a", 4), ("a", 6))
LEAKY_RELU16_GENERAL_PASSES = (("a", 4), ("a", 4), ("a", 4), ("a", 6))


def leaky_relu16_cycles(cfg: NPUConfig, elems: int, identity: bool, above_one: bool) -> int:
    """Vela's int16 LEAKY_RELU over ``elems`` elements (``identity``: the input and output scales are equal)."""
    p = cfg.ppu
    issue = cfg.overheads.cmd_issue + p.command_overhead
    passes = (LEAKY_RELU16_GENERAL_PASSES if above_one else LEAKY_RELU16_NATIVE_PASSES if identity
              else LEAKY_RELU16_PASSES)
    return sum(issue + max(math.ceil(elems * p.cost("requant")), _stream(cfg, elems * nbytes))
               for _, nbytes in passes)


def quantized_binary_cycles(cfg: NPUConfig, op: int, elems: int, elems_b: int, general: bool = False) -> int:
    """Vela's PRELU / SQUARED_DIFFERENCE over ``elems`` output elements (``elems_b``: the second operand's;
    ``general``: a PRELU with an alpha above 1)."""
    p = cfg.ppu
    issue = cfg.overheads.cmd_issue + p.command_overhead
    passes = SQUARED_DIFF_PASSES if op == PpuOp.SQUARED_DIFF else PRELU_GENERAL_PASSES if general else PRELU_PASSES
    total = 0
    for side, nbytes in passes:
        n = elems_b if side == "b" else elems
        if side == "w" and elems_b >= elems:
            nbytes = 1
        port = _stream(cfg, n * nbytes, cfg.placement.weights if side == "w" else None)
        total += issue + max(math.ceil(n * p.cost("requant")), port)
    return total
