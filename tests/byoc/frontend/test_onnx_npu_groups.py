"""ONNX QDQ groups on the ``npu`` target, computed as onnxruntime computes them (ORT_ENABLE_ALL, one thread):

* DQ → HardSwish → Q: onnxruntime runs it in float32 (HardSigmoid + Mul after its graph optimizations);
  ``npu.qdq_elementwise`` is the group's 256-entry table;
* DQ → nearest Resize → Q: onnxruntime drops the equal-parameter pair and copies the integers;
  ``npu.qdq_resize`` is the NPU's RESIZE (plus the table of Q∘DQ when the parameters differ);
* DQ → GlobalAveragePool → Q: onnxruntime fuses QLinearGlobalAveragePool (integer sum, float32 requantize);
  ``npu.qnn_global_avg_pool`` is a depthwise all-ones convolution + the float32 output stage.

Float ReduceMean, float ConvTranspose and bilinear Resize stay on the CPU, each with the rule that says why.
Models are built with onnx.helper and quantized with onnxruntime.quantization.quantize_static; expected values
are onnxruntime's."""
from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import byoc
from byoc.frontend import from_onnx
from byoc.ir.expr import Call, Function
from byoc.ir.traversal import post_order

from onnx_ort_nets import _model, _w, quantize
from onnx_ort_nets import ort_session as _sess

ort = pytest.importorskip("onnxruntime")


def _sandwich(op_nodes, mid_channels: int, mid_hw: tuple[int, int], in_hw=(8, 8), seed=0) -> onnx.ModelProto:
    """conv → op → 1x1 conv: the op reads and writes quantized activations (a QDQ group of its own)."""
    rng = np.random.default_rng(seed)
    inits = [_w(rng, "w0", (8, 3, 3, 3)), _w(rng, "b0", (8,), .1)]
    extra, nodes = op_nodes("c0", "m")
    inits += extra + [_w(rng, "w1", (5, mid_channels, 1, 1)), _w(rng, "b1", (5,), .1)]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1])] + nodes + \
        [helper.make_node("Conv", ["m", "w1", "b1"], ["y"])]
    return _model(nodes, inits, [1, 3, *in_hw], "y", [1, 5, *mid_hw])


def _hardswish(i, o):
    return [], [helper.make_node("HardSwish", [i], [o])]


def _gap(i, o):
    return [], [helper.make_node("GlobalAveragePool", [i], [o])]


def _reduce_mean(i, o):
    return [], [helper.make_node("ReduceMean", [i], [o], axes=[2, 3], keepdims=1)]


def _resize(mode, ctm, nearest_mode=None):
    def f(i, o):
        kw = dict(mode=mode, coordinate_transformation_mode=ctm)
        if nearest_mode:
            kw["nearest_mode"] = nearest_mode
        return [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")], \
            [helper.make_node("Resize", [i, "", "scales"], [o], **kw)]
    return f


def _conv_transpose(i, o):
    rng = np.random.default_rng(3)
    return [_w(rng, "wt", (8, 4, 2, 2)), _w(rng, "bt", (4,), .1)], \
        [helper.make_node("ConvTranspose", [i, "wt", "bt"], [o], strides=[2, 2])]


def _composites(part) -> collections.Counter:
    return collections.Counter(n.op.attrs["Composite"] for _, f in part.items() if f.attrs.get("Compiler")
                               for n in post_order(f) if isinstance(n, Call) and isinstance(n.op, Function))


def _check_bit_exact(q, mod, part, runs=3, seed=5):
    sess = _sess(q)
    exe_npu = byoc.build(part, target="npu,llvm")
    exe_cpu = byoc.build(mod, target="llvm")
    shape = [d.dim_value for d in q.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    for _ in range(runs):
        x = rng.normal(0, 1, shape).astype(np.float32)
        ref = sess.run(None, {"x": x})[0]
        np.testing.assert_array_equal(exe_npu.run({"x": x})[0], ref)
        np.testing.assert_array_equal(exe_cpu.run({"x": x})[0], ref)
        np.testing.assert_array_equal(byoc.evaluate(part, {"x": x})[0], ref)


_OFFLOADED = [
    ("hardswish", _hardswish, 8, (8, 8), (8, 8), "npu.qdq_elementwise"),
    ("gap", _gap, 8, (1, 1), (8, 8), "npu.qnn_global_avg_pool"),
    ("gap_7x7", _gap, 8, (1, 1), (7, 7), "npu.qnn_global_avg_pool"),
    ("gap_20x20", _gap, 8, (1, 1), (20, 20), "npu.qnn_global_avg_pool"),
    ("resize_nearest_floor", _resize("nearest", "asymmetric", "floor"), 8, (16, 16), (8, 8), "npu.qdq_resize"),
    ("resize_nearest_default", _resize("nearest", "half_pixel"), 8, (16, 16), (8, 8), "npu.qdq_resize"),
    ("resize_nearest_align", _resize("nearest", "align_corners", "round_prefer_ceil"), 8, (16, 16), (8, 8),
     "npu.qdq_resize"),
]


@pytest.mark.parametrize("act, pc", [("int8", True), ("uint8", True), ("int8", False), ("uint8", False)])
@pytest.mark.parametrize("name, op, ch, mid_hw, in_hw, composite", _OFFLOADED, ids=[c[0] for c in _OFFLOADED])
def test_qdq_group_is_offloaded_and_bit_exact(tmp_path, name, op, ch, mid_hw, in_hw, composite, act, pc):
    q = quantize(_sandwich(op, ch, mid_hw, in_hw), tmp_path, act=act, per_channel=pc)
    mod, _ = from_onnx(q)
    part, rep = byoc.partition_for("npu", mod, return_report=True)
    comps = _composites(part)
    assert comps[composite] == 1, comps
    # the whole model is one NPU partition between the input's quantize and the output's dequantize
    assert {n.op for n in rep.cpu_ops()} <= {"qnn.quantize", "qnn.dequantize", "layout_transform"}
    _check_bit_exact(q, mod, part)


def _qdq_only(op_type: str, dt, s_in, z_in, s_out, z_out, shape, **attrs) -> onnx.ModelProto:
    """x (8-bit) → DequantizeLinear → op → QuantizeLinear → y (8-bit), parameters chosen by hand."""
    inits = [helper.make_tensor("si", TensorProto.FLOAT, [], [s_in]), helper.make_tensor("zi", dt, [], [z_in]),
             helper.make_tensor("so", TensorProto.FLOAT, [], [s_out]), helper.make_tensor("zo", dt, [], [z_out])]
    out_shape = list(shape)
    extra = []
    if op_type == "Div":
        inits.append(helper.make_tensor("k", TensorProto.FLOAT, [], [0.37]))
        extra = ["k"]
    if op_type == "Resize":
        inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
        extra = ["", "scales"]
        out_shape = [shape[0], shape[1], shape[2] * 2, shape[3] * 2]
    nodes = [helper.make_node("DequantizeLinear", ["x", "si", "zi"], ["d"]),
             helper.make_node(op_type, ["d", *extra], ["f"], **attrs),
             helper.make_node("QuantizeLinear", ["f", "so", "zo"], ["y"])]
    g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", dt, list(shape))],
                          [helper.make_tensor_value_info("y", dt, out_shape)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _every_value(npdt, shape):
    info = np.iinfo(npdt)
    return np.arange(int(info.min), int(info.max) + 1).astype(npdt).reshape(shape)


@pytest.mark.parametrize("dt, npdt, params", [
    (TensorProto.INT8, np.int8, (0.0448, -8, 0.0252, -113)),
    (TensorProto.UINT8, np.uint8, (0.0448, 120, 0.0252, 15)),
    (TensorProto.INT8, np.int8, (0.1, 3, 0.02, -100)),
    (TensorProto.UINT8, np.uint8, (0.0371, 131, 0.0459, 9))])
@pytest.mark.parametrize("op, composite", [("HardSwish", "npu.qdq_elementwise"),
                                           ("HardSigmoid", "npu.qdq_elementwise"),
                                           ("LeakyRelu", "npu.qnn_leaky_relu")])   # QLinearLeakyRelu
def test_activation_table_equals_onnxruntime_on_all_256_inputs(op, composite, dt, npdt, params):
    m = _qdq_only(op, dt, *params, shape=(1, 4, 8, 8))
    mod, _ = from_onnx(m)
    part = byoc.partition_for("npu", mod)
    assert _composites(part)[composite] == 1
    x = _every_value(npdt, (1, 4, 8, 8))
    ref = _sess(m).run(None, {"x": x})[0]
    np.testing.assert_array_equal(byoc.build(part, target="npu,llvm").run({"x": x})[0], ref)
    np.testing.assert_array_equal(byoc.build(mod, target="llvm").run({"x": x})[0], ref)


def _rescaled_before(q: onnx.ModelProto, op_type: str, scale: float) -> onnx.ModelProto:
    """``q`` with the DequantizeLinear read by ``op_type`` given another scale (its zero point and the quantized
    tensor unchanged), so the group's parameters differ on each side and quantize(dequantize(v)) is not the
    identity."""
    q = onnx.ModelProto.FromString(q.SerializeToString())
    node = next(n for n in q.graph.node if n.op_type == op_type)
    deq = next(n for n in q.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == node.input[0])
    q.graph.initializer.append(numpy_helper.from_array(np.array(scale, np.float32), "other_scale"))
    deq.input[1] = "other_scale"
    return q


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_nearest_resize_with_other_output_parameters(tmp_path, act):
    """Different parameters on each side: onnxruntime keeps DQ → float Resize → Q; the NPU copies the integers and
    applies the 256-entry table of quantize(dequantize(v))."""
    q = quantize(_sandwich(_resize("nearest", "asymmetric", "floor"), 8, (16, 16)), tmp_path, act=act,
                 per_channel=True)
    q = _rescaled_before(q, "Resize", 0.031)
    mod, _ = from_onnx(q)
    part = byoc.partition_for("npu", mod)
    assert _composites(part)["npu.qdq_resize"] == 1
    from npu_sim.lower import lower_function
    func = next(f for _, f in part.items() if f.attrs.get("Compiler") == "npu")
    assert [layer.op for layer in lower_function(func).layers if getattr(layer, "op", "") in ("resize", "lut")] == \
        ["resize", "lut"]
    _check_bit_exact(q, mod, part)


_KEPT = [
    # a float ReduceMean imports as onnxruntime's Eigen-order sum: float32 slices and adds (eigen_reduce.py)
    ("reduce_mean", _reduce_mean, 8, (1, 1), "strided_slice", "found float32"),
    ("conv_transpose", _conv_transpose, 4, (16, 16), "nn.conv2d_transpose", "MLAS products and sums"),
    ("resize_linear", _resize("linear", "half_pixel"), 8, (16, 16), "image.resize2d", "rounding tie"),
]


@pytest.mark.parametrize("act", ["int8", "uint8"])
@pytest.mark.parametrize("name, op, ch, mid_hw, cpu_op, why", _KEPT, ids=[c[0] for c in _KEPT])
def test_float_group_stays_on_the_cpu_with_its_reason(tmp_path, name, op, ch, mid_hw, cpu_op, why, act):
    q = quantize(_sandwich(op, ch, mid_hw), tmp_path, act=act, per_channel=True)
    mod, _ = from_onnx(q)
    part, rep = byoc.partition_for("npu", mod, return_report=True)
    reasons = [n.reason for n in rep.cpu_ops() if n.op == cpu_op]
    assert reasons and all(why in r for r in reasons), reasons
    assert _composites(part)["npu.qnn_conv2d"] == 2        # the convolutions around it are offloaded
    _check_bit_exact(q, mod, part, runs=2)


# -- ethos-u: where Vela's rules for the TFLite op the group stands for allow ------------------------------------

@pytest.mark.parametrize("dt, npdt, params", [(TensorProto.INT8, np.int8, (0.0448, -8, 0.0252, -113)),
                                              (TensorProto.UINT8, np.uint8, (0.0448, 120, 0.0252, 15))])
def test_ethos_u_runs_onnx_hardswish_as_its_lookup_table(dt, npdt, params):
    m = _qdq_only("HardSwish", dt, *params, shape=(1, 4, 8, 8))
    mod, _ = from_onnx(m)
    part = byoc.partition_for("ethos-u", mod)
    assert _composites(part)["ethos-u.qdq_elementwise"] == 1
    x = _every_value(npdt, (1, 4, 8, 8))
    ref = _sess(m).run(None, {"x": x})[0]
    np.testing.assert_array_equal(byoc.build(part, target="ethos-u,llvm").run({"x": x})[0], ref)


def test_ethos_u_keeps_other_elementwise_groups_and_onnx_global_pools_on_the_cpu(tmp_path):
    # DQ → Div → Q: a table on the npu target (bit-exact, every value); not an activation Vela runs as a table
    m = _qdq_only("Div", TensorProto.INT8, 0.05, 3, 0.03, -100, shape=(1, 4, 8, 8))
    mod, _ = from_onnx(m)
    part = byoc.partition_for("npu", mod)
    assert _composites(part)["npu.qdq_elementwise"] == 1
    x = _every_value(np.int8, (1, 4, 8, 8))
    np.testing.assert_array_equal(byoc.build(part, target="npu,llvm").run({"x": x})[0],
                                  _sess(m).run(None, {"x": x})[0])
    _, rep = byoc.partition_for("ethos-u", mod, return_report=True)
    assert any("HardSwish or HardSigmoid" in n.reason and "found divide" in n.reason for n in rep.cpu_ops())
    q = quantize(_sandwich(_gap, 8, (1, 1)), tmp_path, act="uint8", per_channel=True)
    mod, _ = from_onnx(q)
    from byoc.transform.convert_layout import ConvertLayout
    from byoc.transform.pass_infra import PassContext, Sequential
    from byoc.transform.sink_layout_transform import SinkLayoutTransform
    with PassContext(opt_level=3):
        nhwc = Sequential([ConvertLayout({"qnn.conv2d": ["NHWC", "default"]}), SinkLayoutTransform()])(mod)
    _, rep = byoc.partition_for("ethos-u", nhwc, return_report=True)
    reasons = [n.reason for n in rep.cpu_ops() if n.op == "sum"]
    assert reasons and all("ethos-u.qnn_global_avg_pool" in r and "rounding 'ONNX'" in r for r in reasons), reasons


def test_global_pool_too_large_for_the_local_sram_stays_on_the_cpu(tmp_path):
    """A 60x60 plane of one 8-channel block does not fit ethos-u55-256-like's 46 KiB SHRAM twice: refused by the
    table (not a compile error), bit-exact on the CPU."""
    q = quantize(_sandwich(_gap, 8, (1, 1), in_hw=(60, 60)), tmp_path, act="uint8", per_channel=True)
    mod, _ = from_onnx(q)
    part, rep = byoc.partition_for("npu", mod, return_report=True)
    assert "npu.qnn_global_avg_pool" not in _composites(part)
    reasons = [n.reason for n in rep.cpu_ops() if n.op == "sum"]
    assert reasons and all("local SRAM" in r and "60x60" in r for r in reasons), reasons
    _check_bit_exact(q, mod, part, runs=1)
