"""Region annotations of the BYOC flow: ``annotation.compiler_begin`` / ``annotation.compiler_end``.

AnnotateTarget puts them on data edges; MergeCompilerRegions removes the ones that became internal;
PartitionGraph turns each region into a function. At run time they are the identity, so an annotated module
still evaluates to the same values.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.attrs import Attrs
from ..ir.types import Type
from .registry import FusionKind, register_op

__all__ = ["CompilerAttrs", "COMPILER_BEGIN", "COMPILER_END"]

COMPILER_BEGIN = "annotation.compiler_begin"
COMPILER_END = "annotation.compiler_end"


@dataclass(frozen=True)
class CompilerAttrs(Attrs):
    compiler: str = "default"


def _identity_rel(types: list[Type], attrs) -> Type:
    return types[0]


register_op(COMPILER_BEGIN, ("data",), attrs=CompilerAttrs, rel=_identity_rel, fusion=FusionKind.OPAQUE,
            compute=lambda args, attrs: args[0],
            doc="Start of a region for `compiler` on this edge (identity).")
register_op(COMPILER_END, ("data",), attrs=CompilerAttrs, rel=_identity_rel, fusion=FusionKind.OPAQUE,
            compute=lambda args, attrs: args[0],
            doc="End of a region for `compiler` on this edge (identity).")
