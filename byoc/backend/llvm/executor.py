"""Compile a function's fused groups into kernels and run them: the CPU graph executor.

Buffers are planned once at build time (one numpy array per group output, inputs copied into fixed buffers),
so a run is a list of ctypes calls with prebuilt argument arrays. Calls to functions owned by another codegen
(``Compiler`` attribute) run through the external runner registered for that compiler. ``run_timed`` runs the
same steps with a wall-clock reading around each one (``GraphModule.profile`` builds on it).
"""
from __future__ import annotations

import ctypes
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...errors import CodegenError, ExecutionError
from ...ir.expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from ...ir.traversal import post_order
from ...ir.types import TensorType, TupleType
from .codegen import CodeLibrary, get_codegen
from .fuse_ops import FusedGroup, check_supported, fuse_groups
from .host_ops import is_host_call
from .kernel import ERROR_MESSAGES, emit_group

__all__ = ["CpuExecutable", "compile_function", "KernelStep"]

_KERNEL_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
# Below this many output elements a kernel is not worth splitting across threads.
_PARALLEL_MIN_ELEMENTS = 1 << 14


@dataclass
class KernelStep:
    name: str
    symbol: str
    fn: Any
    argv: Any
    extent: int
    work: int
    keep_alive: tuple
    group: Any = None
    kinds: tuple = ()


@dataclass
class ExternStep:
    name: str               # the partition's global symbol
    run: Callable           # the codegen's runner
    inputs: list
    outputs: list
    compiler: str = ""
    func: Any = None        # the partition function


@dataclass
class HostStep:
    """An op run by its numpy reference between kernels (byoc/backend/llvm/host_ops.py)."""
    name: str
    run: Callable
    inputs: list
    outputs: list
    compiler: str = "host"
    attrs: Any = None       # a tflite.custom op's CustomOpAttrs (its kernel is checked before a run)


# Debugging aid for generated code: BYOC_GUARD_BUFFERS=N surrounds every buffer with N guard bytes (and turns off
# buffer reuse); after each step the guards are checked, so a kernel that writes out of bounds is named at once.
GUARD_BYTES = int(os.environ.get("BYOC_GUARD_BUFFERS", "0") or 0)
_GUARD_FILL = 0xA5


class _Guards:
    def __init__(self):
        self.regions: list[tuple[np.ndarray, int, int]] = []

    def empty(self, shape, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        raw = np.full(nbytes + 2 * GUARD_BYTES + 64, _GUARD_FILL, np.uint8)
        start = GUARD_BYTES + (-(raw.ctypes.data + GUARD_BYTES)) % 64
        self.regions.append((raw, start, start + nbytes))
        return raw[start:start + nbytes].view(dtype).reshape(shape)

    def check(self, step_name: str) -> None:
        for raw, lo, hi in self.regions:
            if np.any(raw[:lo] != _GUARD_FILL) or np.any(raw[hi:] != _GUARD_FILL):
                raw[:lo] = _GUARD_FILL  # re-arm, so the next report names the next culprit, not this one again
                raw[hi:] = _GUARD_FILL
                raise ExecutionError(f"step {step_name} wrote outside a buffer of {hi - lo} bytes",
                                     hint="a bug in the generated code; BYOC_GUARD_BUFFERS found it")


_GUARDS = _Guards()


def _empty(shape, dtype) -> np.ndarray:
    return _GUARDS.empty(shape, dtype) if GUARD_BYTES else np.empty(shape, dtype)


def _alloc(t) -> Any:
    if isinstance(t, TupleType):
        return [_alloc(f) for f in t.fields]
    if not isinstance(t, TensorType):
        raise CodegenError(f"cannot allocate a buffer for a value of type {t}")
    return _empty(t.shape, np.dtype("bool" if t.dtype == "bool" else t.dtype))


class CpuExecutable:
    """A built function: ``run(inputs) -> list[np.ndarray]`` plus TVM's set_input / run / get_output habits."""

    def __init__(self, func: Function, steps: list, values: dict[int, Any], library: CodeLibrary,
                 groups: list[FusedGroup], num_threads: int = 1):
        self.func = func
        self.steps = steps
        self._values = values
        self.library = library
        self.groups = groups
        self.input_names = [p.name_hint for p in func.params]
        self._inputs = {p.name_hint: values[id(p)] for p in func.params}
        self._outputs: list[np.ndarray] = []
        self.num_threads = max(1, int(num_threads))
        self._pool = ThreadPoolExecutor(self.num_threads - 1) if self.num_threads > 1 else None
        self._lock = threading.Lock()
        # opaque TFLite custom ops (host steps): their kernels are looked up when the module runs
        self.custom_ops = [s.attrs for s in steps if isinstance(s, HostStep) and s.attrs is not None]

    def _check_kernels(self) -> None:
        """``NoKernelError`` before any step runs when a custom op has no registered kernel."""
        if self.custom_ops:
            from ...ops.custom import check_static_outputs, custom_kernel, no_kernel_error
            for a in self.custom_ops:
                if custom_kernel(a.name) is None:
                    raise no_kernel_error(a)
                check_static_outputs(a)

    @property
    def kernel_symbols(self) -> list[str]:
        return [s.symbol for s in self.steps if isinstance(s, KernelStep)]

    @property
    def ir_texts(self) -> dict[str, str]:
        return self.library.ir_texts

    def set_input(self, name: str | None = None, value=None, **kwargs) -> None:
        items = dict(kwargs)
        if name is not None:
            items[name] = value
        problems = []
        for k, v in items.items():
            if k not in self._inputs:
                problems.append(f"unknown input {k!r}")
                continue
            dst = self._inputs[k]
            arr = np.asarray(v)
            if arr.shape != dst.shape:
                problems.append(f"input %{k}: expected shape {dst.shape}, found {arr.shape}")
            elif arr.dtype != dst.dtype:
                problems.append(f"input %{k}: expected dtype {dst.dtype}, found {arr.dtype}")
            else:
                np.copyto(dst, arr)
        if problems:
            raise ExecutionError("bad inputs: " + "; ".join(problems),
                                 hint=f"inputs: {', '.join(self.input_names)}")

    @property
    def extern_steps(self) -> list[ExternStep]:
        return [s for s in self.steps if isinstance(s, ExternStep)]

    def run(self, inputs: dict | None = None, **kwargs) -> list[np.ndarray]:
        with self._lock:
            self._check_kernels()
            self._feed(inputs, kwargs)
            run_kernel, single = self._run_kernel, self._pool is None
            for step in self.steps:
                if type(step) is KernelStep:
                    if single:  # the common case without the pool's bookkeeping
                        rc = step.fn(step.argv, 0, step.extent)
                        if rc:
                            self._fail(step, rc)
                    else:
                        run_kernel(step)
                else:
                    self._run_extern(step)
                if GUARD_BYTES:
                    _GUARDS.check(step.name)
            self._outputs = [np.array(v, copy=True) for v in _flatten(self._result())]
            return list(self._outputs)

    def run_timed(self, inputs: dict | None = None) -> tuple[list[np.ndarray], list[float]]:
        """Outputs and the wall time of every step (seconds, in ``steps`` order)."""
        with self._lock:
            self._check_kernels()
            self._feed(inputs, {})
            clock = time.perf_counter
            times = []
            for step in self.steps:
                t0 = clock()
                if type(step) is KernelStep:
                    self._run_kernel(step)
                else:
                    self._run_extern(step)
                times.append(clock() - t0)
            self._outputs = [np.array(v, copy=True) for v in _flatten(self._result())]
            return list(self._outputs), times

    def _feed(self, inputs, kwargs) -> None:
        feed = dict(inputs or {})
        feed.update(kwargs)
        if feed:
            missing = [n for n in self.input_names if n not in feed]
            if missing:
                raise ExecutionError(f"missing input(s) {', '.join(missing)}",
                                     hint=f"inputs: {', '.join(self.input_names)}")
            self.set_input(**feed)

    @staticmethod
    def _run_extern(step: "ExternStep") -> None:
        outs = step.run([v if isinstance(v, list) else np.asarray(v) for v in step.inputs])  # a list: a tuple
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        if len(outs) != len(step.outputs):
            raise ExecutionError(f"partition @{step.name} ({step.compiler}) returned {len(outs)} output(s), "
                                 f"expected {len(step.outputs)}", hint="a bug in that codegen's runner")
        for dst, src in zip(step.outputs, outs):
            src = np.asarray(src)
            if src.shape != dst.shape or src.dtype != dst.dtype:
                raise ExecutionError(f"partition @{step.name} ({step.compiler}) returned {src.dtype}"
                                     f"{list(src.shape)}, expected {dst.dtype}{list(dst.shape)}",
                                     hint="a bug in that codegen's runner")
            np.copyto(dst, src)

    @staticmethod
    def _fail(step: KernelStep, rc: int):
        raise ExecutionError(f"kernel {step.name} failed: {ERROR_MESSAGES.get(rc, f'error code {rc}')}")

    def _run_kernel(self, step: KernelStep) -> None:
        if self._pool is None or step.extent < 2 or step.work < _PARALLEL_MIN_ELEMENTS:
            rc = step.fn(step.argv, 0, step.extent)
        else:
            # Static split of the parallel loop; every element is computed the same way whoever runs it.
            n = min(self.num_threads, step.extent)
            bounds = [step.extent * i // n for i in range(n + 1)]
            futures = [self._pool.submit(step.fn, step.argv, bounds[i], bounds[i + 1]) for i in range(1, n)]
            rc = step.fn(step.argv, bounds[0], bounds[1])
            for f in futures:
                rc = rc or f.result()
        if rc:
            self._fail(step, rc)

    def _result(self):
        return self._values[id(self.func.body)]

    def get_output(self, index: int) -> np.ndarray:
        if not 0 <= index < len(self._outputs):
            raise ExecutionError(f"output index {index} out of range ({len(self._outputs)} outputs)",
                                 hint="call run() first")
        return self._outputs[index]

    def get_num_outputs(self) -> int:
        return len(_flatten(self._result()))

    def __call__(self, inputs: dict | None = None, **kwargs):
        return self.run(inputs, **kwargs)


def _flatten(value) -> list[np.ndarray]:
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        else:
            out.append(v)
    return out


def _is_extern_call(node: Expr, mod) -> bool:
    if not isinstance(node, Call):
        return False
    callee = node.op
    if isinstance(callee, GlobalVar) and mod is not None and callee.name_hint in mod:
        callee = mod[callee.name_hint]
    return isinstance(callee, Function) and "Compiler" in callee.attrs


def compile_function(func: Function, externs: dict[str, Callable] | None = None, mod=None,
                     num_threads: int = 1, objects: dict[str, bytes] | None = None) -> CpuExecutable:
    """Fuse, generate, compile (or load from cache) and plan buffers for ``func`` (typed, params bound).

    ``objects`` (symbol -> object code, from a trusted artifact built for this CPU and LLVM) is linked instead
    of compiling, for the symbols this function's kernels actually have (symbols are content hashes of the
    kernels' IR, regenerated here, so an object can only stand in for the kernel it was built from)."""
    from ...transform.canonicalize_qnn import canonicalize_function
    externs = externs or {}
    cg = get_codegen()
    func = canonicalize_function(func)  # TVM-form chains compile as their exact integer kernels
    check_supported(func, allow=lambda n: _is_extern_call(n, mod))
    groups = fuse_groups(func)
    library = cg.create_library("main")
    specs = []
    for g in groups:
        spec = emit_group(cg, g)
        specs.append((g, spec, library.add_kernel(spec.module)))
    if objects:
        wanted = {sym for _, _, sym in specs}
        cg.load_objects({s: objects[s] for s in sorted(wanted) if s in objects and cg.address(s) is None})
    library.finalize()

    group_by_root = {id(g.root): (g, spec, sym) for g, spec, sym in specs}
    values: dict[int, Any] = {}
    steps: list = []
    for node in post_order(func.body, enter_functions=False):
        key = id(node)
        if key in values:
            continue
        if isinstance(node, Var):
            values[key] = _alloc(node.checked_type)
        elif isinstance(node, Constant):
            values[key] = node.data
        elif isinstance(node, Tuple):
            values[key] = [values[id(f)] for f in node.fields]
        elif isinstance(node, TupleGetItem):
            values[key] = values[id(node.tuple_value)][node.index]
        elif key in group_by_root:
            g, spec, sym = group_by_root[key]
            out = _alloc(node.checked_type)
            values[key] = out
            steps.append(_kernel_step(library, g, spec, sym, out, values))
        elif _is_extern_call(node, mod):
            out = _alloc(node.checked_type)
            values[key] = out
            steps.append(_extern_step(node, mod, externs, values, out))
        elif is_host_call(node):
            out = _alloc(node.checked_type)
            values[key] = out
            steps.append(_host_step(node, values, out))
    for p in func.params:  # a parameter the body never reads still needs its input buffer
        if id(p) not in values:
            values[id(p)] = _alloc(p.checked_type)
    _plan_memory(steps, values, func)
    return CpuExecutable(func, steps, values, library, groups, num_threads)


def _step_io(step) -> tuple[list, list]:
    if isinstance(step, KernelStep):
        ins = [a for a, k in zip(step.keep_alive, step.kinds) if k == "in"]
        outs = [a for a, k in zip(step.keep_alive, step.kinds) if k == "out"]
        return ins, outs
    return _flatten(step.inputs), list(step.outputs)


class _Arena:
    """Reuses intermediate buffers once their last reader has run, so the working set stays in cache."""

    def __init__(self):
        self.free: list[tuple[int, np.ndarray]] = []

    def take(self, like: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        need = max(int(like.nbytes), 1)
        best = None
        for i, (size, _) in enumerate(self.free):
            if size >= need and (best is None or size < self.free[best][0]):
                best = i
        if best is not None:
            size, raw = self.free.pop(best)
        else:
            size, raw = need, np.empty(need + 64, np.uint8)
        off = (-raw.ctypes.data) % 64
        view = raw[off:off + int(like.nbytes)].view(like.dtype).reshape(like.shape)
        return view, raw

    def give(self, raw: np.ndarray) -> None:
        self.free.append((raw.size - 64, raw))


def _plan_memory(steps: list, values: dict, func: Function) -> None:
    """Static buffer reuse by liveness (step order is fixed). Function inputs and outputs keep their own
    buffers; every step's argument array is rebuilt to point at the planned buffers."""
    pinned = {id(a) for a in _flatten(values[id(func.body)])}
    pinned |= {id(values[id(p)]) for p in func.params}
    last_use: dict[int, int] = {}
    for i, st in enumerate(steps):
        for a in _step_io(st)[0]:
            last_use[id(a)] = i
    if GUARD_BYTES:
        return  # every buffer keeps its own guarded allocation
    arena = _Arena()
    remap: dict[int, np.ndarray] = {}
    raw_of: dict[int, np.ndarray] = {}
    for i, st in enumerate(steps):
        ins, outs = _step_io(st)
        for a in outs:
            if id(a) in pinned or id(a) in remap:
                continue
            remap[id(a)], raw_of[id(a)] = arena.take(a)
        for a in list(ins) + list(outs):
            if id(a) in raw_of and last_use.get(id(a), i) <= i:
                arena.give(raw_of.pop(id(a)))
    for st in steps:
        if isinstance(st, KernelStep):
            arrays = tuple(remap.get(id(a), a) for a in st.keep_alive)
            st.keep_alive = arrays
            st.argv = (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])
        else:
            st.inputs = [_remap_value(v, remap) for v in st.inputs]
            st.outputs = [remap.get(id(a), a) for a in st.outputs]
    for k, v in list(values.items()):
        values[k] = _remap_value(v, remap)


def _remap_value(v, remap):
    if isinstance(v, list):
        return [_remap_value(x, remap) for x in v]
    return remap.get(id(v), v)


def _kernel_step(library: CodeLibrary, g: FusedGroup, spec, symbol: str, out, values) -> KernelStep:
    outs = out if isinstance(out, list) else [out]
    arrays = []
    for slot in spec.slots:
        if slot.kind == "out":
            arrays.append(outs[slot.ref])
        elif slot.kind == "in":
            v = values[id(slot.ref)]
            if isinstance(v, list):
                raise CodegenError(f"kernel {g.name}: a tuple value was passed where a tensor was expected")
            arrays.append(v)
        else:
            arrays.append(slot.ref)
    for a in arrays:
        if not a.flags.c_contiguous:
            raise CodegenError(f"kernel {g.name}: non-contiguous buffer")
    argv = (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])
    fn = _KERNEL_FN(library.get_address(symbol))
    work = sum(int(o.size) for o in outs)
    return KernelStep(g.name, symbol, fn, argv, spec.parallel_extent, work, tuple(arrays), g,
                      tuple(slot.kind for slot in spec.slots))


def _host_step(node: Call, values, out) -> HostStep:
    compute, attrs = node.op.op_def.compute, node.attrs

    def run(arrays):
        return compute(arrays, attrs)
    from ...ops.custom import is_custom_call
    return HostStep(node.op.name, run, [values[id(a)] for a in node.args], _flatten(out),
                    attrs=node.attrs if is_custom_call(node) else None)


def _extern_step(node: Call, mod, externs, values, out) -> ExternStep:
    callee = node.op
    func = mod[callee.name_hint] if isinstance(callee, GlobalVar) else callee
    # a partition Inline turned into a literal keeps its symbol as global_symbol
    name = callee.name_hint if isinstance(callee, GlobalVar) else str(func.attrs.get("global_symbol", "fn"))
    compiler = func.attrs["Compiler"]
    if compiler not in externs:
        raise CodegenError(f"function @{name} is for compiler {compiler!r}, which has no registered codegen",
                           hint="register one with byoc.build.register_codegen(name, fn)")
    runner = externs[compiler](func, name)
    if not callable(runner):
        raise CodegenError(f"the {compiler!r} codegen returned {type(runner).__name__} for @{name}, not a runner",
                           hint="a codegen returns a callable taking and returning lists of arrays")
    inputs = [values[id(a)] for a in node.args]
    return ExternStep(name, runner, inputs, _flatten(out), str(compiler), func)
