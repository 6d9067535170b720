"""``relay.op._make``: TVM's raw op constructors. Here they are the ordinary builders of ``relay.op`` (same
positional arguments for the ops TVM programs call this way, e.g. ``_make.concatenate(tuple, axis)``)."""


def __getattr__(name):
    from .. import op as _op
    from .. import nn as _nn
    for ns in (_op, _nn):
        if name in getattr(ns, "__all__", ()):
            return getattr(ns, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
