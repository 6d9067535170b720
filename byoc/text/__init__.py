"""The IR text format: ``astext`` prints a module or expression in TVM Relay's style, ``parse`` reads it back."""
from __future__ import annotations

from .printer import astext, excerpt

__all__ = ["astext", "excerpt", "parse", "parse_expr"]


def __getattr__(name):
    # The parser is imported on first use so that printing (used by error messages) stays light.
    if name in ("parse", "parse_expr"):
        from . import parser
        return getattr(parser, name)
    raise AttributeError(f"module 'byoc.text' has no attribute {name!r}")
