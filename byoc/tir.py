"""``tvm.tir`` immediates as attribute values: ``tir.IntImm("int32", 1)`` is the Python int 1 here, since
function attributes hold plain values (``func.with_attr("Primitive", tir.IntImm("int32", 1))`` works as in TVM)."""
from __future__ import annotations

from .errors import IRError

__all__ = ["IntImm", "FloatImm", "StringImm"]


def IntImm(dtype: str, value: int) -> int:  # noqa: N802 - TVM spelling
    if not (dtype.startswith("int") or dtype.startswith("uint") or dtype == "bool"):
        raise IRError(f"tir.IntImm: dtype must be an integer type, got {dtype!r}")
    return int(value)


def FloatImm(dtype: str, value: float) -> float:  # noqa: N802
    if not dtype.startswith("float"):
        raise IRError(f"tir.FloatImm: dtype must be a float type, got {dtype!r}")
    return float(value)


def StringImm(value: str) -> str:  # noqa: N802
    return str(value)
