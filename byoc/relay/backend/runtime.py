"""``tvm.relay.backend.Runtime``: ``Runtime("cpp")`` is the only runtime (``system-lib`` is accepted and has
no effect: nothing is linked into a system library here). ``relay.build(..., runtime=Runtime("cpp"))``."""
from __future__ import annotations

from ._named_option import NamedChoice

__all__ = ["Runtime"]


class Runtime(NamedChoice):
    kind = "runtime"
    KNOWN = {"cpp": {"system-lib": bool}}
