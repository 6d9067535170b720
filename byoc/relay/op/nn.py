"""``relay.op.nn``: the same builders as ``relay.nn`` (TVM has both spellings)."""
from ..nn import *  # noqa: F401,F403
from ..nn import __all__  # noqa: F401
