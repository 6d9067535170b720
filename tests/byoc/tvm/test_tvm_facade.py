"""The TVM facade pieces one by one: FFI registry, Target, tir immediates, NDArray and Constant.data,
parameter dicts, check errors, build options."""
from __future__ import annotations

import numpy as np
import pytest

import byoc as tvm
from byoc import relay
from byoc.errors import ArtifactError, ByocError, CodegenError, PatternCheckError, UnsupportedAPIError


def test_constant_data_is_a_tvm_ndarray():
    c = relay.const(np.array([[1, -2], [3, 4]], dtype="int8"))
    arr = c.data.numpy()
    assert type(arr) is np.ndarray and arr.flags.writeable       # a fresh copy, as TVM's
    np.testing.assert_array_equal(arr, [[1, -2], [3, 4]])
    np.testing.assert_array_equal(c.data.asnumpy(), arr)
    assert c.data.shape == (2, 2) and c.data.dtype == "int8"
    assert type(c.data + 1) is np.ndarray                        # arithmetic does not spread the subclass
    assert not c.data.flags.writeable
    k = relay.Constant(tvm.nd.array(np.array(0.5, dtype="float32")))
    assert k.data.numpy().item() == 0.5 and k.data.dtype == "float32"
    assert tvm.nd.empty((2, 3), "int16").numpy().tolist() == [[0] * 3] * 2


def test_register_func_relay_ext_routes_to_codegen_and_global_funcs():
    from byoc.build import registered_codegens, unregister_codegen

    def my_codegen(func, symbol):
        return lambda arrays: arrays
    try:
        tvm.register_func("relay.ext.mycg", my_codegen)
        assert "mycg" in registered_codegens()
        assert tvm.get_global_func("relay.ext.mycg") is my_codegen
        assert "mycg" in tvm.target.Target.list_kinds()

        @tvm.register_func("my.helpers.twice")
        def twice(x):
            return 2 * x
        assert tvm.get_global_func("my.helpers.twice")(4) == 8
        with pytest.raises(CodegenError, match="already registered"):
            tvm.register_func("my.helpers.twice", twice)
    finally:
        unregister_codegen("mycg")
        tvm._ffi.remove_global_func("my.helpers.twice")
    assert tvm.get_global_func("relay.ext.mycg", allow_missing=True) is None
    with pytest.raises(UnsupportedAPIError, match="relay.ext.ethos-u.get_compiler_attrs"):
        tvm.get_global_func("relay.ext.ethos-u.get_compiler_attrs")


def test_init_api_puts_registered_functions_into_a_module():
    import types
    import sys
    tvm.register_func("demo.space.hello", lambda: "hi", override=True)
    m = types.ModuleType("demo_space_mod")
    sys.modules[m.__name__] = m
    try:
        tvm._ffi._init_api("demo.space", m.__name__)
        assert m.hello() == "hi"
    finally:
        del sys.modules[m.__name__]
        tvm._ffi.remove_global_func("demo.space.hello")


def _npu_partitioned_add():
    from byoc.relay.op.contrib import get_pattern_table
    x = relay.var("x", shape=(1, 4, 4, 8), dtype="int8")
    f = lambda v: relay.const(v, "float32")  # noqa: E731
    z = lambda v: relay.const(v, "int32")  # noqa: E731
    y = relay.qnn.op.add(x, x, f(0.05), z(0), f(0.05), z(0), f(0.1), z(0))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    seq = tvm.transform.Sequential([relay.transform.InferType(),
                                    relay.transform.MergeComposite(get_pattern_table("npu")),
                                    relay.transform.AnnotateTarget("npu"), relay.transform.PartitionGraph()])
    return seq(mod)


def test_relay_ext_optimize_runs_in_partition_graph_on_each_new_partition():
    """As in TVM's PartitionGraph: ``relay.ext.<compiler>.optimize`` sees each partition it makes (a module with
    the partition as ``main``, before its attributes are attached) and its result is what the codegen builds."""
    seen = []

    @tvm.register_func("relay.ext.npu.optimize")
    def optimize(m):
        seen.append(dict(m["main"].attrs))
        return m
    try:
        mod = _npu_partitioned_add()
        lib = relay.build(mod, target="npu, llvm")   # relay.build does not run it again
    finally:
        tvm._ffi.remove_global_func("relay.ext.npu.optimize")
    assert seen == [{}]
    parts = [f for _, f in mod.functions.items() if f.attrs.get("Compiler") == "npu"]
    assert len(parts) == 1 and parts[0].attrs["Primitive"] == 1   # the attributes went back on
    from byoc.contrib import graph_executor
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    x = np.arange(-64, 64, dtype="int8").reshape(1, 4, 4, 8)
    m.run(x=x)
    np.testing.assert_array_equal(m.get_output(0).numpy(), tvm.evaluate(mod, {"x": x})[0])


def test_target_strings():
    from byoc.target import Target
    t = Target("npu, llvm")
    assert t.kind.name == "npu" and t.kinds == ("npu", "llvm") and t.build_target() == ["npu", "llvm"]
    assert Target("llvm -mcpu=cortex-a72").attrs == {"mcpu": "cortex-a72"}
    assert Target("c").build_target() == ["llvm"]
    with pytest.raises(CodegenError, match="unknown target kind 'cuda'"):
        Target("cuda")
    with pytest.raises(CodegenError, match="-key=value"):
        Target("llvm mcpu")


def test_intimm_as_function_attribute():
    x = relay.var("x", shape=(2,), dtype="float32")
    f = relay.Function([x], relay.negative(x)).with_attr("Primitive", tvm.tir.IntImm("int32", 1))
    assert f.attrs["Primitive"] == 1 and f.attrs["Primitive"].dtype == "int32"
    from byoc.errors import IRError
    with pytest.raises(IRError, match="integer type"):
        tvm.tir.IntImm("float32", 1)
    text = tvm.IRModule.from_expr(f).astext()
    assert "Primitive=1" in text                                   # prints as the number, round-trips
    assert tvm.parse(text)["main"].attrs["Primitive"] == 1


def test_param_dict_roundtrip_and_corrupt_input():
    params = {"b": np.arange(4, dtype="int32"), "a": np.ones((2, 2), dtype="float32")}
    blob = tvm.runtime.save_param_dict(params)
    assert blob == tvm.runtime.save_param_dict(dict(reversed(list(params.items()))))  # deterministic
    back = tvm.runtime.load_param_dict(blob)
    assert list(back) == ["a", "b"]
    for k in params:
        assert back[k].dtype == params[k].dtype
        np.testing.assert_array_equal(back[k].numpy(), params[k])
    with pytest.raises(ArtifactError):
        tvm.runtime.load_param_dict(blob[:-3])
    with pytest.raises(ArtifactError):
        tvm.runtime.load_param_dict(b"\x80\x04pickle")


def test_check_that_raises_propagates_naming_entry_and_op():
    from byoc.relay.dataflow_pattern import is_op, wildcard

    def bad_check(expr):
        return 1 / 0
    x = relay.var("x", shape=(4,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    table = [("mytarget.relu", is_op("nn.relu")(wildcard()), bad_check)]
    with pytest.raises(PatternCheckError, match=r"mytarget\.relu check raised ZeroDivisionError on nn\.relu") as e:
        relay.transform.MergeComposite(table)(relay.transform.InferType()(mod))
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    assert e.value.entry == "mytarget.relu check" and e.value.op == "nn.relu"


def test_op_predicate_that_raises_propagates():
    from byoc.ops.registry import register_op_attr
    x = relay.var("x", shape=(4,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.negative(x)))
    register_op_attr("negative", "target.brokenpred", lambda expr: expr.attrs.missing_attribute)
    try:
        with pytest.raises(PatternCheckError, match=r"target\.brokenpred predicate raised AttributeError on negative"):
            relay.transform.AnnotateTarget("brokenpred")(relay.transform.InferType()(mod))
    finally:
        from byoc.ops import registry
        registry._OP_ATTRS.pop(("negative", "target.brokenpred"), None)


def test_unsupported_apis_name_the_api_and_the_doc():
    for get in (lambda: tvm.te, lambda: tvm.autotvm, lambda: tvm.meta_schedule, lambda: tvm.tir.PrimFunc,
                lambda: relay.frontend.from_mxnet, lambda: tvm.contrib.cudnn, lambda: relay.prelude):
        with pytest.raises(UnsupportedAPIError, match="porting-from-tvm.md"):
            get()
    with pytest.raises(AttributeError):
        tvm.no_such_name_at_all
    assert isinstance(UnsupportedAPIError("x", "y"), ByocError)


def test_relay_build_refuses_other_executors():
    x = relay.var("x", shape=(2,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.negative(x)))
    with pytest.raises(UnsupportedAPIError, match="executor='aot'"):
        relay.build(mod, "llvm", executor="aot")


def test_from_tflite_shape_dict_names_are_checked():
    from byoc.errors import ModelError
    from byoc.testing.models import mobilenet_v2
    buf = mobilenet_v2(input_size=32, width_multiplier=0.35, num_classes=4, blocks=((1, 16, 1, 1),))
    with pytest.raises(ModelError, match="shape_dict names 'nope'"):
        relay.frontend.from_tflite(buf, {"nope": (1, 32, 32, 3)})
    with pytest.raises(ModelError, match="shape"):
        relay.frontend.from_tflite(buf, {"input": (1, 16, 16, 3)})
    mod, _ = relay.frontend.from_tflite(buf, {"input": (1, 32, 32, 3)}, {"input": "int8"})
    assert mod["main"].params[0].type_annotation.shape == (1, 32, 32, 3)


def test_create_executor_debug_and_graph_agree_with_numpy():
    x = relay.var("x", shape=(3,), dtype="float32")
    y = relay.var("y", shape=(3,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x, y], relay.subtract(x, y)))
    a = np.array([1.5, -2.0, 3.25], dtype="float32")
    b = np.array([0.5, 0.5, -1.0], dtype="float32")
    for kind in ("debug", "graph"):
        out = relay.create_executor(kind, mod=mod, device=tvm.cpu(0), target="llvm").evaluate()(a, b)
        np.testing.assert_array_equal(out.numpy(), a - b)


def test_graph_json_edges_follow_the_data():
    import json
    x = relay.var("x", shape=(4,), dtype="float32")
    y = relay.exp(relay.negative(x))
    z = relay.add(y, relay.sqrt(relay.abs(x)))
    lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], z)), "llvm")
    g = json.loads(lib.get_graph_json())
    nodes = g["nodes"]
    assert nodes[0] == {"op": "null", "name": "x", "inputs": []} and g["arg_nodes"][0] == 0
    assert all(n["op"] == "tvm_op" for n in nodes[1:] if n["name"] != "x" and not n["name"].startswith("p"))
    head = g["heads"][0][0]
    # every tvm_op reads only nodes that come before it, and the head is the last kernel
    for i, n in enumerate(nodes):
        assert all(e[0] < i for e in n["inputs"])
    assert nodes[head]["op"] == "tvm_op" and len(g["attrs"]["shape"][1]) == len(nodes)
    assert g["attrs"]["shape"][1][head] == [4] and g["attrs"]["dltype"][1][head] == "float32"


def test_tvmscript_scalar_constructors_make_tir_immediates():
    from byoc.relay.dataflow_pattern import ShapePattern, has_shape
    from byoc.script import tir as T
    shape = [T.int32(10), T.int64(3)]
    assert [d.dtype for d in shape] == ["int32", "int64"] and shape == [10, 3]
    assert T.float32(0.5).dtype == "float32" and T.bool(1).dtype == "bool"
    pattern = has_shape(shape)
    assert isinstance(pattern, ShapePattern)
    tvm.ir.assert_structural_equal(pattern.shape, shape)        # a list equals the tuple of its items (TVM Array)
    assert not tvm.ir.structural_equal(pattern.shape, [10, 4])


def test_tvmscript_programs_are_refused_by_name():
    from byoc.errors import UnsupportedAPIError
    from byoc.script import tir as T
    with pytest.raises(UnsupportedAPIError, match="tvm.script.tir.prim_func"):
        T.prim_func
