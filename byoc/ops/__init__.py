"""Op registry and the reference semantics of every op."""
from .registry import FusionKind, OpDef, get_op_attr, get_op_def, list_ops, register_op, register_op_attr

__all__ = ["FusionKind", "OpDef", "get_op_attr", "get_op_def", "list_ops", "register_op", "register_op_attr"]
