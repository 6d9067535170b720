"""The IR: frozen expression nodes, types, modules, traversal and structural comparison."""
from .attrs import Attrs, FrozenDict
from .expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Op, RefCreate, RefRead, RefWrite, Span, Tuple,
                   TupleGetItem, Var, const)
from .module import IRModule
from .types import FuncType, RefType, RelayRefType, TensorType, TupleType, Type
from .traversal import ExprRewriter, children, post_order, rewrite_post_order
from .structural import assert_structural_equal, structural_equal, structural_hash
from .analysis import free_vars
from .attrs import make_node
from ..ops.registry import register_op_attr

__all__ = ["Attrs", "FrozenDict", "Call", "Constant", "Expr", "Function", "GlobalVar", "If", "Let", "Op", "Span",
           "RefCreate", "RefRead", "RefWrite", "RefType", "RelayRefType", "Tuple", "TupleGetItem", "Var", "const",
           "IRModule", "FuncType", "TensorType", "TupleType", "Type", "ExprRewriter", "children", "post_order",
           "rewrite_post_order", "assert_structural_equal", "structural_equal", "structural_hash", "free_vars",
           "make_node", "register_op_attr"]


def __getattr__(name):
    # TVM's tvm.ir sub-modules: tvm.ir.op, tvm.ir.container, tvm.ir.transform (the pass infrastructure)
    import importlib
    if name in ("op", "container", "transform", "instrument"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("Array", "Map"):
        return getattr(importlib.import_module(f"{__name__}.container"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
