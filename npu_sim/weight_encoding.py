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
_BATCH_VALUES = 1 << 16    # weights costed per batch of slices (bounds the temporary arrays)


def _align(n: int, a: int = STREAM_ALIGN) -> int:
    return -(-n // a) * a


def _rice_rows(v: np.ndarray, max_div: int, raw_bits: np.ndarray | None = None) -> np.ndarray:
    """Bits of each row of ``v`` (non-negative ints, rows of one length) coded in chunks, each chunk with its
    cheapest Rice divisor, or stored uncompressed at ``raw_bits[row]`` bits per value when that is cheaper (Vela's
    regor encoder has this mode for weight streams: the width of the largest value, or of the palette index;
    ``None`` = not available)."""
    rows, n = v.shape
    pad = (-n) % _CHUNK
    vv = (np.concatenate([v, np.zeros((rows, pad), v.dtype)], axis=1) if pad else v).reshape(rows, -1, _CHUNK)
    counts = np.full(vv.shape[1], _CHUNK, np.int64)
    counts[-1] = _CHUNK - pad
    # padding zeros add nothing to the quotient sums; each real value also costs 1 + k bits
    best = vv.sum(axis=2, dtype=np.int64) + counts
    for k in range(1, max_div + 1):
        np.minimum(best, (vv >> k).sum(axis=2, dtype=np.int64) + counts * (1 + k), out=best)
    if raw_bits is not None:
        np.minimum(best, counts[None, :] * np.asarray(raw_bits, np.int64)[:, None], out=best)
    return best.sum(axis=1) + _SLICE_HEADER_BITS * vv.shape[1]


def _rice_bits(v: np.ndarray, max_div: int, raw_bits: int = 0) -> int:
    """Bits of ``v`` (non-negative ints) as ``_rice_rows`` codes one row (``raw_bits`` 0: no uncompressed mode)."""
    if not v.size:
        return 0
    return int(_rice_rows(v.reshape(1, -1), max_div, np.array([raw_bits]) if raw_bits else None)[0])


def _stream_len(bits):  # an int or an array of ints
    """Bytes of a sub-stream of ``bits`` payload bits: its header, whole bytes, padded to the stream alignment."""
    return -(-(-(-(bits + _STREAM_HEADER_BITS) // 8)) // STREAM_ALIGN) * STREAM_ALIGN


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
        return _stream_len(_rice_bits(codes, _MAX_DIV, _width(codes)) + pal_bits)
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
    return _stream_len(best + pal_bits)


def _streams_bytes(w: np.ndarray) -> int:
    """Total encoded bytes of sub-streams of one length, one per row of ``w`` (as ``_stream_bytes`` each).
    The common stream (many distinct values, zeros not coded as runs) is costed for all rows in a few array
    passes; the rest go through ``_stream_bytes``."""
    rows, n = w.shape
    w = w.astype(np.int32, copy=False)
    zz = (w << 1) ^ (w >> 31)                  # zig-zag: 2w, or -2w - 1 when negative
    if -(1 << 14) <= int(w.min()) and int(w.max()) < 1 << 14:
        zz = zz.astype(np.int16)               # 8-bit weights: half the memory traffic of the Rice passes
    k = int(zz.max()) + 1
    hist = np.bincount((zz.astype(np.int64) + (np.arange(rows, dtype=np.int64) * k)[:, None]).ravel(),
                       minlength=rows * k).reshape(rows, k)
    few = np.count_nonzero(hist, axis=1) <= _PALETTE_MAX    # palette candidates
    most_other = hist[:, 1:].max(axis=1) if k > 1 else np.zeros(rows, np.int64)
    zero_runs = (hist[:, 0] > 0) & (hist[:, 0] > 4 * most_other)   # the rule _stream_bytes applies
    common = np.flatnonzero(~few & ~zero_runs)
    total = 0
    if common.size:
        rows_c = zz[common]
        total = int(_stream_len(_rice_rows(rows_c, _MAX_DIV, [_width(r) for r in rows_c])).sum())
    for r in np.flatnonzero(few | zero_runs):
        total += _stream_bytes(w[r])
    return total


def _decode_order(w: np.ndarray, kind: str, ublock_c: int, ifm_ublock: int) -> np.ndarray:
    """[slices, oc, kh, kw, ic] (or [slices, oc, kh, kw]) weights, one row per slice in the order the decoder
    consumes them: output channels in groups of ``ublock_c``, then kernel position, then input channels in
    groups of ``ifm_ublock``, innermost (output in group, input in group)."""
    s, oc = w.shape[:2]
    po = (-oc) % ublock_c   # the decoder reads whole micro-blocks: padding channels are coded (as zeros) too
    if kind == "depthwise" or w.ndim == 4:
        w3 = w.reshape(s, oc, -1)
        if po:
            w3 = np.concatenate([w3, np.zeros((s, po, w3.shape[2]), w3.dtype)], axis=1)
        return w3.reshape(s, -1, ublock_c, w3.shape[2]).transpose(0, 1, 3, 2).reshape(s, -1)
    _, _, kh, kw, ic = w.shape
    pi = (-ic) % ifm_ublock
    if po or pi:
        w5 = np.zeros((s, oc + po, kh, kw, ic + pi), w.dtype)
        w5[:, :oc, :, :, :ic] = w
    else:
        w5 = w
    w7 = w5.reshape(s, (oc + po) // ublock_c, ublock_c, kh * kw, (ic + pi) // ifm_ublock, ifm_ublock)
    return w7.transpose(0, 1, 3, 4, 2, 5).reshape(s, -1)


def encoded_weight_bytes(weights: np.ndarray, zero_point: int, kind: str, slice_depth: int,
                         ublock_c: int = 8, ifm_ublock: int = 8) -> int:
    """Bytes fetched for a layer's weights and bias/scale tables, encoded per OFM-depth slice of
    ``slice_depth`` channels. ``weights`` are packed output-channel-major ([oc, kh, kw, ic] or [oc, kh, kw])."""
    w = np.asarray(weights)
    oc = w.shape[0]
    step = max(1, int(slice_depth))
    full, rem = divmod(oc, step)
    per_slice = w[0].size * step
    batch = max(1, _BATCH_VALUES // per_slice)
    total = 0
    # slices of one length are costed together, a batch at a time (bounded memory); a shorter last slice alone
    batches = [(c0, min(batch, full - c0 // step), step) for c0 in range(0, full * step, batch * step)]
    if rem:
        batches.append((full * step, 1, rem))
    for c0, count, depth in batches:
        part = np.subtract(w[c0:c0 + count * depth], np.int32(zero_point), dtype=np.int32)
        streams = _decode_order(part.reshape(count, depth, *w.shape[1:]), kind, ublock_c, ifm_ublock)
        total += count * _align(depth * SCALE_ENTRY_BYTES) + _streams_bytes(streams)
    return total
