"""``tvm.relay.backend.Executor``: ``Executor("graph")`` is the executor ``relay.build`` makes (``link-params``
is accepted: parameters are always bound into the build here). The VM is ``relay.vm.compile``; the AOT executor
is not provided."""
from __future__ import annotations

from ._named_option import NamedChoice

__all__ = ["Executor"]


class Executor(NamedChoice):
    kind = "executor"
    KNOWN = {"graph": {"link-params": bool}}
