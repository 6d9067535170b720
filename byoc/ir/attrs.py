"""Attribute values: typed per-op attribute dataclasses and the frozen mapping used for function attributes."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Iterator

import numpy as np

__all__ = ["Attrs", "FrozenDict", "freeze_value", "make_node"]


_PLAIN = frozenset({str, int, float, bool, type(None)})


def freeze_value(value: Any) -> Any:
    """Make an attribute value hashable and immutable: lists become tuples, numpy scalars Python numbers."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, (list, tuple)):
        return tuple(freeze_value(v) for v in value)
    if isinstance(value, np.ndarray):
        return tuple(freeze_value(v) for v in value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
# Scalar fields are checked against their annotation at construction, so ``groups="two"`` fails where it is
# written rather than deep inside a type relation. (Tuple-valued fields are normalised by each op's class.)
_SCALAR_CHECKS: dict[str, tuple[type, ...]] = {
    "int": (int,), "float": (int, float), "bool": (bool, int), "str": (str,),
}
_SCALAR_SCHEMA: dict[type, tuple[tuple[str, tuple[type, ...], bool], ...]] = {}


def _scalar_schema(cls: type) -> tuple[tuple[str, tuple[type, ...], bool], ...]:
    """(field, accepted types, None allowed) for every field annotated with a scalar type."""
    schema = _SCALAR_SCHEMA.get(cls)
    if schema is None:
        rows = []
        for f in dataclasses.fields(cls):
            ann = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
            parts = [p.strip() for p in ann.split("|")]
            optional = "None" in parts
            kinds = [p for p in parts if p != "None"]
            if len(kinds) == 1 and kinds[0] in _SCALAR_CHECKS:
                rows.append((f.name, _SCALAR_CHECKS[kinds[0]], optional))
        schema = _SCALAR_SCHEMA[cls] = tuple(rows)
    return schema


class Attrs:
    """Base of the typed per-op attribute dataclasses (frozen).

    Subclasses are ``@dataclass(frozen=True)``; list-valued fields are normalised to tuples. TVM-style access
    ``attrs["strides"]`` and ``attrs.keys()`` work as well as ``attrs.strides``.
    """

    __slots__ = ()

    def __post_init__(self):
        for name in self.keys():
            v = getattr(self, name)
            fv = freeze_value(v)
            if fv is not v:
                object.__setattr__(self, name, fv)
        for name, kinds, optional in _scalar_schema(type(self)):
            v = getattr(self, name)
            if not (isinstance(v, kinds) or (v is None and optional)):
                want = " or ".join(k.__name__ for k in kinds) + (" or None" if optional else "")
                raise TypeError(f"attribute {name!r} must be {want}, found {type(v).__name__} {v!r}")

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default) if key in self.keys() else default

    def keys(self) -> tuple[str, ...]:
        cls = type(self)
        names = _FIELD_NAMES.get(cls)
        if names is None:  # dataclasses.fields is slow and rules ask for attributes by name a lot
            names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(self))  # type: ignore[arg-type]
        return names

    def items(self) -> Iterator[tuple[str, Any]]:
        for k in self.keys():
            yield k, getattr(self, k)

    def __contains__(self, key: str) -> bool:
        return key in self.keys()


class FrozenDict(Mapping):
    """An immutable, hashable, insertion-ordered mapping (function attributes)."""

    __slots__ = ("_d", "_h")

    def __init__(self, *args, **kwargs):
        d = dict(*args, **kwargs)
        self._d = {k: freeze_value(v) for k, v in d.items()}
        self._h = None

    def __getitem__(self, key):
        return self._d[key]

    def __contains__(self, key) -> bool:  # Mapping's default goes through __getitem__ and an exception
        return key in self._d

    def get(self, key, default=None):
        return self._d.get(key, default)

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)

    def __hash__(self):
        if self._h is None:
            self._h = hash(tuple(sorted(self._d.items(), key=lambda kv: kv[0])))
        return self._h

    def __eq__(self, other):
        if isinstance(other, FrozenDict):
            return self._d == other._d
        if isinstance(other, Mapping):
            return self._d == dict(other)
        return NotImplemented

    def set(self, key, value) -> "FrozenDict":
        d = dict(self._d)
        d[key] = value
        return FrozenDict(d)

    def __repr__(self):
        return f"FrozenDict({self._d!r})"


def make_node(type_key: str, **fields) -> "FrozenDict":
    """``tvm.ir.make_node("DictAttrs", **kv)``: the attributes of a call to a non-op callee (a FrozenDict)."""
    if type_key != "DictAttrs":
        from ..errors import UnsupportedAPIError
        raise UnsupportedAPIError(f"tvm.ir.make_node({type_key!r})", "only 'DictAttrs' nodes are made here")
    return FrozenDict(fields)
