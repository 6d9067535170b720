"""``relay.qnn``: quantized op builders live in ``relay.qnn.op``."""
from . import op

__all__ = ["op"]
