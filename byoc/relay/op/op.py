"""``relay.op.op``: op lookup and attribute registration in TVM's spelling."""
from __future__ import annotations

from ...ir.expr import Op
from ...ops.registry import get_op_attr, register_op_attr

__all__ = ["get", "register_op_attr", "get_op_attr"]


def get(op_name: str) -> Op:
    """``relay.op.get("add")``: the registered op (an ``IRError`` naming close matches when unknown)."""
    return Op.get(op_name)
