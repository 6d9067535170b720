"""LLVM IR idioms used by every lowering (numba's ``cgutils`` habit): typed constants, loops as context
managers, allocas in the entry block, and TFLite's fixed-point primitives on i32 values.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import numpy as np
from llvmlite import ir

__all__ = [
    "I1", "I8", "I16", "I32", "I64", "F16", "F32", "F64", "VOID", "PTR", "llvm_type", "const_int", "const_of",
    "for_range", "loop_nest", "if_then", "alloca_once", "Loop", "srdhm", "rdbpot", "mbqm", "saturate",
    "int_min_max", "int_width", "vector_const", "lane_mask", "masked_load", "masked_store", "is_signed", "is_float", "cast_value", "smax", "smin", "select_max", "select_min",
]

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
VOID = ir.VoidType()
PTR = ir.PointerType()

_TYPES = {"bool": I8, "int8": I8, "uint8": I8, "int16": I16, "uint16": I16, "int32": I32, "uint32": I32,
          "int64": I64, "float16": F16, "float32": F32, "float64": F64}


def llvm_type(dtype: str) -> ir.Type:
    """The LLVM storage type of a tensor element (signedness lives in the dtype, not the type)."""
    return _TYPES[dtype]


def is_signed(dtype: str) -> bool:
    return dtype.startswith("int")


def is_float(dtype: str) -> bool:
    return dtype.startswith("float")


def int_min_max(dtype: str) -> tuple[int, int]:
    if dtype == "bool":
        return 0, 1
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def int_width(ty: ir.Type) -> int:
    """Bit width of an integer type or of a vector of integers' elements."""
    return ty.element.width if isinstance(ty, ir.VectorType) else ty.width


_VECTOR_CONSTANTS: dict[tuple[str, tuple], ir.Constant] = {}


def vector_const(vt: ir.VectorType, values) -> ir.Constant:
    """A vector constant, shared by every use (llvmlite caches a constant's text, and vector constants are the
    costliest part of formatting the IR)."""
    key = (str(vt), tuple(values))
    c = _VECTOR_CONSTANTS.get(key)
    if c is None:
        if len(_VECTOR_CONSTANTS) > 4096:
            _VECTOR_CONSTANTS.clear()
        c = _VECTOR_CONSTANTS[key] = ir.Constant(vt, list(key[1]))
    return c


def const_int(ty: ir.IntType, value: int) -> ir.Constant:
    """An integer constant, wrapped to the type's width (so -1 and 2**32-1 both work for i32); a splat for a
    vector type."""
    if isinstance(ty, ir.VectorType):
        return vector_const(ty, [const_int(ty.element, value).constant] * ty.count)
    bits = ty.width
    v = int(value) & ((1 << bits) - 1)
    if v >= 1 << (bits - 1):
        v -= 1 << bits
    return ir.Constant(ty, v)


def const_of(dtype: str, value) -> ir.Constant:
    ty = llvm_type(dtype)
    if is_float(dtype):
        return ir.Constant(ty, float(value))
    return const_int(ty, int(value))


@dataclass(frozen=True)
class Loop:
    index: ir.Value


@contextmanager
def for_range(builder: ir.IRBuilder, start, stop, step: int = 1, name: str = "i") -> Iterator[Loop]:
    """``for i in range(start, stop, step)`` over i64; the body is emitted inside the ``with``."""
    start = start if isinstance(start, ir.Value) else ir.Constant(I64, int(start))
    stop = stop if isinstance(stop, ir.Value) else ir.Constant(I64, int(stop))
    pre = builder.block
    cond_bb = builder.append_basic_block(f"{name}.cond")
    body_bb = builder.append_basic_block(f"{name}.body")
    end_bb = builder.append_basic_block(f"{name}.end")
    builder.branch(cond_bb)
    builder.position_at_end(cond_bb)
    idx = builder.phi(I64, name=name)
    idx.add_incoming(start, pre)
    builder.cbranch(builder.icmp_signed("<", idx, stop), body_bb, end_bb)
    builder.position_at_end(body_bb)
    yield Loop(idx)
    nxt = builder.add(idx, ir.Constant(I64, step), name=f"{name}.next", flags=("nsw",))
    idx.add_incoming(nxt, builder.block)
    builder.branch(cond_bb)
    builder.position_at_end(end_bb)


@contextmanager
def loop_nest(builder: ir.IRBuilder, shape, name: str = "i") -> Iterator[list[ir.Value]]:
    """Nested ``for_range`` over every dimension of ``shape`` (outermost first); yields the index list."""
    with _nest(builder, list(shape), 0, [], name) as idx:
        yield idx


@contextmanager
def _nest(builder, shape, d, acc, name):
    if d == len(shape):
        yield list(acc)
        return
    with for_range(builder, 0, shape[d], name=f"{name}{d}") as loop:
        with _nest(builder, shape, d + 1, acc + [loop.index], name) as idx:
            yield idx


@contextmanager
def if_then(builder: ir.IRBuilder, pred: ir.Value, likely: bool | None = None):
    with builder.if_then(pred, likely=likely):
        yield


def alloca_once(builder: ir.IRBuilder, ty: ir.Type, size: int = 1, name: str = "", align: int = 64) -> ir.Value:
    """An alloca placed in the entry block, so loops never grow the stack."""
    with builder.goto_entry_block():
        slot = builder.alloca(ty, size=None if size == 1 else ir.Constant(I64, size), name=name)
        slot.align = align
    return slot


def smax(builder, a, b):
    return builder.select(builder.icmp_signed(">", a, b), a, b)


def smin(builder, a, b):
    return builder.select(builder.icmp_signed("<", a, b), a, b)


select_max = smax
select_min = smin


def saturate(builder: ir.IRBuilder, value: ir.Value, lo: int, hi: int) -> ir.Value:
    """Clamp a signed integer value to [lo, hi] (bounds in its own width)."""
    ty = value.type
    value = smax(builder, value, const_int(ty, lo))
    return smin(builder, value, const_int(ty, hi))


def cast_value(builder: ir.IRBuilder, value: ir.Value, src: str, dst: str) -> ir.Value:
    """Integer↔integer (sign- or zero-extend by ``src``, wrap on narrowing), int↔float, float↔float."""
    st, dt = llvm_type(src), llvm_type(dst)
    if is_float(src) and is_float(dst):
        if st == dt:
            return value
        return builder.fpext(value, dt) if _fbits(st) < _fbits(dt) else builder.fptrunc(value, dt)
    if is_float(src):
        return builder.fptosi(value, dt) if is_signed(dst) else builder.fptoui(value, dt)
    if is_float(dst):
        return builder.sitofp(value, dt) if is_signed(src) else builder.uitofp(value, dt)
    if st.width == dt.width:
        return value
    if st.width > dt.width:
        return builder.trunc(value, dt)
    return builder.sext(value, dt) if is_signed(src) else builder.zext(value, dt)


def _fbits(t: ir.Type) -> int:
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(t)]


# --- TFLite fixed point on i32 (quant-semantics.md §1) -----------------------------------------------------

def srdhm(builder: ir.IRBuilder, a: ir.Value, b: ir.Value, b_may_be_min: bool = True) -> ir.Value:
    """SaturatingRoundingDoublingHighMul = (a·b + 2^30) >> 31, saturating only INT32_MIN·INT32_MIN."""
    if isinstance(a.type, ir.VectorType) and a.type.count % 2 == 0:
        r = _srdhm_even_odd(builder, a, b)
    else:
        p = builder.mul(builder.sext(a, I64), builder.sext(b, I64))
        r = builder.trunc(builder.ashr(builder.add(p, const_int(I64, 1 << 30)), const_int(I64, 31)), I32)
    if not b_may_be_min:
        return r
    mn = const_int(I32, -(1 << 31))
    both = builder.and_(builder.icmp_signed("==", a, mn), builder.icmp_signed("==", b, mn))
    return builder.select(both, const_int(I32, (1 << 31) - 1), r)


def _srdhm_even_odd(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    """The same values for a vector of i32: even and odd lanes as i64 pairs (x86 ``pmuldq`` shapes), the
    even results taken from the low halves of ``(p + 2^30) >> 31`` and the odd ones from the high halves of
    ``(p + 2^30) << 1`` — no widening of the whole vector."""
    n = a.type.count
    v64 = ir.VectorType(I64, n // 2)
    v32 = a.type
    if not isinstance(b.type, ir.VectorType):
        b = builder.shuffle_vector(builder.insert_element(ir.Constant(v32, ir.Undefined), b, const_int(I32, 0)),
                                   ir.Constant(v32, ir.Undefined), vector_const(ir.VectorType(I32, n), [0] * n))
    a64, b64 = builder.bitcast(a, v64), builder.bitcast(b, v64)
    c32, c1, rnd = (const_int(v64, k) for k in (32, 1, 1 << 30))
    even = builder.mul(builder.ashr(builder.shl(a64, c32), c32), builder.ashr(builder.shl(b64, c32), c32))
    odd = builder.mul(builder.ashr(a64, c32), builder.ashr(b64, c32))
    lo = builder.bitcast(builder.lshr(builder.add(even, rnd), const_int(v64, 31)), v32)
    hi = builder.bitcast(builder.shl(builder.add(odd, rnd), c1), v32)
    return builder.shuffle_vector(lo, hi, vector_const(ir.VectorType(I32, n),
                                                       [i if i % 2 == 0 else n + i for i in range(n)]))


def rdbpot(builder: ir.IRBuilder, x: ir.Value, e: ir.Value) -> ir.Value:
    """RoundingDivideByPOT: x / 2^e rounded half away from zero (0 ≤ e ≤ 31), all in i32."""
    one = const_int(I32, 1)
    mask = builder.sub(builder.shl(one, e), one)
    rem = builder.and_(x, mask)
    neg = builder.zext(builder.icmp_signed("<", x, const_int(I32, 0)), I32)
    thr = builder.add(builder.ashr(mask, one), neg)
    up = builder.zext(builder.icmp_signed(">", rem, thr), I32)
    return builder.add(builder.ashr(x, e), up)


def mbqm(builder: ir.IRBuilder, x: ir.Value, m: ir.Value, shift: ir.Value, m_may_be_min: bool = True) -> ir.Value:
    """MultiplyByQuantizedMultiplier (double rounding): RDBPOT(SRDHM(wrap32(x·2^left), M), right)."""
    zero = const_int(I32, 0)
    left = smax(builder, shift, zero)
    right = smax(builder, builder.sub(zero, shift), zero)
    return rdbpot(builder, srdhm(builder, builder.shl(x, left), m, m_may_be_min), right)


# --- masked vector memory access (AVX-512 ``{k}`` loads and stores; lanes off the mask never touch memory) ---

def _masked_intrinsic(builder: ir.IRBuilder, base: str, vt: ir.VectorType, args, ret) -> ir.Function:
    name = f"{base}.v{vt.count}i{vt.element.width}.p0"
    fn = builder.module.globals.get(name)
    if fn is None:
        fn = ir.Function(builder.module, ir.FunctionType(ret, args), name)
    return fn


def lane_mask(lanes: int, valid: int) -> ir.Constant:
    """<lanes x i1> with the first ``valid`` lanes set."""
    return vector_const(ir.VectorType(I1, lanes), [1 if i < valid else 0 for i in range(lanes)])


def masked_load(builder: ir.IRBuilder, ptr: ir.Value, vt: ir.VectorType, mask: ir.Value) -> ir.Value:
    """Lanes of ``mask`` read from ``ptr``; the others are 0."""
    fn = _masked_intrinsic(builder, "llvm.masked.load", vt, [PTR, I32, mask.type, vt], vt)
    return builder.call(fn, [ptr, ir.Constant(I32, 1), mask, ir.Constant(vt, None)])


def masked_store(builder: ir.IRBuilder, value: ir.Value, ptr: ir.Value, mask: ir.Value) -> ir.Value:
    fn = _masked_intrinsic(builder, "llvm.masked.store", value.type, [value.type, PTR, I32, mask.type], VOID)
    return builder.call(fn, [value, ptr, ir.Constant(I32, 1), mask])


def store_lanes(builder: ir.IRBuilder, value: ir.Value, ptr: ir.Value, mask: ir.Value) -> None:
    """Store the lanes of ``value`` that ``mask`` selects, one element at a time (partial output blocks).

    Not ``llvm.masked.store``: when LLVM proves such a mask has a single active lane it folds the store into a scalar
    one, and the X86 backend then wrote the lane's untruncated 32-bit value (``vmovd``) for an i8 output — three
    bytes past the buffer (found by the differential fuzzer with BYOC_GUARD_BUFFERS)."""
    elt = value.type.element
    for lane in range(value.type.count):
        with if_then(builder, builder.extract_element(mask, ir.Constant(I32, lane))):
            dst = builder.gep(ptr, [ir.Constant(I64, lane)], inbounds=True, source_etype=elt)
            builder.store(builder.extract_element(value, ir.Constant(I32, lane)), dst)
