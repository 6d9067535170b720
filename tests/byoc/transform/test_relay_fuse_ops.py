"""relay.transform.FuseOps / DefuseOps: TVM's fusion rules (scenarios of TVM's test_pass_fuse_ops), values
unchanged (reference interpreter, bit-identical: fusion only re-nests calls, it reorders no arithmetic), a
100,000-op chain, and the host build running a fused module."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.ir.expr import Call, Function
from byoc.ir.traversal import post_order
from byoc.relay.testing import run_opt_pass

transform = relay.transform


def _groups(func):
    """Op names of each primitive function called in ``func``'s body, in post order."""
    out = []
    for n in post_order(func.body, enter_functions=False):
        if isinstance(n, Call) and isinstance(n.op, Function):
            assert int(n.op.attrs["Primitive"]) == 1
            out.append([c.op.name for c in post_order(n.op.body) if isinstance(c, Call)])
    return out


def _conv_chain():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    b = relay.var("b", shape=(4,))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    y = relay.add(y, relay.const(1.0))
    out = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
    return relay.Function([x, w, b], out)


def test_conv_takes_its_elementwise_epilogue_and_the_scalar_constant():
    fused = run_opt_pass(_conv_chain(), transform.FuseOps(fuse_opt_level=2))
    assert _groups(fused) == [["nn.conv2d", "nn.bias_add", "nn.relu", "add"], ["nn.max_pool2d"]]
    conv_fn = fused.body.args[0].op
    assert [p.name_hint for p in conv_fn.params] == ["p0", "p1", "p2"]  # the scalar constant is inside


def test_opt_level_zero_makes_every_op_its_own_function():
    fused = run_opt_pass(_conv_chain(), transform.FuseOps(fuse_opt_level=0))
    assert _groups(fused) == [["nn.conv2d"], ["nn.bias_add"], ["nn.relu"], ["add"], ["nn.max_pool2d"]]


def test_default_level_comes_from_the_pass_context():
    with transform.PassContext(opt_level=0):
        fused = run_opt_pass(_conv_chain(), transform.FuseOps())
    assert len(_groups(fused)) == 5


def test_diamond_after_conv_fuses_into_the_post_dominator():
    # y = conv(x); y1 = 1 + y; z = y + y1: both adds are post-dominated elementwise paths of the conv.
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.var("w", shape=(4, 4, 3, 3))
    y = relay.nn.conv2d(x, w, padding=(1, 1))
    z = relay.add(y, relay.add(relay.const(1.0), y))
    w2 = relay.var("w2", shape=(4, 4, 1, 1))
    w3 = relay.var("w3", shape=(4, 4, 3, 3))
    out = relay.add(relay.nn.conv2d(z, w2), relay.nn.conv2d(z, w3, padding=(1, 1)))
    fused = run_opt_pass(relay.Function(relay.analysis.free_vars(out), out), transform.FuseOps(2))
    # the second add can join only one conv: the 3x3 one it post-dominates last in post order
    assert _groups(fused) == [["nn.conv2d", "add", "add"], ["nn.conv2d"], ["nn.conv2d", "add"]]


def test_tuple_in_the_middle_fuses_with_its_injective_producers():
    x = relay.var("x", shape=(8, 8))
    y = relay.var("y", shape=(8, 8))
    a = x + y
    out = relay.concatenate([relay.log(a), relay.exp(a)], axis=0)
    fused = run_opt_pass(relay.Function([x, y], out), transform.FuseOps(2))
    assert _groups(fused) == [["add", "log", "exp", "concatenate"]]


def test_tuple_root_stays_outside_and_pool_is_not_fused_into_injective_consumer():
    x = relay.var("x", shape=(1, 4, 8, 8))
    pooled = relay.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2))
    r = relay.reshape(pooled, (1, 64))
    fused = run_opt_pass(relay.Function([x], relay.Tuple([r, x])), transform.FuseOps(2))
    assert isinstance(fused.body, relay.Tuple)
    assert _groups(fused) == [["nn.max_pool2d"], ["reshape"]]
    reshape_fn = fused.body.fields[0].op
    assert int(reshape_fn.attrs["relay.reshape_only"]) == 1


def test_reduction_takes_elementwise_producers_not_consumers():
    x = relay.var("x", shape=(4, 8))
    s = relay.sum(relay.exp(relay.add(x, relay.const(1.0))), axis=[1])
    out = relay.sqrt(s)
    fused = run_opt_pass(relay.Function([x], out), transform.FuseOps(2))
    assert _groups(fused) == [["add", "exp", "sum"], ["sqrt"]]


def test_compiler_partitions_are_left_alone():
    x = relay.var("x", shape=(8, 8))
    p = relay.var("p", shape=(8, 8))
    ext = relay.Function([p], relay.log(relay.exp(p))).with_attr("Compiler", "npu").with_attr("Primitive", 1)
    mod = byoc.IRModule()
    gv = relay.GlobalVar("npu_main_0")
    mod[gv] = ext
    mod["main"] = relay.Function([x], relay.nn.relu(gv(x)))
    out = transform.FuseOps(2)(transform.InferType()(mod))
    assert out["npu_main_0"].body.op.name == "log"  # untouched
    assert _groups(out["main"]) == [["nn.relu"]]


def _random_inputs(func, seed=0):
    rng = np.random.default_rng(seed)
    return {p.name_hint: rng.standard_normal([int(d) for d in p.checked_type.shape]).astype("float32")
            for p in func.params}


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_values_are_bit_identical_and_defuse_restores_the_graph(level):
    func = run_opt_pass(_conv_chain(), transform.InferType())
    mod = byoc.IRModule.from_expr(func)
    inputs = _random_inputs(func)
    fused = transform.FuseOps(level)(mod)
    ref = byoc.evaluate(mod, inputs)
    got = byoc.evaluate(fused, inputs)
    assert all(np.array_equal(a, b) for a, b in zip(ref, got))
    back = transform.DefuseOps()(fused)
    assert not _groups(back["main"])
    byoc.ir.assert_structural_equal(transform.InferType()(back)["main"], mod["main"], map_free_vars=True)


def test_host_build_runs_a_fused_module_like_the_unfused_one():
    func = run_opt_pass(_conv_chain(), transform.InferType())
    mod = byoc.IRModule.from_expr(func)
    inputs = _random_inputs(func, 1)
    fused = transform.FuseOps(2)(mod)
    a = byoc.build(mod, target="llvm").run(inputs)
    b = byoc.build(fused, target="llvm").run(inputs)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_integer_graph_is_bit_identical():
    x = relay.var("x", shape=(16,), dtype="int32")
    y = relay.right_shift(relay.multiply(relay.add(x, relay.const(3, "int32")), relay.const(7, "int32")),
                          relay.const(1, "int32"))
    out = relay.concatenate([relay.clip(y, -100, 100), relay.negative(x)], axis=0)
    mod = byoc.IRModule.from_expr(relay.Function([x], out))
    mod = transform.InferType()(mod)
    inputs = {"x": np.arange(-8, 8, dtype="int32") * 37}
    fused = transform.FuseOps(2)(mod)
    assert len(_groups(fused["main"])) == 1
    assert np.array_equal(byoc.evaluate(mod, inputs)[0], byoc.evaluate(fused, inputs)[0])


def test_a_100000_op_chain_fuses_in_groups_of_at_most_max_depth():
    x = relay.var("x", shape=(4,))
    y = x
    for i in range(100_000):
        y = relay.negative(y) if i % 2 else relay.abs(y)
    mod = transform.InferType()(byoc.IRModule.from_expr(relay.Function([x], y)))
    fused = transform.FuseOps(2)(mod)
    sizes = [len(g) for g in _groups(fused["main"])]
    assert sum(sizes) == 100_000 and max(sizes) == 256
    with transform.PassContext(config={"relay.FuseOps.max_depth": 10}):
        small = transform.FuseOps(2)(mod)
    assert max(len(g) for g in _groups(small["main"])) == 10
