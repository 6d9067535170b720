"""Encoded size of a layer's weight stream (timing only; the simulator computes on the raw weights).

Ethos-U fetches weights compressed (Arm's MLW format, as the Vela compiler writes it): per OFM-depth slice a
16-byte-aligned table of 10-byte bias/scale entries, then the weights of that slice in the order the decoder
reads them, each value's zig-zag code (sign in the low bit) Golomb-Rice coded, optionally through a palette of
the most frequent values and with runs of zeros coded as a separate stream; every stream is padded to 16 bytes.
This module computes the size such an encoder reaches (best Rice divisor per chunk, palette and zero runs when
they help) without producing the bit stream: the cost model needs bytes, not bits. The test suite checks the
sizes against Vela's own encoder.
"""
from __future__ import annotations

import numpy as np

__all__ = ["encoded_weight_bytes", "SCALE_ENTRY_BYTES", "STREAM_ALIGN"]

SCALE_ENTRY_BYTES = 10     # int40 bias + u32 multiplier + u6 shift, per output channel
STREAM_ALIGN = 16          # every sub-stream starts on a 16-byte boundary
_CHUNK = 256               # values sharing one Rice divisor (the encoder picks a divisor per slice)
_MAX_DIV = 5               # largest weight Rice divisor
_MAX_ZDIV = 3              # largest zero-run Rice divisor
_SLICE_HEADER_BITS = 24    # per-chunk header: length, divisors, palette/zero-run flags
_STREAM_HEADER_BITS = 32   # per-stream header and palette size fields
_PALETTE_MAX = 32
_PALETTE_ENTRY_BITS = 9


def _align(n: int, a: int = STREAM_ALIGN) -> int:
    return -(-n // a) * a


def _rice_bits(v: np.ndarray, max_div: int, raw_bits: int = 0) -> int:
    """Bits of ``v`` (non-negative ints) coded in chunks, each with its cheapest Rice divisor, or stored
    uncompressed at ``raw_bits`` per value when that is cheaper (Vela's regor encoder has this mode for weight
    streams: the width of the largest value, or of the palette index; 0 = not available)."""
    n = v.size
    if n == 0:
        return 0
    pad = (-n) % _CHUNK
    vv = np.concatenate([v, np.zeros(pad, v.dtype)]).reshape(-1, _CHUNK) if pad else v.reshape(-1, _CHUNK)
    counts = np.full(vv.shape[0], _CHUNK, np.int64)
    counts[-1] = _CHUNK - pad
    # padding zeros add nothing to the quotient sums; each real value also costs 1 + k bits
    best = vv.sum(axis=1, dtype=np.int64) + counts
    for k in range(1, max_div + 1):
        np.minimum(best, (vv >> k).sum(axis=1, dtype=np.int64) + counts * (1 + k), out=best)
    if raw_bits:
        np.minimum(best, counts * raw_bits, out=best)
    return int(best.sum()) + _SLICE_HEADER_BITS * vv.shape[0]


def _width(codes: np.ndarray) -> int:
    """Bits per value of a stream stored uncompressed: the width of its largest code (at least 2)."""
    return max(2, int(codes.max()).bit_length()) if codes.size else 2


def _stream_bytes(w: np.ndarray) -> int:
    """Encoded bytes of one weight sub-stream (values in decode order, zero point already removed)."""
    w = w.astype(np.int32).ravel()
    if w.size == 0:
        return 0
    zz = np.where(w < 0, -2 * w - 1, 2 * w)
    # Palette: the most frequent values get the smallest codes when few distinct values occur.
    hist = np.bincount(zz)
    vals = np.flatnonzero(hist)
    pal_bits = 0
    codes = zz
    if len(vals) <= _PALETTE_MAX:
        counts = hist[vals]
        rank = np.zeros(len(hist), np.int32)
        rank[vals[np.lexsort((vals, -counts))]] = np.arange(len(vals))
        pal_codes = rank[zz]
        pal_bits = len(vals) * _PALETTE_ENTRY_BITS
        if _rice_bits(pal_codes, _MAX_DIV) + pal_bits < _rice_bits(zz, _MAX_DIV):
            codes = pal_codes
        else:
            pal_bits = 0
    # Vela 5.2's encoder codes zeros as runs when they outnumber the most common other value 4 to 1 (and only
    # then: measured against its mlw_codec, whose source says 5); a chunk of values may also be stored
    # uncompressed, each at the width of the largest code in the stream.
    zero_runs = bool(hist[0]) and hist[0] > 4 * (int(hist[1:].max()) if hist.size > 1 else 0)
    if not zero_runs:
        return _align(-(-(_rice_bits(codes, _MAX_DIV, _width(codes)) + pal_bits + _STREAM_HEADER_BITS) // 8))
    # Zero runs: the non-zero values, plus the count of zeros before each of them (and after the last).
    nz = zz != 0
    nz_codes = codes[nz]
    if codes is not zz:
        nz_codes = nz_codes - (nz_codes > rank[0])
    else:
        nz_codes = nz_codes - 1
    idx = np.flatnonzero(nz)
    edges = np.concatenate([[-1], idx, [w.size]])
    runs = np.diff(edges) - 1
    best = _rice_bits(nz_codes, _MAX_DIV, _width(nz_codes)) + _rice_bits(runs, _MAX_ZDIV)
    return _align(-(-(best + pal_bits + _STREAM_HEADER_BITS) // 8))


def _decode_order(w: np.ndarray, kind: str, ublock_c: int, ifm_ublock: int) -> np.ndarray:
    """[oc, kh, kw, ic] (or [oc, kh, kw]) weights of one slice in the order the decoder consumes them:
    output channels in groups of ``ublock_c``, then kernel position, then input channels in groups of
    ``ifm_ublock``, innermost (output in group, input in group)."""
    if kind == "depthwise" or w.ndim == 3:
        oc = w.shape[0]
        pad = (-oc) % ublock_c
        w3 = w.reshape(oc, -1)
        w3 = np.concatenate([w3, np.zeros((pad, w3.shape[1]), w3.dtype)])
        # the decoder reads whole micro-blocks: padding channels are coded (as zeros) too
        return w3.reshape(-1, ublock_c, w3.shape[1]).transpose(0, 2, 1).ravel()
    oc, kh, kw, ic = w.shape
    po, pi = (-oc) % ublock_c, (-ic) % ifm_ublock
    if po or pi:
        w4 = np.zeros((oc + po, kh, kw, ic + pi), w.dtype)
        w4[:oc, :, :, :ic] = w
    else:
        w4 = w
    w6 = w4.reshape((oc + po) // ublock_c, ublock_c, kh * kw, (ic + pi) // ifm_ublock, ifm_ublock)
    return w6.transpose(0, 2, 3, 1, 4).ravel()


def encoded_weight_bytes(weights: np.ndarray, zero_point: int, kind: str, slice_depth: int,
                         ublock_c: int = 8, ifm_ublock: int = 8) -> int:
    """Bytes fetched for a layer's weights and bias/scale tables, encoded per OFM-depth slice of
    ``slice_depth`` channels. ``weights`` are packed output-channel-major ([oc, kh, kw, ic] or [oc, kh, kw])."""
    w = np.asarray(weights).astype(np.int32) - np.int32(zero_point)
    oc = w.shape[0]
    step = max(1, int(slice_depth))
    total = 0
    for c0 in range(0, oc, step):
        part = w[c0:c0 + step]
        total += _align(part.shape[0] * SCALE_ENTRY_BYTES)
        total += _stream_bytes(_decode_order(part, kind, ublock_c, ifm_ublock))
    return total
