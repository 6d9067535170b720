"""CPU lowering of qnn.svdf (byoc/ops/qnn_svdf.py): one loop nest per call, batch × unit × rank filters, each
filter's feature dot product in wrapping i32, its MBQM into the state type (with the state zero point and the
store's wrap), the newest-column time weight, and per unit the bias plus the rank filters rescaled to int8."""
from __future__ import annotations

from .cgutils import I32, alloca_once, const_int, for_range, int_min_max, llvm_type, mbqm, saturate
from .lower_qnn import scalar_int
from .lowering import lower_kernel


@lower_kernel("qnn.svdf", const_args=tuple(range(4, 12)), epilogue=False)
def _qnn_svdf(ctx, builder, node, args):
    from ...quant.params import svdf_params
    x, wf, wt, bias = args[:4]
    p = svdf_params(args[4], args[6], args[7], args[8], args[10])
    zp_in, zp_st, zp_out = scalar_int(args[5]), scalar_int(args[9]), scalar_int(args[11])
    rank = node.attrs.rank
    (batch, depth), (filters, memory) = x.shape, wt.shape
    lo, hi = int_min_max(wt.dtype)
    c = lambda v: const_int(I32, v)  # noqa: E731
    acc = alloca_once(builder, I32, name="acc")
    dot = alloca_once(builder, I32, name="dot")
    out = ctx.output_buffer(0)
    with for_range(builder, 0, batch, name="b") as b:
        with for_range(builder, 0, filters // rank, name="u") as u:
            builder.store(bias.load(builder, [u.index]), acc)
            with for_range(builder, 0, rank, name="r") as r:
                f = builder.add(builder.mul(u.index, const_int(u.index.type, rank)), r.index)
                builder.store(c(0), dot)
                with for_range(builder, 0, depth, name="k") as k:
                    xv = builder.sub(builder.sext(x.load(builder, [b.index, k.index]), I32), c(zp_in))
                    wv = builder.sext(wf.load(builder, [f, k.index]), I32)
                    builder.store(builder.add(builder.load(dot), builder.mul(wv, xv)), dot)
                feature = saturate(builder, mbqm(builder, builder.load(dot), c(p.feature_multiplier),
                                                 c(p.feature_shift)), lo, hi)
                # the state store into int8 / int16 wraps; the time product reads it back minus its zero point
                stored = builder.sext(builder.trunc(builder.add(feature, c(zp_st)), llvm_type(wt.dtype)), I32)
                w = builder.sext(wt.load(builder, [f, const_int(f.type, memory - 1)]), I32)
                builder.store(builder.add(builder.load(acc), builder.mul(w, builder.sub(stored, c(zp_st)))), acc)
            res = builder.add(mbqm(builder, builder.load(acc), c(p.output_multiplier), c(p.output_shift)),
                              c(zp_out))
            out.store(builder, [b.index, u.index], builder.trunc(saturate(builder, res, -128, 127),
                                                                 llvm_type("int8")))
