"""The TVM API surface as ``import byoc as tvm`` serves it: one entry per TVM name, with its status.

``docs/porting-from-tvm.md`` holds the table this registry renders (``python -m byoc.porting`` prints it;
``tests/byoc/tvm/test_porting_doc.py`` checks the doc against it and resolves every name: a ``yes``/``partial``
name must exist under ``byoc``, a ``no`` name must raise ``UnsupportedAPIError``)."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ApiEntry", "TVM_API", "unsupported_reason", "render_table", "resolve"]


@dataclass(frozen=True)
class ApiEntry:
    name: str          # TVM's dotted name, starting with "tvm."
    status: str        # "yes" (same behaviour), "partial" (differences in note), "no" (raises UnsupportedAPIError)
    note: str = ""


def _yes(names: str, note: str = "") -> list[ApiEntry]:
    return [ApiEntry(n, "yes", note) for n in names.split()]


def _partial(name: str, note: str) -> list[ApiEntry]:
    return [ApiEntry(name, "partial", note)]


def _no(name: str, note: str) -> list[ApiEntry]:
    return [ApiEntry(name, "no", note)]


TVM_API: tuple[ApiEntry, ...] = tuple(
    # --- IR and pass infrastructure
    _yes("tvm.IRModule tvm.IRModule.from_expr tvm.ir.IRModule")
    + _yes("tvm.transform.Sequential tvm.transform.PassContext tvm.transform.module_pass "
           "tvm.ir.transform.module_pass tvm.ir.transform.Sequential tvm.ir.transform.PassContext")
    + _yes("tvm.ir.Op tvm.ir.op.Op tvm.ir.register_op_attr tvm.relay.op.register_op_attr tvm.relay.op.get")
    + _partial("tvm.ir.make_node", "only \"DictAttrs\" (a read-only mapping)")
    + _partial("tvm.ir.container.Array", "attribute arrays are Python tuples (Array is tuple)")
    + _partial("tvm.ir.container.Map", "function attributes are a read-only mapping (Map is Mapping)")
    + _partial("tvm.tir.IntImm", "an int with .dtype/.value, for function attributes")
    + _partial("tvm.tir.FloatImm", "a float with .dtype/.value")
    + _partial("tvm.tir.StringImm", "a str with .value")
    + _partial("tvm.script.tir", "only the typed scalar constructors (T.int32(10), T.float32(x), T.bool(b)), giving "
               "tir immediates")
    + _partial("tvm.target.Target", "kinds are the host (llvm, cpu, c) and registered codegens; \"npu, llvm\" "
               "composes; -key=value options are kept, the host compiles for this machine")
    + _yes("tvm.target.Target.list_kinds")
    # --- FFI
    + _partial("tvm.register_func", "relay.ext.<compiler> registers a codegen (byoc.build.register_codegen API: "
               "fn(func, symbol[, options]) -> runner); relay.ext.<compiler>.optimize runs on partitions in "
               "relay.build")
    + _partial("tvm._ffi.register_func", "as tvm.register_func")
    + _partial("tvm.get_global_func", "Python-registered functions and codegens (relay.ext.ccompiler is built "
               "in, on the LLVM CPU backend); TVM's C++ functions are absent")
    + _yes("tvm._ffi._init_api")
    + _partial("tvm._ffi.register_object", "returns the class unchanged (objects are Python classes)")
    # --- arrays and devices
    + _partial("tvm.nd.array", "NDArray is a numpy subclass: .numpy(), .asnumpy(), .shape, .dtype (numpy dtype, "
               "== the string)")
    + _yes("tvm.nd.empty tvm.nd.NDArray tvm.runtime.NDArray tvm.relay.Constant.data")
    + _partial("tvm.cpu", "the host; tvm.device accepts cpu/llvm/c only")
    + _partial("tvm.device", "cpu/llvm/c only")
    # --- build and run
    + _partial("tvm.relay.build", "returns the graph-executor factory (unpacks as json, lib, params with TVM's "
               "DeprecationWarning); executor graph, runtime cpp only; the module is built as given (partition "
               "first); each partition goes to the codegen its Compiler attribute names")
    + _yes("tvm.relay.build_module.build tvm.relay.build_module.bind_params_by_name tvm.relay.build_config")
    + _partial("tvm.relay.create_executor", "debug = reference interpreter; graph/vm/aot build for the CPU (vm "
               "returns ADTs for tuples); evaluate(global var or function) returns a callable, evaluate(closed "
               "expression) its value, as TVM")
    + _partial("tvm.relay.vm.compile", "builds as relay.build does; the VM runs that static-shape build (no "
               "dynamic shapes, control flow or Prelude ADTs)")
    + _yes("tvm.relay.vm.VMCompiler tvm.relay.vm.VMExecutor tvm.relay.backend.vm.compile")
    + _partial("tvm.runtime.vm.Executable", "save() gives (code, lib): code is the checksummed container (JSON, "
               "no pickle) naming the lib it belongs to; bytecode is a listing, not an interpreted program")
    + _yes("tvm.runtime.vm.Executable.load_exec")
    + _partial("tvm.runtime.vm.VirtualMachine", "run/invoke/set_input/set_one_input/invoke_stateful/"
               "get_outputs/invoke_with_outputs/benchmark; memory_cfg accepted, no effect")
    + _yes("tvm.runtime.container.ADT tvm.runtime.container.tuple_object tvm.runtime.container.ShapeTuple")
    + _partial("tvm.relay.backend.Runtime", "\"cpp\" only (system-lib accepted, no effect)")
    + _partial("tvm.relay.backend.Executor", "\"graph\" only (link-params accepted: params are always bound)")
    + _partial("tvm.relay.backend.te_compiler.get", "clear() is a no-op: kernels are cached by a hash of their IR, "
               "never stale; lower/jit (TE) are not provided")
    + _yes("tvm.relay.backend.executor_factory.GraphExecutorFactoryModule")
    + _partial("tvm.runtime.load_module", "reads export_library's byoc artifact (not a shared library)")
    + _yes("tvm.runtime.save_param_dict tvm.runtime.load_param_dict")
    + _yes("tvm.contrib.graph_executor.GraphModule")
    + _partial("tvm.contrib.graph_executor.create", "lib's kernels belong to one graph: graph_json must be that "
               "graph's JSON (checked)")
    + _yes("tvm.contrib.utils.tempdir")
    + _no("tvm.contrib.cudnn", "only tvm.contrib.graph_executor, utils and relay_viz are provided")
    + _yes("tvm.contrib.relay_viz.RelayVisualizer tvm.contrib.relay_viz.TermPlotter "
           "tvm.contrib.relay_viz.TermVizParser tvm.contrib.relay_viz.DotVizParser "
           "tvm.contrib.relay_viz.interface.VizParser tvm.contrib.relay_viz.interface.VizNode "
           "tvm.contrib.relay_viz.interface.VizEdge tvm.contrib.relay_viz.terminal.TermGraph")
    + _partial("tvm.contrib.relay_viz.DotPlotter", "writes DOT text and runs Graphviz's dot program (no graphviz "
               "Python package); render_kwargs: format (default pdf), cleanup, directory")
    + _yes("tvm.relay.testing.resnet.get_workload tvm.relay.testing.mobilenet.get_workload "
           "tvm.relay.testing.create_workload tvm.relay.testing.init.Xavier tvm.relay.testing.init.Constant "
           "tvm.relay.testing.layers.batch_norm_infer tvm.relay.testing.layers.conv2d "
           "tvm.relay.testing.layers.dense_add_bias tvm.relay.testing.run_opt_pass")
    # --- Relay expressions, builders, passes, patterns
    + _yes("tvm.relay.var tvm.relay.const tvm.relay.Function tvm.relay.Call tvm.relay.Var tvm.relay.Constant "
           "tvm.relay.Tuple tvm.relay.TupleGetItem tvm.relay.Let tvm.relay.If tvm.relay.GlobalVar")
    + _yes("tvm.relay.expr.Call tvm.relay.expr.Constant tvm.relay.expr.Var tvm.relay.expr.const")
    + _partial("tvm.relay.RefCreate", "references (mutable cells): typed, printed/parsed (ref, ref_read, "
               "ref_write), annotated and partitioned as TVM does, run by the reference interpreter (byoc.evaluate, "
               "create_executor(\"debug\")); the CPU build and the NPU refuse them (CodegenError / NPUError)")
    + _partial("tvm.relay.RefRead", "as tvm.relay.RefCreate")
    + _partial("tvm.relay.RefWrite", "as tvm.relay.RefCreate; evaluates to the empty tuple")
    + _yes("tvm.relay.expr.RefCreate tvm.relay.expr.RefRead tvm.relay.expr.RefWrite tvm.relay.RefType "
           "tvm.relay.RelayRefType tvm.relay.scalar_type tvm.relay.transform.InferTypeLocal")
    + _yes("tvm.relay.nn.upsampling tvm.relay.nn.matmul")
    + _yes("tvm.relay.nn.conv2d tvm.relay.nn.batch_norm tvm.relay.nn.relu tvm.relay.nn.dense "
           "tvm.relay.qnn.op.conv2d tvm.relay.qnn.op.requantize tvm.relay.qnn.op.quantize")
    + _yes("tvm.relay.transform.InferType tvm.relay.transform.MergeComposite tvm.relay.transform.AnnotateTarget "
           "tvm.relay.transform.MergeCompilerRegions tvm.relay.transform.PartitionGraph "
           "tvm.relay.transform.FoldConstant tvm.relay.transform.SimplifyInference")
    + _yes("tvm.relay.transform.ForwardFoldScaleAxis tvm.relay.transform.BackwardFoldScaleAxis "
           "tvm.relay.transform.FoldScaleAxis")
    + _yes("tvm.relay.transform.CombineParallelConv2D tvm.relay.transform.CombineParallelDense "
           "tvm.relay.transform.CombineParallelBatchMatmul tvm.relay.transform.CanonicalizeCast "
           "tvm.relay.transform.SimplifyExprPostAlterOp")
    + _partial("tvm.relay.transform.SimplifyExpr", "TVM's rewrites for the ops byoc has; where TVM's rewrite "
               "can change values (int8->uint8->int32 casts, clip then casts after a wrap, argmax of a "
               "dequantize with a negative scale) only the value-preserving cases are rewritten")
    + _yes("tvm.relay.dataflow_pattern.is_op tvm.relay.dataflow_pattern.wildcard "
           "tvm.relay.dataflow_pattern.is_constant tvm.relay.dataflow_pattern.DFPatternCallback "
           "tvm.relay.dataflow_pattern.rewrite")
    + _partial("tvm.relay.op.contrib.register.register_pattern_table", "one registry with patterns/registry.py; "
               "the table function runs on first use")
    + _yes("tvm.relay.op.contrib.register.get_pattern_table tvm.relay.op.contrib.get_pattern_table")
    + _yes("tvm.relay.op.strategy.generic.is_depthwise_conv2d")
    + _partial("tvm.relay.op.contrib.dnnl.pattern_table", "partitioning only (no DNNL runtime); entries for "
               "conv1d / conv3d / conv3d_transpose are absent (no such ops)")
    + _partial("tvm.relay.op.op_attrs.Conv2DAttrs", "byoc's attribute classes under TVM's names; a TVM class "
               "with no byoc op is an empty class no node's attributes belong to")
    + _yes("tvm.relay.dataflow_pattern.is_tuple tvm.relay.dataflow_pattern.is_expr tvm.relay.analysis.free_vars")
    + _partial("tvm.relay.frontend.from_tflite", "a path, bytes or tflite.Model; shape_dict/dtype_dict must "
               "agree with the file")
    + _partial("tvm.relay.frontend.from_onnx", "weights embedded (freeze_params=True); a dtype dict must agree "
               "with the model")
    # --- out of scope
    + _no("tvm.relay.frontend.from_mxnet", "MXNet is not imported; convert the model to ONNX or TFLite")
    + _no("tvm.relay.frontend.from_pytorch", "PyTorch is not imported; export the model to ONNX")
    + _no("tvm.relay.frontend.from_tensorflow", "convert the model to TFLite")
    + _no("tvm.relay.frontend.from_keras", "convert the model to TFLite")
    + _no("tvm.relay.prelude", "the Relay Prelude (lists, ADTs, tensor arrays) has no counterpart in this IR")
    + _no("tvm.te", "tensor expressions: kernels are generated by the llvmlite backend from Relay ops")
    + _no("tvm.topi", "TOPI operator implementations: kernels come from the llvmlite backend")
    + _no("tvm.autotvm", "CPU kernels are generated directly, not tuned; the NPU's tile plans are: `byoc tune` "
          "writes tuning records, npu_sim.tuning.apply_history_best / build(tuning_records=) apply them")
    + _no("tvm.auto_scheduler", "no tuning: kernels are generated directly")
    + _no("tvm.meta_schedule", "no tuning: kernels are generated directly")
    + _no("tvm.tir.PrimFunc", "TensorIR (PrimFunc, schedules, buffers) has no counterpart")
    + _no("tvm.script.tir.prim_func", "TVMScript's TensorIR dialect has no counterpart")
    + _no("tvm.tir.Schedule", "TensorIR scheduling has no counterpart")
    + _no("tvm.rpc", "no remote devices: everything runs on the host and the NPU simulator")
    + _no("tvm.micro", "microTVM project generation is not provided")
)

_UNSUPPORTED = {e.name: e.note for e in TVM_API if e.status == "no"}


def unsupported_reason(name: str) -> str | None:
    """Why ``name`` (a ``tvm.`` dotted name) is not provided, or None when it is not listed as unsupported."""
    return _UNSUPPORTED.get(name)


def resolve(name: str):
    """The object ``import byoc as tvm`` gives for ``name`` (attribute by attribute, as user code reaches it)."""
    import byoc
    parts = name.split(".")
    if parts[0] != "tvm":
        raise ValueError(f"{name!r} does not start with 'tvm.'")
    obj = byoc
    for p in parts[1:]:
        obj = getattr(obj, p)
    return obj


_STATUS_TEXT = {"yes": "yes", "partial": "partial", "no": "no (UnsupportedAPIError)"}


def render_table() -> str:
    """The markdown table of ``docs/porting-from-tvm.md`` (between its generated-table markers)."""
    rows = ["| TVM name | byoc | notes |", "|---|---|---|"]
    for e in TVM_API:
        rows.append(f"| `{e.name}` | {_STATUS_TEXT[e.status]} | {e.note} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(render_table(), end="")
