"""The classic TVM programs, written as a TVM user wrote them with only the imports changed
(``import tvm`` → ``import byoc as tvm``, ``from tvm.X import Y`` → ``from byoc.X import Y``).

Expected values come from numpy, onnxruntime, LiteRT's reference kernels or the reference interpreter
(``byoc.evaluate``, itself checked against those elsewhere), never from the build under test."""
from __future__ import annotations

import numpy as np
import pytest

import byoc as tvm
from byoc import relay
from byoc.contrib import graph_executor


def test_hello_world_relay_build_graph_executor():
    # Relay's "hello world": build a tiny network with relay.build and run it through the graph executor
    x = relay.var("x", shape=(1, 16), dtype="float32")
    w = relay.var("w", shape=(8, 16), dtype="float32")
    b = relay.var("b", shape=(8,), dtype="float32")
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w), b))
    func = relay.Function([x, w, b], y)
    mod = tvm.IRModule.from_expr(func)
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((8, 16)).astype("float32"), "b": rng.standard_normal(8).astype("float32")}
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    dev = tvm.cpu(0)
    module = graph_executor.GraphModule(lib["default"](dev))
    data = rng.standard_normal((1, 16)).astype("float32")
    module.set_input("x", data)
    module.run()
    out = module.get_output(0).numpy()
    module.set_input(**{"x": np.zeros_like(data)})
    module.run(x=data)                      # inputs by keyword, as TVM's run(**input_dict)
    np.testing.assert_array_equal(module.get_output(0).numpy(), out)
    expected = np.maximum(data @ params["w"].T + params["b"], 0)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert module.get_num_outputs() == 1
    # the output can also be copied into a caller's array
    buf = tvm.nd.empty((1, 8), "float32")
    module.get_output(0, buf)
    np.testing.assert_array_equal(buf.numpy(), out)
    # the factory's other faces
    assert '"op": "tvm_op"' in lib.get_graph_json() and '"name": "x"' in lib.get_graph_json()
    assert "define " in lib.get_lib().get_source()       # LLVM IR of the CPU kernels
    assert set(lib.get_params()) == {"w", "b"}
    timer = module.module.time_evaluator("run", dev, number=2, repeat=3)
    res = timer()
    assert len(res.results) == 3 and all(t > 0 for t in res.results)


def test_conv_bn_relu_untyped_weights_typed_by_infer_type():
    data = relay.var("data", shape=(1, 3, 32, 32), dtype="float32")
    weight = relay.var("weight")
    bn_gamma, bn_beta = relay.var("bn_gamma"), relay.var("bn_beta")
    bn_mean, bn_var = relay.var("bn_mean"), relay.var("bn_var")
    conv = relay.nn.conv2d(data, weight, kernel_size=(3, 3), channels=16, padding=(1, 1))
    bn = relay.nn.batch_norm(conv, bn_gamma, bn_beta, bn_mean, bn_var)
    out = relay.nn.relu(bn[0])
    func = relay.Function(relay.analysis.free_vars(out), out)
    mod = tvm.IRModule.from_expr(func)
    mod = relay.transform.InferType()(mod)
    shapes = {p.name_hint: p.checked_type.concrete_shape for p in mod["main"].params}
    assert shapes == {"data": (1, 3, 32, 32), "weight": (16, 3, 3, 3), "bn_gamma": (16,), "bn_beta": (16,),
                      "bn_mean": (16,), "bn_var": (16,)}


def test_conv_bn_relu_typed_builds_and_matches_reference():
    # the same block with typed variables: build it and compare with the reference interpreter
    data = relay.var("data", shape=(1, 3, 16, 16), dtype="float32")
    weight = relay.var("weight", shape=(8, 3, 3, 3), dtype="float32")
    names = ("bn_gamma", "bn_beta", "bn_mean", "bn_var")
    gamma, beta, mean, var = (relay.var(n, shape=(8,), dtype="float32") for n in names)
    conv = relay.nn.conv2d(data, weight, kernel_size=(3, 3), channels=8, padding=(1, 1))
    out = relay.nn.relu(relay.nn.batch_norm(conv, gamma, beta, mean, var)[0])
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(out), out))
    mod = relay.transform.InferType()(mod)
    assert mod["main"].body.checked_type.concrete_shape == (1, 8, 16, 16)
    rng = np.random.default_rng(1)
    params = {"weight": rng.standard_normal((8, 3, 3, 3)).astype("float32"),
              "bn_gamma": rng.uniform(0.5, 1.5, 8).astype("float32"),
              "bn_beta": rng.standard_normal(8).astype("float32"),
              "bn_mean": rng.standard_normal(8).astype("float32"),
              "bn_var": rng.uniform(0.5, 2.0, 8).astype("float32")}
    x = rng.standard_normal((1, 3, 16, 16)).astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("data", x)
    m.run()
    expected = tvm.evaluate(mod, {"data": x}, params)[0]
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_export_library_load_module_and_param_dict(tmp_path):
    x = relay.var("x", shape=(2, 3), dtype="float32")
    w = relay.var("w", shape=(2, 3), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.multiply(x, w)))
    params = {"w": np.arange(6, dtype="float32").reshape(2, 3)}
    lib = relay.build(mod, target="llvm", params=params)
    path = str(tmp_path / "deploy.so")
    lib.export_library(path)
    with open(tmp_path / "deploy.params", "wb") as f:
        f.write(tvm.runtime.save_param_dict(lib.get_params()))

    loaded = tvm.runtime.load_module(path)
    loaded_params = tvm.runtime.load_param_dict(open(tmp_path / "deploy.params", "rb").read())
    assert set(loaded_params) == {"w"}
    np.testing.assert_array_equal(loaded_params["w"].numpy(), params["w"])
    dev = tvm.device("llvm", 0)
    m = graph_executor.GraphModule(loaded["default"](dev))
    data = np.full((2, 3), 2.0, dtype="float32")
    m.run(x=data)
    np.testing.assert_array_equal(m.get_output(0).numpy(), data * params["w"])


def _onnx_conv_model():
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(2)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype("float32"), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype("float32"), "b")
    nodes = [helper.make_node("Conv", ["input", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["output"])]
    graph = helper.make_graph(nodes, "convrelu",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 8, 8])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_from_onnx_built_under_pass_context_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    onnx_model = _onnx_conv_model()
    shape_dict = {"input": (1, 3, 8, 8)}
    mod, params = relay.frontend.from_onnx(onnx_model, shape_dict)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    x = np.random.default_rng(3).standard_normal((1, 3, 8, 8)).astype("float32")
    m.set_input("input", x)
    m.run()
    sess = ort.InferenceSession(onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = sess.run(None, {"input": x})[0]
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-5, atol=1e-5)
    # TVM's third positional argument (the input dtype) is accepted
    relay.frontend.from_onnx(onnx_model, shape_dict, "float32")


def test_dfpattern_callback_folds_quantize_of_constant():
    from byoc.relay.dataflow_pattern import DFPatternCallback, is_constant, is_op, rewrite

    class FoldQuantize(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = is_op("qnn.quantize")(is_constant(), is_constant(), is_constant())

        def callback(self, pre, post, node_map):
            data = post.args[0].data.numpy()
            scale = post.args[1].data.numpy()
            zp = post.args[2].data.numpy()
            q = np.clip(np.round(data / scale) + zp, -128, 127).astype("int8")
            return relay.const(q, "int8")

    w = relay.const(np.array([[-1.0, 0.25], [0.5, 2.0]], dtype="float32"))
    q = relay.qnn.op.quantize(w, relay.const(0.02, "float32"), relay.const(3, "int32"), out_dtype="int8")
    x = relay.var("x", shape=(2, 2), dtype="int8")
    body = relay.add(x, q)
    folded = rewrite(FoldQuantize(), body)
    consts = [a for a in folded.args if isinstance(a, relay.Constant)]
    assert len(consts) == 1
    # what the callback computes, written again here from the constant's literal values
    expected = np.clip(np.round(np.array([[-1.0, 0.25], [0.5, 2.0]]) / 0.02) + 3, -128, 127).astype("int8")
    np.testing.assert_array_equal(consts[0].data.numpy(), expected)


def test_sequential_byoc_pipeline_over_from_tflite_model_object():
    import tflite
    from byoc.relay.op.contrib import get_pattern_table
    from byoc.testing.models import mobilenet_v2
    buf = mobilenet_v2(input_size=32, width_multiplier=0.35, num_classes=4, blocks=((1, 16, 1, 1), (6, 24, 2, 2)))
    tflite_model = tflite.Model.GetRootAsModel(buf, 0)
    mod0, _ = relay.frontend.from_tflite(buf)
    name = mod0["main"].params[0].span.source       # the input tensor's name in the file
    shape_dict = {name: (1, 32, 32, 3)}
    dtype_dict = {name: "int8"}
    mod, params = relay.frontend.from_tflite(tflite_model, shape_dict, dtype_dict)
    seq = tvm.transform.Sequential([
        relay.transform.InferType(),
        relay.transform.MergeComposite(get_pattern_table("npu")),
        relay.transform.AnnotateTarget("npu"),
        relay.transform.MergeCompilerRegions(),
        relay.transform.PartitionGraph(),
    ])
    with tvm.transform.PassContext(opt_level=3):
        partitioned = seq(mod)
    assert any(f.attrs.get("Compiler") == "npu" for f in partitioned.functions.values())
    lib = relay.build(partitioned, target="npu, llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    x = np.random.default_rng(4).integers(-128, 128, size=(1, 32, 32, 3), dtype="int8")
    m.set_input(0, x)
    m.run()
    from tests.runtime.runtime_helpers import litert_reference
    expected = litert_reference(buf, [x])
    assert expected is not None
    np.testing.assert_array_equal(m.get_output(0).numpy(), expected[0])
