"""``tvm.runtime.vm``: TVM's Relay VM interface — ``Executable`` (``save`` / ``load_exec``) and
``VirtualMachine`` (``run``, ``invoke``, ``set_input``, ``invoke_stateful`` / ``get_outputs``, ``benchmark``) —
over the graph executor byoc builds.

``relay.vm.compile`` builds the module exactly as ``relay.build`` does (``byoc/relay/backend/vm.py``); the VM
runs that build and gives results in the VM's shapes: a tensor as an ``NDArray``, a tuple as an ``ADT`` of
them. There is no bytecode interpreter: the CPU backend compiles static-shape dataflow graphs, so what TVM's
VM added over the graph executor (dynamic shapes, control flow, ADTs of the Prelude) is not provided.

``Executable.save()`` gives ``(code, lib)``: ``code`` is the executable's description in the checksummed
container format (JSON, never pickle: the entry function's parameters and result structure, and a digest of
the module ``lib`` holds), ``lib`` is the built module (``lib.export_library(path)`` /
``runtime.load_module(path)``). ``Executable.load_exec(code, lib)`` checks that ``code`` was saved from that
module.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ..errors import ArtifactError, ExecutionError
from ..nd import Device, as_ndarray
from .container import ADT

__all__ = ["Executable", "VirtualMachine"]

_FORMAT = "byoc-vm-executable"
_VERSION = 1
_ENTRY = "main"


def _lib_digest(graph_module) -> str:
    """Names the built module: its IR as an export stores it, and its bound parameters. The text is read back
    and printed again so that a module and its exported-and-loaded copy give the same text (the printer shows
    the types a module happens to carry; the parser gives them back the same way for both)."""
    from ..text.parser import parse
    text = parse(graph_module.source.astext(show_meta_data=True)).astext(show_meta_data=True)
    h = hashlib.sha256(text.encode("utf-8"))
    for name, value in sorted(graph_module.params.items()):
        arr = np.ascontiguousarray(value)
        h.update(f"\0{name}\0{arr.dtype.str}\0{arr.shape}\0".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def _structure(ty) -> dict:
    """The result's shape as JSON: ``{"shape", "dtype"}`` for a tensor, ``{"fields": [...]}`` for a tuple."""
    from ..ir.types import TensorType, TupleType
    if isinstance(ty, TupleType):
        return {"fields": [_structure(t) for t in ty.fields]}
    if isinstance(ty, TensorType):
        return {"shape": [int(d) for d in ty.shape], "dtype": str(ty.dtype)}
    raise ExecutionError(f"the VM returns tensors and tuples of them, not {ty}")


def _rebuild(structure: dict, flat: list, pos: int = 0):
    """(value, next position): the flat outputs regrouped as ``structure`` says."""
    if "fields" in structure:
        fields = []
        for f in structure["fields"]:
            value, pos = _rebuild(f, flat, pos)
            fields.append(value)
        return ADT(0, fields), pos
    return as_ndarray(np.array(flat[pos], copy=True)), pos + 1


def _unwrap(lib):
    from .factory import GraphExecutorFactoryModule, KernelLibrary
    if isinstance(lib, (GraphExecutorFactoryModule, KernelLibrary)):
        return lib.graph_module
    raise ExecutionError(f"lib is expected to be the module Executable.save() gave (or runtime.load_module of "
                         f"its export), got {type(lib).__name__}")


class Executable:
    """A compiled VM program: ``relay.vm.compile``'s result, or ``Executable.load_exec(code, lib)``."""

    def __init__(self, graph_module):
        self.graph_module = graph_module
        main = graph_module.main
        self._params = [p.name_hint for p in main.params]
        self._result = _structure(main.body.checked_type)

    @property
    def mod(self) -> "Executable":
        return self

    # -------------------------------------------------------------------------------------- save / load
    def save(self) -> tuple[bytearray, object]:
        from runtime.container import encode_container
        from .factory import KernelLibrary
        meta = {"format": _FORMAT, "version": _VERSION, "lib": _lib_digest(self.graph_module),
                "functions": {_ENTRY: {"params": self._params, "result": self._result}}}
        return bytearray(encode_container(meta, {})), KernelLibrary(self.graph_module)

    @staticmethod
    def load_exec(bytecode, lib) -> "Executable":
        from runtime.container import decode_container
        if isinstance(bytecode, str):
            bytecode = bytecode.encode("latin-1")
        if not isinstance(bytecode, (bytes, bytearray, memoryview)):
            raise ArtifactError(f"bytecode is expected to be bytes or a bytearray, got {type(bytecode).__name__}")
        if lib is None:
            raise ArtifactError("load_exec needs the lib saved with the code",
                                hint="code, lib = exe.save(); keep both (lib.export_library / runtime.load_module)")
        meta, _ = decode_container(bytes(bytecode), "<vm executable>")
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
            raise ArtifactError("not a VM executable written by Executable.save()",
                                hint=f"expected format {_FORMAT!r}, found {found!r}")
        if meta.get("version") != _VERSION:
            raise ArtifactError(f"VM executable version {meta.get('version')!r} is not supported",
                                hint=f"this byoc reads version {_VERSION}")
        exe = Executable(_unwrap(lib))
        if meta.get("lib") != _lib_digest(exe.graph_module):
            raise ArtifactError("the VM code was saved from another module than this lib",
                                hint="load the code with the lib exe.save() returned alongside it")
        entry = (meta.get("functions") or {}).get(_ENTRY)
        if entry != {"params": exe._params, "result": exe._result}:
            raise ArtifactError(f"the VM code's {_ENTRY!r} signature does not match the lib's",
                                hint=f"code: {entry!r}; lib: params {exe._params}, result {exe._result}")
        return exe

    # ------------------------------------------------------------------------------------ introspection
    @property
    def lib(self):
        from .factory import KernelLibrary
        return KernelLibrary(self.graph_module)

    @property
    def globals(self) -> list[str]:
        return [_ENTRY]

    @property
    def primitive_ops(self) -> list[str]:
        """The CPU kernels and partitions the program calls, in order."""
        return [getattr(s, "symbol", s.name) for s in self.graph_module.steps]

    @property
    def bytecode(self) -> str:
        """A readable listing of what ``main`` does (there is no bytecode interpreter: see the module doc)."""
        lines = [f"VM Function[0]: {_ENTRY}({', '.join(self._params)})"]
        for i, s in enumerate(self.graph_module.steps):
            if hasattr(s, "symbol"):
                lines.append(f"{i}: invoke_packed {s.symbol}  # {s.name}")
            else:
                lines.append(f"{i}: invoke_extern {s.compiler}:{s.name}")
        lines.append(f"{len(self.graph_module.steps)}: ret")
        return "\n".join(lines) + "\n"

    @property
    def stats(self) -> str:
        gm = self.graph_module
        return (f"Relay VM executable statistics:\n  Globals (#1): [{_ENTRY}]\n"
                f"  Constant shapes (#{len(gm.params)}): {[list(np.shape(v)) for _, v in sorted(gm.params.items())]}\n"
                f"  Primitive ops (#{len(gm.steps)}): {self.primitive_ops}\n")

    @property
    def constants(self) -> str:
        return "\n".join(f"{k}: {list(np.shape(v))} {np.asarray(v).dtype}" for k, v in sorted(self.graph_module.params.items()))

    def get_function_params(self, func_name: str) -> list[str]:
        self._check_function(func_name)
        return list(self._params)

    def get_function_arity(self, func_name: str) -> int:
        return len(self.get_function_params(func_name))

    def _check_function(self, func_name: str) -> None:
        if func_name != _ENTRY:
            raise ExecutionError(f"the VM executable has no function {func_name!r}",
                                 hint=f"functions: {_ENTRY} (partitions and other globals are called from it)")


class VirtualMachine:
    """``VirtualMachine(exe, device)``: ``run(*args, **kwargs)`` is ``invoke("main", ...)``."""

    NAIVE_ALLOCATOR = 1
    POOLED_ALLOCATOR = 2

    def __init__(self, exe, device, memory_cfg=None):
        if not isinstance(exe, Executable):
            raise ExecutionError(f"exe is expected to be an Executable (relay.vm.compile), got "
                                 f"{type(exe).__name__}")
        devices = list(device) if isinstance(device, (list, tuple)) else [device]
        for d in devices:
            if not isinstance(d, Device):
                raise ExecutionError(f"device is expected to be a Device (byoc.cpu(0)), got {type(d).__name__}")
        # The executor plans its own buffers; the allocator choice has no effect here.
        if memory_cfg is not None and memory_cfg not in ("naive", "pooled") and not isinstance(memory_cfg, dict):
            raise ExecutionError(f"memory_cfg is expected to be 'naive', 'pooled' or a dict, got {memory_cfg!r}")
        self._exec = exe
        self._inputs: dict[str, dict[str, np.ndarray]] = {}
        self._outputs: list = []

    # ------------------------------------------------------------------------------------------ inputs
    def set_input(self, func_name: str, *args, **kwargs) -> None:
        names = self._exec.get_function_params(func_name)
        unknown = [k for k in kwargs if k not in names]
        if unknown:
            raise ExecutionError(f"{func_name} has no parameter(s) {', '.join(map(repr, unknown))}",
                                 hint=f"parameters: {', '.join(names)} (params given at compile time are bound)")
        free = [n for n in names if n not in kwargs]
        if len(args) != len(free):
            raise ExecutionError(f"{func_name} takes {len(names)} input(s) ({', '.join(names)}); "
                                 f"{len(args)} positional and {len(kwargs)} named were given")
        values = dict(zip(free, args), **kwargs)
        self._inputs[func_name] = {n: np.asarray(values[n]) for n in names}

    def set_one_input(self, func_name: str, *args, **kwargs) -> None:
        names = self._exec.get_function_params(func_name)
        if kwargs:
            if len(kwargs) != 1 or args:
                raise ExecutionError("set_one_input takes one tagged input: set_one_input(func, name=value)")
            key, value = next(iter(kwargs.items()))
        elif len(args) == 2:
            key, value = args
        else:
            raise ExecutionError("set_one_input(func, name_or_index, value)")
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= int(key) < len(names):
                raise ExecutionError(f"input index {key} out of range ({len(names)} inputs)")
            key = names[int(key)]
        if key not in names:
            raise ExecutionError(f"{func_name} has no parameter {key!r}", hint=f"parameters: {', '.join(names)}")
        self._inputs.setdefault(func_name, {})[key] = np.asarray(value)

    def get_input_index(self, input_name: str, func_name: str = _ENTRY) -> int:
        names = self._exec.get_function_params(func_name)
        return names.index(input_name) if input_name in names else -1

    # ----------------------------------------------------------------------------------------- running
    def _execute(self, func_name: str) -> list[np.ndarray]:
        names = self._exec.get_function_params(func_name)
        given = self._inputs.get(func_name, {})
        missing = [n for n in names if n not in given]
        if missing:
            raise ExecutionError(f"{func_name}: input(s) {', '.join(missing)} not set",
                                 hint="vm.run(*args, **kwargs) or vm.set_input(func_name, ...) first")
        return self._exec.graph_module.run(dict(given))

    def invoke(self, func_name: str, *args, **kwargs):
        """Run ``func_name``; a tensor result is an NDArray, a tuple an ADT."""
        if args or kwargs:
            self.set_input(func_name, *args, **kwargs)
        flat = self._execute(func_name)
        self._outputs = [as_ndarray(np.array(v, copy=True)) for v in flat]
        return _rebuild(self._exec._result, flat)[0]

    def run(self, *args, **kwargs):
        return self.invoke(_ENTRY, *args, **kwargs)

    def invoke_stateful(self, func_name: str, *args, **kwargs) -> None:
        """Run and keep the outputs for ``get_outputs()``."""
        if args or kwargs:
            self.set_input(func_name, *args, **kwargs)
        self._outputs = [as_ndarray(np.array(v, copy=True)) for v in self._execute(func_name)]

    def get_outputs(self) -> list:
        return list(self._outputs)

    def invoke_with_outputs(self, func_name: str, input_args, output_args) -> None:
        """Run with ``input_args`` (a dict by name, a list, or None when set before) and copy the flat outputs
        into ``output_args`` (arrays of the outputs' shapes)."""
        if isinstance(input_args, dict):
            self.set_input(func_name, **input_args)
        elif input_args is not None:
            self.set_input(func_name, *input_args)
        flat = self._execute(func_name)
        if len(output_args) != len(flat):
            raise ExecutionError(f"{func_name} has {len(flat)} output(s), {len(output_args)} arrays were given")
        for i, (dst, src) in enumerate(zip(output_args, flat)):
            if not isinstance(dst, np.ndarray) or dst.shape != src.shape:
                raise ExecutionError(f"output {i}: expected an array of shape {src.shape}")
            np.copyto(dst, src.astype(dst.dtype, copy=False))

    def benchmark(self, device, *args, func_name: str = _ENTRY, repeat: int = 5, number: int = 5,
                  min_repeat_ms=None, limit_zero_time_iterations: int = 100, end_to_end: bool = False,
                  cooldown_interval_ms: int = 0, repeats_to_cooldown: int = 1, **kwargs):
        """Mean seconds per call over ``repeat`` rounds of ``number`` calls (``.mean``, ``.median``,
        ``.results``), as TVM's ``benchmark``; everything runs on the host, so ``end_to_end`` changes nothing."""
        from .factory import ExecutorModule
        if args or kwargs:
            self.set_input(func_name, *args, **kwargs)
        self._exec._check_function(func_name)
        timer = ExecutorModule(self._exec.graph_module)
        timer_fn = timer.time_evaluator("run", device, number=number, repeat=repeat,
                                        min_repeat_ms=min_repeat_ms or 0, cooldown_interval_ms=cooldown_interval_ms,
                                        repeats_to_cooldown=repeats_to_cooldown)
        inputs = dict(self._inputs.get(func_name, {}))
        self._execute(func_name)                  # names a missing input before timing
        return timer_fn(inputs)
