"""``compare_model``: run one model on every executor and compare each against the reference it must equal."""
from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

from ..errors import ByocError
from ..ir.expr import Call, Function, GlobalVar, Span, Tuple, TupleGetItem
from ..ir.module import IRModule
from ..ir.traversal import post_order
from .faults import FAULT_ENV, inject, parse_fault
from .oracles import ORACLE_DESCRIPTIONS, ORACLE_FOR_SEMANTICS, OracleRun, run_oracle
from .producers import Key, Producer, catalog, decode, key_of, partition_output_probe, tag_npu_layers, untag, \
    with_probes
from .result import CompareResult, ExecutorInfo, TensorComparison, diff

__all__ = ["compare_model", "ONNX_FLOAT_TOLERANCE"]

# onnxruntime's float kernels (MLAS: vectorised exp, fused multiply-adds, blocked sums) are not reproduced bit for
# bit; float tensors of ONNX models agree within this relative tolerance (integers stay exact).
ONNX_FLOAT_TOLERANCE = 1e-5

_FROM_ENV = object()


def compare_model(model, inputs: dict[str, np.ndarray], target: str = "npu", *, npu_config=None,
                  oracle: bool = True, npu_executor: str = "auto", progress: Callable[[str], None] | None = None,
                  partitioned=None, partition_options: dict | None = None, outputs_only: bool = False,
                  fault=_FROM_ENV) -> CompareResult:
    """Compare executors on ``model`` (a ``byoc.cli.common.LoadedModel``-like object with ``mod``, ``params``,
    ``kind``, ``data``, ``name``, ``semantics``); ``target=""``: no offloaded build.

    Executors: ``evaluate`` (the reference interpreter), ``cpu`` (``build(target="llvm")``) and ``<target>``
    (``partition_for`` then a ``"<target>,llvm"`` build). Each must equal the oracle of the model's semantics
    (LiteRT BUILTIN_REF, TFLite Micro or onnxruntime) on every tensor the oracle exposes, and ``evaluate``
    elsewhere. ``outputs_only`` compares outputs only. ``partitioned`` reuses an existing ``(pmod, report)``;
    otherwise ``partition_for`` runs with ``partition_options`` (default: compute-free partitions go back to the
    CPU). ``fault`` (default: ``$BYOC_TESTING_FAULT``) makes one build deliberately wrong (``faults.py``)."""
    from .. import evaluate
    from ..cli.adapters import build_module
    from ..partition import partition_for
    from ..transform.infer_type import InferType

    step = progress or (lambda what: None)
    fault = parse_fault(os.environ.get(FAULT_ENV)) if fault is _FROM_ENV else \
        (parse_fault(fault) if isinstance(fault, str) else fault)
    mod, params = model.mod, model.params
    main = mod["main"]
    order = [p.name_hint for p in main.params]
    input_list = [np.asarray(inputs[n]) for n in order]
    known = catalog(main)
    execs: list[ExecutorInfo] = []
    notes: list[str] = []
    observed: dict[str, dict[Key, np.ndarray]] = {}   # executor → producer key → value
    outputs: dict[str, list[np.ndarray]] = {}

    step("reference interpreter")
    t0 = time.perf_counter()
    ref: dict[Key, np.ndarray] = {}

    def tap(call, value):
        k = key_of(call)
        if k in known and isinstance(value, np.ndarray):
            ref[k] = value
    ref_out = evaluate(mod, inputs, params, tap=None if outputs_only else tap)
    outputs["evaluate"] = list(ref_out)
    observed["evaluate"] = ref
    execs.append(ExecutorInfo("evaluate", "byoc.evaluate (reference interpreter)", True,
                              seconds=time.perf_counter() - t0))

    step("CPU-only build")
    t0 = time.perf_counter()
    bound = _bound(mod, params)
    if fault is not None and fault.build == "cpu":
        bound, victim = inject(bound, fault)
        notes.append(f"testing fault injected ({FAULT_ENV}={fault}): {victim} of the cpu build is off by one")
    pm, keys, n_out = with_probes(bound, lambda n: None if outputs_only else _model_tensor_key(n, known))
    exe, _ = build_module(pm, "llvm")
    got = exe.run(dict(inputs))
    outputs["cpu"], observed["cpu"] = got[:n_out], dict(zip(keys, got[n_out:]))
    execs.append(ExecutorInfo("cpu", "byoc.build(target='llvm')", True, seconds=time.perf_counter() - t0))

    pmod = None
    if target:
        step(f"{target}+CPU build")
        t0 = time.perf_counter()
        if partitioned is None:
            opts = {"inline_non_mac": True} if partition_options is None else partition_options
            partitioned = partition_for(target, mod, params, return_report=True, **opts)
        pmod = partitioned[0]
        if fault is not None and fault.build in ("npu", "host"):
            pmod, victim = inject(pmod, fault, target)
            notes.append(f"testing fault injected ({FAULT_ENV}={fault}): {victim} is off by one")
        outputs[target], observed[target], how, note = _run_offloaded(
            InferType()(pmod), target, inputs, known, npu_config, npu_executor == "simulator", outputs_only)
        execs.append(ExecutorInfo(target, f"partition_for('{target}') + build('{target},llvm') via {how}", True,
                                  note, time.perf_counter() - t0))

    ran: OracleRun | None = None
    semantics = getattr(model, "semantics", "litert" if model.kind == "tflite" else "onnxruntime")
    oracle_name = ORACLE_FOR_SEMANTICS.get(semantics, "")
    if oracle and oracle_name:
        step(ORACLE_DESCRIPTIONS[oracle_name])
        t0 = time.perf_counter()
        try:
            ran = run_oracle(semantics, model.data, input_list)
        except ByocError as e:
            execs.append(ExecutorInfo(oracle_name, ORACLE_DESCRIPTIONS[oracle_name], False, e.message))
        else:
            if ran is None:
                execs.append(ExecutorInfo(oracle_name, ORACLE_DESCRIPTIONS[oracle_name], False, "not installed"))
            else:
                outputs[ran.name] = list(ran.outputs)
                execs.append(ExecutorInfo(ran.name, ran.description, True, ran.note, time.perf_counter() - t0))
    elif not oracle:
        notes.append("no oracle ran (--no-oracle): every executor is compared with byoc.evaluate")
    against = ran.name if ran is not None else "evaluate"
    checked = ("evaluate", "cpu", target) if ran is not None else ("cpu", target)   # else evaluate is the reference
    execs = [_with_check(e, against) if e.name in checked else e for e in execs]

    placement = _placements(pmod, target) if pmod is not None else {}
    tol = ONNX_FLOAT_TOLERANCE if model.kind == "onnx" else None
    out_cmp = _compare_outputs(main, pmod, ref_out, outputs, ran, known, placement, target, tol)
    out_keys = {key_of(n) for n in _body_fields(main)}
    inter = [] if outputs_only else _compare_intermediates(known, observed, ran, placement, out_keys, notes, tol)
    ranked = sorted(out_cmp + inter, key=lambda t: t[0])
    first = next((t for _, t in ranked if t.differs), None)
    return CompareResult(model.name, target, tuple(execs), tuple(t for _, t in out_cmp), tuple(t for _, t in inter),
                         first, tuple(notes), ran.name if ran else "", ran.description if ran else "", semantics,
                         outputs_only, tol, {k: tuple(v) for k, v in outputs.items()})


def _with_check(e: ExecutorInfo, against: str) -> ExecutorInfo:
    from dataclasses import replace
    return replace(e, checked_against=against)


def _model_tensor_key(n, known: dict[Key, Producer]) -> Key | None:
    k = key_of(n)
    return k if k in known and known[k].model_tensor else None


def _bound(mod: IRModule, params) -> IRModule:
    from ..interpreter import bind_params
    return bind_params(mod, params)


def _run_offloaded(pmod, target, inputs, known, npu_config, prefer_simulator, outputs_only):
    """Outputs and observed tensors (by producer key) of the ``<target>,llvm`` build: CPU-side model tensors and
    values fed to partitions come back as extra outputs of main, partition outputs as main sees them, and every
    layer output inside a partition from the simulator's memory."""
    from ..cli.adapters import NpuRecorder, build_module
    if outputs_only:
        exe, how = build_module(pmod, f"{target},llvm", npu_config, prefer_simulator=prefer_simulator)
        return exe.run(dict(inputs)), {}, how, ""
    tagged, tags = tag_npu_layers(pmod, target, known)
    feeds = _partition_feeds(tagged, target)
    part_want, _ = partition_output_probe(tagged, target)

    def want(n):
        k = key_of(n)
        if k in known and (known[k].model_tensor or id(n) in feeds):
            return k
        return part_want(n)
    recorder = NpuRecorder(keep_tensors=True)
    pm, keys, n_out = with_probes(tagged, want)
    exe, how = build_module(pm, f"{target},llvm", npu_config, recorder=recorder, prefer_simulator=prefer_simulator)
    got = exe.run(dict(inputs))
    vals = dict(zip(keys, got[n_out:]))
    for name, (_, blob) in recorder.tensors.items():
        n = untag(name)
        if n is not None and n in tags and tags[n].key not in vals:
            v = decode(blob, tags[n])
            if v is not None:
                vals[tags[n].key] = v
    unseen = sum(1 for t in tags.values() if t.key not in vals)
    note = "" if not unseen else \
        f"{unseen} of {len(tags)} layer outputs inside offloaded partitions were not read: memory views (reshape) " \
        f"or not observable with this codegen"
    return got[:n_out], vals, how, note


def _partition_feeds(pmod: IRModule, target: str) -> set[int]:
    """ids of main's op calls whose value an offloaded partition reads."""
    parts = {gv.name_hint for gv, f in pmod.sorted_items() if f.attrs.get("Compiler") == target}
    out = set()
    for n in post_order(pmod["main"].body, enter_functions=False):
        if isinstance(n, Call) and isinstance(n.op, GlobalVar) and n.op.name_hint in parts:
            out.update(id(a) for a in n.args)
    return out


def _placements(pmod: IRModule, target: str) -> dict[Key, str]:
    """Producer key → "cpu" or the partition computing it in the offloaded build."""
    out: dict[Key, str] = {}
    for gv, func in pmod.sorted_items():
        where = gv.name_hint if func.attrs.get("Compiler") == target else "cpu"
        for n in post_order(func.body):
            k = key_of(n)
            if k is not None:
                out.setdefault(k, where)
    return out


def _body_fields(main: Function) -> list:
    body = main.body
    return list(body.fields) if isinstance(body, Tuple) else [body]


def _output_placement(pmod: IRModule | None, i: int, n: int, placement: dict[Key, str],
                      target: str) -> str:
    if pmod is None:
        return "cpu"
    fields = _body_fields(pmod["main"])
    if len(fields) != n or i >= len(fields):
        return "cpu"
    f = fields[i]
    if isinstance(f, TupleGetItem):
        f = f.tuple_value
    if isinstance(f, Call) and isinstance(f.op, GlobalVar):
        return f.op.name_hint
    return placement.get(key_of(f), "cpu")


def _expected(value: np.ndarray, oracle_value: np.ndarray | None) -> bool:
    return oracle_value is not None and oracle_value.dtype == value.dtype and oracle_value.size == value.size


def _compare_outputs(main, pmod, ref_out, outputs, ran: OracleRun | None, known, placement, target, tol):
    fields = _body_fields(main)
    out = []
    for i, r in enumerate(ref_out):
        node = fields[i] if len(fields) == len(ref_out) else None
        span = getattr(node, "span", None)
        name = span.source if isinstance(span, Span) else f"output{i}"
        k = key_of(node)
        prod = known.get(k)
        o = ran.outputs[i] if ran is not None and i < len(ran.outputs) else None
        if _expected(r, o):
            expected, exp_from, execs = o.reshape(r.shape), ran.name, [x for x in outputs if x != ran.name]
        else:
            expected, exp_from, execs = r, "evaluate", [x for x in outputs if x != "evaluate" and
                                                        (ran is None or x != ran.name)]
            if o is not None:  # the oracle's output is of another type or size: that alone is a divergence
                execs.append(ran.name)
        diffs = tuple(d for x in execs
                      if (d := diff(expected, outputs[x][i] if i < len(outputs[x]) else None, x, tol)))
        order = prod.order if prod else 1 << 60
        out.append((order, TensorComparison(name, "output", tuple(r.shape), r.dtype.name,
                                            _output_placement(pmod, i, len(ref_out), placement, target), diffs,
                                            prod.op if prod else "", exp_from, True)))
    return out


def _compare_intermediates(known, observed, ran: OracleRun | None, placement, out_keys, notes, tol):
    ref = observed["evaluate"]
    others = [x for x in observed if x != "evaluate"]
    out, odd = [], 0
    for k, p in known.items():
        if k in out_keys or k not in ref:
            continue
        r = ref[k]
        o = ran.tensors.get(p.name) if ran is not None and p.model_tensor else None
        if _expected(r, o):
            expected, exp_from, execs = o.reshape(r.shape), ran.name, ["evaluate"] + others
        else:
            odd += o is not None
            expected, exp_from, execs = r, "evaluate", others
        diffs = tuple(d for x in execs if (d := diff(expected, observed[x].get(k), x, tol)))
        if not diffs:
            continue
        out.append((p.order, TensorComparison(p.name, "intermediate", tuple(r.shape), r.dtype.name,
                                              placement.get(k, "cpu"), diffs, p.op, exp_from, p.model_tensor)))
    if odd:
        notes.append(f"{odd} model tensor(s) have another type or size in the oracle than in the imported graph; "
                     f"they are compared with byoc.evaluate")
    return out
