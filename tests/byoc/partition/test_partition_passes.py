"""MergeComposite, AnnotateTarget, MergeCompilerRegions and PartitionGraph on small hand-built graphs.

Graphs in docstrings: O = supported by the target, X = left on the CPU.
"""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import PartitionError, PatternError
from byoc.ops.registry import register_op_attr, remove_op_attr
from byoc.partition import verify_partitioned
from byoc.relay.dataflow_pattern import is_constant, is_op, wildcard
from byoc.relay.transform import (AnnotateTarget, InferType, MergeCompilerRegions, MergeComposite,
                                  PartitionGraph, Sequential)

SHAPE = (2, 3)


@pytest.fixture
def targets():
    """Target "A" supports add, multiply, tanh; target "B" supports add and subtract."""
    regs = [("add", "A"), ("multiply", "A"), ("tanh", "A"), ("add", "B"), ("subtract", "B")]
    for op, t in regs:
        register_op_attr(op, f"target.{t}", lambda call: True)
    yield
    for op, t in regs:
        remove_op_attr(op, f"target.{t}")


def var(name):
    return relay.var(name, shape=SHAPE)


def inputs_for(mod, seed=0):
    rng = np.random.default_rng(seed)
    return {p.name_hint: rng.standard_normal(p.type_annotation.shape).astype(p.type_annotation.dtype)
            for p in mod["main"].params}


def run(mod, *passes):
    return Sequential([InferType(), *passes])(mod)


def partition(mod, targets, merge=True):
    passes = [AnnotateTarget(targets)] + ([MergeCompilerRegions()] if merge else []) + [PartitionGraph()]
    return run(mod, *passes)


def same_outputs(a, b, seed=0):
    ins = inputs_for(a, seed)
    for x, y in zip(byoc.evaluate(a, ins), byoc.evaluate(b, ins)):
        assert x.dtype == y.dtype and np.array_equal(x, y)


def compiler_funcs(mod, target=None):
    return {gv.name_hint: f for gv, f in mod.items()
            if "Compiler" in f.attrs and (target is None or f.attrs["Compiler"] == target)}


# -- MergeComposite --------------------------------------------------------------------------------------

def test_merge_composite_table_order_is_priority():
    x = var("x")
    e = relay.tanh(relay.nn.relu(x))
    mod = byoc.IRModule.from_expr(relay.Function([x], e))
    long_p = is_op("tanh")(is_op("nn.relu")(wildcard()))
    short_p = is_op("nn.relu")(wildcard())
    a = run(mod, MergeComposite([("t.long", long_p), ("t.short", short_p)]))
    assert a["main"].body.op.attrs["Composite"] == "t.long"
    b = run(mod, MergeComposite([("t.short", short_p), ("t.long", long_p)]))
    assert b["main"].body.op.name == "tanh"
    assert b["main"].body.args[0].op.attrs["Composite"] == "t.short"
    same_outputs(mod, a)
    same_outputs(mod, b)


def test_merge_composite_check_false_falls_through_to_next_pattern():
    x = var("x")
    mod = byoc.IRModule.from_expr(relay.Function([x], relay.tanh(relay.nn.relu(x))))
    table = [("t.long", is_op("tanh")(is_op("nn.relu")(wildcard())), lambda root: False),
             ("t.short", is_op("nn.relu")(wildcard()), lambda root: root.checked_type.shape == SHAPE)]
    out = run(mod, MergeComposite(table))
    assert out["main"].body.op.name == "tanh"
    assert out["main"].body.args[0].op.attrs["Composite"] == "t.short"


def test_merge_composite_optional_records_which_branch_matched():
    x = var("x")
    p = is_op("nn.relu")(wildcard()).optional(lambda q: is_op("tanh")(q))
    mod = byoc.IRModule.from_expr(relay.Function([x], relay.Tuple([relay.tanh(relay.nn.relu(x)),
                                                                   relay.nn.relu(relay.negative(x))])))
    out = run(mod, MergeComposite([("t.act", p)]))
    labels = sorted(f.op.attrs["PartitionedFromPattern"] for f in out["main"].body.fields)
    assert labels == ["nn.relu_", "nn.relu_tanh_"]


def test_merge_composite_embeds_constants_only_for_constant_patterns():
    x = var("x")
    c = relay.const(np.full(SHAPE, 2.0, "float32"))
    mod = byoc.IRModule.from_expr(relay.Function([x], relay.Tuple([relay.add(x, c), relay.multiply(x, c)])))
    table = [("t.addc", is_op("add")(wildcard(), is_constant())), ("t.mul", is_op("multiply")(wildcard(),
                                                                                               wildcard()))]
    out = run(mod, MergeComposite(table))
    add_call, mul_call = out["main"].body.fields
    assert len(add_call.op.params) == 1 and len(add_call.args) == 1
    assert len(mul_call.op.params) == 2 and isinstance(mul_call.args[1], relay.Constant)
    same_outputs(mod, out)


def test_merge_composite_rejects_bad_tables_at_once():
    with pytest.raises(PatternError) as e:
        MergeComposite([("t.a", "not a pattern"), ("", wildcard()), 42])
    msg = str(e.value)
    assert "entry 0" in msg and "entry 1" in msg and "entry 2" in msg


def test_composites_are_not_matched_again():
    x = var("x")
    mod = byoc.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    p = is_op("nn.relu")(wildcard())
    once = run(mod, MergeComposite([("t.r", p)]))
    twice = MergeComposite([("t.r", p)])(once)
    assert byoc.structural_equal(once, twice)


# -- AnnotateTarget --------------------------------------------------------------------------------------

def _count(mod, name, compiler=None):
    return sum(1 for n in byoc.ir.post_order(mod["main"]) if isinstance(n, relay.Call)
               and isinstance(n.op, relay.Op) and n.op.name == name
               and (compiler is None or n.attrs.compiler == compiler))


def test_annotate_target_annotates_every_edge(targets):
    """x → add(O) used twice by sub(X) and mul(O): one end per consumer edge, one begin per input edge."""
    x, y = var("x"), var("y")
    a = relay.add(x, y)
    out = relay.Tuple([relay.subtract(a, x), relay.multiply(a, a)])
    mod = byoc.IRModule.from_expr(relay.Function([x, y], out))
    ann = run(mod, AnnotateTarget("A"))
    # ends for A: add → sub, add → mul (twice: per edge), mul → tuple
    assert _count(ann, "annotation.compiler_end", "A") == 4
    # ends for default: sub → tuple, and the tuple (mixed operands → default) as the function result
    assert _count(ann, "annotation.compiler_end", "default") == 2
    # begins for A: x, y into add; add twice into mul. Default: add and x into sub; both tuple fields.
    assert _count(ann, "annotation.compiler_begin", "A") == 4
    assert _count(ann, "annotation.compiler_begin", "default") == 4
    same_outputs(mod, ann)


def test_annotate_target_reruns_and_multiple_targets(targets):
    x, y = var("x"), var("y")
    e = relay.tanh(relay.subtract(relay.add(x, y), y))
    mod = byoc.IRModule.from_expr(relay.Function([x, y], e))
    both = run(mod, AnnotateTarget(["A", "B"]))
    a_then_b = run(mod, AnnotateTarget("A"), AnnotateTarget("B"))
    assert byoc.structural_equal(both, a_then_b)
    again = AnnotateTarget(["A", "B"])(both)
    assert byoc.structural_equal(both, again)
    # add goes to A (first in priority), subtract to B, tanh to A.
    part = partition(mod, ["A", "B"])
    verify_partitioned(part)
    assert sorted(f.attrs["Compiler"] for f in compiler_funcs(part).values()) == ["A", "A", "B"]
    same_outputs(mod, part)
    b_first = partition(mod, ["B", "A"])
    assert sorted(f.attrs["Compiler"] for f in compiler_funcs(b_first).values()) == ["A", "B"]


def test_annotate_target_rejects_bad_targets():
    with pytest.raises(byoc.errors.PassError):
        AnnotateTarget([])
    with pytest.raises(byoc.errors.PassError):
        AnnotateTarget(["default"])


# -- MergeCompilerRegions + PartitionGraph --------------------------------------------------------------

def test_diamond_with_foreign_branch_does_not_merge_across_it(targets):
    """
        x
        |
       add1 (O)
       /   \\
     mul (O) sub (X)
       \\   /
       add2 (O)
    add1+mul merge; add2 cannot join them (add1 → sub → add2 would become a cycle).
    """
    x, y = var("x"), var("y")
    a1 = relay.add(x, y)
    m = relay.multiply(a1, a1)
    s = relay.subtract(a1, y)
    a2 = relay.add(m, s)
    mod = byoc.IRModule.from_expr(relay.Function([x, y], a2))
    part = partition(mod, "A")
    verify_partitioned(part, mod)
    funcs = compiler_funcs(part, "A")
    assert len(funcs) == 2
    sizes = sorted(len(byoc.relay.analysis.count_ops(f)) for f in funcs.values())
    assert sizes == [1, 2]
    same_outputs(mod, part)


def test_example_graph_from_the_relay_rfc(targets):
    """Adds on target A, subtracts on the CPU; the RFC's regions: {add0, add1, add2, add5?}… computed by hand:
    add0 = x0+x1, add1 = x2+x3, add2 = add0+add1, sub3 = add2-x4, sub4 = sub3-x5, add5 = add2+x6,
    sub6 = add5-x7, add7 = add5+sub4, add8 = add7+sub6, add9 = add8+add8.
    add7 consumes sub4 (which consumes add2): it cannot join add2's region; add8/add9 join add7."""
    xs = [var(f"x{i}") for i in range(8)]
    add0 = relay.add(xs[0], xs[1])
    add1 = relay.add(xs[2], xs[3])
    add2 = relay.add(add0, add1)
    sub3 = relay.subtract(add2, xs[4])
    sub4 = relay.subtract(sub3, xs[5])
    add5 = relay.add(add2, xs[6])
    sub6 = relay.subtract(add5, xs[7])
    add7 = relay.add(add5, sub4)
    add8 = relay.add(add7, sub6)
    add9 = relay.add(add8, add8)
    mod = byoc.IRModule.from_expr(relay.Function(xs, add9))
    part = partition(mod, "A")
    verify_partitioned(part, mod)
    funcs = list(compiler_funcs(part, "A").values())
    counts = sorted(byoc.relay.analysis.count_ops(f).get("add", 0) for f in funcs)
    assert counts == [3, 4]  # {add0, add1, add2, add5} (two outputs) and {add7, add8, add9}
    two_out = [f for f in funcs if isinstance(f.body, relay.Tuple)]
    assert len(two_out) == 1 and len(two_out[0].body.fields) == 2
    same_outputs(mod, part)


def test_multiple_and_duplicate_outputs_and_shared_inputs(targets):
    x, y = var("x"), var("y")
    a = relay.add(x, x)            # x used twice: one parameter
    m = relay.multiply(a, y)
    out = relay.Tuple([relay.negative(a), relay.abs(a), relay.negative(m)])  # a leaves twice: one output
    mod = byoc.IRModule.from_expr(relay.Function([x, y], out))
    part = partition(mod, "A")
    verify_partitioned(part, mod)
    (name, f), = compiler_funcs(part, "A").items()
    assert len(f.params) == 2
    assert isinstance(f.body, relay.Tuple) and len(f.body.fields) == 2
    same_outputs(mod, part)


def test_tuples_join_the_common_target_region(targets):
    x, y = var("x"), var("y")
    t = relay.Tuple([relay.add(x, y), relay.multiply(x, y)])
    out = relay.negative(relay.TupleGetItem(t, 1))
    mod = byoc.IRModule.from_expr(relay.Function([x, y], out))
    part = partition(mod, "A")
    verify_partitioned(part, mod)
    (f,) = compiler_funcs(part, "A").values()
    assert not isinstance(f.body, relay.Tuple) or all(not isinstance(fl, relay.Tuple) for fl in f.body.fields)
    same_outputs(mod, part)
    # include_non_call_ops=False keeps the tuple outside every region.
    part2 = run(mod, AnnotateTarget("A", include_non_call_ops=False), MergeCompilerRegions(), PartitionGraph())
    verify_partitioned(part2, mod)
    assert any(isinstance(n, relay.Tuple) for n in byoc.ir.post_order(part2["main"]))
    same_outputs(mod, part2)


def test_if_and_let_stay_on_the_cpu_and_values_are_preserved(targets):
    c = relay.var("c", shape=(), dtype="bool")
    x, y = var("x"), var("y")
    a = relay.add(x, y)
    branch_t = relay.multiply(a, a)
    branch_f = relay.subtract(a, y)
    v = relay.var("v", shape=SHAPE)
    body = relay.Let(v, relay.If(c, branch_t, branch_f), relay.add(v, relay.tanh(v)))
    mod = byoc.IRModule.from_expr(relay.Function([c, x, y], body))
    part = partition(mod, "A")
    verify_partitioned(part, mod)
    for cond in (True, False):
        ins = inputs_for(mod)
        ins["c"] = np.array(cond)
        assert np.array_equal(byoc.evaluate(mod, ins)[0], byoc.evaluate(part, ins)[0])
    main_nodes = byoc.ir.post_order(part["main"])
    assert any(isinstance(n, relay.If) for n in main_nodes) and any(isinstance(n, relay.Let) for n in main_nodes)


def test_several_functions_are_partitioned_with_their_names(targets):
    x, y = var("x"), var("y")
    helper = relay.Function([x, y], relay.add(relay.multiply(x, y), y))
    mod = byoc.IRModule({"helper": helper})
    a, b = var("a"), var("b")
    gv = mod.get_global_var("helper")
    mod["main"] = relay.Function([a, b], relay.negative(relay.add(relay.Call(gv, (a, b)), a)))
    part = partition(mod, "A")
    verify_partitioned(part)
    names = sorted(compiler_funcs(part))
    assert names == ["tvmgen_default_A_helper_0", "tvmgen_default_A_main_0"]
    same_outputs(mod, part)


def test_names_are_sanitised_and_mod_name_used():
    register_op_attr("tanh", "target.unsanitary-name++", lambda call: True)
    try:
        x = var("x")
        mod = byoc.IRModule.from_expr(relay.Function([x], relay.tanh(x)))
        part = run(mod, AnnotateTarget("unsanitary-name++"), PartitionGraph(mod_name="my mod"))
        (name, f), = compiler_funcs(part).items()
        assert name == "tvmgen_my_mod_unsanitary_name___main_0"
        assert f.attrs["Compiler"] == "unsanitary-name++" and f.attrs["global_symbol"] == name
        assert f.attrs["Primitive"] == 1 and f.attrs["Inline"] == 1
    finally:
        remove_op_attr("tanh", "target.unsanitary-name++")


def test_constants_are_bound_inside_partitions(targets):
    x = var("x")
    c = relay.const(np.full(SHAPE, 3.0, "float32"))
    mod = byoc.IRModule.from_expr(relay.Function([x], relay.negative(relay.multiply(x, c))))
    part = partition(mod, "A")
    (f,) = compiler_funcs(part).values()
    assert len(f.params) == 1
    assert any(isinstance(n, relay.Constant) for n in byoc.ir.post_order(f.body))
    unbound = run(mod, AnnotateTarget("A"), MergeCompilerRegions(), PartitionGraph(bind_constants=False))
    (g,) = compiler_funcs(unbound).values()
    assert len(g.params) == 2
    same_outputs(mod, part)
    same_outputs(mod, unbound)


def test_partitioning_is_idempotent_and_deterministic(targets):
    x, y = var("x"), var("y")
    e = relay.add(relay.subtract(relay.add(x, y), y), relay.tanh(x))
    mod = byoc.IRModule.from_expr(relay.Function([x, y], e))
    p1 = partition(mod, "A")
    p2 = partition(mod, "A")
    assert p1.astext() == p2.astext()
    again = partition(p1, "A")
    assert byoc.structural_equal(p1, again)


def test_hand_made_cyclic_regions_are_reported():
    x = var("x")
    begin = lambda e: relay.Call(relay.Op.get("annotation.compiler_begin"), (e,), {"compiler": "A"})  # noqa: E731
    end = lambda e: relay.Call(relay.Op.get("annotation.compiler_end"), (e,), {"compiler": "A"})  # noqa: E731
    a = relay.tanh(begin(x))
    b = relay.negative(end(a))                                # CPU op between two parts of one region
    c = relay.add(begin(end(a)), begin(b))                    # …merged by hand with add
    mod = byoc.IRModule.from_expr(relay.Function([x], end(c)))
    # Remove the begin/end pair between a and c by hand: a and c are now one region that b depends on both ways.
    a2 = relay.tanh(begin(x))
    b2 = relay.negative(end(a2))
    c2 = relay.add(a2, begin(b2))
    bad = byoc.IRModule.from_expr(relay.Function([x], end(c2)))
    with pytest.raises(PartitionError, match="cycle"):
        PartitionGraph()(InferType()(bad))
    with pytest.raises(PartitionError, match="cycle"):
        MergeCompilerRegions()(InferType()(bad))
    PartitionGraph()(InferType()(mod))  # the well-formed version is fine


def test_malformed_annotations_are_reported():
    x = var("x")
    end = relay.Call(relay.Op.get("annotation.compiler_end"), (relay.tanh(x),), {"compiler": "A"})
    mod = byoc.IRModule.from_expr(relay.Function([x], end))
    with pytest.raises(PartitionError, match="closes no region"):
        PartitionGraph()(InferType()(mod))


def test_long_alternating_chain_is_fast_and_correct(targets):
    x = var("x")
    e = x
    for i in range(6000):
        e = relay.add(e, x) if i % 2 == 0 else relay.subtract(e, x)
    mod = byoc.IRModule.from_expr(relay.Function([x], e))
    part = partition(mod, "A")
    assert len(compiler_funcs(part)) == 3000
    verify_partitioned(part, mod)
