"""``einsum(Tuple(tensors), equation)`` and ``nn.matmul``: contractions with numpy's semantics."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType, TupleType
from .registry import FusionKind, register_op
from .rel import broadcast_shapes, fail, tensor_arg

__all__ = ["einsum_out_shape"]


@dataclass(frozen=True)
class EinsumAttrs(Attrs):
    equation: str = ""


def einsum_out_shape(equation: str, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The result shape of ``np.einsum(equation, ...)`` on operands of ``shapes`` (numpy's rules: '...' dims
    broadcast; without '->' the output is the '...' dims then the letters used once, in alphabetical order)."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise fail("einsum", "data", f"{len(terms)} tensors for equation {equation!r}", f"{len(shapes)}")
    sizes: dict[str, int] = {}
    counts: dict[str, int] = {}
    ell: tuple[int, ...] = ()
    for term, shape in zip(terms, shapes):
        letters = term.replace("...", "")
        if not letters.isalpha() and letters:
            raise fail("einsum", "equation", "subscripts made of letters and '...'", equation)
        n_ell = len(shape) - len(letters)
        if n_ell < 0 or (n_ell > 0 and "..." not in term):
            raise fail("einsum", "equation", f"term {term!r} to match a tensor of rank {len(shape)}", equation)
        head, _, tail = term.partition("...")
        dims = list(shape)
        ell = broadcast_shapes("einsum", ell, tuple(dims[len(head):len(head) + n_ell]))
        for c, d in zip(head + tail, dims[:len(head)] + dims[len(head) + n_ell:]):
            counts[c] = counts.get(c, 0) + 1
            if c in sizes and sizes[c] != d and 1 not in (sizes[c], d):
                raise fail("einsum", "data", f"size {sizes[c]} for subscript {c!r}", d)
            sizes[c] = max(sizes.get(c, d), d)
    if not arrow:
        return ell + tuple(sizes[c] for c in sorted(c for c, k in counts.items() if k == 1))
    head, has_ell, tail = out.partition("...")
    for c in head + tail:
        if c not in sizes:
            raise fail("einsum", "equation", f"output subscript {c!r} to appear in an input", equation)
    return tuple(sizes[c] for c in head) + (ell if has_ell else ()) + tuple(sizes[c] for c in tail)


def _einsum_rel(types, attrs):
    t = types[0]
    if not isinstance(t, TupleType) or not t.fields:
        raise fail("einsum", "data", "a tuple of tensors", t)
    fields = [tensor_arg("einsum", ["data"] * len(t.fields), list(t.fields), i) for i in range(len(t.fields))]
    dtype = fields[0].dtype
    for f in fields[1:]:
        if f.dtype != dtype:
            raise fail("einsum", "data", f"tensors of one dtype ({dtype})", f.dtype)
    return TensorType(einsum_out_shape(attrs.equation, [f.shape for f in fields]), dtype)


def _einsum_compute(args, attrs):
    ops = list(args[0])
    return np.asarray(np.einsum(attrs.equation, *ops)).astype(ops[0].dtype)


register_op("einsum", ("data",), attrs=EinsumAttrs, rel=_einsum_rel, fusion=FusionKind.OPAQUE,
            compute=_einsum_compute, doc="numpy.einsum over a tuple of tensors of one dtype.")


@dataclass(frozen=True)
class MatmulAttrs(Attrs):
    units: int | None = None
    out_dtype: str = ""
    transpose_a: bool = False
    transpose_b: bool = False


def _matmul_rel(types, attrs):
    a = tensor_arg("nn.matmul", ("tensor_a", "tensor_b"), types, 0)
    b = tensor_arg("nn.matmul", ("tensor_a", "tensor_b"), types, 1)
    if a.ndim < 1 or b.ndim != 2:
        raise fail("nn.matmul", "tensor_b", "a 2-D tensor (and tensor_a of rank >= 1)", b)
    k_a = a.shape[-2] if attrs.transpose_a else a.shape[-1]
    if attrs.transpose_a and a.ndim < 2:
        raise fail("nn.matmul", "tensor_a", "rank >= 2 with transpose_a", a)
    k_b, n = (b.shape[1], b.shape[0]) if attrs.transpose_b else (b.shape[0], b.shape[1])
    if k_a != k_b:
        raise fail("nn.matmul", "tensor_b", f"reduction size {k_a}", k_b)
    if attrs.units is not None and attrs.units != n:
        raise fail("nn.matmul", "units", f"{n} (the weight's output size)", attrs.units)
    m = a.shape[-1] if attrs.transpose_a else a.shape[-2] if a.ndim >= 2 else None
    lead = a.shape[:-2] if a.ndim >= 2 else ()
    shape = lead + ((m,) if m is not None else ()) + (n,)
    if a.dtype != b.dtype:
        raise fail("nn.matmul", "tensor_b", f"dtype {a.dtype}", b.dtype)
    return TensorType(shape, attrs.out_dtype or a.dtype)


def _matmul_compute(args, attrs):
    a, b = args
    if attrs.transpose_a:
        a = np.swapaxes(a, -1, -2)
    if attrs.transpose_b:
        b = b.T
    out_dtype = np.dtype(attrs.out_dtype or a.dtype)
    if a.dtype.kind in "iu":  # integer accumulation wraps in the output dtype, as the C kernels do
        return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(out_dtype)
    return np.matmul(a, b).astype(out_dtype)


register_op("nn.matmul", ("tensor_a", "tensor_b"), attrs=MatmulAttrs, rel=_matmul_rel, fusion=FusionKind.OPAQUE,
            compute=_matmul_compute, doc="tensor_a · tensor_b (either transposed), TVM's nn.matmul.")
