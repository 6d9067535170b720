"""``tvm.contrib.graph_executor``: ``GraphModule(lib["default"](dev))`` with TVM's methods.

Inputs are set by name or index (``set_input("x", a)``, ``set_input(x=a)``, ``set_input(**params)``), outputs
come back as ``NDArray``s (``get_output(i)``, or copied into ``out``); ``module.time_evaluator("run", dev,
number, repeat)`` measures ``run``.
"""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError
from ..nd import NDArray, as_ndarray
from ..runtime.factory import ExecutorModule, GraphExecutorFactoryModule, KernelLibrary

__all__ = ["GraphModule", "create"]


class GraphModule:
    def __init__(self, module):
        if isinstance(module, GraphExecutorFactoryModule):
            module = module.module
        if not isinstance(module, ExecutorModule):
            raise ExecutionError(f"GraphModule expects lib['default'](dev), got {type(module).__name__}",
                                 hint="lib = relay.build(mod, 'llvm'); GraphModule(lib['default'](byoc.cpu(0)))")
        self.module = module
        self._gm = module.graph_module
        self._inputs: dict[str, np.ndarray] = {}

    @property
    def _names(self) -> list[str]:
        return list(self._gm.input_names)

    def _name(self, key) -> str:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= int(key) < len(self._names):
                raise ExecutionError(f"input index {key} out of range ({len(self._names)} inputs)")
            return self._names[int(key)]
        return str(key)

    def set_input(self, key=None, value=None, **params) -> None:
        if key is not None:
            params = {self._name(key): value, **params}
        for name, v in params.items():
            if name not in self._names and name in self._gm.params:
                self._check_bound(name, v)
                continue
            if name not in self._names:
                raise ExecutionError(f"the module has no input named {name!r}",
                                     hint=f"inputs: {', '.join(self._names)} (constants are bound at build time)")
            arr = np.asarray(v)
            self._gm.set_input(name, arr)
            self._inputs[name] = arr

    def _check_bound(self, name: str, value) -> None:
        """``set_input(**lib.get_params())``: parameters were bound into the build, so setting one again is
        accepted only with the value it was built with."""
        bound = self._gm.params[name]
        arr = np.asarray(value)
        if arr.shape != bound.shape or arr.dtype != bound.dtype or not np.array_equal(arr, bound, equal_nan=True):
            raise ExecutionError(f"parameter {name!r} was bound at build time and cannot be changed",
                                 hint="rebuild with the new value in relay.build(..., params=...)")

    def run(self, **input_dict) -> None:
        if input_dict:
            self.set_input(**input_dict)
        self._gm.run()

    def get_output(self, index: int, out=None) -> NDArray:
        value = self._gm.get_output(int(index))
        if out is None:
            return as_ndarray(np.array(value, copy=True))
        target = out if isinstance(out, np.ndarray) else None
        if target is None or target.shape != value.shape:
            raise ExecutionError(f"get_output({index}, out): out must be an array of shape {value.shape}")
        np.copyto(target, value.astype(target.dtype, copy=False))
        return out

    def get_num_outputs(self) -> int:
        return self._gm.get_num_outputs()

    def get_num_inputs(self) -> int:
        return len(self._names)

    def get_input_index(self, name: str) -> int:
        try:
            return self._names.index(name)
        except ValueError:
            raise ExecutionError(f"the module has no input named {name!r}") from None

    def get_input(self, index) -> NDArray:
        name = self._name(index)
        if name not in self._inputs:
            raise ExecutionError(f"input {name!r} has not been set")
        return as_ndarray(np.array(self._inputs[name], copy=True))

    def __getitem__(self, name: str):
        return getattr(self, name)


def create(graph_json_str, libmod, device) -> GraphModule:
    """``graph_executor.create(graph_json, lib, dev)``: ``lib`` is what ``relay.build`` returned (or its
    ``get_lib()``, or ``runtime.load_module`` of its export); its kernels belong to one graph, so
    ``graph_json`` must be that graph's JSON (``get_graph_json()``, or the first item of the legacy
    ``graph_json, lib, params = relay.build(...)``)."""
    if isinstance(libmod, KernelLibrary):
        libmod = GraphExecutorFactoryModule(libmod.graph_module)
    if not isinstance(libmod, GraphExecutorFactoryModule):
        raise ExecutionError(f"create expects the module relay.build returned, got {type(libmod).__name__}")
    if _graph_of(graph_json_str, "the graph_json argument") != _graph_of(libmod.get_graph_json(), "lib's graph"):
        raise ExecutionError("graph_executor.create: the graph JSON is not the graph this lib was built for",
                             hint="pass lib.get_graph_json() (or the json relay.build gave with this lib); a "
                                  "graph cannot be re-targeted to other kernels here")
    return GraphModule(libmod[libmod.libmod_name](device))


def _graph_of(text, what: str) -> dict:
    """The parts of a graph JSON that say what runs (nodes, inputs, outputs), for comparing two of them."""
    import json
    try:
        graph = json.loads(text)
    except (TypeError, ValueError) as e:
        raise ExecutionError(f"graph_executor.create: {what} is not graph JSON ({e})") from None
    if not isinstance(graph, dict):
        raise ExecutionError(f"graph_executor.create: {what} is not a JSON object")
    return {k: graph.get(k) for k in ("nodes", "arg_nodes", "heads")}
