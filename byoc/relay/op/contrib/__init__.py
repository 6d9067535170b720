"""``tvm.relay.op.contrib``: pattern-table registration for external codegens (``patterns/registry.py``).

TVM's own tables (CMSIS-NN, Ethos-U, Arm Compute Library) import ``register_pattern_table`` from here; this
project's tables live in the top-level ``patterns`` package and register through the same registry.
"""
from .register import get_pattern_table, register_pattern_table

__all__ = ["get_pattern_table", "register_pattern_table"]
