"""``relay.testing``: the helpers TVM's Relay tests import (run a pass on an expression, make a workload)."""
from __future__ import annotations

import numpy as np

from ...ir.expr import Function
from ...ir.module import IRModule
from ...ir.types import TensorType

__all__ = ["run_opt_pass", "run_infer_type", "create_workload"]


def run_opt_pass(expr, opt_pass, import_prelude: bool = False):
    """Type-check ``expr`` as a module's main, run ``opt_pass``; the new main (or its body for a non-function)."""
    if import_prelude:
        from ...errors import UnsupportedAPIError
        raise UnsupportedAPIError("run_opt_pass(import_prelude=True)", "the Relay Prelude (lists, ADTs) has no "
                                  "counterpart in this IR")
    from ...transform import InferType
    mod = IRModule.from_expr(expr)
    mod = InferType()(mod)
    mod = opt_pass(mod)
    entry = mod["main"]
    return entry if isinstance(expr, Function) else entry.body


def run_infer_type(expr):
    from ...transform import InferType
    return run_opt_pass(expr, InferType())


def create_workload(net, initializer=None, seed: int = 0):
    """``(mod, params)`` for a function: every parameter but ``data`` gets a seeded uniform random value."""
    from ...transform import InferType
    mod = InferType()(IRModule.from_expr(net))
    rng = np.random.default_rng(seed)
    params = {}
    for p in mod["main"].params:
        if p.name_hint == "data":
            continue
        t = p.checked_type
        if not isinstance(t, TensorType):
            continue
        params[p.name_hint] = rng.uniform(-1.0, 1.0, size=t.shape).astype(t.dtype)
    return mod, params
