"""Residual / branching networks built with onnx.helper, the shapes where onnxruntime's QDQ fusion depends on
fan-out: a residual stream (a tensor read by a conv and an Add), Concat branches (one tensor read by two convs),
x·sigmoid(x) (one tensor read by Sigmoid and Mul) and a transformer-style MatMul with a skip connection."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

from onnx_models import make_model

__all__ = ["NETS", "quantize", "ort_session"]


def ort_session(model: onnx.ModelProto):
    """onnxruntime's CPU session as byoc follows it: all graph optimizations, one intra-op thread."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _w(rng, name, shape, s=0.3):
    return nh.from_array(rng.normal(0, s, shape).astype(np.float32), name)


def _model(nodes, inits, in_shape, out, out_shape, opset=17):
    m = make_model(nodes, [h.make_tensor_value_info("x", TP.FLOAT, in_shape)],
                   [h.make_tensor_value_info(out, TP.FLOAT, out_shape)], inits, opset=opset)
    onnx.checker.check_model(m)
    return m


def residual(seed=0):
    """conv-relu, then two residual blocks (conv-relu-conv + skip, relu), GAP, Gemm."""
    rng = np.random.default_rng(seed)
    inits = [_w(rng, "w0", (8, 3, 3, 3)), _w(rng, "b0", (8,), .1)]
    nodes = [h.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c0"], ["r0"])]
    prev = "r0"
    for i in range(2):
        inits += [_w(rng, f"wa{i}", (8, 8, 3, 3), .2), _w(rng, f"ba{i}", (8,), .1),
                  _w(rng, f"wb{i}", (8, 8, 3, 3), .2), _w(rng, f"bb{i}", (8,), .1)]
        nodes += [h.make_node("Conv", [prev, f"wa{i}", f"ba{i}"], [f"ca{i}"], pads=[1, 1, 1, 1]),
                  h.make_node("Relu", [f"ca{i}"], [f"ra{i}"]),
                  h.make_node("Conv", [f"ra{i}", f"wb{i}", f"bb{i}"], [f"cb{i}"], pads=[1, 1, 1, 1]),
                  h.make_node("Add", [f"cb{i}", prev], [f"s{i}"]),
                  h.make_node("Relu", [f"s{i}"], [f"o{i}"])]
        prev = f"o{i}"
    inits += [_w(rng, "fw", (10, 8), .3), _w(rng, "fb", (10,), .1)]
    nodes += [h.make_node("GlobalAveragePool", [prev], ["gap"]), h.make_node("Flatten", ["gap"], ["flat"]),
              h.make_node("Gemm", ["flat", "fw", "fb"], ["y"], transB=1)]
    return _model(nodes, inits, [1, 3, 12, 12], "y", [1, 10])


def concat_branches(seed=0):
    """One tensor read by a 1x1 and a 3x3 conv (inception-style), Concat, MaxPool, conv."""
    rng = np.random.default_rng(seed)
    inits = [_w(rng, "w0", (8, 3, 3, 3)), _w(rng, "b0", (8,), .1), _w(rng, "w1", (4, 8, 1, 1)),
             _w(rng, "b1", (4,), .1), _w(rng, "w2", (6, 8, 3, 3), .2), _w(rng, "b2", (6,), .1),
             _w(rng, "w3", (5, 10, 3, 3), .2), _w(rng, "b3", (5,), .1)]
    nodes = [h.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c0"], ["r0"]),
             h.make_node("Conv", ["r0", "w1", "b1"], ["c1"]), h.make_node("Relu", ["c1"], ["r1"]),
             h.make_node("Conv", ["r0", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c2"], ["r2"]),
             h.make_node("Concat", ["r1", "r2"], ["cat"], axis=1),
             h.make_node("MaxPool", ["cat"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
             h.make_node("Conv", ["mp", "w3", "b3"], ["y"], pads=[1, 1, 1, 1])]
    return _model(nodes, inits, [1, 3, 12, 12], "y", [1, 5, 6, 6])


def swish(seed=0):
    """conv, x·sigmoid(x) (SiLU as exported by torch), depthwise conv, x·sigmoid(x), conv."""
    rng = np.random.default_rng(seed)
    inits = [_w(rng, "w0", (8, 3, 3, 3)), _w(rng, "b0", (8,), .1), _w(rng, "wd", (8, 1, 3, 3)),
             _w(rng, "bd", (8,), .1), _w(rng, "w2", (6, 8, 1, 1)), _w(rng, "b2", (6,), .1)]
    nodes = [h.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
             h.make_node("Sigmoid", ["c0"], ["g0"]), h.make_node("Mul", ["c0", "g0"], ["s0"]),
             h.make_node("Conv", ["s0", "wd", "bd"], ["c1"], pads=[1, 1, 1, 1], group=8),
             h.make_node("Sigmoid", ["c1"], ["g1"]), h.make_node("Mul", ["c1", "g1"], ["s1"]),
             h.make_node("Conv", ["s1", "w2", "b2"], ["y"])]
    return _model(nodes, inits, [1, 3, 10, 10], "y", [1, 6, 10, 10])


def mlp_skip(seed=0):
    """Tokens [8, 16]: MatMul + bias, Relu, MatMul + bias, skip Add, MatMul: the transformer FFN shape."""
    rng = np.random.default_rng(seed)
    inits = [_w(rng, "w1", (16, 32), .25), _w(rng, "b1", (32,), .1), _w(rng, "w2", (32, 16), .2),
             _w(rng, "b2", (16,), .1), _w(rng, "w3", (16, 4), .3)]
    nodes = [h.make_node("MatMul", ["x", "w1"], ["m1"]), h.make_node("Add", ["m1", "b1"], ["a1"]),
             h.make_node("Relu", ["a1"], ["r1"]), h.make_node("MatMul", ["r1", "w2"], ["m2"]),
             h.make_node("Add", ["m2", "b2"], ["a2"]), h.make_node("Add", ["a2", "x"], ["s"]),
             h.make_node("MatMul", ["s", "w3"], ["y"])]
    return _model(nodes, inits, [8, 16], "y", [8, 4])


def two_branch_add(seed=0):
    """Two convs of one input, each quantized output read once (onnxruntime rewrites them to uint8), added,
    multiplied by a constant (float: the constant stays int8) and average-pooled: QLinearAdd and QLinearAveragePool
    on uint8, whose output zero point enters float32 arithmetic before rounding."""
    rng = np.random.default_rng(seed)
    inits = [_w(rng, "w0", (8, 3, 3, 3)), _w(rng, "b0", (8,), .1), _w(rng, "w1", (8, 3, 1, 1)), _w(rng, "b1", (8,), .1),
             _w(rng, "s2", (1, 8, 1, 1), .5)]
    nodes = [h.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]), h.make_node("Conv", ["x", "w1", "b1"], ["c1"]),
             h.make_node("Add", ["c0", "c1"], ["s"]), h.make_node("Mul", ["s", "s2"], ["m"]),
             h.make_node("AveragePool", ["m"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    return _model(nodes, inits, [1, 3, 12, 12], "y", [1, 8, 6, 6])


NETS = {"residual": residual, "concat_branches": concat_branches, "swish": swish, "mlp_skip": mlp_skip}


def quantize(model: onnx.ModelProto, tmp_path, *, fmt="QDQ", act="int8", weight="int8", per_channel=False,
             seed=1, extra=None) -> onnx.ModelProto:
    """``onnxruntime.quantization.quantize_static`` with its default options (as a new user calls it) and a
    calibration set of 8 normal batches."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    types = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8, "int16": QuantType.QInt16,
             "uint16": QuantType.QUInt16}
    rng = np.random.default_rng(seed)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"x": rng.normal(0, 1, shape).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.batches, None)

    src = tmp_path / "float.onnx"
    dst = tmp_path / f"q_{fmt}_{act}_{weight}_{int(per_channel)}.onnx"
    onnx.save(model, src)
    quantize_static(str(src), str(dst), Reader(), quant_format=getattr(QuantFormat, fmt),
                    activation_type=types[act], weight_type=types[weight], per_channel=per_channel,
                    extra_options=dict(extra or {}))
    return onnx.load(dst)


def mobilenet_v3_block(seed=0, opset=17):
    """conv, HardSwish, depthwise conv, squeeze-excite (ReduceMean, 1x1 convs, Relu, HardSigmoid, Mul), 1x1 conv,
    residual Add, then ReduceMean over H, W (torch's adaptive_avg_pool2d(x, 1) under the dynamo exporter), Gemm."""
    rng = np.random.default_rng(seed)
    inits = [_w(rng, "w0", (8, 3, 3, 3)), _w(rng, "b0", (8,), .1), _w(rng, "wd", (8, 1, 3, 3)),
             _w(rng, "bd", (8,), .1), _w(rng, "ws1", (4, 8, 1, 1)), _w(rng, "bs1", (4,), .1),
             _w(rng, "ws2", (8, 4, 1, 1)), _w(rng, "bs2", (8,), .1), _w(rng, "wp", (8, 8, 1, 1)),
             _w(rng, "bp", (8,), .1)]
    axes_in = opset >= 18
    if axes_in:
        inits.append(nh.from_array(np.array([2, 3], np.int64), "axes"))
    rm = (lambda i, o: h.make_node("ReduceMean", [i, "axes"], [o], keepdims=1)) if axes_in else \
        (lambda i, o: h.make_node("ReduceMean", [i], [o], axes=[2, 3], keepdims=1))
    nodes = [h.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
             h.make_node("HardSwish", ["c0"], ["a0"]),
             h.make_node("Conv", ["a0", "wd", "bd"], ["c1"], pads=[1, 1, 1, 1], group=8),
             h.make_node("HardSwish", ["c1"], ["a1"]),
             rm("a1", "se0"),
             h.make_node("Conv", ["se0", "ws1", "bs1"], ["se1"]), h.make_node("Relu", ["se1"], ["se2"]),
             h.make_node("Conv", ["se2", "ws2", "bs2"], ["se3"]),
             h.make_node("HardSigmoid", ["se3"], ["se4"], alpha=1.0 / 6, beta=0.5),
             h.make_node("Mul", ["a1", "se4"], ["sc"]),
             h.make_node("Conv", ["sc", "wp", "bp"], ["p"]),
             h.make_node("Add", ["p", "a0"], ["r"]),
             rm("r", "g"), h.make_node("Flatten", ["g"], ["f"]),
             h.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    inits += [_w(rng, "fw", (10, 8)), _w(rng, "fb", (10,), .1)]
    return _model(nodes, inits, [1, 3, 16, 16], "y", [1, 10], opset=opset)


def audio_1d(seed=0):
    """1-D conv, Relu, 1-D max pool (ceil_mode), 1-D conv, 1-D average pool, Flatten, Gemm."""
    rng = np.random.default_rng(seed)
    inits = [_w(rng, "w0", (8, 2, 5)), _w(rng, "b0", (8,), .1), _w(rng, "w1", (8, 8, 3), .2),
             _w(rng, "b1", (8,), .1), _w(rng, "fw", (4, 8 * 5), .2), _w(rng, "fb", (4,), .1)]
    nodes = [h.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[2, 2], strides=[2]),
             h.make_node("Relu", ["c0"], ["r0"]),
             h.make_node("MaxPool", ["r0"], ["p0"], kernel_shape=[3], strides=[2], ceil_mode=1),
             h.make_node("Conv", ["p0", "w1", "b1"], ["c1"], pads=[1, 1]),
             h.make_node("AveragePool", ["c1"], ["p1"], kernel_shape=[2], strides=[2]),
             h.make_node("Flatten", ["p1"], ["f"]),
             h.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    return _model(nodes, inits, [1, 2, 40], "y", [1, 4])


def unet_up(seed=0):
    """conv, ConvTranspose (stride 2) upsampling, Concat skip, conv: a UNet decoder step."""
    rng = np.random.default_rng(seed)
    inits = [_w(rng, "w0", (8, 3, 3, 3)), _w(rng, "b0", (8,), .1), _w(rng, "wt", (8, 4, 2, 2)),
             _w(rng, "bt", (4,), .1), _w(rng, "w1", (5, 7, 3, 3), .2), _w(rng, "b1", (5,), .1)]
    nodes = [h.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
             h.make_node("Relu", ["c0"], ["r0"]),
             h.make_node("ConvTranspose", ["r0", "wt", "bt"], ["u"], strides=[2, 2]),
             h.make_node("Concat", ["u", "x"], ["cat"], axis=1),
             h.make_node("Conv", ["cat", "w1", "b1"], ["y"], pads=[1, 1, 1, 1])]
    return _model(nodes, inits, [1, 3, 12, 12], "y", [1, 5, 12, 12])


ARCHS = {"mobilenet_v3_block": mobilenet_v3_block, "mobilenet_v3_block_opset18": lambda: mobilenet_v3_block(opset=18),
         "audio_1d": audio_1d, "unet_up": unet_up}
