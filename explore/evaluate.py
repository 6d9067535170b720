"""Evaluate one point: compile every partition of a once-partitioned model for a configuration and simulate its
timing (the schedule does not depend on the data, so no tensor is computed).

A ``ModelSpec`` (model bytes + target) is what is shipped to a worker; ``prepared(spec)`` imports and partitions
it once per worker process and keeps it (a process runs many points of the same model).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

__all__ = ["ModelSpec", "Prepared", "prepare", "prepared", "evaluate", "METRIC_COLUMNS", "ENGINES"]

ENGINES = ("dma_in", "mac", "ppu", "dma_out")


@dataclass(frozen=True)
class ModelSpec:
    name: str          # file name, for tables
    sha: str           # SHA-256 of the bytes (the resume key's first part)
    data: bytes
    suffix: str        # ".tflite" / ".onnx": how to import the bytes
    target: str
    semantics: str = "auto"


@dataclass(frozen=True, eq=False)
class Prepared:
    spec: ModelSpec
    partitions: tuple          # ((symbol, function), ...) of the target's partitions, in module order
    npu_macs: int
    total_macs: int


def prepare(spec: ModelSpec) -> Prepared:
    from byoc.cli.common import load_model
    from byoc.cli.summary import offload_summary
    from byoc.partition import partition_for
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model" + spec.suffix)
        with open(path, "wb") as f:
            f.write(spec.data)
        model = load_model(path, spec.semantics, target=spec.target)   # "auto": the target's arithmetic
    pmod = partition_for(spec.target, model.mod, model.params)
    parts = tuple((gv.name_hint, f) for gv, f in pmod.sorted_items() if f.attrs.get("Compiler") == spec.target)
    summary = offload_summary(pmod)
    npu = sum(r.macs for r in summary if r.target == spec.target)
    total = sum(r.macs for r in summary)
    return Prepared(spec, parts, int(npu), int(total))


_CACHE: dict[tuple[str, str], Prepared] = {}


def prepared(spec: ModelSpec) -> Prepared:
    key = (spec.sha, spec.target)
    if key not in _CACHE:
        _CACHE[key] = prepare(spec)
    return _CACHE[key]


METRIC_COLUMNS = ("cycles", "npu_seconds", "transfer_bytes", "transfer_seconds", "npu_macs", "total_macs",
                  "offload_mac_share", "macs_per_cycle", "sram_bytes", "sram_high_water", "commands", "fm_bytes_per_cycle",
                  *(f"util_{e}" for e in ENGINES))


def evaluate(prep: Prepared, cfg) -> tuple[dict, list[dict]]:
    """(metrics, per-layer rows) of one configuration. Metrics: ``METRIC_COLUMNS`` plus ``bytes_<area>`` per
    memory area. Utilisation of an engine = its busy cycles / all NPU cycles."""
    from npu_sim.simulator import collect_stats, schedule
    from runtime.npu_codegen import SimulatorCodegen, simulator_codegen_for
    target = prep.spec.target
    codegen = simulator_codegen_for(target) or SimulatorCodegen(target)
    cycles = commands = tbytes = 0
    busy = dict.fromkeys(ENGINES, 0)
    area_bytes = {a.name: 0 for a in cfg.memory_areas}
    high_water = 0
    layers = []
    for symbol, func in prep.partitions:
        prog = codegen.program(func, symbol, cfg)
        st = collect_stats(prog, schedule(prog))
        cycles += int(st.total_cycles)
        commands += int(st.command_count)
        for e in ENGINES:
            busy[e] += int(st.engine_busy.get(e, 0))
        high_water = max(high_water, int(st.sram_high_water_total))
        tbytes += sum(_nbytes(b) for b in (*prog.inputs, *prog.outputs))  # the host copies each in/out once
        for s in st.per_layer:
            for k, v in s.bytes_by_area.items():
                area_bytes[k] = area_bytes.get(k, 0) + int(v)
            layers.append({"partition": symbol, "layer": s.name, "kind": s.kind,
                           "exclusive_cycles": int(s.exclusive_cycles), "macs": int(s.macs),
                           "bytes": int(sum(s.bytes_by_area.values())), "roofline_cycles": int(s.roofline_cycles),
                           "bound": s.bound})
    clock = float(cfg.clock_hz)
    fm = cfg.area(cfg.placement.feature_maps)
    m = {"cycles": cycles, "npu_seconds": cycles / clock, "transfer_bytes": tbytes,
         "transfer_seconds": tbytes / (float(fm.bytes_per_cycle) * clock), "npu_macs": prep.npu_macs,
         "total_macs": prep.total_macs,
         "offload_mac_share": prep.npu_macs / prep.total_macs if prep.total_macs else 0.0,
         "macs_per_cycle": int(cfg.mac.macs_per_cycle), "sram_bytes": sum(b.size_bytes for b in cfg.local_buffers),
         "sram_high_water": high_water, "commands": commands, "fm_bytes_per_cycle": float(fm.bytes_per_cycle)}
    for e in ENGINES:
        m[f"util_{e}"] = busy[e] / cycles if cycles else 0.0
    for k in sorted(area_bytes):
        m[f"bytes_{k}"] = area_bytes[k]
    return m, layers


def _nbytes(binding) -> int:
    import numpy as np
    return int(np.prod(binding.shape)) * np.dtype(binding.dtype).itemsize
