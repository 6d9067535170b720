"""``relay.create_executor``: ``debug`` runs the reference interpreter, ``graph``/``aot``/``vm`` build for the
CPU (the results are the same bit for bit; the build is slower to start). ``vm`` runs through
``runtime.vm.VirtualMachine``, so a tuple result is an ``ADT`` as in TVM."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, UnsupportedAPIError
from ..ir.analysis import free_vars
from ..ir.expr import Expr, Function, GlobalVar
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
        """As TVM: no expression, a function or a global gives a function to call; any other closed expression
        is evaluated at once (as the body of a function without parameters)."""
        if isinstance(expr, GlobalVar):
            if self.mod is None or expr.name_hint not in self.mod:
                raise ExecutionError(f"evaluate: @{expr.name_hint} is not a function of the executor's module")
            mod = self.mod.copy()
            mod["main"] = self.mod[expr.name_hint]
            return self._runner(mod)
        if isinstance(expr, Expr) and not isinstance(expr, Function) and not free_vars(expr):
            mod = IRModule.from_expr(Function([], expr)) if self.mod is None else _with_main(self.mod, expr)
            return self._runner(mod)()
        mod = IRModule.from_expr(expr) if isinstance(expr, Expr) else self.mod
        return self._runner(mod)

    def _runner(self, mod):
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


def _with_main(mod: IRModule, expr: Expr) -> IRModule:
    """``mod`` with ``expr`` as the body of a parameterless main (its other functions stay callable)."""
    out = mod.copy()
    out["main"] = Function([], expr)
    return out


def _vm_with_params(mod, target, params):
    from .backend.vm import compile as vm_compile
    from ..runtime.vm import VirtualMachine
    from ..nd import cpu
    return VirtualMachine(vm_compile(mod, target, params=params), cpu(0)).run


def _wrap(value):
    if isinstance(value, (list, tuple)):
        return [_wrap(v) for v in value]
    return as_ndarray(np.asarray(value))
