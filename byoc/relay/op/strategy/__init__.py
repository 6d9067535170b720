"""``tvm.relay.op.strategy``: only the layout helpers pattern tables import (``generic``). TVM's compute and
schedule strategies (TE/TOPI) have no counterpart: kernels come from the llvmlite backend."""
from . import generic

__all__ = ["generic"]
