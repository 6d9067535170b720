"""What ``byoc.build`` returns: the graph executor plus what it was built from (for export and profiling).

``GraphModule`` follows TVM's graph executor and LiteRT's interpreter: ``set_input(name, value)``, ``run()``,
``get_output(i)``, ``get_num_outputs()``, and ``run(inputs: dict) -> list[numpy.ndarray]``. Partitions run
through their codegen's runner (NPU partitions on the simulator), CPU kernels in-process, over a static memory
plan that reuses intermediate buffers by liveness (``byoc/backend/llvm/executor.py``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["GraphModule", "build_module"]


class GraphModule:
    def __init__(self, executable, source, params: dict[str, np.ndarray], target: tuple[str, ...],
                 options: dict[str, Any]):
        self.executable = executable
        self.source = source                  # the IRModule as given to build (before params are bound)
        self.params = params
        self.target = target
        self.options = options
        self.artifact_meta: dict | None = None  # the header of the artifact it was loaded from

    # ------------------------------------------------------------------------------ graph-executor habits
    @property
    def input_names(self) -> list[str]:
        return self.executable.input_names

    @property
    def main(self):
        """The typed main function the executor runs (parameter types give the expected inputs)."""
        return self.executable.func

    def set_input(self, name: str | None = None, value=None, **kwargs) -> None:
        self.executable.set_input(name, value, **kwargs)

    def run(self, inputs: dict | None = None, **kwargs) -> list[np.ndarray]:
        return self.executable.run(inputs, **kwargs)

    def __call__(self, inputs: dict | None = None, **kwargs) -> list[np.ndarray]:
        return self.executable.run(inputs, **kwargs)

    def get_output(self, index: int) -> np.ndarray:
        return self.executable.get_output(index)

    def get_num_outputs(self) -> int:
        return self.executable.get_num_outputs()

    # ------------------------------------------------------------------------------------ introspection
    @property
    def steps(self) -> list:
        return self.executable.steps

    @property
    def kernel_symbols(self) -> list[str]:
        return self.executable.kernel_symbols

    @property
    def ir_texts(self) -> dict[str, str]:
        return self.executable.ir_texts

    @property
    def library(self):
        return self.executable.library

    @property
    def groups(self) -> list:
        """The CPU backend's fused groups (one kernel each)."""
        return self.executable.groups

    def __getattr__(self, name: str):
        # Anything else the CPU executable offers (its earlier callers used it directly).
        if name.startswith("_") or name == "executable":
            raise AttributeError(name)
        return getattr(self.executable, name)

    @property
    def partitions(self) -> dict[str, Any]:
        """Partition symbol → its codegen's runner (an ``NpuPartition`` for NPU partitions)."""
        return {s.name: s.run for s in self.executable.extern_steps}

    @property
    def npu_programs(self) -> dict[str, Any]:
        """Partition symbol → its ``npu_sim.Program``."""
        return {k: r.program for k, r in self.partitions.items() if hasattr(r, "program")}

    @property
    def npu_config(self):
        """The NPU configuration the partitions were compiled for (None without NPU partitions)."""
        progs = list(self.npu_programs.values())
        return progs[0].config if progs else None

    # ----------------------------------------------------------------------------------- measurements
    def profile(self, inputs: dict | None = None, repeat: int = 1):
        """Per-node figures (``runtime.profile.ProfileReport``; ``.table()`` renders them): CPU wall time per
        kernel, NPU cycles per partition and per layer, bytes moved between CPU and NPU, and the end-to-end
        estimate. With ``repeat`` > 1 each node keeps its best time."""
        from .profile import profile_module
        return profile_module(self.executable, inputs, repeat)

    def estimate(self, inputs: dict | None = None, repeat: int = 3):
        """One inference on the modelled system: NPU cycles at the configured clock + measured CPU time +
        CPU↔NPU transfers, with the share of MACs on the NPU (``runtime.profile.Estimate``)."""
        return self.profile(inputs, repeat).estimate

    # ---------------------------------------------------------------------------------------- artifacts
    def export(self, path) -> None:
        """Write one self-contained artifact (``byoc.load(path)`` reads it back; see runtime/artifact.py)."""
        from .artifact import export
        export(self, path)

    def __repr__(self) -> str:
        n_k = len(self.executable.kernel_symbols)
        return f"GraphModule(target={','.join(self.target)}, {n_k} CPU kernels, {len(self.partitions)} partitions)"


def build_module(mod, target: list[str] | tuple[str, ...], params: dict | None, externs: dict, options: dict,
                 num_threads: int = 1, objects: dict[str, bytes] | None = None) -> GraphModule:
    """The build itself (``byoc.build`` validates its arguments first; ``byoc.load`` calls this directly with
    runners decoded from the artifact)."""
    from byoc.backend.llvm.executor import compile_function
    from byoc.build import lower_for_host
    params = {str(k): np.array(v, copy=True) for k, v in (params or {}).items()}
    host = lower_for_host(mod, params)
    exe = compile_function(host["main"], externs=externs, mod=host, num_threads=num_threads, objects=objects)
    return GraphModule(exe, mod, params, tuple(target), dict(options))
