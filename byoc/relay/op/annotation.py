"""``relay.op.annotation`` / ``relay.annotation``: the region markers of the BYOC flow."""
from __future__ import annotations

from ...ops.annotation import COMPILER_BEGIN, COMPILER_END
from . import make_call

__all__ = ["compiler_begin", "compiler_end"]


def compiler_begin(data, compiler: str):
    """Start of a region for ``compiler`` on this edge (identity at run time)."""
    return make_call(COMPILER_BEGIN, (data,), {"compiler": compiler})


def compiler_end(data, compiler: str):
    """End of a region for ``compiler`` on this edge (identity at run time)."""
    return make_call(COMPILER_END, (data,), {"compiler": compiler})
