"""CPU lowerings of the ops registered for TVM source compatibility (byoc/ops/elementwise_math.py,
creation.py, einsum.py, layout.py, reduce.py's variance).

Exactness against the numpy reference:
* bit-exact: left_shift, right_shift, fixed_point_multiply, power on integers (all in wrapping integer
  arithmetic, as the reference), zeros/ones(_like), layout_transform (data movement); log, erf and power on
  floats call the C library's double-precision function and round to the dtype, as the reference does
  (numpy's float64 log/pow and Python's math.erf agree with glibc's on the tested inputs);
* to a few ulps: einsum, nn.matmul and variance sum sequentially, the reference with numpy's pairwise / BLAS
  order.
"""
from __future__ import annotations

from contextlib import ExitStack

import numpy as np
from llvmlite import ir

from ...errors import CodegenError
from .cgutils import F64, I32, I64, alloca_once, const_int, const_of, for_range, is_float, is_signed, llvm_type
from .kernel import ERROR_MESSAGES
from .lower_elemwise import emit_cast
from .lower_reduce import out_loops
from .lowering import lower_element, lower_kernel

ERROR_NEGATIVE_POWER = 6
ERROR_SHIFT_RANGE = 7
ERROR_MESSAGES.setdefault(ERROR_NEGATIVE_POWER, "power: a negative integer exponent has no integer result")
ERROR_MESSAGES.setdefault(ERROR_SHIFT_RANGE, "left_shift/right_shift: a shift amount is outside [0, bits) of "
                                             "the dtype (C leaves it undefined)")


def _libm_double(builder: ir.IRBuilder, name: str, args: list) -> ir.Value:
    """``name`` from the C library in double precision, the result rounded back to the operands' type."""
    ty = args[0].type
    wide = [a if isinstance(ty, ir.DoubleType) else builder.fpext(a, F64) for a in args]
    mod = builder.module
    fn = mod.globals.get(name)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(F64, [F64] * len(args)), name)
        fn.attributes.add("nounwind")
    out = builder.call(fn, wide)
    return out if isinstance(ty, ir.DoubleType) else builder.fptrunc(out, ty)


def _float_only(name):
    def lower(ctx, builder, node, args):
        if not is_float(ctx.out_type.dtype):
            raise CodegenError(f"{name} is defined on floats only, found {ctx.out_type.dtype}")
        return _libm_double(builder, name, list(args))
    return lower


lower_element("log")(_float_only("log"))
lower_element("erf")(_float_only("erf"))


@lower_element("power")
def _power(ctx, builder, node, args):
    a, b = args
    dt = ctx.out_type.dtype
    if is_float(dt):
        return _libm_double(builder, "pow", [a, b])
    ext = builder.sext if is_signed(dt) else builder.zext
    base, exp = ext(a, I64), ext(b, I64)
    ctx.kernel.fail_if(builder, builder.icmp_signed("<", exp, const_int(I64, 0)), ERROR_NEGATIVE_POWER)
    # square-and-multiply over all 63 exponent bits, wrapping in int64 (numpy's int64 power, then narrowed)
    acc = const_int(I64, 1)
    for bit in range(63):
        on = builder.icmp_unsigned("!=", builder.and_(exp, const_int(I64, 1 << bit)), const_int(I64, 0))
        acc = builder.select(on, builder.mul(acc, base), acc)
        base = builder.mul(base, base)
    ty = llvm_type(dt)
    return builder.trunc(acc, ty) if ty.width < 64 else acc


def _shift(name):
    @lower_element(name)
    def lower(ctx, builder, node, args):
        a, b = args
        dt = ctx.out_type.dtype
        bits = a.type.width
        amount = b if bits == 64 else (builder.sext if is_signed(dt) else builder.zext)(b, I64)
        bad = builder.icmp_unsigned(">=", amount, const_int(I64, bits))     # negative is huge when unsigned
        ctx.kernel.fail_if(builder, bad, ERROR_SHIFT_RANGE)
        if name == "left_shift":
            return builder.shl(a, b)
        return builder.ashr(a, b) if is_signed(dt) else builder.lshr(a, b)
    return lower


_shift("left_shift")
_shift("right_shift")


@lower_element("fixed_point_multiply")
def _fixed_point_multiply(ctx, builder, node, args):
    (x,) = args
    m, shift = int(node.attrs.multiplier), int(node.attrs.shift)
    x64 = builder.sext(x, I64)
    if m == 1 << 30:         # TVM's power-of-two case, each step in int32
        e = shift - 1
        if e > 0:
            return builder.trunc(builder.shl(x64, const_int(I64, e)), I32)
        if e == 0:
            return x
        return builder.ashr(builder.add(x, const_int(I32, 1 << (-e - 1))), const_int(I32, -e))
    ls, rs = (shift, 0) if shift > 0 else (0, -shift)
    total = rs + 31
    v = builder.mul(builder.shl(x64, const_int(I64, ls)), const_int(I64, m))
    v = builder.ashr(builder.add(v, const_int(I64, 1 << (total - 1))), const_int(I64, total))
    return builder.trunc(v, I32)


for _name, _value in (("zeros", 0), ("ones", 1)):
    lower_element(_name)((lambda v: lambda ctx, builder, node, args: const_of(ctx.out_type.dtype, v))(_value))
    lower_element(f"{_name}_like")((lambda v: lambda ctx, builder, node, args:
                                     const_of(ctx.out_type.dtype, v))(_value))


# --- layout_transform: each output element reads one input element -----------------------------------------

def _layout_index(ctx, builder, node, out_index):
    from ...ops.layout import parse_layout
    src, dst = parse_layout(node.attrs.src_layout), parse_layout(node.attrs.dst_layout)
    dst_factor = {a.upper(): f for a, f in dst if f}
    src_factor = {a.upper(): f for a, f in src if f}
    pos = {a: i for i, (a, _) in enumerate(dst)}
    full = {}
    for a, f in dst:                       # the index along each primal axis, whole
        if f:
            continue
        ix = out_index[pos[a]]
        if a in dst_factor:
            ix = builder.add(builder.mul(ix, const_int(I64, dst_factor[a])), out_index[pos[a.lower()]])
        full[a] = ix
    idx = []
    for a, f in src:
        if f:
            idx.append(builder.urem(full[a.upper()], const_int(I64, f)))
        elif a in src_factor:
            idx.append(builder.udiv(full[a], const_int(I64, src_factor[a])))
        else:
            idx.append(full[a])
    return [idx]


lower_element("layout_transform", index_map=_layout_index)(lambda ctx, builder, node, args: args[0])


# --- contractions: nn.matmul and einsum (sequential sums) ----------------------------------------------------

def _contract(ctx, builder, out_shape, red_sizes, loads, acc_dtype, out_dtype):
    """out[o] = Σ over the reduction index r (row-major, ascending) of Π loads(o, r); ``loads(o, r)`` gives the
    factors. Floats accumulate in their dtype; integers in wrapping int64, narrowed at the end."""
    floating = is_float(acc_dtype)
    acc_ty = llvm_type(acc_dtype) if floating else I64
    acc = alloca_once(builder, acc_ty, name="acc")
    with out_loops(ctx, builder, out_shape) as oidx:
        builder.store(ir.Constant(acc_ty, 0.0 if floating else 0), acc)
        with ExitStack() as stack:
            ridx = [stack.enter_context(for_range(builder, 0, n, name=f"r{i}")).index
                    for i, n in enumerate(red_sizes)]
            prod = None
            for v in loads(oidx, ridx):
                if not floating:
                    v = (builder.sext if is_signed(acc_dtype) else builder.zext)(v, I64) \
                        if v.type.width < 64 else v
                prod = v if prod is None else (builder.fmul(prod, v) if floating else builder.mul(prod, v))
            cur = builder.load(acc)
            builder.store(builder.fadd(cur, prod) if floating else builder.add(cur, prod), acc)
        res = builder.load(acc)
        if not floating:
            ty = llvm_type(acc_dtype)
            res = builder.trunc(res, ty) if ty.width < 64 else res
        ctx.emit_output(builder, oidx, emit_cast(builder, res, acc_dtype, out_dtype))


@lower_kernel("nn.matmul")
def _matmul(ctx, builder, node, args):
    a, b = args
    at = node.attrs
    k = a.shape[-2] if at.transpose_a else a.shape[-1]
    out_shape = tuple(node.checked_type.shape)

    def loads(o, r):
        (kk,) = r
        if len(a.shape) == 1:
            ai, j = [kk], o[-1]
        else:
            lead, i, j = list(o[:-2]), o[-2], o[-1]
            ai = lead + ([kk, i] if at.transpose_a else [i, kk])
        bi = [j, kk] if at.transpose_b else [kk, j]
        return [a.load(builder, ai), b.load(builder, bi)]

    _contract(ctx, builder, out_shape, (k,), loads, a.dtype, at.out_dtype or a.dtype)


def _einsum_plan(equation: str, shapes):
    eq = equation.replace(" ", "")
    if "." in eq:
        raise CodegenError(f"einsum {equation!r}: the CPU backend does not lower '...' (broadcast) subscripts",
                           hint="spell the axes out, or run it on the reference interpreter (byoc.evaluate)")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if "->" not in eq:          # numpy's implicit output: the subscripts used once, alphabetically
        counts = {c: lhs.count(c) for c in set(lhs) if c.isalpha()}
        rhs = "".join(sorted(c for c, n in counts.items() if n == 1))
    sizes = {}
    for term, shape in zip(terms, shapes):
        for c, d in zip(term, shape):
            sizes[c] = d
    reduced = sorted({c for t in terms for c in t} - set(rhs))
    return terms, rhs, reduced, sizes


@lower_kernel("einsum")
def _einsum(ctx, builder, node, args):
    (ops,) = args
    terms, out, reduced, sizes = _einsum_plan(node.attrs.equation, [o.shape for o in ops])
    dtype = ops[0].dtype

    def loads(o, r):
        where = dict(zip(out, o)) | dict(zip(reduced, r))
        vals = []
        for term, buf in zip(terms, ops):
            # a repeated subscript in one term (a diagonal) reads the same index on both axes
            vals.append(buf.load(builder, [where[c] for c in term]))
        return vals

    _contract(ctx, builder, tuple(node.checked_type.shape), tuple(sizes[c] for c in reduced), loads, dtype, dtype)


# --- variance -----------------------------------------------------------------------------------------------

@lower_kernel("variance")
def _variance(ctx, builder, node, args):
    from ...ops.reduce import reduce_axes
    x, m = args
    axes = reduce_axes("variance", len(x.shape), node.attrs)
    keep = node.attrs.keepdims
    n = int(np.prod([x.shape[a] for a in axes])) - (1 if node.attrs.unbiased else 0)
    ty = llvm_type(x.dtype)
    acc = alloca_once(builder, ty, name="acc")
    with out_loops(ctx, builder, tuple(node.checked_type.shape)) as oidx:
        builder.store(ir.Constant(ty, 0.0), acc)
        it = iter(oidx)
        kept = {}
        for d in range(len(x.shape)):
            if d in axes:
                if keep:
                    next(it)
            else:
                kept[d] = next(it)
        with ExitStack() as stack:
            ridx = {d: stack.enter_context(for_range(builder, 0, x.shape[d], name=f"r{d}")).index for d in axes}
            xi = [ridx[d] if d in ridx else kept[d] for d in range(len(x.shape))]
            mi = [const_int(I64, 0) if d in ridx else kept[d] for d in range(len(x.shape))]
            diff = builder.fsub(x.load(builder, xi), m.load(builder, mi))
            builder.store(builder.fadd(builder.load(acc), builder.fmul(diff, diff)), acc)
        res = builder.fdiv(builder.load(acc), ir.Constant(ty, float(max(n, 0))))
        ctx.emit_output(builder, oidx, res)



# --- nn.upsampling: lowered as the image.resize2d it is ------------------------------------------------------

def _as_resize_call(node):
    from ...ir.expr import Call, Op
    from ...ops.upsampling import as_resize_attrs
    call = Call(Op.get("image.resize2d"), node.args, as_resize_attrs(node.args[0].checked_type.shape, node.attrs))
    object.__setattr__(call, "_checked_type", node.checked_type)
    return call


def _upsampling_nearest(node) -> bool:
    return node.attrs.method == "nearest_neighbor"


def _upsampling_index(ctx, builder, node, out_index):
    from .lowering import get_lowering
    call = _as_resize_call(node)
    return get_lowering(call).index_map(ctx, builder, call, out_index)


@lower_element("nn.upsampling", index_map=_upsampling_index)
def _upsampling(ctx, builder, node, args):
    from .lowering import get_lowering
    call = _as_resize_call(node)
    return get_lowering(call).compute(ctx, builder, call, args)


@lower_kernel("nn.upsampling", when=lambda node: not _upsampling_nearest(node))
def _upsampling_bilinear(ctx, builder, node, args):
    from .lowering import get_lowering
    call = _as_resize_call(node)
    return get_lowering(call).emit(ctx, builder, call, args)
