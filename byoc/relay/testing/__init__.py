"""``relay.testing``: the helpers TVM's Relay tests import (run a pass on an expression, make a workload)."""
from __future__ import annotations

import numpy as np

from ...ir.expr import Function
from ...ir.module import IRModule
from ...ir.types import TensorType  # noqa: F401

__all__ = ["run_opt_pass", "run_infer_type", "create_workload", "init", "layers", "resnet", "mobilenet"]


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


from . import init, layers, mobilenet, resnet  # noqa: E402  (after the helpers: they import this package)
from .init import create_workload  # noqa: E402
