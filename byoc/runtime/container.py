"""``tvm.runtime.container``: ``ADT``, the value the VM returns for a tuple (``tuple_object``), and
``ShapeTuple``. An ADT is a read-only sequence of its fields (NDArrays or nested ADTs) with a ``tag``."""
from __future__ import annotations

from collections.abc import Sequence

from ..errors import ExecutionError

__all__ = ["ADT", "tuple_object", "ShapeTuple"]


class ADT(Sequence):
    __slots__ = ("_tag", "_fields")

    def __init__(self, tag: int, fields) -> None:
        self._tag = int(tag)
        self._fields = tuple(fields)

    @property
    def tag(self) -> int:
        return self._tag

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return list(self._fields[idx])
        if not -len(self._fields) <= idx < len(self._fields):
            raise IndexError(f"ADT index {idx} out of range ({len(self._fields)} fields)")
        return self._fields[idx]

    def __len__(self) -> int:
        return len(self._fields)

    def __repr__(self) -> str:
        return f"ADT(tag={self._tag}, {len(self._fields)} fields)"


def tuple_object(fields=None) -> ADT:
    """A tuple value (tag 0), as the VM returns for a Relay tuple."""
    return ADT(0, fields or ())


class ShapeTuple(Sequence):
    __slots__ = ("_dims",)

    def __init__(self, shape) -> None:
        try:
            self._dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise ExecutionError(f"ShapeTuple expects a sequence of ints, got {shape!r}") from None

    def __getitem__(self, idx):
        return self._dims[idx]

    def __len__(self) -> int:
        return len(self._dims)

    def __eq__(self, other) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        return f"ShapeTuple({list(self._dims)})"
