"""InferType on parameters without types (Relay's unification case): the arguments-first retry, its undo on
failure, shared tensor types, and no reference cycles left behind by a pass run with the cyclic collector
paused."""
from __future__ import annotations

import gc

import pytest

import byoc
from byoc import relay
from byoc.errors import TypeInferenceError
from byoc.transform.infer_type import infer_expr


def _untyped_chain(blocks: int):
    """conv2d (1x1) → bias_add → relu → add(residual), weights and biases declared without types."""
    x = relay.var("x", shape=(1, 4, 4, 4), dtype="float32")
    e = x
    for i in range(blocks):
        y = relay.nn.conv2d(e, relay.var(f"w{i}"), channels=4, kernel_size=(1, 1))
        e = relay.add(relay.nn.relu(relay.nn.bias_add(y, relay.var(f"b{i}"))), e)
    return relay.Function(relay.analysis.free_vars(e), e)


def test_every_weight_and_bias_takes_the_type_its_op_determines():
    f = _untyped_chain(50)
    out = byoc.relay.transform.InferType()(byoc.IRModule.from_expr(f))["main"]
    # 1x1 conv2d with 4 output channels over NCHW data with 4 channels: OIHW weight (4, 4, 1, 1); bias (4,)
    for p in out.params[1:]:
        want = (4, 4, 1, 1) if p.name_hint.startswith("w") else (4,)
        assert p.type_annotation == relay.TensorType(want, "float32"), p.name_hint
    assert out.ret_type == relay.TensorType((1, 4, 4, 4), "float32")


def test_equal_tensor_types_are_one_object():
    # 100,000-op graphs otherwise keep one fresh type object per node (12 MB at 100k ops)
    f = _untyped_chain(20)
    infer_expr(f)
    weights = {id(p.checked_type) for p in f.params if p.name_hint.startswith("w")}
    biases = {id(p.checked_type) for p in f.params if p.name_hint.startswith("b")}
    assert len(weights) == 1 and len(biases) == 1
    node, results = f.body, set()
    while isinstance(node, relay.Call) and node.op.name == "add":
        results.add(id(node.checked_type))
        node = node.args[1]
    assert len(results) == 1


def test_a_failed_inference_undoes_what_the_retry_annotated():
    x = relay.var("x", shape=(1, 4, 4, 4), dtype="float32")
    w, z = relay.var("w"), relay.var("z")
    conv = relay.nn.conv2d(x, w, channels=4, kernel_size=(1, 1))
    f = relay.Function([x, w, z], relay.add(conv, z))  # nothing determines %z
    with pytest.raises(TypeInferenceError, match="%z has no type annotation"):
        infer_expr(f)
    # the retry had typed %w from conv2d and the conv2d call itself before reaching add: both are undone
    assert w.type_annotation is None and w._checked_type is None
    assert conv._checked_type is None
    assert z.type_annotation is None


def test_inference_leaves_no_reference_cycles():
    # Passes run with the cyclic collector paused; that is only sound if they create no cycles.
    gc.collect()
    mod = byoc.IRModule.from_expr(_untyped_chain(500))
    out = byoc.relay.transform.InferType()(mod)
    assert out["main"].params[1].type_annotation is not None
    del mod, out
    assert gc.collect() == 0
    x = relay.var("x", shape=(1, 4, 4, 4), dtype="float32")
    bad = relay.Function([x, relay.var("z")], relay.add(x, relay.var("z")))
    with pytest.raises(TypeInferenceError):
        byoc.relay.transform.InferType()(byoc.IRModule.from_expr(bad))
    del bad
    assert gc.collect() == 0
