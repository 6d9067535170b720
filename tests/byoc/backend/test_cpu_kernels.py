"""The CPU backend's fast int8 schedules against byoc.evaluate, bit for bit, on the shapes that select their
code paths: 32-channel depthwise blocks with channel tails, padded borders and interior rows, the GEMM's packed
rows with masked channel tails and padded blocks, biases folded into the accumulators, range-bounded
requantization (and its fallback when the range is too wide), vector and scalar epilogues."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from backend_cases import assert_matches, c, ints, run_both
from byoc import relay
from byoc.relay.op import make_call


def _epilogue(rs, acc, cout, axis, dtype, bias_range=20000, tail=None, extra=None):
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    bias = rs.randint(-bias_range, bias_range, cout, dtype=np.int64).astype("int32")
    e = make_call("nn.bias_add", [acc, c(bias, "int32")], dict(axis=axis))
    zp_out = int(rs.randint(lo, hi + 1)) // 2
    e = make_call("qnn.requantize", [e, c(rs.uniform(1e-4, 5e-3, cout).astype("float32")), c(0, "int32"), c(0.1),
                                     c(zp_out, "int32")], dict(axis=axis, out_dtype=dtype, rounding="TFLITE"))
    if tail == "clip":
        e = make_call("clip", [e], dict(a_min=float(zp_out), a_max=float(hi)))
    elif tail == "add":
        r = relay.var("r", shape=extra, dtype=dtype)
        e = make_call("qnn.add", [e, r, c(0.1), c(zp_out, "int32"), c(0.08), c(-3 if dtype == "int8" else 120, "int32"),
                                  c(0.15), c(zp_out, "int32")])
    elif tail == "tanh":  # an epilogue op without a vector form: the scalar epilogue path
        e = make_call("qnn.tanh", [e, c(0.1), c(zp_out, "int32"), c(1 / 128), c(0 if dtype == "int8" else 128, "int32")])
    return e


def _check(rs, x, e, dtype, out_shape=None, tail=None):
    params, inputs = [x], {"x": ints(rs, x.type_annotation.shape, dtype)}
    if tail == "add":
        r = [v for v in byoc.ir.traversal.post_order(e) if isinstance(v, relay.Var) and v.name_hint == "r"][0]
        params.append(r)
        inputs["r"] = ints(rs, out_shape, dtype)
    ref, out, exe = run_both(relay.Function(params, e), inputs)
    assert len(exe.groups) == 1, [g.name for g in exe.groups]
    assert_matches(ref, out, True)


DEPTHWISE = [  # (channels, kernel, stride, padding, dilation, dtype, tail, width)
    (32, 3, 1, (0, 0, 0, 0), 1, "int8", "clip", 9),
    (48, 3, 1, (1, 1, 1, 1), 1, "int8", "clip", 10),
    (40, 3, 2, (0, 1, 1, 0), 1, "uint8", "add", 11),
    (17, 5, 1, (2, 2, 2, 2), 1, "int8", None, 9),
    (64, 3, 2, (1, 0, 2, 1), 1, "uint8", "clip", 12),
    (33, 3, 1, (2, 2, 2, 2), 2, "int8", "add", 9),
    (144, 3, 1, (1, 1, 1, 1), 1, "int8", "tanh", 6),
]


@pytest.mark.parametrize("cfg", DEPTHWISE, ids=[f"dw{i}" for i in range(len(DEPTHWISE))])
def test_depthwise_schedules(cfg):
    ch, k, s, pad, dil, dtype, tail, width = cfg
    rs = np.random.RandomState(ch * 7 + k)
    x = relay.var("x", shape=(1, 7, width, ch), dtype=dtype)
    zp_in = int(rs.randint(-128, 128)) if dtype == "int8" else int(rs.randint(0, 256))
    w = ints(rs, (k, k, 1, ch), "int8")
    acc = make_call("qnn.conv2d", [x, c(w, "int8"), c(zp_in, "int32"), c(0, "int32"), c(0.05),
                                   c(rs.uniform(0.005, 0.02, ch).astype("float32"))],
                    dict(strides=(s, s), padding=pad, dilation=(dil, dil), groups=ch, data_layout="NHWC",
                         kernel_layout="HWIO", out_dtype="int32"))
    out_shape = byoc.relay.transform.InferType()(byoc.IRModule.from_expr(relay.Function([x], acc)))["main"] \
        .body.checked_type.shape
    e = _epilogue(rs, acc, ch, 3, dtype, tail=tail, extra=out_shape)
    _check(rs, x, e, dtype, out_shape, tail)


GEMM = [  # (cin, cout, kernel, stride, padding, dtype, tail, bias_range)
    (16, 96, 1, 1, (0, 0, 0, 0), "int8", "clip", 20000),
    (24, 24, 1, 1, (0, 0, 0, 0), "int8", "add", 20000),
    (20, 40, 1, 2, (0, 0, 0, 0), "uint8", "clip", 20000),
    (3, 32, 3, 2, (0, 0, 0, 0), "int8", "clip", 20000),
    (3, 33, 3, 1, (1, 1, 1, 1), "uint8", None, 20000),
    (72, 80, 1, 1, (0, 0, 0, 0), "int8", "add", 20000),
    (16, 48, 1, 1, (0, 0, 0, 0), "int8", "tanh", 20000),
    (16, 40, 1, 1, (0, 0, 0, 0), "int8", "clip", 2**31 - 1),  # too wide a range for the short rounding
]


@pytest.mark.parametrize("cfg", GEMM, ids=[f"gemm{i}" for i in range(len(GEMM))])
def test_gemm_schedules(cfg):
    cin, cout, k, s, pad, dtype, tail, bias_range = cfg
    rs = np.random.RandomState(cin * 131 + cout)
    x = relay.var("x", shape=(1, 6, 7, cin), dtype=dtype)
    zp_in = int(rs.randint(-128, 128)) if dtype == "int8" else int(rs.randint(0, 256))
    w = ints(rs, (k, k, cin, cout), "int8")
    acc = make_call("qnn.conv2d", [x, c(w, "int8"), c(zp_in, "int32"), c(0, "int32"), c(0.05),
                                   c(rs.uniform(0.005, 0.02, cout).astype("float32"))],
                    dict(strides=(s, s), padding=pad, groups=1, data_layout="NHWC", kernel_layout="HWIO",
                         out_dtype="int32"))
    out_shape = byoc.relay.transform.InferType()(byoc.IRModule.from_expr(relay.Function([x], acc)))["main"] \
        .body.checked_type.shape
    e = _epilogue(rs, acc, cout, 3, dtype, bias_range, tail, out_shape)
    _check(rs, x, e, dtype, out_shape, tail)


@pytest.mark.parametrize("rows,units", [(1, 1000), (3, 24), (5, 7)])
def test_dense_schedule(rows, units):
    rs = np.random.RandomState(rows * 1000 + units)
    x = relay.var("x", shape=(rows, 40), dtype="int8")
    acc = make_call("qnn.dense", [x, c(ints(rs, (units, 40), "int8"), "int8"), c(-5, "int32"), c(0, "int32"),
                                  c(0.05), c(0.01)], dict(units=units))
    _check(rs, x, _epilogue(rs, acc, units, 1, "int8"), "int8")


def test_int32_output_without_epilogue():
    """A conv whose int32 accumulators are the group's output (the vector path's cast-only epilogue)."""
    rs = np.random.RandomState(5)
    x = relay.var("x", shape=(1, 5, 9, 40), dtype="int8")
    acc = make_call("qnn.conv2d", [x, c(ints(rs, (3, 3, 1, 40), "int8"), "int8"), c(7, "int32"), c(0, "int32"),
                                   c(0.05), c(0.01)],
                    dict(padding=(1, 1, 1, 1), groups=40, data_layout="NHWC", kernel_layout="HWIO", out_dtype="int32"))
    _check(rs, x, acc, "int8")


@pytest.mark.parametrize("groups,pad_value,before", [(24, 11, None), (1, 11, None), (24, 12, None), (1, 11, "transpose")])
def test_pad_read_through_by_conv(groups, pad_value, before):
    """nn.pad (H/W only, value = the conv's input zero point) → qnn.conv2d: the conv reads through the pad and
    the padded tensor is never materialised; any other pad value keeps the pad as its own kernel."""
    rs = np.random.RandomState(groups + pad_value)
    shape = (1, 24, 6, 7) if before == "transpose" else (1, 6, 7, 24)
    x = relay.var("x", shape=shape, dtype="int8")
    v = make_call("transpose", [x], dict(axes=(0, 2, 3, 1))) if before == "transpose" else x
    padded = make_call("nn.pad", [v, c(pad_value, "int8")], dict(pad_width=((0, 0), (1, 2), (2, 1), (0, 0))))
    cout = 24 if groups > 1 else 40
    w = ints(rs, (3, 3, 24 // groups, cout), "int8")
    acc = make_call("qnn.conv2d", [padded, c(w, "int8"), c(11, "int32"), c(0, "int32"), c(0.05),
                                   c(rs.uniform(0.005, 0.02, cout).astype("float32"))],
                    dict(strides=(1, 1), padding=(1, 0, 0, 1), groups=groups, data_layout="NHWC",
                         kernel_layout="HWIO", out_dtype="int32"))
    e = _epilogue(rs, acc, cout, 3, "int8", tail="clip")
    ref, out, exe = run_both(relay.Function([x], e), {"x": ints(rs, shape, "int8")})
    assert_matches(ref, out, True)
    absorbed = pad_value == 11
    assert sum(g.data_pad is not None for g in exe.groups) == int(absorbed)
    assert len(exe.groups) == (1 if absorbed else 2) + (before is not None)
