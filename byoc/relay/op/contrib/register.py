"""``tvm.relay.op.contrib.register``: ``register_pattern_table`` / ``get_pattern_table`` route to
``patterns.registry`` (one registry for TVM-style and native tables).

Differences from TVM: the table function is called lazily, on first ``get_pattern_table``, and the result is a
tuple of ``CompositePattern`` (each also unpacks as TVM's ``(name, pattern, check)``)."""
from __future__ import annotations

__all__ = ["get_pattern_table", "register_pattern_table"]


def register_pattern_table(compiler: str, table=None):
    """``@register_pattern_table("cmsis-nn")`` on a function returning ``[(name, pattern[, check]), ...]``."""
    from patterns.registry import register_pattern_table as register
    return register(compiler, table)


def get_pattern_table(compiler: str):
    """The table registered for ``compiler`` (built-in tables load on first request), or None."""
    from patterns.registry import get_pattern_table as get, register_pattern_table as register, table_functions
    if compiler in _TVM_TABLES and compiler not in table_functions():
        import importlib
        module = importlib.import_module(_TVM_TABLES[compiler])  # registers on first import, as in TVM
        if compiler not in table_functions():  # imported before, then unregistered (a test's registry copy)
            register(compiler, module.pattern_table)
    return get(compiler)


# TVM's own tables that byoc carries, loaded when TVM's spelling asks for them.
_TVM_TABLES = {"dnnl": "byoc.relay.op.contrib.dnnl"}
