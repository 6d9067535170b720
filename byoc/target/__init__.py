"""``tvm.target``: ``Target("llvm")``, ``Target("npu, llvm")``, ``Target("llvm -mcpu=cortex-a72")``."""
from .target import Target, TargetKind, list_kinds

__all__ = ["Target", "TargetKind", "list_kinds"]
