"""Backend registry-walk cases of the ops added with the wider TFLite coverage (stack, take, argmax, argmin,
nn.depth_to_space, nn.space_to_depth, qnn.prelu, nn.batch_matmul, qnn.batch_matmul, broadcast_to, bilinear
image.resize2d); merged into ``backend_cases.CASES``."""
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


def _batch_matmul(quantized):
    def make(rs):
        a = relay.var("a", shape=(3, 5, 4), dtype="int8" if quantized else "float32")  # transpose_a: [B, K, M]
        b = relay.var("b", shape=(1, 6, 5), dtype=a.type_annotation.dtype)             # batch 1 broadcasts
        if quantized:
            call = relay.qnn.op.batch_matmul(a, b, 3, -2, 0.1, 0.2, transpose_a=True)
            ins = {"a": _ints(rs, (3, 5, 4)), "b": _ints(rs, (1, 6, 5))}
        else:
            call = relay.nn.batch_matmul(a, b, transpose_a=True)
            ins = {"a": rs.standard_normal((3, 5, 4)).astype("float32"),
                   "b": rs.standard_normal((1, 6, 5)).astype("float32")}
        return relay.Function([a, b], call), ins, True  # float: the same sequential sum as the reference
    return make


def _broadcast_to(rs):
    x = relay.var("x", shape=(3, 1, 4), dtype="int8")
    return relay.Function([x], relay.broadcast_to(x, (2, 3, 5, 4))), {"x": _ints(rs, (3, 1, 4))}, True


def _resize_linear(dtype, layout, mode):
    def make(rs):
        shape = (2, 3, 4, 3) if layout == "NHWC" else (2, 3, 3, 4)
        x = relay.var("x", shape=shape, dtype=dtype)
        call = relay.image.resize2d(x, size=(7, 5), layout=layout, method="linear",
                                    coordinate_transformation_mode=mode)
        v = rs.uniform(-3, 3, shape).astype(dtype) if dtype == "float32" else _ints(rs, shape, dtype)
        return relay.Function([x], call), {"x": v}, True
    return make


MORE_CASES.update({
    "nn.batch_matmul": _batch_matmul(False), "qnn.batch_matmul": _batch_matmul(True), "broadcast_to": _broadcast_to,
    # bilinear resizing has its own kernel lowering (image.resize2d's nearest case is in backend_cases.CASES)
    "image.resize2d[linear,int8]": _resize_linear("int8", "NHWC", "half_pixel"),
    "image.resize2d[linear,uint8]": _resize_linear("uint8", "NCHW", "align_corners"),
    "image.resize2d[linear,int16]": _resize_linear("int16", "NHWC", "asymmetric"),
    "image.resize2d[linear,float32]": _resize_linear("float32", "NCHW", "half_pixel"),
})


def _qnn_log_softmax(dtype):
    def make(rs):
        x = relay.var("x", shape=(3, 40, 2), dtype=dtype)
        zp = 127 if dtype == "int8" else 255
        call = relay.qnn.op.log_softmax(x, 0.08, 3, 0.0625, zp, axis=1)  # a non-last axis
        return relay.Function([x], call), {"x": _ints(rs, (3, 40, 2), dtype)}, True
    return make


def _qnn_squared_difference(rs):
    a = relay.var("a", shape=(2, 3, 4), dtype="int8")
    b = relay.var("b", shape=(3, 1), dtype="int8")
    call = relay.qnn.op.squared_difference(a, b, 0.05, 3, 0.03, -7, 0.2, -120)
    return relay.Function([a, b], call), {"a": _ints(rs, (2, 3, 4)), "b": _ints(rs, (3, 1))}, True


def _qnn_rsqrt(rs):
    x = relay.var("x", shape=(4, 9), dtype="int8")
    call = relay.qnn.op.rsqrt(x, 0.03, -20, 0.04, -100)
    return relay.Function([x], call), {"x": rs.randint(-20, 128, size=(4, 9)).astype("int8")}, True


MORE_CASES.update({
    "qnn.log_softmax": _qnn_log_softmax("int8"), "qnn.log_softmax[uint8]": _qnn_log_softmax("uint8"),
    "qnn.squared_difference": _qnn_squared_difference, "qnn.rsqrt": _qnn_rsqrt,
})


def _mirror_pad(mode):
    def make(rs):
        x = relay.var("x", shape=(3, 4, 2), dtype="int8")
        call = relay.nn.mirror_pad(x, ((2, 1), (0, 3), (1, 1)), mode=mode)  # the largest pads each mode allows
        return relay.Function([x], call), {"x": _ints(rs, (3, 4, 2))}, True
    return make


def _tile(rs):
    x = relay.var("x", shape=(3, 1, 4), dtype="uint8")
    return relay.Function([x], relay.tile(x, (2, 1, 3, 2))), {"x": _ints(rs, (3, 1, 4), "uint8")}, True


def _compare(op, dtype):
    def make(rs):
        a = relay.var("a", shape=(2, 3, 4), dtype=dtype)
        b = relay.var("b", shape=(3, 1), dtype=dtype)
        if dtype == "float32":  # few distinct values (ties), and a NaN (unordered) in each operand
            va = rs.randint(-2, 3, size=(2, 3, 4)).astype(dtype)
            vb = rs.randint(-2, 3, size=(3, 1)).astype(dtype)
            va[0, 0, 0] = vb[1, 0] = np.nan
        else:
            va, vb = _ints(rs, (2, 3, 4), dtype) // 64, _ints(rs, (3, 1), dtype) // 64
        return relay.Function([a, b], make_call(op, [a, b])), {"a": va, "b": vb}, True
    return make


def _qnn_compare(op, dtype):
    def make(rs):
        a = relay.var("a", shape=(2, 3, 4), dtype=dtype)
        b = relay.var("b", shape=(4,), dtype=dtype)
        zp = 0 if dtype == "int8" else 128
        call = getattr(relay.qnn.op, op[4:])(a, b, 0.004, zp + 3, 0.0031, zp - 5)
        return relay.Function([a, b], call), {"a": _ints(rs, (2, 3, 4), dtype), "b": _ints(rs, (4,), dtype)}, True
    return make


def _where(rs):
    c = relay.var("c", shape=(2, 1, 4), dtype="bool")
    x = relay.var("x", shape=(3, 4), dtype="int16")
    y = relay.var("y", shape=(2, 3, 1), dtype="int16")
    ins = {"c": rs.rand(2, 1, 4) < 0.5, "x": _ints(rs, (3, 4), "int16"), "y": _ints(rs, (2, 3, 1), "int16")}
    return relay.Function([c, x, y], relay.where(c, x, y)), ins, True


def _gather_nd(rs):
    x = relay.var("x", shape=(4, 5, 3), dtype="float32")
    i = relay.var("i", shape=(2, 3, 2), dtype="int32")  # TVM layout: [M = 2, Y = (3, 2)]
    idx = np.stack([rs.randint(0, 4, size=(3, 2)), rs.randint(0, 5, size=(3, 2))]).astype("int32")
    return relay.Function([x, i], relay.gather_nd(x, i)), {"x": rs.standard_normal((4, 5, 3)).astype("float32"),
                                                          "i": idx}, True


def _qnn_abs(dtype, s_out):
    def make(rs):
        x = relay.var("x", shape=(4, 9), dtype=dtype)
        zp_in, zp_out = (-7, -100) if dtype == "int8" else (0, 0)
        call = relay.qnn.op.abs(x, 0.05, zp_in, s_out, zp_out)
        return relay.Function([x], call), {"x": _ints(rs, (4, 9), dtype)}, True
    return make


MORE_CASES.update({
    "nn.mirror_pad": _mirror_pad("SYMMETRIC"), "nn.mirror_pad[REFLECT]": _mirror_pad("REFLECT"), "tile": _tile,
    "equal": _compare("equal", "float32"), "not_equal": _compare("not_equal", "float32"),
    "less": _compare("less", "int8"), "less_equal": _compare("less_equal", "uint8"),
    "greater": _compare("greater", "int32"), "greater_equal": _compare("greater_equal", "float32"),
    "qnn.equal": _qnn_compare("qnn.equal", "int8"), "qnn.not_equal": _qnn_compare("qnn.not_equal", "uint8"),
    "qnn.less": _qnn_compare("qnn.less", "int8"), "qnn.less_equal": _qnn_compare("qnn.less_equal", "uint8"),
    "qnn.greater": _qnn_compare("qnn.greater", "int8"),
    "qnn.greater_equal": _qnn_compare("qnn.greater_equal", "uint8"),
    "where": _where, "gather_nd": _gather_nd,
    "qnn.abs": _qnn_abs("int8", 0.031), "qnn.abs[same scale]": _qnn_abs("int8", 0.05),
    "qnn.abs[int16]": _qnn_abs("int16", 0.07),
})


def _qnn_svdf(state: str):
    """SVDF with the data and weights as inputs (int16 state, and int8 state with a wrapping zero point)."""
    def make(rs):
        from byoc.ir.expr import Call, Op
        from byoc.ops.qnn_svdf import SvdfAttrs
        x = relay.var("x", shape=(2, 12), dtype="int8")
        wf = relay.var("wf", shape=(6, 12), dtype="int8")
        wt = relay.var("wt", shape=(6, 3), dtype=state)
        b = relay.var("b", shape=(3,), dtype="int32")
        gain = (0.05, 8e-6) if state == "int16" else (2e-3, 0.012)
        s_st = 0.05 * 0.01 / gain[0]
        consts = [relay.const(np.float32(v)) if isinstance(v, float) else relay.const(np.int32(v)) for v in
                  (0.05, -7, 0.01, 0.02, s_st, 0 if state == "int16" else 90, s_st * 0.02 / gain[1], 5)]
        call = Call(Op.get("qnn.svdf"), (x, wf, wt, b, *consts), SvdfAttrs(rank=2))
        hi = 16383 if state == "int16" else 127
        return relay.Function([x, wf, wt, b], call), {
            "x": _ints(rs, (2, 12)), "wf": _ints(rs, (6, 12)),
            "wt": rs.randint(-hi, hi + 1, size=(6, 3)).astype(state),
            "b": rs.randint(-3000, 3000, size=3).astype("int32")}, True
    return make


MORE_CASES.update({"qnn.svdf": _qnn_svdf("int16"), "qnn.svdf[int8 state]": _qnn_svdf("int8")})
