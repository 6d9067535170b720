"""Run one model on every executor and compare them tensor by tensor: ``compare_model(...)``.

Executors:

* ``reference`` — ``byoc.evaluate`` on the imported module; its ``tap`` records every op's value. Every other
  executor is compared against it.
* ``cpu`` — ``byoc.build(target="llvm")`` of the imported module.
* ``npu`` — ``partition_for(target)`` then a ``"<target>,llvm"`` build.
* ``tflite`` — TFLite's reference kernels (ai-edge-litert, ``OpResolverType.BUILTIN_REF``, all tensors
  preserved); for files LiteRT refuses, TFLite Micro's interpreter. ``onnxruntime`` for ONNX models.

Intermediates are matched by name: the TFLite frontend gives every node ``Span(<tensor name>)`` and the last node
of a chain carrying a name computes that tensor. The builds expose them by returning them as extra outputs of
``main`` (CPU-side tensors) and, with the simulator codegen, by reading the tensors NPU programs left in memory.
On a mismatch the first diverging tensor in topological order is named with the partition it belongs to.

Testing hook: ``BYOC_TESTING_FAULT=requant-off-by-one[:<tensor name>]`` adds one to the output zero point of a
requantization inside an offloaded partition of the NPU build only (a deliberately wrong build, for tests).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .errors import ByocError, ExecutionError
from .ir.expr import Call, Constant, Function, Op, Span, Tuple
from .ir.module import IRModule
from .ir.traversal import post_order, rewrite_post_order
from .ir.types import TensorType

__all__ = ["compare_model", "CompareResult", "TensorComparison", "ExecutorDiff", "ExecutorInfo",
           "litert_refusal", "run_tflite_oracle", "FAULT_ENV"]

FAULT_ENV = "BYOC_TESTING_FAULT"


@dataclass(frozen=True)
class ExecutorInfo:
    name: str
    description: str
    available: bool
    note: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class ExecutorDiff:
    executor: str
    mismatches: int          # elements that differ (-1: not comparable, e.g. another shape)
    max_diff: float
    elements: int


@dataclass(frozen=True)
class TensorComparison:
    name: str
    kind: str                # "output" | "intermediate"
    shape: tuple[int, ...]
    dtype: str
    placement: str           # "cpu" or the NPU partition computing it
    diffs: tuple[ExecutorDiff, ...]

    @property
    def mismatches(self) -> int:
        return sum(d.mismatches for d in self.diffs if d.mismatches > 0)

    @property
    def differs(self) -> bool:
        return any(d.mismatches != 0 for d in self.diffs)


@dataclass(frozen=True)
class CompareResult:
    model: str
    target: str
    executors: tuple[ExecutorInfo, ...]
    outputs: tuple[TensorComparison, ...]
    intermediates: tuple[TensorComparison, ...]
    first_divergence: TensorComparison | None
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """The outputs agree bit for bit on every executor that ran."""
        return not any(t.differs for t in self.outputs)

    def verdict(self) -> str:
        ran = [e.name for e in self.executors if e.available]
        if self.ok and self.first_divergence is None:
            return f"MATCH: outputs and {len(self.intermediates)} intermediate tensors agree bit for bit " \
                   f"across {', '.join(ran)}"
        f = self.first_divergence
        where = ""
        if f is not None:
            bad = ", ".join(f"{d.executor} ({d.mismatches} elements, max diff {d.max_diff:g})"
                            for d in f.diffs if d.mismatches != 0)
            where = f"; first diverging tensor {f.name!r} ({f.placement}) on {bad}"
        head = "MISMATCH: outputs differ" if not self.ok else "outputs agree but intermediates differ"
        return head + where

    def to_json(self) -> dict:
        def t(x: TensorComparison) -> dict:
            return {"name": x.name, "kind": x.kind, "shape": list(x.shape), "dtype": x.dtype,
                    "placement": x.placement,
                    "executors": {d.executor: {"mismatches": d.mismatches, "max_diff": d.max_diff,
                                               "elements": d.elements} for d in x.diffs}}
        return {"model": self.model, "target": self.target, "ok": self.ok, "verdict": self.verdict(),
                "executors": [{"name": e.name, "description": e.description, "available": e.available,
                               "note": e.note, "seconds": round(e.seconds, 3)} for e in self.executors],
                "outputs": [t(x) for x in self.outputs],
                "intermediates": [t(x) for x in self.intermediates],
                "first_divergence": t(self.first_divergence) if self.first_divergence else None,
                "notes": list(self.notes)}


# ----------------------------------------------------------------------------------------------- oracles

def litert_refusal(data: bytes) -> str | None:
    """Why LiteRT's reference interpreter refuses the file, or None (also when LiteRT is not installed)."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        return None
    try:
        it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
    except (ValueError, RuntimeError) as e:
        return _first_sentence(str(e))
    return None


def _first_sentence(msg: str) -> str:
    first = msg.strip().split("\n")[0].split(". ")[0]
    return first if len(first) <= 160 else first[:157] + "..."


def _tensor_names(data: bytes) -> list[str]:
    from .frontend.tflite_reader import read_model
    return [t.name or f"t{t.index}" for t in read_model(data).tensors]


def run_tflite_oracle(data: bytes, inputs: list[np.ndarray]):
    """``(description, outputs, tensors by name, note)`` from LiteRT BUILTIN_REF, else TFLite Micro; None if neither
    is installed. Raises ExecutionError when both refuse the file."""
    names = _tensor_names(data)
    refusal = None
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        Interpreter = None
    if Interpreter is not None:
        try:
            it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                             experimental_preserve_all_tensors=True)
            it.allocate_tensors()
        except (ValueError, RuntimeError) as e:
            refusal = _first_sentence(str(e))
        else:
            for d, v in zip(it.get_input_details(), inputs):
                it.set_tensor(d["index"], v)
            it.invoke()
            outs = [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]
            tensors = {}
            for d in it.get_tensor_details():
                i = d["index"]
                if i < len(names):
                    try:
                        tensors[names[i]] = np.array(it.get_tensor(i))
                    except ValueError:
                        pass
            return "LiteRT reference kernels (BUILTIN_REF)", outs, tensors, ""
    try:
        from tflite_micro.python.tflite_micro import runtime as tflm
    except ImportError:
        if refusal:
            raise ExecutionError(f"LiteRT refuses the model ({refusal}) and TFLite Micro is not installed")
        return None
    it = tflm.Interpreter.from_bytes(data, intrepreter_config=tflm.InterpreterConfig.kPreserveAllTensors)
    for i, v in enumerate(inputs):
        it.set_input(v, i)
    it.invoke()
    outs = [np.array(it.get_output(i)) for i in range(_n_outputs(data))]
    tensors = {}
    for i, n in enumerate(names):
        try:
            got = it.GetTensor(i, 0)
        except (RuntimeError, ValueError, IndexError):
            continue
        if isinstance(got, dict) and isinstance(got.get("tensor_data"), np.ndarray):
            tensors[n] = np.array(got["tensor_data"])
    return "TFLite Micro reference kernels", outs, tensors, \
        (f"LiteRT refuses the file: {refusal}" if refusal else "")


def _n_outputs(data: bytes) -> int:
    from .frontend.tflite_reader import read_model
    return len(read_model(data).outputs)


def run_onnxruntime(data: bytes, inputs: list[np.ndarray]):
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3  # errors only: its warnings (unused initializers, declared shapes) are not ours
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    feed = {i.name: v for i, v in zip(sess.get_inputs(), inputs)}
    return "onnxruntime (CPU execution provider)", [np.asarray(o) for o in sess.run(None, feed)], {}, \
        "intermediate tensors are not compared for ONNX models"


# ------------------------------------------------------------------------------------------------ probes

def probe_points(func: Function) -> list[tuple[str, Call]]:
    """(tensor name, node) for each named tensor computed in ``func``'s own body (partitions not entered):
    the last node in post-order carrying that name, in topological order."""
    last: dict[str, Call] = {}
    for n in post_order(func.body, enter_functions=False):
        if isinstance(n, Call) and isinstance(n.op, Op) and isinstance(n.span, Span) \
                and isinstance(getattr(n, "_checked_type", None), TensorType):
            name = n.span.source
            last.pop(name, None)
            last[name] = n
    return list(last.items())


def with_probes(mod: IRModule) -> tuple[IRModule, list[str], int]:
    """``mod`` whose main also returns every named tensor; returns (module, probe names, output leaf count)."""
    from .transform.infer_type import InferType
    mod = InferType()(mod)
    main = mod["main"]
    points = probe_points(main)
    n_out = _leaf_count(main.body.checked_type)
    out = mod.copy()
    out["main"] = Function(main.params, Tuple((main.body,) + tuple(n for _, n in points)), None, main.attrs)
    return InferType()(out), [name for name, _ in points], n_out


def _leaf_count(t) -> int:
    count, stack = 0, [t]
    while stack:
        x = stack.pop()
        if hasattr(x, "fields"):
            stack.extend(x.fields)
        else:
            count += 1
    return count


def inject_fault(pmod: IRModule, target: str, spec: str) -> tuple[IRModule, str]:
    """Testing only: add 1 to one offloaded requantization's output zero point. Returns (module, tensor)."""
    kind, _, wanted = spec.partition(":")
    if kind != "requant-off-by-one":
        raise ExecutionError(f"{FAULT_ENV}={spec!r}: unknown fault", hint="requant-off-by-one[:<tensor name>]")
    for gv, func in pmod.sorted_items():
        if func.attrs.get("Compiler") != target:
            continue
        for n in post_order(func.body):
            if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "qnn.requantize" \
                    and isinstance(n.args[4], Constant) and (not wanted or (n.span and n.span.source == wanted)):
                zp = n.args[4]
                bumped = zp.replace(data=(np.asarray(zp.data) + 1).astype(zp.data.dtype))
                victim = n

                def fn(orig, new, victim=victim, bumped=bumped):
                    if orig is victim:
                        return new.replace(args=new.args[:4] + (bumped,) + new.args[5:])
                    return None
                out = pmod.copy()
                out[gv] = rewrite_post_order(func, fn, preserves_types=True)  # same dtype and shape
                return out, (n.span.source if n.span else "?")
    raise ExecutionError(f"{FAULT_ENV}={spec!r}: no offloaded requantization" +
                         (f" computes {wanted!r}" if wanted else ""))


# ------------------------------------------------------------------------------------------------ compare

def _diff(ref: np.ndarray, got: np.ndarray | None, executor: str) -> ExecutorDiff | None:
    if got is None:
        return None
    if got.shape != ref.shape:
        if got.size != ref.size:
            return ExecutorDiff(executor, -1, float("nan"), int(ref.size))
        got = got.reshape(ref.shape)
    wide = np.float64 if ref.dtype.kind == "f" or got.dtype.kind == "f" else np.int64
    d = np.abs(ref.astype(wide) - got.astype(wide))
    bad = ~(d == 0)
    if wide is np.float64:
        bad &= ~(np.isnan(ref.astype(wide)) & np.isnan(got.astype(wide)))
    n = int(bad.sum())
    return ExecutorDiff(executor, n, float(np.nanmax(d)) if d.size and n else 0.0, int(ref.size))


def _from_bytes(blob: bytes, ref: np.ndarray) -> np.ndarray | None:
    if len(blob) != ref.nbytes:
        return None
    return np.frombuffer(blob, dtype=ref.dtype).reshape(ref.shape)


def compare_model(model, inputs: dict[str, np.ndarray], target: str = "npu", *, npu_config=None,
                  oracle: bool = True, npu_executor: str = "auto", progress: Callable[[str], None] | None = None,
                  partitioned=None, partition_options: dict | None = None) -> CompareResult:
    """Compare executors on ``model`` (``target=""``: no offloaded build) (a ``byoc.cli.common.LoadedModel``-like object with ``mod``, ``params``,
    ``kind``, ``data``, ``name``). ``npu_executor``: "auto" (the registered npu codegen if any, else the
    simulator adapter) or "simulator". ``partitioned`` reuses an existing ``(pmod, report)``; otherwise
    ``partition_for`` runs with ``partition_options`` (default: compute-free partitions go back to the CPU)."""
    import time
    from . import evaluate
    from .cli.adapters import build_module
    from .partition import partition_for

    step = progress or (lambda what: None)
    mod, params = model.mod, model.params
    main = mod["main"]
    order = [p.name_hint for p in main.params]
    input_list = [np.asarray(inputs[n]) for n in order]
    execs: list[ExecutorInfo] = []
    notes: list[str] = []
    values: dict[str, dict[str, np.ndarray]] = {}
    outputs: dict[str, list[np.ndarray]] = {}

    # reference
    step("reference interpreter")
    t0 = time.perf_counter()
    ref_tensors: dict[str, np.ndarray] = {}

    def tap(call, value):
        if isinstance(call.span, Span) and isinstance(value, np.ndarray):
            ref_tensors.pop(call.span.source, None)
            ref_tensors[call.span.source] = value
    ref_out = evaluate(mod, inputs, params, tap=tap)
    execs.append(ExecutorInfo("reference", "byoc.evaluate (reference interpreter)", True,
                              seconds=time.perf_counter() - t0))

    # cpu-only build
    step("CPU-only build")
    t0 = time.perf_counter()
    pm, names, n_out = with_probes(_bound(mod, params))
    exe, _ = build_module(pm, "llvm")
    got = exe.run(dict(inputs))
    outputs["cpu"], values["cpu"] = got[:n_out], dict(zip(names, got[n_out:]))
    execs.append(ExecutorInfo("cpu", "byoc.build(target='llvm')", True, seconds=time.perf_counter() - t0))

    # offloaded build
    report, pmod = None, None
    if target:
        step(f"{target}+CPU build")
        t0 = time.perf_counter()
        if partitioned is None:
            opts = {"inline_non_mac": True} if partition_options is None else partition_options
            partitioned = partition_for(target, mod, params, return_report=True, **opts)
        pmod, report = partitioned
        fault = os.environ.get(FAULT_ENV)
        if fault:
            pmod, victim = inject_fault(pmod, target, fault)
            notes.append(f"testing fault injected ({FAULT_ENV}={fault}): requantization of {victim!r} is off "
                         f"by one")
        outputs[target], values[target], how, observable = _run_offloaded(
            pmod, target, inputs, ref_tensors, npu_config, npu_executor == "simulator")
        note = "" if observable or not report.partitions else \
            "tensors inside offloaded partitions are not observable with this codegen; partition outputs are compared"
        execs.append(ExecutorInfo(target, f"partition_for('{target}') + build('{target},llvm') via {how}", True,
                                  note, time.perf_counter() - t0))

    # oracle
    if oracle:
        step("TFLite/ONNX reference")
        t0 = time.perf_counter()
        try:
            res = run_tflite_oracle(model.data, input_list) if model.kind == "tflite" else \
                run_onnxruntime(model.data, input_list)
        except ByocError as e:
            res = None
            execs.append(ExecutorInfo("oracle", "TFLite/onnxruntime", False, e.message))
        if res is not None:
            desc, outs, tensors, why = res
            key = "tflite" if model.kind == "tflite" else "onnxruntime"
            outputs[key], values[key] = outs, tensors
            execs.append(ExecutorInfo(key, desc, True, why, time.perf_counter() - t0))
        elif not any(e.name == "oracle" for e in execs):
            execs.append(ExecutorInfo("oracle", "TFLite/onnxruntime", False, "not installed"))

    # tensors
    placement = _placement_by_name(report, pmod) if report is not None else {}
    out_names = _output_names(main, len(ref_out))
    out_cmp = []
    for i, ref in enumerate(ref_out):
        diffs = [d for k in outputs if (d := _diff(ref, outputs[k][i] if i < len(outputs[k]) else None, k))]
        out_cmp.append(TensorComparison(out_names[i], "output", tuple(ref.shape), ref.dtype.name,
                                        placement.get(out_names[i], "cpu"), tuple(diffs)))
    inter = []
    for name, ref in ref_tensors.items():
        diffs = [d for k in values if (d := _diff(ref, values[k].get(name), k))]
        inter.append(TensorComparison(name, "intermediate", tuple(ref.shape), ref.dtype.name,
                                      placement.get(name, "cpu"), tuple(diffs)))
    first = next((t for t in inter if any(d.mismatches > 0 for d in t.diffs)), None)
    if first is None:
        first = next((t for t in out_cmp if t.differs), None)
    return CompareResult(model.name, target, tuple(execs), tuple(out_cmp), tuple(inter), first, tuple(notes))


def _run_offloaded(pmod, target, inputs, ref_tensors, npu_config, prefer_simulator):
    """Outputs and named tensors of the ``<target>,llvm`` build; CPU-side tensors come back as extra outputs of
    main, tensors inside NPU partitions from the simulator's memory (when the simulator adapter runs them)."""
    from .cli.adapters import NpuRecorder, build_module
    recorder = NpuRecorder(keep_tensors=True)
    pm, names, n_out = with_probes(pmod)
    exe, how = build_module(pm, f"{target},llvm", npu_config, recorder=recorder, prefer_simulator=prefer_simulator)
    got = exe.run(dict(inputs))
    vals = dict(zip(names, got[n_out:]))
    for name, (_, blob) in recorder.tensors.items():
        if name in ref_tensors and name not in vals:
            v = _from_bytes(blob, ref_tensors[name])
            if v is not None:
                vals[name] = v
    return got[:n_out], vals, how, bool(recorder.tensors)


def _bound(mod: IRModule, params) -> IRModule:
    from .interpreter import bind_params
    return bind_params(mod, params)


def _output_names(main: Function, n: int) -> list[str]:
    body = main.body
    nodes = list(body.fields) if isinstance(body, Tuple) else [body]
    names = []
    for i in range(n):
        node = nodes[i] if i < len(nodes) and len(nodes) == n else None
        span = getattr(node, "span", None)
        names.append(span.source if isinstance(span, Span) else f"output{i}")
    return names


def _placement_by_name(report, pmod: IRModule) -> dict[str, str]:
    """Tensor name → the partition computing it ('cpu' when it stays on the host)."""
    out: dict[str, str] = {}
    for n in report.nodes:
        if n.name and not n.on_cpu:
            out[n.name] = n.partition or n.target
    for gv, func in pmod.sorted_items():
        if func.attrs.get("Compiler"):
            for node in post_order(func.body):
                span = getattr(node, "span", None)
                if isinstance(span, Span) and isinstance(node, Call):
                    out.setdefault(span.source, gv.name_hint)
    return out

