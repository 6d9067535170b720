"""``relay.expr``: the expression node classes under TVM's module name."""
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var, const

__all__ = ["Call", "Constant", "Expr", "Function", "GlobalVar", "If", "Let", "Op", "Tuple", "TupleGetItem", "Var",
           "const"]
