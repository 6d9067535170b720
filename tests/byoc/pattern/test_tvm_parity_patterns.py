"""Pattern-language behaviour TVM programs rely on: dominator parent pinning and leaf skipping,
``redirect_to`` recursion, TVM's field names, ``has_attr`` on DictAttrs calls, empty ``has_attr``."""
from __future__ import annotations

import numpy as np

import byoc
from byoc import relay
from byoc.relay.dataflow_pattern import (AttrPattern, DFPatternCallback, TupleGetItemPattern, TuplePattern,
                                         dominates, is_op, is_tuple, is_tuple_get_item, is_var, rewrite, wildcard)


def _diamond():
    return dominates(is_op("nn.conv2d")(wildcard(), wildcard()), is_op("nn.relu")(wildcard()),
                     is_op("add")(wildcard(), wildcard()))


def test_dominator_parent_is_pinned_to_one_node():
    x, w = relay.var("x", shape=(1, 2, 4, 4)), relay.var("w", shape=(2, 2, 1, 1))
    c1 = relay.nn.conv2d(x, w)
    c2 = relay.nn.conv2d(relay.tanh(c1), w)  # a second node matching the parent, reached through a non-path op
    assert not _diamond().match(relay.add(relay.nn.relu(c2), relay.nn.relu(c1)))
    assert not _diamond().match(relay.add(c2, relay.nn.relu(c1)))
    # one parent, reached along two paths: a diamond
    assert _diamond().match(relay.add(relay.nn.relu(c1), relay.nn.relu(relay.nn.relu(c1))))


def test_dominator_paths_skip_variable_and_constant_leaves():
    x, w, b = relay.var("x", shape=(1, 2, 4, 4)), relay.var("w", shape=(2, 2, 1, 1)), relay.var("b", shape=(2,))
    path = is_op("nn.bias_add")(None) | is_op("nn.relu")(None)
    pattern = is_op("reshape")(wildcard()).dominates(is_op("nn.conv2d")(wildcard(), wildcard()), path)
    out = relay.reshape(relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w), b)), (-1,))
    assert pattern.match(out)  # b (a Var) is neither parent nor path, and is skipped
    # a path node whose inputs are all leaves never reaches a parent
    assert not pattern.match(relay.reshape(relay.nn.relu(x), (-1,)))


def test_redirect_to_matches_a_chain_as_one_group():
    data = relay.var("data", shape=(2, 8))
    feat = relay.nn.dense(data, relay.const(np.zeros((4, 8), "float32")))
    for _ in range(5):
        feat = relay.cast(feat, "float32")
    loop = wildcard()
    pattern = is_op("cast")(loop | is_op("nn.dense")(wildcard(), wildcard()))
    loop.redirect_to(pattern)
    assert pattern.match(feat)

    class Wrap(DFPatternCallback):
        def __init__(self):
            super().__init__(rewrite_once=True)
            self.pattern = pattern

        def callback(self, pre, post, node_map):
            return relay.nn.relu(post)

    out = rewrite(Wrap(), feat)
    assert out.op.name == "nn.relu"  # one group from the outermost cast down to dense: wrapped once
    assert sum(1 for n in byoc.ir.post_order(out) if isinstance(n, relay.Call) and n.op.name == "nn.relu") == 1


def test_tvm_field_names():
    assert is_var("x").name == "x"
    t = is_tuple([wildcard(), wildcard()])
    g = is_tuple_get_item(t, 1)
    assert isinstance(g, TupleGetItemPattern) and isinstance(g.tuple, TuplePattern)
    p = is_op("add").has_attr({"TOpPattern": 1})
    assert isinstance(p, AttrPattern) and p.attrs["TOpPattern"] == 1


def test_has_attr_on_calls_of_functions_and_empty_attrs():
    a, b = relay.var("a"), relay.var("b")
    with_attr = relay.Call(a, [b], attrs=byoc.ir.make_node("DictAttrs", call_attr="attr"))
    wrong = relay.Call(a, [b], attrs=byoc.ir.make_node("DictAttrs", call_attr="other"))
    bare = relay.Call(a, [b])
    pattern = wildcard()(wildcard()).has_attr({"call_attr": "attr"})
    assert pattern.match(with_attr) and not pattern.match(wrong) and not pattern.match(bare)
    anything = wildcard()(wildcard()).has_attr({})
    assert anything.match(with_attr) and anything.match(bare)
