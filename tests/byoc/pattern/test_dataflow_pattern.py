"""The dataflow pattern language: construction, matching, captures, partition and rewrite."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import PatternError
from byoc.relay.dataflow_pattern.pattern import PatternArityWarning
from byoc.ops.registry import FusionKind
from byoc.relay.dataflow_pattern import (DFPatternCallback, Support, dominates, has_attr, is_constant, is_expr,
                                         is_if, is_let, is_op, is_tuple, is_tuple_get_item, is_var, rewrite,
                                         wildcard, FunctionPattern)
from byoc.transform.infer_type import infer_expr


def qconv_chain(x, pad=True, cin=3, cout=4, seed=0):
    rng = np.random.default_rng(seed)
    src = relay.nn.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), relay.const(-3, "int8")) if pad else x
    w = relay.const(rng.integers(-5, 5, (cout, 3, 3, cin)).astype("int8"))
    c = relay.qnn.op.conv2d(src, w, relay.const(-3), relay.const(0), relay.const(0.5), relay.const(0.25),
                            kernel_layout="OHWI", data_layout="NHWC", padding=(0, 0) if pad else (1, 1))
    b = relay.nn.bias_add(c, relay.const(rng.integers(-9, 9, cout).astype("int32")), axis=3)
    return relay.qnn.op.requantize(b, relay.const(0.125), relay.const(0), relay.const(0.5), relay.const(1), axis=3)


def seed_pattern():
    # The seed pattern, as written in the task.
    p = is_op("nn.pad")(wildcard(), wildcard()) | wildcard()
    c = is_op("qnn.conv2d")(p, is_constant(), is_constant(), is_constant(), is_constant(), is_constant())
    b = is_op("nn.bias_add")(c, is_constant())
    r = is_op("qnn.requantize")(b, is_constant(), is_constant(), is_constant(), is_constant())
    return r


def test_seed_pattern_matches_with_and_without_pad():
    x = relay.var("x", shape=(1, 6, 6, 3), dtype="int8")
    r = seed_pattern()
    assert r.match(qconv_chain(x, pad=True))
    assert r.match(qconv_chain(x, pad=False))
    # A non-constant weight does not match is_constant().
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="int8")
    c = relay.qnn.op.conv2d(x, w, relay.const(0), relay.const(0), relay.const(0.5), relay.const(0.25),
                            kernel_layout="OHWI", data_layout="NHWC")
    b = relay.nn.bias_add(c, relay.const(np.zeros(4, "int32")), axis=3)
    rq = relay.qnn.op.requantize(b, relay.const(0.125), relay.const(0), relay.const(0.5), relay.const(1))
    assert not r.match(rq)


def test_seed_pattern_partition_embeds_constants_and_lifts_wildcard_constant():
    x = relay.var("x", shape=(1, 6, 6, 3), dtype="int8")
    out = seed_pattern().partition(qconv_chain(x), {"Composite": "npu.qnn_conv2d"})
    assert isinstance(out, relay.Call) and isinstance(out.op, relay.Function)
    f = out.op
    assert f.attrs["Composite"] == "npu.qnn_conv2d"
    assert f.attrs["PartitionedFromPattern"] == "nn.pad_qnn.conv2d_nn.bias_add_qnn.requantize_"
    # x and the pad value (matched by wildcard()) are parameters; the is_constant() operands are embedded.
    assert len(f.params) == 2 and out.args[0] is x and isinstance(out.args[1], relay.Constant)
    embedded = [n for n in byoc.ir.post_order(f.body) if isinstance(n, relay.Constant)]
    assert len(embedded) == 10


def test_is_op_validates_names_with_suggestions():
    with pytest.raises(PatternError) as e:
        is_op("qnn.conv2dd")
    assert "qnn.conv2d" in str(e.value) and "did you mean" in str(e.value)


def test_shared_subpattern_must_bind_the_same_node():
    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(2,))
    w = wildcard()
    p = is_op("add")(w, w)
    assert p.match(relay.add(x, x))
    assert not p.match(relay.add(x, y))


def test_commutative_add_and_multiply_but_not_subtract():
    x = relay.var("x", shape=(2,))
    c = relay.const(np.ones(2, "float32"))
    assert is_op("add")(is_constant(), is_var("x")).match(relay.add(x, c))
    assert is_op("multiply")(is_constant(), wildcard()).match(relay.multiply(x, c))
    assert not is_op("subtract")(is_constant(), wildcard()).match(relay.subtract(x, c))


def test_none_args_match_any_arity_and_a_wrong_arity_warns_and_never_matches():
    x = relay.var("x", shape=(2,))
    assert is_op("add")(None).match(relay.add(x, x))
    # TVM accepts a call pattern whose argument count differs from the op's; it never matches. We also warn.
    for n in (0, 1, 3):
        with pytest.warns(PatternArityWarning, match=r"is_op\('add'\) called with %d argument" % n):
            p = is_op("add")(*[wildcard()] * n)
        assert not p.match(relay.add(x, x))
        assert not p.match(relay.add(x, relay.add(x, x)))


def test_var_constant_expr_and_alternation():
    x = relay.var("x", shape=(2,))
    assert is_var("x").match(x) and not is_var("y").match(x) and is_var().match(x)
    assert is_constant().match(relay.const(1.0)) and not is_constant().match(x)
    e = relay.add(x, x)
    assert is_expr(e).match(e)
    assert (is_constant() | is_var()).match(x)


def test_optional_is_alternation():
    x = relay.var("x", shape=(2,))
    p = is_op("nn.relu")(wildcard()).optional(lambda q: is_op("tanh")(q))
    assert p.match(relay.nn.relu(x))
    assert p.match(relay.tanh(relay.nn.relu(x)))
    assert not p.match(relay.tanh(x))


def test_has_attr_on_call_op_and_function():
    x = relay.var("x", shape=(1, 4, 4, 3), dtype="int8")
    conv = qconv_chain(x).args[0].args[0]
    assert is_op("qnn.conv2d")(None).has_attr({"data_layout": "NHWC"}).match(conv)
    assert not is_op("qnn.conv2d")(None).has_attr({"data_layout": "NCHW"}).match(conv)
    assert not is_op("qnn.conv2d")(None).has_attr({"no_such_attr": 1}).match(conv)
    assert is_op("qnn.conv2d")(None).has_attr({"strides": [1, 1]}).match(conv)
    # op attribute (TOpPattern), as in TVM's fusion patterns
    elemwise = wildcard().has_attr({"TOpPattern": int(FusionKind.ELEMWISE)})
    assert elemwise(wildcard()).match(relay.nn.relu(x))
    assert not elemwise(wildcard(), wildcard()).match(relay.add(x, x))
    f = relay.Function([x], x).with_attr("Composite", "npu.thing")
    assert FunctionPattern(None, wildcard()).has_attr({"Composite": "npu.thing"}).match(f)
    assert not FunctionPattern(None, wildcard()).has_attr({"Composite": "other"}).match(f)


def test_type_dtype_shape_patterns_infer_types():
    x = relay.var("x", shape=(1, 4), dtype="int8")
    e = relay.nn.relu(x)
    assert wildcard().has_dtype("int8").match(e)
    assert not wildcard().has_dtype("float32").match(e)
    assert wildcard().has_shape((1, 4)).match(e)
    assert not wildcard().has_shape((4, 1)).match(e)
    assert wildcard().has_type(relay.TensorType((1, 4), "int8")).match(e)


def test_type_pattern_on_untypeable_expression_explains():
    x = relay.Var("x")  # no type annotation
    with pytest.raises(PatternError, match="InferType"):
        wildcard().has_dtype("int8").match(relay.nn.relu(x))


def test_tuple_and_tuple_get_item_patterns():
    x = relay.var("x", shape=(2,))
    t = relay.Tuple([x, relay.nn.relu(x)])
    assert is_tuple([wildcard(), is_op("nn.relu")(wildcard())]).match(t)
    assert is_tuple(None).match(t)
    assert not is_tuple([wildcard()]).match(t)
    g = relay.TupleGetItem(t, 1)
    assert is_tuple_get_item(wildcard(), 1).match(g)
    assert is_tuple_get_item(wildcard()).match(g)
    assert not is_tuple_get_item(wildcard(), 0).match(g)


def test_if_and_let_patterns():
    c = relay.var("c", shape=(), dtype="bool")
    x = relay.var("x", shape=(2,))
    e = relay.If(c, relay.nn.relu(x), x)
    assert is_if(is_var("c"), is_op("nn.relu")(wildcard()), wildcard()).match(e)
    assert not is_if(is_var("c"), wildcard(), is_op("nn.relu")(wildcard())).match(e)
    v = relay.var("v", shape=(2,))
    let = relay.Let(v, relay.nn.relu(x), relay.add(v, v))
    assert is_let(is_var("v"), is_op("nn.relu")(wildcard()), is_op("add")(wildcard(), wildcard())).match(let)


def test_named_captures_reach_match_details():
    x = relay.var("x", shape=(1, 6, 6, 3), dtype="int8")
    p = is_op("qnn.requantize")(is_op("nn.bias_add")(is_op("qnn.conv2d")(wildcard("data"), *[is_constant() for _ in range(5)])
                                                     .named("conv"), is_constant()), *[is_constant() for _ in range(4)])
    e = qconv_chain(x, pad=False)
    m = p.match_details(e)
    assert m["data"] is x and m["conv"].op.name == "qnn.conv2d"
    assert m.node_map["conv"][0] is m["conv"]
    with pytest.raises(PatternError):
        m["nope"]


def test_dominator_diamond_matches_and_rejects_extra_inputs():
    # TVM's classic diamond: conv → (relu → relu) and (leaky) → add.
    conv_p = is_op("nn.conv2d")(wildcard(), wildcard())
    elemwise = wildcard().has_attr({"TOpPattern": int(FusionKind.ELEMWISE)})(wildcard())
    diamond = dominates(conv_p, elemwise, is_op("add")(wildcard(), wildcard()))
    x = relay.var("x", shape=(1, 3, 6, 6))
    w = relay.var("w", shape=(3, 3, 3, 3))
    conv = relay.nn.conv2d(x, w, padding=(1, 1))
    out = relay.add(relay.nn.relu(relay.nn.relu(conv)), relay.tanh(conv))
    assert diamond.match(out)
    # An extra input on the path (not coming from the parent) breaks the diamond.
    y = relay.var("y", shape=(1, 3, 6, 6))
    out2 = relay.add(relay.nn.relu(conv), relay.add(conv, y))
    assert not diamond.match(out2)
    # The parent must be post-dominated by the child: a second use of conv outside the diamond breaks it.
    inner = relay.add(relay.nn.relu(conv), relay.tanh(conv))
    whole = relay.Tuple([inner, conv])
    m = diamond.match(inner)
    assert m  # on its own it is a diamond
    g = byoc.relay.dataflow_pattern.IndexedGraph(whole)
    matcher = byoc.relay.dataflow_pattern.DFPatternMatcher(g)
    assert not matcher.match(diamond, inner)


def test_partition_check_and_labels():
    x = relay.var("x", shape=(2,))
    e = relay.tanh(relay.nn.relu(x))
    p = is_op("tanh")(is_op("nn.relu")(wildcard()))
    assert p.partition(e, {"Composite": "t.x"}, check=lambda root: False) is e
    out = p.partition(e, {"Composite": "t.x"}, check=lambda root: root.op.name == "tanh")
    assert out.op.attrs["PartitionedFromPattern"] == "nn.relu_tanh_"


def test_partition_rejects_escaping_interior_value():
    # relu is used outside the match (by sub), and the root does not post-dominate that use.
    x = relay.var("x", shape=(2,))
    r = relay.nn.relu(x)
    t = relay.tanh(r)
    e = relay.Tuple([t, relay.subtract(r, x)])
    p = is_op("tanh")(is_op("nn.relu")(wildcard()))
    out = p.partition(e)
    assert byoc.structural_equal(out, e)


def test_partition_accepts_escape_that_flows_back_into_the_root():
    # relu feeds sub, and sub feeds the root add: the root post-dominates sub (TVM #11616).
    x = relay.var("x", shape=(2,))
    r = relay.nn.relu(x)
    s = relay.subtract(r, x)
    root = relay.add(r, s)
    p = is_op("add")(is_op("nn.relu")(wildcard()), wildcard())
    out = p.partition(root, {"Composite": "t.y"})
    assert isinstance(out.op, relay.Function) and out.op.attrs["Composite"] == "t.y"
    xv = np.array([-1.5, 2.0], "float32")
    assert np.array_equal(byoc.evaluate(out, {"x": xv})[0], byoc.evaluate(root, {"x": xv})[0])


def test_partition_overlapping_matches_are_not_both_taken():
    x = relay.var("x", shape=(2,))
    e = relay.nn.relu(relay.nn.relu(relay.nn.relu(x)))
    p = is_op("nn.relu")(is_op("nn.relu")(wildcard()))
    out = p.partition(e)
    # outputs first: the top two relus form one group; the remaining one cannot pair with anything.
    assert isinstance(out.op, relay.Function)
    assert out.args[0].op.name == "nn.relu" and out.args[0].args[0] is x


def test_duplicate_inputs_become_one_parameter():
    x = relay.var("x", shape=(2,))
    e = relay.add(relay.nn.relu(x), x)
    p = is_op("add")(is_op("nn.relu")(wildcard()), wildcard())
    out = p.partition(e)
    assert len(out.op.params) == 1 and out.args == (x,)


class FoldQuantizeOfConstant(DFPatternCallback):
    """qnn.quantize(constant) → constant (computed with numpy, independently of the op registry)."""

    def __init__(self):
        super().__init__(require_type=True)
        self.data = is_constant()
        self.scale = is_constant()
        self.zp = is_constant()
        self.pattern = is_op("qnn.quantize")(self.data, self.scale, self.zp)

    def callback(self, pre, post, node_map):
        d = node_map[self.data][0].data.astype(np.float32)
        s = np.float32(node_map[self.scale][0].data)
        z = int(node_map[self.zp][0].data)
        q = np.trunc(d / s + np.where(d / s >= 0, 0.5, -0.5)) + z  # round half away from zero
        return relay.const(np.clip(q, -128, 127).astype("int8"))


def test_rewrite_folds_quantize_of_constant():
    w = relay.const(np.array([[0.26, -0.74, 1.25, 100.0]], "float32"))
    q = relay.qnn.op.quantize(w, relay.const(0.5), relay.const(1), out_dtype="int8")
    x = relay.var("x", shape=(1, 4), dtype="int8")
    e = relay.Tuple([relay.maximum(x, q), q])
    out = rewrite(FoldQuantizeOfConstant(), e)
    consts = [f for f in (out.fields[0].args[1], out.fields[1])]
    for c in consts:
        assert isinstance(c, relay.Constant)
        assert c.data.tolist() == [[2, 0, 4, 127]]
    # Same result as the op's own reference implementation.
    assert np.array_equal(byoc.evaluate(byoc.IRModule.from_expr(q))[0], consts[1].data)


def test_rewrite_budget_names_the_callback():
    class Flip(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = is_op("add")(wildcard(), wildcard())

        def callback(self, pre, post, node_map):
            return relay.add(post.args[1], post.args[0])

    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(2,))
    with pytest.raises(PatternError, match="Flip"):
        rewrite(Flip(), relay.add(x, y), max_rounds=5)


def test_rewrite_once_runs_a_single_round():
    class Wrap(DFPatternCallback):
        def __init__(self):
            super().__init__(rewrite_once=True)
            self.pattern = is_op("nn.relu")(wildcard())

        def callback(self, pre, post, node_map):
            return relay.nn.relu(post)

    x = relay.var("x", shape=(2,))
    out = rewrite(Wrap(), relay.nn.relu(x))
    assert byoc.structural_equal(out, relay.nn.relu(relay.nn.relu(x)))


def test_matching_a_deep_chain_is_not_recursive():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(20000):
        e = relay.nn.relu(e)
    p = is_op("nn.relu")(is_op("nn.relu")(wildcard()))
    out = p.partition(e)
    assert isinstance(out.op, relay.Function)
    infer_expr(out)


def test_bad_pattern_inputs_raise_pattern_errors():
    with pytest.raises(PatternError):
        has_attr(["not", "a", "dict"])
    with pytest.raises(PatternError):
        is_op("add")(1)
    with pytest.raises(PatternError):
        wildcard().has_dtype("int7")
    assert isinstance(Support.no("x"), Support) and not Support.no("x")
