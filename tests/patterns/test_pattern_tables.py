"""The npu / vta / example tables: which chains they offload, the reasons they give, and the registry."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
import patterns
from byoc import relay
from byoc.errors import PartitionError, PatternError
from byoc.ops.registry import remove_op_attr
from byoc.partition import verify_partitioned
from byoc.relay.dataflow_pattern import is_op, wildcard
from tests.shared_models import MOBILENET, shared_model, shared_params

LITERT_REASON = ("LiteRT's FULLY_CONNECTED requantizes in double precision; fixed-point hardware cannot match it "
                 "bit-exactly (import with semantics='tflm' to offload)")


def c(v, dtype=None):
    return relay.const(v, dtype)


def conv_chain(x, *, kernel=3, stride=1, groups=1, cout=8, layout="OHWI", pad_value=None, dilation=1,
               clip=True, seed=0):
    rng = np.random.default_rng(seed)
    cin = 8
    src = x
    padding = (kernel // 2,) * 4
    if pad_value is not None:
        p = kernel // 2
        src = relay.nn.pad(x, ((0, 0), (p, p), (p, p), (0, 0)), c(pad_value, "int8"))
        padding = (0, 0, 0, 0)
    wshape = (cout, kernel, kernel, cin // groups) if layout == "OHWI" else (kernel, kernel, 1, cout)
    w = c(rng.integers(-9, 9, wshape).astype("int8"))
    conv = relay.qnn.op.conv2d(src, w, c(-2), c(0), c(0.05), c(0.02), strides=(stride, stride), padding=padding,
                               dilation=(dilation, dilation), groups=groups, data_layout="NHWC",
                               kernel_layout=layout)
    b = relay.nn.bias_add(conv, c(rng.integers(-99, 99, cout).astype("int32")), axis=3)
    rq = relay.qnn.op.requantize(b, c(np.float64(0.001)), c(0), c(0.04), c(3), axis=3)
    return relay.clip(rq, -128, 100) if clip else rq


def dense_chain(x, rounding):
    w = c(np.random.default_rng(1).integers(-9, 9, (5, 16)).astype("int8"))
    d = relay.qnn.op.dense(x, w, c(-3), c(0), c(0.05), c(0.02), units=5)
    b = relay.nn.bias_add(d, c(np.arange(5, dtype="int32")), axis=1)
    return relay.qnn.op.requantize(b, c(np.float64(0.001)), c(0), c(0.04), c(-4), axis=1, rounding=rounding)


def partition(expr, params, target="npu", **kw):
    mod = byoc.IRModule.from_expr(relay.Function(params, expr))
    part, report = byoc.partition_for(target, mod, return_report=True, **kw)
    verify_partitioned(part, mod)
    return mod, part, report


def composites(part):
    return sorted(str(n.attrs["Composite"]) for gv, f in part.items() if "Compiler" in f.attrs
                  for n in byoc.ir.post_order(f) if isinstance(n, relay.Function) and "Composite" in n.attrs)


def assert_same(mod, part, seed=0):
    rng = np.random.default_rng(seed)
    ins = {p.name_hint: rng.integers(-128, 128, p.type_annotation.shape).astype(p.type_annotation.dtype)
           for p in mod["main"].params}
    for a, b in zip(byoc.evaluate(mod, ins), byoc.evaluate(part, ins)):
        assert np.array_equal(a, b)


def x4(name="x", shape=(1, 8, 8, 8), dtype="int8"):
    return relay.var(name, shape=shape, dtype=dtype)


# -- what each composite takes -----------------------------------------------------------------------------

def test_conv_with_pad_and_clip_is_one_composite():
    x = x4()
    mod, part, report = partition(conv_chain(x, pad_value=-2), [x])
    assert composites(part) == ["npu.qnn_conv2d"]
    (f,) = [n for gv, g in part.items() for n in byoc.ir.post_order(g)
            if isinstance(n, relay.Function) and "Composite" in n.attrs]
    assert f.attrs["PartitionedFromPattern"] == "nn.pad_qnn.conv2d_nn.bias_add_qnn.requantize_clip_"
    assert report.cpu_ops() == []
    assert_same(mod, part)


def test_depthwise_and_its_depth_multiplier_rule():
    x = x4()
    mod, part, _ = partition(conv_chain(x, groups=8, layout="HWIO"), [x])
    assert composites(part) == ["npu.qnn_depthwise_conv2d"]
    assert_same(mod, part)
    # multiplier 2: 8 → 16 channels with groups = 8
    mod2, part2, report = partition(conv_chain(x, groups=8, layout="HWIO", cout=16), [x])
    conv = [n for n in report.cpu_ops() if n.op == "qnn.conv2d"]
    assert conv and "the depth multiplier is 1" in conv[0].reason and "found multiplier 2" in conv[0].reason
    assert_same(mod2, part2)


@pytest.mark.parametrize("kwargs, words", [
    (dict(kernel=4), "kernel height and width are each one of 1, 2, 3, 5, 7, 9: found 4x4"),
    (dict(stride=3), "strides are 1 or 2"),
    (dict(dilation=2), "dilation is 1: found (2, 2)"),
    (dict(pad_value=5), "with the input zero point: found pad value 5 with input zero point -2"),
])
def test_conv_hardware_limits_give_reasons(kwargs, words):
    x = x4()
    mod, part, report = partition(conv_chain(x, **kwargs), [x])
    reasons = [n.reason for n in report.cpu_ops() if n.op == "qnn.conv2d"]
    assert reasons and words in reasons[0], reasons
    assert_same(mod, part)


def test_int16_input_is_refused_by_dtype_rule():
    x = x4(dtype="int16")
    mod, part, report = partition(conv_chain(x, clip=False), [x])
    conv = [n for n in report.cpu_ops() if n.op == "qnn.conv2d"][0]
    assert "input and output dtype is int8 or uint8: found int16" in conv.reason


def test_dense_with_litert_double_rounding_stays_on_cpu_with_the_reason():
    x = relay.var("x", shape=(1, 16), dtype="int8")
    mod, part, report = partition(dense_chain(x, "TFLITE_FLOAT"), [x])
    assert composites(part) == []
    dense = [n for n in report.cpu_ops() if n.op == "qnn.dense"]
    assert dense and LITERT_REASON in dense[0].reason
    rq = [n for n in report.cpu_ops() if n.op == "qnn.requantize"]
    assert rq and LITERT_REASON in rq[0].reason
    # With TFLite-Micro (fixed-point) rounding the same layer is offloaded.
    mod2, part2, report2 = partition(dense_chain(x, "TFLITE"), [x])
    assert composites(part2) == ["npu.qnn_dense"] and report2.cpu_ops() == []
    assert_same(mod2, part2)


def test_elementwise_pools_mean_lut_concat_requantize_clip_reshape():
    x, y = x4(), x4("y")
    a = relay.qnn.op.add(x, y, c(0.05), c(-1), c(0.04), c(2), c(0.06), c(1))
    m = relay.qnn.op.mul(a, y, c(0.06), c(1), c(0.04), c(2), c(0.1), c(0))
    mp = relay.nn.max_pool2d(m, (3, 3), (1, 1), padding=(1, 1), layout="NHWC")
    ap = relay.cast(relay.nn.avg_pool2d(relay.cast(mp, "int32"), (3, 3), (1, 1), padding=(1, 1), layout="NHWC"),
                    "int8")
    t = relay.qnn.op.tanh(ap, c(0.1), c(0), c(1 / 128), c(0))
    s = relay.qnn.op.sigmoid(t, c(1 / 128), c(0), c(1 / 256), c(-128))
    cat = relay.qnn.op.concatenate(relay.Tuple([s, s]), relay.Tuple([c(1 / 256), c(1 / 256)]),
                                   relay.Tuple([c(-128), c(-128)]), c(1 / 256), c(-128), axis=3)
    mean = relay.qnn.op.mean(cat, c(1 / 256), c(-128), c(1 / 256), c(-128), axis=(1, 2), keepdims=True)
    r = relay.reshape(mean, (1, 16))
    rq = relay.qnn.op.requantize(r, c(1 / 256), c(-128), c(0.01), c(0))
    out = relay.clip(relay.maximum(rq, rq), -10, 10)
    mod, part, report = partition(out, [x, y])
    assert composites(part) == sorted(["npu.qnn_add", "npu.qnn_mul", "npu.qnn_max_pool2d", "npu.qnn_avg_pool2d",
                                       "npu.qnn_tanh", "npu.qnn_sigmoid", "npu.qnn_concatenate", "npu.qnn_mean",
                                       "npu.qnn_requantize", "npu.qnn_clip"])
    cpu = [n.op for n in report.cpu_ops()]
    assert cpu == ["maximum"]
    assert len(report.partitions) == 2  # maximum splits the chain
    assert_same(mod, part)


def test_broadcasting_both_operands_is_refused():
    # the NPU broadcasts one operand (IFM2) over the other; here neither has the output's shape
    x, y = x4("x", (1, 8, 1, 8)), x4("y", (1, 1, 8, 8))
    a = relay.qnn.op.add(x, y, c(0.05), c(-1), c(0.04), c(2), c(0.06), c(1))
    mod, part, report = partition(a, [x, y])
    (n,) = report.cpu_ops()
    assert "neither input has the output's shape" in n.reason and "(1, 8, 1, 8)" in n.reason
    assert_same(mod, part)


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("lhs,rhs", [((1, 8, 8, 8), (1, 1, 1, 8)), ((1, 8, 8, 8), (1, 1, 1, 1)),
                                     ((1, 1, 1, 8), (1, 8, 8, 8)), ((1, 1, 1, 1), (1, 8, 8, 8)),
                                     ((1, 8, 8, 8), (8,)), ((1, 8, 8, 8), ())])
def test_broadcast_operand_is_offloaded(op, lhs, rhs):
    # squeeze-and-excitation: a per-channel vector or a scalar broadcast over H×W (×C), in either operand order
    x, y = x4("x", lhs), x4("y", rhs)
    fn = relay.qnn.op.add if op == "add" else relay.qnn.op.mul
    out = relay.clip(fn(x, y, c(0.05), c(-1), c(0.04), c(2), c(0.06), c(1)), -100, 100)
    mod, part, report = partition(out, [x, y])
    assert composites(part) == [f"npu.qnn_{op}"] and not report.cpu_ops()
    assert_same(mod, part)


def test_constant_per_channel_multiplier_is_offloaded():
    x = x4()
    scale = c(np.arange(-4, 4, dtype="int8").reshape(1, 1, 1, 8))
    out = relay.qnn.op.mul(x, scale, c(0.05), c(-1), c(0.01), c(0), c(0.06), c(1))
    mod, part, report = partition(out, [x])
    assert composites(part) == ["npu.qnn_mul"] and not report.cpu_ops()
    assert_same(mod, part)


def test_rank5_tensors_stay_on_the_cpu():
    # the NPU's tensors are at most 4-D: neither a rank-5 add nor a reshape to rank 5 may be offered to it
    x = x4("x", (1, 2, 4, 4, 8))
    a = relay.qnn.op.add(x, x, c(0.05), c(-1), c(0.05), c(-1), c(0.06), c(1))
    mod, part, report = partition(a, [x])
    (n,) = report.cpu_ops()
    assert "rank 4 or less" in n.reason and "rank 5" in n.reason
    y = x4("y")
    e = relay.expand_dims(y, 0)
    mod, part, report = partition(e, [y])
    assert not composites(part) and [n.op for n in report.cpu_ops()] == ["expand_dims"]
    assert_same(mod, part)


# -- concatenation ------------------------------------------------------------------------------------------

def _concat(xs, quant, out_q, axis):
    return relay.qnn.op.concatenate(relay.Tuple(xs), relay.Tuple([c(np.float32(s)) for s, _ in quant]),
                                    relay.Tuple([c(z) for _, z in quant]), c(np.float32(out_q[0])), c(out_q[1]),
                                    axis=axis)


@pytest.mark.parametrize("dtype,axis,shapes", [
    ("int8", 3, [(1, 4, 4, 8), (1, 4, 4, 3), (1, 4, 4, 5)]), ("uint8", 3, [(1, 4, 4, 8), (1, 4, 4, 2)]),
    ("int8", 1, [(1, 2, 4, 8), (1, 5, 4, 8)]), ("uint8", -2, [(1, 4, 3, 8), (1, 4, 6, 8), (1, 4, 1, 8)]),
    ("int8", 0, [(2, 4, 4, 8), (1, 4, 4, 8)]), ("int8", 2, [(3, 4, 2, 8), (3, 4, 5, 8)]),
    ("int8", 0, [(3, 8), (2, 8)])])
def test_concat_with_other_input_quantization_is_offloaded(dtype, axis, shapes):
    # inception/detection heads: inputs with their own scale and zero point are re-quantized by lookup tables
    xs = [x4(f"x{i}", s, dtype) for i, s in enumerate(shapes)]
    zp = (lambda z: z + 128) if dtype == "uint8" else (lambda z: z)
    quant = [(0.02, zp(5)), (0.05, zp(-3)), (0.1, zp(7))][:len(shapes)]
    lo, hi = (zp(-100), zp(100))
    out = relay.clip(_concat(xs, quant, (0.05, zp(-3)), axis), lo, hi)
    mod, part, report = partition(out, xs)
    assert composites(part) == ["npu.qnn_concatenate"] and not report.cpu_ops()
    assert_same(mod, part)


def test_concat_the_npu_cannot_do_stays_on_the_cpu_with_reasons():
    # height with batch > 1: the inputs interleave in the NPU's batch×height rows
    xs = [x4("a", (2, 3, 4, 8)), x4("b", (2, 5, 4, 8))]
    mod, part, report = partition(_concat(xs, [(0.02, 5), (0.05, 0)], (0.05, 0), 1), xs)
    (n,) = report.cpu_ops()
    assert "height when the batch is 1" in n.reason and "batch 2" in n.reason and "interleave" in n.reason
    assert_same(mod, part)
    # int16 has no 256-entry table (and the NPU's concatenation is 8-bit)
    ys = [x4("a", dtype="int16"), x4("b", dtype="int16")]
    mod, part, report = partition(_concat(ys, [(0.02, 0), (0.05, 0)], (0.05, 0), 3), ys)
    (n,) = report.cpu_ops()
    assert "input 0 is int16" in n.reason and "lookup table needs 8-bit values" in n.reason
    assert_same(mod, part)


def test_inline_non_mac_policy_gives_compute_free_partitions_back():
    x = x4()
    out = relay.clip(relay.maximum(conv_chain(x, clip=False), x), -5, 5)
    mod, part, report = partition(out, [x], inline_non_mac=True)
    assert composites(part) == ["npu.qnn_conv2d"]
    clip = [n for n in report.cpu_ops() if n.op == "npu.qnn_clip"]
    assert clip and "multiply-accumulate" in clip[0].reason
    assert_same(mod, part)
    mod2, part2, report2 = partition(out, [x], min_partition_size=5)
    assert composites(part2) == [] and len(report2.notes) == 2
    assert_same(mod2, part2)


# -- rules in words -----------------------------------------------------------------------------------------

def test_every_npu_rule_is_described_and_reasons_come_from_the_descriptions():
    rules = {r.name: r for r in patterns.describe_rules("npu")}
    table = patterns.get_pattern_table("npu")
    assert set(e.name for e in table) <= set(rules)
    for e in table:
        assert rules[e.name].rules, e.name
    assert rules["reshape"].kind == "op"
    x = x4()
    _, _, report = partition(conv_chain(x, kernel=4), [x])
    reason = [n for n in report.cpu_ops() if n.op == "qnn.conv2d"][0].reason
    assert any(sentence in reason for sentence in rules["npu.qnn_conv2d"].rules)


def test_report_render_lists_cpu_ops():
    x = relay.var("x", shape=(1, 16), dtype="int8")
    _, _, report = partition(dense_chain(x, "TFLITE_FLOAT"), [x])
    text = report.render()
    assert "CPU-resident ops" in text and "qnn.dense" in text and LITERT_REASON in text


# -- vta and a new accelerator ---------------------------------------------------------------------------

def test_vta_offloads_conv_and_refuses_depthwise():
    x = x4()
    out = conv_chain(conv_chain(x, groups=8, layout="HWIO", clip=False), clip=True)
    mod, part, report = partition(out, [x], target="vta")
    assert composites(part) == ["vta.qnn_conv2d"]
    dw = [n for n in report.cpu_ops() if n.op == "qnn.conv2d"]
    assert dw and "groups is 1" in dw[0].reason
    assert_same(mod, part)


def test_example_accelerator_partitions_float_conv_relu_and_add():
    x = relay.var("x", shape=(1, 3, 6, 6))
    w = c(np.random.default_rng(0).standard_normal((3, 3, 3, 3)).astype("float32"))
    conv = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))
    out = relay.add(conv, x)
    mod, part, report = partition(out, [x], target="example_accelerator")
    assert composites(part) == ["example_accelerator.conv2d_relu"]
    assert len(report.partitions) == 1 and report.cpu_ops() == []
    ins = {"x": np.random.default_rng(1).standard_normal((1, 3, 6, 6)).astype("float32")}
    assert np.array_equal(byoc.evaluate(mod, ins)[0], byoc.evaluate(part, ins)[0])


def test_registering_a_new_accelerator_tvm_style():
    @patterns.register_pattern_table("mini")
    def mini_table():
        return [("mini.tanh_relu", is_op("nn.relu")(is_op("tanh")(wildcard())), lambda root: True),
                ("mini.relu", is_op("nn.relu")(wildcard()))]

    @relay.op.register_op_attr("negative", "target.mini")
    def _neg(call):
        return call.checked_type.dtype == "float32"

    try:
        x = relay.var("x", shape=(4,))
        out = relay.nn.relu(relay.tanh(relay.negative(x)))
        mod, part, report = partition(out, [x], target="mini")
        assert composites(part) == ["mini.tanh_relu"] and len(report.partitions) == 1
        assert [r.name for r in patterns.describe_rules("mini")][-1] == "negative"
    finally:
        remove_op_attr("negative", "target.mini")


def test_unknown_target_and_bad_table_names(monkeypatch):
    assert patterns.get_pattern_table("no_such_target") is None
    x = relay.var("x", shape=(4,))
    with pytest.raises(PartitionError, match="known targets"):
        byoc.partition_for("no_such_target", byoc.IRModule.from_expr(relay.Function([x], x)))
    # registered into a copy of the registry, so later tests (which build every registered table) never see it
    import patterns.registry as registry
    monkeypatch.setattr(registry, "_TABLE_FUNCS", dict(registry._TABLE_FUNCS))
    patterns.register_pattern_table("wrongnames", lambda: [("other.relu", is_op("nn.relu")(wildcard()))])
    with pytest.raises(PatternError, match="another target"):
        patterns.get_pattern_table("wrongnames")


# -- the shared MobileNetV2 --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mobilenet():
    path = shared_model(MOBILENET)
    from byoc.frontend import from_tflite
    return from_tflite(path)


def test_mobilenet_v2_offloads_every_conv_add_and_pool_in_one_partition(mobilenet):
    mod, params = mobilenet
    part, report = byoc.partition_for("npu", mod, params, return_report=True)
    counts = byoc.relay.analysis.count_ops(mod["main"])
    assert len(report.partitions) == 1
    (p,) = report.partitions
    inner = {}
    for op in p.ops:
        inner[op] = inner.get(op, 0) + 1
    assert inner["qnn.conv2d"] == counts["qnn.conv2d"] == 52
    assert inner["qnn.add"] == counts["qnn.add"] == 10
    assert inner["mean"] == counts["mean"] == 1  # TVM's MEAN form: cast → mean → qnn.requantize
    assert p.composites.count("npu.qnn_depthwise_conv2d") == 17
    cpu = {n.op: n.reason for n in report.cpu_ops()}
    assert set(cpu) == {"transpose", "qnn.dense", "nn.bias_add", "qnn.requantize"}
    assert LITERT_REASON in cpu["qnn.dense"] and "transpose" in cpu["transpose"]
    verify_partitioned(part)
    # Bit-exact: the interpreter gives the same logits before and after partitioning.
    name = mod["main"].params[0].name_hint
    x = np.random.default_rng(0).integers(-128, 128, (1, 3, 224, 224)).astype("int8")
    assert np.array_equal(byoc.evaluate(mod, {name: x}, params)[0], byoc.evaluate(part, {name: x})[0])


# -- every shared model, every table --------------------------------------------------------------------------

@pytest.mark.parametrize("name", shared_params())
@pytest.mark.parametrize("table", ["npu", "vta"])
def test_partitioning_a_shared_model_preserves_its_outputs(name, table):
    path = shared_model(name)
    from byoc.frontend import from_tflite
    mod, params = from_tflite(path)
    part = byoc.partition_for(table, mod, params)
    verify_partitioned(part, mod)
    offloaded = any(f.attrs.get("Compiler") == table for _, f in part.sorted_items())
    # hello_world is three FULLY_CONNECTED layers with LiteRT's double-precision requantization: both tables refuse it.
    assert offloaded == (name != "hello_world_int8.tflite"), f"{name}: offloaded to {table}: {offloaded}"
    rng = np.random.default_rng(3)
    for _ in range(2):
        feed = {p.name_hint: rng.integers(-128, 128, p.type_annotation.shape).astype(p.type_annotation.dtype)
                for p in mod["main"].params}
        before = byoc.evaluate(mod, feed, params)
        after = byoc.evaluate(part, feed)
        assert len(before) == len(after)
        for b, a in zip(before, after):
            np.testing.assert_array_equal(a, b)


# -- data movement as NPU copies: strided_slice, split, nn.pad, nn.depth_to_space ----------------------------

def _npu_ops(part):
    return sorted(n.op.name for gv, f in part.items() if f.attrs.get("Compiler") == "npu"
                  for n in byoc.ir.post_order(f) if isinstance(n, relay.Call) and hasattr(n.op, "name"))


def _npu_build_matches(mod, part, dtype="int8"):
    """The offered partition compiles for the NPU and runs bit-exact (the check never offers what npu_sim
    refuses)."""
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype)
    ins = {p.name_hint: rng.integers(int(info.min), int(info.max) + 1, p.type_annotation.shape).astype(dtype)
           for p in mod["main"].params}
    exe = byoc.build(part, target="npu,llvm", npu_config="ethos-u55-256-like")
    for a, b in zip(byoc.evaluate(mod, ins), exe.run(ins)):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("shape,make,op", [
    ((1, 8, 8, 8), lambda x: relay.strided_slice(x, begin=(0, 1, 2, 3), end=(1, 7, 8, 5)), "strided_slice"),
    ((3, 4, 5, 6), lambda x: relay.strided_slice(x, begin=(1, 0, 1, 0), end=(3, 4, 4, 6)), "strided_slice"),
    ((6, 10), lambda x: relay.strided_slice(x, begin=(-7,), end=(8,), axes=(1,)), "strided_slice"),
    ((1, 8, 8, 8), lambda x: relay.split(x, (3, 5), axis=3)[1], "split"),
    ((2, 8, 8, 8), lambda x: relay.split(x, 2, axis=2)[0], "split"),
    ((1, 8, 8, 8), lambda x: relay.nn.pad(x, ((0, 0), (7, 0), (1, 2), (0, 0)), c(-3, "int8")), "nn.pad"),
    ((2, 8, 8, 8), lambda x: relay.nn.pad(x, ((0, 0), (0, 0), (1, 2), (0, 0)), c(5, "int8")), "nn.pad"),
    ((8, 8, 8), lambda x: relay.nn.pad(x, ((2, 0), (1, 3), (0, 0)), c(5, "int8")), "nn.pad"),
    ((1, 4, 4, 8), lambda x: relay.nn.depth_to_space(x, 2, layout="NHWC"), "nn.depth_to_space"),
    ((2, 3, 4, 18), lambda x: relay.nn.depth_to_space(x, 3, layout="NHWC"), "nn.depth_to_space"),
])
def test_data_movement_is_offloaded_and_builds(shape, make, op):
    x = x4("x", shape)
    mod, part, report = partition(make(x), [x])
    assert not report.cpu_ops() and op in _npu_ops(part)
    _npu_build_matches(mod, part)


@pytest.mark.parametrize("shape,dtype,make,op,reason", [
    ((1, 8, 8, 8), "int8", lambda x: relay.strided_slice(x, begin=(0, 0, 0, 0), end=(1, 8, 8, 8),
                                                         strides=(1, 2, 1, 1)), "strided_slice",
     "strides are 1 and the slice is one block"),
    ((1, 8, 8, 8), "int8", lambda x: relay.strided_slice(x, begin=(0, 0, 0, 0), end=(1, 8, 8, 8),
                                                         strides=(1, 2, 1, 1)), "strided_slice",
     "found strides (1, 2, 1, 1)"),
    ((2, 8, 8, 8), "int8", lambda x: relay.strided_slice(x, begin=(0, 1, 0, 0), end=(2, 5, 8, 8)),
     "strided_slice", "part of the height of 2 batches"),
    ((2, 8, 8, 8), "int8", lambda x: relay.split(x, 2, axis=1)[0], "split", "part of the height of 2 batches"),
    ((6, 10), "int8", lambda x: relay.strided_slice(x, begin=(-4,), end=(5,), axes=(1,)), "strided_slice",
     "found an empty piece (6, 0)"),
    ((1, 8, 8, 8), "int16", lambda x: relay.split(x, 2, axis=3)[0], "split", "input dtype is int8 or uint8"),
    ((1, 8, 8, 8), "int8", lambda x: relay.nn.pad(x, ((0, 0), (0, 0), (0, 0), (0, 8)), c(0, "int8")), "nn.pad",
     "it pads an axis other than height and width"),
    ((1, 8, 8, 8), "int8", lambda x: relay.nn.pad(x, ((0, 0), (8, 0), (0, 0), (0, 0)), c(0, "int8")), "nn.pad",
     "at most 7 per side"),
    ((2, 8, 8, 8), "int8", lambda x: relay.nn.pad(x, ((0, 0), (1, 0), (0, 0), (0, 0)), c(0, "int8")), "nn.pad",
     "found batch 2 with height padding"),
    ((1, 8, 8, 8), "int8", lambda x: relay.nn.pad(x, ((0, 0), (1, 0), (0, 0), (0, 0)),
                                                  relay.var("v", shape=(), dtype="int8")), "nn.pad",
     "not a constant scalar"),
    ((1, 4, 4, 8), "int16", lambda x: relay.nn.depth_to_space(x, 2, layout="NHWC"), "nn.depth_to_space",
     "input dtype is int8 or uint8: found int16"),
])
def test_data_movement_the_npu_cannot_do_stays_on_the_cpu(shape, dtype, make, op, reason):
    x = x4("x", shape, dtype)
    expr = make(x)
    params = [x] + [v for v in byoc.ir.post_order(expr) if isinstance(v, relay.Var) and v is not x]
    mod, part, report = partition(expr, params)
    nodes = [n for n in report.cpu_ops() if n.op == op]
    assert nodes and reason in nodes[0].reason, [(n.op, n.reason) for n in report.cpu_ops()]
    assert op not in _npu_ops(part)
