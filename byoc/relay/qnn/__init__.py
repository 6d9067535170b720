"""``relay.qnn``: quantized op builders live in ``relay.qnn.op``; ``relay.qnn.transform.Legalize``."""
from . import op, transform

__all__ = ["op", "transform"]
