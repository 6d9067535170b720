"""``tvm.relay.backend``: the objects TVM's build entry points take and give — ``Runtime("cpp")``,
``Executor("graph")``, ``te_compiler.get()``, ``executor_factory`` and ``vm`` (``relay.vm``)."""
from __future__ import annotations

from .executor import Executor
from .runtime import Runtime

__all__ = ["Executor", "Runtime", "te_compiler", "executor_factory", "vm"]


def __getattr__(name):
    import importlib
    if name in ("te_compiler", "executor_factory", "vm", "executor", "runtime"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'byoc.relay.backend' has no attribute {name!r}")
