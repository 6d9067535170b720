"""Every quantized op against LiteRT's reference kernels (BUILTIN_REF), bit for bit.

Each case writes a random single-op ``.tflite`` model with ``byoc.testing.tflite_writer``, runs it in
ai_edge_litert with ``OpResolverType.BUILTIN_REF``, and evaluates the IR built directly with relay builders from
the same numpy parameters (scales, zero points, weights) with ``byoc.evaluate``. Zero mismatches are required.
The IR construction only uses TFLite's documented conventions (padding split, scale products, activation clamp
bounds), written here independently of the importer.
"""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

import byoc
from byoc import relay

litert = pytest.importorskip("ai_edge_litert.interpreter")
tflite_writer = pytest.importorskip("byoc.testing.tflite_writer")
TFLiteWriter = tflite_writer.TFLiteWriter

CASES = 30  # random models per parametrisation (about 5 s for the file)


def run_litert(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    it = litert.Interpreter(model_content=model,
                            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, v in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], v)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def run_ours(params: list, body, inputs: list[np.ndarray]) -> list[np.ndarray]:
    func = relay.Function(params, body)
    mod = relay.transform.InferType()(relay.IRModule.from_expr(func))
    return byoc.evaluate(mod, {p.name_hint: v for p, v in zip(params, inputs)})


def assert_same(ref: list[np.ndarray], got: list[np.ndarray], what: str) -> None:
    assert len(ref) == len(got), what
    for r, g in zip(ref, got):
        assert r.shape == g.shape, f"{what}: shape {g.shape}, LiteRT {r.shape}"
        assert r.dtype == g.dtype, f"{what}: dtype {g.dtype}, LiteRT {r.dtype}"
        bad = int(np.count_nonzero(r != g))
        assert bad == 0, f"{what}: {bad}/{r.size} mismatches\nours  {g.ravel()[:16]}\nlitert {r.ravel()[:16]}"


def f32(x) -> float:
    return float(np.float32(x))


def rand_q(rng, shape, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def rand_zp(rng, dtype, margin: int = 0) -> int:
    info = np.iinfo(dtype)
    return int(rng.integers(info.min + margin, info.max + 1 - margin))


def act_bounds(activation: str, scale: float, zp: int, dtype: str) -> tuple[int, int]:
    """CalculateActivationRangeQuantized (quant-semantics §2.2), independently of the importer."""
    info = np.iinfo(dtype)

    def q(f):
        v = float(np.float32(f) / np.float32(scale))
        return zp + int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)

    lo, hi = int(info.min), int(info.max)
    if activation == "RELU":
        return max(lo, q(0.0)), hi
    if activation == "RELU6":
        return max(lo, q(0.0)), min(hi, q(6.0))
    if activation == "RELU_N1_TO_1":
        return max(lo, q(-1.0)), min(hi, q(1.0))
    return lo, hi


def clip_for(expr, activation, scale, zp, dtype):
    lo, hi = act_bounds(activation, scale, zp, dtype)
    return relay.clip(expr, lo, hi)


def same_pad(size: int, k: int, stride: int, dilation: int, padding: str) -> tuple[int, int]:
    eff = (k - 1) * dilation + 1
    if padding == "VALID":
        return 0, 0
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


def scale_product(s_in: float, s_w) -> np.ndarray:
    return np.float64(np.float32(s_in)) * np.asarray(s_w, np.float32).astype(np.float64)


ACTS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


# ---------------------------------------------------------------------------------------- conv / dw / fc
@pytest.mark.parametrize("depthwise", [False, True])
def test_conv2d_and_depthwise(depthwise):
    rng = np.random.default_rng(10 + depthwise)
    for case in range(CASES):
        n, h, w, cin = 1, int(rng.integers(3, 13)), int(rng.integers(3, 13)), int(rng.integers(1, 6))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        dil = int(rng.integers(1, 3)) if case % 2 else 1
        padding = ("SAME", "VALID")[case % 2]
        if padding == "VALID" and ((kh - 1) * dil + 1 > h or (kw - 1) * dil + 1 > w):
            padding = "SAME"
        mult = int(rng.integers(1, 3)) if depthwise else 1
        cout = cin * mult if depthwise else int(rng.integers(1, 9))
        per_channel = case % 3 != 0
        s_in, s_out = f32(rng.uniform(0.01, 0.1)), f32(rng.uniform(0.02, 0.3))
        zp_in, zp_out = rand_zp(rng, "int8", 10), rand_zp(rng, "int8", 10)
        s_w = np.float32(rng.uniform(0.002, 0.05, cout if per_channel else 1))
        act = ACTS[case % 4]
        x = rand_q(rng, (n, h, w, cin), "int8")
        bias = rng.integers(-3000, 3000, cout).astype(np.int32)
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, "int8", scale=s_in, zero_point=zp_in)
        if depthwise:
            wt = rand_q(rng, (1, kh, kw, cout), "int8")
            wt[wt == -128] = -127
            y = wtr.depthwise_conv2d(xin, wt, bias, weight_scale=s_w, strides=(sh, sw), padding=padding,
                                     dilation=(dil, dil), activation=act, out_scale=s_out, out_zp=zp_out)
        else:
            wt = rand_q(rng, (cout, kh, kw, cin), "int8")
            wt[wt == -128] = -127
            y = wtr.conv2d(xin, wt, bias, weight_scale=s_w, strides=(sh, sw), padding=padding,
                           dilation=(dil, dil), activation=act, out_scale=s_out, out_zp=zp_out)
        wtr.output(y)
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=x.shape, dtype="int8")
        pt, pb = same_pad(h, kh, sh, dil, padding)
        pl, pr = same_pad(w, kw, sw, dil, padding)
        e = relay.nn.pad(v, ((0, 0), (pt, pb), (pl, pr), (0, 0)), relay.const(zp_in, "int32"))
        if depthwise:
            kernel = relay.const(wt.reshape(kh, kw, 1, cout))
            e = relay.qnn.op.conv2d(e, kernel, zp_in, 0, s_in, s_w, strides=(sh, sw), dilation=(dil, dil),
                                    groups=cin, data_layout="NHWC", kernel_layout="HWIO")
        else:
            e = relay.qnn.op.conv2d(e, relay.const(wt), zp_in, 0, s_in, s_w, strides=(sh, sw),
                                    dilation=(dil, dil), data_layout="NHWC", kernel_layout="OHWI")
        e = relay.nn.bias_add(e, relay.const(bias), axis=3)
        e = relay.qnn.op.requantize(e, relay.const(scale_product(s_in, s_w)), 0, s_out, zp_out, axis=3,
                                    out_dtype="int8")
        e = clip_for(e, act, s_out, zp_out, "int8")
        assert_same(ref, run_ours([v], e, [x]), f"{'depthwise' if depthwise else 'conv'} case {case}")


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_fully_connected(dtype):
    rng = np.random.default_rng(20 + (dtype == "uint8"))
    for case in range(CASES):
        batch, k, units = int(rng.integers(1, 9)), int(rng.integers(1, 64)), int(rng.integers(1, 17))
        per_channel = dtype == "int8" and case % 2 == 1
        s_in, s_out = f32(rng.uniform(0.01, 0.1)), f32(rng.uniform(0.05, 0.5))
        zp_in, zp_out = rand_zp(rng, dtype, 20), rand_zp(rng, dtype, 20)
        zp_w = 0 if dtype == "int8" else rand_zp(rng, dtype, 20)
        s_w = np.float32(rng.uniform(0.002, 0.05, units if per_channel else 1))
        act = ACTS[case % 4]
        x = rand_q(rng, (batch, k), dtype)
        wt = rand_q(rng, (units, k), dtype)
        if dtype == "int8":
            wt[wt == -128] = -127
        bias = rng.integers(-5000, 5000, units).astype(np.int32)
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, dtype, scale=s_in, zero_point=zp_in)
        y = wtr.fully_connected(xin, wt, bias, weight_scale=s_w, weight_zp=zp_w, activation=act,
                                out_scale=s_out, out_zp=zp_out)
        wtr.output(y)
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=x.shape, dtype=dtype)
        e = relay.qnn.op.dense(v, relay.const(wt), zp_in, zp_w, s_in, s_w, units=units)
        e = relay.nn.bias_add(e, relay.const(bias), axis=1)
        e = relay.qnn.op.requantize(e, relay.const(scale_product(s_in, s_w)), 0, s_out, zp_out, axis=1,
                                    rounding="TFLITE_FLOAT", out_dtype=dtype)
        e = clip_for(e, act, s_out, zp_out, dtype)
        assert_same(ref, run_ours([v], e, [x]), f"fc {dtype} case {case}")


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_transpose_conv(dtype):
    rng = np.random.default_rng(30 + (dtype == "uint8"))
    for case in range(CASES):
        cin, cout = int(rng.integers(1, 5)), int(rng.integers(1, 6))
        k = int(rng.integers(1, 4))
        s = int(rng.integers(1, 3))
        padding = ("SAME", "VALID")[case % 2]
        out_h, out_w = int(rng.integers(max(k, 2), 13)), int(rng.integers(max(k, 2), 13))
        if padding == "SAME":
            in_h, in_w = -(-out_h // s), -(-out_w // s)
        else:
            in_h, in_w = (out_h - k) // s + 1, (out_w - k) // s + 1
        per_channel = dtype == "int8" and case % 2 == 0
        s_in, s_out = f32(rng.uniform(0.01, 0.1)), f32(rng.uniform(0.02, 0.3))
        zp_in, zp_out = rand_zp(rng, dtype, 10), rand_zp(rng, dtype, 10)
        zp_w = 0 if dtype == "int8" else rand_zp(rng, dtype, 10)
        s_w = np.float32(rng.uniform(0.002, 0.05, cout if per_channel else 1))
        x = rand_q(rng, (1, in_h, in_w, cin), dtype)
        wt = rand_q(rng, (cout, k, k, cin), dtype)
        if dtype == "int8":
            wt[wt == -128] = -127
        bias = rng.integers(-2000, 2000, cout).astype(np.int32)
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, dtype, scale=s_in, zero_point=zp_in)
        y = wtr.transpose_conv(xin, wt, (1, out_h, out_w, cout), bias, weight_scale=s_w, weight_zp=zp_w,
                               strides=(s, s), padding=padding, out_scale=s_out, out_zp=zp_out)
        wtr.output(y)
        ref = run_litert(wtr.finish(), [x])

        pads, out_pad = [], []
        for size_in, size_out in ((in_h, out_h), (in_w, out_w)):
            # TFLite pads as for a forward conv from the output size; the extra pixel goes after.
            before, _ = same_pad(size_out, k, s, 1, padding)
            after = (size_in - 1) * s + k - before - size_out
            pads.append((before, max(after, 0)))
            out_pad.append(max(-after, 0))
        v = relay.var("x", shape=x.shape, dtype=dtype)
        e = relay.qnn.op.conv2d_transpose(v, relay.const(wt), zp_in, zp_w, s_in, s_w, strides=(s, s),
                                          padding=(pads[0][0], pads[1][0], pads[0][1], pads[1][1]),
                                          output_padding=tuple(out_pad), data_layout="NHWC",
                                          kernel_layout="OHWI")
        e = relay.nn.bias_add(e, relay.const(bias), axis=3)
        in_scale = scale_product(s_in, s_w) if dtype == "int8" else \
            np.float64(np.float32(np.float32(s_in) * np.float32(s_w[0])))  # uint8: float32 product (legacy path)
        e = relay.qnn.op.requantize(e, relay.const(in_scale), 0, s_out, zp_out, axis=3, out_dtype=dtype)
        assert_same(ref, run_ours([v], e, [x]), f"transpose_conv {dtype} case {case}")


# ---------------------------------------------------------------------------------------- add / sub / mul
@pytest.mark.parametrize("op,dtype", [(op, dt) for op in ("add", "sub", "mul") for dt in ("int8", "uint8")]
                         + [("mul", "int16")])
def test_binary(op, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{op}/{dtype}".encode()))  # str hash() is salted per process
    builders = {"add": relay.qnn.op.add, "sub": relay.qnn.op.subtract, "mul": relay.qnn.op.mul}
    for case in range(CASES):
        shape_a = (1, int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 17)))
        shape_b = tuple(d if rng.random() < 0.6 else 1 for d in shape_a)
        if case % 2:
            shape_a, shape_b = shape_b, shape_a
        s1, s2 = f32(rng.uniform(0.005, 0.2)), f32(rng.uniform(0.005, 0.2))
        s_out = f32(rng.uniform(0.01, 0.3) if op != "mul" else rng.uniform(0.0005, 0.05))
        z1, z2, zo = (0, 0, 0) if dtype == "int16" else (rand_zp(rng, dtype, 5) for _ in range(3))
        if dtype == "int16":  # int16 kernels are symmetric (zero points 0), with int16-sized scales
            s1, s2, s_out = f32(s1 / 256), f32(s2 / 256), f32(s_out / 256)
        act = ACTS[case % 4]
        a, b = rand_q(rng, shape_a, dtype), rand_q(rng, shape_b, dtype)
        wtr = TFLiteWriter()
        ia = wtr.input("a", shape_a, dtype, scale=s1, zero_point=z1)
        ib = wtr.input("b", shape_b, dtype, scale=s2, zero_point=z2)
        y = getattr(wtr, op)(ia, ib, activation=act, out_scale=s_out, out_zp=zo)
        wtr.output(y)
        ref = run_litert(wtr.finish(), [a, b])

        va = relay.var("a", shape=shape_a, dtype=dtype)
        vb = relay.var("b", shape=shape_b, dtype=dtype)
        e = builders[op](va, vb, s1, z1, s2, z2, s_out, zo)
        e = clip_for(e, act, s_out, zo, dtype)
        assert_same(ref, run_ours([va, vb], e, [a, b]), f"{op} {dtype} case {case}")


# ------------------------------------------------------------------------------------------------ pooling
@pytest.mark.parametrize("kind", ["average", "max"])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_pool(kind, dtype):
    rng = np.random.default_rng(40 + (kind == "max") * 2 + (dtype == "uint8"))
    for case in range(CASES):
        h, w, c = int(rng.integers(2, 14)), int(rng.integers(2, 14)), int(rng.integers(1, 9))
        fh, fw = int(rng.integers(1, min(h, 4) + 1)), int(rng.integers(1, min(w, 4) + 1))
        sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        padding = ("SAME", "VALID")[case % 2]
        s, zp = f32(rng.uniform(0.01, 0.1)), rand_zp(rng, dtype, 10)
        act = ACTS[case % 4]
        x = rand_q(rng, (1, h, w, c), dtype)
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, dtype, scale=s, zero_point=zp)
        pool = wtr.average_pool2d if kind == "average" else wtr.max_pool2d
        wtr.output(pool(xin, (fh, fw), (sh, sw), padding, activation=act))
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=x.shape, dtype=dtype)
        pt, pb = same_pad(h, fh, sh, 1, padding)
        pl, pr = same_pad(w, fw, sw, 1, padding)
        if kind == "average":
            e = relay.nn.avg_pool2d(relay.cast(v, "int32"), (fh, fw), (sh, sw), padding=(pt, pl, pb, pr),
                                    layout="NHWC")
            e = relay.cast(e, dtype)
        else:
            e = relay.nn.max_pool2d(v, (fh, fw), (sh, sw), padding=(pt, pl, pb, pr), layout="NHWC")
        e = clip_for(e, act, s, zp, dtype)
        assert_same(ref, run_ours([v], e, [x]), f"{kind} pool {dtype} case {case}")


# ---------------------------------------------------------------------------------------------------- mean
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_mean(dtype):
    rng = np.random.default_rng(50 + (dtype == "uint8"))
    axes_choices = [(1, 2), (1,), (2,), (3,), (1, 2, 3), (0, 3)]
    for case in range(CASES):
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 10)), int(rng.integers(1, 10)), int(rng.integers(1, 17)))
        axes = axes_choices[case % len(axes_choices)]
        keep = bool(case % 2)
        s_in, s_out = f32(rng.uniform(0.01, 0.1)), f32(rng.uniform(0.005, 0.1))
        z_in, z_out = rand_zp(rng, dtype, 10), rand_zp(rng, dtype, 10)
        x = rand_q(rng, shape, dtype)
        wtr = TFLiteWriter()
        xin = wtr.input("x", shape, dtype, scale=s_in, zero_point=z_in)
        wtr.output(wtr.mean(xin, axes, keep, out_scale=s_out, out_zp=z_out))
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=shape, dtype=dtype)
        e = relay.qnn.op.mean(v, s_in, z_in, s_out, z_out, axis=axes, keepdims=keep)
        assert_same(ref, run_ours([v], e, [x]), f"mean {dtype} axes {axes} case {case}")


# ------------------------------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("dtypes", [("int8", "int8"), ("int8", "int16"), ("uint8", "uint8"), ("uint8", "int16")])
def test_softmax(dtypes):
    in_dtype, out_dtype = dtypes
    rng = np.random.default_rng(60 + len(in_dtype) + len(out_dtype))
    for case in range(CASES):
        depth = int(rng.choice([2, 3, 10, 64, 300]))
        shape = (int(rng.integers(1, 17)), depth)
        s_in = f32(rng.uniform(0.01, 0.5))
        beta = f32(rng.choice([1.0, 0.5, 2.0, rng.uniform(0.3, 3.0)]))
        zp = rand_zp(rng, in_dtype)
        x = rand_q(rng, shape, in_dtype)
        wtr = TFLiteWriter()
        xin = wtr.input("x", shape, in_dtype, scale=s_in, zero_point=zp)
        y = wtr.softmax(xin, beta, out_dtype=out_dtype)
        wtr.output(y)
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=shape, dtype=in_dtype)
        e = relay.qnn.op.softmax(v, s_in, zp, y.scale[0], y.zero_point[0], beta=beta, out_dtype=out_dtype)
        assert_same(ref, run_ours([v], e, [x]), f"softmax {dtypes} case {case}")


# ------------------------------------------------------------------------------ exhaustive elementwise activations
def _all_values(dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1).astype(dtype).reshape(1, 16, 16)


@pytest.mark.parametrize("kind", ["logistic", "tanh"])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_sigmoid_tanh_lut(kind, dtype):
    rng = np.random.default_rng(70 + (kind == "tanh") * 2 + (dtype == "uint8"))
    for case in range(CASES):
        s_in, zp = f32(rng.uniform(0.005, 0.3)), rand_zp(rng, dtype)
        x = _all_values(dtype)
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, dtype, scale=s_in, zero_point=zp)
        y = getattr(wtr, kind)(xin)
        wtr.output(y)
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=x.shape, dtype=dtype)
        build = relay.qnn.op.sigmoid if kind == "logistic" else relay.qnn.op.tanh
        e = build(v, s_in, zp, y.scale[0], y.zero_point[0], rounding="TFLITE")
        assert_same(ref, run_ours([v], e, [x]), f"{kind} {dtype} case {case}")


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_hardswish(dtype):
    rng = np.random.default_rng(80 + (dtype == "uint8"))
    for case in range(CASES):
        s_in = f32(rng.uniform(0.005, 0.2))
        s_out = f32(s_in * rng.uniform(0.3, 2.0) if case % 3 else rng.uniform(0.01, 0.1))
        zp_in, zp_out = rand_zp(rng, dtype), rand_zp(rng, dtype)
        x = _all_values(dtype)
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, dtype, scale=s_in, zero_point=zp_in)
        wtr.output(wtr.hard_swish(xin, out_scale=s_out, out_zp=zp_out))
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=x.shape, dtype=dtype)
        e = relay.qnn.op.hardswish(v, s_in, zp_in, s_out, zp_out)
        assert_same(ref, run_ours([v], e, [x]), f"hardswish {dtype} case {case}")


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
def test_leaky_relu(dtype):
    rng = np.random.default_rng(90 + (dtype == "uint8"))
    for case in range(CASES):
        alpha = f32([0.1, 0.2, -0.5, 1.5, rng.uniform(0.01, 0.9)][case % 5])
        s_in, s_out = f32(rng.uniform(0.005, 0.2)), f32(rng.uniform(0.005, 0.2))
        zp_in, zp_out = (0, 0) if dtype == "int16" else (rand_zp(rng, dtype), rand_zp(rng, dtype))
        x = _all_values(dtype) if dtype != "int16" else rand_q(rng, (1, 16, 64), dtype)
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, dtype, scale=s_in, zero_point=zp_in)
        wtr.output(wtr.leaky_relu(xin, alpha, out_scale=s_out, out_zp=zp_out))
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=x.shape, dtype=dtype)
        e = relay.qnn.op.leaky_relu(v, alpha, s_in, zp_in, s_out, zp_out)
        assert_same(ref, run_ours([v], e, [x]), f"leaky_relu {dtype} alpha {alpha} case {case}")


# ------------------------------------------------------------------------------------ quantize / dequantize
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_quantize_float(dtype):
    rng = np.random.default_rng(100 + (dtype == "uint8"))
    for case in range(CASES):
        s, zp = f32(rng.uniform(0.001, 0.2)), rand_zp(rng, dtype)
        # Exact .5 ties on the quantization grid, their float32 neighbours, and plain random values.
        ties = (np.arange(-300, 300) + 0.5).astype(np.float32) * np.float32(s)
        near = np.concatenate([np.nextafter(ties, np.float32(np.inf)), np.nextafter(ties, np.float32(-np.inf))])
        x = np.concatenate([ties, near, rng.normal(0, 200 * s, 600).astype(np.float32)]).astype(np.float32)
        x = x.reshape(1, -1)
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, "float32")
        wtr.output(wtr.quantize(xin, out_scale=s, out_zp=zp, out_dtype=dtype))
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=x.shape, dtype="float32")
        e = relay.qnn.op.quantize(v, s, zp, out_dtype=dtype)
        assert_same(ref, run_ours([v], e, [x]), f"quantize f32->{dtype} case {case}")


@pytest.mark.parametrize("dtypes", [("int8", "int8"), ("int8", "uint8"), ("uint8", "int8"), ("int16", "int8")])
def test_requantize(dtypes):
    in_dtype, out_dtype = dtypes
    rng = np.random.default_rng(110 + len(in_dtype) * 3 + len(out_dtype))
    for case in range(CASES):
        s_in, s_out = f32(rng.uniform(0.001, 0.2)), f32(rng.uniform(0.001, 0.2))
        zp_in = 0 if in_dtype == "int16" else rand_zp(rng, in_dtype)
        zp_out = rand_zp(rng, out_dtype)
        x = rand_q(rng, (1, 64, 4), in_dtype)
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, in_dtype, scale=s_in, zero_point=zp_in)
        wtr.output(wtr.quantize(xin, out_scale=s_out, out_zp=zp_out, out_dtype=out_dtype))
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=x.shape, dtype=in_dtype)
        e = relay.qnn.op.requantize(v, s_in, zp_in, s_out, zp_out, out_dtype=out_dtype)
        assert_same(ref, run_ours([v], e, [x]), f"requantize {dtypes} case {case}")


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_dequantize(dtype):
    rng = np.random.default_rng(120 + (dtype == "uint8"))
    for case in range(CASES):
        s, zp = f32(rng.uniform(0.0001, 2.0)), rand_zp(rng, dtype)
        x = _all_values(dtype)
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, dtype, scale=s, zero_point=zp)
        wtr.output(wtr.dequantize(xin))
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=x.shape, dtype=dtype)
        got = run_ours([v], relay.qnn.op.dequantize(v, s, zp), [x])
        assert_same([ref[0].view(np.int32)], [got[0].view(np.int32)], f"dequantize {dtype} case {case}")


# ------------------------------------------------------------------------------------------ concatenation
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_concatenation(dtype):
    rng = np.random.default_rng(130 + (dtype == "uint8"))
    for case in range(CASES):
        n_in = int(rng.integers(1, 4))
        axis = int(rng.integers(0, 4))
        base = [1, int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 5))]
        shapes = []
        for _ in range(n_in):
            s = list(base)
            s[axis] = int(rng.integers(1, 4))
            shapes.append(tuple(s))
        s_out, zp_out = f32(rng.uniform(0.01, 0.1)), rand_zp(rng, dtype)
        if dtype == "int8":  # LiteRT rejects int8 inputs whose parameters differ from the output's
            params = [(s_out, zp_out)] * n_in
        else:
            params = [(f32(rng.uniform(0.01, 0.1)), rand_zp(rng, dtype)) if rng.random() < 0.7 else (s_out, zp_out)
                      for _ in range(n_in)]
        xs = [rand_q(rng, sh, dtype) for sh in shapes]
        wtr = TFLiteWriter()
        ins = [wtr.input(f"x{i}", sh, dtype, scale=p[0], zero_point=p[1]) for i, (sh, p) in
               enumerate(zip(shapes, params))]
        wtr.output(wtr.concatenation(ins, axis, out_scale=s_out, out_zp=zp_out))
        ref = run_litert(wtr.finish(), xs)

        vs = [relay.var(f"x{i}", shape=sh, dtype=dtype) for i, sh in enumerate(shapes)]
        e = relay.qnn.op.concatenate(vs, [p[0] for p in params], [p[1] for p in params], s_out, zp_out, axis)
        assert_same(ref, run_ours(vs, e, xs), f"concatenation {dtype} case {case}")


# ---------------------------------------------------------------------------------- resize and data movement
@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True)])
def test_resize_nearest(flags):
    align, half = flags
    rng = np.random.default_rng(140 + align * 2 + half)
    for case in range(CASES):
        h, w, c = int(rng.integers(1, 7)), int(rng.integers(1, 7)), int(rng.integers(1, 3))
        oh, ow = int(rng.integers(1, 15)), int(rng.integers(1, 15))
        x = rand_q(rng, (1, h, w, c), "int8")
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, "int8", scale=0.05, zero_point=3)
        wtr.output(wtr.resize_nearest_neighbor(xin, (oh, ow), align_corners=align, half_pixel_centers=half))
        ref = run_litert(wtr.finish(), [x])

        mode = "align_corners" if align else ("half_pixel" if half else "asymmetric")
        rounding = "round_prefer_ceil" if half else ""
        v = relay.var("x", shape=x.shape, dtype="int8")
        e = relay.image.resize2d(v, size=(oh, ow), layout="NHWC", method="nearest_neighbor",
                                 coordinate_transformation_mode=mode, rounding_method=rounding)
        assert_same(ref, run_ours([v], e, [x]), f"resize {flags} {h}x{w}->{oh}x{ow}")


def test_data_movement():
    rng = np.random.default_rng(150)
    for case in range(CASES):
        shape = (1, int(rng.integers(1, 6)), int(rng.integers(1, 6)), 4)
        x = rand_q(rng, shape, "int8")
        pads = rng.integers(0, 3, (4, 2))
        perm = tuple(int(p) for p in rng.permutation(4))
        wtr = TFLiteWriter()
        xin = wtr.input("x", shape, "int8", scale=0.02, zero_point=-7)
        outs = [wtr.pad(xin, pads), wtr.transpose(xin, perm), wtr.reshape(xin, (-1, 4)),
                wtr.strided_slice(xin, (0, 0, 0, 1), (1, shape[1], shape[2], 4), (1, 2, 1, 2))]
        outs += wtr.split(xin, 2, 3)
        wtr.output(*outs)
        ref = run_litert(wtr.finish(), [x])

        v = relay.var("x", shape=shape, dtype="int8")
        parts = relay.split(v, 2, axis=3)
        e = relay.Tuple([relay.nn.pad(v, tuple(map(tuple, pads)), relay.const(-7, "int32")),
                         relay.transpose(v, perm), relay.reshape(v, (-1, 4)),
                         relay.strided_slice(v, (0, 0, 0, 1), (1, shape[1], shape[2], 4), (1, 2, 1, 2)),
                         parts[0], parts[1]])
        assert_same(ref, run_ours([v], e, [x]), f"data movement case {case}")


@pytest.mark.parametrize("kind", ["average", "max"])
def test_float_pool_bits(kind):
    # Float pools accumulate tap by tap in float32 in TFLite's order, so even the float results are bit-exact.
    rng = np.random.default_rng(160 + (kind == "max"))
    for case in range(CASES):
        h, w, c = int(rng.integers(2, 12)), int(rng.integers(2, 12)), 3
        fh, fw = int(rng.integers(1, min(h, 4) + 1)), int(rng.integers(1, min(w, 4) + 1))
        sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        padding = ("SAME", "VALID")[case % 2]
        x = rng.normal(size=(1, h, w, c)).astype(np.float32)
        wtr = TFLiteWriter()
        xin = wtr.input("x", x.shape, "float32")
        pool = wtr.average_pool2d if kind == "average" else wtr.max_pool2d
        wtr.output(pool(xin, (fh, fw), (sh, sw), padding))
        ref = run_litert(wtr.finish(), [x])
        pt, pb = same_pad(h, fh, sh, 1, padding)
        pl, pr = same_pad(w, fw, sw, 1, padding)
        v = relay.var("x", shape=x.shape)
        build = relay.nn.avg_pool2d if kind == "average" else relay.nn.max_pool2d
        got = run_ours([v], build(v, (fh, fw), (sh, sw), padding=(pt, pl, pb, pr), layout="NHWC"), [x])
        assert_same([ref[0].view(np.int32)], [got[0].view(np.int32)], f"float {kind} pool case {case}")
