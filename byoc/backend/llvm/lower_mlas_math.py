"""CPU lowerings of ``mlas_erf``, ``nn.mlas_layer_norm`` and ``nn.mlas_softmax`` (byoc/ops/mlas_math.py states
the kernels and is the reference these agree with bit for bit): every step a float32 (the layer norm's mean:
float64) instruction in the reference's order, ``llvm.fma.f32`` where MLAS fuses; no fast-math flag, so LLVM
keeps the order."""
from __future__ import annotations

from llvmlite import ir

from ...ops.mlas_math import ERF_CONSTANTS, EXP_CONSTANTS
from .cgutils import F32, F64, I32, I64, alloca_once, for_range
from .lower_elemwise import call_intrinsic, float_max
from .lowering import lower_element, lower_kernel


def _f(v) -> ir.Constant:
    return ir.Constant(F32, float(v))


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, int(v))


def _select_lt(builder, a, b):
    """x86 ``minps a, b``: a when a < b, else b (NaN takes b)."""
    return builder.select(builder.fcmp_ordered("<", a, b), a, b)


def emit_mlas_erf(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    k = ERF_CONSTANTS
    bits = builder.bitcast(x, I32)
    sign = builder.and_(bits, ir.Constant(I32, 0x80000000))
    a = builder.bitcast(builder.and_(bits, ir.Constant(I32, 0x7FFFFFFF)), F32)
    a = _select_lt(builder, a, _f(k["upper"]))
    s = builder.fmul(a, a)
    r = _f(k["small"][0])
    for p in k["small"][1:]:
        r = builder.fma(r, s, _f(p))
    r = builder.fma(r, a, a)
    big = builder.fcmp_ordered(">=", a, _f(k["split"]))
    small = builder.select(big, _f(0.0), r)
    ab = builder.select(big, a, _f(0.0))
    r = _f(k["big"][0])
    for p in k["big"][1:]:
        r = builder.fma(r, ab, _f(p))
    r = builder.fneg(builder.fma(r, ab, ab))
    low = _f(k["exp_lower"])
    r = builder.select(builder.fcmp_ordered(">", r, low), r, low)  # maxps
    c = _f(k["round_c"])
    vr = builder.fsub(builder.fma(_f(k["log2_reciprocal"]), r, c), c)
    vf = builder.fma(vr, _f(k["log2_hi"]), r)
    vf = builder.fma(vr, _f(k["log2_lo"]), vf)
    y = _f(k["exp_poly"][0])
    for p in k["exp_poly"][1:]:
        y = builder.fma(y, vf, _f(p))
    scale = builder.bitcast(builder.shl(builder.add(builder.fptosi(vr, I32), ir.Constant(I32, 127)),
                                        ir.Constant(I32, 23)), F32)
    y = builder.fsub(_f(1.0), builder.fmul(y, scale))
    out = builder.or_(builder.or_(builder.bitcast(y, I32), builder.bitcast(small, I32)), sign)
    return builder.bitcast(out, F32)


@lower_element("mlas_erf")
def _mlas_erf(ctx, builder, node, args):
    return emit_mlas_erf(builder, args[0])


@lower_kernel("nn.mlas_layer_norm", epilogue=False)
def _mlas_layer_norm(ctx, builder, node, args):
    x, scale, bias = args
    rows, n = (int(d) for d in x.shape)
    eps = _f(node.attrs.epsilon)
    out = ctx.output_buffer(0)
    dl = alloca_once(builder, F64, size=4, name="dlanes")
    fl = alloca_once(builder, F32, size=8, name="flanes")
    acc = alloca_once(builder, F32, name="var")
    dacc = alloca_once(builder, F64, name="dsum")
    n4, n8 = n - n % 4, n - n % 8
    with ctx.parallel(builder, rows) as r:
        def ld(b, k):
            return x.load(b, [r, k])
        for i in range(4):
            builder.store(ir.Constant(F64, 0.0), builder.gep(dl, [_c(i)]))
        with for_range(builder, 0, n4 // 4, name="q") as q:
            base = builder.mul(q.index, _c(4))
            for i in range(4):
                p = builder.gep(dl, [_c(i)])
                xi = builder.fpext(ld(builder, builder.add(base, _c(i))), F64)
                builder.store(builder.fadd(builder.load(p), xi), p)
        lane = [builder.load(builder.gep(dl, [_c(i)])) for i in range(4)]
        dsum = builder.fadd(builder.fadd(lane[0], lane[2]), builder.fadd(lane[1], lane[3]))
        for j in range(n4, n):
            dsum = builder.fadd(dsum, builder.fpext(ld(builder, _c(j)), F64))
        builder.store(dsum, dacc)
        mean = builder.fptrunc(builder.fdiv(builder.load(dacc), ir.Constant(F64, float(n))), F32)
        for i in range(8):
            builder.store(_f(0.0), builder.gep(fl, [_c(i)]))
        with for_range(builder, 0, n8 // 8, name="o") as o:
            base = builder.mul(o.index, _c(8))
            for i in range(8):
                p = builder.gep(fl, [_c(i)])
                d = builder.fsub(ld(builder, builder.add(base, _c(i))), mean)
                builder.store(builder.fma(d, d, builder.load(p)), p)
        v = [builder.load(builder.gep(fl, [_c(i)])) for i in range(8)]
        h = [builder.fadd(v[i], v[i + 4]) for i in range(4)]
        var = builder.fadd(builder.fadd(h[0], h[2]), builder.fadd(h[1], h[3]))
        j = n8
        if n - j >= 4:  # the compiler's 4-wide block of the scalar tail: rounded squares, added in order
            for t in range(n8, n8 + 4):
                d = builder.fsub(ld(builder, _c(t)), mean)
                var = builder.fadd(var, builder.fmul(d, d))
            j = n8 + 4
        for t in range(j, n):
            d = builder.fsub(ld(builder, _c(t)), mean)
            var = builder.fma(d, d, var)
        builder.store(var, acc)
        sd = call_intrinsic(builder, "sqrt", [builder.fadd(builder.fdiv(builder.load(acc), _f(n)), eps)])
        inv = builder.fdiv(_f(1.0), sd)
        with for_range(builder, 0, n, name="k") as k:
            t = builder.fmul(builder.fsub(ld(builder, k.index), mean), inv)
            out.store(builder, [r, k.index],
                      builder.fma(t, scale.load(builder, [k.index]), bias.load(builder, [k.index])))


def _emit_mlas_exp(builder: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """MlasComputeSumExpF32KernelAvx512F's exp of ``v`` (x − max ≤ 0): ``vscalefps`` by m ∈ [−150, 0] as two
    exact power-of-two factors, 2^(m+64) (normal) then 2^−64, so the one rounding is the last multiply's."""
    k = EXP_CONSTANTS
    lo = _f(k["lower"])
    v = builder.select(builder.fcmp_ordered("<", lo, v), v, lo)
    bias = _f(k["rounding_bias"])
    m = builder.fsub(builder.fma(v, _f(k["log2_reciprocal"]), bias), bias)
    v = builder.fma(m, _f(k["log2_hi"]), v)
    v = builder.fma(m, _f(k["log2_lo"]), v)
    p = _f(k["poly"][0])
    for c in k["poly"][1:]:
        p = builder.fma(p, v, _f(c))
    p = builder.fma(p, v, _f(k["poly"][-1]))
    e = builder.add(builder.fptosi(m, I32), ir.Constant(I32, 127 + 64))
    scaled = builder.fmul(p, builder.bitcast(builder.shl(e, ir.Constant(I32, 23)), F32))
    return builder.fmul(scaled, _f(2.0 ** -64))


@lower_kernel("nn.mlas_softmax", epilogue=False)
def _mlas_softmax(ctx, builder, node, args):
    (x,) = args
    rows, d = (int(v) for v in x.shape)
    out = ctx.output_buffer(0)
    mx = alloca_once(builder, F32, name="mx")
    lanes = alloca_once(builder, F32, size=16, name="lanes")
    with ctx.parallel(builder, rows) as r:
        builder.store(_f(float("-inf")), mx)
        with for_range(builder, 0, d, name="k") as k:
            builder.store(float_max(builder, builder.load(mx), x.load(builder, [r, k.index])), mx)
        neg = builder.fneg(builder.load(mx))
        for i in range(16):
            builder.store(_f(0.0), builder.gep(lanes, [_c(i)]))
        with for_range(builder, 0, d, name="k") as k:
            e = _emit_mlas_exp(builder, builder.fadd(x.load(builder, [r, k.index]), neg))
            out.store(builder, [r, k.index], e)
            slot = builder.gep(lanes, [builder.and_(k.index, _c(15))])
            builder.store(builder.fadd(builder.load(slot), e), slot)
        a = [builder.fadd(builder.load(builder.gep(lanes, [_c(i + 8)])), builder.load(builder.gep(lanes, [_c(i)])))
             for i in range(8)]
        h = [builder.fadd(a[j], a[j + 1]) for j in (0, 2, 4, 6)]
        inv = builder.fdiv(_f(1.0), builder.fadd(builder.fadd(h[0], h[1]), builder.fadd(h[2], h[3])))
        with for_range(builder, 0, d, name="k") as k:
            out.store(builder, [r, k.index], builder.fmul(out.load(builder, [r, k.index]), inv))
