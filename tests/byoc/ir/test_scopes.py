"""The jump-pointer scope tree agrees with a naive parent walk, and stays fast on a 100,000-deep path."""
from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from byoc.ir.scopes import Scope, is_within, lca


def _naive_lca(a, b):
    ancestors = set()
    while a is not None:
        ancestors.add(id(a))
        a = a.parent
    while id(b) not in ancestors:
        b = b.parent
    return b


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(0, 10**6), st.floats(0.0, 1.0))
def test_lca_and_within_match_a_naive_walk(seed, chain_bias):
    rng = random.Random(seed)
    nodes = [Scope()]
    for _ in range(400):
        parent = nodes[-1] if rng.random() < chain_bias else rng.choice(nodes)
        nodes.append(Scope(parent))
    for _ in range(300):
        a, b = rng.choice(nodes), rng.choice(nodes)
        expected = _naive_lca(a, b)
        assert lca(a, b) is expected
        assert is_within(a, b) == (expected is b)


def test_deep_path_queries_are_logarithmic():
    path = [Scope()]
    for _ in range(100_000):
        path.append(Scope(path[-1]))
    leaf = path[-1]
    for i in range(0, 100_000, 97):
        assert lca(path[i], leaf) is path[i]
        assert leaf.ancestor_at(i) is path[i]
    # the number of pointer hops to the root is O(log depth), far below the depth
    hops, s = 0, leaf
    while s.level > 0:
        s = s.jump if s.jump.level >= 0 else s.parent
        hops += 1
    assert hops < 100
