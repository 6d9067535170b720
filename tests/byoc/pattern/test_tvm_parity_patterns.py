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


def test_products_and_quotients_match_associated_either_way():
    """TVM's matcher accepts ``a·(b/c)`` and ``(a/c)·b`` for the pattern ``(a·b)/c``, and ``(a·c)/b`` for
    ``(a/b)·c``; a different computation still does not match."""
    a, b, c = (relay.var(n, shape=(4,)) for n in "abc")
    pa, pb, pc = wildcard(), wildcard(), wildcard()
    quotient_of_product = is_op("divide")(is_op("multiply")(pa, pb), pc)
    assert quotient_of_product.match(relay.divide(relay.multiply(a, b), c))
    assert quotient_of_product.match(relay.multiply(a, relay.divide(b, c)))
    assert quotient_of_product.match(relay.multiply(relay.divide(a, c), b))
    assert not quotient_of_product.match(relay.multiply(a, relay.subtract(b, c)))
    assert not quotient_of_product.match(relay.add(a, relay.divide(b, c)))
    product_of_quotient = is_op("multiply")(is_op("divide")(wildcard(), wildcard()), wildcard())
    assert product_of_quotient.match(relay.divide(relay.multiply(a, c), b))
    assert not product_of_quotient.match(relay.divide(relay.add(a, c), b))


def test_float_attributes_are_equal_within_tvms_tolerance():
    """``epsilon=1e-5`` and the float32 1e-5 read back from a constant (9.99999974e-06) are structurally equal, as
    in TVM (absolute 1e-9); a real difference is not."""
    x, g, b, m, v = (relay.var(n, shape=(1, 4)) for n in ("x", "g", "b", "m", "v"))
    eps32 = float(np.float32(1e-5))
    assert eps32 != 1e-5
    assert byoc.structural_equal(relay.nn.batch_norm(x, g, b, m, v, epsilon=1e-5)[0],
                                 relay.nn.batch_norm(x, g, b, m, v, epsilon=eps32)[0])
    assert not byoc.structural_equal(relay.nn.batch_norm(x, g, b, m, v, epsilon=1e-5)[0],
                                     relay.nn.batch_norm(x, g, b, m, v, epsilon=2e-5)[0])


def test_tvm_spelled_bind_params_by_name_binds_as_given():
    """TVM's ``bind_params_by_name`` binds a value of another dtype as given (TVM's test_match_const binds a
    float64 array to a float32 parameter); byoc's own binding stays strict."""
    import pytest
    from byoc.errors import IRError
    from byoc.relay.build_module import bind_params_by_name
    from byoc.transform.bind import bind_params_by_name as strict_bind
    x, w = relay.var("x", shape=(1, 3, 8, 8)), relay.var("w", shape=(3, 3, 3, 3))
    func = relay.Function([x, w], relay.nn.conv2d(x, w))
    pattern = is_op("nn.conv2d")(wildcard(), relay.dataflow_pattern.is_constant())
    assert not pattern.match(func.body)
    bound = bind_params_by_name(func, {"w": np.ones((3, 3, 3, 3))})
    assert pattern.match(bound.body) and [p.name_hint for p in bound.params] == ["x"]
    with pytest.raises(IRError, match="declared"):
        strict_bind(func, {"w": np.ones((3, 3, 3, 3))})
