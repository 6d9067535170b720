"""``from byoc import relay``: TVM Relay's Python spelling over this project's IR."""
from __future__ import annotations

from ..ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Op, RefCreate, RefRead, RefWrite, Span,
                       Tuple, TupleGetItem, Var)
from ..ir.expr import const as _const
from ..ir.module import IRModule
from ..ir.types import FuncType, RefType, RelayRefType, TensorType, TupleType, Type, scalar_type
from . import analysis, image, nn, op, qnn
from .op import *  # noqa: F401,F403 - relay.add, relay.clip, ...

__all__ = ["Call", "Constant", "Expr", "Function", "GlobalVar", "If", "Let", "Op", "Span", "Tuple", "TupleGetItem",
           "RefCreate", "RefRead", "RefWrite", "RefType", "RelayRefType", "Var", "IRModule", "FuncType", "TensorType",
           "TupleType", "Type", "scalar_type", "var", "const", "analysis", "image", "nn", "op", "qnn", "transform",
           "dataflow_pattern", "build_module"]


def var(name_hint: str, type_annotation=None, shape=None, dtype: str = "float32", span=None) -> Var:
    """``relay.var(name, shape=..., dtype=...)`` or ``relay.var(name, TensorType(...))``."""
    if type_annotation is None and shape is not None:
        type_annotation = TensorType(shape, dtype)  # TensorType validates the shape
    elif isinstance(type_annotation, str):
        type_annotation = TensorType(tuple(shape or ()), type_annotation)
    elif type_annotation is None:
        type_annotation = TensorType((), dtype) if shape is not None else None
    return Var(name_hint, type_annotation, span)


def const(value, dtype: str | None = None, span=None) -> Constant:
    return _const(value, dtype, span)


def _parse_typed(source: str, *args, **kwargs):
    """``relay.parse``: as TVM's parser, the parsed module comes back type-inferred."""
    from ..text.parser import parse
    from ..ir.module import IRModule
    out = parse(source, *args, **kwargs)
    if isinstance(out, IRModule):
        from ..transform import InferType
        out = InferType()(out)
    return out


_UNSUPPORTED = {
    "prelude": "the Relay Prelude (lists, ADTs, tensor arrays) has no counterpart in this IR",
}
# TVM names served by byoc.relay.build_module: relay.build, relay.build_config, relay.create_executor
_BUILD_NAMES = ("build", "build_config", "create_executor", "bind_params_by_name")


def __getattr__(name):
    # Heavier sub-packages load on first use.
    import importlib
    if name in ("transform", "dataflow_pattern", "testing", "expr", "expr_functor", "build_module", "frontend"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in _BUILD_NAMES:
        return getattr(importlib.import_module(f"{__name__}.build_module"), name)
    if name == "backend":
        return importlib.import_module(f"{__name__}.backend")
    if name == "vm":  # relay.vm is relay.backend.vm, as in TVM
        return importlib.import_module(f"{__name__}.backend.vm")
    if name == "annotation":  # relay.annotation.compiler_begin
        return importlib.import_module(f"{__name__}.op.annotation")
    if name in ("ExprFunctor", "ExprVisitor", "ExprMutator"):
        from . import expr_functor
        return getattr(expr_functor, name)
    if name == "parse":
        return _parse_typed
    if name in _UNSUPPORTED:
        from ..errors import UnsupportedAPIError
        raise UnsupportedAPIError(f"relay.{name}", _UNSUPPORTED[name])
    raise AttributeError(f"module 'byoc.relay' has no attribute {name!r}")
