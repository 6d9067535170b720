"""Cost-driven placement (what TVM's Collage proposed, for BYOC): every unit the pattern table offers is put on the
NPU or the CPU by estimated end-to-end time, boundary transfers and partition launches included.

Used by ``partition_for(placement="cost")``. The time base is ``runtime/profile.py``'s estimate: NPU cycles at the
configuration's clock, CPU kernels at their time on this machine, transfers as bytes crossing the boundary over
the feature-map memory's bandwidth.

1. The all-offload plan (every region the table allows, no give-back policy) is compiled and simulated once per
   partition; each layer's exclusive cycles are attributed to the unit (composite or op) that produced it.
2. Per partition, units in topological order u1..un: a dynamic programme over contiguous runs (a run of a
   topological order is convex, so it is a valid partition) chooses the runs to offload, minimising
   Σ runs (launch + Σ unit cycles / clock + bytes in and out of the run / bandwidth) + Σ other units' CPU time
   (``cpu_cost.CpuCostModel``: one kernel per unit). Units outside the chosen runs are denied
   (``PlacementLog.deny``) and the pipeline re-runs.
3. The resulting partitions are compiled and simulated (regions are small and compile fast); a partition whose
   simulated cost exceeds its units' CPU time is denied whole and the pipeline re-runs (at most
   ``MAX_REFINES`` times).
4. The mixed plan, all-offload and all-CPU are each estimated the same way (their partitions simulated, their CPU
   kernels as the backend fuses them, through the CPU model) and one is returned (``choose_plan``): starting
   from all-offload, another candidate replaces the current one only when it is estimated faster by more than
   the CPU model's decision margin × the difference of their CPU parts (``CpuCostModel.decision_margin``: the
   larger of the calibration fit's median relative error and the load margin, 75% by default: measured CPU
   kernels on a busy machine run that much slower than calibrated). Steps 2 and 3 charge CPU time with the same
   margin. So cost placement is never estimated slower than all-offload, and a plan whose advantage is within
   the CPU time's uncertainty is not taken. Deterministic given the cost tables.
5. The CPU model's ``resume_seconds`` is charged once per partition: in the profile's time base the first CPU
   kernel after a partition runs with caches the simulator evicted (``cpu_cost._resume_seconds``).

``PlacementPlan`` holds the three estimates; ``byoc.plans.simulate_plans`` builds and profiles them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.expr import Call, Constant, Expr, Function, Op, Span, Tuple, TupleGetItem, Var
from ..ir.traversal import children, post_order
from ..ir.types import TensorType, TupleType
from .boundary_cost import op_calls
from .cpu_cost import CpuCostModel

__all__ = ["PlanEstimate", "PlacementPlan", "DeviceModel", "device_model", "unit_npu_cycles", "plan_units",
           "estimate_module", "choose_plan", "PLAN_NAMES", "CANDIDATES", "MAX_REFINES"]

PLAN_NAMES = ("cost", "all-offload", "all-cpu")     # "cost" is the plan returned
CANDIDATES = ("mixed", "all-offload", "all-cpu")   # what the cost plan is chosen from
MAX_REFINES = 3
MAX_RUN = 256      # longest run the search costs as one partition


def _nbytes(t) -> int:
    if isinstance(t, TensorType):
        return int(np.prod([int(d) for d in t.shape], dtype=np.int64)) * np.dtype(t.dtype).itemsize
    if isinstance(t, TupleType):
        return sum(_nbytes(f) for f in t.fields)
    return 0


def _type_of(e):
    return getattr(e, "_checked_type", None) or getattr(e, "type_annotation", None)


@dataclass(frozen=True)
class DeviceModel:
    """The NPU side of the time base: a simulator codegen and its configuration."""
    target: str
    codegen: object           # runtime.npu_codegen.SimulatorCodegen
    config: object            # npu_sim.NPUConfig

    @property
    def clock_hz(self) -> float:
        return float(self.config.clock_hz)

    @property
    def bandwidth(self) -> float:
        """Bytes per second the host moves in and out of the device's feature-map memory (as the profile)."""
        fm = self.config.area(self.config.placement.feature_maps)
        return float(fm.bytes_per_cycle) * self.clock_hz

    @property
    def launch_cycles(self) -> int:
        """A partition's start and end that nothing overlaps: one command issue, the feature-map memory's read
        latency (first input) and write latency (last output)."""
        fm = self.config.area(self.config.placement.feature_maps)
        return int(self.config.overheads.cmd_issue + fm.read_latency + fm.write_latency)

    def simulate(self, func: Function, symbol: str) -> tuple[int, object]:
        """(total cycles, stats) of ``func`` compiled for the configuration and scheduled."""
        from npu_sim.simulator import collect_stats, schedule
        prog = self.codegen.program(func, symbol, self.config)
        stats = collect_stats(prog, schedule(prog))
        return int(stats.total_cycles), stats


def device_model(target: str, npu_config=None) -> DeviceModel | None:
    from runtime.npu_codegen import resolve_npu_config, simulator_codegen_for
    cg = simulator_codegen_for(target)
    if cg is None:
        return None
    cfg = cg.config(None) if npu_config is None else resolve_npu_config(npu_config)
    return DeviceModel(target, cg, cfg)


@dataclass(frozen=True)
class PlanEstimate:
    """One plan's estimated inference: NPU partitions as simulated, CPU kernels through the CPU model."""
    name: str
    npu_seconds: float
    cpu_seconds: float
    transfer_seconds: float
    transfer_bytes: int
    partitions: int
    npu_macs: int
    total_macs: int

    @property
    def total_seconds(self) -> float:
        return self.npu_seconds + self.cpu_seconds + self.transfer_seconds

    def to_json(self) -> dict:
        return {"name": self.name, "total_seconds": self.total_seconds, "npu_seconds": self.npu_seconds,
                "cpu_seconds": self.cpu_seconds, "transfer_seconds": self.transfer_seconds,
                "transfer_bytes": self.transfer_bytes, "partitions": self.partitions, "npu_macs": self.npu_macs,
                "total_macs": self.total_macs}


@dataclass(frozen=True)
class PlacementPlan:
    """What ``placement="cost"`` chose and the estimates it compared."""
    target: str
    npu_config: str
    chosen: str                                  # one of CANDIDATES: what "cost" returned
    estimates: tuple[PlanEstimate, ...]          # in PLAN_NAMES order ("cost" = the chosen candidate's)
    cpu_model: str                               # the CPU cost table's fingerprint and description
    kept_on_cpu: tuple[str, ...] = ()            # units all-offload offloads and the plan keeps on the CPU
    notes: tuple[str, ...] = field(default=())

    def estimate(self, name: str) -> PlanEstimate:
        return next(e for e in self.estimates if e.name == name)

    def summary(self) -> str:
        e = self.estimate("cost")
        others = ", ".join(f"{x.name} {x.total_seconds * 1e3:.3f} ms" for x in self.estimates
                           if x.name not in ("cost", self.chosen))
        return (f"cost placement: chose the {self.chosen} plan ({e.total_seconds * 1e3:.3f} ms estimated, "
                f"{e.partitions} partition(s)); {others}")

    def to_json(self) -> dict:
        return {"target": self.target, "npu_config": self.npu_config, "chosen": self.chosen,
                "estimates": [e.to_json() for e in self.estimates], "cpu_model": self.cpu_model,
                "kept_on_cpu": list(self.kept_on_cpu), "notes": list(self.notes)}


# ------------------------------------------------------------------------------------------- units

def _span(node) -> str:
    span = getattr(node, "span", None)
    return span.source if isinstance(span, Span) else ""


def plan_units(func: Function) -> list[Call]:
    """The placed units of a partition in topological order: composite calls and op calls."""
    def kids(n):
        return () if isinstance(n, Function) and "Composite" in n.attrs else children(n)
    return [n for n in post_order(func.body, child_fn=kids)
            if isinstance(n, Call) and isinstance(n.op, (Op, Function))]


def _inner_calls(u: Call) -> list[Call]:
    if isinstance(u.op, Op):
        return [u]
    return [n for n in post_order(u.op.body) if isinstance(n, Call) and isinstance(n.op, Op)]


def _label(u: Call) -> str:
    name = str(u.op.attrs["Composite"]) if isinstance(u.op, Function) else u.op.name
    span = _span(u)
    return f"{name} ({span})" if span else name


def unit_npu_cycles(units: list[Call], stats) -> list[float]:
    """Each unit's share of a simulated partition: the exclusive cycles of the layers named after it (layers
    carry their unit's span name; a layer without a matching unit, e.g. an output copy, goes to the last
    matched unit)."""
    by_name: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        by_name.setdefault(_span(u), []).append(i)
    out = [0.0] * len(units)
    cur = 0
    for layer in stats.per_layer:
        cands = [i for i in by_name.get(layer.name, ()) if i >= cur]
        if cands:
            cur = cands[0]
        if units:
            out[cur] += float(layer.exclusive_cycles)
    return out


def _values(func: Function, units: list[Call]):
    """Per unit: the values it reads as (value key, producer unit index or -1 for a partition input, bytes);
    and per value key produced by a unit: (producer, bytes, last consumer index or len(units) when it leaves the
    partition)."""
    index = {id(u): i for i, u in enumerate(units)}
    n = len(units)

    def resolve(a: Expr) -> list[tuple[int, int, int]]:   # (value key, producer, bytes)
        if isinstance(a, Constant):
            return []
        if isinstance(a, Var):
            return [(id(a), -1, _nbytes(_type_of(a)))]
        if isinstance(a, Call) and id(a) in index:
            return [(id(a), index[id(a)], _nbytes(_type_of(a)))]
        if isinstance(a, TupleGetItem):
            base = resolve(a.tuple_value)
            if isinstance(a.tuple_value, Tuple):
                return base
            prod = base[0][1] if base else -1
            return [(id(a), prod, _nbytes(_type_of(a)))] if base else []
        if isinstance(a, Tuple):
            return [v for f in a.fields for v in resolve(f)]
        return []

    reads: list[list[tuple[int, int, int]]] = []
    produced: dict[int, list] = {}
    for i, u in enumerate(units):
        vals = {}
        for a in u.args:
            for key, prod, nb in resolve(a):
                vals[key] = (key, prod, nb)
                if prod >= 0:
                    entry = produced.setdefault(key, [prod, nb, prod])
                    entry[2] = max(entry[2], i)
        reads.append(list(vals.values()))
    for key, prod, nb in resolve(func.body):   # what leaves the partition
        if prod >= 0:
            produced.setdefault(key, [prod, nb, prod])[2] = n
    return reads, produced


def _choose_runs(units: list[Call], npu_cycles: list[float], cpu_seconds: list[float], func: Function,
                 dev: DeviceModel, resume: float = 0.0) -> tuple[list[bool], float]:
    """The cheapest choice of offloaded runs (contiguous in topological order): per unit True = NPU."""
    n = len(units)
    reads, produced = _values(func, units)
    out_by_prod: dict[int, list[tuple[int, int]]] = {}
    for prod, nb, last in produced.values():
        out_by_prod.setdefault(prod, []).append((nb, last))
    clock, bw = dev.clock_hz, dev.bandwidth
    launch = dev.launch_cycles / clock + resume
    inf = float("inf")
    best = [0.0] + [inf] * n                  # best[j]: cheapest placement of units 0..j-1
    choice: list[tuple[int, bool]] = [(0, False)] * (n + 1)   # (start of the last step, offloaded) for prefix j
    # Forward: best[i] is final when iteration i starts (every run ending at i began earlier). O(n · MAX_RUN)
    # time, O(n) memory; a longer stretch is chosen as several runs that the pipeline merges back into one region.
    for i in range(n):
        base = best[i]
        if base + cpu_seconds[i] < best[i + 1]:
            best[i + 1], choice[i + 1] = base + cpu_seconds[i], (i, False)
        inputs: set[int] = set()
        in_bytes = 0
        cycles = 0.0
        pending: dict[int, int] = {}     # last consumer index → bytes leaving when the run ends before it
        out_bytes_open = 0
        for j in range(i, min(n, i + MAX_RUN)):
            cycles += npu_cycles[j]
            for key, prod, nb in reads[j]:
                if prod < i and key not in inputs:
                    inputs.add(key)
                    in_bytes += nb
            if j in pending:
                out_bytes_open -= pending.pop(j)
            for nb, last in out_by_prod.get(j, ()):
                if last > j:
                    pending[last] = pending.get(last, 0) + nb
                    out_bytes_open += nb
            v = base + launch + cycles / clock + (in_bytes + out_bytes_open) / bw
            if v <= best[j + 1]:   # ties prefer the NPU
                best[j + 1], choice[j + 1] = v, (i, True)
    on_npu = [False] * n
    j = n
    while j > 0:
        i, off = choice[j]
        if off:
            for k in range(i, j):
                on_npu[k] = True
        j = i
    return on_npu, best[n]


def choose_plan(estimates: dict[str, PlanEstimate], relative_error: float) -> str:
    """all-offload, then all-CPU, then the mixed plan: each replaces the current choice only when it is faster by
    more than ``relative_error`` (the CPU model's decision margin) × the CPU time the two place differently."""
    best = "all-offload"
    for name in ("all-cpu", "mixed"):
        a, b = estimates[best], estimates[name]
        margin = relative_error * abs(a.cpu_seconds - b.cpu_seconds)
        if b.total_seconds < a.total_seconds - margin:
            best = name
    return best


# --------------------------------------------------------------------------------------- estimates

def _partition_io_bytes(func: Function) -> int:
    return sum(_nbytes(_type_of(p)) for p in func.params) + _nbytes(_type_of(func.body))


def estimate_module(name: str, pmod, dev: DeviceModel, cpu: CpuCostModel,
                    sim_cache: dict | None = None) -> PlanEstimate:
    """A partitioned module's estimated inference: each partition compiled and simulated, its inputs and outputs
    crossing once; ``main``'s ops as the LLVM backend fuses them, through the CPU model, and per partition the
    CPU model's resume cost."""
    from ..build import lower_for_host
    from ..ops.macs import macs_of
    from .cpu_cost import calls_seconds
    npu_cycles, moved, parts, npu_macs = 0, 0, 0, 0
    for gv, func in pmod.sorted_items():
        if func.attrs.get("Compiler") != dev.target:
            continue
        cycles, _ = simulated(func, gv.name_hint, dev, {} if sim_cache is None else sim_cache)
        npu_cycles += cycles
        moved += _partition_io_bytes(func)
        parts += 1
        npu_macs += sum(macs_of(c) for c in op_calls(func))
    host = lower_for_host(pmod, None)["main"]
    cpu_s = calls_seconds(cpu, host) + parts * cpu.resume_seconds   # the kernel after each partition runs cold
    total_macs = npu_macs + sum(macs_of(c) for c in op_calls(host))
    return PlanEstimate(name, npu_cycles / dev.clock_hz, cpu_s, moved / dev.bandwidth, moved, parts, npu_macs,
                        total_macs)


def simulated(func: Function, name: str, dev: DeviceModel, sim_cache: dict) -> tuple[int, object]:
    """(cycles, stats) of a partition, cached by its units (the attrs objects every re-run of the pipeline shares)
    so a region that comes out of a re-run unchanged is not compiled again."""
    from .placement import unit_key
    key = tuple(id(unit_key(u)) for u in plan_units(func)) + (len(func.params),)
    hit = sim_cache.get(key)
    if hit is None:
        cycles, stats = dev.simulate(func, name)
        hit = sim_cache[key] = (cycles, stats, func)   # func keeps the keys' objects alive
    return hit[0], hit[1]


def run_costs(pmod, dev: DeviceModel, cpu: CpuCostModel, sim_cache: dict) -> list[tuple[str, list[Call], list[float],
                                                                                        list[float]]]:
    """Per partition of ``dev.target``: (name, units, NPU cycles per unit, CPU seconds per unit)."""
    out = []
    for gv, func in pmod.sorted_items():
        if func.attrs.get("Compiler") != dev.target:
            continue
        _, stats = simulated(func, gv.name_hint, dev, sim_cache)
        units = plan_units(func)
        out.append((gv.name_hint, units, unit_npu_cycles(units, stats),
                    [cpu.kernel_seconds(_inner_calls(u)) for u in units]))
    return out


def choose_denials(pmod, dev: DeviceModel, cpu: CpuCostModel,
                   sim_cache: dict) -> tuple[dict[int, tuple[object, str]], float]:
    """Units of ``pmod``'s partitions the cheapest run choice keeps on the CPU, keyed like ``PlacementLog.deny``,
    and the search's own (additive) estimate of those partitions' units under that choice."""
    from .placement import unit_key
    out: dict[int, tuple[object, str]] = {}
    total = 0.0
    for name, units, cyc, cpu_s in run_costs(pmod, dev, cpu, sim_cache):
        func = pmod[name]
        # the CPU side must win by the decision margin (CpuCostModel.decision_margin)
        on_npu, cost = _choose_runs(units, cyc, [c * (1 + cpu.decision_margin) for c in cpu_s], func, dev,
                                    cpu.resume_seconds)
        total += cost
        for u, npu, c, s in zip(units, on_npu, cyc, cpu_s):
            if npu:
                continue
            key = unit_key(u)
            if key is None:
                continue
            out[id(key)] = (key, f"cost placement keeps it on the CPU: {s * 1e6:.2f} us there (CPU model) against "
                                 f"{c / dev.clock_hz * 1e6:.2f} us of NPU cycles in @{name}, and the cheapest plan "
                                 f"for @{name} (launches and boundary transfers included) leaves it out")
    return out, total


def refine_denials(pmod, dev: DeviceModel, cpu: CpuCostModel, sim_cache: dict) -> dict[int, tuple[object, str]]:
    """Whole partitions whose simulated cycles, launch and boundary transfers cost more than their units on the
    CPU (the run choice's additive cycles can miss a partition's fixed costs)."""
    from .placement import unit_key
    out: dict[int, tuple[object, str]] = {}
    for name, units, cyc, cpu_s in run_costs(pmod, dev, cpu, sim_cache):
        func = pmod[name]
        total, _ = simulated(func, name, dev, sim_cache)
        npu = (total + dev.launch_cycles) / dev.clock_hz + _partition_io_bytes(func) / dev.bandwidth + \
            cpu.resume_seconds
        host = sum(cpu_s)
        if npu <= host * (1 + cpu.decision_margin):
            continue
        for u in units:
            key = unit_key(u)
            if key is not None:
                out[id(key)] = (key, f"cost placement gives @{name} back to the CPU: simulated {npu * 1e6:.2f} us "
                                     f"(cycles, launch, transfers and the host's resume) against {host * 1e6:.2f} us on the CPU")
    return out


def offloaded_units(pmod, target: str) -> dict[int, Call]:
    """id(unit key) → unit for every unit inside ``target`` partitions."""
    from .placement import unit_key
    out = {}
    for gv, func in pmod.sorted_items():
        if func.attrs.get("Compiler") != target:
            continue
        for u in plan_units(func):
            key = unit_key(u)
            if key is not None:
                out[id(key)] = u
    return out


def kept_labels(all_mod, plan_mod, target: str) -> tuple[str, ...]:
    a = offloaded_units(all_mod, target)
    b = offloaded_units(plan_mod, target)
    return tuple(_label(u) for k, u in a.items() if k not in b)
