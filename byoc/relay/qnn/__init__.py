"""``relay.qnn``: quantized op builders live in ``relay.qnn.op``; ``relay.qnn.transform.Legalize``."""
from . import op, transform
from .op import *  # noqa: F401,F403 - TVM: relay.qnn.requantize is relay.qnn.op.requantize
from .op import __all__ as _op_all

__all__ = ["op", "transform"] + list(_op_all)
