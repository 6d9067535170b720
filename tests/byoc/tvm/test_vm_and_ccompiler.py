"""TVM's canonical BYOC flow with only the imports changed: a partition annotated for the ``"ccompiler"``
codegen, built by ``relay.vm.compile`` (save / export / load / ``VirtualMachine``) and by ``relay.build``
(legacy ``json, lib, params`` unpacking, ``graph_executor.create``), and the objects around them
(``Runtime``, ``Executor``, ``te_compiler``, ``ADT``, ``nd.empty``, ``get_output(i, out)``).

Expected values are numpy's float32 arithmetic on the same inputs (elementwise add / subtract / multiply are
exact in IEEE float32, so results must match bit for bit) and the reference interpreter ``byoc.evaluate``."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import byoc as tvm
from byoc import relay
from byoc import runtime as tvm_runtime
from byoc.contrib import graph_executor, utils
from byoc.errors import ArtifactError, ByocError, ExecutionError, UnsupportedAPIError
from byoc.relay import transform
from byoc.relay.backend import te_compiler
from byoc.relay.backend.executor import Executor
from byoc.relay.backend.runtime import Runtime
from byoc.relay.build_module import bind_params_by_name
from byoc.relay.op.annotation import compiler_begin, compiler_end
from byoc.relay.testing.temp_op_attr import TempOpAttr


def _rand(rng, shape):
    return rng.random(shape, dtype=np.float32)


def _annotated(ops, compiler="ccompiler"):
    """(x + y) and (x - y) as one region for ``compiler``, then ``ops`` applied on the host."""
    a = relay.var("a", shape=(6, 5))
    b = relay.var("b", shape=(6, 5))
    ba, bb = compiler_begin(a, compiler), compiler_begin(b, compiler)
    region = compiler_end(relay.Tuple((relay.add(ba, bb), relay.subtract(ba, bb))), compiler)
    return tvm.IRModule.from_expr(relay.Function([a, b], ops(region)))


def _export_and_load(lib):
    tmp = utils.tempdir()
    path = tmp.relpath("lib.so")
    lib.export_library(path, fcompile=False, options=["-O2", "-std=c++17"])  # C compiler flags: not used
    return tvm_runtime.load_module(path), tmp


def test_ccompiler_tuple_partition_through_vm_save_export_load():
    rng = np.random.default_rng(1)
    mod = transform.PartitionGraph()(transform.InferType()(_annotated(lambda r: r)))
    a, b = _rand(rng, (6, 5)), _rand(rng, (6, 5))
    te_compiler.get().clear()
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm")
    code, lib = exe.save()
    assert bytes(code[:8]) == b"BYOCART\x00"   # the checksummed container, JSON header: nothing to unpickle
    loaded, _tmp = _export_and_load(lib)
    exe2 = tvm_runtime.vm.Executable.load_exec(code, loaded)
    vm = tvm_runtime.vm.VirtualMachine(exe2, tvm.cpu())
    outs = vm.run(**{"a": a, "b": b})
    assert isinstance(outs, tvm_runtime.container.ADT) and len(outs) == 2 and outs.tag == 0
    np.testing.assert_array_equal(outs[0].numpy(), a + b)
    np.testing.assert_array_equal(outs[1].numpy(), a - b)
    ref = tvm.evaluate(mod, {"a": a, "b": b})
    for got, want in zip(outs, ref):
        np.testing.assert_array_equal(got.numpy(), want)
    # positional arguments and invoke("main") give the same
    again = vm.invoke("main", a, b)
    np.testing.assert_array_equal(again[1].numpy(), a - b)
    assert exe2.get_function_params("main") == ["a", "b"]
    # the partition really ran through the ccompiler codegen
    assert [s.compiler for s in exe2.graph_module.executable.extern_steps] == ["ccompiler"]
    assert "invoke_extern ccompiler:tvmgen_default_ccompiler_main_0" in exe2.bytecode


def test_ccompiler_partition_through_legacy_graph_executor_unpacking():
    rng = np.random.default_rng(2)
    mod = transform.PartitionGraph()(_annotated(lambda r: relay.multiply(relay.TupleGetItem(r, 0),
                                                                         relay.TupleGetItem(r, 1))))
    a, b = _rand(rng, (6, 5)), _rand(rng, (6, 5))
    with tvm.transform.PassContext(opt_level=3):
        with pytest.warns(DeprecationWarning, match="legacy graph executor"):
            graph_json, lib, params = relay.build(mod, target="llvm", runtime=Runtime("cpp"),
                                                  executor=Executor("graph"))
    assert params == {}
    loaded, _tmp = _export_and_load(lib)
    rt_mod = graph_executor.create(graph_json, loaded, tvm.cpu())
    rt_mod.set_input("a", a)
    rt_mod.set_input("b", b)
    rt_mod.set_input(**params)
    rt_mod.run()
    out = tvm.nd.empty((6, 5), device=tvm.cpu())
    out = rt_mod.get_output(0, out)
    np.testing.assert_array_equal(out.numpy(), (a + b) * (a - b))
    np.testing.assert_array_equal(out.numpy(), tvm.evaluate(mod, {"a": a, "b": b})[0])
    assert '"Compiler": "ccompiler"' in graph_json


def test_ccompiler_from_target_op_attrs_and_annotate_target():
    # the tvm.relay.op.contrib spelling: op predicates named target.ccompiler, then AnnotateTarget
    x, y = relay.var("x", shape=(4, 4)), relay.var("y", shape=(4, 4))
    mod = tvm.IRModule.from_expr(relay.Function([x, y], relay.subtract(relay.multiply(relay.add(x, y), y), x)))
    with TempOpAttr("add", "target.ccompiler", lambda expr: True), \
            TempOpAttr("multiply", "target.ccompiler", lambda expr: True):
        mod = transform.AnnotateTarget(["ccompiler"])(mod)
        mod = transform.MergeCompilerRegions()(mod)
        mod = transform.PartitionGraph()(mod)
    part = mod["tvmgen_default_ccompiler_main_0"]
    assert part.attrs["Compiler"] == "ccompiler"
    assert sorted(c.op.name for c in _calls(part.body)) == ["add", "multiply"]
    rng = np.random.default_rng(3)
    xd, yd = _rand(rng, (4, 4)), _rand(rng, (4, 4))
    with tvm.transform.PassContext(opt_level=3):
        vm = tvm_runtime.vm.VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
        lib = relay.build(mod, target="llvm")
    np.testing.assert_array_equal(vm.run(xd, yd).numpy(), (xd + yd) * yd - xd)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    gm.run(x=xd, y=yd)
    np.testing.assert_array_equal(gm.get_output(0).numpy(), (xd + yd) * yd - xd)


def _calls(expr):
    from byoc.ir.expr import Call
    from byoc.ir.traversal import post_order
    return [n for n in post_order(expr) if isinstance(n, Call)]


def test_ccompiler_is_the_registered_relay_ext_codegen():
    from byoc.backend.ccompiler import compile_partition
    assert tvm.get_global_func("relay.ext.ccompiler") is compile_partition
    assert "relay.ext.ccompiler" in tvm._ffi.registry.list_global_func_names()


def test_constant_in_partition_and_params_bound_at_compile_time():
    rng = np.random.default_rng(4)
    ones = np.ones((8, 8), np.float32)
    x, y = relay.var("x", shape=(8, 8)), relay.var("y", shape=(8, 8))
    f = bind_params_by_name(relay.Function([x, y], relay.log(relay.add(x, y))), {"x": tvm.nd.array(ones)})
    mod = tvm.IRModule.from_expr(f)
    add_only = lambda expr: True  # noqa: E731
    with TempOpAttr("add", "target.ccompiler", add_only):
        mod = transform.PartitionGraph()(transform.AnnotateTarget(["ccompiler"])(mod))
    yd = _rand(rng, (8, 8)) + 0.5
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm")
    out = tvm_runtime.vm.VirtualMachine(exe, tvm.cpu()).run(y=yd).numpy()
    np.testing.assert_allclose(out, np.log(ones + yd), rtol=1e-6, atol=1e-6)
    # params given to compile are bound: main keeps only the others
    w = relay.var("w", shape=(3,))
    v = relay.var("v", shape=(3,))
    mod2 = tvm.IRModule.from_expr(relay.Function([v, w], relay.multiply(v, w)))
    wd = np.array([1.5, -2.0, 0.25], np.float32)
    exe2 = relay.vm.compile(mod2, target="llvm", params={"w": wd})
    assert exe2.get_function_params("main") == ["v"]
    vd = np.array([2.0, 3.0, -4.0], np.float32)
    np.testing.assert_array_equal(tvm_runtime.vm.VirtualMachine(exe2, tvm.cpu()).run(vd).numpy(), vd * wd)


def test_two_regions_with_the_same_parameter_names_compile_separately():
    rng = np.random.default_rng(5)
    x, y = relay.var("x", shape=(3, 3)), relay.var("y", shape=(3, 3))
    r1 = compiler_end(relay.add(compiler_begin(x, "ccompiler"), compiler_begin(y, "ccompiler")), "ccompiler")
    mid = relay.exp(r1)
    r2 = compiler_end(relay.multiply(compiler_begin(mid, "ccompiler"), compiler_begin(x, "ccompiler")),
                      "ccompiler")
    mod = transform.PartitionGraph()(tvm.IRModule.from_expr(relay.Function([x, y], r2)))
    xd, yd = _rand(rng, (3, 3)), _rand(rng, (3, 3))
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm")
    code, lib = exe.save()
    loaded, _tmp = _export_and_load(lib)
    vm = tvm_runtime.vm.VirtualMachine(tvm_runtime.vm.Executable.load_exec(code, loaded), tvm.cpu())
    got = vm.run(x=xd, y=yd).numpy()
    np.testing.assert_allclose(got, np.exp(xd + yd) * xd, rtol=1e-6)
    assert len(exe.graph_module.executable.extern_steps) == 2
    ref = tvm.evaluate(mod, {"x": xd, "y": yd})
    np.testing.assert_allclose(got, ref[0], rtol=1e-6)


def test_vm_stateful_calls_and_outputs_into_caller_arrays():
    rng = np.random.default_rng(6)
    mod = transform.PartitionGraph()(_annotated(lambda r: r))
    a, b = _rand(rng, (6, 5)), _rand(rng, (6, 5))
    vm = tvm_runtime.vm.VirtualMachine(relay.vm.compile(mod, "llvm"), tvm.cpu(), memory_cfg="naive")
    vm.set_one_input("main", "a", a)
    vm.set_one_input("main", 1, b)
    vm.invoke_stateful("main")
    outs = vm.get_outputs()
    np.testing.assert_array_equal(outs[0].numpy(), a + b)
    np.testing.assert_array_equal(outs[1].numpy(), a - b)
    bufs = [tvm.nd.empty((6, 5)), tvm.nd.empty((6, 5))]
    vm.invoke_with_outputs("main", {"a": b, "b": a}, bufs)
    np.testing.assert_array_equal(bufs[1].numpy(), b - a)
    assert vm.get_input_index("b") == 1 and vm.get_input_index("zz") == -1


def test_create_executor_vm_returns_an_adt_for_a_tuple():
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple((relay.add(x, x), relay.negative(x)))))
    out = relay.create_executor("vm", mod=mod, device=tvm.cpu(), target="llvm").evaluate()(
        np.array([1.5, -2.0], np.float32))
    assert isinstance(out, tvm_runtime.container.ADT)
    np.testing.assert_array_equal(out[0].numpy(), [3.0, -4.0])
    np.testing.assert_array_equal(out[1].numpy(), [-1.5, 2.0])


def test_npu_partitions_of_a_real_model_run_through_the_vm_and_graph_executor_bit_exact():
    # Compiler="npu" partitions go to the NPU simulator even though the target only says "llvm", as in TVM
    from tests.shared_models import COMMITTED_MODELS
    mod, params = relay.frontend.from_tflite(str(COMMITTED_MODELS / "kws_ref_model.tflite"))
    mod = tvm.partition_for("npu", mod, params)
    main = mod["main"]
    rng = np.random.default_rng(7)
    inputs = {p.name_hint: rng.integers(-128, 128, size=[int(d) for d in p.checked_type.shape])
              .astype(p.checked_type.dtype) for p in main.params}
    ref = tvm.evaluate(mod, inputs)[0]
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm")
        lib = relay.build(mod, target="llvm")
    assert {s.compiler for s in exe.graph_module.executable.extern_steps} == {"npu"}
    code, vlib = exe.save()
    loaded, _tmp = _export_and_load(vlib)
    vm = tvm_runtime.vm.VirtualMachine(tvm_runtime.vm.Executable.load_exec(code, loaded), tvm.cpu())
    np.testing.assert_array_equal(vm.run(**inputs).numpy(), ref)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    gm.run(**inputs)
    np.testing.assert_array_equal(gm.get_output(0).numpy(), ref)
    timing = vm.benchmark(tvm.cpu(), **inputs, repeat=2, number=1)
    assert len(timing.results) == 2 and timing.mean > 0


def test_regression_a_partition_inlined_by_relay_build_keeps_its_symbol_through_export(tmp_path):
    # relay.build's Inline turns partitions into function literals: the executor once named them "fn" and an
    # exported artifact then failed to load ("partitions do not fit the graph")
    mod = transform.PartitionGraph()(_annotated(lambda r: relay.TupleGetItem(r, 1)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    [step] = lib.graph_module.executable.extern_steps
    assert step.name == "tvmgen_default_ccompiler_main_0"
    assert '"name": "tvmgen_default_ccompiler_main_0"' in lib.get_graph_json()
    lib.export_library(str(tmp_path / "m.byoc"))
    loaded = tvm.load(str(tmp_path / "m.byoc"))
    a, b = np.full((6, 5), 3.0, np.float32), np.full((6, 5), 0.5, np.float32)
    np.testing.assert_array_equal(loaded.run({"a": a, "b": b})[0], a - b)


# ---------------------------------------------------------------------------------------------- mistakes


def _small_exe(scale):
    x = relay.var("x", shape=(2,))
    return relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x], relay.multiply(x, relay.const(scale)))),
                            "llvm")


def test_load_exec_refuses_code_from_another_module_and_garbage():
    code, _ = _small_exe(2.0).save()
    _, other_lib = _small_exe(3.0).save()
    with pytest.raises(ArtifactError, match="another module"):
        tvm_runtime.vm.Executable.load_exec(code, other_lib)
    with pytest.raises(ArtifactError):
        tvm_runtime.vm.Executable.load_exec(b"\x80\x04not a container", other_lib)
    bad = bytearray(code)
    bad[-3] ^= 0xFF   # the JSON header is checksummed
    with pytest.raises(ArtifactError):
        tvm_runtime.vm.Executable.load_exec(bad, other_lib)
    with pytest.raises(ArtifactError, match="needs the lib"):
        tvm_runtime.vm.Executable.load_exec(code, None)


def test_vm_input_mistakes_are_named():
    vm = tvm_runtime.vm.VirtualMachine(_small_exe(2.0), tvm.cpu())
    with pytest.raises(ExecutionError, match="not set"):
        vm.invoke("main")
    with pytest.raises(ExecutionError, match="no parameter"):
        vm.run(y=np.zeros(2, np.float32))
    with pytest.raises(ExecutionError, match="no function 'other'"):
        vm.invoke("other", np.zeros(2, np.float32))
    with pytest.raises(ExecutionError, match="Device"):
        tvm_runtime.vm.VirtualMachine(_small_exe(2.0), "cpu")


def test_graph_executor_create_refuses_another_graph_and_changed_bound_params():
    x, w = relay.var("x", shape=(2,)), relay.var("w", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.add(x, w)))
    wd = np.array([1.0, 2.0], np.float32)
    lib = relay.build(mod, "llvm", params={"w": wd})
    other = relay.build(tvm.IRModule.from_expr(relay.Function([x], relay.negative(x))), "llvm")
    with pytest.raises(ExecutionError, match="not the graph this lib"):
        graph_executor.create(other.get_graph_json(), lib.get_lib(), tvm.cpu())
    rt = graph_executor.create(lib.get_graph_json(), lib.get_lib(), tvm.cpu())
    rt.set_input(**lib.get_params())          # the values it was built with: accepted
    with pytest.raises(ExecutionError, match="bound at build time"):
        rt.set_input(w=np.zeros(2, np.float32))
    rt.run(x=np.array([0.5, 0.25], np.float32))
    np.testing.assert_array_equal(rt.get_output(0).numpy(), np.array([1.5, 2.25], np.float32))


def test_export_library_refuses_a_c_compiler_and_unknown_arguments(tmp_path):
    x = relay.var("x", shape=(2,))
    lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], relay.negative(x))), "llvm")
    with pytest.raises(UnsupportedAPIError, match="fcompile"):
        lib.export_library(str(tmp_path / "a.so"), fcompile=lambda *a: None)
    with pytest.raises(UnsupportedAPIError, match="bogus"):
        lib.get_lib().export_library(str(tmp_path / "a.so"), bogus=1)


def test_runtime_and_executor_objects():
    assert Runtime("cpp").name == "cpp" and Runtime("cpp", {"system-lib": True})["system-lib"] is True
    assert Executor("graph") == Executor("graph")
    assert Runtime.list_registered() == ["cpp"]
    for bad in (lambda: Runtime("crt"), lambda: Executor("aot"), lambda: Runtime("cpp", {"nope": 1})):
        with pytest.raises(UnsupportedAPIError):
            bad()
    te_compiler.get().clear()                 # nothing cached that could go stale: a no-op that must not fail
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # building does not warn; only the legacy unpacking does
        x = relay.var("x", shape=(2,))
        relay.build(tvm.IRModule.from_expr(relay.Function([x], relay.negative(x))), "llvm",
                    runtime=Runtime("cpp"), executor=Executor("graph"))
    assert issubclass(ArtifactError, ByocError)
