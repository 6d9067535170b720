"""Depthwise int8 convolution (groups = channels, depth multiplier 1) with 16-bit pair dot products.

``Σ_t (x_t − zp)·w_t = Σ_t x_t·w_t − zp·Σ_t w_t``: the second term is a per-channel constant folded at build time
(padded taps read ``x = zp``, so they cancel exactly). ``w − zp_w`` fits int8 and ``x`` is 8-bit, so every
product fits int16·int16 → int32 and the reference's int32 accumulation is reproduced exactly.

Two taps are paired per channel: ``x_t`` and ``x_{t+1}`` (32 channels each, widened to int16) are interleaved
with ``unpacklo/hi`` and multiplied with equally interleaved weights by ``vpdpwssd`` (AVX-512 VNNI; a generic
multiply-add elsewhere), 64 multiply-adds per instruction pair. The interleave permutes channels inside each
128-bit lane; weights and the correction are packed in that order at build time and the two accumulators are
put back in channel order before the (vector) epilogue. Padding is handled per tap only on border pixels;
interior pixels of interior rows run without checks.
"""
from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from .cgutils import I1, I8, I16, I32, I64, alloca_once, for_range, lane_mask, masked_load, vector_const

__all__ = ["try_emit_depthwise_pairs"]

_LLVM_MAJOR = llvm.llvm_version_info[0]
_MAX_ROW_BYTES = 1 << 16  # the int32 accumulators of one output row × 32 channels live on the stack
V16I32 = ir.VectorType(I32, 16)
V32I16 = ir.VectorType(I16, 32)
V32I8 = ir.VectorType(I8, 32)
V32I32 = ir.VectorType(I32, 32)
# Channel of each lane of the "lo" / "hi" accumulator of a 32-channel block (unpack order per 128-bit lane).
_LO = [8 * j + i for j in range(4) for i in range(4)]
_HI = [8 * j + 4 + i for j in range(4) for i in range(4)]
_UNPACK_LO = [v for j in range(4) for i in range(4) for v in (8 * j + i, 32 + 8 * j + i)]
_UNPACK_HI = [v for j in range(4) for i in range(4, 8) for v in (8 * j + i, 32 + 8 * j + i)]
# Back to channel order: channels 0..15 and 16..31 from (lo, hi) (hi lanes are 16..31 of the shuffle).
_OUT = [[(_LO.index(c) if c in _LO else 16 + _HI.index(c)) for c in range(16 * h, 16 * h + 16)] for h in range(2)]


def pack_depthwise(w: np.ndarray, zp_in: int, bias: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """w: [taps, C] (w − zp_w, int8 range) → (weights [nblk, pairs, 2, 32] int16 in unpack order,
    accumulator init [nblk, 2, 16] int32 = −zp_in·Σ_t w (+ bias) in accumulator-lane order); zeros past C and
    past the last tap."""
    taps, c = w.shape
    nblk = (c + 31) // 32
    pairs = (taps + 1) // 2
    wp = np.zeros((pairs * 2, nblk * 32), np.int64)
    wp[:taps, :c] = w
    packed = np.zeros((nblk, pairs, 2, 32), np.int16)
    corr_c = np.zeros(nblk * 32, np.int64)
    corr_c[:c] = -int(zp_in) * w.astype(np.int64).sum(axis=0)
    if bias is not None:
        corr_c[:c] += bias.astype(np.int64)
    corr = np.zeros((nblk, 2, 16), np.int64)
    for b in range(nblk):
        for h, lanes in enumerate((_LO, _HI)):
            chans = b * 32 + np.asarray(lanes)
            for p in range(pairs):
                packed[b, p, h, 0::2] = wp[2 * p, chans]
                packed[b, p, h, 1::2] = wp[2 * p + 1, chans]
            corr[b, h] = corr_c[chans]
    corr32 = (((corr + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)).astype(np.int32)
    return packed, corr32


def _dot_pairs(builder, acc, a, b, vnni: bool):
    """acc[l] += a[2l]·b[2l] + a[2l+1]·b[2l+1] (int16 → int32, wrapping)."""
    if vnni:
        mod = builder.module
        op_ty = V32I16 if _LLVM_MAJOR >= 21 else V16I32
        name = "llvm.x86.avx512.vpdpwssd.512"
        fn = mod.globals.get(name)
        if fn is None:
            fn = ir.Function(mod, ir.FunctionType(V16I32, [V16I32, op_ty, op_ty]), name)
        if op_ty is not V32I16:
            a, b = builder.bitcast(a, op_ty), builder.bitcast(b, op_ty)
        return builder.call(fn, [acc, a, b])
    wide = ir.VectorType(I32, 32)
    prod = builder.mul(builder.sext(a, wide), builder.sext(b, wide))
    undef = ir.Constant(wide, ir.Undefined)
    even = builder.shuffle_vector(prod, undef, ir.Constant(V16I32, list(range(0, 32, 2))))
    odd = builder.shuffle_vector(prod, undef, ir.Constant(V16I32, list(range(1, 32, 2))))
    return builder.add(acc, builder.add(even, odd))


def try_emit_depthwise_pairs(ctx, builder, g, data, w: np.ndarray, zp_in: int, out_dtype: str) -> bool:
    """w: [taps, C] (w − zp_w). Returns False (nothing emitted) when this schedule does not apply."""
    if g.cog != 1 or not ctx.vector_output_ok or data.dtype not in ("int8", "uint8") or g.ow * 128 > _MAX_ROW_BYTES:
        return False
    if w.size and (int(w.min()) < -128 or int(w.max()) > 127):
        return False
    vnni = ctx.kernel.codegen.vnni512
    taps, C = w.shape
    lo, hi = (-128, 127) if data.dtype == "int8" else (0, 255)
    bias = ctx.take_bias()
    bound = np.abs(w.astype(np.int64)).sum(axis=0) * max(hi - int(zp_in), int(zp_in) - lo)
    if bias is not None:
        bound = bound + np.abs(bias.astype(np.int64))
    ctx.set_result_bound(int(bound.max()) if bound.size else 0)
    packed, corr = pack_depthwise(w, zp_in, bias)
    pairs = packed.shape[1]
    wtab = ctx.data(packed)
    ctab = ctx.data(corr)
    c64 = lambda v: ir.Constant(I64, int(v))  # noqa: E731
    ext = builder.sext if data.dtype == "int8" else builder.zext
    zp_vec = vector_const(V32I16, [int(zp_in)] * 32)
    padded = any(g.attrs.padding)
    rowbuf = alloca_once(builder, I32, size=g.ow * 32, name="dwrow")
    row_stride, px_stride = g.w * g.c, g.c

    def body(n, oy, rows, c0, ox, checked: bool, mask, weights, corr_init):
        """One output pixel, 32 channels from ``c0`` (lanes off ``mask`` — a tail block — read as 0)."""
        xs = []
        for t in range(taps):
            ky, kx = divmod(t, g.kw)
            base, y_ok = rows[ky]
            ix = builder.add(builder.mul(ox, c64(g.sw)), c64(kx * g.dw - g.pl))
            inside = None
            if checked:
                inside = builder.and_(y_ok, builder.and_(builder.icmp_signed(">=", ix, c64(0)),
                                                         builder.icmp_signed("<", ix, c64(g.w))))
                ix = builder.select(inside, ix, c64(0))
            off = builder.add(builder.add(base, builder.mul(ix, c64(px_stride))), c0)
            ptr = builder.gep(data.ptr, [off], inbounds=True, source_etype=I8)
            if mask is not None:
                v = masked_load(builder, ptr, V32I8, mask)
            else:
                v = builder.load(ptr, typ=V32I8)
                v.align = 1
            v = ext(v, V32I16)
            if inside is not None:
                v = builder.select(inside, v, zp_vec)
            xs.append(v)
        if taps % 2:
            xs.append(xs[-1])  # its weights are zero
        acc_lo, acc_hi = corr_init
        for p in range(pairs):
            a, b = xs[2 * p], xs[2 * p + 1]
            lo = builder.shuffle_vector(a, b, vector_const(V32I32, _UNPACK_LO))
            hi = builder.shuffle_vector(a, b, vector_const(V32I32, _UNPACK_HI))
            acc_lo = _dot_pairs(builder, acc_lo, lo, weights[p][0], vnni)
            acc_hi = _dot_pairs(builder, acc_hi, hi, weights[p][1], vnni)
        # Channel order again, into the row buffer (the epilogue runs once per row, from one copy of its code).
        for h in range(2):
            out = builder.shuffle_vector(acc_lo, acc_hi, vector_const(V16I32, _OUT[h]))
            p = builder.gep(rowbuf, [builder.add(builder.mul(ox, c64(32)), c64(16 * h))], inbounds=True,
                            source_etype=I32)
            st = builder.store(out, builder.bitcast(p, V16I32.as_pointer()))
            st.align = 4

    # Columns whose taps are all inside the input: [x_lo, x_hi).
    x_lo = min(-(-g.pl // g.sw), g.ow)
    x_hi = max(min((g.w - 1 - (g.kw - 1) * g.dw + g.pl) // g.sw + 1, g.ow), x_lo)

    def block(n, oy, rows, interior_row, blk, tail: int = 0):
        """32 channels from ``blk·32`` for the whole row (only ``tail`` of them in a tail block)."""
        c0 = builder.mul(blk, c64(32))
        weights = []
        for p in range(pairs):
            pair = []
            for h in range(2):
                off = builder.mul(builder.add(builder.mul(blk, c64(pairs * 2)), c64(2 * p + h)), c64(32))
                v = builder.load(builder.gep(wtab.ptr, [off], inbounds=True, source_etype=I16), typ=V32I16)
                v.align = 2
                pair.append(v)
            weights.append(pair)
        corr_init = []
        for h in range(2):
            off = builder.mul(builder.add(builder.mul(blk, c64(2)), c64(h)), c64(16))
            v = builder.load(builder.gep(ctab.ptr, [off], inbounds=True, source_etype=I32), typ=V16I32)
            v.align = 4
            corr_init.append(v)
        mask = lane_mask(32, tail) if tail else None
        with for_range(builder, 0, g.ow, name="ox") as ox:
            if not padded:
                body(n, oy, rows, c0, ox.index, False, mask, weights, corr_init)
            else:
                inner = builder.and_(interior_row, builder.and_(builder.icmp_signed(">=", ox.index, c64(x_lo)),
                                                                builder.icmp_signed("<", ox.index, c64(x_hi))))
                with builder.if_else(inner, likely=True) as (then, otherwise):
                    with then:
                        body(n, oy, rows, c0, ox.index, False, mask, weights, corr_init)
                    with otherwise:
                        body(n, oy, rows, c0, ox.index, True, mask, weights, corr_init)
        # The epilogue: every 16-channel half of the row, in one loop (a tail block's last half is masked).
        halves = c64(2 if not tail else (tail + 15) // 16)
        with for_range(builder, 0, g.ow, name="eox") as ox, for_range(builder, 0, halves, name="eh") as h:
            p = builder.gep(rowbuf, [builder.add(builder.mul(ox.index, c64(32)), builder.mul(h.index, c64(16)))],
                            inbounds=True, source_etype=I32)
            v = builder.load(builder.bitcast(p, V16I32.as_pointer()), typ=V16I32)
            v.align = 4
            valid = None
            if tail:
                valid = builder.sub(c64(tail), builder.mul(h.index, c64(16)))
                valid = builder.select(builder.icmp_signed("<", valid, c64(16)), valid, c64(16))
            ctx.emit_output_vector(builder, [n, oy, ox.index, builder.add(c0, builder.mul(h.index, c64(16)))], v,
                                   out_dtype, valid)

    with ctx.parallel(builder, g.n * g.oh, name="row") as row:
        n = builder.udiv(row, c64(g.oh))
        oy = builder.urem(row, c64(g.oh))
        rows = []
        interior = ir.Constant(I1, 1)
        for ky in range(g.kh):
            iy = builder.add(builder.mul(oy, c64(g.sh)), c64(ky * g.dh - g.pt))
            y_ok = ir.Constant(I1, 1)
            if padded:
                y_ok = builder.and_(builder.icmp_signed(">=", iy, c64(0)), builder.icmp_signed("<", iy, c64(g.h)))
                iy = builder.select(y_ok, iy, c64(0))
                interior = builder.and_(interior, y_ok)
            base = builder.add(builder.mul(n, c64(g.h * row_stride)), builder.mul(iy, c64(row_stride)))
            rows.append((base, y_ok))
        if C // 32:
            with for_range(builder, 0, C // 32, name="cb") as cb:
                block(n, oy, rows, interior, cb.index)
        if C % 32:
            block(n, oy, rows, interior, c64(C // 32), C % 32)
    return True
