"""Randomised single-op and fused cases (hypothesis, derandomised): the CPU backend must agree bit for bit with
byoc.evaluate. 1,000+ cases in total across the three tests."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import byoc
from backend_cases import assert_matches, c, floats, ints, run_both
from byoc import relay
from byoc.relay.op import make_call

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)

SHAPES = [(7,), (3, 5), (2, 3, 4), (1, 4, 4, 3)]
INT_DTYPES = ["int8", "uint8", "int16", "int32"]


def _broadcast_partner(rs, shape):
    """A shape that broadcasts against ``shape`` (some axes set to 1, maybe fewer leading axes)."""
    drop = rs.randint(0, len(shape) + 1)
    out = [1 if rs.rand() < 0.4 else d for d in shape[drop:]]
    return tuple(out)


def _elementwise_step(rs, x, shape, dtype, extra):
    """Apply one random elementwise/broadcast op to ``x``; returns (expr, dtype)."""
    kind = rs.choice(["binary", "qbinary", "requant", "clip", "cast", "lut", "relu", "quantize"])
    if kind == "binary":
        op = rs.choice(["add", "subtract", "multiply", "maximum", "minimum"])
        pshape = _broadcast_partner(rs, shape)
        v = relay.var(f"v{len(extra)}", shape=pshape, dtype=dtype)
        extra[v.name_hint] = (v, ints(rs, pshape, dtype) if dtype != "float32" else floats(rs, pshape))
        return make_call(op, [x, v] if rs.rand() < 0.5 else [v, x]), dtype
    if dtype == "float32":
        return make_call("qnn.quantize", [x, c(rs.uniform(0.01, 0.1)), c(int(rs.randint(-10, 10)), "int32")],
                         dict(out_dtype="int8")), "int8"
    if kind == "qbinary" and dtype in ("int8", "uint8"):
        op = rs.choice(["qnn.add", "qnn.subtract", "qnn.mul"])
        pshape = _broadcast_partner(rs, shape)
        v = relay.var(f"v{len(extra)}", shape=pshape, dtype=dtype)
        extra[v.name_hint] = (v, ints(rs, pshape, dtype))
        lo, hi = (-20, 20) if dtype == "int8" else (100, 150)
        s1, s2 = rs.uniform(0.01, 0.05, 2)
        so = rs.uniform(max(s1, s2) * 0.3, 0.2) if op != "qnn.mul" else rs.uniform(0.001, 0.01)
        args = [x, v, c(s1), c(int(rs.randint(lo, hi)), "int32"), c(s2), c(int(rs.randint(lo, hi)), "int32"), c(so),
                c(int(rs.randint(lo, hi)), "int32")]
        return make_call(op, args), dtype
    if kind == "requant" or kind == "qbinary":
        out_dtype = rs.choice(["int8", "uint8", "int16"])
        rounding = rs.choice(["TFLITE", "TFLITE_FLOAT", "UPWARD", "TONEAREST"])
        axis = len(shape) - 1
        n = shape[axis]
        scale = rs.uniform(0.0005, 0.5, n if rs.rand() < 0.5 else 1).astype("float32")
        lo, hi = np.iinfo(out_dtype).min, np.iinfo(out_dtype).max
        args = [x, c(scale), c(int(rs.randint(-5, 5)), "int32"), c(rs.uniform(0.01, 0.2)),
                c(int(rs.randint(lo // 4, hi // 4 + 1)), "int32")]
        return make_call("qnn.requantize", args, dict(axis=axis, rounding=rounding, out_dtype=out_dtype)), out_dtype
    if kind == "clip":
        lo = float(rs.uniform(-100, 50))
        return make_call("clip", [x], dict(a_min=lo, a_max=lo + float(rs.uniform(0, 150)))), dtype
    if kind == "cast":
        to = rs.choice(["int8", "uint8", "int16", "int32", "float32"])
        return make_call("cast", [x], dict(dtype=to)), to
    if kind == "lut" and dtype in ("int8", "uint8"):
        op = rs.choice(["qnn.sigmoid", "qnn.tanh", "qnn.hardswish", "qnn.leaky_relu"])
        zp = int(rs.randint(-10, 10)) + (128 if dtype == "uint8" else 0)
        out = {"qnn.sigmoid": (1 / 256, -128 if dtype == "int8" else 0),
               "qnn.tanh": (1 / 128, 0 if dtype == "int8" else 128)}.get(op, (rs.uniform(0.02, 0.1), zp))
        attrs = dict(alpha=float(rs.uniform(-0.5, 0.9))) if op == "qnn.leaky_relu" else None
        args = [x, c(rs.uniform(0.01, 0.1)), c(zp, "int32"), c(out[0]), c(out[1], "int32")]
        return make_call(op, args, attrs), dtype
    return make_call("nn.relu", [x]), dtype


@settings(max_examples=400, **SETTINGS)
@given(seed=st.integers(0, 2**31 - 1), shape_i=st.integers(0, len(SHAPES) - 1), depth=st.integers(1, 3),
       dtype=st.sampled_from(INT_DTYPES + ["float32"]))
def test_random_elementwise_chains(seed, shape_i, depth, dtype):
    rs = np.random.RandomState(seed)
    shape = SHAPES[shape_i]
    x = relay.var("x", shape=shape, dtype=dtype)
    extra: dict = {}
    e, dt = x, dtype
    for _ in range(depth):
        e, dt = _elementwise_step(rs, e, shape, dt, extra)
    inputs = {"x": ints(rs, shape, dtype) if dtype != "float32" else floats(rs, shape, -50, 50)}
    params = [x] + [v for v, _ in extra.values()]
    inputs.update({k: a for k, (_, a) in extra.items()})
    ref, out, _ = run_both(relay.Function(params, e), inputs)
    assert_matches(ref, out, True, f"seed {seed}")


@settings(max_examples=300, **SETTINGS)
@given(seed=st.integers(0, 2**31 - 1), ksize=st.sampled_from([1, 3]), stride=st.sampled_from([1, 2]),
       depthwise=st.booleans(), dtype=st.sampled_from(["int8", "uint8"]), padded=st.booleans(),
       dense=st.booleans())
def test_random_fused_qnn_anchor(seed, ksize, stride, depthwise, dtype, padded, dense):
    """qnn.conv2d / qnn.dense → bias_add → requantize → clip (→ qnn.add): one fused kernel."""
    rs = np.random.RandomState(seed)
    cin = int(rs.choice([3, 8, 16, 20]))
    cout = cin if depthwise else int(rs.choice([5, 16, 33]))
    zp_in = int(rs.randint(-128, 128)) if dtype == "int8" else int(rs.randint(0, 256))
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    if dense:
        x = relay.var("x", shape=(int(rs.randint(1, 9)), cin * 4), dtype=dtype)
        w = ints(rs, (cout, cin * 4), "int8")
        acc = make_call("qnn.dense", [x, c(w, "int8"), c(zp_in, "int32"), c(0, "int32"), c(0.05), c(0.01)])
        axis = 1
    else:
        h = int(rs.randint(ksize, 9))
        x = relay.var("x", shape=(1, h, h + 1, cin), dtype=dtype)
        groups = cin if depthwise else 1
        w = ints(rs, (ksize, ksize, cin // groups, cout), "int8")
        pad = tuple(int(v) for v in rs.randint(0, ksize, 4)) if padded else (0, 0, 0, 0)
        acc = make_call("qnn.conv2d", [x, c(w, "int8"), c(zp_in, "int32"), c(0, "int32"), c(0.05),
                                       c(rs.uniform(0.005, 0.02, cout).astype("float32"))],
                        dict(strides=(stride, stride), padding=pad, groups=groups, data_layout="NHWC",
                             kernel_layout="HWIO", out_dtype="int32"))
        axis = 3
    bias = rs.randint(-20000, 20000, cout).astype("int32")
    e = make_call("nn.bias_add", [acc, c(bias, "int32")], dict(axis=axis))
    scales = (rs.uniform(1e-4, 5e-3, cout) if rs.rand() < 0.8 else np.full(cout, rs.uniform(1e-4, 5e-3)))
    zp_out = int(rs.randint(lo, hi + 1)) // 2
    e = make_call("qnn.requantize", [e, c(scales.astype("float32")), c(0, "int32"), c(0.1), c(zp_out, "int32")],
                  dict(axis=axis, out_dtype=dtype, rounding="TFLITE" if rs.rand() < 0.8 else "TFLITE_FLOAT"))
    if rs.rand() < 0.6:
        e = make_call("clip", [e], dict(a_min=float(zp_out), a_max=float(hi)))
    params, inputs = [x], {"x": ints(rs, x.type_annotation.shape, dtype)}
    if rs.rand() < 0.4:
        out_t = relay.transform.InferType()(byoc.IRModule.from_expr(relay.Function([x], e)))["main"].body.checked_type
        r = relay.var("r", shape=out_t.shape, dtype=dtype)
        e = make_call("qnn.add", [e, r, c(0.1), c(zp_out, "int32"), c(0.08), c(zp_out, "int32"), c(0.15),
                                  c(zp_out, "int32")])
        params.append(r)
        inputs["r"] = ints(rs, out_t.shape, dtype)
    ref, out, exe = run_both(relay.Function(params, e), inputs)
    assert len(exe.groups) == 1, [g.name for g in exe.groups]
    assert_matches(ref, out, True, f"seed {seed}")


@settings(max_examples=300, **SETTINGS)
@given(seed=st.integers(0, 2**31 - 1), op=st.sampled_from(["nn.max_pool2d", "nn.avg_pool2d", "qnn.mean", "sum",
                                                          "max", "mean", "qnn.softmax", "transpose", "nn.pad",
                                                          "strided_slice", "reshape"]),
       dtype=st.sampled_from(["int8", "uint8"]))
def test_random_pool_reduce_movement(seed, op, dtype):
    rs = np.random.RandomState(seed)
    shape = (1, int(rs.randint(2, 8)), int(rs.randint(2, 8)), int(rs.randint(1, 6)))
    x = relay.var("x", shape=shape, dtype=dtype)
    if op in ("nn.max_pool2d", "nn.avg_pool2d"):
        k = (int(rs.randint(1, 4)), int(rs.randint(1, 4)))
        pad = tuple(int(min(v, kk - 1)) for v, kk in zip(rs.randint(0, 2, 4), k + k))
        attrs = dict(pool_size=k, strides=(int(rs.randint(1, 3)), int(rs.randint(1, 3))), padding=pad,
                     layout="NHWC", ceil_mode=bool(rs.rand() < 0.3))
        if op == "nn.avg_pool2d":
            attrs["count_include_pad"] = bool(rs.rand() < 0.3)
        e = make_call(op, [x], attrs)
    elif op == "qnn.mean":
        zp = int(rs.randint(-10, 10)) + (128 if dtype == "uint8" else 0)
        e = make_call(op, [x, c(rs.uniform(0.01, 0.1)), c(zp, "int32"), c(rs.uniform(0.01, 0.1)), c(zp, "int32")],
                      dict(axis=(1, 2), keepdims=bool(rs.rand() < 0.5)))
    elif op in ("sum", "max", "mean"):
        axes = tuple(int(a) for a in sorted(set(rs.randint(0, 4, int(rs.randint(1, 3))))))
        e = make_call(op, [x], dict(axis=axes, keepdims=bool(rs.rand() < 0.5)))
    elif op == "qnn.softmax":
        zp_out = -128 if dtype == "int8" else 0
        e = make_call(op, [x, c(rs.uniform(0.02, 0.5)), c(0, "int32"), c(1 / 256), c(zp_out, "int32")])
    elif op == "transpose":
        e = make_call(op, [x], dict(axes=tuple(int(a) for a in rs.permutation(4))))
    elif op == "nn.pad":
        pw = tuple((int(rs.randint(0, 3)), int(rs.randint(0, 3))) for _ in range(4))
        e = make_call(op, [x, c(int(rs.randint(0, 100)), dtype)], dict(pad_width=pw))
    elif op == "strided_slice":
        e = make_call(op, [x], dict(begin=(0, 1, 0), end=(1, shape[1], shape[2]), strides=(1, int(rs.randint(1, 3)), 1)))
    else:
        e = make_call(op, [x], dict(newshape=(-1, shape[3])))
    ref, out, _ = run_both(relay.Function([x], e), {"x": ints(rs, shape, dtype)})
    assert_matches(ref, out, True, f"{op} seed {seed}")
