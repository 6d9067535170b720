"""Spelling of leaf values in the text format, shared by the printer and the parser.

Types (``Tensor[(1, 3), int8]``), scalar constant literals (``-14i8``, ``0.5f``), attribute values and the
``#[metadata]`` encoding of tensor constants. Every spelling here has an exact inverse: scalar literals are
only used when they parse back to the same bits, and tensor bytes travel as base64 of their little-endian
representation.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import math
import re
import struct
from typing import Any

import numpy as np

from ..ir.gc_pause import gc_paused  # noqa: F401 - used by the printer and parser
from ..ir.types import DTYPES, FuncType, RelayRefType, TensorType, TupleType, Type

__all__ = ["gc_paused", "type_text", "scalar_literal", "parse_number", "attr_text", "attr_defaults", "same_value",
           "NO_DEFAULT", "encode_metadata", "decode_constant", "IDENT_RE", "quote_name", "DTYPE_SUFFIX",
           "SUFFIX_DTYPE"]

IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_GLOBAL_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")

# Literal suffixes, TVM style: int32 and float32 ("f") are the defaults of bare literals.
DTYPE_SUFFIX = {"int32": "", "int8": "i8", "int16": "i16", "int64": "i64", "uint8": "u8", "uint16": "u16",
                "uint32": "u32", "float32": "f", "float64": "f64", "float16": "f16"}
SUFFIX_DTYPE = {v: k for k, v in DTYPE_SUFFIX.items() if v}
SUFFIX_DTYPE.update({"i32": "int32", "f32": "float32"})
_DTYPE_NAME_BY_CODE = {np.dtype(d).str[1:]: d for d in DTYPES}  # "i8" -> "int64", any byte order


def quote_name(name: str) -> str:
    """A global function name as it appears after ``@`` (quoted when it is not an identifier)."""
    return name if _GLOBAL_NAME_RE.match(name) else json.dumps(name)


# ---------------------------------------------------------------------------------------------------- types

def type_text(t: Type | None) -> str:
    """TVM's spelling: scalars as their dtype, ``Tensor[(3), int8]``, ``(T1, T2)``, ``fn (A) -> R``."""
    if isinstance(t, TensorType):
        if not t.shape:
            return t.dtype
        return f"Tensor[({', '.join(str(d) for d in t.shape)}), {t.dtype}]"
    if isinstance(t, TupleType):
        inner = ", ".join(type_text(f) for f in t.fields)  # tuple nesting is shallow by construction
        return f"({inner},)" if len(t.fields) == 1 else f"({inner})"
    if isinstance(t, FuncType):
        return f"fn ({', '.join(type_text(a) for a in t.arg_types)}) -> {type_text(t.ret_type)}"
    if isinstance(t, RelayRefType):
        return f"ref({type_text(t.value)})"
    return "?" if t is None else str(t)


# ------------------------------------------------------------------------------------------ scalar literals

_FLOAT_PACK = {"float16": struct.Struct("<e"), "float32": struct.Struct("<f"), "float64": struct.Struct("<d")}


def scalar_literal(data: np.ndarray) -> str | None:
    """The inline literal of a 0-d constant, or None when only the metadata section can hold it exactly."""
    if data.ndim != 0:
        return None
    dtype = _DTYPE_NAME_BY_CODE.get(data.dtype.str[1:])
    if dtype == "bool":
        return "True" if data.item() else "False"
    suffix = DTYPE_SUFFIX.get(dtype) if dtype is not None else None
    if suffix is None:
        return None
    value = data.item()
    if dtype[0] != "f":
        return f"{value}{suffix}"
    if not math.isfinite(value):
        return None
    text = repr(value) if dtype == "float64" else str(data.dtype.type(value))  # shortest round-trip spelling
    if "." not in text and "e" not in text:
        text += ".0"
    # The parser reads decimal -> float64 -> dtype; keep the literal only if that gives back the same bits.
    if _FLOAT_PACK[dtype].pack(float(text)) != data.tobytes():
        return None
    return text + suffix


def parse_number(text: str) -> tuple[Any, str]:
    """A numeric token -> (Python value, dtype name); raises ValueError with a reason."""
    m = re.match(r"(-?(?:\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|inf|nan))([iuf]\d*)?\Z", text)
    if m is None:
        raise ValueError(f"malformed number {text!r}")
    body, suffix = m.group(1), m.group(2) or ""
    is_float = not body.lstrip("-").isdigit()
    if suffix:
        if suffix not in SUFFIX_DTYPE:
            raise ValueError(f"unknown literal suffix {suffix!r} in {text!r} "
                             f"(known: {', '.join(sorted(SUFFIX_DTYPE))})")
        dtype = SUFFIX_DTYPE[suffix]
    else:
        dtype = "float32" if is_float else "int32"
    if dtype.startswith(("int", "uint")):
        if is_float:
            raise ValueError(f"{text!r}: an integer suffix on a non-integer value")
        value: Any = int(body)
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise ValueError(f"{body} is out of range for {dtype} [{info.min}, {info.max}]")
        return value, dtype
    return float(body), dtype


# ---------------------------------------------------------------------------------------- attribute values

def attr_text(value: Any) -> str:
    """Attribute values: ints, floats (repr, ``inf``/``nan``), strings, bools, None and nested lists."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return float.__repr__(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(attr_text(v) for v in value) + "]"  # attribute nesting is shallow
    if isinstance(value, np.generic):
        return attr_text(value.item())
    if isinstance(value, np.ndarray):
        return attr_text(value.tolist())
    # Not representable: spell it so that the parser reports it instead of silently changing its type.
    return f"<unprintable {type(value).__name__}: {json.dumps(repr(value))}>"


_DEFAULTS: dict[type, tuple[tuple[str, Any], ...]] = {}
NO_DEFAULT = object()  # the "default" of a required attrs field


def attr_defaults(attrs_type: type) -> tuple[tuple[str, Any], ...]:
    """(field name, default or NO_DEFAULT) for an attrs dataclass, cached per class."""
    cached = _DEFAULTS.get(attrs_type)
    if cached is None:
        out = []
        for f in dataclasses.fields(attrs_type):
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                default = f.default_factory()  # type: ignore[misc]
            else:
                default = NO_DEFAULT
            out.append((f.name, default))
        cached = _DEFAULTS[attrs_type] = tuple(out)
    return cached


def same_value(a: Any, b: Any) -> bool:
    """Equal and of the same kind (so ``True`` is not taken for the default ``1``)."""
    if type(a) is not type(b):
        if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
            return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b


# ----------------------------------------------------------------------------------------------- metadata

def encode_constant(data: np.ndarray) -> str:
    """One metadata entry: dtype, shape and the little-endian bytes in base64 (exact, float bits included)."""
    le = data.astype(data.dtype.newbyteorder("<"), copy=False) if data.dtype.byteorder == ">" else data
    return json.dumps({"dtype": data.dtype.name, "shape": list(data.shape),
                       "data": base64.b64encode(np.ascontiguousarray(le).tobytes()).decode("ascii")})


def encode_metadata(constants: list[np.ndarray]) -> list[str]:
    lines = ["#[metadata]", "{", '  "relay.Constant": [']
    for k, data in enumerate(constants):
        lines.append("    " + encode_constant(data) + ("," if k + 1 < len(constants) else ""))
    lines.extend(["  ]", "}"])
    return lines


def decode_constant(entry: Any, k: int) -> np.ndarray:
    """Inverse of ``encode_constant``; raises ValueError naming what is wrong with entry ``k``."""
    if not isinstance(entry, dict):
        raise ValueError(f"constant {k} is not an object")
    missing = [key for key in ("dtype", "shape", "data") if key not in entry]
    if missing:
        raise ValueError(f"constant {k} lacks {', '.join(missing)}")
    dtype, shape, data = entry["dtype"], entry["shape"], entry["data"]
    if dtype not in DTYPES:
        raise ValueError(f"constant {k} has unknown dtype {dtype!r} (one of {', '.join(DTYPES)})")
    if not (isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                            for d in shape)):
        raise ValueError(f"constant {k}: shape must be a list of non-negative ints, got {shape!r}")
    if not isinstance(data, str):
        raise ValueError(f"constant {k}: data must be a base64 string")
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError as e:
        raise ValueError(f"constant {k}: data is not valid base64 ({e})") from None
    dt = np.dtype(dtype).newbyteorder("<")
    count = math.prod(shape)
    if len(raw) != count * dt.itemsize:
        raise ValueError(f"constant {k}: {len(raw)} data bytes, expected {count * dt.itemsize} "
                         f"for shape {tuple(shape)} of {dtype}")
    arr = np.frombuffer(raw, dtype=dt).reshape(shape)
    if dtype == "bool" and raw.translate(None, b"\x00\x01"):
        raise ValueError(f"constant {k}: bool data must be bytes 0 or 1")
    return arr.astype(np.dtype(dtype), copy=True)
