"""Fused epilogues applied to a run of consecutive output channels at once (SIMD across the innermost axis).

The element lowerings are written for one scalar element. ``VectorBuilder`` lets the very same code emit vector
IR, so the vector epilogue is bit-identical to the scalar one by construction:

* binary ops, compares and selects splat their scalar operands when another operand is a vector;
* casts (sext, zext, trunc, ...) of a vector widen their scalar target type to a vector type;
* a ``LaneIndex`` (``lanes`` consecutive elements starting at a scalar index) on the innermost axis flows through
  ``Buffer.offset`` and ``Buffer.gep``, and a load or store through it becomes one vector load or store.

Only ops whose integer lowerings use nothing else are accepted (``vector_epilogue_ok``); any other epilogue keeps
the scalar path. Loads through a ``LaneIndex`` need the innermost axis to be contiguous, which holds for default
(numpy) broadcasting and for ``nn.bias_add`` on the innermost axis.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...ir.types import TensorType
from .cgutils import I32, masked_load, store_lanes, vector_const
from .lowering import get_lowering

__all__ = ["LaneIndex", "VectorBuilder", "vector_epilogue_ok", "splat"]

# Integer-only lowerings that reach the builder only through the operations VectorBuilder widens.
_INT_OPS = frozenset({"add", "subtract", "multiply", "maximum", "minimum", "clip", "nn.relu", "nn.bias_add",
                      "cast", "qnn.requantize", "qnn.add", "qnn.subtract", "qnn.mul"})
_INT_DTYPES = frozenset({"int8", "uint8", "int16", "uint16", "int32", "uint32"})


@dataclass(frozen=True)
class LaneIndex:
    """Index of lane 0 along the innermost axis; lane ``l`` is at ``base + l``."""
    base: ir.Value


@dataclass(frozen=True)
class _LanePtr:
    ptr: ir.Value


def splat(builder: ir.IRBuilder, value: ir.Value, lanes: int) -> ir.Value:
    """``value`` in every lane of a ``<lanes x T>`` vector (a constant splat for constants)."""
    vt = ir.VectorType(value.type, lanes)
    if isinstance(value, ir.Constant) and not isinstance(value.constant, (list, tuple)):
        return vector_const(vt, [value.constant] * lanes)
    undef = ir.Constant(vt, ir.Undefined)
    v = builder.insert_element(undef, value, ir.Constant(I32, 0))
    return builder.shuffle_vector(v, undef, vector_const(ir.VectorType(I32, lanes), [0] * lanes))


def _is_vec(v) -> bool:
    return isinstance(getattr(v, "type", None), ir.VectorType)


class VectorBuilder:
    """An ``ir.IRBuilder`` stand-in that widens scalar element code to ``lanes``-wide vector code."""

    def __init__(self, builder: ir.IRBuilder, lanes: int, mask: ir.Value | None = None):
        self._b = builder
        self.lanes = lanes
        self.mask = mask  # <lanes x i1>: loads and stores through a LaneIndex touch only these lanes

    def __getattr__(self, name):
        return getattr(self._b, name)

    # -- operand harmonisation -------------------------------------------------------------------------------
    def _same(self, *vals):
        if any(isinstance(v, (LaneIndex, _LanePtr)) for v in vals):
            raise TypeError("a lane index used in arithmetic other than an offset")
        if not any(_is_vec(v) for v in vals):
            return vals
        return tuple(v if _is_vec(v) else splat(self._b, v, self.lanes) for v in vals)

    def _wide(self, value, typ):
        return ir.VectorType(typ, self.lanes) if _is_vec(value) and not isinstance(typ, ir.VectorType) else typ

    # -- address arithmetic: LaneIndex stays a scalar base -----------------------------------------------------
    def add(self, a, b, name="", flags=()):
        if isinstance(a, LaneIndex) and not isinstance(b, LaneIndex):
            return LaneIndex(self._b.add(a.base, b, name=name, flags=flags))
        if isinstance(b, LaneIndex) and not isinstance(a, LaneIndex):
            return LaneIndex(self._b.add(a, b.base, name=name, flags=flags))
        a, b = self._same(a, b)
        return self._b.add(a, b, name=name, flags=flags)

    def gep(self, ptr, indices, inbounds=False, name="", source_etype=None):
        if len(indices) == 1 and isinstance(indices[0], LaneIndex):
            return _LanePtr(self._b.gep(ptr, [indices[0].base], inbounds=inbounds, name=name,
                                        source_etype=source_etype))
        return self._b.gep(ptr, indices, inbounds=inbounds, name=name, source_etype=source_etype)

    def load(self, ptr, name="", align=None, typ=None):
        if isinstance(ptr, _LanePtr):
            vt = ir.VectorType(typ, self.lanes)
            if self.mask is None:
                return self._b.load(ptr.ptr, name=name, align=align, typ=vt)
            return masked_load(self._b, ptr.ptr, vt, self.mask)
        return self._b.load(ptr, name=name, align=align, typ=typ)

    def store(self, value, ptr, align=None):
        if isinstance(ptr, _LanePtr):
            if not _is_vec(value):
                value = splat(self._b, value, self.lanes)
            if self.mask is None:
                return self._b.store(value, ptr.ptr, align=align)
            return store_lanes(self._b, value, ptr.ptr, self.mask)
        return self._b.store(value, ptr, align=align)

    # -- arithmetic ------------------------------------------------------------------------------------------
    def _binop(name):
        def op(self, a, b, name="", flags=()):
            a, b = self._same(a, b)
            return getattr(self._b, op.__name__)(a, b, name=name, flags=flags)
        op.__name__ = name
        return op

    sub = _binop("sub")
    mul = _binop("mul")
    and_ = _binop("and_")
    or_ = _binop("or_")
    xor = _binop("xor")
    shl = _binop("shl")
    ashr = _binop("ashr")
    lshr = _binop("lshr")
    del _binop

    def icmp_signed(self, cmpop, a, b, name=""):
        a, b = self._same(a, b)
        return self._b.icmp_signed(cmpop, a, b, name=name)

    def icmp_unsigned(self, cmpop, a, b, name=""):
        a, b = self._same(a, b)
        return self._b.icmp_unsigned(cmpop, a, b, name=name)

    def select(self, cond, a, b, name="", flags=()):
        if _is_vec(cond):
            a, b = (v if _is_vec(v) else splat(self._b, v, self.lanes) for v in (a, b))
        else:
            a, b = self._same(a, b)
        return self._b.select(cond, a, b, name=name, flags=flags)

    def _cast(name):
        def op(self, value, typ, name=""):
            return getattr(self._b, op.__name__)(value, self._wide(value, typ), name=name)
        op.__name__ = name
        return op

    sext = _cast("sext")
    zext = _cast("zext")
    trunc = _cast("trunc")
    del _cast


def vector_epilogue_ok(group) -> bool:
    """Whether ``group``'s fused epilogue can run through ``VectorBuilder`` on the anchor's innermost axis."""
    anchor = group.anchor
    if anchor is None or not isinstance(anchor.checked_type, TensorType):
        return False
    for node in group.element_nodes:
        name = node.op.name
        t = node.checked_type
        if name not in _INT_OPS or not isinstance(t, TensorType) or t.dtype not in _INT_DTYPES or not t.shape:
            return False
        const_args = get_lowering(node).const_args
        if any(isinstance(a.checked_type, TensorType) and a.checked_type.dtype not in _INT_DTYPES
               for i, a in enumerate(node.args) if i not in const_args):
            return False
        if name == "nn.bias_add":
            axis = node.attrs.axis % len(t.shape)
            if axis != len(t.shape) - 1 and t.shape[axis] != 1:
                return False
        elif name == "qnn.requantize":
            if node.attrs.rounding not in ("TFLITE", "UPWARD", "TONEAREST"):
                return False
        elif name in ("qnn.add", "qnn.subtract", "qnn.mul"):
            if node.attrs.rounding == "ONNX":
                return False
    return True
