"""TVM's ``target.dnnl`` op checks (``AnnotateTarget("dnnl")`` offloads these ops one by one): every op DNNL
has a kernel for, refused on int64 operands and for pooling with ``ceil_mode``. TVM registers them when
``tvm.relay`` is imported (its contrib package imports the DNNL module); so does ``byoc.relay``. The DNNL
pattern table itself (``dnnl.py``) loads on first use."""
from __future__ import annotations

from ....ops.registry import register_op_attr

__all__ = ["SUPPORTED_OPS"]

# TVM's list for the ops byoc has (conv1d / conv3d / pool3d / layer_norm do not exist here)
SUPPORTED_OPS = ("nn.batch_norm", "nn.conv2d", "nn.conv2d_transpose", "nn.dense", "nn.max_pool2d", "nn.avg_pool2d",
                 "nn.global_avg_pool2d", "abs", "clip", "exp", "log", "sqrt", "round", "nn.relu", "nn.leaky_relu",
                 "tanh", "sigmoid", "nn.softmax", "add", "multiply", "nn.batch_matmul")


def _check(op_name: str):
    def supported(expr) -> bool:
        if any(a.checked_type.dtype == "int64" for a in expr.args):
            return False  # DNNL has no int64 kernels
        return not ("pool" in op_name and getattr(expr.attrs, "ceil_mode", False))
    return supported


for _op in SUPPORTED_OPS:
    register_op_attr(_op, "target.dnnl", _check(_op))
