"""FuseOps for the CPU backend: groups follow the registry's fusion kinds, deterministically, at scale."""
from __future__ import annotations

import numpy as np

import byoc
from backend_cases import c
from byoc import relay
from byoc.backend.llvm import fuse_groups
from byoc.backend.llvm.fuse_ops import MAX_GROUP_SIZE
from byoc.relay.op import make_call
from byoc.transform.infer_type import InferType


def _typed(func):
    return InferType()(byoc.IRModule.from_expr(func))["main"]


def _names(groups):
    return [[n.op.name for n in g.nodes] for g in groups]


def _conv_chain(x, cout=4):
    w = c(np.ones((3, 3, 2, cout)), "int8")
    e = make_call("qnn.conv2d", [x, w, c(0, "int32"), c(0, "int32"), c(0.1), c(0.1)],
                  dict(data_layout="NHWC", kernel_layout="HWIO", padding=(1, 1)))
    e = make_call("nn.bias_add", [e, c(np.arange(cout), "int32")], dict(axis=3))
    e = make_call("qnn.requantize", [e, c(0.01), c(0, "int32"), c(0.2), c(3, "int32")], dict(axis=3))
    return make_call("clip", [e], dict(a_min=3.0, a_max=127.0))


def test_conv_bias_requantize_clip_is_one_group():
    x = relay.var("x", shape=(1, 5, 5, 2), dtype="int8")
    groups = fuse_groups(_typed(relay.Function([x], _conv_chain(x))))
    assert _names(groups) == [["qnn.conv2d", "nn.bias_add", "qnn.requantize", "clip"]]


def test_injective_chain_fuses_and_opaque_stands_alone():
    """
        x ─ pad ─ transpose ─ qnn.softmax (OPAQUE) ─ reshape ─ clip
    """
    x = relay.var("x", shape=(2, 3), dtype="int8")
    e = make_call("nn.pad", [x, c(0, "int8")], dict(pad_width=((0, 0), (1, 1))))
    e = make_call("transpose", [e], dict(axes=(1, 0)))
    e = make_call("qnn.softmax", [e, c(0.1), c(0, "int32"), c(1 / 256), c(-128, "int32")], dict(axis=0))
    e = make_call("reshape", [e], dict(newshape=(-1,)))
    e = make_call("clip", [e], dict(a_min=-100.0, a_max=100.0))
    groups = fuse_groups(_typed(relay.Function([x], e)))
    assert _names(groups) == [["nn.pad", "transpose"], ["qnn.softmax"], ["reshape", "clip"]]


def test_shared_producer_and_outputs_are_not_fused_into_consumers():
    """A value with two users (or that is a function output) is materialised once.

        x ─ requant ─┬─ clip ──┐
                     └─ relu ──┴─ (tuple output, plus requant itself)
    """
    x = relay.var("x", shape=(4,), dtype="int32")
    r = make_call("qnn.requantize", [x, c(0.1), c(0, "int32"), c(0.2), c(0, "int32")])
    a = make_call("clip", [r], dict(a_min=-5.0, a_max=5.0))
    b = make_call("nn.relu", [r])
    groups = fuse_groups(_typed(relay.Function([x], relay.Tuple([a, b, r]))))
    assert _names(groups) == [["qnn.requantize"], ["clip"], ["nn.relu"]]


def test_fusion_is_deterministic():
    x = relay.var("x", shape=(1, 5, 5, 2), dtype="int8")
    y = _conv_chain(x)
    z = make_call("qnn.add", [y, y, c(0.2), c(3, "int32"), c(0.2), c(3, "int32"), c(0.3), c(1, "int32")])
    f = relay.Function([x], z)
    a = _names(fuse_groups(_typed(f)))
    b = _names(fuse_groups(_typed(f)))
    assert a == b


def test_long_chain_respects_group_cap_without_recursion():
    x = relay.var("x", shape=(3,), dtype="int32")
    e = x
    for i in range(100_000):
        e = make_call("add" if i % 2 else "subtract", [e, c(1, "int32")])
    groups = fuse_groups(_typed(relay.Function([x], e)))
    assert sum(len(g.nodes) for g in groups) == 100_000
    assert max(len(g.nodes) for g in groups) <= MAX_GROUP_SIZE


def test_long_chain_builds_and_runs():
    x = relay.var("x", shape=(5,), dtype="int32")
    e = x
    for i in range(300):
        e = make_call("add", [e, c(i % 7, "int32")])
    mod = byoc.IRModule.from_expr(relay.Function([x], e))
    inp = {"x": np.arange(5, dtype="int32")}
    assert np.array_equal(byoc.build(mod).run(inp)[0], byoc.evaluate(mod, inp)[0])
