"""Frozen value types of the IR: tensors, tuples, functions."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import IRError

__all__ = ["Type", "TensorType", "TupleType", "FuncType", "RelayRefType", "RefType", "DTYPES", "normalize_dtype",
           "scalar_type"]

DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "float16", "float32",
          "float64")


_DTYPE_SET = frozenset(DTYPES)


def normalize_dtype(dtype) -> str:
    """Canonical dtype string ('int8', 'float32', ...) from a string, numpy dtype or type."""
    try:
        name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    except TypeError as e:
        raise IRError(f"unknown dtype {dtype!r}", hint=f"one of {', '.join(DTYPES)}") from e
    if name not in DTYPES:
        raise IRError(f"unknown dtype {dtype!r}", hint=f"one of {', '.join(DTYPES)}")
    return name


class Type:
    """Base of IR types."""
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    shape: tuple[int, ...]
    dtype: str = "float32"

    def __post_init__(self):
        shape, dtype = self.shape, self.dtype
        if type(shape) is tuple and type(dtype) is str and dtype in _DTYPE_SET and all(
                type(d) is int and d >= 0 for d in shape):
            return  # already canonical (the common case: types built from other types and arrays)
        try:
            shape = tuple(int(d) for d in self.shape)
            exact = all(d == i for d, i in zip(self.shape, shape))  # 1.5 is not a dimension; 2.0 or np.int64(2) is
        except (TypeError, ValueError, OverflowError) as e:
            raise IRError(f"a tensor shape must be a sequence of integers, got {self.shape!r}") from e
        if not exact:
            raise IRError(f"a tensor shape must be a sequence of integers, got {self.shape!r}")
        if any(d < 0 for d in shape):
            raise IRError(f"negative dimension in shape {shape}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def concrete_shape(self) -> tuple[int, ...]:  # TVM spelling
        return self.shape

    def __str__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        if len(self.shape) == 1:
            dims += ","
        return f"Tensor[({dims}), {self.dtype}]"


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    fields: tuple[Type, ...]

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))

    def __str__(self) -> str:
        inner = ", ".join(str(f) for f in self.fields)
        if len(self.fields) == 1:
            inner += ","
        return f"({inner})"


@dataclass(frozen=True, slots=True)
class FuncType(Type):
    arg_types: tuple[Type, ...]
    ret_type: Type

    def __post_init__(self):
        object.__setattr__(self, "arg_types", tuple(self.arg_types))

    def __str__(self) -> str:
        return f"fn ({', '.join(str(a) for a in self.arg_types)}) -> {self.ret_type}"


@dataclass(frozen=True, slots=True)
class RelayRefType(Type):
    """The type of a mutable cell holding a ``value`` (TVM's ``RelayRefType``, spelt ``RefType`` too)."""
    value: Type

    def __post_init__(self):
        if not isinstance(self.value, Type):
            raise IRError(f"RefType needs a Type, got {type(self.value).__name__}")

    def __str__(self) -> str:
        return f"ref({self.value})"


RefType = RelayRefType


def scalar_type(dtype: str) -> TensorType:
    return TensorType((), dtype)
