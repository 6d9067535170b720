"""``tvm.relay.vm`` (``relay.backend.vm``): ``compile(mod, target, target_host, params)`` → a
``runtime.vm.Executable``; ``VMCompiler`` (``set_params``, ``lower``, ``codegen``, ``optimize``, ``get_exec``)
and ``VMExecutor``.

The module is built as ``relay.build`` builds it (TVM's optimization pipeline under the current
``PassContext``, partitions by their ``Compiler`` attribute, the rest on the LLVM CPU backend); the VM runs that
build (``byoc/runtime/vm.py`` says what that means)."""
from __future__ import annotations

from ...errors import ExecutionError
from ...ir.expr import Expr
from ...ir.module import IRModule
from ...runtime.vm import Executable, VirtualMachine

__all__ = ["compile", "VMCompiler", "VMExecutor", "Executable", "VirtualMachine"]


def compile(mod, target=None, target_host=None, params=None) -> Executable:  # noqa: A001 - TVM's name
    compiler = VMCompiler()
    if params:
        compiler.set_params(params)
    compiler.lower(mod, target, target_host)
    compiler.codegen()
    return compiler.get_exec()


class VMCompiler:
    def __init__(self):
        self._params: dict = {}
        self._exec: Executable | None = None

    def set_params(self, params: dict) -> None:
        self._params = dict(params)

    def get_params(self) -> dict:
        from ...nd import array
        return {k: array(v) for k, v in self._params.items()}

    def lower(self, mod, target=None, target_host=None) -> None:
        from ..build_module import build
        if isinstance(mod, Expr) and not isinstance(mod, IRModule):
            mod = IRModule.from_expr(mod)
        factory = build(mod, target=target, target_host=target_host, params=self._params or None)
        self._exec = Executable(factory.graph_module)

    def codegen(self) -> None:
        """Code generation happened in ``lower`` (the CPU kernels and the partitions' codegens)."""
        if self._exec is None:
            raise ExecutionError("VMCompiler.codegen: call lower(mod, target) first")

    def optimize(self, mod, target=None, target_host=None, params=None):
        """``(mod, params)`` after TVM's optimization pipeline (what ``lower`` would compile)."""
        from ..build_module import optimize
        from ...transform.bind import bind_params_by_name
        if isinstance(mod, Expr) and not isinstance(mod, IRModule):
            mod = IRModule.from_expr(mod)
        params = params or self._params
        if params:
            mod = mod.copy()
            mod["main"] = bind_params_by_name(mod["main"], params, strict=False)
        return optimize(mod), dict(params or {})

    def get_exec(self) -> Executable:
        if self._exec is None:
            raise ExecutionError("VMCompiler.get_exec: call lower(mod, target) first")
        return self._exec


class VMExecutor:
    """``VMExecutor(mod, device, target).evaluate()(*args)``: a tensor result is an NDArray, a tuple an ADT."""

    def __init__(self, mod, device, target):
        if mod is None:
            raise ExecutionError("VMExecutor needs a module")
        self.mod = IRModule.from_expr(mod) if isinstance(mod, Expr) and not isinstance(mod, IRModule) else mod
        self.device = device
        self.target = target

    def evaluate(self, expr=None):
        mod = IRModule.from_expr(expr) if isinstance(expr, Expr) else self.mod
        vm = VirtualMachine(compile(mod, self.target), self.device)
        return vm.run
