"""Element lowerings of the generic elementwise and broadcast ops (byoc/ops/tensor.py, nn.relu, nn.bias_add).

Each reproduces the op's numpy reference exactly: integer arithmetic wraps in the tensor's width, float
arithmetic stays in the tensor's dtype, and NaN handling follows numpy's scalar loops.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from ...errors import CodegenError
from .cgutils import (F32, I64, const_int, const_of, int_min_max, int_width, is_float, is_signed, llvm_type)
from .kernel import ERROR_DIVIDE_BY_ZERO
from .lowering import lower_element

__all__ = ["float_max", "float_min", "call_intrinsic", "call_libm", "int_max", "int_min", "round_half_away"]


def _dtype(ctx) -> str:
    return ctx.out_type.dtype


def _arg_dtype(ctx, i: int) -> str:
    return ctx.arg_types[i].dtype


def call_intrinsic(builder: ir.IRBuilder, name: str, args, ret_type: ir.Type | None = None) -> ir.Value:
    """Call ``llvm.<name>.<type>`` (e.g. floor, sqrt, roundeven) on values of one float type."""
    ty = args[0].type
    suffix = {ir.HalfType: "f16", ir.FloatType: "f32", ir.DoubleType: "f64"}[type(ty)]
    mod = builder.module
    full = f"llvm.{name}.{suffix}"
    fn = mod.globals.get(full)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(ret_type or ty, [a.type for a in args]), full)
    return builder.call(fn, list(args))


def call_libm(builder: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """Call the C library's ``name`` (float) / ``name`` without suffix (double); half goes through float."""
    ty = x.type
    if isinstance(ty, ir.HalfType):
        return builder.fptrunc(call_libm(builder, name, builder.fpext(x, F32)), ty)
    sym = name + "f" if isinstance(ty, ir.FloatType) else name
    mod = builder.module
    fn = mod.globals.get(sym)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(ty, [ty]), sym)
        fn.attributes.add("nounwind")
    return builder.call(fn, [x])


def float_max(builder, a, b):
    # numpy: isnan(a) ? a : (a > b ? a : b)
    a_nan = builder.fcmp_unordered("uno", a, a)
    return builder.select(a_nan, a, builder.select(builder.fcmp_ordered(">", a, b), a, b))


def float_min(builder, a, b):
    a_nan = builder.fcmp_unordered("uno", a, a)
    return builder.select(a_nan, a, builder.select(builder.fcmp_ordered("<", a, b), a, b))


def int_max(builder, a, b, signed: bool):
    cmp = builder.icmp_signed if signed else builder.icmp_unsigned
    return builder.select(cmp(">", a, b), a, b)


def int_min(builder, a, b, signed: bool):
    cmp = builder.icmp_signed if signed else builder.icmp_unsigned
    return builder.select(cmp("<", a, b), a, b)


def round_half_away(builder: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """numpy's ``rha``: sign(v)·floor(|v| + 0.5), in v's float type (not C round: 0.49999999999999994 → 1)."""
    ty = v.type
    f = call_intrinsic(builder, "floor", [builder.fadd(call_intrinsic(builder, "fabs", [v]), ir.Constant(ty, 0.5))])
    zero = ir.Constant(ty, 0.0)
    neg = builder.fneg(f)
    return builder.select(builder.fcmp_ordered(">", v, zero), f,
                          builder.select(builder.fcmp_ordered("<", v, zero), neg, zero))


# --- binary ------------------------------------------------------------------------------------------------

def _binary(op_name, int_fn, float_fn):
    @lower_element(op_name)
    def _lower(ctx, builder, node, args):
        a, b = args
        if is_float(_dtype(ctx)):
            return float_fn(builder, a, b)
        return int_fn(ctx, builder, a, b)
    return _lower


_binary("add", lambda c, b, x, y: b.add(x, y), lambda b, x, y: b.fadd(x, y))
_binary("subtract", lambda c, b, x, y: b.sub(x, y), lambda b, x, y: b.fsub(x, y))
_binary("multiply", lambda c, b, x, y: b.mul(x, y), lambda b, x, y: b.fmul(x, y))
_binary("maximum", lambda c, b, x, y: int_max(b, x, y, is_signed(_dtype(c))), float_max)
_binary("minimum", lambda c, b, x, y: int_min(b, x, y, is_signed(_dtype(c))), float_min)


def _int_divide(ctx, builder, a, b):
    dt = _dtype(ctx)
    ty = llvm_type(dt)
    ext = builder.sext if is_signed(dt) else builder.zext
    a64, b64 = ext(a, I64), ext(b, I64)
    ctx.kernel.fail_if(builder, builder.icmp_signed("==", b64, const_int(I64, 0)), ERROR_DIVIDE_BY_ZERO)
    # b == -1 would trap in sdiv for INT64_MIN; negation is the same value everywhere else.
    minus_one = builder.icmp_signed("==", b64, const_int(I64, -1))
    safe_b = builder.select(minus_one, const_int(I64, 1), b64)
    q = builder.sdiv(a64, safe_b)
    q = builder.select(minus_one, builder.sub(const_int(I64, 0), a64), q)
    return builder.trunc(q, ty) if ty.width < 64 else q


_binary("divide", _int_divide, lambda b, x, y: b.fdiv(x, y))


def _int_floor_divide(ctx, builder, a, b):
    """The truncated quotient, one less when the remainder is non-zero and its sign differs from the divisor's."""
    dt = _dtype(ctx)
    ty = llvm_type(dt)
    if not is_signed(dt):
        return _int_divide(ctx, builder, a, b)
    a64, b64 = builder.sext(a, I64), builder.sext(b, I64)
    q = _int_divide(ctx, builder, a, b)
    q64 = builder.sext(q, I64) if ty.width < 64 else q
    r = builder.sub(a64, builder.mul(q64, b64))
    zero = const_int(I64, 0)
    adjust = builder.and_(builder.icmp_signed("!=", r, zero),
                          builder.icmp_signed("!=", builder.icmp_signed("<", r, zero), builder.icmp_signed("<", b64, zero)))
    q64 = builder.select(adjust, builder.sub(q64, const_int(I64, 1)), q64)
    return builder.trunc(q64, ty) if ty.width < 64 else q64


_binary("floor_divide", _int_floor_divide,
        lambda b, x, y: call_intrinsic(b, "floor", [b.fdiv(x, y)]))


# --- clip, cast ----------------------------------------------------------------------------------------------

@lower_element("clip")
def _clip(ctx, builder, node, args):
    (x,) = args
    dt = _dtype(ctx)
    lo, hi = node.attrs.a_min, node.attrs.a_max
    if is_float(dt):
        # TFLite's activation clamp and np.clip: x < lo ? lo : x, then hi < v ? hi : v. A NaN passes through and
        # −0.0 stays −0.0 under a 0 lower bound (maximum's `a > b ? a : b` would give +0.0).
        ty = llvm_type(dt)
        lo_c, hi_c = ir.Constant(ty, float(lo)), ir.Constant(ty, float(hi))
        v = builder.select(builder.fcmp_ordered("<", x, lo_c), lo_c, x)
        return builder.select(builder.fcmp_ordered("<", hi_c, v), hi_c, v)
    mn, mx = int_min_max(dt)
    lo_i = mn if lo == float("-inf") else min(max(int(math.ceil(lo)), mn), mx)
    hi_i = mx if hi == float("inf") else max(min(int(math.floor(hi)), mx), mn)
    signed = is_signed(dt)
    ty = llvm_type(dt)
    return int_min(builder, int_max(builder, x, const_int(ty, lo_i), signed), const_int(ty, hi_i), signed)


@lower_element("cast")
def _cast(ctx, builder, node, args):
    (x,) = args
    src, dst = _arg_dtype(ctx, 0), node.attrs.dtype
    return emit_cast(builder, x, src, dst)


def emit_cast(builder: ir.IRBuilder, x: ir.Value, src: str, dst: str) -> ir.Value:
    """``cast`` semantics: float→int truncates toward zero and saturates, int narrowing wraps, →bool is ≠ 0."""
    dty = llvm_type(dst)
    if dst == "bool":
        nz = builder.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0)) if is_float(src) else \
            builder.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
        return builder.zext(nz, dty)
    if is_float(src) and not is_float(dst):
        # numpy clips in the source float type (so int32 bounds round to ±2^31) and then converts.
        mn, mx = int_min_max(dst)
        t = call_intrinsic(builder, "trunc", [x])
        t = float_min(builder, float_max(builder, t, ir.Constant(x.type, float(mn))), ir.Constant(x.type, float(mx)))
        v = builder.fptosi(t, I64)
        return builder.trunc(v, dty) if dty.width < 64 else v
    if is_float(src) and is_float(dst):
        sw, dw = _fwidth(x.type), _fwidth(dty)
        if sw == dw:
            return x
        return builder.fpext(x, dty) if sw < dw else builder.fptrunc(x, dty)
    if is_float(dst):
        return builder.uitofp(x, dty) if src == "bool" or not is_signed(src) else builder.sitofp(x, dty)
    sw, dw = int_width(x.type), dty.width  # x may be a vector (vec_epilogue)
    if sw == dw:
        return x
    if sw > dw:
        return builder.trunc(x, dty)
    return builder.sext(x, dty) if is_signed(src) else builder.zext(x, dty)


def _fwidth(t) -> int:
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(t)]


# --- unary ---------------------------------------------------------------------------------------------------

def _unary(op_name, int_fn, float_fn):
    @lower_element(op_name)
    def _lower(ctx, builder, node, args):
        (x,) = args
        if is_float(_dtype(ctx)):
            return float_fn(builder, x)
        if int_fn is None:
            raise CodegenError(f"{op_name} is defined on floats only, found {_dtype(ctx)}")
        return int_fn(ctx, builder, x)
    return _lower


def _iabs(ctx, builder, x):
    if not is_signed(_dtype(ctx)):
        return x
    return builder.select(builder.icmp_signed("<", x, ir.Constant(x.type, 0)), builder.sub(ir.Constant(x.type, 0), x), x)


def _one(x):
    return ir.Constant(x.type, 1.0)


_unary("negative", lambda c, b, x: b.sub(ir.Constant(x.type, 0), x), lambda b, x: b.fneg(x))
_unary("abs", _iabs, lambda b, x: call_intrinsic(b, "fabs", [x]))
_unary("exp", None, lambda b, x: call_libm(b, "exp", x))
_unary("sqrt", None, lambda b, x: call_intrinsic(b, "sqrt", [x]))
_unary("rsqrt", None, lambda b, x: b.fdiv(_one(x), call_intrinsic(b, "sqrt", [x])))
_unary("tanh", None, lambda b, x: call_libm(b, "tanh", x))
_unary("sigmoid", None, lambda b, x: b.fdiv(_one(x), b.fadd(_one(x), call_libm(b, "exp", b.fneg(x)))))
_unary("round", None, lambda b, x: call_intrinsic(b, "roundeven", [x]))
_unary("floor", None, lambda b, x: call_intrinsic(b, "floor", [x]))
_unary("copy", lambda c, b, x: x, lambda b, x: x)


@lower_element("nn.relu")
def _relu(ctx, builder, node, args):
    (x,) = args
    dt = _dtype(ctx)
    if is_float(dt):
        return float_max(builder, x, ir.Constant(x.type, 0.0))
    return int_max(builder, x, ir.Constant(x.type, 0), is_signed(dt))


def _bias_add_index(ctx, builder, node, out_index):
    nd = len(ctx.out_type.shape)
    axis = node.attrs.axis if node.attrs.axis >= 0 else node.attrs.axis + nd
    bias_len = ctx.out_type.shape[axis]
    return [list(out_index), [out_index[axis] if bias_len > 1 else ir.Constant(I64, 0)]]


@lower_element("nn.bias_add", index_map=_bias_add_index)
def _bias_add(ctx, builder, node, args):
    x, b = args
    if is_float(_dtype(ctx)):
        return builder.fadd(x, b)
    return builder.add(x, b)


def channel_value(ctx, builder: ir.IRBuilder, values: np.ndarray, dtype: str, axis: int) -> ir.Value:
    """A per-channel parameter at the current element: an immediate when it is one value, else a table load."""
    flat = np.asarray(values).reshape(-1)
    if flat.size == 1 or np.all(flat == flat[0]):
        return const_of(dtype, flat[0])
    table = ctx.kernel.data(flat.astype(dtype))
    return table.load(builder, [ctx.index[axis]])


__all__ += ["emit_cast", "channel_value"]


@lower_element("nn.leaky_relu")
def _leaky_relu(ctx, builder, node, args):
    (x,) = args
    alpha = ir.Constant(x.type, float(np.dtype(_dtype(ctx)).type(node.attrs.alpha)))
    return builder.select(builder.fcmp_ordered(">=", x, ir.Constant(x.type, 0.0)), x, builder.fmul(x, alpha))
