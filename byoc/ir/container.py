"""``tvm.ir.container``: TVM's ``Array`` and ``Map`` are Python tuples and mappings here.

Attribute arrays are tuples (``isinstance(attrs.strides, tvm.ir.container.Array)`` holds) and function
attributes a read-only mapping (``FrozenDict``)."""
from collections.abc import Mapping

Array = tuple
Map = Mapping

__all__ = ["Array", "Map"]
