"""Differential check of one ``.tflite`` model: every executor against LiteRT's reference kernels, bit for bit.

Executors (each skipped, with a note, when the feature it needs is missing from this checkout):

* ``interpreter``         ``byoc.evaluate`` of the imported module;
* ``partitioned:<t>``     ``byoc.evaluate`` after ``partition_for(t)`` for t in npu, vta (``verify_partitioned`` too);
* ``llvm``                ``byoc.build(mod, "llvm")``;
* ``llvm-partitioned:<t>`` the partitioned module built for the CPU, each partition compiled by the CPU backend
                          as an external function (exercises partition boundaries and tuple outputs);
* ``npu,llvm``            ``byoc.build(partitioned, "npu,llvm")`` when an ``npu`` codegen is registered, otherwise
                          ``npu_sim+llvm``: the CPU executor with each NPU partition compiled and simulated by
                          ``npu_sim`` directly;
* ``vta,llvm``            ``byoc.build(partitioned, "vta,llvm")``: the vta codegen (npu_sim on the vta-default
                          preset through patterns/vta.py's lowering map);
* ``artifact``            ``module.export(path)`` → ``byoc.load(path)`` → run, when both exist.

The oracle is ``ai_edge_litert`` with ``OpResolverType.BUILTIN_REF`` (never the default resolver), run in a child
process (``tests.fuzz.oracle``) because LiteRT aborts the process on some valid models. When it does, the case
says nothing about exactness: byoc must then refuse the model too (an ``ExecutionError``, like TFLite's CHECK), or
else every executor must agree with ``byoc.evaluate``. Nothing here computes expected values.
"""
from __future__ import annotations

import importlib
import os
import re
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Finding", "CaseReport", "check_model", "litert_run", "ALL_EXECUTORS", "available_features",
           "tflite_input_names"]

ALL_EXECUTORS = ("interpreter", "partitioned:npu", "partitioned:vta", "llvm", "llvm-partitioned:npu",
                 "llvm-partitioned:vta", "npu,llvm", "vta,llvm", "artifact")
PARTITION_TARGETS = ("npu", "vta")
# Modules that may register the "npu" codegen with byoc.build when imported (feature detection only).
_NPU_CODEGEN_MODULES = ("byoc.backend.npu", "npu_sim.codegen", "npu_sim.byoc_codegen", "byoc.backend.npu_codegen")


@dataclass(frozen=True)
class Finding:
    """One disagreement or failure. ``kind``: ``mismatch``, ``crash`` (an exception that is not a ByocError),
    or ``error`` (a ByocError on a model LiteRT runs)."""
    executor: str
    stage: str
    kind: str
    detail: str
    where: str = ""   # for mismatches: the first TFLite op whose output differs, when it can be found

    def signature(self) -> str:
        head = self.detail.split("\n", 1)[0]
        if self.kind == "mismatch":
            head = self.where or "output"
        elif self.kind == "crash":
            head = head.split(":", 1)[0]
        else:  # names and numbers vary between instances of one bug
            head = re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'_'", " ".join(head.split()[:8])))
        return f"{self.kind}|{self.executor}|{self.stage}|{head}"

    def render(self) -> str:
        where = f" at {self.where}" if self.where else ""
        return f"[{self.kind}] {self.executor} ({self.stage}){where}: {self.detail}"


@dataclass
class CaseReport:
    findings: list[Finding] = field(default_factory=list)
    rejected: str | None = None           # LiteRT would not run the model: the case says nothing
    oracle_died: str | None = None        # LiteRT aborted on the model; executors were checked against evaluate
    ran: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def render(self) -> str:
        lines = [f.render() for f in self.findings]
        lines.append(f"executors run: {', '.join(self.ran) or 'none'}")
        lines.extend(f"skipped {k}: {v}" for k, v in self.skipped.items())
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------------- oracle
def litert_run(model: bytes, inputs, preserve: bool = False):
    """LiteRT BUILTIN_REF outputs (and, with ``preserve``, every tensor by name)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                     experimental_preserve_all_tensors=preserve)
    it.allocate_tensors()
    for d, v in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], v)
    it.invoke()
    outs = [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]
    if not preserve:
        return outs, {}
    tensors = {}
    for d in it.get_tensor_details():
        try:
            tensors[d["name"]] = np.array(it.get_tensor(d["index"]))
        except ValueError:
            pass
    return outs, tensors


def tflite_input_names(model: bytes) -> list[str]:
    import tflite
    m = tflite.Model.GetRootAs(model, 0)
    sg = m.Subgraphs(0)
    return [sg.Tensors(sg.Inputs(i)).Name().decode() for i in range(sg.InputsLength())]


def _tflite_op_outputs(model: bytes) -> list[tuple[str, list[str]]]:
    """(op name, output tensor names) in execution order."""
    import tflite
    m = tflite.Model.GetRootAs(model, 0)
    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    sg = m.Subgraphs(0)
    out = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        code = m.OperatorCodes(op.OpcodeIndex())
        name = names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "?")
        out.append((name, [sg.Tensors(op.Outputs(j)).Name().decode() for j in range(op.OutputsLength())]))
    return out


# --------------------------------------------------------------------------------------------------- features
_FEATURES: dict[str, object] | None = None


def available_features() -> dict[str, object]:
    """What this checkout offers: the npu codegen in byoc.build, npu_sim, artifact export/load."""
    global _FEATURES
    if _FEATURES is not None:
        return _FEATURES
    import byoc.build as build_mod
    for name in _NPU_CODEGEN_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    feats: dict[str, object] = {"npu_codegen": "npu" in build_mod.registered_codegens()}
    try:
        import npu_sim
        feats["npu_sim"] = npu_sim
    except ImportError:
        feats["npu_sim"] = None
    try:
        import byoc
        feats["load"] = byoc.load
    except (ImportError, AttributeError):
        feats["load"] = None
    _FEATURES = feats
    return feats


# --------------------------------------------------------------------------------------------------- executors
def _unfold_composites(func):
    """The partition function with composite calls replaced by their bodies (the CPU backend runs plain ops)."""
    from byoc.ir.expr import Call, Function
    from byoc.ir.traversal import rewrite_post_order
    from byoc.transform.bind import bind

    def fn(orig, new):
        if isinstance(new, Call) and isinstance(new.op, Function) and "Composite" in new.op.attrs:
            return bind(new.op.body, dict(zip(new.op.params, new.args)))
        return None
    return func.replace(body=rewrite_post_order(func.body, fn))


def _cpu_partition_runner(func, name):
    from byoc.backend.llvm.executor import compile_function
    from byoc.transform.infer_type import InferType
    from byoc.ir.module import IRModule
    plain = InferType()(IRModule.from_expr(_unfold_composites(func)))["main"]
    exe = compile_function(plain)
    names = [p.name_hint for p in plain.params]
    return lambda arrays: exe.run(dict(zip(names, arrays)))


def _npu_sim_runner_factory(refused: list[str]):
    """Compile each NPU partition with npu_sim; a partition the NPU compiler refuses is noted in ``refused``
    (reported as a finding: partition_for offered it to the NPU) and runs on the CPU so the rest is still checked."""
    from byoc.errors import NPUError

    def runner(func, name):
        import npu_sim
        try:
            prog = npu_sim.compile(func, name=name)
        except NPUError as e:
            refused.append(f"@{name}: {type(e).__name__}: {e}")
            return _cpu_partition_runner(func, name)
        names = [p.name_hint for p in func.params]

        def run(arrays):
            outs, _ = npu_sim.simulate(prog, dict(zip(names, arrays)))
            return outs
        return run
    return runner


def _build_with_externs(pmod, externs: dict[str, Callable]):
    from byoc.backend.llvm.executor import compile_function
    from byoc.transform.infer_type import InferType
    pmod = InferType()(pmod)
    return compile_function(pmod["main"], externs=externs, mod=pmod)


def _export_roundtrip(exe, feed):
    load = available_features()["load"]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.byoc")
        exe.export(path)
        return load(path).run(feed)


# --------------------------------------------------------------------------------------------------- checking
def _as_list(outs) -> list[np.ndarray]:
    if isinstance(outs, np.ndarray):
        return [outs]
    return [np.asarray(o) for o in outs]


def _compare(ref: list[np.ndarray], got: list[np.ndarray], ref_name: str = "LiteRT") -> str | None:
    if len(ref) != len(got):
        return f"{len(got)} outputs, {ref_name} has {len(ref)}"
    for i, (r, g) in enumerate(zip(ref, got)):
        if r.dtype != g.dtype or r.shape != g.shape:
            return f"output {i}: {g.dtype}{list(g.shape)}, {ref_name} has {r.dtype}{list(r.shape)}"
        if r.tobytes() != g.tobytes():
            if r.dtype.kind == "f":
                differ = r.view(f"u{r.itemsize}") != g.view(f"u{g.itemsize}")
                diff = np.abs(r.astype(np.float64) - g.astype(np.float64))
            else:
                diff = np.abs(r.astype(np.int64) - g.astype(np.int64))
                differ = diff != 0
            return f"output {i}: {int(np.count_nonzero(differ))}/{r.size} elements differ, max |diff| {diff.max()}"
    return None


def _localize(oracle, model: bytes, inputs, mod, feed) -> str:
    """The first TFLite op (in execution order) whose output the interpreter computes differently."""
    import byoc
    try:
        _, tensors = oracle.run(model, inputs, preserve=True)
        taps: dict[str, np.ndarray] = {}

        def tap(call, value):
            if call.span is not None and not isinstance(value, tuple):
                taps[call.span.source] = np.asarray(value)
        byoc.evaluate(mod, feed, tap=tap)
    except Exception:  # noqa: BLE001 - localisation is best effort
        return ""
    for op, outs in _tflite_op_outputs(model):
        for name in outs:
            if name in tensors and name in taps:
                r, g = tensors[name], taps[name]
                if r.shape != g.shape or r.dtype != g.dtype or r.tobytes() != g.tobytes():
                    return op
    return ""


def _exception_finding(executor: str, stage: str, e: BaseException) -> Finding:
    from byoc.errors import ByocError
    if isinstance(e, ByocError):
        return Finding(executor, stage, "error", f"{type(e).__name__}: {e}"[:2000])
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__)[-6:])
    return Finding(executor, stage, "crash", f"{type(e).__name__}: {e}\n{tb}"[:4000])


def check_model(model: bytes, inputs, executors: tuple[str, ...] = ALL_EXECUTORS, oracle=None) -> CaseReport:
    """Run ``model`` on ``inputs`` through ``executors``; every result must equal LiteRT BUILTIN_REF's.

    ``oracle``: an object with ``run(model, inputs, preserve)`` (default: the shared ``LiteRTOracle`` child)."""
    import byoc
    from byoc.errors import ExecutionError
    from byoc.partition import verify_partitioned

    from .oracle import OracleDied, OracleRefused, default_oracle

    rep = CaseReport()
    inputs = [np.asarray(a) for a in inputs]
    oracle = oracle or default_oracle()
    ref: list[np.ndarray] | None
    try:
        ref, _ = oracle.run(model, inputs)
    except OracleRefused as e:  # LiteRT refuses the model: nothing to compare against
        rep.rejected = str(e)[:500]
        return rep
    except OracleDied as e:
        rep.oracle_died = str(e)[:500]
        ref = None

    def timed(name: str, fn):
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            rep.seconds[name] = rep.seconds.get(name, 0.0) + time.perf_counter() - t0

    try:
        mod, params = timed("import", lambda: byoc.frontend.from_tflite(model))
    except Exception as e:  # noqa: BLE001
        rep.findings.append(_exception_finding("import", "from_tflite", e))
        return rep
    names = [p.name_hint for p in mod["main"].params]
    tnames = tflite_input_names(model)
    if len(names) != len(inputs):
        rep.findings.append(Finding("import", "from_tflite", "error",
                                    f"main has parameters {names}, the model has inputs {tnames}"))
        return rep
    feed = dict(zip(names, inputs))

    refused = None  # set when LiteRT aborted and byoc.evaluate refuses too: every executor must refuse
    if ref is None:  # LiteRT aborted: byoc must refuse too, or the executors are checked against evaluate
        try:
            ref = _as_list(timed("interpreter", lambda: byoc.evaluate(mod, feed)))
        except ExecutionError as e:
            refused = f"{type(e).__name__}: {e}"
        except Exception as e:  # noqa: BLE001
            rep.findings.append(_exception_finding("interpreter", "evaluate", e))
            return rep
        rep.ran.append("interpreter")
        executors = tuple(e for e in executors if e != "interpreter")

    def run(executor: str, stage_fns: list[tuple[str, Callable]]):
        """Run stages in order; the last returns the outputs to compare."""
        value = None
        for stage, fn in stage_fns:
            try:
                value = timed(executor, fn)
            except Exception as e:  # noqa: BLE001 - every exception is classified
                if refused is not None and stage != "build" and isinstance(e, ExecutionError):
                    rep.ran.append(executor)  # refuses at run time like evaluate and TFLite
                else:
                    rep.findings.append(_exception_finding(executor, stage, e))
                return None
        rep.ran.append(executor)
        if refused is not None:
            rep.findings.append(Finding(executor, "run", "mismatch", "returned outputs where LiteRT aborts and "
                                        f"byoc.evaluate refuses ({refused.splitlines()[0]})"))
            return value
        msg = _compare(ref, _as_list(value), "byoc.evaluate" if rep.oracle_died else "LiteRT")
        if msg:
            where = _localize(oracle, model, inputs, mod, feed) if executor == "interpreter" else ""
            rep.findings.append(Finding(executor, "compare", "mismatch", msg, where))
        return value

    if "interpreter" in executors:
        run("interpreter", [("evaluate", lambda: byoc.evaluate(mod, feed))])

    partitioned: dict[str, object] = {}
    for t in PARTITION_TARGETS:
        if not any(e.endswith(":" + t) or (t == "npu" and e == "npu,llvm") for e in executors):
            continue
        try:
            pm = timed(f"partition:{t}", lambda: byoc.partition_for(t, mod, params))
            verify_partitioned(pm, mod)
        except Exception as e:  # noqa: BLE001
            rep.findings.append(_exception_finding(f"partitioned:{t}", "partition_for", e))
            continue
        partitioned[t] = pm
        if f"partitioned:{t}" in executors:
            run(f"partitioned:{t}", [("evaluate", lambda: byoc.evaluate(pm, feed))])

    exe = None
    if "llvm" in executors or "artifact" in executors:
        box = {}

        def build_llvm():
            box["exe"] = byoc.build(mod, target="llvm")
            return box["exe"]
        run("llvm", [("build", build_llvm), ("run", lambda: box["exe"].run(feed))])
        exe = box.get("exe")

    for t, pm in partitioned.items():
        name = f"llvm-partitioned:{t}"
        if name in executors:
            box = {}
            run(name, [("build", lambda: box.setdefault("exe", _build_with_externs(pm, {t: _cpu_partition_runner}))),
                       ("run", lambda: box["exe"].run(feed))])

    feats = available_features()
    if "npu,llvm" in executors and "npu" in partitioned:
        pm = partitioned["npu"]
        box = {}
        if feats["npu_codegen"]:
            run("npu,llvm", [("build", lambda: box.setdefault("exe", byoc.build(pm, target="npu,llvm"))),
                             ("run", lambda: box["exe"].run(feed))])
        elif feats["npu_sim"] is not None:
            rep.skipped["npu,llvm"] = "no npu codegen registered with byoc.build; ran npu_sim+llvm instead"
            refused: list[str] = []
            run("npu_sim+llvm", [("build", lambda: box.setdefault("exe", _build_with_externs(
                pm, {"npu": _npu_sim_runner_factory(refused)}))), ("run", lambda: box["exe"].run(feed))])
            for msg in refused:
                rep.findings.append(Finding("npu_sim+llvm", "npu_sim.compile", "error", msg.split(": ", 1)[1]))
        else:
            rep.skipped["npu,llvm"] = "neither an npu codegen nor npu_sim is available"

    if "vta,llvm" in executors and "vta" in partitioned:  # vta's codegen: npu_sim with the vta lowering map
        pm_vta = partitioned["vta"]
        box = {}
        run("vta,llvm", [("build", lambda: box.setdefault("exe", byoc.build(pm_vta, target="vta,llvm"))),
                         ("run", lambda: box["exe"].run(feed))])

    if "artifact" in executors:
        if exe is None:
            rep.skipped["artifact"] = "no llvm build to export"
        elif not hasattr(exe, "export") or feats["load"] is None:
            rep.skipped["artifact"] = "module.export / byoc.load not available"
        else:
            run("artifact", [("export+load+run", lambda: _export_roundtrip(exe, feed))])
    return rep
