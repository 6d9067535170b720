"""``relay.testing.temp_op_attr.TempOpAttr``: set an op attribute (e.g. ``FTVMLegalize``) inside a ``with``
block, restoring the previous value (or its absence) on exit."""
from __future__ import annotations

from ...ops.registry import get_op_attr, register_op_attr, remove_op_attr

__all__ = ["TempOpAttr"]

_ABSENT = object()


class TempOpAttr:
    def __init__(self, op_name: str, attr_key: str, attr_value):
        self.op_name = op_name
        self.attr_key = attr_key
        self.attr_value = attr_value
        self.older = _ABSENT

    def __enter__(self):
        self.older = get_op_attr(self.op_name, self.attr_key, _ABSENT)
        register_op_attr(self.op_name, self.attr_key, self.attr_value)
        return self

    def __exit__(self, *exc):
        if self.older is _ABSENT:
            remove_op_attr(self.op_name, self.attr_key)
        else:
            register_op_attr(self.op_name, self.attr_key, self.older)
        return False
