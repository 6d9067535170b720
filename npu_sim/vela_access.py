"""A convolution's memory accesses as Vela 5.2 (its regor core) counts them, for the Ethos-U presets.

Vela runs a convolution in OFM blocks it chooses itself (``ArchEthosU55::FindBlockConfig``: the block with the
least IFM + weight fetch per output element whose IFM and accumulator buffers fit the SHRAM banks) and charges
the feature-map memory, per block, a whole IFM block over the IFM's whole (brick-rounded) depth, even for the
partial blocks at the map's edges (``MeasureElementAccess``: 65x65 maps in 10x12 blocks read 19% more than the
map); weights it has staged in SRAM are read from there once per block position (``weightsRefetch``), and the
bias/scale stream from flash once per block position too. A layer's time is at least each memory's share of
those bytes (op cycles = max(NPU, each memory's access cycles)).

``access_floor`` is that per-layer lower bound; the simulator holds each MAC command of the layer to its share
of it (``program.LayerInfo.access_floor``), so a layer whose own tiles move fewer bytes than Vela counts is
timed at Vela's count, and one that moves more is unchanged.
"""
from __future__ import annotations

import math

from .config import NPUConfig

__all__ = ["mac_block", "access_floor", "STAGED_WEIGHTS_MAX"]

# SHRAM bank granules by bank count (Vela's accelerator table: IFM 8-bit, 32-bit accumulators):
# U55-256 48 banks (8, 16), U55-128 24 (4, 8), U55-32/64 16 (2, 4).
_GRANULES = {48: (8, 16), 24: (4, 8), 16: (2, 4)}
_BANK = 1024
_RESERVED = 2                  # output banks at the start, LUT banks at the end
_BLOCK_MAX = (32, 64, 128)     # largest OFM block (h, w, c)
_SUBKERNEL = 8                 # sub-kernel limit (8x8)
# Vela stages a layer's weights in SRAM (read from there once per block position) when they are small; the
# largest staged stream seen in its MobileNetV2 schedule is 60 KB, the smallest unstaged 85 KB
STAGED_WEIGHTS_MAX = 64 * 1024


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _round(a: int, q: int) -> int:
    return _cdiv(a, q) * q


def _shram(cfg: NPUConfig) -> tuple[int, int, int] | None:
    """(banks, IFM granule, accumulator granule) of a one-core Ethos-U SHRAM, None for other configs (the
    two-core U65-512's block sharing is not modelled here)."""
    shram = next((b for b in cfg.local_buffers if b.name == "shram"), None)
    if shram is None or cfg.fm_channel_quantum != 16 or cfg.mac.cores != 1:
        return None
    banks = shram.size_bytes // _BANK + _RESERVED
    g = _GRANULES.get(banks)
    return None if g is None else (banks, *g)


def _part_kernel(ic: int, k: int) -> bool:
    """Vela's kernel-method choice (8-bit IFM): part-kernel-first when it uses the MACs at least as well."""
    if ic <= 8:
        return True
    depth_util = ic / _round(ic, 32)
    part_util = ic / _round(ic, 8) * (k / _round(k, 4))
    return part_util >= depth_util


def mac_block(cfg: NPUConfig, depthwise: bool, out_hwc: tuple[int, int, int], in_hwc: tuple[int, int, int],
              kernel: tuple[int, int], stride: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1)
              ) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
    """Vela's (OFM block, IFM block) of an 8-bit convolution or depthwise convolution (FindBlockConfig), or
    None when the config is not an Ethos-U SHRAM or nothing fits."""
    sh = _shram(cfg)
    if sh is None:
        return None
    banks, g_ifm, g_acc = sh
    m = cfg.mac
    uh, uw, uc = m.ublock_h, m.ublock_w, m.ublock_c
    oh, ow, oc = out_hwc
    ih, iw, ic = in_hwc
    kh, kw = kernel
    dkh, dkw = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    part = not depthwise and _part_kernel(ic, kh * kw)
    ifm_depth = _round(min(ic, 16 if part else 32), uc)
    repeats = _cdiv(dkw, _SUBKERNEL) * _cdiv(dkh, _SUBKERNEL)
    s_h = _round(min(oh, _BLOCK_MAX[0]), uh)
    s_w = _round(min(ow, _BLOCK_MAX[1]), uw)
    s_d = _round(min(oc, _BLOCK_MAX[2]), uc)
    depth = max(uc, min(s_d, 16))
    if depth < oc:
        depth = _round(depth, 16)
    ofm_elems = oh * ow * oc
    best, best_cost, best_cov = None, math.inf, math.inf
    wont: set[tuple[int, int]] = set()
    while depth <= s_d:
        for h in range(uh, s_h + 1, uh):
            for w in range(uw, s_w + 1, uw):
                if (h, w) in wont:
                    continue
                bih = _round((h - 1) * stride[0] + min(dkh, _SUBKERNEL), uh)
                biw = _round((w - 1) * stride[1] + min(dkw, _SUBKERNEL), uw)
                bid = depth if depthwise else ifm_depth
                ifm_banks = _round(_cdiv(bih * biw * _round(bid, 8), _BANK) * 2, g_ifm)
                acc_banks = _round(_cdiv(h * w * _round(depth, 8) * 4, _BANK) * 2, g_acc)
                if _RESERVED + ifm_banks > banks - _RESERVED - acc_banks:
                    wont.add((h, w))
                    continue
                full_wh = _cdiv(oh, h) * _cdiv(ow, w)
                weight_fetch = kh * kw * ic * full_wh
                if not depthwise:
                    weight_fetch *= (oc / depth) * depth
                ifm_fetch = bih * biw * ic * repeats * (oh / h) * (ow / w)
                if not depthwise:
                    ifm_fetch *= _cdiv(oc, depth)
                cost = (ifm_fetch + weight_fetch) / ofm_elems
                if ih * iw * ic < bih * biw * bid * 2:
                    cost /= 2
                if cost <= best_cost:
                    choose = cost < best_cost
                    if not choose:
                        cov = ih * iw / max(min(ih, bih) * min(iw, biw), 1)
                        if cov <= best_cov and h <= 4 and w <= 4:
                            best_cov, choose = cov, True
                    else:
                        best_cov = math.inf
                    if choose:
                        best_cost, best = cost, ((h, w, depth), (bih, biw, bid))
        depth += uc
        if depth < oc:
            depth = _round(depth, 16)
    return best


def access_floor(cfg: NPUConfig, depthwise: bool, out_hwc: tuple[int, int, int], in_hwc: tuple[int, int, int],
                 kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
                 encoded_weights: int, table_bytes: int, fm_area: int, w_area: int,
                 out_nhwc: bool = False) -> int:
    """The cycles Vela's access counts bind an 8-bit (depthwise) convolution with a bricked IFM to: the
    feature-map port's IFM blocks + OFM + staged weight re-reads, and the weight port's bias/scale re-reads,
    each over its bandwidth (0 when the config has no Ethos-U SHRAM). An NHWC OFM (``out_nhwc``, read by the
    host) is written in exact channels, in bursts of at most 16 bytes unless it is one block deep and at most
    16 deep (Vela's EstimateMemoryTransfer)."""
    blocks = mac_block(cfg, depthwise, out_hwc, in_hwc, kernel, stride, dilation)
    if blocks is None:
        return 0
    (bh, bw, bd), (bih, biw, _) = blocks
    oh, ow, oc = out_hwc
    ih, iw, ic = in_hwc
    q = cfg.fm_channel_quantum
    n_xy = _cdiv(oh, min(bh, oh)) * _cdiv(ow, min(bw, ow))
    n = n_xy * (1 if depthwise else _cdiv(oc, min(bd, oc)))
    sub = _cdiv(kernel[0], _SUBKERNEL) * _cdiv(kernel[1], _SUBKERNEL)
    ifm = min(bih, ih) * min(biw, iw) * _round(ic, q) * sub * n
    fm, wm = cfg.memory_areas[fm_area], cfg.memory_areas[w_area]
    if out_nhwc:
        burst = bw * oc if bd <= 16 and oc == bd else min(16, bd)   # 16 bytes per core, one core
        ofm = oh * ow * oc * fm.burst_bytes / min(fm.burst_bytes, burst)
    else:
        ofm = oh * ow * _round(oc, q)
    staged = n_xy * encoded_weights if encoded_weights <= STAGED_WEIGHTS_MAX else 0
    return math.ceil(max((ifm + ofm + staged) / fm.bytes_per_cycle, n_xy * table_bytes / wm.bytes_per_cycle))
