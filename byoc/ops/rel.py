"""Helpers for type relations: argument checks that raise diagnostics naming the op and argument."""
from __future__ import annotations

from ..errors import TypeInferenceError
from ..ir.types import TensorType, TupleType, Type

__all__ = ["tensor_arg", "expect_dtype", "broadcast_shapes", "fail", "expect_scalar_or_vector", "INT_DTYPES",
           "FLOAT_DTYPES", "dtype_range"]

INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64")
FLOAT_DTYPES = ("float16", "float32", "float64")


def fail(op: str, arg: str, expected: str, found) -> TypeInferenceError:
    return TypeInferenceError(f"{op}: argument '{arg}' expected {expected}, found {found}")


def tensor_arg(op: str, arg_names, types: list[Type], i: int) -> TensorType:
    t = types[i]
    if not isinstance(t, TensorType):
        raise fail(op, arg_names[i], "a tensor", t)
    return t


def expect_dtype(op: str, arg: str, t: TensorType, allowed) -> None:
    if isinstance(allowed, str):
        allowed = (allowed,)
    if t.dtype not in allowed:
        raise fail(op, arg, "dtype " + " or ".join(allowed), t.dtype)


def expect_scalar_or_vector(op: str, arg: str, t: Type, length: int | None = None) -> TensorType:
    if not isinstance(t, TensorType) or t.ndim > 1:
        raise fail(op, arg, "a scalar or 1-D tensor", t)
    if length is not None and t.ndim == 1 and t.shape[0] not in (1, length):
        raise fail(op, arg, f"a scalar or a vector of {length} elements", t)
    return t


def broadcast_shapes(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + tuple(a)
    pb = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(pa, pb):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise TypeInferenceError(f"{op}: shapes {tuple(a)} and {tuple(b)} do not broadcast",
                                     hint="numpy broadcasting rules apply")
    return tuple(out)


def dtype_range(dtype: str) -> tuple[int, int]:
    import numpy as np
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def tuple_arg(op: str, arg: str, t: Type) -> TupleType:
    if not isinstance(t, TupleType):
        raise fail(op, arg, "a tuple", t)
    return t
