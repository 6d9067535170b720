"""What ``relay.build`` returns (TVM's graph-executor factory module) and ``runtime.load_module`` reads back.

``lib["default"](dev)`` gives an executor module for ``graph_executor.GraphModule``; ``get_graph_json()``,
``get_lib().get_source()`` (the LLVM IR of the CPU kernels), ``get_params()`` and ``export_library(path)`` (one
byoc artifact, not a shared library) wrap the ``runtime.module.GraphModule`` that ``byoc.build`` made.
"""
from __future__ import annotations

import json
import os
import time
import warnings

import numpy as np

from ..errors import ArtifactError, ExecutionError
from ..nd import Device, as_ndarray

__all__ = ["Module", "GraphExecutorFactoryModule", "ExecutorModule", "KernelLibrary", "TimeEvaluatorResult",
           "load_module", "graph_json"]


class Module:
    """Base of the runtime modules here (TVM's ``runtime.Module``): ``mod["name"]`` gives a function."""
    type_key = "module"

    def __getitem__(self, name: str):
        fn = self._functions().get(name)
        if fn is None:
            raise ExecutionError(f"{self.type_key} module has no function {name!r}",
                                 hint=f"functions: {', '.join(sorted(self._functions()))}")
        return fn

    def get_function(self, name: str, query_imports: bool = False):
        return self[name]

    def _functions(self) -> dict:
        return {}


class TimeEvaluatorResult:
    """``time_evaluator(...)()``: ``results`` holds the mean seconds of each repeat (as TVM's ProfileResult)."""

    def __init__(self, results: list[float]):
        self.results = tuple(results)
        self.mean = float(np.mean(results))
        self.median = float(np.median(results))
        self.min = float(np.min(results))
        self.max = float(np.max(results))
        self.std = float(np.std(results))

    def __repr__(self) -> str:
        return (f"TimeEvaluatorResult(mean={self.mean * 1e3:.3f} ms, median={self.median * 1e3:.3f} ms, "
                f"repeat={len(self.results)})")


class ExecutorModule(Module):
    """``lib["default"](dev)``: the graph executor as a runtime module (``set_input``, ``run``, ``get_output``
    by name, and ``time_evaluator``). ``graph_executor.GraphModule`` wraps it."""
    type_key = "GraphExecutor"

    def __init__(self, graph_module):
        self.graph_module = graph_module   # runtime.module.GraphModule (byoc.build's result)

    def _functions(self) -> dict:
        gm = self.graph_module
        return {"set_input": gm.set_input, "run": gm.run, "get_output": gm.get_output,
                "get_num_outputs": gm.get_num_outputs}

    def time_evaluator(self, func_name: str, dev=None, number: int = 10, repeat: int = 1, min_repeat_ms: int = 0,
                       limit_zero_time_iterations: int = 100, cooldown_interval_ms: int = 0,
                       repeats_to_cooldown: int = 1, f_preproc: str = ""):
        """A function that calls ``func_name`` ``number`` times per repeat and returns the mean seconds of each
        repeat (``.results``, ``.mean``); with ``min_repeat_ms`` a repeat runs at least that long."""
        fn = self[func_name]
        number, repeat = max(1, int(number)), max(1, int(repeat))

        def evaluator(*args):
            results = []
            for _ in range(repeat):
                n = number
                while True:
                    t0 = time.perf_counter()
                    for _ in range(n):
                        fn(*args)
                    elapsed = time.perf_counter() - t0
                    if elapsed * 1e3 >= min_repeat_ms or n >= (1 << 20):
                        break
                    n *= 2
                results.append(elapsed / n)
                if cooldown_interval_ms and len(results) % max(1, repeats_to_cooldown) == 0:
                    time.sleep(cooldown_interval_ms / 1e3)
            return TimeEvaluatorResult(results)
        return evaluator


class KernelLibrary(Module):
    """``factory.get_lib()``: the CPU kernels. ``get_source()`` is their LLVM IR (one module per kernel, in
    execution order)."""
    type_key = "llvm"

    def __init__(self, graph_module):
        self.graph_module = graph_module

    def get_source(self, fmt: str = "ll") -> str:
        if fmt not in ("ll", "llvm", ""):
            raise ExecutionError(f"get_source({fmt!r}): only the LLVM IR ('ll') is available")
        texts = self.graph_module.ir_texts
        order = [s for s in self.graph_module.kernel_symbols if s in texts]
        order += [s for s in sorted(texts) if s not in order]
        return "\n".join(texts[s] for s in order)

    @property
    def imported_modules(self) -> list:
        return []

    def export_library(self, file_name, fcompile=None, workspace_dir=None, **kwargs) -> None:
        """The kernels cannot be separated from the graph they were built for: this writes the whole built
        module, as ``GraphExecutorFactoryModule.export_library`` does."""
        export_artifact(self.graph_module, file_name, fcompile, kwargs)


class GraphExecutorFactoryModule(Module):
    """``relay.build``'s result; ``lib[mod_name](dev)`` (``mod_name`` is ``"default"`` unless given)."""
    type_key = "GraphExecutorFactory"

    def __init__(self, graph_module, mod_name: str = "default", ir_mod=None):
        self.graph_module = graph_module
        self.libmod_name = mod_name
        self.ir_mod = ir_mod
        self.lib = KernelLibrary(graph_module)

    def _functions(self) -> dict:
        return {self.libmod_name: self._create, "get_graph_json": self.get_graph_json,
                "get_params": self.get_params}

    def _create(self, *devices) -> ExecutorModule:
        for d in devices:
            if not isinstance(d, Device):
                raise ExecutionError(f"lib[{self.libmod_name!r}](dev) expects a device (byoc.cpu(0)), got "
                                     f"{type(d).__name__}")
        return ExecutorModule(self.graph_module)

    def get_graph_json(self) -> str:
        return graph_json(self.graph_module)

    def get_lib(self) -> KernelLibrary:
        return self.lib

    def get_params(self) -> dict:
        return {k: as_ndarray(np.array(v, copy=True)) for k, v in sorted(self.graph_module.params.items())}

    def get_executor_config(self) -> str:
        return self.get_graph_json()

    def export_library(self, file_name, fcompile=None, workspace_dir=None, **kwargs) -> None:
        """Write the built module as one byoc artifact (IR, params, NPU programs, CPU object code); read it with
        ``runtime.load_module``. There is no shared library and no C compiler: ``fcompile`` must be None or
        False, and C compiler arguments (``options=["-O2", ...]``, ``cc=``) are accepted and not used."""
        export_artifact(self.graph_module, file_name, fcompile, kwargs)

    def __iter__(self):
        """The legacy ``graph_json, lib, params = relay.build(...)`` unpacking, with TVM's warning."""
        warnings.warn("legacy graph executor behavior of producing json / lib / params will be removed in the "
                      "next release. Please see documents of tvm.contrib.graph_executor.GraphModule for the new "
                      "recommended usage.", DeprecationWarning, 2)
        return iter((self.get_graph_json(), self.lib, self.get_params()))

    @property
    def module(self) -> ExecutorModule:
        return ExecutorModule(self.graph_module)

    def __repr__(self) -> str:
        return f"GraphExecutorFactoryModule({self.graph_module!r})"


# What a C compiler would have been told (TVM's export_library passed them to gcc): nothing here compiles C.
_IGNORED_EXPORT_OPTIONS = ("options", "cc", "addons")


def export_artifact(graph_module, file_name, fcompile, kwargs: dict) -> None:
    from ..errors import UnsupportedAPIError
    if fcompile not in (None, False):
        raise UnsupportedAPIError("export_library(fcompile=...)", "byoc writes its own artifact format, not a "
                                  "shared library built by a C compiler")
    unknown = sorted(k for k in kwargs if k not in _IGNORED_EXPORT_OPTIONS)
    if unknown:
        raise UnsupportedAPIError(f"export_library({', '.join(unknown)}=...)",
                                  f"only the C compiler arguments {', '.join(_IGNORED_EXPORT_OPTIONS)} are "
                                  "accepted (and not used)")
    graph_module.export(os.fspath(file_name))


def load_module(path, fmt: str = "", *, trust_native_code: bool = False) -> GraphExecutorFactoryModule:
    """``tvm.runtime.load_module(path)``: an artifact written by ``export_library`` (or ``byoc`` CLI's
    export). CPU kernels are regenerated from the stored graph unless ``trust_native_code=True``."""
    from runtime.artifact import load
    if not os.path.exists(os.fspath(path)):
        raise ArtifactError(f"no such file: {os.fspath(path)!r}")
    return GraphExecutorFactoryModule(load(path, trust_native_code=trust_native_code))


def graph_json(gm) -> str:
    """TVM's graph JSON for a built module: one ``null`` node per input (and per constant buffer read by a step),
    one ``tvm_op`` node per CPU kernel or partition, edges by the buffers they read, shapes and dtypes per node
    output. Buffers reused by the memory plan are followed in execution order, so each edge names the latest
    writer."""
    from byoc.backend.llvm.executor import KernelStep, _step_io
    nodes, arg_nodes, shapes, dtypes = [], [], [], []
    producer: dict[int, tuple[int, int]] = {}   # buffer → (node, output index) of its latest writer

    def add_null(name, arr):
        producer[id(arr)] = (len(nodes), 0)
        arg_nodes.append(len(nodes))
        nodes.append({"op": "null", "name": name, "inputs": []})
        shapes.append(list(np.shape(arr)))
        dtypes.append(str(np.asarray(arr).dtype))

    exe = gm.executable
    for name in exe.input_names:
        add_null(name, exe._inputs[name])
    n_const = 0
    for step in exe.steps:
        ins, outs = _step_io(step)
        edges = []
        for a in ins:
            if id(a) not in producer:
                add_null(f"p{n_const}", a)
                n_const += 1
            edges.append([*producer[id(a)], 0])
        is_kernel = isinstance(step, KernelStep)
        node_id = len(nodes)
        nodes.append({"op": "tvm_op", "name": step.name,
                      "attrs": {"func_name": step.symbol if is_kernel else step.name, "flatten_data": "0",
                                "num_inputs": str(len(ins)), "num_outputs": str(len(outs)),
                                **({} if is_kernel else {"Compiler": step.compiler})},
                      "inputs": edges})
        for k, a in enumerate(outs):
            producer[id(a)] = (node_id, k)
        shapes.append(list(np.shape(outs[0])) if outs else [])
        dtypes.append(str(np.asarray(outs[0]).dtype) if outs else "")
    from byoc.backend.llvm.executor import _flatten
    heads = [[*producer.get(id(a), (0, 0)), 0] for a in _flatten(exe._result())]
    return json.dumps({"nodes": nodes, "arg_nodes": arg_nodes, "heads": heads,

                       "attrs": {"shape": ["list_shape", shapes], "dltype": ["list_str", dtypes]}}, indent=2)
