"""ONNX: import time of a ResNet-18-sized QDQ model (onnx.helper topology, He-initialised weights, quantized with
``onnxruntime.quantization.quantize_static``, int8 activations and per-channel int8 weights, 1x3x224x224), and
its CPU latency against onnxruntime's (one thread, default optimizations) in the same run. The rows also count
output mismatches against onnxruntime (the importer follows its fusion rules and, for the groups onnxruntime
leaves in float, MLAS's float32 summation order, bit for bit)."""
from __future__ import annotations

import pathlib
import statistics
import tempfile
import time

import numpy as np


def resnet18(seed: int = 0, size: int = 224):
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper as h
    from onnx import numpy_helper as nh
    rng = np.random.default_rng(seed)
    inits, nodes = [], []
    count = [0]

    def conv(x, cin, cout, k, s, relu=True):
        i = count[0] = count[0] + 1
        w = rng.normal(0, np.sqrt(2.0 / (cin * k * k)), (cout, cin, k, k)).astype(np.float32)
        inits.extend([nh.from_array(w, f"w{i}"), nh.from_array(rng.normal(0, .05, cout).astype(np.float32), f"b{i}")])
        nodes.append(h.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[k // 2] * 4, strides=[s, s]))
        if not relu:
            return f"c{i}"
        nodes.append(h.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        return f"r{i}"

    x = conv("x", 3, 64, 7, 2)
    nodes.append(h.make_node("MaxPool", [x], ["mp"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = "mp", 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            s = 2 if stage and not block else 1
            y = conv(conv(x, cin, cout, 3, s), cout, cout, 3, 1, relu=False)
            skip = conv(x, cin, cout, 1, s, relu=False) if (s != 1 or cin != cout) else x
            j = len(nodes)
            nodes += [h.make_node("Add", [y, skip], [f"s{j}"]), h.make_node("Relu", [f"s{j}"], [f"o{j}"])]
            x, cin = f"o{j}", cout
    inits += [nh.from_array(rng.normal(0, .05, (1000, 512)).astype(np.float32), "fw"),
              nh.from_array(np.zeros(1000, np.float32), "fb")]
    nodes += [h.make_node("GlobalAveragePool", [x], ["gap"]), h.make_node("Flatten", ["gap"], ["f"]),
              h.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    g = h.make_graph(nodes, "resnet18", [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, size, size])],
                     [h.make_tensor_value_info("y", TP.FLOAT, [1, 1000])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def _quantize(model, tmp: pathlib.Path, act: str = "int8"):
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(1)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": rng.normal(0, 1, shape).astype(np.float32)} for _ in range(2)])

        def get_next(self):
            return next(self.it, None)

    onnx.save(model, tmp / "f.onnx")
    quantize_static(str(tmp / "f.onnx"), str(tmp / "q.onnx"), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8 if act == "int8" else QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
    return (tmp / "q.onnx").read_bytes()


def _median_ms(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run() -> list[dict]:
    import logging

    import onnxruntime as ort

    import byoc
    from byoc.frontend import from_onnx
    logging.getLogger().setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as d:
        data = _quantize(resnet18(), pathlib.Path(d))
    from_onnx(data)  # warm-up
    imp_ms = _median_ms(lambda: from_onnx(data), 3)
    mod, _ = from_onnx(data)
    exe = byoc.build(mod, target="llvm")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(5).normal(0, 1, (1, 3, 224, 224)).astype(np.float32)
    ours, ref = exe.run({"x": x})[0], sess.run(None, {"x": x})[0]
    mismatches = int(np.sum(ours != ref))
    cpu_ms = _median_ms(lambda: exe.run({"x": x}), 3)
    with tempfile.TemporaryDirectory() as d:
        data8 = _quantize(resnet18(), pathlib.Path(d), act="uint8")
    mod8, _ = from_onnx(data8)
    sess8 = ort.InferenceSession(data8, so, providers=["CPUExecutionProvider"])
    mismatches_u8 = int(np.sum(byoc.evaluate(mod8, {"x": x})[0] != sess8.run(None, {"x": x})[0]))
    ort_ms = _median_ms(lambda: sess.run(None, {"x": x}), 10)
    return [{"name": "from_onnx ResNet-18 QDQ (int8, per-channel, 224x224)", "value": imp_ms, "unit": "ms"},
            {"name": "CPU latency ResNet-18 QDQ, one thread", "value": cpu_ms, "unit": "ms",
             "peer": "onnxruntime 1 thread (ORT_ENABLE_ALL)", "peer_value": ort_ms, "ratio": cpu_ms / ort_ms},
            {"name": "ResNet-18 QDQ int8-activation output mismatches vs onnxruntime, CPU backend (of 1000; 11 convs "
                     "run in float there, in MLAS's summation order)", "value": mismatches, "unit": ""},
            {"name": "ResNet-18 QDQ uint8-activation output mismatches vs onnxruntime (of 1000; all convs fused)",
             "value": mismatches_u8, "unit": ""}]


def main() -> None:
    for r in run():
        print(r)


if __name__ == "__main__":
    main()
