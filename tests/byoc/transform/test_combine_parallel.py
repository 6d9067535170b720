"""CombineParallelConv2D / Dense / BatchMatmul: TVM's scenarios (branches with different kernel sizes, shared
scale/relu followers, a follower with a broadcast operand, repeated blocks, dense to batch_matmul and to one
dense), each checked for structure and against the unoptimized module and numpy; plus a 100,000-node chain."""
from __future__ import annotations

import numpy as np
import pytest

import byoc as tvm
from byoc import relay
from byoc.interpreter import evaluate
from byoc.ir.expr import Call, Op
from byoc.ir.traversal import post_order

transform = relay.transform
RNG = np.random.default_rng(11)


def _mod(out, params):
    return tvm.IRModule.from_expr(relay.Function(params, out))


def _ops(mod):
    return [n.op.name for n in post_order(mod["main"]) if isinstance(n, Call) and isinstance(n.op, Op)]


def _check(before, after):
    typed = transform.InferType()(before)
    inputs = {p.name_hint: RNG.normal(size=p.checked_type.shape).astype("float32") for p in typed["main"].params}
    want, got = evaluate(before, inputs), evaluate(after, inputs)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return inputs, got


def test_conv2d_three_of_four_branches_combine():
    x = relay.var("x", shape=(1, 4, 16, 16))
    w1, w2, w4 = (relay.var(f"w{i}", shape=(c, 4, 1, 1)) for i, c in ((1, 4), (2, 8), (4, 4)))
    w3 = relay.var("w3", shape=(4, 4, 3, 3))  # another kernel size: its own group of one
    ys = [relay.nn.conv2d(x, w) for w in (w1, w2)] + [relay.nn.conv2d(x, w3), relay.nn.conv2d(x, w4),
                                                        relay.nn.max_pool2d(x)]
    before = _mod(relay.Tuple(ys), [x, w1, w2, w3, w4])
    after = transform.CombineParallelConv2D(min_num_branches=2)(before)
    ops = _ops(after)
    assert ops.count("nn.conv2d") == 2 and ops.count("strided_slice") == 3
    inputs, got = _check(before, after)
    # numpy: a 1x1 convolution is a channel matmul
    np.testing.assert_allclose(got[1], np.einsum("nchw,oc->nohw", inputs["x"], inputs["w2"][:, :, 0, 0]),
                               rtol=1e-5, atol=1e-5)
    # three branches needed by default: two 1x1 kernels plus w4 = three, so the default combines too
    assert _ops(transform.CombineParallelConv2D()(before)).count("nn.conv2d") == 2
    fewer = _mod(relay.Tuple(ys[:2] + ys[2:3]), [x, w1, w2, w3])
    assert _ops(transform.CombineParallelConv2D()(fewer)).count("nn.conv2d") == 3


def test_conv2d_followers_combined_until_they_differ():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w1, w2 = relay.var("w1", shape=(4, 4, 1, 1)), relay.var("w2", shape=(8, 4, 1, 1))
    s1, s2 = relay.var("s1", shape=(4, 1, 1)), relay.var("s2", shape=(8, 1, 1))
    bias = relay.var("bias", shape=(8, 1, 1))
    y1 = relay.nn.relu(relay.multiply(relay.nn.conv2d(x, w1), s1))
    y2 = relay.add(relay.nn.relu(relay.multiply(relay.nn.conv2d(x, w2), s2)), bias)
    before = _mod(relay.Tuple([y1, y2]), [x, w1, w2, s1, s2, bias])
    after = transform.CombineParallelConv2D(min_num_branches=2)(before)
    ops = _ops(after)
    assert ops.count("nn.conv2d") == 1 and ops.count("multiply") == 1 and ops.count("nn.relu") == 1
    assert ops.count("add") == 1 and ops.count("concatenate") == 2
    inputs, got = _check(before, after)
    w = inputs["w1"][:, :, 0, 0]
    want = np.maximum(np.einsum("nchw,oc->nohw", inputs["x"], w) * inputs["s1"], 0)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)


def test_conv2d_broadcast_scale_stops_the_followers():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w1, w2 = relay.var("w1", shape=(4, 4, 1, 1)), relay.var("w2", shape=(8, 4, 1, 1))
    s1, s2 = relay.var("s1", shape=(1,)), relay.var("s2", shape=(1,))  # not per channel: cannot concatenate
    before = _mod(relay.Tuple([relay.multiply(relay.nn.conv2d(x, w1), s1),
                               relay.multiply(relay.nn.conv2d(x, w2), s2)]), [x, w1, w2, s1, s2])
    after = transform.CombineParallelConv2D(min_num_branches=2)(before)
    ops = _ops(after)
    assert ops.count("nn.conv2d") == 1 and ops.count("multiply") == 2
    _check(before, after)


def test_conv2d_repeated_blocks_share_the_combined_ops():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.var("w", shape=(4, 8, 1, 1))
    y = relay.nn.conv2d(x, relay.var("w0", shape=(8, 4, 1, 1)))
    for _ in range(4):
        y = relay.concatenate([relay.nn.conv2d(y, w), relay.nn.conv2d(y, w)], axis=1)
    before = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))
    after = transform.CombineParallelConv2D(min_num_branches=2)(before)
    assert _ops(after).count("nn.conv2d") == 5
    _check(before, after)


def test_grouped_conv_is_not_combined():
    x = relay.var("x", shape=(1, 4, 8, 8))
    ws = [relay.var(f"w{i}", shape=(4, 2, 1, 1)) for i in range(3)]
    before = _mod(relay.Tuple([relay.nn.conv2d(x, w, groups=2) for w in ws]), [x] + ws)
    after = transform.CombineParallelConv2D()(before)
    assert _ops(after).count("nn.conv2d") == 3


def test_dense_to_batch_matmul_with_followers():
    x = relay.var("x", shape=(3, 5))
    ws = [relay.var(f"w{i}", shape=(4, 5)) for i in range(3)]
    bs = [relay.var(f"b{i}", shape=(4,)) for i in range(3)]
    ys = [relay.nn.relu(relay.add(relay.nn.dense(x, w), b)) for w, b in zip(ws, bs)]
    before = _mod(relay.Tuple(ys), [x] + ws + bs)
    after = transform.CombineParallelDense()(before)
    ops = _ops(after)
    assert "nn.dense" not in ops and ops.count("nn.batch_matmul") == 1 and ops.count("add") == 1
    inputs, got = _check(before, after)
    for i in range(3):
        want = np.maximum(inputs["x"] @ inputs[f"w{i}"].T + inputs[f"b{i}"], 0)
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-5)


def test_dense_to_one_dense_with_different_widths_and_scalar_operand():
    x = relay.var("x", shape=(3, 5))
    ws = [relay.var(f"w{i}", shape=(u, 5)) for i, u in enumerate((2, 4, 3))]
    ys = [relay.multiply(relay.nn.dense(x, w), relay.const(np.float32(i + 1))) for i, w in enumerate(ws)]
    before = _mod(relay.Tuple(ys), [x] + ws)
    after = transform.CombineParallelDense(to_batch=False)(before)
    ops = _ops(after)
    assert ops.count("nn.dense") == 1 and ops.count("multiply") == 1 and ops.count("strided_slice") == 3
    inputs, got = _check(before, after)
    np.testing.assert_allclose(got[2], 3 * inputs["x"] @ inputs["w2"].T, rtol=1e-5, atol=1e-5)
    # different weight shapes do not go to batch_matmul
    assert _ops(transform.CombineParallelDense()(before)).count("nn.dense") == 3


def test_batch_matmul_combined():
    x = relay.var("x", shape=(2, 3, 5))
    ws = [relay.var(f"w{i}", shape=(2, u, 5)) for i, u in enumerate((2, 4, 3))]
    bs = [relay.var(f"b{i}", shape=(u,)) for i, u in enumerate((2, 4, 3))]
    ys = [relay.add(relay.nn.batch_matmul(x, w), b) for w, b in zip(ws, bs)]
    before = _mod(relay.Tuple(ys), [x] + ws + bs)
    after = transform.CombineParallelBatchMatmul()(before)
    ops = _ops(after)
    assert ops.count("nn.batch_matmul") == 1 and ops.count("add") == 1
    inputs, got = _check(before, after)
    np.testing.assert_allclose(got[1], inputs["x"] @ inputs["w1"].transpose(0, 2, 1) + inputs["b1"],
                               rtol=1e-5, atol=1e-5)


def test_combine_on_a_100k_node_chain():
    def block(y):
        ws = [relay.const(RNG.normal(size=(2, 2, 1, 1)).astype("float32")) for _ in range(3)]
        return relay.add(relay.add(*[relay.nn.conv2d(y, w) for w in ws[:2]]), relay.nn.conv2d(y, ws[2]))

    x = relay.var("x", shape=(1, 2, 2, 2))
    y = block(x)
    for _ in range(100_000):
        y = relay.nn.relu(y)
    before = _mod(block(y), [x])
    after = transform.CombineParallelConv2D()(before)
    assert _ops(after).count("nn.conv2d") == 2 and _ops(after).count("nn.relu") == 100_000
