"""Builders for the generic tensor ops (``relay.add``, ``relay.clip``, ...), and ``make_call``."""
from __future__ import annotations

from ..ir.expr import Call, Expr, Op, Tuple, TupleGetItem, _as_expr

__all__ = ["make_call", "TupleWrapper", "add", "subtract", "multiply", "divide", "maximum", "minimum", "clip",
           "cast", "negative", "abs", "exp", "sqrt", "rsqrt", "tanh", "sigmoid", "round", "floor", "copy"]


def make_call(op_name: str, args, attrs: dict | None = None, span=None) -> Call:
    """A call to a registered op; attributes are validated against the op's schema."""
    return Call(Op.get(op_name), tuple(args), attrs, span)


class TupleWrapper:
    """What Relay returns for multi-output ops: index it to get a TupleGetItem."""

    def __init__(self, tuple_value: Expr, size: int):
        self.tuple_value = tuple_value
        self.size = size

    def astuple(self) -> Expr:
        return self.tuple_value

    def __getitem__(self, index: int) -> TupleGetItem:
        if not 0 <= index < self.size:
            from ..errors import IRError
            raise IRError(f"tuple index {index} out of range for {self.size} fields")
        return TupleGetItem(self.tuple_value, index)

    def __len__(self) -> int:
        return self.size


def _binary(name):
    def f(lhs, rhs):
        lhs = _as_expr(lhs, rhs if isinstance(rhs, Expr) else None)
        return make_call(name, (lhs, _as_expr(rhs, lhs)))
    f.__name__ = name
    return f


add = _binary("add")
subtract = _binary("subtract")
multiply = _binary("multiply")
divide = _binary("divide")
maximum = _binary("maximum")
minimum = _binary("minimum")


def clip(a, a_min, a_max):
    return make_call("clip", (a,), {"a_min": a_min, "a_max": a_max})


def cast(data, dtype):
    return make_call("cast", (data,), {"dtype": dtype})


def _unary(name):
    def f(data):
        return make_call(name, (data,))
    f.__name__ = name
    return f


negative = _unary("negative")
abs = _unary("abs")  # noqa: A001 - Relay spelling
exp = _unary("exp")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
round = _unary("round")  # noqa: A001
floor = _unary("floor")
copy = _unary("copy")
