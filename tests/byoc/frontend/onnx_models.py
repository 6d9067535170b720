"""ONNX test models built with onnx.helper, and their onnxruntime-quantized versions (QDQ, QOperator)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

OPSET = 17


def _init(name, arr, dtype=np.float32):
    return nh.from_array(np.asarray(arr, dtype), name)


def scale_init(name, v):
    """A float32 scale initializer (QLinear* operands)."""
    return nh.from_array(np.asarray(v, np.float32), name)


def zp_init(name, v, dt):
    """A zero-point initializer of numpy dtype ``dt``."""
    return nh.from_array(np.asarray(v, dt), name)


def value_info(name, shape, dt):
    return h.make_tensor_value_info(name, dt, shape)


def make_model(nodes, inputs, outputs, inits, opset=OPSET, ms=False):
    g = h.make_graph(nodes, "g", inputs, outputs, inits)
    ops = [h.make_opsetid("", opset)] + ([h.make_opsetid("com.microsoft", 1)] if ms else [])
    return h.make_model(g, opset_imports=ops)


_CNN_SHAPES = {"dwc": [1, 8, 4, 4], "c3": [1, 6, 4, 4], "logits": [1, 10], "prob": [1, 10]}


def cnn(seed: int = 0, batch_norm: bool = True, softmax: bool = True, output: str | None = None) -> onnx.ModelProto:
    """A small residual CNN: conv, [bn,] relu, max pool, conv, add, depthwise conv, clip, 1x1 conv, global pool,
    gemm[, softmax]; ``output`` cuts the graph after the node producing that tensor."""
    rng = np.random.default_rng(seed)
    inits = [_init("w1", rng.normal(0, .3, (8, 3, 3, 3))), _init("b1", rng.normal(0, .1, 8)),
             _init("w2", rng.normal(0, .2, (8, 8, 3, 3))), _init("b2", rng.normal(0, .1, 8)),
             _init("wd", rng.normal(0, .3, (8, 1, 3, 3))), _init("bd", rng.normal(0, .1, 8)),
             _init("w3", rng.normal(0, .3, (6, 8, 1, 1))), _init("b3", rng.normal(0, .1, 6)),
             _init("fc_w", rng.normal(0, .2, (10, 6))), _init("fc_b", rng.normal(0, .1, 10)),
             _init("lo", 0.0), _init("hi", 6.0)]
    nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1")]
    first = "c1"
    if batch_norm:
        inits += [_init("g", rng.uniform(.5, 1.5, 8)), _init("be", rng.normal(0, .1, 8)),
                  _init("mu", rng.normal(0, .1, 8)), _init("var", rng.uniform(.5, 1.5, 8))]
        nodes.append(h.make_node("BatchNormalization", ["c1", "g", "be", "mu", "var"], ["bn1"], epsilon=1e-5))
        first = "bn1"
    nodes += [
        h.make_node("Relu", [first], ["r1"]),
        h.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        h.make_node("Relu", ["c2"], ["r2"]),
        h.make_node("Add", ["r2", "p1"], ["res"], name="residual"),
        h.make_node("Conv", ["res", "wd", "bd"], ["dw"], pads=[1, 1, 1, 1], group=8, strides=[2, 2], name="dw"),
        h.make_node("Clip", ["dw", "lo", "hi"], ["dwc"]),
        h.make_node("Conv", ["dwc", "w3", "b3"], ["c3"], name="pw"),
        h.make_node("GlobalAveragePool", ["c3"], ["gap"]),
        h.make_node("Flatten", ["gap"], ["flat"], axis=1),
        h.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1, name="fc"),
        h.make_node("Softmax", ["logits"], ["prob"], axis=1),
    ]
    out = output or ("prob" if softmax else "logits")
    nodes = nodes[:[n.output[0] for n in nodes].index(out) + 1]
    used = {i for n in nodes for i in n.input}
    inits = [t for t in inits if t.name in used]
    m = make_model(nodes, [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 16, 16])],
                   [h.make_tensor_value_info(out, TP.FLOAT, _CNN_SHAPES[out])], inits)
    onnx.checker.check_model(m)
    return m


def _quantize_static(model: onnx.ModelProto, tmp_path, out_name: str, seed: int, **options) -> onnx.ModelProto:
    """onnxruntime's static quantization with a small calibration set of 8 normal batches."""
    from onnxruntime.quantization import CalibrationDataReader, quantize_static
    rng = np.random.default_rng(seed)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    name = model.graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{name: rng.normal(0, 1, shape).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.batches, None)

    src, dst = tmp_path / "float.onnx", tmp_path / out_name
    onnx.save(model, src)
    quantize_static(str(src), str(dst), Reader(), **options)
    return onnx.load(dst)


def quantize_qdq(model: onnx.ModelProto, tmp_path, per_channel: bool, seed: int = 1,
                 exclude=("Softmax",)) -> onnx.ModelProto:
    """onnxruntime's static QDQ quantization (int8 activations and weights)."""
    from onnxruntime.quantization import QuantFormat, QuantType
    ops = sorted({n.op_type for n in model.graph.node} - set(exclude))
    return _quantize_static(model, tmp_path, f"qdq{int(per_channel)}.onnx", seed, quant_format=QuantFormat.QDQ,
                            per_channel=per_channel, activation_type=QuantType.QInt8,
                            weight_type=QuantType.QInt8, op_types_to_quantize=ops,
                            extra_options={"DedicatedQDQPair": True})


def concat_pool_cnn(seed: int = 0) -> onnx.ModelProto:
    """Two conv branches (relu; sigmoid) joined by Concat, AveragePool (padded, strided), conv, LeakyRelu, global
    pool, Gemm: what onnxruntime's QOperator quantizer turns into QLinearConcat, QLinearAveragePool,
    QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool and QGemm."""
    rng = np.random.default_rng(seed)
    inits = [_init("w1", rng.normal(0, .3, (8, 3, 3, 3))), _init("b1", rng.normal(0, .1, 8)),
             _init("w2", rng.normal(0, .3, (4, 3, 1, 1))), _init("b2", rng.normal(0, .1, 4)),
             _init("w3", rng.normal(0, .2, (6, 12, 3, 3))), _init("b3", rng.normal(0, .1, 6)),
             _init("fc_w", rng.normal(0, .2, (10, 6))), _init("fc_b", rng.normal(0, .1, 10))]
    nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c1"], ["r1"]),
             h.make_node("Conv", ["x", "w2", "b2"], ["c2"]),
             h.make_node("Sigmoid", ["c2"], ["s2"]),
             h.make_node("Concat", ["r1", "s2"], ["cat"], axis=1),
             h.make_node("AveragePool", ["cat"], ["ap"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             h.make_node("Conv", ["ap", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1]),
             h.make_node("LeakyRelu", ["c3"], ["l3"], alpha=0.1),
             h.make_node("GlobalAveragePool", ["l3"], ["gap"]),
             h.make_node("Flatten", ["gap"], ["flat"]),
             h.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1)]
    m = make_model(nodes, [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 16, 16])],
                   [h.make_tensor_value_info("logits", TP.FLOAT, [1, 10])], inits)
    onnx.checker.check_model(m)
    return m


def quantize_qoperator(model: onnx.ModelProto, tmp_path, activation: str, seed: int = 1) -> onnx.ModelProto:
    """onnxruntime's static quantization in QOperator format (QLinear* ops), int8 weights."""
    from onnxruntime.quantization import QuantFormat, QuantType
    return _quantize_static(model, tmp_path, f"qop_{activation}.onnx", seed, quant_format=QuantFormat.QOperator,
                            activation_type=QuantType.QInt8 if activation == "int8" else QuantType.QUInt8,
                            weight_type=QuantType.QInt8)


def ort_run(model: onnx.ModelProto, feeds: dict, optimize: bool = True) -> list[np.ndarray]:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def ort_fused_op_types(model: onnx.ModelProto, tmp_path) -> list[str]:
    """The op types onnxruntime actually executes after its QDQ fusion (the optimized graph)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "ort_optimized.onnx")
    so.log_severity_level = 3
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]
