"""``relay.create_executor``: ``debug`` runs the reference interpreter, ``graph``/``aot``/``vm`` build for the
CPU (the results are the same bit for bit; the build is slower to start). ``vm`` runs through
``runtime.vm.VirtualMachine``, so a tuple result is an ``ADT`` as in TVM."""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedAPIError
from ..ir.expr import Expr
from ..ir.module import IRModule
from ..nd import as_ndarray

__all__ = ["Executor"]


class Executor:
    def __init__(self, kind, mod, target, params):
        if kind not in ("debug", "graph", "vm", "aot"):
            raise UnsupportedAPIError(f"relay.create_executor({kind!r})", "executors are debug, graph, vm, aot")
        self.kind, self.target, self.params = kind, target, params
        self.mod = IRModule.from_expr(mod) if isinstance(mod, Expr) else mod

    def evaluate(self, expr=None):
        mod = IRModule.from_expr(expr) if isinstance(expr, Expr) else self.mod
        names = [p.name_hint for p in mod["main"].params]
        if self.kind == "debug":
            from ..interpreter import evaluate, bind_params
            mod = bind_params(mod, self.params) if self.params else mod

            def run(*args, **kwargs):
                inputs = dict(zip(names, args), **kwargs)
                outs = _wrap(evaluate(mod, {k: np.asarray(v) for k, v in inputs.items()}))
                return outs[0] if len(outs) == 1 else outs
            return run
        if self.kind == "vm":  # the VM's values: a tuple comes back as an ADT
            from .backend.vm import VMExecutor
            from ..nd import cpu
            return VMExecutor(mod, cpu(0), self.target).evaluate() if not self.params else \
                _vm_with_params(mod, self.target, self.params)
        from .build_module import build
        from ..contrib.graph_executor import GraphModule
        from ..nd import cpu
        lib = build(mod, self.target, params=self.params)

        def run_built(*args, **kwargs):
            m = GraphModule(lib["default"](cpu(0)))
            m.run(**dict(zip(names, args), **kwargs))
            outs = [m.get_output(i) for i in range(m.get_num_outputs())]
            return outs[0] if len(outs) == 1 else outs
        return run_built


def _vm_with_params(mod, target, params):
    from .backend.vm import compile as vm_compile
    from ..runtime.vm import VirtualMachine
    from ..nd import cpu
    return VirtualMachine(vm_compile(mod, target, params=params), cpu(0)).run


def _wrap(value):
    if isinstance(value, (list, tuple)):
        return [_wrap(v) for v in value]
    return as_ndarray(np.asarray(value))
