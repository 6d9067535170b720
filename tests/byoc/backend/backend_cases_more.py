"""Backend registry-walk cases of the ops added with the wider TFLite coverage (stack, take, argmax, argmin,
nn.depth_to_space, nn.space_to_depth); merged into ``backend_cases.CASES``."""
from __future__ import annotations

import numpy as np

from byoc import relay
from byoc.relay.op import make_call

__all__ = ["MORE_CASES"]


def _ints(rs, shape, dtype="int8"):
    info = np.iinfo(dtype)
    return rs.randint(int(info.min), int(info.max) + 1, size=shape, dtype=np.int64).astype(dtype)


def _stack(rs):
    a = relay.var("a", shape=(2, 3), dtype="int8")
    b = relay.var("b", shape=(2, 3), dtype="int8")
    f = relay.Function([a, b], relay.stack([a, b, a], axis=1))
    return f, {"a": _ints(rs, (2, 3)), "b": _ints(rs, (2, 3))}, True


def _take(rs):
    x = relay.var("x", shape=(3, 5, 4), dtype="uint8")
    i = relay.var("i", shape=(3, 2), dtype="int32")
    f = relay.Function([x, i], relay.take(x, i, axis=1, batch_dims=1, mode="fast"))
    return f, {"x": _ints(rs, (3, 5, 4), "uint8"), "i": rs.randint(0, 5, size=(3, 2)).astype("int32")}, True


def _arg(op, dtype):
    def make(rs):
        x = relay.var("x", shape=(2, 5, 3), dtype=dtype)
        v = _ints(rs, (2, 5, 3), dtype) if dtype != "float32" else rs.uniform(-2, 2, (2, 5, 3)).astype(dtype)
        call = make_call(op, [x], dict(axis=(1,), keepdims=op == "argmin"))
        return relay.Function([x], call), {"x": v}, True
    return make


def _space_depth(op, shape):
    def make(rs):
        x = relay.var("x", shape=shape, dtype="int8")
        call = make_call(op, [x], dict(block_size=2, layout="NHWC"))
        return relay.Function([x], call), {"x": _ints(rs, shape)}, True
    return make


MORE_CASES = {
    "stack": _stack, "take": _take, "argmax": _arg("argmax", "float32"), "argmin": _arg("argmin", "uint8"),
    "nn.depth_to_space": _space_depth("nn.depth_to_space", (1, 2, 3, 8)),
    "nn.space_to_depth": _space_depth("nn.space_to_depth", (1, 4, 6, 3)),
}


def _qnn_prelu(rs):
    x = relay.var("x", shape=(2, 3, 4), dtype="int8")
    a = relay.var("a", shape=(4,), dtype="int8")
    call = relay.qnn.op.prelu(x, a, 0.05, 3, 0.01, -2, 0.04, -5)
    return relay.Function([x, a], call), {"x": _ints(rs, (2, 3, 4)), "a": _ints(rs, (4,))}, True


MORE_CASES["qnn.prelu"] = _qnn_prelu
