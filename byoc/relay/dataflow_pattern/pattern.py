"""Dataflow patterns: small frozen objects combined with TVM Relay's spelling.

``is_op("nn.conv2d")(wildcard(), is_constant())`` builds a call pattern; ``p | q`` an alternation;
``p.optional(f)`` is ``p | f(p)``; ``p.has_attr({...})`` / ``has_dtype`` / ``has_shape`` / ``has_type`` constrain the
matched expression. Patterns are hashed by identity: one pattern object used twice inside a bigger pattern must
match the same expression both times (``x = wildcard(); is_op("add")(x, x)``).

Every pattern accepts a capture ``name`` (``wildcard("w")``, ``p.named("conv")``): matches are reported under that
name to rewrite callbacks and composite checks.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ...errors import ByocError, PatternError
from ...ir.attrs import FrozenDict, freeze_value
from ...ir.expr import Expr, Op
from ...ir.types import Type

__all__ = [
    "DFPattern", "ExprPattern", "WildcardPattern", "VarPattern", "ConstantPattern", "CallPattern",
    "FunctionPattern", "TuplePattern", "TupleGetItemPattern", "IfPattern", "LetPattern", "AltPattern",
    "AttrPattern", "TypePattern", "DataTypePattern", "ShapePattern", "DominatorPattern",
    "is_op", "wildcard", "is_var", "is_constant", "is_expr", "is_tuple", "is_tuple_get_item", "is_if", "is_let",
    "has_attr", "has_type", "has_dtype", "has_shape", "dominates", "pattern_children", "pattern_post_order",
    "root_op_names",
]


@dataclass(frozen=True, eq=False)
class DFPattern:
    """Base class of dataflow patterns (identity-hashed, immutable)."""

    name: str = field(default="", kw_only=True)

    # -- sugar, as in TVM ------------------------------------------------------------------------------
    def __call__(self, *args: "DFPattern | None") -> "CallPattern":
        if len(args) == 1 and args[0] is None:
            return CallPattern(self, None)
        pats = tuple(_as_pattern(a) for a in args)  # a non-pattern argument is an error before any warning
        _check_arity(self, len(pats))
        return CallPattern(self, pats)

    def __or__(self, other: "DFPattern") -> "AltPattern":
        return AltPattern(self, _as_pattern(other))

    def __add__(self, other):
        return is_op("add")(self, other)

    def __sub__(self, other):
        return is_op("subtract")(self, other)

    def __mul__(self, other):
        return is_op("multiply")(self, other)

    def __truediv__(self, other):
        return is_op("divide")(self, other)

    def named(self, name: str) -> "DFPattern":
        """This pattern with capture name ``name`` (a new object; build patterns bottom-up)."""
        return dataclasses.replace(self, name=name)

    def has_attr(self, attrs: dict[str, Any]) -> "AttrPattern":
        return has_attr(attrs, self)

    def has_type(self, ttype: Type) -> "TypePattern":
        return has_type(ttype, self)

    def has_dtype(self, dtype: str) -> "DataTypePattern":
        return has_dtype(dtype, self)

    def has_shape(self, shape) -> "ShapePattern":
        return has_shape(shape, self)

    def optional(self, option_constructor: Callable[["DFPattern"], "DFPattern"]) -> "AltPattern":
        """``p.optional(f)`` is exactly ``p | f(p)`` (TVM)."""
        return self | option_constructor(self)

    def dominates(self, parent: "DFPattern", path: "DFPattern | None" = None) -> "DominatorPattern":
        return dominates(parent, path if path is not None else wildcard(), self)

    # -- consumers ------------------------------------------------------------------------------------
    def match(self, expr: Expr) -> bool:
        from .matcher import match
        return match(self, expr)

    def match_details(self, expr: Expr):
        """The ``Match`` (root, node_map, captures) or ``None``."""
        from .matcher import match_details
        return match_details(self, expr)

    def partition(self, expr: Expr, attrs: dict | None = None, check=None) -> Expr:
        from .partition import partition
        return partition(self, expr, attrs, check)


def _as_pattern(value) -> DFPattern:
    if isinstance(value, DFPattern):
        return value
    if isinstance(value, Expr):
        return ExprPattern(value)
    raise PatternError(f"expected a pattern or an expression, got {type(value).__name__}",
                       hint="use wildcard(), is_constant(), is_op(...)(...) or is_expr(expr)")


@dataclass(frozen=True, eq=False)
class ExprPattern(DFPattern):
    """Matches one expression: an ``Op`` by name, anything else by structural equality."""
    expr: Expr = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class WildcardPattern(DFPattern):
    """Matches anything, or (after ``redirect_to(p)``) what ``p`` matches: a recursive pattern."""

    def redirect_to(self, pattern: DFPattern) -> None:
        """TVM's ``WildcardPattern.redirect_to``: from now on this wildcard matches as ``pattern`` does (so
        ``w = wildcard(); p = is_op("cast")(w | q); w.redirect_to(p)`` matches any chain of casts ending in q).
        The one mutation of a pattern: it ties a knot that construction bottom-up cannot."""
        object.__setattr__(self, "_redirect", _as_pattern(pattern))

    @property
    def redirect(self) -> "DFPattern | None":
        return getattr(self, "_redirect", None)


@dataclass(frozen=True, eq=False)
class VarPattern(DFPattern):
    """Matches a variable; ``var_name`` empty = any variable."""
    var_name: str = ""


@dataclass(frozen=True, eq=False)
class ConstantPattern(DFPattern):
    """Matches any constant. In a composite the constant is embedded in the function body."""


@dataclass(frozen=True, eq=False)
class CallPattern(DFPattern):
    """Matches a call; ``args`` None = any number of any arguments."""
    op: DFPattern = None  # type: ignore[assignment]
    args: tuple[DFPattern, ...] | None = ()


@dataclass(frozen=True, eq=False)
class FunctionPattern(DFPattern):
    """Matches a function literal; ``params`` None = any parameters."""
    params: tuple[DFPattern, ...] | None = None
    body: DFPattern = None  # type: ignore[assignment]

    def __post_init__(self):
        if self.params is not None:
            object.__setattr__(self, "params", tuple(_as_pattern(p) for p in self.params))


@dataclass(frozen=True, eq=False)
class TuplePattern(DFPattern):
    """Matches a tuple; ``fields`` None = any arity."""
    fields: tuple[DFPattern, ...] | None = None


@dataclass(frozen=True, eq=False)
class TupleGetItemPattern(DFPattern):
    """Matches ``t[index]``; ``index`` None (or -1) = any index."""
    tuple_value: DFPattern = None  # type: ignore[assignment]
    index: int | None = None

    @property
    def tuple(self) -> DFPattern:  # TVM's field name
        return self.tuple_value


@dataclass(frozen=True, eq=False)
class IfPattern(DFPattern):
    cond: DFPattern = None  # type: ignore[assignment]
    true_branch: DFPattern = None  # type: ignore[assignment]
    false_branch: DFPattern = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class LetPattern(DFPattern):
    var: DFPattern = None  # type: ignore[assignment]
    value: DFPattern = None  # type: ignore[assignment]
    body: DFPattern = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class AltPattern(DFPattern):
    """``left | right``: tries ``left`` first."""
    left: DFPattern = None  # type: ignore[assignment]
    right: DFPattern = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class AttrPattern(DFPattern):
    """``pattern`` plus attribute constraints: op attributes (``TOpPattern``, ``target.<t>``) on an Op, call
    attributes on a Call, function attributes (``Composite``) on a Function."""
    pattern: DFPattern = None  # type: ignore[assignment]
    attrs: FrozenDict = field(default_factory=FrozenDict)  # name -> required value (TVM: a dict)


@dataclass(frozen=True, eq=False)
class TypePattern(DFPattern):
    pattern: DFPattern = None  # type: ignore[assignment]
    type: Type = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class DataTypePattern(DFPattern):
    pattern: DFPattern = None  # type: ignore[assignment]
    dtype: str = ""


@dataclass(frozen=True, eq=False)
class ShapePattern(DFPattern):
    pattern: DFPattern = None  # type: ignore[assignment]
    shape: tuple[int, ...] = ()


@dataclass(frozen=True, eq=False)
class DominatorPattern(DFPattern):
    """``child`` whose inputs reach ``parent`` only through nodes matching ``path``, and which post-dominates
    ``parent`` (the "diamond")."""
    parent: DFPattern = None  # type: ignore[assignment]
    path: DFPattern = None  # type: ignore[assignment]
    child: DFPattern = None  # type: ignore[assignment]


# -- constructors (TVM spelling) --------------------------------------------------------------------------

class PatternArityWarning(UserWarning):
    """A call pattern for a registered op with the wrong number of arguments: allowed (as in TVM), never matches."""


def _check_arity(callee: DFPattern, n: int) -> None:
    """Warn now about a call pattern that can never match (TVM accepts it silently; it just never matches)."""
    if not isinstance(callee, ExprPattern) or not isinstance(callee.expr, Op):
        return
    from ...ops.registry import get_op_def
    try:
        arg_names = get_op_def(callee.expr.name).arg_names
    except ByocError:
        return
    if n != len(arg_names):
        import warnings
        warnings.warn(f"is_op({callee.expr.name!r}) called with {n} argument pattern(s), but {callee.expr.name} "
                      f"takes {len(arg_names)} ({', '.join(arg_names)}); it can never match (give one pattern per "
                      f"argument, wildcard() for any, or call with None for any arguments)",
                      PatternArityWarning, stacklevel=3)


def is_op(op_name: str) -> ExprPattern:
    """A pattern matching the operator ``op_name``; unknown names fail here, with close matches suggested."""
    from ...ops.registry import get_op_def
    try:
        op = get_op_def(op_name).op
    except ByocError as e:
        from ...ops.tvm_op_names import TVM_OP_NAMES
        if op_name in TVM_OP_NAMES:  # a TVM op byoc does not implement: no byoc graph contains it
            return ExprPattern(Op(op_name))
        raise PatternError(f"is_op: {e.message}", hint=e.hint) from None
    return ExprPattern(op)


def wildcard(name: str = "") -> WildcardPattern:
    return WildcardPattern(name=name)


def is_var(name: str = "", *, capture: str = "") -> VarPattern:
    """A variable named ``name`` (any variable when empty). The match is captured under ``capture``, by default
    the variable's name (so ``is_var("x").name == "x"``, as in TVM)."""
    return VarPattern(name, name=capture or name)


def is_constant(name: str = "") -> ConstantPattern:
    return ConstantPattern(name=name)


def is_expr(expr: Expr, name: str = "") -> ExprPattern:
    if not isinstance(expr, Expr):
        raise PatternError(f"is_expr needs an expression, got {type(expr).__name__}")
    return ExprPattern(expr, name=name)


def is_tuple(fields, name: str = "") -> TuplePattern:
    if fields is None:
        return TuplePattern(None, name=name)
    return TuplePattern(tuple(_as_pattern(f) for f in fields), name=name)


def is_tuple_get_item(tuple_value: DFPattern, index: int | None = None, name: str = "") -> TupleGetItemPattern:
    if index is not None and index < 0:
        index = None
    return TupleGetItemPattern(_as_pattern(tuple_value), index, name=name)


def is_if(cond: DFPattern, true_branch: DFPattern, false_branch: DFPattern, name: str = "") -> IfPattern:
    return IfPattern(_as_pattern(cond), _as_pattern(true_branch), _as_pattern(false_branch), name=name)


def is_let(var: DFPattern, value: DFPattern, body: DFPattern, name: str = "") -> LetPattern:
    return LetPattern(_as_pattern(var), _as_pattern(value), _as_pattern(body), name=name)


def has_attr(attrs: dict[str, Any], pattern: DFPattern | None = None) -> AttrPattern:
    if not isinstance(attrs, dict):
        raise PatternError(f"has_attr needs a dict of attributes, got {attrs!r}")
    items = FrozenDict((str(k), freeze_value(v)) for k, v in attrs.items())  # empty: no constraint (TVM)
    return AttrPattern(pattern if pattern is not None else wildcard(), items)


def has_type(ttype: Type, pattern: DFPattern | None = None) -> TypePattern:
    if not isinstance(ttype, Type):
        raise PatternError(f"has_type needs a Type, got {type(ttype).__name__}",
                           hint="e.g. relay.TensorType((1, 8), 'int8')")
    return TypePattern(pattern if pattern is not None else wildcard(), ttype)


def has_dtype(dtype: str, pattern: DFPattern | None = None) -> DataTypePattern:
    from ...ir.types import normalize_dtype
    try:
        dtype = normalize_dtype(dtype)
    except ByocError as e:
        raise PatternError(f"has_dtype: {e.message}", hint=e.hint) from None
    return DataTypePattern(pattern if pattern is not None else wildcard(), dtype)


def has_shape(shape, pattern: DFPattern | None = None) -> ShapePattern:
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise PatternError(f"has_shape needs a sequence of integers, got {shape!r}") from None
    return ShapePattern(pattern if pattern is not None else wildcard(), dims)


def dominates(parent: DFPattern, path: DFPattern, child: DFPattern) -> DominatorPattern:
    return DominatorPattern(_as_pattern(parent), _as_pattern(path), _as_pattern(child))


# -- pattern graph helpers (recursion-free; patterns are small but may share sub-patterns) ------------------

def pattern_children(p: DFPattern) -> tuple[DFPattern, ...]:
    if isinstance(p, CallPattern):
        return (p.op,) + (p.args or ())
    if isinstance(p, FunctionPattern):
        return (p.params or ()) + (p.body,)
    if isinstance(p, TuplePattern):
        return p.fields or ()
    if isinstance(p, TupleGetItemPattern):
        return (p.tuple_value,)
    if isinstance(p, IfPattern):
        return (p.cond, p.true_branch, p.false_branch)
    if isinstance(p, LetPattern):
        return (p.var, p.value, p.body)
    if isinstance(p, AltPattern):
        return (p.left, p.right)
    if isinstance(p, (AttrPattern, TypePattern, DataTypePattern, ShapePattern)):
        return (p.pattern,)
    if isinstance(p, DominatorPattern):
        return (p.parent, p.path, p.child)
    if isinstance(p, WildcardPattern):  # redirect_to makes a cycle: pattern_post_order skips the back edge
        r = p.__dict__.get("_redirect")
        return () if r is None else (r,)
    return ()


def pattern_post_order(root: DFPattern) -> list[DFPattern]:
    """Every sub-pattern once, operands first."""
    order: list[DFPattern] = []
    seen: set[int] = set()
    stack: list[tuple[DFPattern, bool]] = [(root, False)]
    while stack:
        p, expanded = stack.pop()
        if expanded:
            order.append(p)
            continue
        if id(p) in seen:
            continue
        seen.add(id(p))
        stack.append((p, True))
        for c in reversed(pattern_children(p)):
            if c is None:
                raise PatternError(f"{type(p).__name__} has an empty sub-pattern")
            stack.append((c, False))
    return order


def iter_named(root: DFPattern) -> Iterator[DFPattern]:
    for p in pattern_post_order(root):
        if p.name:
            yield p


def root_op_names(p: DFPattern) -> frozenset[str] | None:
    """Op names a match root must call, or None when the pattern may match anything (used to skip nodes fast)."""
    stack = [p]
    names: set[str] = set()
    while stack:
        q = stack.pop()
        if isinstance(q, AltPattern):
            stack.extend((q.left, q.right))
        elif isinstance(q, (AttrPattern, TypePattern, DataTypePattern, ShapePattern)):
            stack.append(q.pattern)
        elif isinstance(q, DominatorPattern):
            stack.append(q.child)
        elif isinstance(q, CallPattern) and isinstance(q.op, ExprPattern) and isinstance(q.op.expr, Op):
            names.add(q.op.expr.name)
        else:
            return None
    return frozenset(names)
