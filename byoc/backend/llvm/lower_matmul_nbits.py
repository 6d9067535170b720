"""``nn.matmul_nbits``: onnxruntime's MatMulNBits kernel in the order ``byoc/ops/matmul_nbits.py`` states (the
reference this agrees with bit for bit). Per row: the activation quantized per block (16 or 32) into a stack buffer
(scale, block sum); per output: the sixteen-lane FMA groups of 128 k, the eight-lane tail blocks, the
fold / hsum reduction, the bias, then the block-sum FMA chain. The weight (unsigned, K padded to whole blocks with
zeros) is laid out [N, K] at build time; the combined block-sum weights ``-scale · zp`` are a host table too."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...ops.matmul_nbits import group_lanes
from .cgutils import F32, I64, alloca_once, for_range
from .lower_elemwise import call_intrinsic
from .lowering import lower_kernel

I32 = ir.IntType(32)


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, int(v))


def _f(v: float) -> ir.Constant:
    return ir.Constant(F32, float(v))


@lower_kernel("nn.matmul_nbits", const_args=(1, 2, 3, 4), epilogue=False)
def _matmul_nbits(ctx, builder, node, args):
    data, w, scale, zp, bias = args
    m_rows, k = (int(d) for d in data.shape)
    n = int(w.shape[1])
    block = int(node.attrs.block_size)
    nb = -(-k // block)
    kp = nb * block
    wt = np.zeros((n, kp), np.int32)
    wt[:, :k] = np.asarray(w, np.int64).T
    scale = np.asarray(scale, np.float32)
    bsum = (-scale * np.asarray(zp, np.int64).astype(np.float32)).astype(np.float32)
    kb = ctx.kernel
    wbuf = kb.data(wt)
    sbuf = kb.data(np.ascontiguousarray(scale.T))
    bsbuf = kb.data(np.ascontiguousarray(bsum.T))
    biasbuf = kb.data(np.asarray(bias, np.float32).reshape(n))
    q = alloca_once(builder, I32, size=kp, name="q")
    sa = alloca_once(builder, F32, size=nb, name="sa")
    asum = alloca_once(builder, F32, size=nb, name="asum")
    acc = alloca_once(builder, F32, size=16, name="acc")
    slot = alloca_once(builder, F32, name="slot")
    islot = alloca_once(builder, I32, name="islot")
    per_group = 128 // block
    groups = nb // per_group
    lanes = group_lanes(block)
    tail = block // 8
    whole = n - n % 4

    def qv(b, kk):
        return b.load(b.gep(q, [kk]))

    with ctx.parallel(builder, m_rows, name="m") as m:
        with for_range(builder, 0, nb, name="blk") as blk:
            k0 = builder.mul(blk.index, _c(block))
            builder.store(_f(0.0), slot)
            with for_range(builder, 0, block, name="j") as j:
                kk = builder.add(k0, j.index)
                v = _x(builder, data, m, kk, k)
                a = call_intrinsic(builder, "fabs", [v])
                cur = builder.load(slot)
                builder.store(builder.select(builder.fcmp_ordered(">", a, cur), a, cur), slot)
            amax = builder.load(slot)
            sc = builder.fdiv(amax, _f(127.0))
            nz = builder.fcmp_ordered("!=", amax, _f(0.0))
            inv = builder.select(nz, builder.fdiv(_f(127.0), builder.select(nz, amax, _f(1.0))), _f(0.0))
            builder.store(ir.Constant(I32, 0), islot)
            with for_range(builder, 0, block, name="j") as j:
                kk = builder.add(k0, j.index)
                v = _x(builder, data, m, kk, k)
                qi = builder.fptosi(call_intrinsic(builder, "roundeven", [builder.fmul(v, inv)]), I32)
                builder.store(qi, builder.gep(q, [kk]))
                builder.store(builder.add(builder.load(islot), qi), islot)
            builder.store(sc, builder.gep(sa, [blk.index]))
            builder.store(builder.fmul(sc, builder.sitofp(builder.load(islot), F32)), builder.gep(asum, [blk.index]))
        with for_range(builder, 0, n, name="n") as col:
            c = col.index
            for i in range(16):
                builder.store(_f(0.0), builder.gep(acc, [_c(i)]))

            def dot(b, blk_base, ks):
                s = ir.Constant(I32, 0)
                for kk in ks:
                    kidx = b.add(blk_base, _c(int(kk)))
                    s = b.add(s, b.mul(qv(b, kidx), wbuf.load(b, [c, kidx])))
                return b.sitofp(s, F32)

            def comb(b, blk_i):
                return b.fmul(b.load(b.gep(sa, [blk_i])), sbuf.load(b, [c, blk_i]))

            with for_range(builder, 0, groups, name="g") as g:
                for lane, (off, ks) in enumerate(lanes):
                    bi = builder.add(builder.mul(g.index, _c(per_group)), _c(off))
                    part = dot(builder, builder.mul(bi, _c(block)), ks)
                    ptr = builder.gep(acc, [_c(lane)])
                    builder.store(builder.fma(part, comb(builder, bi), builder.load(ptr)), ptr)
            for i in range(8):
                lo, hi = builder.gep(acc, [_c(i)]), builder.gep(acc, [_c(i + 8)])
                builder.store(builder.fadd(builder.load(lo), builder.load(hi)), lo)
            with for_range(builder, groups * per_group, nb, name="tb") as tb:
                base = builder.mul(tb.index, _c(block))
                cs = comb(builder, tb.index)
                for i in range(8):
                    part = dot(builder, base, range(tail * i, tail * i + tail))
                    ptr = builder.gep(acc, [_c(i)])
                    builder.store(builder.fma(part, cs, builder.load(ptr)), ptr)
            a = [builder.load(builder.gep(acc, [_c(i)])) for i in range(8)]
            fa = builder.fadd
            fold = fa(fa(fa(fa(a[0], a[1]), a[2]), a[3]), fa(fa(fa(a[4], a[5]), a[6]), a[7]))
            h = [fa(a[i], a[i + 4]) for i in range(4)]
            hsum = fa(fa(h[0], h[2]), fa(h[1], h[3]))
            main = builder.select(builder.icmp_signed("<", c, _c(whole)), fold, hsum)
            main = fa(main, biasbuf.load(builder, [c]))
            builder.store(_f(0.0), slot)
            with for_range(builder, 0, nb, name="cb") as cb:
                av = builder.load(builder.gep(asum, [cb.index]))
                builder.store(builder.fma(av, bsbuf.load(builder, [c, cb.index]), builder.load(slot)), slot)
            ctx.emit_output(builder, [m, c], fa(main, builder.load(slot)))


def _x(builder, data, m, kk, k):
    """x[m, kk], 0.0 past the last column (the padded tail of the last block)."""
    ok = builder.icmp_signed("<", kk, _c(k))
    v = data.load(builder, [m, builder.select(ok, kk, _c(0))])
    return builder.select(ok, v, _f(0.0))
