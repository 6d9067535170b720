"""FoldScaleAxis (forward, backward, the Sequential): TVM's scenarios — a scale folded through relu and a bias
into conv2d / dense weights, two consumers, scales that must not fold (non-constant or negative behind a relu,
a tuple or let user, a grouped conv, a shared conv output) — each checked for structure and values (the
unoptimized module under byoc.evaluate and numpy written here), plus a 100,000-node chain."""
from __future__ import annotations

import numpy as np
import pytest

import byoc as tvm
from byoc import relay
from byoc.interpreter import evaluate

transform = relay.transform
RNG = np.random.default_rng(7)


def _pos(*shape):
    return RNG.uniform(0.5, 2.0, shape).astype("float32")


def _mod(out, params):
    return tvm.IRModule.from_expr(relay.Function(params, out))


def _inputs(mod):
    return {p.name_hint: RNG.normal(size=p.checked_type.shape).astype(p.checked_type.dtype)
            for p in transform.InferType()(mod)["main"].params}


def _ops(mod):
    names = []
    from byoc.ir.traversal import post_order
    from byoc.ir.expr import Call, Op
    for n in post_order(mod["main"]):
        if isinstance(n, Call) and isinstance(n.op, Op):
            names.append(n.op.name)
    return names


def _same_values(before, after, inputs=None):
    inputs = inputs or _inputs(before)
    want = evaluate(before, inputs)
    got = evaluate(after, inputs)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return inputs, got


def _conv_nchw(x, w, pad):
    """Plain numpy NCHW/OIHW convolution, stride 1."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1), np.float64)
    for dy in range(kh):
        for dx in range(kw):
            patch = x[:, :, dy:dy + out.shape[2], dx:dx + out.shape[3]]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, dy, dx])
    return out


def test_forward_folds_scale_through_relu_and_bias_into_conv_weight():
    x = relay.var("x", shape=(2, 4, 10, 10))
    w = relay.var("w", shape=(2, 4, 3, 3))
    b = relay.var("b", shape=(4, 1, 1))
    scale = _pos(4, 1, 1)
    y = relay.add(relay.nn.relu(relay.multiply(x, relay.const(scale))), b)
    before = _mod(relay.nn.conv2d(y, w, channels=2, kernel_size=(3, 3), padding=(1, 1)), [x, w, b])
    after = transform.ForwardFoldScaleAxis()(before)
    ops = _ops(after)
    # the data path no longer multiplies; the weight and the bias do
    assert ops.count("multiply") == 1 and ops.count("divide") == 1
    main = after["main"].body
    assert main.args[0].op.name == "add" and main.args[0].args[0].op.name == "nn.relu"
    assert main.args[0].args[0].args[0] is after["main"].params[0]
    inputs, got = _same_values(before, after)
    want = _conv_nchw(np.maximum(inputs["x"] * scale, 0) + inputs["b"], inputs["w"], 1)
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4)


def test_forward_two_consumers_nhwc_and_scale_on_the_left():
    x = relay.var("x", shape=(2, 4, 10, 3))
    w1 = relay.var("w1", shape=(3, 3, 3, 3))
    w2 = relay.var("w2", shape=(3, 3, 3, 1))
    b = relay.var("b", shape=(3,))
    y = relay.add(relay.nn.relu(relay.multiply(relay.const(_pos(3)), x)), b)
    kw = dict(kernel_size=(3, 3), padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")
    y1 = relay.nn.conv2d(y, w1, channels=3, **kw)
    y2 = relay.nn.conv2d(y, w2, channels=3, groups=3, **{**kw, "kernel_layout": "HWOI"})  # depthwise
    before = _mod(relay.add(y1, y2), [x, w1, w2, b])
    after = transform.ForwardFoldScaleAxis()(before)
    ops = _ops(after)
    assert ops.count("multiply") == 2  # one per weight, none on the data
    _same_values(before, after)


@pytest.mark.parametrize("scale_kind", ["var", "negative"])
def test_forward_behind_relu_needs_a_nonnegative_constant(scale_kind):
    x = relay.var("x", shape=(2, 11, 10, 4))
    w = relay.var("w", shape=(3, 3, 4, 4))
    params = [x, w]
    if scale_kind == "var":
        s = relay.var("s", shape=(4,))
        params.append(s)
    else:
        s = relay.const(-_pos(4))
    y = relay.nn.relu(relay.multiply(x, s))
    before = _mod(relay.nn.conv2d(y, w, channels=4, kernel_size=(3, 3), padding=(1, 1), data_layout="NHWC",
                                  kernel_layout="HWIO"), params)
    after = transform.ForwardFoldScaleAxis()(before)
    assert tvm.ir.structural_equal(after, transform.InferType()(before))


def test_forward_negative_scale_without_relu_folds():
    x = relay.var("x", shape=(2, 4, 10, 10))
    w = relay.var("w", shape=(4, 4, 3, 3))
    before = _mod(relay.nn.conv2d(relay.multiply(x, relay.const(-_pos(4, 1, 1))), w, channels=4,
                                  kernel_size=(3, 3), padding=(1, 1)), [x, w])
    after = transform.ForwardFoldScaleAxis()(before)
    assert after["main"].body.args[0] is after["main"].params[0]
    _same_values(before, after)


def test_forward_stops_at_a_user_that_cannot_take_the_scale():
    x = relay.var("x", shape=(2, 11, 10, 4))
    w = relay.var("w", shape=(3, 3, 4, 4))
    y = relay.multiply(x, relay.const(_pos(4)))
    conv = relay.nn.conv2d(y, w, channels=4, kernel_size=(3, 3), padding=(1, 1), data_layout="NHWC",
                           kernel_layout="HWIO")
    before = _mod(relay.Tuple([conv, y]), [x, w])  # the scaled value is also an output
    after = transform.ForwardFoldScaleAxis()(before)
    assert tvm.ir.structural_equal(after, transform.InferType()(before))
    # a let-bound scaled value does not fold either
    v = relay.var("v")
    before = _mod(relay.Let(v, relay.multiply(x, relay.const(_pos(4))),
                            relay.nn.conv2d(v, w, channels=4, kernel_size=(3, 3), data_layout="NHWC",
                                            kernel_layout="HWIO")), [x, w])
    after = transform.ForwardFoldScaleAxis()(before)
    assert "multiply" in _ops(after) and _ops(after).index("multiply") < _ops(after).index("nn.conv2d")


def test_forward_grouped_conv_is_left_alone():
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 2, 3, 3))
    before = _mod(relay.nn.conv2d(relay.multiply(x, relay.const(_pos(4, 1, 1))), w, channels=4, groups=2,
                                  kernel_size=(3, 3)), [x, w])
    after = transform.ForwardFoldScaleAxis()(before)
    assert tvm.ir.structural_equal(after, transform.InferType()(before))


def test_forward_dense():
    x = relay.var("x", shape=(3, 5))
    w = relay.var("w", shape=(4, 5))
    b = relay.var("b", shape=(5,))
    scale = _pos(5)
    y = relay.add(relay.nn.relu(relay.multiply(x, relay.const(scale))), b)
    before = _mod(relay.nn.dense(y, w), [x, w, b])
    after = transform.ForwardFoldScaleAxis()(before)
    assert after["main"].body.args[1].op.name == "multiply"
    inputs, got = _same_values(before, after)
    want = (np.maximum(inputs["x"] * scale, 0) + inputs["b"]) @ inputs["w"].T
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)


def test_backward_folds_scale_through_bias_and_relu_into_conv_weight():
    x = relay.var("x", shape=(2, 4, 10, 10))
    w = relay.var("w", shape=(8, 4, 3, 3))
    b = relay.var("b", shape=(8, 1, 1))
    scale = _pos(8, 1, 1)
    y = relay.nn.relu(relay.add(relay.nn.conv2d(x, w, channels=8, kernel_size=(3, 3), padding=(1, 1)), b))
    before = _mod(relay.multiply(y, relay.const(scale)), [x, w, b])
    after = transform.BackwardFoldScaleAxis()(before)
    body = after["main"].body
    assert body.op.name == "nn.relu"
    inputs, got = _same_values(before, after)
    want = np.maximum(_conv_nchw(inputs["x"], inputs["w"], 1) + inputs["b"], 0) * scale
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4)


def test_backward_two_branches_added_and_a_scalar_scale():
    x = relay.var("x", shape=(2, 4, 10, 10))
    w1 = relay.var("w1", shape=(8, 4, 3, 3))
    w2 = relay.var("w2", shape=(8, 4, 3, 3))
    c1 = relay.nn.conv2d(x, w1, channels=8, kernel_size=(3, 3), padding=(1, 1))
    c2 = relay.nn.conv2d(x, w2, channels=8, kernel_size=(3, 3), padding=(1, 1))
    before = _mod(relay.multiply(relay.add(c1, relay.nn.relu(c2)), relay.const(np.float32(1.5))), [x, w1, w2])
    after = transform.BackwardFoldScaleAxis()(before)
    assert after["main"].body.op.name == "add"
    _same_values(before, after)


def test_backward_bias_add_and_dense():
    x = relay.var("x", shape=(2, 4, 6, 6))
    w = relay.var("w", shape=(3, 3, 4, 8))
    b = relay.var("b", shape=(8,))
    y = relay.nn.bias_add(relay.nn.conv2d(x, w, channels=8, kernel_size=(3, 3), kernel_layout="HWIO"), b)
    before = _mod(relay.multiply(y, relay.const(_pos(8, 1, 1))), [x, w, b])
    after = transform.BackwardFoldScaleAxis()(before)
    assert after["main"].body.op.name == "nn.bias_add"
    _same_values(before, after)
    d = relay.var("d", shape=(3, 5))
    dw = relay.var("dw", shape=(4, 5))
    before = _mod(relay.multiply(relay.nn.relu(relay.nn.dense(d, dw)), relay.const(_pos(4))), [d, dw])
    after = transform.BackwardFoldScaleAxis()(before)
    assert after["main"].body.op.name == "nn.relu"
    _same_values(before, after)


def test_backward_does_not_fold_a_shared_conv_or_an_unsafe_scale():
    x = relay.var("x", shape=(2, 4, 10, 10))
    w = relay.var("w", shape=(8, 4, 3, 3))
    conv = relay.nn.conv2d(x, w, channels=8, kernel_size=(3, 3))
    # the conv output has a second user: rescaling it would change that user
    before = _mod(relay.Tuple([relay.multiply(conv, relay.const(_pos(8, 1, 1))), conv]), [x, w])
    after = transform.BackwardFoldScaleAxis()(before)
    assert tvm.ir.structural_equal(after, transform.InferType()(before))
    # negative behind a relu
    before = _mod(relay.multiply(relay.nn.relu(conv), relay.const(-_pos(8, 1, 1))), [x, w])
    after = transform.BackwardFoldScaleAxis()(before)
    assert tvm.ir.structural_equal(after, transform.InferType()(before))
    # a scale that varies along H does not match the channel axis
    before = _mod(relay.multiply(conv, relay.const(_pos(8, 8, 1))), [x, w])
    after = transform.BackwardFoldScaleAxis()(before)
    assert tvm.ir.structural_equal(after, transform.InferType()(before))


def test_fold_scale_axis_after_batch_norm_leaves_constant_weights():
    """The BYOC use (TVM's test_not_bind_constant): batch_norm simplified, scale folded, constants folded."""
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.const(RNG.normal(size=(4, 3, 3, 3)).astype("float32"))
    gamma, beta, mean = (relay.const(RNG.normal(size=4).astype("float32")) for _ in range(3))
    var = relay.const(_pos(4))
    bn = relay.nn.batch_norm(relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1)),
                             gamma, beta, mean, var)
    before = _mod(relay.nn.relu(bn[0]), [x])
    seq = tvm.transform.Sequential([transform.InferType(), transform.SimplifyInference(), transform.FoldConstant(),
                                    transform.FoldScaleAxis()])
    with tvm.transform.PassContext(opt_level=3):
        after = seq(before)
    assert _ops(after) == ["nn.conv2d", "add", "nn.relu"]
    _same_values(before, after)
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["FoldScaleAxis"]):
        kept = seq(before)
    assert "multiply" in _ops(kept)


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_fold_on_a_100k_node_chain(direction):
    n = 100_000
    x = relay.var("x", shape=(1, 2, 2, 2))
    w = relay.const(_pos(2, 2, 1, 1))
    y = x
    for _ in range(n // 2):
        y = relay.nn.relu(relay.add(y, relay.const(np.float32(0.0))))
    if direction == "forward":
        body = relay.nn.conv2d(relay.nn.relu(relay.multiply(y, relay.const(_pos(2, 1, 1)))), w, channels=2,
                               kernel_size=(1, 1))
        p = transform.ForwardFoldScaleAxis()
    else:
        body = relay.multiply(relay.nn.relu(relay.nn.conv2d(y, w, channels=2, kernel_size=(1, 1))),
                              relay.const(_pos(2, 1, 1)))
        p = transform.BackwardFoldScaleAxis()
    before = _mod(body, [x])
    after = p(before)
    assert _ops(after).count("multiply") == 1 and _ops(after)[-1] == ("nn.conv2d" if direction == "forward"
                                                                       else "nn.relu")


def test_fold_scale_axis_with_bound_params_leaves_constant_weights():
    """Weights given as parameters and bound with bind_params_by_name: the folded weight products fold to
    constants, so no multiply is left."""
    from byoc.relay.build_module import bind_params_by_name
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(8, 4, 3, 3))
    s_in, s_out = _pos(4, 1, 1), _pos(8, 1, 1)
    y = relay.nn.conv2d(relay.nn.relu(relay.multiply(x, relay.const(s_in))), w, channels=8, kernel_size=(3, 3))
    before = _mod(relay.multiply(relay.nn.relu(y), relay.const(s_out)), [x, w])
    params = {"w": RNG.normal(size=(8, 4, 3, 3)).astype("float32")}
    bound = before.copy()
    bound["main"] = bind_params_by_name(before["main"], params)
    with tvm.transform.PassContext(opt_level=3):
        after = transform.FoldScaleAxis()(bound)
    assert _ops(after) == ["nn.relu", "nn.conv2d", "nn.relu"]
    data = {"x": RNG.normal(size=(1, 4, 6, 6)).astype("float32")}
    want = evaluate(before, dict(data, **params))[0]
    np.testing.assert_allclose(evaluate(after, data)[0], want, rtol=1e-5, atol=1e-5)
