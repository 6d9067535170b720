"""IR expression nodes, in the spirit of TVM Relay.

Nodes are frozen, slotted dataclasses hashed by identity (``eq=False``): two nodes are the same value only if
they are the same object; ``structural_equal`` compares structure. ``checked_type`` is a memo that
``InferType`` fills; it is a pure function of the node, so caching it does not break immutability.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import IRError
from .attrs import Attrs, FrozenDict
from .types import TensorType, TupleType, Type, normalize_dtype
from ..nd import NDArray

__all__ = [
    "Span", "Expr", "Op", "Var", "Constant", "Call", "Tuple", "TupleGetItem", "Let", "If", "Function",
    "GlobalVar", "const", "RefCreate", "RefRead", "RefWrite",
]


@dataclass(frozen=True, slots=True)
class Span:
    """Where a node came from: a model tensor/operator name or a text position."""
    source: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}" if self.line else self.source


class Expr:
    """Base class of expressions."""
    __slots__ = ()

    @property
    def checked_type(self) -> Type:
        t = self._checked_type  # type: ignore[attr-defined]
        if t is None:
            raise IRError(f"the type of {type(self).__name__} is not inferred yet",
                          hint="run relay.transform.InferType() on the module first")
        return t

    def _set_checked_type(self, t: Type) -> None:
        object.__setattr__(self, "_checked_type", t)

    def replace(self, **changes) -> "Expr":
        """A copy with ``changes``; returns ``self`` when nothing changes (so mutators can test ``new is old``)."""
        for k, v in changes.items():
            if getattr(self, k) is not v:
                break
        else:
            return self
        cls = type(self)
        names = _INIT_FIELDS.get(cls)
        if names is None:
            names = _INIT_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                                              if f.init and f.name != "_checked_type")
        kw = {n: getattr(self, n) for n in names}
        kw.update(changes)
        return cls(**kw)  # the copy's type memo starts empty

    # Arithmetic sugar, as in Relay (x + 1 builds an add call).
    def __add__(self, other):
        from ..relay import op as _op
        return _op.add(self, _as_expr(other, self))

    def __radd__(self, other):
        from ..relay import op as _op
        return _op.add(_as_expr(other, self), self)

    def __sub__(self, other):
        from ..relay import op as _op
        return _op.subtract(self, _as_expr(other, self))

    def __mul__(self, other):
        from ..relay import op as _op
        return _op.multiply(self, _as_expr(other, self))

    def __truediv__(self, other):
        from ..relay import op as _op
        return _op.divide(self, _as_expr(other, self))

    def __rsub__(self, other):
        from ..relay import op as _op
        return _op.subtract(_as_expr(other, self), self)

    def __rmul__(self, other):
        from ..relay import op as _op
        return _op.multiply(_as_expr(other, self), self)

    def __rtruediv__(self, other):
        from ..relay import op as _op
        return _op.divide(_as_expr(other, self), self)

    def __neg__(self):
        from ..relay import op as _op
        return _op.negative(self)

    # Comparisons build calls as in Relay (x < y is a ``less`` call); ``==`` stays identity.
    def __lt__(self, other):
        from ..relay import op as _op
        return _op.less(self, _as_expr(other, self))

    def __gt__(self, other):
        from ..relay import op as _op
        return _op.greater(self, _as_expr(other, self))

    def __le__(self, other):
        from ..relay import op as _op
        return _op.less_equal(self, _as_expr(other, self))

    def __ge__(self, other):
        from ..relay import op as _op
        return _op.greater_equal(self, _as_expr(other, self))

    def astype(self, dtype: str):
        from ..relay import op as _op
        return _op.cast(self, dtype)

    def __call__(self, *args):
        """Calling an expression builds a Call (a Var or Let-bound function as callee, as in Relay)."""
        return Call(self, tuple(_as_expr(a) for a in args))

    def astext(self, show_meta_data: bool = True) -> str:
        from ..text.printer import astext
        return astext(self, show_meta_data=show_meta_data)

    def __str__(self) -> str:
        return self.astext(show_meta_data=False)


# Per node class: constructor fields other than the type memo (for ``replace``).
_INIT_FIELDS: dict[type, tuple[str, ...]] = {}


def _as_expr(value, like: Expr | None = None) -> Expr:
    if isinstance(value, Expr):
        return value
    dtype = None
    if like is not None and like._checked_type is not None and isinstance(like._checked_type, TensorType):
        dtype = like._checked_type.dtype
    elif isinstance(like, Var) and isinstance(like.type_annotation, TensorType):
        dtype = like.type_annotation.dtype
    return const(value, dtype)


@dataclass(frozen=True, slots=True, eq=False)
class Op(Expr):
    """A registered primitive operator. Get one with ``Op.get(name)``; unknown names suggest close matches."""
    name: str
    _checked_type: Type | None = field(default=None, repr=False, compare=False)

    @staticmethod
    def get(name: str) -> "Op":
        return _op_def(name).op

    @property
    def op_def(self):
        return _op_def(self.name)

    # TVM's per-op attribute map (FTVMConvertOpLayout, target.<name> predicates, ...), held by the op registry
    def get_attr(self, attr_key: str):
        _op_def(self.name)   # binds the registry module
        return _registry.get_op_attr(self.name, attr_key)

    def set_attr(self, attr_key: str, value, plevel: int = 10) -> None:
        _op_def(self.name)
        _registry.register_op_attr(self.name, attr_key, value, plevel)

    def reset_attr(self, attr_key: str) -> None:
        _op_def(self.name)
        _registry.remove_op_attr(self.name, attr_key)

    def __repr__(self) -> str:
        return f"Op({self.name})"


_registry = None  # byoc.ops.registry, bound on first use (it imports this module)


def _op_def(name: str):
    """The registry entry of op ``name``: a dict hit on the hot path (calls are built by the million)."""
    global _registry
    if _registry is None:
        from ..ops import registry as _reg
        _registry = _reg
    d = _registry._REGISTRY.get(name)
    return d if d is not None else _registry.get_op_def(name)


@dataclass(frozen=True, slots=True, eq=False)
class Var(Expr):
    name_hint: str
    type_annotation: Type | None = None
    span: Span | None = field(default=None, repr=False)
    _checked_type: Type | None = field(default=None, repr=False)

    def __post_init__(self):
        if not isinstance(self.name_hint, str) or not self.name_hint:
            raise IRError(f"a Var needs a non-empty string name, got {self.name_hint!r}")
        if self.type_annotation is not None and not isinstance(self.type_annotation, Type):
            raise IRError(f"Var %{self.name_hint}: type annotation must be a Type, got {self.type_annotation!r}")

    @property
    def vid(self):  # TVM spelling: var.vid.name_hint
        return self

    def __repr__(self) -> str:
        return f"Var({self.name_hint})"


@dataclass(frozen=True, slots=True, eq=False)
class Constant(Expr):
    data: np.ndarray
    span: Span | None = field(default=None, repr=False)
    _checked_type: Type | None = field(default=None, repr=False)

    def __post_init__(self):
        arr = self.data
        if not isinstance(arr, np.ndarray):
            arr = np.asarray(arr)
        normalize_dtype(arr.dtype)
        if arr.flags.writeable or not arr.flags.c_contiguous:
            arr = np.array(arr, order="C", copy=True)
            arr.setflags(write=False)
        # TVM's NDArray methods (.numpy(), .asnumpy()) on a read-only numpy view: tables ported from TVM read them
        object.__setattr__(self, "data", arr if type(arr) is NDArray else arr.view(NDArray))

    @property
    def type(self) -> TensorType:
        key = (self.data.shape, self.data.dtype)
        t = _CONSTANT_TYPES.get(key)
        if t is None:  # types are immutable values: constants of one shape and dtype share one
            t = _CONSTANT_TYPES[key] = TensorType(key[0], key[1].name)
        return t

    def __repr__(self) -> str:
        return f"Constant({self.type})"


_CONSTANT_TYPES: dict[tuple[tuple[int, ...], np.dtype], TensorType] = {}


def const(value, dtype: str | None = None, span: Span | None = None) -> Constant:
    """``relay.const``: a Python scalar defaults to int32/float32 as in Relay."""
    try:
        if isinstance(value, np.ndarray):
            arr = value if dtype is None else value.astype(normalize_dtype(dtype))
        else:
            arr = np.asarray(value)
            if dtype is None:
                if arr.dtype.kind == "f":
                    dtype = "float32"
                elif arr.dtype.kind in "iu":
                    dtype = "int32"
                elif arr.dtype.kind == "b":
                    dtype = "bool"
            if dtype is not None:
                arr = arr.astype(normalize_dtype(dtype))
    except (ValueError, TypeError) as e:  # ragged lists, strings where numbers are expected, ...
        shown = repr(value)
        raise IRError(f"cannot make a constant{' of dtype ' + str(dtype) if dtype else ''} from "
                      f"{shown[:60] + '...' if len(shown) > 60 else shown}: {e}",
                      hint="pass a number, a rectangular nested list or a numpy array") from e
    return Constant(arr, span)


@dataclass(frozen=True, slots=True, eq=False)
class Call(Expr):
    op: Expr
    args: tuple[Expr, ...]
    attrs: Attrs | None = None
    span: Span | None = field(default=None, repr=False)
    _checked_type: Type | None = field(default=None, repr=False)

    def __post_init__(self):
        span = self.span
        if span is not None and type(span) is not Span:
            # TVM's 4th positional argument is type_args (explicit type instantiation), never used by
            # first-order Relay; an empty one is accepted for source compatibility.
            if isinstance(span, (list, tuple)) and not span:
                object.__setattr__(self, "span", None)
            else:
                raise IRError(f"Call: span must be a Span, got {type(span).__name__}",
                              hint="type arguments (TVM's Call(op, args, attrs, type_args)) are not supported")
        args = self.args
        if type(args) is not tuple:
            args = tuple(args)
            object.__setattr__(self, "args", args)
        for a in args:
            if not isinstance(a, Expr):
                i = next(i for i, b in enumerate(args) if b is a)
                raise IRError(f"argument {i} of call to {_callee_name(self.op)} is {type(a).__name__}, not an Expr",
                              hint="wrap Python values with relay.const(...)")
        op = self.op
        if isinstance(op, Op):
            op_def = _op_def(op.name)
            attrs = self.attrs
            if type(attrs) is not op_def.attrs_type:  # already normalised: the common case when rebuilding
                object.__setattr__(self, "attrs", op_def.make_attrs(attrs))
            if len(args) != len(op_def.arg_names):
                op_def.check_arity(len(args))
        elif not isinstance(op, (Function, GlobalVar, Var)):
            raise IRError(f"a call's callee must be an Op, Function, GlobalVar or Var, got {type(self.op).__name__}")

    @property
    def type_args(self) -> tuple:
        """TVM's explicit type arguments: always empty here."""
        return ()

    def __repr__(self) -> str:
        return f"Call({_callee_name(self.op)}, {len(self.args)} args)"


def _callee_name(op) -> str:
    if isinstance(op, Op):
        return op.name
    if isinstance(op, GlobalVar):
        return "@" + op.name_hint
    if isinstance(op, Function):
        return "fn"
    return type(op).__name__


@dataclass(frozen=True, slots=True, eq=False)
class Tuple(Expr):
    fields: tuple[Expr, ...]
    span: Span | None = field(default=None, repr=False)
    _checked_type: Type | None = field(default=None, repr=False)

    def __post_init__(self):
        fields = tuple(self.fields)
        for i, f in enumerate(fields):
            if not isinstance(f, Expr):
                raise IRError(f"tuple field {i} is {type(f).__name__}, not an Expr")
        object.__setattr__(self, "fields", fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, i: int) -> Expr:
        return self.fields[i]


@dataclass(frozen=True, slots=True, eq=False)
class TupleGetItem(Expr):
    tuple_value: Expr
    index: int
    span: Span | None = field(default=None, repr=False)
    _checked_type: Type | None = field(default=None, repr=False)

    def __post_init__(self):
        if not isinstance(self.tuple_value, Expr):
            raise IRError(f"TupleGetItem needs an Expr, got {type(self.tuple_value).__name__}")
        if not isinstance(self.index, (int, np.integer)) or isinstance(self.index, bool) or self.index < 0:
            raise IRError(f"TupleGetItem index must be a non-negative int, got {self.index!r}")
        object.__setattr__(self, "index", int(self.index))


@dataclass(frozen=True, slots=True, eq=False)
class Let(Expr):
    var: Var
    value: Expr
    body: Expr
    span: Span | None = field(default=None, repr=False)
    _checked_type: Type | None = field(default=None, repr=False)

    def __post_init__(self):
        if not isinstance(self.var, Var):
            raise IRError(f"Let binds a Var, got {type(self.var).__name__}")
        if not isinstance(self.value, Expr) or not isinstance(self.body, Expr):
            raise IRError("Let value and body must be Exprs")


@dataclass(frozen=True, slots=True, eq=False)
class If(Expr):
    cond: Expr
    true_branch: Expr
    false_branch: Expr
    span: Span | None = field(default=None, repr=False)
    _checked_type: Type | None = field(default=None, repr=False)

    def __post_init__(self):
        for name in ("cond", "true_branch", "false_branch"):
            if not isinstance(getattr(self, name), Expr):
                raise IRError(f"If.{name} must be an Expr, got {type(getattr(self, name)).__name__}")


@dataclass(frozen=True, slots=True, eq=False)
class Function(Expr):
    """``ret_type``: the declared return type, or ``None``; ``InferType`` fills a missing one from the body (as
    Relay does). Code that gives a function a body of another type must not carry the old one over."""
    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None = None
    attrs: FrozenDict = field(default_factory=FrozenDict)
    span: Span | None = field(default=None, repr=False)
    _checked_type: Type | None = field(default=None, repr=False)

    def __post_init__(self):
        params = tuple(self.params)
        for i, p in enumerate(params):
            if not isinstance(p, Var):
                raise IRError(f"function parameter {i} is {type(p).__name__}, not a Var")
        if not isinstance(self.body, Expr):
            raise IRError(f"function body must be an Expr, got {type(self.body).__name__}")
        object.__setattr__(self, "params", params)
        attrs = self.attrs
        if attrs is None:
            attrs = FrozenDict()
        elif not isinstance(attrs, FrozenDict):
            attrs = FrozenDict(attrs)
        object.__setattr__(self, "attrs", attrs)

    def with_attr(self, key: str, value: Any) -> "Function":
        return self.replace(attrs=self.attrs.set(key, value))

    def __call__(self, *args: Expr) -> Call:
        return Call(self, tuple(args))

    def __repr__(self) -> str:
        return f"Function({len(self.params)} params, attrs={dict(self.attrs)})"


@dataclass(frozen=True, slots=True, eq=False)
class GlobalVar(Expr):
    name_hint: str
    _checked_type: Type | None = field(default=None, repr=False)

    def __call__(self, *args: Expr) -> Call:
        return Call(self, tuple(args))

    def __repr__(self) -> str:
        return f"GlobalVar({self.name_hint})"


def _check_operands(node: Expr, names: tuple[str, ...]) -> None:
    for name in names:
        v = getattr(node, name)
        if not isinstance(v, Expr):
            raise IRError(f"{type(node).__name__}.{name} must be an Expr, got {type(v).__name__}",
                          hint="wrap Python values with relay.const(...)")


# References (Relay's mutable cells). Each node is an effect: evaluating it twice is not evaluating it once, so
# passes that merge, drop or fold pure nodes leave these alone (see docs/porting-from-tvm.md, "References").
@dataclass(frozen=True, slots=True, eq=False)
class RefCreate(Expr):
    """A new mutable cell holding ``value`` (type ``Ref[T]``)."""
    value: Expr
    span: Span | None = field(default=None, repr=False)
    _checked_type: Type | None = field(default=None, repr=False)

    def __post_init__(self):
        _check_operands(self, ("value",))


@dataclass(frozen=True, slots=True, eq=False)
class RefRead(Expr):
    """The value a cell holds now."""
    ref: Expr
    span: Span | None = field(default=None, repr=False)
    _checked_type: Type | None = field(default=None, repr=False)

    def __post_init__(self):
        _check_operands(self, ("ref",))


@dataclass(frozen=True, slots=True, eq=False)
class RefWrite(Expr):
    """Store ``value`` in cell ``ref``; evaluates to the empty tuple."""
    ref: Expr
    value: Expr
    span: Span | None = field(default=None, repr=False)
    _checked_type: Type | None = field(default=None, repr=False)

    def __post_init__(self):
        _check_operands(self, ("ref", "value"))


REF_NODES = (RefCreate, RefRead, RefWrite)


def tuple_type_of(t: Type) -> TupleType:
    if not isinstance(t, TupleType):
        raise IRError(f"expected a tuple type, found {t}")
    return t
