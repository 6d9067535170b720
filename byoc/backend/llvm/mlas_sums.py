"""``nn.conv2d`` / ``nn.dense`` with ``accumulation="mlas"``: float32 sums in onnxruntime's MLAS order
(``byoc/ops/mlas_order.py`` states the order and is the reference these kernels agree with bit for bit).

Per output element, K (im2col order (channel, ky, kx) for a convolution) is cut into blocks; the running sum
starts at −0 (the exact additive identity) and each block's partial is added to it. A block's partial is
``"fma"``: an ``llvm.fma.f32`` chain from +0; ``"m1"``: rounded products summed four at a time (then two, then
one), each group added to the running sum; ``"tb"``: eight lane sums of rounded products (k mod 8) reduced in
the order of the output row's 4/2/1-row block. Convolution padding taps read as 0.0, as MLAS's im2col writes them.
"""
from __future__ import annotations

from llvmlite import ir

from ...ops.mlas_order import gemm_kernel, gemm_plan, mlas_plan
from .cgutils import F32, I64, alloca_once, for_range

__all__ = ["emit_mlas_conv", "emit_mlas_dense", "emit_mlas_gemm"]


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, int(v))


class _Dot:
    """The slots of one output element's MLAS sum (allocated once per kernel)."""

    def __init__(self, builder, kind: str, block: int, k_total: int):
        self.kind, self.block, self.k_total = kind, block, k_total
        self.sum = alloca_once(builder, F32, name="sum")
        self.acc = alloca_once(builder, F32, name="acc")
        self.lanes = alloca_once(builder, F32, size=8, name="lanes") if kind == "tb" else None

    def emit(self, builder, load_xw, row_block=None, seed=None) -> ir.Value:
        """The sum for one output element; ``load_xw(builder, k)`` gives (x, w) as float32 values;
        ``row_block`` (i64: 4, 2 or 1) is the output row's block for the ``"tb"`` kernel; ``seed`` the value
        the running sum starts from (−0.0 unless a Gemm's C was copied in first)."""
        builder.store(ir.Constant(F32, -0.0) if seed is None else seed, self.sum)
        n_blocks = -(-self.k_total // self.block)
        with for_range(builder, 0, n_blocks, name="blk") as blk:
            k0 = builder.mul(blk.index, _c(self.block))
            end = builder.add(k0, _c(self.block))
            k1 = builder.select(builder.icmp_signed("<", end, _c(self.k_total)), end, _c(self.k_total))
            length = builder.sub(k1, k0)
            l4 = builder.and_(length, _c(~3))
            rem = builder.sub(length, l4)
            builder.store(ir.Constant(F32, 0.0), self.acc)
            if self.kind == "tb":
                for i in range(8):
                    builder.store(ir.Constant(F32, 0.0), builder.gep(self.lanes, [_c(i)]))
            with for_range(builder, k0, k1, name="k") as k:
                xv, wv = load_xw(builder, k.index)
                if self.kind == "fma":
                    builder.store(builder.fma(xv, wv, builder.load(self.acc)), self.acc)
                elif self.kind == "m1":
                    _m1_step(builder, k.index, k0, l4, rem, builder.fmul(xv, wv), builder.load(self.acc),
                             self.acc, self.sum)
                else:
                    lane = builder.gep(self.lanes, [builder.and_(builder.sub(k.index, k0), _c(7))])
                    builder.store(builder.fadd(builder.load(lane), builder.fmul(xv, wv)), lane)
            if self.kind == "fma":
                builder.store(builder.fadd(builder.load(self.acc), builder.load(self.sum)), self.sum)
            elif self.kind == "tb":
                lanes = [builder.load(builder.gep(self.lanes, [_c(i)])) for i in range(8)]
                red = _tb_reduce(builder, lanes, row_block)
                builder.store(builder.fadd(red, builder.load(self.sum)), self.sum)
        return builder.load(self.sum)


def _m1_step(builder, k, k0, l4, rem, p, acc, acc_slot, sum_slot) -> None:
    """One product of the M = 1 kernel: groups of four k (then two, then one) start from the product, sum
    left to right, and at a group's end are added to the running sum."""
    j = builder.sub(k, k0)
    in4 = builder.icmp_signed("<", j, l4)
    j4 = builder.and_(j, _c(3))
    rr = builder.sub(j, l4)
    start = builder.select(in4, builder.icmp_signed("==", j4, _c(0)),
                           builder.or_(builder.icmp_signed("==", rr, _c(0)), builder.icmp_signed("==", rr, _c(2))))
    end = builder.select(in4, builder.icmp_signed("==", j4, _c(3)),
                         builder.or_(builder.icmp_signed(">=", rr, _c(1)), builder.icmp_signed("==", rem, _c(1))))
    t = builder.select(start, p, builder.fadd(acc, p))
    builder.store(t, acc_slot)
    cur = builder.load(sum_slot)
    builder.store(builder.select(end, builder.fadd(t, cur), cur), sum_slot)


def _tb_reduce(builder, a, row_block) -> ir.Value:
    """SgemmKernelM1TransposeB's reduction of the eight lane sums for a row in a block of 4, 2 or 1 rows."""
    f = builder.fadd
    four = f(f(f(f(a[0], a[1]), a[2]), a[3]), f(f(f(a[4], a[5]), a[6]), a[7]))
    two = f(f(f(a[2], a[0]), f(a[6], a[4])), f(f(a[3], a[1]), f(a[7], a[5])))
    one = f(f(f(a[0], a[1]), f(a[2], a[3])), f(f(a[4], a[5]), f(a[6], a[7])))
    return builder.select(builder.icmp_signed("==", row_block, _c(4)), four,
                          builder.select(builder.icmp_signed("==", row_block, _c(2)), two, one))


def _row_block(builder, row, rows: int) -> ir.Value:
    """``mlas_order.transpose_b_block`` of a runtime row index."""
    four = rows - rows % 4
    two_end = four + 2 * ((rows % 4) // 2)
    return builder.select(builder.icmp_signed("<", row, _c(four)), _c(4),
                          builder.select(builder.icmp_signed("<", row, _c(two_end)), _c(2), _c(1)))


_V = 8  # output channels per vector in the FMA-chain kernel


def emit_mlas_conv(ctx, builder: ir.IRBuilder, node, data, weight, attrs) -> None:
    from .kernel import ConstBuffer
    from .lower_nn import ConvGeometry
    g = ConvGeometry(data.shape, weight.shape, node.checked_type.shape, attrs)
    k_total = g.cig * g.kh * g.kw
    pointwise = g.kh == g.kw == 1 and (g.sh, g.sw) == (1, 1) and (g.pt, g.pl, g.pb, g.pr) == (0, 0, 0, 0)
    kind, block = mlas_plan(g.cog, g.oh * g.ow, k_total, pointwise)
    if kind == "fma" and g.groups == 1 and g.cout % _V == 0 and isinstance(weight, ConstBuffer):
        return _emit_fma_conv_vector(ctx, builder, node, data, weight, g, block)
    dot = _Dot(builder, kind, block, k_total)
    kk = g.kh * g.kw
    with ctx.parallel(builder, g.oh, name="oy") as oy:
        with for_range(builder, 0, g.n, name="n") as n, for_range(builder, 0, g.ow, name="ox") as ox:
            with for_range(builder, 0, g.cout, name="oc") as oc:
                grp = builder.sdiv(oc.index, _c(g.cog)) if g.groups > 1 else _c(0)

                def load_xw(b, k, n=n, ox=ox, oc=oc, grp=grp):
                    ic = b.sdiv(k, _c(kk))
                    r = b.srem(k, _c(kk))
                    ky, kx = b.sdiv(r, _c(g.kw)), b.srem(r, _c(g.kw))
                    iy = b.add(b.mul(oy, _c(g.sh)), b.sub(b.mul(ky, _c(g.dh)), _c(g.pt)))
                    ix = b.add(b.mul(ox.index, _c(g.sw)), b.sub(b.mul(kx, _c(g.dw)), _c(g.pl)))
                    ok = b.and_(b.and_(b.icmp_signed(">=", iy, _c(0)), b.icmp_signed("<", iy, _c(g.h))),
                                b.and_(b.icmp_signed(">=", ix, _c(0)), b.icmp_signed("<", ix, _c(g.w))))
                    # clamp the address so the load stays in bounds; the select then drops the value
                    index = g.data_index(n.index, b.select(ok, iy, _c(0)), b.select(ok, ix, _c(0)),
                                         b.add(b.mul(grp, _c(g.cig)), ic))
                    xv = b.select(ok, data.load(b, index), ir.Constant(F32, 0.0))
                    return xv, weight.load(b, g.weight_index(ky, kx, ic, oc.index))

                row_block = _row_block(builder, builder.srem(oc.index, _c(g.cog)), g.cog) if kind == "tb" else None
                value = dot.emit(builder, load_xw, row_block)
                ctx.emit_output(builder, g.out_index(n.index, oy, ox.index, oc.index), value)


def emit_mlas_dense(ctx, builder: ir.IRBuilder, node, data, weight) -> None:
    from .lower_reduce import out_loops
    out_shape = node.checked_type.shape
    k_total = data.shape[-1]
    rows = 1
    for d in data.shape[:-1]:
        rows *= int(d)
    kind, block = gemm_plan(rows, int(weight.shape[0]), k_total)
    dot = _Dot(builder, kind, block, k_total)
    with out_loops(ctx, builder, out_shape) as oidx:
        unit = oidx[-1]

        def load_xw(b, k, oidx=oidx, unit=unit):
            return data.load(b, list(oidx[:-1]) + [k]), weight.load(b, [unit, k])

        row_block = None
        if kind == "tb":
            row = _c(0)
            for i, d in zip(oidx[:-1], data.shape[:-1]):
                row = builder.add(builder.mul(row, _c(d)), i)
            row_block = _row_block(builder, row, rows)
        ctx.emit_output(builder, oidx, dot.emit(builder, load_xw, row_block))


def _emit_fma_conv_vector(ctx, builder, node, data, weight, g, block: int) -> None:
    """The ``"fma"`` order for eight output channels at once (each lane its own chain, so the order per output
    is unchanged): the constant weight is laid out [K, Cout] at build time and the im2col taps come from
    tables, so the inner loop is one input load, a broadcast, one vector load and one vector FMA."""
    import numpy as np

    from ...ops.kernels import kernel_to_hwio
    from .kernel import Buffer
    vt = ir.VectorType(F32, _V)
    hwio = kernel_to_hwio(np.asarray(weight.value, np.float32), g.kernel_layout, 1, g.c)
    wk = np.ascontiguousarray(hwio.transpose(2, 0, 1, 3).reshape(-1, g.cout))  # [(ic, ky, kx), Cout]
    wbuf = ctx.data(wk)
    ic, ky, kx = np.meshgrid(np.arange(g.cig), np.arange(g.kh), np.arange(g.kw), indexing="ij")
    taps = ctx.data(np.stack([ic.reshape(-1), ky.reshape(-1) * g.dh, kx.reshape(-1) * g.dw], 1).astype(np.int64))
    n_blocks = -(-(g.cig * g.kh * g.kw) // block)
    k_total = g.cig * g.kh * g.kw
    sum_slot = alloca_once(builder, vt, name="vsum")
    acc_slot = alloca_once(builder, vt, name="vacc")
    zero_v = ir.Constant(vt, [0.0] * _V)
    name = f"llvm.fma.v{_V}f32"
    vfma = builder.module.globals.get(name) or ir.Function(builder.module, ir.FunctionType(vt, [vt, vt, vt]), name)
    with ctx.parallel(builder, g.oh, name="oy") as oy:
        iy0 = builder.sub(builder.mul(oy, _c(g.sh)), _c(g.pt))
        with for_range(builder, 0, g.n, name="n") as n, for_range(builder, 0, g.ow, name="ox") as ox:
            ix0 = builder.sub(builder.mul(ox.index, _c(g.sw)), _c(g.pl))
            with for_range(builder, 0, g.cout // _V, name="ocb") as ocb:
                builder.store(ir.Constant(vt, [-0.0] * _V), sum_slot)
                with for_range(builder, 0, n_blocks, name="blk") as blk:
                    k0 = builder.mul(blk.index, _c(block))
                    end = builder.add(k0, _c(block))
                    k1 = builder.select(builder.icmp_signed("<", end, _c(k_total)), end, _c(k_total))
                    builder.store(zero_v, acc_slot)
                    with for_range(builder, k0, k1, name="k") as k:
                        tb = builder.mul(k.index, _c(3))
                        c = taps.load_at(builder, tb)
                        iy = builder.add(iy0, taps.load_at(builder, builder.add(tb, _c(1))))
                        ix = builder.add(ix0, taps.load_at(builder, builder.add(tb, _c(2))))
                        ok = builder.and_(
                            builder.and_(builder.icmp_signed(">=", iy, _c(0)), builder.icmp_signed("<", iy, _c(g.h))),
                            builder.and_(builder.icmp_signed(">=", ix, _c(0)), builder.icmp_signed("<", ix, _c(g.w))))
                        index = g.data_index(n.index, builder.select(ok, iy, _c(0)), builder.select(ok, ix, _c(0)), c)
                        xv = builder.select(ok, data.load(builder, index), ir.Constant(F32, 0.0))
                        xb = builder.shuffle_vector(builder.insert_element(ir.Constant(vt, ir.Undefined), xv, _c(0)),
                                                    ir.Constant(vt, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), _V), [0] * _V))
                        woff = builder.add(builder.mul(k.index, _c(g.cout)), builder.mul(ocb.index, _c(_V)))
                        wv = builder.load(Buffer.gep(wbuf, builder, woff), typ=vt)
                        wv.align = 4
                        builder.store(builder.call(vfma, [xb, wv, builder.load(acc_slot)]), acc_slot)
                    builder.store(builder.fadd(builder.load(acc_slot), builder.load(sum_slot)), sum_slot)
                total = builder.load(sum_slot)
                for lane in range(_V):
                    oc = builder.add(builder.mul(ocb.index, _c(_V)), _c(lane))
                    ctx.emit_output(builder, g.out_index(n.index, oy, ox.index, oc),
                                    builder.extract_element(total, _c(lane)))


def emit_mlas_conv_transpose(ctx, builder: ir.IRBuilder, node, data, weight) -> None:
    """``nn.conv2d_transpose(accumulation="mlas")``: per output element, the column values of the taps that reach
    it, each a dot product over Cin/g in ``transpose_plan``'s order, added in (ky, kx) order to a zeroed sum
    (onnxruntime's GEMM then Col2im)."""
    from ...ops.mlas_order import transpose_plan
    a = node.attrs
    kh, kw, _, cog = (weight.shape[a.kernel_layout.index(c)] for c in "HWIO")
    d = dict(zip(a.data_layout, data.shape))
    n_, h, w, c_in = d["N"], d["H"], d["W"], d["C"]
    out_layout = a.out_layout or a.data_layout
    o = dict(zip(out_layout, node.checked_type.shape))
    cig = c_in // a.groups
    (sh, sw), (dh, dw) = a.strides, a.dilation
    t, l, _, _ = a.padding
    kind, block = transpose_plan(h * w, cig)
    dot = _Dot(builder, kind, block, cig)
    total = alloca_once(builder, F32, name="total")

    def index(layout, **m):
        return [m[ch] for ch in layout]

    with ctx.parallel(builder, o["H"], name="oy") as oy:
        with for_range(builder, 0, n_, name="n") as n, for_range(builder, 0, o["W"], name="ox") as ox, \
                for_range(builder, 0, o["C"], name="oc") as oc:
            builder.store(ir.Constant(F32, 0.0), total)
            grp = builder.sdiv(oc.index, _c(cog))
            o_in = builder.srem(oc.index, _c(cog))
            with for_range(builder, 0, kh, name="ky") as ky, for_range(builder, 0, kw, name="kx") as kx:
                ty = builder.sub(builder.add(oy, _c(t)), builder.mul(ky.index, _c(dh)))
                tx = builder.sub(builder.add(ox.index, _c(l)), builder.mul(kx.index, _c(dw)))
                iy, ix = builder.sdiv(ty, _c(sh)), builder.sdiv(tx, _c(sw))
                ok = builder.and_(builder.icmp_signed(">=", ty, _c(0)), builder.icmp_signed(">=", tx, _c(0)))
                ok = builder.and_(ok, builder.icmp_signed("==", builder.srem(ty, _c(sh)), _c(0)))
                ok = builder.and_(ok, builder.icmp_signed("==", builder.srem(tx, _c(sw)), _c(0)))
                ok = builder.and_(ok, builder.and_(builder.icmp_signed("<", iy, _c(h)),
                                                   builder.icmp_signed("<", ix, _c(w))))
                with builder.if_then(ok):
                    def load_xw(b, k, n=n, iy=iy, ix=ix, ky=ky, kx=kx):
                        c = b.add(b.mul(grp, _c(cig)), k)
                        return (data.load(b, index(a.data_layout, N=n.index, H=iy, W=ix, C=c)),
                                weight.load(b, index(a.kernel_layout, H=ky.index, W=kx.index, I=c, O=o_in)))
                    v = dot.emit(builder, load_xw)
                    builder.store(builder.fadd(builder.load(total), v), total)
            ctx.emit_output(builder, index(out_layout, N=n.index, H=oy, W=ox.index, C=oc.index), builder.load(total))


def emit_mlas_batch_matmul(ctx, builder: ir.IRBuilder, node, a, b) -> None:
    """``nn.batch_matmul(accumulation="mlas")``: each output element in ``gemm_plan``'s order for its GEMM (one
    per batch, or one over all rows when ``tensor_b`` has batch 1)."""
    from .lower_reduce import out_loops
    at = node.attrs
    nb, m, n = node.checked_type.shape
    k_total = a.shape[1] if at.transpose_a else a.shape[2]
    flat = b.shape[0] == 1 and nb > 1
    rows = nb * m if flat else m
    kind, block = gemm_plan(rows, n, k_total)
    dot = _Dot(builder, kind, block, k_total)
    with out_loops(ctx, builder, node.checked_type.shape) as oidx:
        bi, mi, ni = oidx
        bb = _c(0) if b.shape[0] == 1 else bi

        def load_xw(bld, k, bi=bi, mi=mi, ni=ni, bb=bb):
            xa = a.load(bld, [bi, k, mi] if at.transpose_a else [bi, mi, k])
            xb = b.load(bld, [bb, ni, k] if at.transpose_b else [bb, k, ni])
            return xa, xb

        row_block = None
        if kind == "tb":
            row = builder.add(builder.mul(bi, _c(m)), mi) if flat else mi
            row_block = _row_block(builder, row, rows)
        ctx.emit_output(builder, oidx, dot.emit(builder, load_xw, row_block))


def emit_mlas_gemm(ctx, builder: ir.IRBuilder, node, data, weight, bias) -> None:
    """``nn.mlas_gemm``: each output element's sum starts from C (``bias[m, n]``) and takes every K block's
    partial in ``gemm_kernel``'s order."""
    from .lower_reduce import out_loops
    m, k_total = (int(d) for d in data.shape)
    n = int(weight.shape[0])
    kind, block, rows = gemm_kernel(m, n, k_total, bool(node.attrs.trans_b), bool(node.attrs.packed_b))
    dot = _Dot(builder, kind, block, k_total)
    with out_loops(ctx, builder, node.checked_type.shape) as oidx:
        mi, ni = oidx

        def load_xw(b, k, mi=mi, ni=ni):
            return data.load(b, [mi, k]), weight.load(b, [ni, k])

        row_block = None
        if kind == "tb":
            row_block = _row_block(builder, mi, m) if rows == "m" else _row_block(builder, ni, n)
        seed = bias.load(builder, [mi, ni])
        ctx.emit_output(builder, oidx, dot.emit(builder, load_xw, row_block, seed))
