"""Small, type-correct cases for every registered op (the CPU backend's registry walk), plus helpers.

Each factory takes a ``numpy.random.RandomState`` and returns ``(Function, inputs, exact)``: ``exact`` is False
only for float ops whose reference is order- or libm-dependent (transcendentals, float reductions), which are
compared to a few ulps instead.
"""
from __future__ import annotations

import numpy as np

import byoc
from byoc import relay
from byoc.relay.op import make_call

__all__ = ["CASES", "run_both", "assert_matches", "qparams"]


def c(v, dtype="float32"):
    return relay.const(np.asarray(v, dtype=dtype) if not isinstance(v, np.ndarray) else v.astype(dtype), dtype)


def ints(rs, shape, dtype="int8"):
    info = np.iinfo(dtype)
    return rs.randint(int(info.min), int(info.max) + 1, size=shape, dtype=np.int64).astype(dtype)


def floats(rs, shape, lo=-4.0, hi=4.0, dtype="float32"):
    return rs.uniform(lo, hi, size=shape).astype(dtype)


def fn(expr, *vars_):
    return relay.Function(list(vars_), expr)


def _unary_float(op, lo=-4.0, hi=4.0):
    def make(rs):
        x = relay.var("x", shape=(2, 3, 5), dtype="float32")
        return fn(make_call(op, [x]), x), {"x": floats(rs, (2, 3, 5), lo, hi)}, op in _EXACT_FLOAT
    return make


_EXACT_FLOAT = {"abs", "negative", "sqrt", "rsqrt", "round", "floor", "copy", "add", "subtract", "multiply",
                "divide", "maximum", "minimum", "nn.relu", "nn.leaky_relu"}


def _unary_int(op):
    def make(rs):
        x = relay.var("x", shape=(3, 7), dtype="int8")
        return fn(make_call(op, [x]), x), {"x": ints(rs, (3, 7))}, True
    return make


def _binary(op, dtype):
    def make(rs):
        a = relay.var("a", shape=(2, 3, 4), dtype=dtype)
        b = relay.var("b", shape=(3, 1), dtype=dtype)
        ins = {"a": floats(rs, (2, 3, 4)) if dtype.startswith("float") else ints(rs, (2, 3, 4), dtype),
               "b": floats(rs, (3, 1), 0.5, 3) if dtype.startswith("float") else ints(rs, (3, 1), dtype)}
        if op in ("divide", "floor_divide") and not dtype.startswith("float"):
            ins["b"][ins["b"] == 0] = 3
        return fn(make_call(op, [a, b]), a, b), ins, True
    return make


def qparams(rs, per_channel: int | None = None):
    s = rs.uniform(0.005, 0.05)
    if per_channel:
        return c(rs.uniform(0.002, 0.02, per_channel).astype("float32")), c(0, "int32")
    return c(s), c(int(rs.randint(-20, 20)), "int32")


def _qnn_conv(rs, groups=1, transpose=False):
    x = relay.var("x", shape=(1, 6, 7, 4), dtype="int8")
    co = 4 if groups > 1 else 5
    if transpose:
        w = c(ints(rs, (4, 3, 3, co)), "int8")
        call = make_call("qnn.conv2d_transpose", [x, w, c(3, "int32"), c(0, "int32"), c(0.05), c(0.01)],
                         dict(strides=(2, 2), padding=(1, 1, 0, 0), data_layout="NHWC", kernel_layout="IHWO",
                              out_dtype="int32"))
    else:
        w = c(ints(rs, (3, 3, 4 // groups, co)), "int8")
        call = make_call("qnn.conv2d", [x, w, c(-3, "int32"), c(0, "int32"), c(0.05),
                                        c(rs.uniform(0.005, 0.02, co).astype("float32"))],
                         dict(strides=(1, 2), padding=(1, 0, 1, 2), groups=groups, data_layout="NHWC",
                              kernel_layout="HWIO", out_dtype="int32"))
    return fn(call, x), {"x": ints(rs, (1, 6, 7, 4))}, True


def _float_conv(rs):
    x = relay.var("x", shape=(1, 3, 6, 6), dtype="float32")
    w = c(floats(rs, (4, 3, 3, 3)))
    call = make_call("nn.conv2d", [x, w], dict(padding=(1, 1), strides=(2, 1)))
    return fn(call, x), {"x": floats(rs, (1, 3, 6, 6))}, True


def _float_conv_t(rs):
    x = relay.var("x", shape=(1, 3, 4, 4), dtype="float32")
    w = c(floats(rs, (3, 2, 3, 3)))
    call = make_call("nn.conv2d_transpose", [x, w], dict(strides=(2, 2), padding=(1, 1, 1, 1)))
    return fn(call, x), {"x": floats(rs, (1, 3, 4, 4))}, True


def _dense(rs, quant):
    if quant:
        x = relay.var("x", shape=(3, 20), dtype="int8")
        w = c(ints(rs, (7, 20)), "int8")
        call = make_call("qnn.dense", [x, w, c(5, "int32"), c(0, "int32"), c(0.1), c(0.02)], dict(units=7))
        return fn(call, x), {"x": ints(rs, (3, 20))}, True
    x = relay.var("x", shape=(3, 20), dtype="float32")
    w = c(floats(rs, (7, 20)))
    return fn(make_call("nn.dense", [x, w]), x), {"x": floats(rs, (3, 20))}, False


def _mlas_gemm(rs):
    x = relay.var("x", shape=(3, 20), dtype="float32")
    call = make_call("nn.mlas_gemm", [x, c(floats(rs, (7, 20))), c(floats(rs, (3, 7)))], dict(trans_b=True))
    return fn(call, x), {"x": floats(rs, (3, 20))}, True


def _mlas_erf(rs):
    x = relay.var("x", shape=(2, 3, 5), dtype="float32")
    return fn(make_call("mlas_erf", [x]), x), {"x": floats(rs, (2, 3, 5))}, True


def _mlas_layer_norm(rs):
    x = relay.var("x", shape=(4, 13), dtype="float32")
    call = make_call("nn.mlas_layer_norm", [x, c(floats(rs, (13,))), c(floats(rs, (13,)))], dict(epsilon=1e-5))
    return fn(call, x), {"x": floats(rs, (4, 13))}, True


def _mlas_softmax(rs):
    x = relay.var("x", shape=(3, 21), dtype="float32")
    return fn(make_call("nn.mlas_softmax", [x]), x), {"x": floats(rs, (3, 21))}, True


def _matmul_nbits(rs):
    # K = 150 with block 16: one group of eight blocks, two tail blocks, a zero-padded last block
    x = relay.var("x", shape=(5, 150), dtype="float32")
    w = c(rs.randint(0, 16, (150, 6)), "uint8")
    scale = c(rs.uniform(0.005, 0.02, (10, 6)).astype("float32"))
    zp = c(rs.randint(0, 16, (10, 6)), "uint8")
    call = make_call("nn.matmul_nbits", [x, w, scale, zp, c(floats(rs, (6,)))], dict(bits=4, block_size=16))
    return fn(call, x), {"x": floats(rs, (5, 150))}, True


def _requantize(rs):
    x = relay.var("x", shape=(2, 3, 6), dtype="int32")
    call = make_call("qnn.requantize", [x, c(rs.uniform(0.001, 0.01, 6).astype("float32")), c(0, "int32"), c(0.07),
                                        c(-4, "int32")], dict(axis=2, out_dtype="int8"))
    return fn(call, x), {"x": rs.randint(-50000, 50000, (2, 3, 6)).astype("int32")}, True


def _qbinary(op):
    def make(rs):
        a = relay.var("a", shape=(2, 4, 3), dtype="int8")
        b = relay.var("b", shape=(4, 1), dtype="int8")
        args = [a, b, c(0.04), c(3, "int32"), c(0.03), c(-7, "int32"), c(0.06), c(2, "int32")]
        return fn(make_call(op, args), a, b), {"a": ints(rs, (2, 4, 3)), "b": ints(rs, (4, 1))}, True
    return make


def _qact(op, out_scale=None, out_zp=None, attrs=None):
    def make(rs):
        x = relay.var("x", shape=(4, 9), dtype="int8")
        args = [x, c(0.05), c(-3, "int32"), c(out_scale or 0.04), c(out_zp if out_zp is not None else 1, "int32")]
        return fn(make_call(op, args, attrs), x), {"x": ints(rs, (4, 9))}, True
    return make


def _qsoftmax(rs):
    x = relay.var("x", shape=(3, 10), dtype="int8")
    args = [x, c(0.1), c(0, "int32"), c(1 / 256), c(-128, "int32")]
    return fn(make_call("qnn.softmax", args), x), {"x": ints(rs, (3, 10))}, True


def _quantize(rs):
    x = relay.var("x", shape=(3, 5), dtype="float32")
    call = make_call("qnn.quantize", [x, c(0.03), c(4, "int32")], dict(out_dtype="int8"))
    return fn(call, x), {"x": floats(rs, (3, 5), -5, 5)}, True


def _dequantize(rs):
    x = relay.var("x", shape=(3, 5), dtype="int8")
    call = make_call("qnn.dequantize", [x, c(rs.uniform(0.01, 0.1, 5).astype("float32")), c(0, "int32")],
                     dict(axis=1))
    return fn(call, x), {"x": ints(rs, (3, 5))}, True


def _pool(op, dtype, attrs):
    def make(rs):
        x = relay.var("x", shape=(1, 7, 6, 3), dtype=dtype)
        data = ints(rs, (1, 7, 6, 3), dtype) if dtype.startswith("int") else floats(rs, (1, 7, 6, 3))
        return fn(make_call(op, [x], dict(layout="NHWC", **attrs)), x), {"x": data}, dtype.startswith("int") or \
            op.endswith("max_pool2d")
    return make


def _reduce(op, dtype):
    def make(rs):
        x = relay.var("x", shape=(3, 4, 5), dtype=dtype)
        data = ints(rs, (3, 4, 5), dtype) if dtype.startswith("int") else floats(rs, (3, 4, 5))
        exact = dtype.startswith("int") or op in ("max", "min")
        return fn(make_call(op, [x], dict(axis=(0, 2), keepdims=op == "sum")), x), {"x": data}, exact
    return make


def _qmean(rs):
    x = relay.var("x", shape=(1, 5, 5, 8), dtype="int8")
    args = [x, c(0.05), c(-2, "int32"), c(0.03), c(3, "int32")]
    call = make_call("qnn.mean", args, dict(axis=(1, 2), keepdims=True))
    return fn(call, x), {"x": ints(rs, (1, 5, 5, 8))}, True


def _data_movement(op, attrs, shape=(2, 3, 4)):
    def make(rs):
        x = relay.var("x", shape=shape, dtype="int8")
        return fn(make_call(op, [x], attrs), x), {"x": ints(rs, shape)}, True
    return make


def _concat(rs, quant):
    a = relay.var("a", shape=(2, 3), dtype="uint8" if quant else "int8")
    b = relay.var("b", shape=(2, 5), dtype="uint8" if quant else "int8")
    dt = "uint8" if quant else "int8"
    if quant:
        call = make_call("qnn.concatenate", [relay.Tuple([a, b]), relay.Tuple([c(0.05), c(0.1)]),
                                             relay.Tuple([c(3, "int32"), c(128, "int32")]), c(0.1), c(128, "int32")],
                         dict(axis=1))
    else:
        call = make_call("concatenate", [relay.Tuple([a, b])], dict(axis=1))
    return fn(call, a, b), {"a": ints(rs, (2, 3), dt), "b": ints(rs, (2, 5), dt)}, True


def _split(rs):
    x = relay.var("x", shape=(2, 6), dtype="int8")
    call = make_call("split", [x], dict(indices_or_sections=(1, 4), axis=1))
    return fn(relay.Tuple([relay.TupleGetItem(call, i) for i in range(3)]), x), {"x": ints(rs, (2, 6))}, True


def _batch_norm(rs):
    x = relay.var("x", shape=(2, 3, 4), dtype="float32")
    args = [x, c(floats(rs, (3,))), c(floats(rs, (3,))), c(floats(rs, (3,))), c(floats(rs, (3,), 0.5, 2))]
    call = make_call("nn.batch_norm", args, dict(axis=1))
    return fn(relay.TupleGetItem(call, 0), x), {"x": floats(rs, (2, 3, 4))}, True


def _softmax(op):
    def make(rs):
        x = relay.var("x", shape=(3, 7), dtype="float32")
        return fn(make_call(op, [x]), x), {"x": floats(rs, (3, 7))}, False
    return make


def _pad(rs):
    x = relay.var("x", shape=(1, 3, 4, 2), dtype="int8")
    call = make_call("nn.pad", [x, c(-5, "int8")], dict(pad_width=((0, 0), (1, 2), (0, 1), (0, 0))))
    return fn(call, x), {"x": ints(rs, (1, 3, 4, 2))}, True


def _bias_add(rs):
    x = relay.var("x", shape=(2, 3, 4), dtype="int32")
    call = make_call("nn.bias_add", [x, c(ints(rs, (3,), "int32"), "int32")], dict(axis=1))
    return fn(call, x), {"x": ints(rs, (2, 3, 4), "int32")}, True


def _clip(rs):
    x = relay.var("x", shape=(4, 6), dtype="int8")
    return fn(make_call("clip", [x], dict(a_min=-10.5, a_max=20.2)), x), {"x": ints(rs, (4, 6))}, True


def _cast(rs):
    x = relay.var("x", shape=(4, 6), dtype="float32")
    return fn(make_call("cast", [x], dict(dtype="int8")), x), {"x": floats(rs, (4, 6), -300, 300)}, True


def _resize(rs):
    x = relay.var("x", shape=(1, 3, 4, 2), dtype="int8")
    call = make_call("image.resize2d", [x], dict(size=(7, 5), layout="NHWC", method="nearest_neighbor",
                                                 coordinate_transformation_mode="asymmetric",
                                                 rounding_method="floor"))
    return fn(call, x), {"x": ints(rs, (1, 3, 4, 2))}, True


def _annotation(op):
    def make(rs):
        x = relay.var("x", shape=(3, 4), dtype="int8")
        return fn(make_call(op, [x], dict(compiler="npu")), x), {"x": ints(rs, (3, 4))}, True
    return make


CASES = {
    "abs": _unary_int("abs"), "negative": _unary_int("negative"), "copy": _unary_int("copy"),
    "exp": _unary_float("exp"), "sqrt": _unary_float("sqrt", 0.0, 9.0), "rsqrt": _unary_float("rsqrt", 0.1, 9.0),
    "tanh": _unary_float("tanh"), "sigmoid": _unary_float("sigmoid"), "round": _unary_float("round"),
    "floor": _unary_float("floor"), "nn.relu": _unary_float("nn.relu"), "nn.leaky_relu": _unary_float("nn.leaky_relu"),
    "add": _binary("add", "int8"), "subtract": _binary("subtract", "int16"), "multiply": _binary("multiply", "int8"),
    "divide": _binary("divide", "int32"), "floor_divide": _binary("floor_divide", "int32"),
    "maximum": _binary("maximum", "float32"),
    "minimum": _binary("minimum", "uint8"),
    "clip": _clip, "cast": _cast, "nn.pad": _pad, "nn.bias_add": _bias_add, "nn.batch_norm": _batch_norm,
    "nn.conv2d": _float_conv, "nn.conv2d_transpose": _float_conv_t,
    "nn.matmul_nbits": _matmul_nbits,
    "nn.dense": lambda rs: _dense(rs, False), "nn.mlas_gemm": _mlas_gemm,
    "mlas_erf": _mlas_erf, "nn.mlas_layer_norm": _mlas_layer_norm, "nn.mlas_softmax": _mlas_softmax, "qnn.dense": lambda rs: _dense(rs, True),
    "qnn.conv2d": _qnn_conv, "qnn.conv2d_transpose": lambda rs: _qnn_conv(rs, transpose=True),
    "qnn.requantize": _requantize, "qnn.add": _qbinary("qnn.add"), "qnn.subtract": _qbinary("qnn.subtract"),
    "qnn.mul": _qbinary("qnn.mul"), "qnn.quantize": _quantize, "qnn.dequantize": _dequantize,
    "qnn.sigmoid": _qact("qnn.sigmoid", 1 / 256, -128), "qnn.tanh": _qact("qnn.tanh", 1 / 128, 0),
    "qnn.hardswish": _qact("qnn.hardswish"), "qnn.leaky_relu": _qact("qnn.leaky_relu", attrs=dict(alpha=0.2)),
    "qnn.softmax": _qsoftmax, "qnn.mean": _qmean,
    "nn.max_pool2d": _pool("nn.max_pool2d", "int8", dict(pool_size=(3, 2), strides=(2, 2), padding=(1, 0, 1, 1))),
    "nn.avg_pool2d": _pool("nn.avg_pool2d", "int8", dict(pool_size=(3, 3), strides=(2, 1), padding=(1, 1, 1, 1))),
    "nn.global_avg_pool2d": _pool("nn.global_avg_pool2d", "int8", {}),
    "nn.global_max_pool2d": _pool("nn.global_max_pool2d", "float32", {}),
    "sum": _reduce("sum", "int8"), "mean": _reduce("mean", "int16"), "max": _reduce("max", "float32"),
    "min": _reduce("min", "int8"),
    "nn.softmax": _softmax("nn.softmax"), "nn.log_softmax": _softmax("nn.log_softmax"),
    "reshape": _data_movement("reshape", dict(newshape=(4, -1))),
    "squeeze": _data_movement("squeeze", dict(axis=(1,)), (2, 1, 4)),
    "expand_dims": _data_movement("expand_dims", dict(axis=1, num_newaxis=2)),
    "nn.batch_flatten": _data_movement("nn.batch_flatten", None),
    "transpose": _data_movement("transpose", dict(axes=(2, 0, 1))),
    "strided_slice": _data_movement("strided_slice", dict(begin=(1, 0, 3), end=(2, 3, 0), strides=(1, 2, -2))),
    "concatenate": lambda rs: _concat(rs, False), "qnn.concatenate": lambda rs: _concat(rs, True),
    "split": _split, "image.resize2d": _resize,
    "annotation.compiler_begin": _annotation("annotation.compiler_begin"),
    "annotation.compiler_end": _annotation("annotation.compiler_end"),
}


def run_both(func, inputs):
    """(reference outputs from byoc.evaluate, CPU outputs from byoc.build, the executable).

    When the reference rejects the inputs at run time (ExecutionError), the CPU module must reject them too;
    both then return None."""
    mod = byoc.IRModule.from_expr(func)
    exe = byoc.build(mod, target="llvm")
    try:
        ref = byoc.evaluate(mod, inputs)
    except byoc.ExecutionError:
        try:
            exe.run(inputs)
        except byoc.ExecutionError:
            return [], [], exe
        raise AssertionError("the reference raised ExecutionError but the CPU module ran")
    return ref, exe.run(inputs), exe


def assert_matches(ref, out, exact: bool, what: str = ""):
    assert len(ref) == len(out), what
    for i, (r, o) in enumerate(zip(ref, out)):
        assert r.shape == o.shape and r.dtype == o.dtype, f"{what} output {i}: {o.shape} {o.dtype} vs {r.shape} {r.dtype}"
        if exact or r.dtype.kind != "f":
            if not np.array_equal(r, o, equal_nan=r.dtype.kind == "f"):
                bad = np.argwhere(r != o)
                raise AssertionError(f"{what} output {i}: {len(bad)} mismatches, first at {bad[0].tolist()}: "
                                     f"cpu {o[tuple(bad[0])]} vs ref {r[tuple(bad[0])]}")
        else:
            np.testing.assert_allclose(o, r, rtol=4e-6, atol=1e-6, err_msg=what)

from backend_cases_more import MORE_CASES  # noqa: E402  (ops added with the wider TFLite coverage)

CASES.update(MORE_CASES)

from backend_cases_tvm import TVM_CASES  # noqa: E402  (the TVM-compatibility ops)

CASES.update(TVM_CASES)
