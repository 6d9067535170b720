"""``tvm.relay.op.contrib``: pattern-table registration for external codegens (``patterns/registry.py``).

TVM's own tables (CMSIS-NN, Ethos-U, Arm Compute Library) import ``register_pattern_table`` from here; this
project's tables live in the top-level ``patterns`` package and register through the same registry.
"""
from . import dnnl_op_checks  # noqa: F401 - TVM's target.dnnl checks, registered with relay as in TVM
from .register import get_pattern_table, register_pattern_table

__all__ = ["get_pattern_table", "register_pattern_table"]


def __getattr__(name: str):
    # TVM's contrib package imports its tables; here TVM's own tables load on first use
    if name == "dnnl":
        import importlib
        return importlib.import_module(f"{__name__}.dnnl")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
