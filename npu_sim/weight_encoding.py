"""Encoded size of a layer's weight stream (timing only; the simulator computes on the raw weights).

Ethos-U fetches weights compressed in Arm's MLW format. This module follows the encoder Vela 5.2 runs (its C++ core
regor, `mlw_codec`): per OFM-depth slice a 16-byte-aligned table of 10-byte bias/scale entries, then one weight
stream in the order the hardware consumes the weights (regor's depth-first, part-kernel-first or depthwise
traversal, with its zero padding), cut into encoder calls of 128 Ki values. Each call picks a palette of the 32
most frequent values when they cover half the weights (other values are then coded past the palette), codes zeros
as runs when they dominate, and codes the symbols Golomb-Rice in slices that each choose a divisor, a truncated
divisor or uncompressed storage. The stream ends with an end marker and is padded to 16 bytes. The bit count is
computed without producing the bit stream (the cost model needs bytes): palette, zero runs and symbol costs follow
the encoder's rules exactly; its greedy choice of slice boundaries is replaced by the cheapest split over 64-value
steps, and the final unary word of a slice is charged half a chunk.
"""
from __future__ import annotations

import numpy as np

__all__ = ["encoded_weight_bytes", "SCALE_ENTRY_BYTES", "STREAM_ALIGN"]

SCALE_ENTRY_BYTES = 10     # int40 bias + u32 multiplier + u6 shift, per output channel
STREAM_ALIGN = 16          # every sub-stream starts (and ends) on a 16-byte boundary
_SECTION = 128 * 1024      # values regor hands the encoder per call; each call starts a new palette
_MAX_SLICE = (1 << 15) - 1 # SLICELEN is 15 bits
_SLICE_HEADER = 3 + 15 + 3 + 1 + 1     # ZDIV, SLICELEN, WDIV, WTRUNC, NEWPAL
_PALETTE_HEADER = 5 + 5 + 3            # DIROFS, PALSIZE, PALBITS (then PALBITS per entry)
_UNARY_PAD = 6             # unary words go out in whole 12-bit chunks: half a chunk per slice on average
_SWITCH = _SLICE_HEADER + _UNARY_PAD   # bits a change of Rice parameters costs (a new slice)
_EOS_BITS = 3
_CHUNK = 64                # values per step of the parameter search
_ZERO_FREQ = 5             # zeros go as runs only when > 5x the most common other value ...
_MIN_RUN = 2               # ... and runs of >= 2 zeros hold at least half of them
_PALETTE_MAX = 32
_BATCH_VALUES = 1 << 16


def _align(n: int, a: int = STREAM_ALIGN) -> int:
    return -(-n // a) * a


def _cheapest(cost: np.ndarray) -> float:
    """Fewest bits to code chunks with per-chunk ``cost`` [chunks, configs] (inf: the config cannot code the
    chunk), paying ``_SWITCH`` bits whenever the configuration changes (a new slice)."""
    dp = cost[0].copy()
    for row in cost[1:]:
        dp = np.minimum(dp, dp.min() + _SWITCH) + row
    return float(dp.min())


def _chunks(v: np.ndarray):
    pad = (-v.size) % _CHUNK
    vv = np.concatenate([v, np.zeros(pad, v.dtype)]).reshape(-1, _CHUNK) if pad else v.reshape(-1, _CHUNK)
    cnt = np.full(len(vv), _CHUNK, np.int64)
    cnt[-1] -= pad
    return vv, cnt, pad


def _weight_bits(codes: np.ndarray, unc_bits: int) -> float:
    """Bits of the weight symbols: Rice divisor 0..5 (quotient <= 31), truncated Rice 0..5 (quotient <= 2,
    coded in at most 2 unary bits), or uncompressed at ``unc_bits`` (0: not allowed)."""
    vv, cnt, pad = _chunks(codes)
    cols = []
    for div in range(6):
        q = vv >> div
        qmax = q.max(axis=1)
        cols.append(np.where(qmax > 31, np.inf, q.sum(axis=1) + cnt * (1 + div)))
        t = np.minimum(q + 1, 2).sum(axis=1) + cnt * div
        t[-1] -= pad                     # padding zeros cost 1 bit each in the truncated column
        cols.append(np.where(qmax > 2, np.inf, t))
    cols.append(cnt * float(unc_bits) if unc_bits else np.full(len(vv), np.inf))
    return _cheapest(np.stack(cols, axis=1).astype(np.float64))


def _zrun_bits(runs: np.ndarray) -> float:
    """Bits of the zero-run symbols: Rice divisor 0..3."""
    vv, cnt, _ = _chunks(runs)
    cols = [(vv >> div).sum(axis=1) + cnt * (1 + div) for div in range(4)]
    return _cheapest(np.stack(cols, axis=1).astype(np.float64))


def _section_bits(w: np.ndarray) -> float:
    """Bits of one encoder call over ``w`` (int weights, zero point removed, in decode order)."""
    n = w.size
    hist = np.bincount(w + 256, minlength=512)
    zeros = int(hist[256])
    common = int(np.delete(hist, 256).max())
    is0 = np.concatenate([[0], (w == 0).astype(np.int8), [0]])
    d = np.diff(is0)
    runs = np.flatnonzero(d == -1) - np.flatnonzero(d == 1)
    in_runs = int(runs[runs >= _MIN_RUN].sum())
    use_zr = in_runs >= zeros // 2 and zeros > _ZERO_FREQ * common
    # palette over the "palval" codes (magnitude << 1 | sign), zeros left out when they go as runs
    vals = np.arange(-255, 256)
    freq = np.zeros(512, np.int64)
    freq[_palval(vals)] = hist[vals + 256]
    if use_zr:
        freq[0] = 0
    all_cnt = int(freq.sum())
    used = np.flatnonzero(freq)
    all_max = int(used.max()) if used.size else 0
    only_zeros = all_cnt == 0
    dofs = 0
    if all_cnt:
        dofs = next((i for i in range(31) if freq[i]), 31)
    order = np.lexsort((-np.arange(512), -freq))        # frequency, then larger value, first
    nused = used.size
    only_palette = 0 < nused <= _PALETTE_MAX
    max_pal = _PALETTE_MAX if only_palette else min(_PALETTE_MAX, 511 - all_max)
    if max_pal == 1:
        max_pal = 0
    lut = order[:min(max_pal, nused)]
    lut_cnt = int(freq[lut].sum())
    size = max(len(lut), 2) if len(lut) else 0
    if lut_cnt >= all_cnt // 2:
        palsize, palbits_val = size, (int(lut.max()) if len(lut) else 0)
    else:
        palsize, palbits_val = 0, all_max
    palbits = max(2, palbits_val.bit_length())
    if only_palette:
        unc_bits = max(0, palsize - 1).bit_length()
    elif palsize == 0:
        unc_bits = palbits
    else:
        unc_bits = 0
    # symbol of each weight: its palette index, else palsize - dofs + palval (zero as palval 1)
    inv = palsize - dofs + np.maximum(_palval(vals), 1)
    if palsize:
        pv = _palval(vals)
        where = np.full(512, -1)
        where[lut] = np.arange(len(lut))
        hit = where[pv] >= 0
        inv[hit] = where[pv[hit]]
    if use_zr:
        nz = np.flatnonzero(w)
        if only_zeros:
            codes = np.array([inv[255]])
            zr = np.array([0, n - 1])
        else:
            codes = inv[w[nz] + 255]
            zr = np.diff(np.concatenate([[-1], nz, [n]])) - 1
    else:
        codes = inv[w + 255]
        zr = None
    bits = _SLICE_HEADER + _PALETTE_HEADER + palsize * palbits + _UNARY_PAD
    bits += _weight_bits(codes.astype(np.int64), unc_bits)
    bits += _SLICE_HEADER * ((codes.size - 1) // _MAX_SLICE)
    if zr is not None:
        bits += _zrun_bits(zr.astype(np.int64)) + _UNARY_PAD
    return bits


def _stream_bytes(w: np.ndarray) -> int:
    """Encoded bytes of one weight stream (values in decode order, zero point already removed)."""
    w = np.asarray(w, np.int64).ravel()
    if w.size == 0:
        return 0
    bits = sum(_section_bits(w[i:i + _SECTION]) for i in range(0, w.size, _SECTION)) + _EOS_BITS
    return _align(-(-int(np.ceil(bits)) // 8))


def _palval(w: np.ndarray) -> np.ndarray:
    """The encoder's value code: magnitude << 1 | sign."""
    return (np.abs(w) << 1) | (w < 0)


def _part_kernel(ic: int, kernel_elems: int, ifm_bits: int) -> bool:
    """Regor codes a convolution's weights part-kernel-first when that fills the MAC array at least as well
    (ethos_u55.cpp ChooseKernelMethod; fully connected layers never)."""
    if ic <= 8:
        return True
    depth = ic / _align(ic, 32 if ifm_bits == 8 else 16)
    part = ic / _align(ic, 8) * kernel_elems / _align(kernel_elems, 4 if ifm_bits == 8 else 2)
    return part >= depth


def _decode_order(w: np.ndarray, kind: str, ublock_c: int, ifm_ublock: int, ifm_bits: int = 8) -> np.ndarray:
    """[slices, oc, kh, kw, ic] (or [slices, oc, kh, kw] depthwise) weights, one row per slice in the order the
    hardware consumes them, with the zeros the traversal pads in (whole micro-blocks of output channels, kernel
    elements in fours for depthwise / part-kernel, input channels in whole IFM blocks)."""
    s, oc = w.shape[:2]
    ocp = _align(oc, ublock_c)
    if kind == "depthwise" or w.ndim == 4:
        w3 = w.reshape(s, oc, -1)
        k = w3.shape[2]
        out = np.zeros((s, ocp, _align(k, 4)), w.dtype)
        out[:, :oc, :k] = w3
        return out.reshape(s, ocp // ublock_c, ublock_c, -1).transpose(0, 1, 3, 2).reshape(s, -1)
    _, _, kh, kw, ic = w.shape
    k = kh * kw
    part_kernel = kind != "dense" and _part_kernel(ic, k, ifm_bits)   # a fully connected layer is depth-first
    if part_kernel:
        kp, icp = _align(k, 4 if ifm_bits == 8 else 2), _align(ic, ifm_ublock)
    else:
        kp, icp = k, _align(ic, (4 if ifm_bits == 8 else 2) * ifm_ublock)
    w5 = np.zeros((s, ocp, kp, icp), w.dtype)
    w5[:, :oc, :k, :ic] = w.reshape(s, oc, k, ic)
    og, iu = ocp // ublock_c, icp // ifm_ublock
    w6 = w5.reshape(s, og, ublock_c, kp, iu, ifm_ublock)
    if part_kernel:
        # part-kernel: IFM micro-block, OFM micro-block, kernel element, (out, in) within the micro-blocks
        return w6.transpose(0, 4, 1, 3, 2, 5).reshape(s, -1)
    # depth-first: IFM block (4 micro-blocks at 8 bits), OFM micro-block, kernel element, IFM micro-block, ...
    per = 4 if ifm_bits == 8 else 2
    w7 = w6.reshape(s, og, ublock_c, kp, iu // per, per, ifm_ublock)
    return w7.transpose(0, 4, 1, 3, 5, 2, 6).reshape(s, -1)


def encoded_weight_bytes(weights: np.ndarray, zero_point: int, kind: str, slice_depth: int,
                         ublock_c: int = 8, ifm_ublock: int = 8, ifm_bits: int = 8) -> int:
    """Bytes fetched for a layer's weights and bias/scale tables, encoded per OFM-depth slice of
    ``slice_depth`` channels. ``weights`` are packed output-channel-major ([oc, kh, kw, ic] or [oc, kh, kw])."""
    w = np.asarray(weights)
    oc = w.shape[0]
    step = max(1, int(slice_depth))
    total = 0
    for c0 in range(0, oc, step):
        part = np.subtract(w[c0:c0 + step], np.int32(zero_point), dtype=np.int32)
        depth = part.shape[0]
        stream = _decode_order(part.reshape(1, *part.shape), kind, ublock_c, ifm_ublock, ifm_bits)[0]
        total += _align(depth * SCALE_ENTRY_BYTES) + _stream_bytes(stream)
    return total
