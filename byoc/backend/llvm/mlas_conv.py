"""``nn.conv2d(accumulation="mlas")``: float32 convolution summed in onnxruntime's MLAS order
(``byoc/ops/mlas_order.py`` states the order and is the reference this kernel agrees with bit for bit).

Per output element: K = (channel, ky, kx) in im2col order, cut into blocks of MLAS's StrideK; each block is a
``llvm.fma.f32`` chain from +0 and is added to the running sum (which starts at −0, the exact additive identity);
with one filter per group the M = 1 kernel's order instead: rounded products summed four at a time, then two,
then one, each partial sum added to the running sum. Padding taps read as 0.0, as MLAS's im2col writes them.
"""
from __future__ import annotations

from llvmlite import ir

from ...ops.mlas_order import mlas_plan
from .cgutils import F32, I64, alloca_once, for_range

__all__ = ["emit_mlas_conv"]


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, int(v))


def _load_or_zero(builder, buf, index, ok):
    return builder.select(ok, buf.load(builder, index), ir.Constant(F32, 0.0))


def emit_mlas_conv(ctx, builder: ir.IRBuilder, node, data, weight, attrs) -> None:
    from .lower_nn import ConvGeometry
    g = ConvGeometry(data.shape, weight.shape, node.checked_type.shape, attrs)
    k_total = g.cig * g.kh * g.kw
    pointwise = g.kh == g.kw == 1 and (g.sh, g.sw) == (1, 1) and (g.pt, g.pl, g.pb, g.pr) == (0, 0, 0, 0)
    m1, block = mlas_plan(g.cog, g.oh * g.ow, k_total, pointwise)
    n_blocks = -(-k_total // block)
    c_slot = alloca_once(builder, F32, name="sum")
    acc_slot = alloca_once(builder, F32, name="acc")
    kk = g.kh * g.kw
    with ctx.parallel(builder, g.oh, name="oy") as oy:
        with for_range(builder, 0, g.n, name="n") as n, for_range(builder, 0, g.ow, name="ox") as ox:
            with for_range(builder, 0, g.cout, name="oc") as oc:
                builder.store(ir.Constant(F32, -0.0), c_slot)
                grp = builder.sdiv(oc.index, _c(g.cog)) if g.groups > 1 else _c(0)
                with for_range(builder, 0, n_blocks, name="blk") as blk:
                    k0 = builder.mul(blk.index, _c(block))
                    k1 = builder.select(builder.icmp_signed("<", builder.add(k0, _c(block)), _c(k_total)),
                                        builder.add(k0, _c(block)), _c(k_total))
                    length = builder.sub(k1, k0)
                    l4 = builder.and_(length, _c(~3))
                    rem = builder.sub(length, l4)
                    builder.store(ir.Constant(F32, 0.0), acc_slot)
                    with for_range(builder, k0, k1, name="k") as k:
                        ic = builder.sdiv(k.index, _c(kk))
                        r = builder.srem(k.index, _c(kk))
                        ky, kx = builder.sdiv(r, _c(g.kw)), builder.srem(r, _c(g.kw))
                        iy = builder.add(builder.mul(oy, _c(g.sh)), builder.sub(builder.mul(ky, _c(g.dh)), _c(g.pt)))
                        ix = builder.add(builder.mul(ox.index, _c(g.sw)),
                                         builder.sub(builder.mul(kx, _c(g.dw)), _c(g.pl)))
                        ok = builder.and_(
                            builder.and_(builder.icmp_signed(">=", iy, _c(0)), builder.icmp_signed("<", iy, _c(g.h))),
                            builder.and_(builder.icmp_signed(">=", ix, _c(0)), builder.icmp_signed("<", ix, _c(g.w))))
                        # clamp the address so the load stays in bounds; the select drops the value
                        iyc = builder.select(ok, iy, _c(0))
                        ixc = builder.select(ok, ix, _c(0))
                        c = builder.add(builder.mul(grp, _c(g.cig)), ic)
                        xv = _load_or_zero(builder, data, g.data_index(n.index, iyc, ixc, c), ok)
                        wv = weight.load(builder, g.weight_index(ky, kx, ic, oc.index))
                        acc = builder.load(acc_slot)
                        if m1:
                            _m1_step(builder, k.index, k0, l4, rem, builder.fmul(xv, wv), acc, acc_slot, c_slot)
                        else:
                            builder.store(builder.fma(xv, wv, acc), acc_slot)
                    if not m1:
                        builder.store(builder.fadd(builder.load(acc_slot), builder.load(c_slot)), c_slot)
                ctx.emit_output(builder, g.out_index(n.index, oy, ox.index, oc.index), builder.load(c_slot))


def _m1_step(builder, k, k0, l4, rem, p, acc, acc_slot, c_slot) -> None:
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
    cur = builder.load(c_slot)
    builder.store(builder.select(end, builder.fadd(t, cur), cur), c_slot)
