"""Placement plans side by side: the cost plan, all-offload and all-CPU, each ESTIMATED (the cost model
``partition_for(placement="cost")`` decided with) and SIMULATED (the plan built and profiled: NPU partitions at
their simulated cycles, CPU kernels at their measured time, transfers over the feature-map bandwidth; the time
base of ``module.profile()``, ``runtime/profile.py``).

``simulate_plans(mod, params, target, ...)`` returns a ``PlanComparison``; the CLI prints ``table()`` and the HTML
report has a section from it.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PlanRow", "PlanComparison", "simulate_plans"]


@dataclass(frozen=True)
class PlanRow:
    name: str                     # cost | all-offload | all-cpu
    estimated_seconds: float
    simulated_seconds: float
    npu_seconds: float            # simulated parts
    cpu_seconds: float
    transfer_seconds: float
    partitions: int
    npu_mac_share: float

    def to_json(self) -> dict:
        return {"name": self.name, "estimated_seconds": self.estimated_seconds,
                "simulated_seconds": self.simulated_seconds, "npu_seconds": self.npu_seconds,
                "cpu_seconds": self.cpu_seconds, "transfer_seconds": self.transfer_seconds,
                "partitions": self.partitions, "npu_mac_share": self.npu_mac_share}


@dataclass(frozen=True)
class PlanComparison:
    target: str
    npu_config: str
    chosen: str                   # the plan placement="cost" returned
    rows: tuple[PlanRow, ...]
    cpu_model: str
    repeat: int

    def row(self, name: str) -> PlanRow:
        return next(r for r in self.rows if r.name == name)

    def table(self) -> str:
        from .cli.common import format_table
        body = [[r.name + (" (chosen)" if r.name == "cost" else ""), f"{r.estimated_seconds * 1e3:.3f}",
                 f"{r.simulated_seconds * 1e3:.3f}", f"{r.npu_seconds * 1e3:.3f}", f"{r.cpu_seconds * 1e3:.3f}",
                 f"{r.transfer_seconds * 1e3:.3f}", r.partitions, f"{r.npu_mac_share * 100:.1f}%"]
                for r in self.rows]
        head = ["plan", "estimated ms", "simulated ms", "NPU ms", "CPU ms", "transfers ms", "partitions",
                "MACs on NPU"]
        lines = [f"placement plans on {self.target} ({self.npu_config}); the cost plan is "
                 f"{'the ' + self.chosen + ' plan' if self.chosen != 'mixed' else 'a mixed plan'}",
                 format_table(head, body, "lrrrrrrr"),
                 f"simulated: NPU cycles at the configured clock + CPU kernels measured here (best of {self.repeat}) "
                 f"+ transfers; estimated: the cost model's prediction (CPU table {self.cpu_model})"]
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"target": self.target, "npu_config": self.npu_config, "chosen": self.chosen,
                "cpu_model": self.cpu_model, "repeat": self.repeat, "plans": [r.to_json() for r in self.rows]}


def simulate_plans(mod, params, target: str, inputs: dict, *, npu_config=None, cpu_cost=None, repeat: int = 10,
                   partitioned=None, progress=None) -> PlanComparison:
    """Build each plan (``target,llvm``) and profile the three in ``repeat`` interleaved rounds on ``inputs``, each
    node keeping its best time (``module.profile()``'s figures: the simulated time of the plan). ``partitioned``: the
    (module, report) ``partition_for(placement="cost")`` already returned, to reuse."""
    from .build import build
    from .interpreter import bind_params
    from .partition import partition_for
    if partitioned is None:
        partitioned = partition_for(target, mod, params, placement="cost", npu_config=npu_config,
                                    cpu_cost=cpu_cost, return_report=True)
    cost_mod, report = partitioned
    plan = report.placement
    mods = {"cost": cost_mod, "all-offload": partition_for(target, mod, params), "all-cpu": bind_params(mod, params)}
    exes = {}
    for name in ("cost", "all-offload", "all-cpu"):
        if progress:
            progress(f"build {name}")
        opts = {"npu_config": npu_config} if npu_config is not None and name != "all-cpu" else {}
        exes[name] = build(mods[name], target="llvm" if name == "all-cpu" else f"{target},llvm", **opts)
    # Rounds over the three plans, each node keeping its best time: a change in the machine's load during the
    # measurement reaches every plan alike.
    best: dict[str, list] = {}
    for _ in range(max(1, repeat)):
        for name, exe in exes.items():
            nodes = exe.profile(inputs, repeat=1).nodes
            prev = best.get(name)
            best[name] = list(nodes) if prev is None else [a if a.wall_seconds <= b.wall_seconds else b
                                                            for a, b in zip(prev, nodes)]
    rows = []
    for name in ("cost", "all-offload", "all-cpu"):
        nodes = best[name]
        dev = [n for n in nodes if n.on_device]
        npu_s = sum(n.device_seconds for n in dev)
        cpu_s = sum(n.wall_seconds for n in nodes if not n.on_device)
        tr_s = sum(n.transfer_seconds for n in dev)
        macs = sum(n.macs for n in nodes)
        parts = sum(1 for _, f in mods[name].items() if f.attrs.get("Compiler") == target)
        rows.append(PlanRow(name, plan.estimate(name).total_seconds, npu_s + cpu_s + tr_s, npu_s, cpu_s, tr_s, parts,
                            sum(n.macs for n in dev) / macs if macs else 0.0))
    return PlanComparison(target, plan.npu_config, plan.chosen, tuple(rows), plan.cpu_model, repeat)
