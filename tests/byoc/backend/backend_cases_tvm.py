"""Backend registry-walk cases of the ops registered for TVM compatibility (log, erf, power, shifts,
fixed_point_multiply, zeros/ones(_like), einsum, nn.matmul, layout_transform, variance); merged into
``backend_cases.CASES``. ``exact`` says where the CPU kernel must match the numpy reference bit for bit."""
from __future__ import annotations

import numpy as np

from byoc import relay
from byoc.relay.op import make_call

__all__ = ["TVM_CASES"]


def _f(rs, shape, lo=-4.0, hi=4.0, dtype="float32"):
    return rs.uniform(lo, hi, size=shape).astype(dtype)


def _i(rs, shape, dtype):
    info = np.iinfo(dtype)
    return rs.randint(int(info.min), int(info.max) + 1, size=shape, dtype=np.int64).astype(dtype)


def _unary(op, lo, hi, dtype="float32"):
    def make(rs):
        x = relay.var("x", shape=(3, 17), dtype=dtype)
        v = _f(rs, (3, 17), lo, hi, dtype)
        v[0, :4] = [0.0, 1.0, lo, hi]
        return relay.Function([x], make_call(op, [x])), {"x": v}, True     # libm in double, rounded: exact
    return make


def _power_float(rs):
    a = relay.var("a", shape=(4, 6), dtype="float32")
    b = relay.var("b", shape=(1, 6), dtype="float32")
    return (relay.Function([a, b], make_call("power", [a, b])),
            {"a": _f(rs, (4, 6), 0.0, 5.0), "b": _f(rs, (1, 6), -3.0, 3.0)}, True)


def _power_int(rs):
    a = relay.var("a", shape=(4, 6), dtype="int16")
    b = relay.var("b", shape=(4, 6), dtype="int16")
    return (relay.Function([a, b], make_call("power", [a, b])),
            {"a": _i(rs, (4, 6), "int16"), "b": rs.randint(0, 40, size=(4, 6)).astype("int16")}, True)


def _shift(op, dtype):
    def make(rs):
        a = relay.var("a", shape=(3, 8), dtype=dtype)
        b = relay.var("b", shape=(8,), dtype=dtype)
        bits = np.dtype(dtype).itemsize * 8
        return (relay.Function([a, b], make_call(op, [a, b])),
                {"a": _i(rs, (3, 8), dtype), "b": rs.randint(0, bits, size=8).astype(dtype)}, True)
    return make


def _fpm(rs):
    x = relay.var("x", shape=(64,), dtype="int32")
    v = _i(rs, (64,), "int32")
    v[:4] = [np.iinfo("int32").min, np.iinfo("int32").max, -1, 1]
    call = make_call("fixed_point_multiply", [x], dict(multiplier=1518500250, shift=-3))
    return relay.Function([x], call), {"x": v}, True


def _create(op):
    def make(rs):
        x = relay.var("x", shape=(2, 5), dtype="int8")
        if op.endswith("_like"):
            body = relay.add(make_call(op, [x]), x)
        else:
            body = relay.add(make_call(op, [], dict(shape=(2, 5), dtype="int8")), x)
        return relay.Function([x], body), {"x": _i(rs, (2, 5), "int8")}, True
    return make


def _layout(rs):
    x = relay.var("x", shape=(1, 8, 3, 5), dtype="int8")
    y = make_call("layout_transform", [x], dict(src_layout="NCHW", dst_layout="NHWC4c"))
    z = make_call("layout_transform", [y], dict(src_layout="NHWC4c", dst_layout="NCHW2c"))
    return relay.Function([x], relay.Tuple([y, z])), {"x": _i(rs, (1, 8, 3, 5), "int8")}, True


def _matmul(rs):
    a = relay.var("a", shape=(2, 5, 3), dtype="float32")
    b = relay.var("b", shape=(4, 5), dtype="float32")
    call = make_call("nn.matmul", [a, b], dict(transpose_a=True, transpose_b=True))
    return relay.Function([a, b], call), {"a": _f(rs, (2, 5, 3)), "b": _f(rs, (4, 5))}, False


def _einsum(rs):
    a = relay.var("a", shape=(3, 4, 5), dtype="float32")
    b = relay.var("b", shape=(5, 2), dtype="float32")
    call = make_call("einsum", [relay.Tuple([a, b])], dict(equation="ijk,kl->lji"))
    return relay.Function([a, b], call), {"a": _f(rs, (3, 4, 5)), "b": _f(rs, (5, 2))}, False


def _variance(rs):
    x = relay.var("x", shape=(2, 3, 7), dtype="float32")
    m = relay.mean(x, axis=(0, 2), keepdims=True)
    call = make_call("variance", [x, m], dict(axis=(0, 2), keepdims=False, unbiased=True))
    return relay.Function([x], call), {"x": _f(rs, (2, 3, 7))}, False


def _upsampling(method, layout, shape, dtype):
    def make(rs):
        x = relay.var("x", shape=shape, dtype=dtype)
        y = relay.nn.upsampling(x, scale_h=2, scale_w=1.5, layout=layout, method=method)
        ins = {"x": _i(rs, shape, dtype) if dtype == "int8" else _f(rs, shape)}
        return relay.Function([x], y), ins, True
    return make


TVM_CASES = {
    "log": _unary("log", 0.001, 50.0), "erf": _unary("erf", -3.0, 3.0),
    "power": lambda rs: _power_float(rs),
    "left_shift": _shift("left_shift", "int16"), "right_shift": _shift("right_shift", "int8"),
    "fixed_point_multiply": _fpm,
    "zeros": _create("zeros"), "ones": _create("ones"), "zeros_like": _create("zeros_like"),
    "ones_like": _create("ones_like"),
    "einsum": _einsum, "nn.matmul": _matmul, "layout_transform": _layout, "variance": _variance,
    "nn.upsampling": _upsampling("nearest_neighbor", "NCHW", (1, 2, 3, 4), "int8"),
}
