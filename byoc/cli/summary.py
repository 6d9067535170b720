"""Numbers the commands and the HTML report share: MACs per op, the offload summary, NPU profiles."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.expr import Call, Function, Op
from ..ir.module import IRModule
from ..ir.traversal import post_order
from ..ops.macs import macs_of

__all__ = ["macs_of", "OffloadRow", "offload_summary", "PartitionProfile", "profile_partitions",
           "layer_rows"]

def _op_calls(func: Function) -> list[Call]:
    return [n for n in post_order(func.body) if isinstance(n, Call) and isinstance(n.op, Op)]


@dataclass(frozen=True)
class OffloadRow:
    target: str
    partitions: int
    ops: int
    macs: int


def offload_summary(pmod: IRModule) -> list[OffloadRow]:
    """Ops, MACs and partitions per target (``cpu`` is what stays in ``main``), in a fixed order."""
    rows: dict[str, list[int]] = {}
    for gv, func in pmod.sorted_items():
        target = func.attrs.get("Compiler")
        if gv.name_hint != "main" and not target:
            continue
        key = str(target) if target else "cpu"
        calls = _op_calls(func)
        r = rows.setdefault(key, [0, 0, 0])
        r[0] += 1 if target else 0
        r[1] += len(calls)
        r[2] += sum(macs_of(c) for c in calls)
    order = sorted(k for k in rows if k != "cpu") + (["cpu"] if "cpu" in rows else [])
    return [OffloadRow(k, *rows[k]) for k in order]


# ------------------------------------------------------------------------------------------------ profile

@dataclass(frozen=True, eq=False)
class PartitionProfile:
    partition: str
    program: object      # npu_sim.Program
    stats: object        # npu_sim.Stats


def profile_partitions(pmod: IRModule, target: str, config, progress=None) -> list[PartitionProfile]:
    """Compile every ``target`` partition with npu_sim (through the target's lowering map) and simulate it
    (timing does not depend on the data, so the inputs are zeros)."""
    import npu_sim
    from runtime.npu_codegen import SimulatorCodegen, simulator_codegen_for
    codegen = simulator_codegen_for(target) or SimulatorCodegen(target)
    out = []
    for gv, func in pmod.sorted_items():
        if func.attrs.get("Compiler") != target:
            continue
        if progress:
            progress(gv.name_hint)
        prog = codegen.program(func, gv.name_hint, config)
        zeros = {b.name: np.zeros(b.shape, b.dtype) for b in prog.inputs}
        _, stats = npu_sim.simulate(prog, zeros)
        out.append(PartitionProfile(gv.name_hint, prog, stats))
    return out


def layer_rows(profiles: list[PartitionProfile]) -> list[dict]:
    """One dict per NPU layer (JSON, CSV and the report use the same fields)."""
    rows = []
    for p in profiles:
        for s in p.stats.per_layer:
            rows.append({"partition": p.partition, "layer": s.name, "composite": s.composite, "kind": s.kind,
                         "cycles": int(s.cycles), "exclusive_cycles": int(s.exclusive_cycles), "macs": int(s.macs),
                         "bytes": {k: int(v) for k, v in s.bytes_by_area.items()},
                         "utilisation": round(float(s.utilisation), 4), "bound": s.bound,
                         "roofline_cycles": int(s.roofline_cycles)})
    return rows
