"""``relay.expr``: the expression node classes under TVM's module name."""
from ..ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Op, RefCreate, RefRead, RefWrite, Tuple,
                       TupleGetItem, Var, const)

__all__ = ["Call", "Constant", "Expr", "Function", "GlobalVar", "If", "Let", "Op", "RefCreate", "RefRead", "RefWrite",
           "Tuple", "TupleGetItem", "Var", "const"]

_NOT_PROVIDED = {
    "Match": "the Relay Prelude's ADTs and pattern matching are not provided",
    "Clause": "the Relay Prelude's ADTs and pattern matching are not provided",
}


def __getattr__(name):
    if name in _NOT_PROVIDED:
        from ..errors import UnsupportedAPIError
        raise UnsupportedAPIError(f"relay.expr.{name}", _NOT_PROVIDED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
