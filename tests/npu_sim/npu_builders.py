"""Hand-built NPU partitions: composites wrapped in a global function with Compiler="npu" (no partitioner)."""
from __future__ import annotations

import numpy as np

from byoc import relay

__all__ = ["partition", "conv_composite", "dense_composite", "requant_scales", "rng_scale", "litert_outputs",
           "npu_composites", "simulate_on_presets"]


def partition(params: list, body, name: str = "tvmgen_default_npu_main_0") -> relay.Function:
    fn = relay.Function(params, body)
    for k, v in (("Compiler", "npu"), ("global_symbol", name), ("Primitive", 1), ("Inline", 1)):
        fn = fn.with_attr(k, v)
    return fn


def composite(name: str, params: list, body) -> relay.Function:
    return relay.Function(params, body).with_attr("Composite", name).with_attr("PartitionedFromPattern", name)


def rng_scale(rng, n=None, lo=-9.0, hi=-5.0):
    v = 2.0 ** rng.uniform(lo, hi, size=n)
    return np.float32(v) if n is None else v.astype(np.float32)


def conv_composite(x_shape, w_hwio_or_ohwi, *, depthwise=False, strides=(1, 1), dilation=(1, 1),
                   padding=(0, 0, 0, 0), pad_op=None, zp_in=0, zp_w=0, s_in=0.05, s_w=None, s_out=0.1, zp_out=0,
                   bias=None, clip=None, dtype="int8", rounding="TFLITE"):
    """[nn.pad →] qnn.conv2d → nn.bias_add → qnn.requantize [→ clip] as npu.qnn_conv2d / depthwise."""
    w = np.asarray(w_hwio_or_ohwi)
    cin = x_shape[3]
    if depthwise:
        cout = w.shape[3]
        layout, groups = "HWIO", cin
    else:
        cout = w.shape[0]
        layout, groups = "OHWI", 1
    s_w = np.full(cout, 0.01, np.float32) if s_w is None else np.asarray(s_w, np.float32)
    bias = np.zeros(cout, np.int32) if bias is None else np.asarray(bias, np.int32)
    x = relay.var("x", shape=x_shape, dtype=dtype)
    data = x
    if pad_op is not None:
        data = relay.nn.pad(x, ((0, 0), (pad_op[0], pad_op[2]), (pad_op[1], pad_op[3]), (0, 0)),
                            relay.const(zp_in, dtype))
    kh, kw = (w.shape[0], w.shape[1]) if depthwise else (w.shape[1], w.shape[2])
    conv = relay.qnn.op.conv2d(data, relay.const(w), relay.const(zp_in, "int32"), relay.const(zp_w, "int32"),
                               relay.const(np.float32(s_in)), relay.const(s_w), kernel_size=(kh, kw),
                               channels=cout, strides=strides, padding=padding, dilation=dilation, groups=groups,
                               data_layout="NHWC", kernel_layout=layout, out_dtype="int32")
    y = relay.nn.bias_add(conv, relay.const(bias), axis=3)
    rq_scale = (np.float64(np.float32(s_in)) * s_w.astype(np.float64))
    y = relay.qnn.op.requantize(y, relay.const(rq_scale), relay.const(0, "int32"), relay.const(np.float32(s_out)),
                                relay.const(zp_out, "int32"), axis=3, rounding=rounding, out_dtype=dtype)
    if clip is not None:
        y = relay.clip(y, clip[0], clip[1])
    name = "npu.qnn_depthwise_conv2d" if depthwise else "npu.qnn_conv2d"
    p = relay.var("p0", shape=x_shape, dtype=dtype)
    comp = composite(name, [x], y)
    return p, comp(p)


def dense_composite(x_shape, w, *, zp_in=0, zp_w=0, s_in=0.05, s_w=0.01, s_out=0.1, zp_out=0, bias=None,
                    clip=None, dtype="int8", rounding="TFLITE"):
    units = w.shape[0]
    s_w = np.broadcast_to(np.asarray(s_w, np.float32), (units,)).copy()
    bias = np.zeros(units, np.int32) if bias is None else np.asarray(bias, np.int32)
    x = relay.var("x", shape=x_shape, dtype=dtype)
    d = relay.qnn.op.dense(x, relay.const(w), relay.const(zp_in, "int32"), relay.const(zp_w, "int32"),
                           relay.const(np.float32(s_in)), relay.const(s_w), units=units, out_dtype="int32")
    y = relay.nn.bias_add(d, relay.const(bias), axis=1)
    rq_scale = np.float64(np.float32(s_in)) * s_w.astype(np.float64)
    y = relay.qnn.op.requantize(y, relay.const(rq_scale), relay.const(0, "int32"), relay.const(np.float32(s_out)),
                                relay.const(zp_out, "int32"), axis=1, rounding=rounding, out_dtype=dtype)
    if clip is not None:
        y = relay.clip(y, clip[0], clip[1])
    p = relay.var("p0", shape=x_shape, dtype=dtype)
    return p, composite("npu.qnn_dense", [x], y)(p)


def requant_scales(rng, cout):
    return rng_scale(rng, cout, -10, -6)


def _s(v):
    return relay.const(np.float32(v))


def _z(v):
    return relay.const(int(v), "int32")


def binary_composite(kind, shape, *, s_a=0.05, zp_a=0, s_b=0.07, zp_b=0, s_out=0.1, zp_out=0, clip=None,
                     dtype="int8"):
    a = relay.var("a", shape=shape, dtype=dtype)
    b = relay.var("b", shape=shape, dtype=dtype)
    op = relay.qnn.op.add if kind == "add" else relay.qnn.op.mul
    y = op(a, b, _s(s_a), _z(zp_a), _s(s_b), _z(zp_b), _s(s_out), _z(zp_out))
    if clip is not None:
        y = relay.clip(y, clip[0], clip[1])
    pa = relay.var("p0", shape=shape, dtype=dtype)
    pb = relay.var("p1", shape=shape, dtype=dtype)
    return [pa, pb], composite(f"npu.qnn_{kind}", [a, b], y)(pa, pb)


def pool_composite(kind, shape, pool_size, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), clip=None,
                   count_include_pad=False, dtype="int8"):
    x = relay.var("x", shape=shape, dtype=dtype)
    if kind == "avg":
        y = relay.cast(x, "int32")
        y = relay.nn.avg_pool2d(y, pool_size, strides, dilation, padding, layout="NHWC",
                                count_include_pad=count_include_pad)
        y = relay.cast(y, dtype)
    else:
        y = relay.nn.max_pool2d(x, pool_size, strides, dilation, padding, layout="NHWC")
    if clip is not None:
        y = relay.clip(y, clip[0], clip[1])
    p = relay.var("p0", shape=shape, dtype=dtype)
    return [p], composite(f"npu.qnn_{kind}_pool2d", [x], y)(p)


def mean_composite(shape, *, s_in=0.05, zp_in=0, s_out=0.04, zp_out=0, dtype="int8"):
    x = relay.var("x", shape=shape, dtype=dtype)
    y = relay.qnn.op.mean(x, _s(s_in), _z(zp_in), _s(s_out), _z(zp_out), axis=(1, 2), keepdims=True)
    p = relay.var("p0", shape=shape, dtype=dtype)
    return [p], composite("npu.qnn_mean", [x], y)(p)


def lut_composite(kind, shape, *, s_in=0.05, zp_in=0, dtype="int8", rounding="TFLITE"):
    x = relay.var("x", shape=shape, dtype=dtype)
    if kind == "sigmoid":
        s_out, zp_out = 1.0 / 256, -128 if dtype == "int8" else 0
        y = relay.qnn.op.sigmoid(x, _s(s_in), _z(zp_in), _s(s_out), _z(zp_out), rounding=rounding)
    else:
        s_out, zp_out = 1.0 / 128, 0 if dtype == "int8" else 128
        y = relay.qnn.op.tanh(x, _s(s_in), _z(zp_in), _s(s_out), _z(zp_out), rounding=rounding)
    p = relay.var("p0", shape=shape, dtype=dtype)
    return [p], composite(f"npu.qnn_{kind}", [x], y)(p)


def requant_composite(shape, s_in, zp_in, s_out, zp_out, *, clip=None, dtype="int8", out_dtype="int8",
                      rounding="TFLITE"):
    x = relay.var("x", shape=shape, dtype=dtype)
    s_in = np.asarray(s_in, np.float32)
    y = relay.qnn.op.requantize(x, relay.const(s_in), _z(zp_in), _s(s_out), _z(zp_out), axis=len(shape) - 1,
                                rounding=rounding, out_dtype=out_dtype)
    if clip is not None:
        y = relay.clip(y, clip[0], clip[1])
    p = relay.var("p0", shape=shape, dtype=dtype)
    return [p], composite("npu.qnn_requantize", [x], y)(p)


def clip_composite(shape, lo, hi, dtype="int8"):
    x = relay.var("x", shape=shape, dtype=dtype)
    p = relay.var("p0", shape=shape, dtype=dtype)
    return [p], composite("npu.qnn_clip", [x], relay.clip(x, lo, hi))(p)


def concat_composite(shapes, *, s=0.05, zp=3, dtype="int8"):
    xs = [relay.var(f"x{i}", shape=sh, dtype=dtype) for i, sh in enumerate(shapes)]
    y = relay.qnn.op.concatenate(xs, [_s(s)] * len(xs), [_z(zp)] * len(xs), _s(s), _z(zp), axis=3)
    ps = [relay.var(f"p{i}", shape=sh, dtype=dtype) for i, sh in enumerate(shapes)]
    return ps, composite("npu.qnn_concatenate", xs, y)(*ps)


def litert_outputs(model: bytes, x: np.ndarray) -> list[np.ndarray]:
    """Every output of a one-input model under LiteRT BUILTIN_REF (the test is skipped without LiteRT)."""
    import pytest
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    it = litert.Interpreter(model_content=model, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def npu_composites(mod) -> list[str]:
    """The composite names inside a module's npu partitions, sorted."""
    from byoc.ir.expr import Call, Function
    from byoc.ir.traversal import post_order
    return sorted(str(n.op.attrs["Composite"]) for _, f in mod.sorted_items() if f.attrs.get("Compiler") == "npu"
                  for n in post_order(f.body)
                  if isinstance(n, Call) and isinstance(n.op, Function) and "Composite" in n.op.attrs)


def simulate_on_presets(fn, inputs: dict, presets=None) -> dict:
    """Compile and simulate ``fn`` on every preset: each output must equal byoc.evaluate's bit for bit and each
    layer take at least its roofline. Returns {preset: (program, stats, outputs)}."""
    import byoc
    import npu_sim
    ref = byoc.evaluate(fn, inputs)
    runs = {}
    for preset in (tuple(npu_sim.PRESETS) if presets is None else presets):
        prog = npu_sim.compile(fn, preset)
        got, st = npu_sim.simulate(prog, inputs)
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            assert g.dtype == r.dtype and g.shape == r.shape, (preset, g.shape, r.shape)
            if not np.array_equal(g, r):
                raise AssertionError(f"{preset}: {int(np.sum(g != r))}/{g.size} outputs differ, tiles "
                                     f"{[layer.tile for layer in prog.layers]}\n{fn.astext()}")
        for layer in st.per_layer:
            assert layer.cycles >= layer.roofline_cycles > 0, (preset, layer)
        runs[preset] = (prog, st, got)
    return runs
