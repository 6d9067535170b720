"""``relay.op.op``: op lookup and attribute registration in TVM's spelling."""
from __future__ import annotations

from ...ir.expr import Op
from ...ops.registry import get_op_attr, register_op_attr

__all__ = ["get", "register_op_attr", "get_op_attr", "register_legalize", "register_qnn_legalize"]


def register_legalize(op_name: str, legal_op=None, level: int = 10):
    """``relay.op.register_legalize(name, fn)``: ``fn(attrs, inputs, types)`` for ``relay.transform.Legalize``."""
    return register_op_attr(op_name, "FTVMLegalize", legal_op, level)


def register_qnn_legalize(op_name: str, legal_op=None, level: int = 10):
    """``FTVMQnnLegalize`` for ``relay.qnn.transform.Legalize``."""
    return register_op_attr(op_name, "FTVMQnnLegalize", legal_op, level)


def get(op_name: str) -> Op:
    """``relay.op.get("add")``: the registered op (an ``IRError`` naming close matches when unknown)."""
    return Op.get(op_name)
