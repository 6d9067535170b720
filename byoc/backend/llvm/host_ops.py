"""Ops the CPU build runs as host steps: their numpy reference (the op registry's ``compute``), called by the
executor between compiled kernels, instead of a generated kernel.

Only ops whose work is control flow over data-dependent lists belong here (TFLite_Detection_PostProcess: sorts and
a greedy NMS loop over a few thousand boxes, once per inference); their results are the reference's by
construction, so the CPU build equals ``byoc.evaluate`` on them. An opaque TFLite custom op (``tflite.custom``,
byoc/ops/custom.py) is one too: its step calls the user's registered kernel, or raises ``NoKernelError``.
Everything else lowers to LLVM."""
from __future__ import annotations

from ...ir.expr import Call, Op

__all__ = ["HOST_OPS", "is_host_call"]

HOST_OPS: dict[str, str] = {
    "vision.detection_postprocess": "TFLite_Detection_PostProcess: box sorting and greedy non-maximum suppression",
    "tflite.custom": "a TFLite custom operator without a converter: the kernel registered for its name",
}


def is_host_call(node) -> bool:
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in HOST_OPS
