"""``tvm.ir.instrument``: the same module as ``tvm.instrument``."""
from ..instrument import *  # noqa: F401,F403
from ..instrument import __all__  # noqa: F401
