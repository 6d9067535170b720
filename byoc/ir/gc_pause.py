"""Pausing Python's cyclic garbage collector around bulk IR work."""
from __future__ import annotations

import contextlib
import gc

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic collector around bulk allocation that creates no reference cycles (reentrant).

    Building, typing, printing or parsing a 100,000-node graph allocates millions of objects; each burst triggers
    full-heap collections that traverse every live node and free nothing, which makes linear passes grow
    super-linearly (measured: InferType 14x time for 10x ops with the collector on).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
