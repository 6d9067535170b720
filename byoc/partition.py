"""``byoc.partition_for(target, mod, params)``: the BYOC pipeline for one target, with a placement report.

bind params → FoldConstant(fold_qnn=True) → InferType → MergeComposite(table) → AnnotateTarget(target) →
MergeCompilerRegions → PartitionGraph, then optional post-partition policies that give small or
compute-free partitions back to the CPU. With ``return_report=True`` the result is ``(mod, report)``: every
op or composite the pipeline saw, where it runs, and for each op left on the CPU the rule that refused it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc

from dataclasses import dataclass, field

from .errors import PartitionError
from .ir.expr import Call, Expr, Function, GlobalVar, Op, Span, Tuple, TupleGetItem
from .ir.module import IRModule
from .ir.traversal import children as _children, post_order, rewrite_post_order
from .transform.bind import bind, bind_params_by_name
from .transform.infer_type import InferType
from .transform.pass_infra import PassContext, Sequential
from .transform.placement import LOG_KEY, PlacementLog

__all__ = ["partition_for", "PartitionReport", "NodePlacement", "PartitionInfo", "MAC_OPS", "verify_partitioned",
           "inline_partitions"]

# Ops that do multiply-accumulate work; a partition without any is "compute-free" (Ethos-N's
# InlineNonComputeIntensivePartitions keeps a similar list).
MAC_OPS = frozenset({"qnn.conv2d", "qnn.dense", "qnn.conv2d_transpose", "nn.conv2d", "nn.dense",
                     "nn.conv2d_transpose", "nn.avg_pool2d", "nn.global_avg_pool2d", "qnn.mean", "mean",
                     "nn.batch_matmul", "qnn.batch_matmul", "qnn.mul"})


@dataclass(frozen=True)
class NodePlacement:
    """One op or composite: where it runs and, when on the CPU, why."""
    op: str
    name: str
    target: str
    reason: str
    function: str = "main"
    partition: str = ""
    inner_ops: tuple[str, ...] = ()

    @property
    def on_cpu(self) -> bool:
        return self.target == "cpu"


@dataclass(frozen=True)
class PartitionInfo:
    name: str
    target: str
    composites: tuple[str, ...]
    ops: tuple[str, ...]

    @property
    def has_mac_work(self) -> bool:
        return any(op in MAC_OPS for op in self.ops)


@dataclass(frozen=True)
class PartitionReport:
    target: str
    nodes: tuple[NodePlacement, ...]
    partitions: tuple[PartitionInfo, ...]
    notes: tuple[str, ...] = field(default=())
    placement: object = None   # placement="cost": the PlacementPlan (transform/cost_placement.py)

    def cpu_ops(self) -> list[NodePlacement]:
        return [n for n in self.nodes if n.on_cpu]

    def offloaded(self) -> list[NodePlacement]:
        return [n for n in self.nodes if not n.on_cpu]

    def summary(self) -> str:
        n_off = sum(max(1, len(n.inner_ops)) for n in self.offloaded())
        n_cpu = sum(max(1, len(n.inner_ops)) for n in self.cpu_ops())
        return (f"{self.target}: {len(self.partitions)} partition(s), {n_off} op(s) offloaded, "
                f"{n_cpu} op(s) on the CPU")

    def render(self) -> str:
        lines = [self.summary()]
        for p in self.partitions:
            lines.append(f"  @{p.name}: {len(p.ops)} ops, composites: {', '.join(p.composites) or 'none'}")
        cpu = self.cpu_ops()
        if cpu:
            lines.append("CPU-resident ops:")
            for n in cpu:
                label = f"{n.op} ({n.name})" if n.name else n.op
                lines.append(f"  {label}: {n.reason}")
        lines.extend(self.notes)
        if self.placement is not None:
            lines.append(self.placement.summary())
        return "\n".join(lines)


def _span_name(node: Expr) -> str:
    span = getattr(node, "span", None)
    return span.source if isinstance(span, Span) else ""


def _ops_in(func: Function) -> list[str]:
    return [n.op.name for n in post_order(func.body) if isinstance(n, Call) and isinstance(n.op, Op)]


def _first_op_in(func: Function) -> list[str]:
    """The name of one op call of ``func`` (the search stops at the first), or none: all that comparing the
    op count with ``min_partition_size=1`` needs."""
    stack: list[Expr] = [func.body]
    seen: set[Expr] = set()  # nodes hash by identity
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if isinstance(n, Call) and isinstance(n.op, Op):
            return [n.op.name]
        stack.extend(_children(n))
    return []


def _composites_in(func: Function) -> list[Function]:
    return [n for n in post_order(func.body) if isinstance(n, Function) and "Composite" in n.attrs]


def _placed_units(func: Function) -> list[object]:
    """What identifies an AnnotateTarget decision inside a partition: composite functions (kept by identity
    through the passes) and the attribute objects of bare op calls (shared by every rebuilt copy of a call)."""
    def kids(n: Expr) -> tuple[Expr, ...]:
        return () if isinstance(n, Function) and "Composite" in n.attrs else _children(n)

    out: list[object] = []
    for n in post_order(func.body, child_fn=kids):
        if isinstance(n, Function) and "Composite" in n.attrs:
            out.append(n)
        elif isinstance(n, Call) and isinstance(n.op, Op) and n.attrs is not None:
            out.append(n.attrs)
    return out


def _decision_unit(node: Expr) -> object | None:
    if isinstance(node, Call):
        return node.op if isinstance(node.op, Function) else node.attrs
    return None


def _unfold(expr: Expr) -> Expr:
    """Composite calls become their bodies; TupleGetItem of a literal tuple becomes the field."""
    def fn(orig: Expr, new: Expr) -> Expr | None:
        if isinstance(new, Call) and isinstance(new.op, Function) and "Composite" in new.op.attrs:
            return bind(new.op.body, dict(zip(new.op.params, new.args)))
        if isinstance(new, TupleGetItem) and isinstance(new.tuple_value, Tuple):
            return new.tuple_value.fields[new.index]
        return None
    return rewrite_post_order(expr, fn, preserves_types=True)  # a composite call has its body's type


def inline_partitions(mod: IRModule, names: set[str]) -> IRModule:
    """Give the named partitions back to the caller (composites unfolded to plain ops)."""
    if not names:
        return mod
    out = mod.copy()
    funcs = {n: mod[n] for n in names}

    def fn(orig: Expr, new: Expr) -> Expr | None:
        if isinstance(new, Call) and isinstance(new.op, GlobalVar) and new.op.name_hint in funcs:
            f = funcs[new.op.name_hint]
            return _unfold(bind(f.body, dict(zip(f.params, new.args))))
        if isinstance(new, TupleGetItem) and isinstance(new.tuple_value, Tuple):
            return new.tuple_value.fields[new.index]
        return None

    for gv, func in mod.items():
        if gv.name_hint in names:
            continue
        new = rewrite_post_order(func.body, fn, preserves_types=True)  # a partition call has its body's type
        if new is not func.body:
            out[gv] = func.replace(body=new)
    for n in names:
        del out[n]
    return out


def _build_report(target: str, mod: IRModule, log: PlacementLog,
                  given_back: dict[int, str], placement=None) -> PartitionReport:
    partitions: list[PartitionInfo] = []
    home: dict[int, str] = {}
    for gv, func in mod.items():  # creation order: topological within each function
        if func.attrs.get("Compiler") != target:
            continue
        comps = _composites_in(func)
        for u in _placed_units(func):
            home[id(u)] = gv.name_hint
        partitions.append(PartitionInfo(gv.name_hint, target, tuple(str(c.attrs["Composite"]) for c in comps),
                                        tuple(_ops_in(func))))
    nodes: list[NodePlacement] = []
    for d in log.decisions:
        unit = _decision_unit(d.node)
        if d.target == "default":
            nodes.append(NodePlacement(d.op, d.name, "cpu", "; ".join(d.reasons), d.function, "", d.inner_ops))
        elif unit is not None and id(unit) in given_back:
            nodes.append(NodePlacement(d.op, d.name, "cpu", given_back[id(unit)], d.function, "", d.inner_ops))
        else:
            where = home.get(id(unit), "") if unit is not None else ""
            nodes.append(NodePlacement(d.op, d.name, d.target, "", d.function, where, d.inner_ops))
    return PartitionReport(target, tuple(nodes), tuple(partitions), tuple(log.notes), placement)


# How many times partition_for re-runs the pipeline to keep entry units that do not pay on the CPU (each run
# can expose a new entry unit behind the ones it kept).
_MAX_PEELS = 3


def _edge_refusals(mod: IRModule, target: str) -> dict[int, tuple[object, str]]:
    """Entry units of the target's partitions (no MACs, reading only partition inputs) whose device cycles and
    boundary traffic cost more than they save on the host: keyed like ``PlacementLog.deny``."""
    from runtime.npu_codegen import simulator_codegen_for
    from .transform.boundary_cost import DEFAULT_HOST, edge_costs
    from .transform.placement import unit_key
    codegen = simulator_codegen_for(target)
    if codegen is None:
        return {}
    out: dict[int, tuple[object, str]] = {}
    for gv, func in mod.sorted_items():
        if func.attrs.get("Compiler") != target:
            continue
        for cost in edge_costs(func, gv.name_hint, codegen, DEFAULT_HOST):
            key = unit_key(cost.unit)
            if not cost.pays and key is not None:
                out[id(key)] = (key, cost.reason(DEFAULT_HOST))
    return out


def _apply_policies(mod: IRModule, target: str, min_partition_size: int, inline_non_mac: bool,
                    log: PlacementLog) -> tuple[IRModule, dict[int, str]]:
    """Returns the module and, per placed unit given back to the CPU (by id), the reason."""
    reasons: dict[str, str] = {}
    for gv, func in mod.sorted_items():
        if func.attrs.get("Compiler") != target:
            continue
        # The common default (size 1, no MAC rule) only needs to know whether there is any op at all.
        ops = _ops_in(func) if (min_partition_size > 1 or inline_non_mac) else _first_op_in(func)
        if len(ops) < min_partition_size:
            reasons[gv.name_hint] = (f"partition @{gv.name_hint} was given back to the CPU: it has {len(ops)} "
                                     f"op(s), fewer than min_partition_size={min_partition_size}")
        elif inline_non_mac and not any(op in MAC_OPS for op in ops):
            reasons[gv.name_hint] = (f"partition @{gv.name_hint} was given back to the CPU: it does no "
                                     f"multiply-accumulate work (inline_non_mac=True)")
    given_back: dict[int, str] = {}
    if not reasons:
        return mod, given_back
    for name, why in reasons.items():
        for u in _placed_units(mod[name]):
            given_back[id(u)] = why
        log.notes.append(why)
    return inline_partitions(mod, set(reasons)), given_back


@contextlib.contextmanager
def _no_cycle_collection():
    """IR nodes form no reference cycles; the cyclic collector only re-scans the millions of nodes a large
    graph allocates (a quarter of the run time at 10k+ ops), so pause it for the pipeline."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _desired_layouts(target: str, mod: IRModule) -> IRModule:
    """The target's declared layouts (``patterns.set_desired_layouts``): ONNX's NCHW convolutions become NHWC
    chains (ConvertLayout, then SinkLayoutTransform keeps conv → bias_add → requantize together)."""
    from patterns import desired_layouts
    from .transform.convert_layout import to_layouts
    return to_layouts(mod, desired_layouts(target), "desired_layouts")


def partition_for(target: str, mod, params: dict | None = None, *, mod_name: str = "default",
                  min_partition_size: int = 1, inline_non_mac: bool = False, merge_regions: bool = True,
                  fold_constants: bool = True, bind_constants: bool = True, return_report: bool = False,
                  boundary_rule: bool = False, placement: str = "all", npu_config=None, cpu_cost=None):
    """Partition ``mod`` for ``target`` with its registered pattern table.

    Options: ``min_partition_size`` (partitions with fewer ops go back to the CPU), ``inline_non_mac``
    (partitions without multiply-accumulate work go back to the CPU), ``merge_regions`` (run
    MergeCompilerRegions; False gives one partition per composite, like CMSIS-NN), ``mod_name`` (name prefix),
    ``return_report`` (also return a ``PartitionReport``), ``boundary_rule`` (a layer without MACs at a partition's
    entry whose device cycles plus boundary traffic cost more than it saves on the host stays on the CPU; targets
    whose codegen has a device model, ``transform/boundary_cost.py``; ``"advise"``: such layers stay offloaded and
    the report's notes name them).

    ``placement``: ``"all"`` (default) offloads every region the table allows, then applies the policies above;
    ``"cost"`` chooses NPU or CPU per unit by estimated end-to-end time, boundary transfers and partition launches
    included (``transform/cost_placement.py``; the give-back policies are not applied, the costs decide), for
    the NPU configuration ``npu_config`` (the codegen's default when None) and the CPU cost table ``cpu_cost``
    (a ``CpuCostModel`` or a JSON path; None: this machine's, calibrated on first use and cached). The
    report's ``placement`` then holds the plan against all-offload and all-CPU.
    """
    from patterns import get_pattern_table, registered_targets, vendor_compiler
    from .transform.annotate_target import AnnotateTarget
    from .transform.merge_compiler_regions import MergeCompilerRegions
    from .transform.merge_composite import MergeComposite
    from .transform.partition_graph import AnnotateMergePartition, PartitionGraph

    if isinstance(mod, Expr):
        mod = IRModule.from_expr(mod)
    if not isinstance(mod, IRModule):
        raise PartitionError(f"partition_for expects an IRModule, got {type(mod).__name__}",
                             hint="import a model with byoc.frontend.from_tflite(...) first")
    table = get_pattern_table(target)
    if table is None:
        raise PartitionError(f"no pattern table registered for target {target!r}",
                             hint=f"known targets: {', '.join(registered_targets())}; register one with "
                                  f"@patterns.register_pattern_table('{target}') in a Python file and pass it "
                                  f"with --patterns FILE.py (byoc.targets.load_target_file), or install a "
                                  f"package with a byoc.targets entry point named {target!r}")
    if placement not in ("all", "cost"):
        raise PartitionError(f"placement must be 'all' or 'cost', got {placement!r}",
                             hint="'cost' chooses NPU or CPU per region by estimated time")
    if not isinstance(min_partition_size, int) or min_partition_size < 1:
        raise PartitionError(f"min_partition_size must be a positive integer, got {min_partition_size!r}")
    if params is not None and not isinstance(params, dict):
        raise PartitionError(f"params must be a dict of parameter name -> array, got {type(params).__name__}",
                             hint="pass the params returned by the frontend, e.g. from_tflite(...)[1]")
    if params:
        mod = mod.copy()
        mod["main"] = bind_params_by_name(mod["main"], params)
    mod = _desired_layouts(target, mod)
    passes = []
    if fold_constants:
        try:
            from .transform.fold_constant import FoldConstant
            passes.append(FoldConstant(fold_qnn=True))
        except ImportError:  # pragma: no cover - FoldConstant is part of the package
            pass
    passes += [InferType(), MergeComposite(table)]
    outer = PassContext.current()
    if outer.instruments:  # instruments see each pass
        passes.append(AnnotateTarget(target))
        if merge_regions:
            passes.append(MergeCompilerRegions())
        passes.append(PartitionGraph(mod_name, bind_constants))
    else:  # the same three passes, without materialising annotations on plain dataflow graphs
        passes.append(AnnotateMergePartition(target, merge_regions, mod_name, bind_constants))
    log = PlacementLog()
    source = mod

    def pipeline(log: PlacementLog) -> IRModule:
        with PassContext(opt_level=max(outer.opt_level, 2), instruments=outer.instruments,
                         config={**outer.config, LOG_KEY: log}):
            return Sequential(passes, name=f"partition_for_{target}")(source)

    with _no_cycle_collection():
        if placement == "cost":
            mod, log, given_back, plan = _cost_placement(target, pipeline, source, npu_config, cpu_cost)
            if not return_report:
                return mod
            return mod, _build_report(target, mod, log, given_back, plan)
        for run in range(1 + _MAX_PEELS):
            mod = pipeline(log)
            mod, given_back = _apply_policies(mod, target, min_partition_size, inline_non_mac, log)
            peeled = _edge_refusals(mod, target) if boundary_rule else {}
            if boundary_rule == "advise":   # the target's compiler places them anyway: say so, keep them
                log.notes.extend(f"{why} (kept on the NPU, where {vendor_compiler(target) or 'its compiler'} "
                                 f"places it; boundary_rule=True gives it back)" for _, why in peeled.values())
                break
            if peeled and run == _MAX_PEELS:   # out of re-runs: this module and its log stand, the rest is said
                log.notes.extend(f"{why} (kept on the NPU: the boundary rule stops after {_MAX_PEELS} re-runs)"
                                 for _, why in peeled.values())
                break
            if not peeled:
                break
            log = log.fresh()  # run again with these entry units kept on the CPU
            log.deny.update(peeled)
        if given_back or log.notes:
            mod = InferType()(mod)
        if not return_report:
            return mod
        return mod, _build_report(target, mod, log, given_back)


def _cost_placement(target: str, pipeline, source: IRModule, npu_config, cpu_cost):
    """``placement="cost"``: (module, log, units given back, PlacementPlan); see transform/cost_placement.py."""
    from .transform import cost_placement as cp
    from .transform.cpu_cost import CpuCostModel, load_or_calibrate, read_table
    dev = cp.device_model(target, npu_config)
    if dev is None:
        raise PartitionError(f"placement='cost' needs a device cost model, and target {target!r} does not run on "
                             f"the NPU simulator", hint="use placement='all' for this target")
    cpu = cpu_cost if isinstance(cpu_cost, CpuCostModel) else \
        read_table(str(cpu_cost)) if cpu_cost is not None else load_or_calibrate()
    sims: dict = {}
    log = PlacementLog()
    all_mod = pipeline(log)
    all_log = log
    estimates = {"all-offload": cp.estimate_module("all-offload", all_mod, dev, cpu, sims)}
    names = {gv.name_hint for gv, f in all_mod.items() if f.attrs.get("Compiler") == target}
    cpu_mod = InferType()(inline_partitions(all_mod, names)) if names else all_mod
    estimates["all-cpu"] = cp.estimate_module("all-cpu", cpu_mod, dev, cpu, sims)
    deny, searched = cp.choose_denials(all_mod, dev, cpu, sims)
    # the search's estimate of the mixed plan: its partitions' units as chosen + what all-offload runs on the CPU
    outside = estimates["all-offload"].cpu_seconds - cpu.resume_seconds * estimates["all-offload"].partitions
    notes: list[str] = []
    mod = all_mod
    without = cp.choose_plan({**estimates, "mixed": estimates["all-offload"]}, cpu.decision_margin)
    if deny and outside + searched >= estimates[without].total_seconds:
        notes.append(f"the mixed plan was not built: the search estimates it at {(outside + searched) * 1e3:.3f} ms, "
                     f"no faster than the {without} plan")
        deny = {}
    elif deny:
        for _ in range(1 + cp.MAX_REFINES):
            if not deny:
                break
            log = log.fresh()
            log.deny.update(deny)
            mod = pipeline(log)
            deny = cp.refine_denials(mod, dev, cpu, sims)
    if mod is not all_mod:
        estimates["mixed"] = cp.estimate_module("mixed", mod, dev, cpu, sims)
        chosen = cp.choose_plan(estimates, cpu.decision_margin)
    else:
        chosen = without
    estimates["cost"] = dataclasses.replace(estimates[chosen], name="cost")
    given_back: dict[int, str] = {}
    if chosen == "all-offload":
        mod, log = all_mod, all_log
    elif chosen == "all-cpu":
        why = (f"cost placement runs the whole model on the CPU: estimated {estimates['all-cpu'].total_seconds * 1e6:.1f}"
               f" us, against {estimates['all-offload'].total_seconds * 1e6:.1f} us all-offload")
        for n in names:
            for u in _placed_units(all_mod[n]):
                given_back[id(u)] = why
        mod, log = cpu_mod, all_log
        log.notes.append(why)
    if chosen != "all-offload":
        mod = InferType()(mod)
    plan = cp.PlacementPlan(target, dev.config.name, chosen,
                            tuple(estimates[k] for k in cp.PLAN_NAMES + ("mixed",) if k in estimates),
                            f"{cpu.fingerprint}: {cpu.description}", cp.kept_labels(all_mod, mod, target),
                            tuple(notes))
    return mod, log, given_back, plan


def verify_partitioned(mod: IRModule, original: IRModule | None = None) -> None:
    """Check a partitioned module; raises one ``PartitionError`` listing every problem.

    * no annotation op is left anywhere;
    * every ``Compiler`` function has ``global_symbol`` = its name, ``Primitive=1``, ``Inline=1``, only its
      parameters as free variables, calls no global function, and its composites are named for its compiler;
    * every partition is called from exactly one place, and calls between functions form no cycle;
    * with ``original``: every op call of the original ``main`` (identified by its attributes object, which
      the passes share between all rebuilt copies of a call) appears exactly once in the result.
    """
    from .ir.analysis import free_vars
    problems: list[str] = []
    calls: dict[str, int] = {}
    seen_units: dict[int, int] = {}
    for gv, func in mod.sorted_items():
        name = gv.name_hint
        compiler = func.attrs.get("Compiler")
        for n in post_order(func):
            if isinstance(n, Call) and isinstance(n.op, Op):
                if n.op.name.startswith("annotation."):
                    problems.append(f"@{name}: annotation {n.op.name} left in the module")
                if n.attrs is not None:
                    seen_units[id(n.attrs)] = seen_units.get(id(n.attrs), 0) + 1
            if isinstance(n, GlobalVar):
                calls[n.name_hint] = calls.get(n.name_hint, 0) + 1
                if compiler is not None:
                    problems.append(f"@{name}: a {compiler} partition refers to @{n.name_hint}")
                if n.name_hint not in mod:
                    problems.append(f"@{name}: calls unknown @{n.name_hint}")
            if compiler is not None and isinstance(n, Function) and "Composite" in n.attrs:
                prefix = str(n.attrs["Composite"]).split(".", 1)[0]
                if prefix != compiler:
                    problems.append(f"@{name}: composite {n.attrs['Composite']} inside a {compiler} partition")
        if compiler is None:
            continue
        for key, want in (("global_symbol", name), ("Primitive", 1), ("Inline", 1)):
            if func.attrs.get(key) != want:
                problems.append(f"@{name}: attribute {key} is {func.attrs.get(key)!r}, expected {want!r}")
        loose = [v.name_hint for v in free_vars(func)]
        if loose:
            problems.append(f"@{name}: free variables {', '.join(loose)}")
    for gv, func in mod.items():
        if "Compiler" in func.attrs and calls.get(gv.name_hint, 0) != 1:
            problems.append(f"@{gv.name_hint} is called {calls.get(gv.name_hint, 0)} times, expected once")
    if original is not None:
        for n in post_order(original["main"]):
            if isinstance(n, Call) and isinstance(n.op, Op) and n.attrs is not None:
                k = seen_units.get(id(n.attrs), 0)
                if k != 1:
                    span = _span_name(n)
                    problems.append(f"{n.op.name}{f' ({span})' if span else ''} appears {k} times after "
                                    f"partitioning, expected once")
    if problems:
        raise PartitionError(f"partitioned module is malformed: {len(problems)} problem(s): "
                             + "; ".join(problems[:20]))
