"""``tvm.ir.op``: ``Op`` and ``register_op_attr`` under TVM's module name."""
from ..ops.registry import get_op_attr, register_op_attr
from .expr import Op

__all__ = ["Op", "register_op_attr", "get_op_attr"]
