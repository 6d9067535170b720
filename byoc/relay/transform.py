"""``relay.transform``: every pass, TVM spelling."""
from ..transform import *  # noqa: F401,F403
from ..transform import __all__  # noqa: F401
