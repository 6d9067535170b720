"""The op registry: one declarative entry per primitive op.

Each entry states the op's name (TVM Relay spelling), its operands, its typed attribute schema, its type
relation, its fusion kind (used by the CPU backend's FuseOps) and its reference implementation in numpy, which
is the bit-exact semantics every executor must reproduce.
"""
from __future__ import annotations

import dataclasses
import difflib
import enum
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import ByocError, IRError, TypeInferenceError
from ..ir.attrs import Attrs
from ..ir.expr import Op
from ..ir.types import Type

__all__ = [
    "FusionKind", "OpDef", "register_op", "get_op_def", "list_ops", "register_op_attr", "get_op_attr",
    "NoAttrs",
]


class FusionKind(enum.IntEnum):
    """TVM's TOpPattern values, so ``has_attr({"TOpPattern": K})`` patterns port unchanged."""
    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


@dataclass(frozen=True)
class NoAttrs(Attrs):
    """Attributes of ops that take none."""


TypeRelation = Callable[[list[Type], Any], Type]
Compute = Callable[[list[Any], Any], Any]


@dataclass(frozen=True)
class OpDef:
    name: str
    arg_names: tuple[str, ...]
    attrs_type: type = NoAttrs
    type_rel: TypeRelation | None = None
    fusion: FusionKind = FusionKind.OPAQUE
    compute: Compute | None = None
    doc: str = ""
    op: Op = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "op", Op(self.name))

    @property
    def num_inputs(self) -> int:
        return len(self.arg_names)

    def check_arity(self, n: int) -> None:
        if n != len(self.arg_names):
            raise IRError(
                f"{self.name} takes {len(self.arg_names)} arguments ({', '.join(self.arg_names)}), got {n}")

    def make_attrs(self, attrs: Any) -> Attrs:
        """Normalise ``attrs`` (None, a dict or an instance) to this op's attribute dataclass."""
        if isinstance(attrs, self.attrs_type):
            return attrs
        if attrs is None:
            attrs = {}
        if isinstance(attrs, Attrs):
            attrs = dict(attrs.items())
        if not isinstance(attrs, dict):
            raise IRError(f"{self.name}: attributes must be a dict or {self.attrs_type.__name__}, "
                          f"got {type(attrs).__name__}")
        known = {f.name for f in dataclasses.fields(self.attrs_type)}
        unknown = [k for k in attrs if k not in known]
        if unknown:
            sugg = []
            for k in unknown:
                close = difflib.get_close_matches(k, known, n=1)
                sugg.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise IRError(f"{self.name}: unknown attribute(s) {', '.join(sugg)}",
                          hint=f"{self.name} accepts: {', '.join(sorted(known)) or 'no attributes'}")
        try:
            return self.attrs_type(**attrs)
        except ByocError:
            raise
        except (TypeError, ValueError, IndexError) as e:
            raise IRError(f"{self.name}: bad attributes: {e}",
                          hint=f"given {attrs}; see the fields of {self.attrs_type.__name__}") from e


_REGISTRY: dict[str, OpDef] = {}
_OP_ATTRS: dict[tuple[str, str], Any] = {}


def register_op(name: str, arg_names: tuple[str, ...] | list[str], *, attrs: type = NoAttrs,
                rel: TypeRelation | None = None, fusion: FusionKind = FusionKind.OPAQUE,
                compute: Compute | None = None, doc: str = "") -> OpDef:
    if name in _REGISTRY:
        raise IRError(f"op {name} is registered twice")
    d = OpDef(name, tuple(arg_names), attrs, _guarded_rel(name, rel), fusion, compute, doc)
    _REGISTRY[name] = d
    return d


def _guarded_rel(name: str, rel: TypeRelation | None) -> TypeRelation | None:
    """Type relations raise TypeInferenceError; a stray Python error (odd attribute values) becomes one too."""
    if rel is None:
        return None

    def guarded(types, attrs):
        try:
            return rel(types, attrs)
        except ByocError:
            raise
        except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError) as e:
            raise TypeInferenceError(f"{name}: cannot type this call: {type(e).__name__}: {e}",
                                     hint=f"check {name}'s attributes and argument types") from e

    guarded.__wrapped__ = rel  # type: ignore[attr-defined]
    return guarded


_ARG_TYPES: dict[str, Callable] = {}


def register_arg_types(op_name: str, fn: Callable) -> Callable:
    """``fn(arg_types, attrs) -> arg_types``: fills the ``None`` entries (operands of unknown type) that the op
    determines from its other operands and attributes, as Relay's type relations solve a conv2d weight or the
    batch_norm parameters of ``relay.var("w")`` without annotations."""
    _ARG_TYPES[op_name] = fn
    return fn


def arg_types_hint(op_name: str) -> Callable | None:
    return _ARG_TYPES.get(op_name)


def _ensure_loaded() -> None:
    # Importing the op definition modules fills the registry.
    from . import catalog  # noqa: F401


def get_op_def(name: str) -> OpDef:
    if name not in _REGISTRY:
        _ensure_loaded()
    d = _REGISTRY.get(name)
    if d is None:
        close = difflib.get_close_matches(name, list(_REGISTRY), n=3, cutoff=0.5)
        raise IRError(f"unknown op {name!r}",
                      hint=("did you mean " + ", ".join(repr(c) for c in close) + "?") if close else
                      "see byoc.ops.list_ops() for the registered ops")
    return d


def list_ops() -> list[str]:
    _ensure_loaded()
    return sorted(_REGISTRY)


def register_op_attr(op_name: str, attr_key: str, value: Any = None, level: int = 10):
    """``tvm.ir.register_op_attr``: usable directly or as a decorator (``target.<name>`` predicates)."""
    get_op_def(op_name)

    def _register(v):
        _OP_ATTRS[(op_name, attr_key)] = v
        return v

    if value is None:
        return _register
    return _register(value)


def get_op_attr(op_name: str, attr_key: str, default: Any = None) -> Any:
    if attr_key == "TOpPattern":
        return int(get_op_def(op_name).fusion)
    return _OP_ATTRS.get((op_name, attr_key), default)


def remove_op_attr(op_name: str, attr_key: str) -> None:
    _OP_ATTRS.pop((op_name, attr_key), None)
