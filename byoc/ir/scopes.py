"""A tree of lexical scopes with O(log depth) ancestor and lowest-common-ancestor queries.

A 100,000-deep Let chain is a 100,000-deep scope path, so walking parent pointers would make scope analyses
quadratic. Each scope keeps one extra "jump" pointer (Myers' skew-binary jump pointers): ancestor queries
follow jumps when they do not overshoot, which bounds every walk by O(log depth) without per-node tables.
"""
from __future__ import annotations

from typing import Any

__all__ = ["Scope", "lca", "is_within"]


class Scope:
    """One scope (a function body, a Let body, an If branch or the top level). ``payload`` is for the user."""

    __slots__ = ("parent", "level", "jump", "payload")

    def __init__(self, parent: "Scope | None" = None, payload: Any = None):
        self.parent = parent
        self.payload = payload
        if parent is None:
            self.level = 0
            self.jump = self
        else:
            self.level = parent.level + 1
            j = parent.jump
            if parent.level - j.level == j.level - j.jump.level:
                self.jump = j.jump
            else:
                self.jump = parent

    def ancestor_at(self, level: int) -> "Scope":
        s = self
        while s.level > level:
            s = s.jump if s.jump.level >= level else s.parent  # type: ignore[assignment]
        return s


def lca(a: Scope, b: Scope) -> Scope:
    """The innermost scope enclosing both ``a`` and ``b`` (they must belong to the same tree)."""
    if a.level > b.level:
        a = a.ancestor_at(b.level)
    elif b.level > a.level:
        b = b.ancestor_at(a.level)
    while a is not b:
        # Equal levels give jump pointers at equal levels; take them while they still differ.
        if a.jump is not b.jump:
            a, b = a.jump, b.jump
        else:
            a, b = a.parent, b.parent  # type: ignore[assignment]
    return a


def is_within(inner: Scope, outer: Scope) -> bool:
    """True when ``inner`` is ``outer`` or nested inside it."""
    return inner.level >= outer.level and inner.ancestor_at(outer.level) is outer
