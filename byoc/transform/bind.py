"""Binding parameters to constants (``bind_params_by_name``) and variables to expressions (``bind``)."""
from __future__ import annotations

import numpy as np

from ..errors import IRError
from ..ir.expr import Constant, Expr, Function, Var
from ..ir.types import TensorType
from ..ir.traversal import rewrite_post_order

__all__ = ["bind", "bind_params_by_name"]


def bind(expr: Expr, binds: dict) -> Expr:
    """Substitute variables (keys: Var objects) by expressions; bound function params are dropped."""
    by_id = {id(k): v for k, v in binds.items()}

    def fn(orig, new):
        if isinstance(orig, Var) and id(orig) in by_id:
            return by_id[id(orig)]
        return None

    # Functions keep their ret_type when every substitute has its variable's type (the usual case); a binding
    # that changes a type drops it (InferType fills it again) rather than leave a stale one.
    same_types = all(_known_type(k) is not None and _known_type(k) == _known_type(v) for k, v in binds.items())
    if isinstance(expr, Function):
        body = rewrite_post_order(expr.body, fn, preserves_types=same_types)
        params = tuple(p for p in expr.params if id(p) not in by_id)
        ret_type = expr.ret_type if same_types or body is expr.body else None
        return expr.replace(params=params, body=body, ret_type=ret_type)
    return rewrite_post_order(expr, fn, preserves_types=same_types)


def _known_type(e: Expr):
    if isinstance(e, Constant):
        return e.type
    t = e._checked_type  # type: ignore[attr-defined]
    if t is None and isinstance(e, Var):
        t = e.type_annotation
    return t


def bind_params_by_name(func: Function, params: dict, strict: bool = True) -> Function:
    """Replace the parameters named in ``params`` by constants. ``strict`` refuses a value whose shape or dtype
    differs from the parameter's declaration; TVM's spelling (``relay.build_module.bind_params_by_name``) binds it
    as given, as TVM did (a later InferType names any op the new type does not fit)."""
    names: dict[str, Var] = {}
    for p in func.params:
        if p.name_hint in names:
            raise IRError(f"cannot bind by name: parameter name {p.name_hint!r} is not unique")
        names[p.name_hint] = p
    binds = {}
    for k, v in params.items():
        if k not in names:
            continue
        arr = v.data if isinstance(v, Constant) else np.asarray(v)
        want = names[k].type_annotation
        if strict and isinstance(want, TensorType) and (tuple(arr.shape) != want.shape or
                                                        arr.dtype.name != want.dtype):
            raise IRError(f"cannot bind parameter %{k}: it is declared {want}, the value is "
                          f"{arr.dtype.name}{list(arr.shape)}", hint="pass an array of the declared shape and dtype")
        binds[names[k]] = Constant(arr)
    return bind(func, binds) if binds else func
