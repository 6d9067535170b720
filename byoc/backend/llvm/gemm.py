"""Fast schedules for the quantized anchors: int8 GEMM with dot-product instructions, vectorised depthwise.

GEMM (qnn.conv2d with groups = 1, qnn.dense), with constant weights whose ``w − zp_w`` fits int8:

* ``Σ (x − zp_x)(w − zp_w) = Σ u·w' − (zp_x + 128)·Σ w'`` with ``u = x + 128`` (uint8; for uint8 data u = x and
  the offset is zp_x), ``w' = w − zp_w``. Everything is modular int32 arithmetic, so the split is exact even
  where the reference accumulator wraps. The per-channel correction is folded at build time.
* Weights are packed on the host into blocks of 16 output channels × 4 reduction steps (64 bytes), the layout
  of ``vpdpbusd`` (AVX-512 VNNI): one instruction does 64 multiply-adds. Without VNNI the same dot step is
  generic IR (widen, multiply, add groups of four) with identical results.
* Each parallel tile packs MR output pixels' receptive fields (im2col with 64-byte vector copies, u = x ^ 0x80
  applied while packing; one contiguous copy per kernel row when every tap is inside the input, per-tap copies
  with padded taps = zp_x at the borders) into a stack buffer, whose 4-byte groups are broadcast straight from
  memory; NB blocks of 16 channels at a time are held in MR×NB vector accumulators, initialised with the
  correction (and a bias folded out of the epilogue, ``KernelContext.take_bias``).
* The accumulators go through one copy of the vector epilogue (``KernelContext.emit_output_vector``, 16
  channels per step, the last partial block masked); epilogues without a vector form run the scalar one.

Depthwise (groups = channels): ``depthwise.py`` (16-bit pair dot products, 32 channels per step); the per-pixel
schedule below remains for depth multipliers > 1, wide weights and scalar-only epilogues.
"""
from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from .cgutils import (I8, I16, I32, I64, alloca_once, const_int, for_range, lane_mask, masked_load, masked_store,
                      vector_const)
from .lower_elemwise import emit_cast

__all__ = ["try_emit_qnn_conv_fast", "try_emit_qnn_dense_fast", "pack_gemm_weights"]

_LLVM_MAJOR = llvm.llvm_version_info[0]
V16I32 = ir.VectorType(I32, 16)
V64I8 = ir.VectorType(I8, 64)
_MAX_TILE_BYTES = 1 << 19


def _fits_int8(w: np.ndarray) -> bool:
    return w.size == 0 or (int(w.min()) >= -128 and int(w.max()) <= 127)


def pack_gemm_weights(wmat: np.ndarray, nblk: int | None = None) -> tuple[np.ndarray, int, int]:
    """[Cout, K] int8 → ([nblk, Kp/4, 16, 4] int8, Kp, nblk); zero padding in K and in channels."""
    cout, k = wmat.shape
    kp = (k + 3) // 4 * 4
    nblk = nblk or (cout + 15) // 16
    padded = np.zeros((nblk * 16, kp), np.int8)
    padded[:cout, :k] = wmat
    packed = padded.reshape(nblk, 16, kp // 4, 4).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(packed), kp, nblk


def _blocking(cout: int) -> tuple[int, int, int]:
    """(row tile MR, channel blocks per step NB, padded block count): one tile shape per kernel, so the
    microkernel is emitted once (blocks are padded with zero weights to a multiple of NB)."""
    need = (cout + 15) // 16
    for nb in (4, 3, 2):
        if need % nb == 0:
            break
    else:
        nb = 4 if need > 4 else need
    mr = {1: 8, 2: 8, 3: 6, 4: 6}[nb]
    return mr, nb, (need + nb - 1) // nb * nb


def _correction(wmat: np.ndarray, offset: int, nblk: int, bias: np.ndarray | None = None) -> np.ndarray:
    """Accumulator init per channel: −offset·Σ_k w' (+ a bias taken from the epilogue), wrapped to int32."""
    s = wmat.astype(np.int64).sum(axis=1) * -int(offset)
    if bias is not None:
        s = s + bias.astype(np.int64)
    out = np.zeros(nblk * 16, np.int64)
    out[:wmat.shape[0]] = s
    return wrap_int32(out)


def wrap_int32(v: np.ndarray) -> np.ndarray:
    return (((np.asarray(v, np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)).astype(np.int32)


def _take_bias_and_bound(ctx, wmat: np.ndarray, max_dev: int) -> np.ndarray | None:
    """Fold a leading bias_add into the accumulator init and declare the result's range: each term is
    ``(x − zp)·w'`` with ``|x − zp| ≤ max_dev``."""
    bias = ctx.take_bias()
    bound = wmat.astype(np.int64).__abs__().sum(axis=1) * int(max_dev)
    if bias is not None:
        bound = bound + np.abs(bias.astype(np.int64))
    ctx.set_result_bound(int(bound.max()) if bound.size else 0)
    return bias


def _dot4(builder: ir.IRBuilder, acc, a, b, vnni: bool):
    """acc[l] += Σ_{i<4} u8(a[4l+i])·s8(b[4l+i]) (wrapping int32)."""
    if vnni:
        mod = builder.module
        # LLVM 21 retyped the VNNI intrinsics' multiplicands from <16 x i32> to <64 x i8>.
        op_ty = V64I8 if _LLVM_MAJOR >= 21 else V16I32
        fn = mod.globals.get("llvm.x86.avx512.vpdpbusd.512")
        if fn is None:
            fn = ir.Function(mod, ir.FunctionType(V16I32, [V16I32, op_ty, op_ty]), "llvm.x86.avx512.vpdpbusd.512")
        if op_ty is not V64I8:
            a, b = builder.bitcast(a, op_ty), builder.bitcast(b, op_ty)
        return builder.call(fn, [acc, a, b])
    wide = ir.VectorType(I32, 64)
    prod = builder.mul(builder.zext(a, wide), builder.sext(b, wide))
    for i in range(4):
        lane = builder.shuffle_vector(prod, ir.Constant(wide, ir.Undefined), ir.Constant(
            ir.VectorType(I32, 16), [4 * l + i for l in range(16)]))
        acc = builder.add(acc, lane)
    return acc


def _splat_i32(builder, v):
    vec = builder.insert_element(ir.Constant(V16I32, ir.Undefined), v, const_int(I32, 0))
    return builder.shuffle_vector(vec, ir.Constant(V16I32, ir.Undefined), vector_const(V16I32, [0] * 16))


def _vnni_ok(ctx) -> bool:
    return ctx.kernel.codegen.vnni512


def _emit_gemm_tile(ctx, builder, a_word, kq: int, wbuf, corr, nblk: int, cout: int, mr: int, nb: int,
                    rows_valid, row_index, out_dtype: str):
    """C[r, oc] = Σ_k A[r, k]·W[oc, k] + corr[oc] for the tile's rows, then the epilogue.

    ``a_word(r, k)`` is the i32 holding A[r, 4k:4k+4] as unsigned bytes. The MR×NB accumulators live in
    registers (loop phis); full 16-channel vectors of valid rows go straight through the vector epilogue, the
    rest (a channel tail, or the scalar epilogue) through a small stack tile."""
    vnni = _vnni_ok(ctx)
    tile = alloca_once(builder, I32, size=mr * nb * 16, name="ctile")
    c64 = lambda v: ir.Constant(I64, int(v))  # noqa: E731

    def body(blk0):
        cvecs = []
        for j in range(nb):
            p = builder.gep(corr.ptr, [builder.mul(builder.add(blk0, c64(j)), c64(16))], inbounds=True,
                            source_etype=I32)
            v = builder.load(p, typ=V16I32)
            v.align = 4
            cvecs.append(v)
        # The reduction loop carries its MR×NB accumulators in phis (registers), not in memory.
        pre = builder.block
        cond_bb = builder.append_basic_block("kq.cond")
        body_bb = builder.append_basic_block("kq.body")
        end_bb = builder.append_basic_block("kq.end")
        builder.branch(cond_bb)
        builder.position_at_end(cond_bb)
        k = builder.phi(I64, name="kq")
        k.add_incoming(c64(0), pre)
        accs = [[builder.phi(V16I32) for _ in range(nb)] for _ in range(mr)]
        for row in accs:
            for j, a in enumerate(row):
                a.add_incoming(cvecs[j], pre)
        builder.cbranch(builder.icmp_signed("<", k, c64(kq)), body_bb, end_bb)
        builder.position_at_end(body_bb)
        bs = []
        for j in range(nb):
            off = builder.mul(builder.add(builder.mul(builder.add(blk0, c64(j)), c64(kq)), k), c64(64))
            v = builder.load(builder.gep(wbuf.ptr, [off], inbounds=True, source_etype=I8), typ=V64I8)
            v.align = 1
            bs.append(v)
        for r in range(mr):
            a = builder.bitcast(_splat_i32(builder, a_word(r, k)), V64I8)
            for j in range(nb):
                accs[r][j].add_incoming(_dot4(builder, accs[r][j], a, bs[j], vnni), body_bb)
        k.add_incoming(builder.add(k, c64(1)), body_bb)
        builder.branch(cond_bb)
        builder.position_at_end(end_bb)
        c0 = builder.mul(blk0, c64(16))
        for r in range(mr):
            for j in range(nb):
                _store_vec(builder, tile, (r * nb + j) * 16, accs[r][j])
        if ctx.vector_output_ok:
            # One copy of the vector epilogue, in a loop over the tile's valid rows × blocks: a block past cout
            # (padding to a multiple of NB) is skipped, a partial block is masked.
            partial = cout % 16 != 0 or nblk * 16 != cout
            nblocks = builder.sdiv(builder.add(builder.sub(c64(cout), c0), c64(15)), c64(16))
            nblocks = builder.select(builder.icmp_signed("<", nblocks, c64(nb)), nblocks, c64(nb))
            with for_range(builder, 0, rows_valid, name="er") as r:
                base_index = row_index(r.index)
                with for_range(builder, 0, nblocks, name="ej") as j:
                    cj = builder.add(c0, builder.mul(j.index, c64(16)))
                    tp = builder.gep(tile, [builder.mul(builder.add(builder.mul(r.index, c64(nb)), j.index),
                                                        c64(16))], inbounds=True, source_etype=I32)
                    v = builder.load(builder.bitcast(tp, V16I32.as_pointer()), typ=V16I32)
                    v.align = 4
                    valid = None
                    if partial:
                        left = builder.sub(c64(cout), cj)
                        valid = builder.select(builder.icmp_signed("<", left, c64(16)), left, c64(16))
                    ctx.emit_output_vector(builder, base_index + [cj], v, out_dtype, valid)
            return
        lo = c64(0)
        hi = builder.sub(c64(cout), c0)
        hi = builder.select(builder.icmp_signed("<", hi, c64(nb * 16)), hi, c64(nb * 16))
        with builder.if_then(builder.icmp_signed("<", lo, hi), likely=False):
            with for_range(builder, 0, rows_valid, name="er") as r:
                base_index = row_index(r.index)
                with for_range(builder, lo, hi, name="ec") as c:
                    tp = builder.gep(tile, [builder.add(builder.mul(r.index, c64(nb * 16)), c.index)],
                                     inbounds=True, source_etype=I32)
                    oc = builder.add(c0, c.index)
                    ctx.emit_output(builder, base_index + [oc], emit_cast(builder, builder.load(tp), "int32",
                                                                          out_dtype))

    with for_range(builder, 0, nblk // nb, name="blk") as g:
        body(builder.mul(g.index, c64(nb)))


def _store_vec(builder, base, offset: int, value):
    p = builder.gep(base, [ir.Constant(I64, offset)], inbounds=True, source_etype=I32)
    st = builder.store(value, builder.bitcast(p, value.type.as_pointer()))
    st.align = 4


def _tile_word(builder, a_tile, kp: int):
    """``a_word`` over a packed stack tile (rows of ``kp`` bytes)."""
    def a_word(r: int, k):
        p = builder.gep(a_tile, [builder.add(ir.Constant(I64, r * kp), builder.mul(k, ir.Constant(I64, 4)))],
                        inbounds=True, source_etype=I8)
        v = builder.load(p, typ=I32)
        v.align = 1
        return v
    return a_word


def try_emit_qnn_conv_fast(ctx, builder, node, data, weight, zp_in: int, zp_w: np.ndarray, attrs=None) -> bool:
    from .kernel import ConstBuffer
    from .lower_nn import ConvGeometry
    a = attrs or node.attrs
    if not isinstance(weight, ConstBuffer) or data.dtype not in ("int8", "uint8"):
        return False
    if a.data_layout != "NHWC" or (a.out_layout or "NHWC") != "NHWC":
        return False
    g = ConvGeometry(data.shape, weight.shape, node.checked_type.shape, a)
    from ...ops.kernels import kernel_to_hwio
    w_hwio = kernel_to_hwio(np.asarray(weight.value), a.kernel_layout, a.groups, g.c).astype(np.int64)
    zpw = np.asarray(zp_w, np.int64).reshape(-1)
    wq = w_hwio - (zpw if zpw.size > 1 else zpw[0])  # per output channel on the last (O) axis
    out_dtype = a.out_dtype or "int32"
    if g.groups == 1:
        if not _fits_int8(wq):
            return False
        wmat = wq.reshape(g.kh * g.kw * g.cig, g.cout).T.astype(np.int8)
        return _emit_conv_gemm(ctx, builder, g, data, wmat, zp_in, out_dtype)
    if g.cig == 1 and g.groups == g.c:
        from .depthwise import try_emit_depthwise_pairs
        if try_emit_depthwise_pairs(ctx, builder, g, data, wq.reshape(g.kh * g.kw, g.cout), zp_in, out_dtype):
            return True
        return _emit_depthwise(ctx, builder, g, data, wq, zp_in, out_dtype)
    return False


def _offset_and_pad(dtype: str, zp_in: int) -> tuple[int, bool]:
    """(zero-point offset of u, whether u = x ^ 0x80)."""
    if dtype == "int8":
        return zp_in + 128, True
    return zp_in, False


def _copy_bytes(builder, dst, src, nbytes: int, flip: bool, inside=None, pad_byte: int = 0) -> None:
    """dst[0:nbytes] = src[0:nbytes] (^ 0x80 when ``flip``; ``pad_byte`` where ``inside`` is false), in 64-byte
    vectors with a masked last one (nothing outside either range is touched)."""
    for c0 in range(0, nbytes, 64):
        n = min(64, nbytes - c0)
        s_ptr = builder.gep(src, [ir.Constant(I64, c0)], inbounds=True, source_etype=I8)
        d_ptr = builder.gep(dst, [ir.Constant(I64, c0)], inbounds=True, source_etype=I8)
        if n == 64:
            v = builder.load(s_ptr, typ=V64I8)
            v.align = 1
        else:
            v = masked_load(builder, s_ptr, V64I8, lane_mask(64, n))
        if flip:
            v = builder.xor(v, vector_const(V64I8, [-128] * 64))
        if inside is not None:
            v = builder.select(inside, v, vector_const(V64I8, [pad_byte - 256 if pad_byte > 127 else pad_byte] * 64))
        if n == 64:
            st = builder.store(v, builder.bitcast(d_ptr, V64I8.as_pointer()))
            st.align = 1
        else:
            masked_store(builder, v, d_ptr, lane_mask(64, n))


def _zero_tile(builder, a_tile, nbytes: int) -> None:
    """Zero a packed tile once per call, so its K padding columns are defined (their weights are 0)."""
    with for_range(builder, 0, nbytes, name="tz") as z:
        builder.store(ir.Constant(I8, 0), builder.gep(a_tile, [z.index], inbounds=True, source_etype=I8))


def _emit_conv_gemm(ctx, builder, g, data, wmat, zp_in, out_dtype) -> bool:
    mr, nb, nblk = _blocking(wmat.shape[0])
    packed, kp, nblk = pack_gemm_weights(wmat, nblk)
    if mr * kp > _MAX_TILE_BYTES:
        return False
    offset, flip = _offset_and_pad(data.dtype, zp_in)
    if not 0 <= offset <= 255:
        return False
    wbuf = ctx.data(packed)
    bias = _take_bias_and_bound(ctx, wmat, max(offset, 255 - offset))
    corr = ctx.data(_correction(wmat, offset, nblk, bias))
    P = g.n * g.oh * g.ow
    ntiles = (P + mr - 1) // mr
    a_tile = alloca_once(builder, I8, size=mr * kp, name="atile")
    c64 = lambda v: ir.Constant(I64, int(v))  # noqa: E731
    no_pad = not any(g.attrs.padding)
    row_bytes = g.kw * g.cig  # one kernel row of taps, contiguous in NHWC when dw == 1 and nothing is padded

    def pixel(p):
        ox = builder.urem(p, c64(g.ow))
        t = builder.udiv(p, c64(g.ow))
        return builder.udiv(t, c64(g.oh)), builder.urem(t, c64(g.oh)), ox

    def row_index(r):
        n, oy, ox = pixel(builder.add(p0, r))
        return [n, oy, ox]

    if kp != g.kh * g.kw * g.cig:
        _zero_tile(builder, a_tile, mr * kp)
    with ctx.parallel(builder, ntiles, name="tile") as tile:
        p0 = builder.mul(tile, c64(mr))
        rows = builder.sub(c64(P), p0)
        rows = builder.select(builder.icmp_signed("<", rows, c64(mr)), rows, c64(mr))
        # im2col of the tile's pixels, u = x ^ 0x80 for int8 (rows past the end repeat the last pixel).
        with for_range(builder, 0, mr, name="pr") as r:
            row_ptr = builder.gep(a_tile, [builder.mul(r.index, c64(kp))], inbounds=True, source_etype=I8)
            p = builder.add(p0, r.index)
            p = builder.select(builder.icmp_signed("<", p, c64(P)), p, c64(P - 1))
            n, oy, ox = pixel(p)
            y0 = builder.sub(builder.mul(oy, c64(g.sh)), c64(g.pt))
            x0 = builder.sub(builder.mul(ox, c64(g.sw)), c64(g.pl))

            def copy_rows():  # every tap inside: one contiguous copy per kernel row
                with for_range(builder, 0, g.kh, name="pky") as ky:
                    iy = builder.add(y0, builder.mul(ky.index, c64(g.dh)))
                    src = data.gep(builder, data.offset(builder, [n, iy, x0, c64(0)]))
                    dst = builder.gep(row_ptr, [builder.mul(ky.index, c64(row_bytes))], inbounds=True,
                                      source_etype=I8)
                    _copy_bytes(builder, dst, src, row_bytes, flip)

            def copy_taps():  # taps outside the input read the zero point (u = offset)
                with for_range(builder, 0, g.kh, name="pky") as ky, for_range(builder, 0, g.kw, name="pkx") as kx:
                    iy = builder.add(y0, builder.mul(ky.index, c64(g.dh)))
                    ix = builder.add(x0, builder.mul(kx.index, c64(g.dw)))
                    inside = None
                    if not no_pad:
                        inside = builder.and_(
                            builder.and_(builder.icmp_signed(">=", iy, c64(0)), builder.icmp_signed("<", iy, c64(g.h))),
                            builder.and_(builder.icmp_signed(">=", ix, c64(0)), builder.icmp_signed("<", ix, c64(g.w))))
                        iy = builder.select(inside, iy, c64(0))
                        ix = builder.select(inside, ix, c64(0))
                    src = data.gep(builder, data.offset(builder, [n, iy, ix, c64(0)]))
                    col = builder.mul(builder.add(builder.mul(ky.index, c64(g.kw)), kx.index), c64(g.cig))
                    dst = builder.gep(row_ptr, [col], inbounds=True, source_etype=I8)
                    _copy_bytes(builder, dst, src, g.cig, flip, inside, offset)

            contiguous = g.dw == 1 or g.kw == 1
            if no_pad:
                (copy_rows if contiguous else copy_taps)()
            elif contiguous:
                y1 = builder.add(y0, c64((g.kh - 1) * g.dh))
                x1 = builder.add(x0, c64((g.kw - 1) * g.dw))
                interior = builder.and_(
                    builder.and_(builder.icmp_signed(">=", y0, c64(0)), builder.icmp_signed("<", y1, c64(g.h))),
                    builder.and_(builder.icmp_signed(">=", x0, c64(0)), builder.icmp_signed("<", x1, c64(g.w))))
                with builder.if_else(interior, likely=True) as (then, otherwise):
                    with then:
                        copy_rows()
                    with otherwise:
                        copy_taps()
            else:
                copy_taps()
        _emit_gemm_tile(ctx, builder, _tile_word(builder, a_tile, kp), kp // 4, wbuf, corr, nblk, wmat.shape[0],
                        mr, nb, rows, row_index, out_dtype)
    return True


def _emit_depthwise(ctx, builder, g, data, wq_hwio, zp_in, out_dtype) -> bool:
    """Depthwise conv: 16 channels per vector, taps unrolled with their weights held in registers."""
    mult = g.cog  # output channel oc reads input channel oc // mult
    taps = g.kh * g.kw
    w = wq_hwio.reshape(taps, g.cout)
    narrow = _fits_int8(w)
    lane_ty = I16 if narrow else I32
    wtab = ctx.data(w.astype(np.int16 if narrow else np.int32))
    c64 = lambda v: ir.Constant(I64, int(v))  # noqa: E731
    no_pad = not any(g.attrs.padding)
    signed = data.dtype.startswith("int")
    ext = builder.sext if signed else builder.zext
    nfull = g.cout // 16 if mult == 1 else 0
    vl = ir.VectorType(lane_ty, 16)
    v32 = V16I32
    v8 = ir.VectorType(I8, 16)
    tile = alloca_once(builder, I32, size=16, name="dwtile")
    acc1 = alloca_once(builder, I32, name="dwacc1")
    # Σ (x − zp)·w = Σ x·w − zp·Σ w: the zero-point term is a per-channel constant (padded taps read zp).
    corr = ctx.data((-int(zp_in) * w.astype(np.int64).sum(axis=0)).astype(np.int64).astype(np.int32))
    zp_vec = ir.Constant(vl, [zp_in] * 16)

    def tap_pos(oy, ox, t):
        ky, kx = divmod(t, g.kw)
        iy = builder.add(builder.mul(oy, c64(g.sh)), c64(ky * g.dh - g.pt))
        ix = builder.add(builder.mul(ox, c64(g.sw)), c64(kx * g.dw - g.pl))
        if no_pad:
            return iy, ix, None
        inside = builder.and_(
            builder.and_(builder.icmp_signed(">=", iy, c64(0)), builder.icmp_signed("<", iy, c64(g.h))),
            builder.and_(builder.icmp_signed(">=", ix, c64(0)), builder.icmp_signed("<", ix, c64(g.w))))
        return builder.select(inside, iy, c64(0)), builder.select(inside, ix, c64(0)), inside

    with ctx.parallel(builder, g.n * g.oh, name="row") as row:
        n = builder.udiv(row, c64(g.oh))
        oy = builder.urem(row, c64(g.oh))
        if nfull:
            with for_range(builder, 0, nfull, name="cb") as cb:
                c0 = builder.mul(cb.index, c64(16))
                wv = []
                for t in range(taps):
                    p = wtab.gep(builder, builder.add(c64(t * g.cout), c0))
                    v = builder.load(builder.bitcast(p, vl.as_pointer()), typ=vl)
                    v.align = 2
                    wv.append(v)
                cp = builder.bitcast(corr.gep(builder, c0), v32.as_pointer())
                acc0 = builder.load(cp, typ=v32)
                acc0.align = 4
                with for_range(builder, 0, g.ow, name="ox") as ox:
                    acc = acc0
                    for t in range(taps):
                        iy, ix, inside = tap_pos(oy, ox.index, t)
                        p = data.gep(builder, builder.add(data.offset(builder, [n, iy, ix, c64(0)]), c0))
                        xv = builder.load(builder.bitcast(p, v8.as_pointer()), typ=v8)
                        xv.align = 1
                        xs = ext(xv, vl)
                        if inside is not None:
                            xs = builder.select(inside, xs, zp_vec)
                        prod = builder.mul(xs, wv[t])
                        acc = builder.add(acc, builder.sext(prod, v32) if lane_ty != I32 else prod)
                    st = builder.store(acc, builder.bitcast(tile, v32.as_pointer()))
                    st.align = 4
                    with for_range(builder, 0, 16, name="e") as c:
                        v = builder.load(builder.gep(tile, [c.index], inbounds=True, source_etype=I32))
                        ctx.emit_output(builder, [n, oy, ox.index, builder.add(c0, c.index)],
                                        emit_cast(builder, v, "int32", out_dtype))
        if nfull * 16 < g.cout:
            # Remaining channels (or a depth multiplier > 1): one channel at a time.
            with for_range(builder, 0, g.ow, name="sx") as ox, for_range(builder, nfull * 16, g.cout, name="sc") as c:
                builder.store(const_int(I32, 0), acc1)
                cin = c.index if mult == 1 else builder.udiv(c.index, c64(mult))
                for t in range(taps):
                    iy, ix, inside = tap_pos(oy, ox.index, t)
                    xv = data.load_at(builder, builder.add(data.offset(builder, [n, iy, ix, c64(0)]), cin))
                    xs = builder.sub(ext(xv, I32), const_int(I32, zp_in))
                    if inside is not None:
                        xs = builder.select(inside, xs, const_int(I32, 0))
                    wv = wtab.load_at(builder, builder.add(c64(t * g.cout), c.index))
                    wv = builder.sext(wv, I32) if lane_ty != I32 else wv
                    builder.store(builder.add(builder.load(acc1), builder.mul(xs, wv)), acc1)
                ctx.emit_output(builder, [n, oy, ox.index, c.index],
                                emit_cast(builder, builder.load(acc1), "int32", out_dtype))
    return True


def try_emit_qnn_dense_fast(ctx, builder, node, data, weight, zp_in: int, zp_w: np.ndarray) -> bool:
    from .kernel import ConstBuffer
    if not isinstance(weight, ConstBuffer) or data.dtype not in ("int8", "uint8"):
        return False
    zpw = np.asarray(zp_w, np.int64).reshape(-1)
    wq = np.asarray(weight.value).astype(np.int64) - (zpw.reshape(-1, 1) if zpw.size > 1 else zpw[0])
    if not _fits_int8(wq):
        return False
    wmat = wq.astype(np.int8)
    mr, nb, nblk = _blocking(wmat.shape[0])
    packed, kp, nblk = pack_gemm_weights(wmat, nblk)
    offset, flip = _offset_and_pad(data.dtype, zp_in)
    if not 0 <= offset <= 255:
        return False
    k = wmat.shape[1]
    lead = data.shape[:-1]
    M = int(np.prod(lead, dtype=np.int64)) if lead else 1
    mr = min(mr, max(M, 1))
    if mr * kp > _MAX_TILE_BYTES:
        return False
    wbuf = ctx.data(packed)
    bias = _take_bias_and_bound(ctx, wmat, max(offset, 255 - offset))
    corr = ctx.data(_correction(wmat, offset, nblk, bias))
    ntiles = (M + mr - 1) // mr
    a_tile = alloca_once(builder, I8, size=mr * kp, name="atile")
    c64 = lambda v: ir.Constant(I64, int(v))  # noqa: E731
    out_dtype = node.attrs.out_dtype or "int32"

    def unravel(p):
        idx = []
        for d in reversed(lead):
            idx.append(builder.urem(p, c64(d)))
            p = builder.udiv(p, c64(d))
        return list(reversed(idx))

    with ctx.parallel(builder, ntiles, name="tile") as tile:
        p0 = builder.mul(tile, c64(mr))
        rows = builder.sub(c64(M), p0)
        rows = builder.select(builder.icmp_signed("<", rows, c64(mr)), rows, c64(mr))
        with for_range(builder, 0, mr, name="pr") as r:
            row_ptr = builder.gep(a_tile, [builder.mul(r.index, c64(kp))], inbounds=True, source_etype=I8)
            valid = builder.icmp_signed("<", r.index, rows)
            src = builder.mul(builder.add(p0, builder.select(valid, r.index, c64(0))), c64(k))
            with for_range(builder, 0, k, name="pc") as c:
                v = data.load_at(builder, builder.add(src, c.index))
                if flip:
                    v = builder.xor(v, ir.Constant(I8, -128))
                v = builder.select(valid, v, ir.Constant(I8, 0))
                builder.store(v, builder.gep(row_ptr, [c.index], inbounds=True, source_etype=I8))
            with for_range(builder, k, kp, name="pz") as z:
                builder.store(ir.Constant(I8, 0), builder.gep(row_ptr, [z.index], inbounds=True, source_etype=I8))
        _emit_gemm_tile(ctx, builder, _tile_word(builder, a_tile, kp), kp // 4, wbuf, corr, nblk, wmat.shape[0],
                        mr, nb, rows, lambda r: unravel(builder.add(p0, r)), out_dtype)
    return True
