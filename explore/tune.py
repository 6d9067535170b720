"""``tune(model, ...)``: search each layer workload's block (tile) configuration on the simulator and write tuning
records (``npu_sim.tuning``), as AutoTVM tunes a kernel's schedule and logs the best.

1. Baseline: compile every partition with the default heuristic; note each layer's workload, its fitting tile
   plans and its cycles (the simulator's exclusive cycles of the layer).
2. Search order per workload: the default first, then the best-estimated half of the trials, then a seeded random
   sample of the remaining fitting plans (the cost model's ranking is a guide, not the answer).
3. Trial t compiles the whole model with the t-th configuration of every workload at once and simulates it; the
   trials are independent jobs on the sweeps' executors (this process, a process pool, or Ray).
4. Per workload the configuration with the fewest cycles over its layers wins, if none of its layers got slower.
5. Check: the chosen set is compiled together; a layer slower than its baseline (neighbouring layers overlap on
   the NPU, so choices interact) gives up its own choice, or else that of the nearest tuned layer, until every
   layer is at most its baseline. The records are written from that final compile.
"""
from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass

from byoc.errors import ConfigError

__all__ = ["tune", "TuneResult", "LayerResult"]


@dataclass(frozen=True)
class LayerResult:
    partition: str
    name: str
    op: str
    default: str            # tile configuration, e.g. "8x16x32 depth_outer"
    tuned: str
    default_cycles: int
    tuned_cycles: int


@dataclass(frozen=True)
class TuneResult:
    records: str | None     # the file written (None: not written)
    layers: tuple[LayerResult, ...]
    workloads: int
    tuned_workloads: int    # workloads whose record is not the default configuration
    trials: int             # trials per workload asked for
    measured: int           # compile + simulate runs (baseline, trials, checks)
    reverted: int           # workload choices given up in the check
    seconds: float

    @property
    def default_cycles(self) -> int:
        return sum(r.default_cycles for r in self.layers)

    @property
    def tuned_cycles(self) -> int:
        return sum(r.tuned_cycles for r in self.layers)


def _measure(shared, overrides) -> list[tuple]:
    """Compile and simulate every partition with ``overrides`` ({workload key: TileConfig}): per layer
    (partition, name, key, chosen TileConfig, exclusive cycles)."""
    from npu_sim.simulator import collect_stats, schedule
    from npu_sim.tuning import TileChooser, TileConfig, use_chooser
    from runtime.npu_codegen import SimulatorCodegen, simulator_codegen_for

    from .evaluate import prepared
    spec, cfg = shared
    prep = prepared(spec)
    codegen = simulator_codegen_for(spec.target) or SimulatorCodegen(spec.target)
    chooser = TileChooser(dict(overrides))
    rows = []
    with use_chooser(chooser):
        for symbol, func in prep.partitions:
            start = len(chooser.layers)
            prog = codegen.program(func, symbol, cfg)
            stats = collect_stats(prog, schedule(prog))
            planned = chooser.layers[start:]
            if [lp.name for lp in planned] != [s.name for s in stats.per_layer]:
                raise AssertionError(f"@{symbol}: planned layers and simulated layers differ")
            rows.extend((symbol, lp.name, lp.key, TileConfig.of(lp.chosen), int(s.exclusive_cycles))
                        for lp, s in zip(planned, stats.per_layer))
    return rows


def _trial_job(shared, job):
    return _measure(shared, job)


def _baseline(spec, cfg):
    """The default compile, with every layer's plans (in this process)."""
    from npu_sim.simulator import collect_stats, schedule
    from npu_sim.tuning import TileChooser, use_chooser
    from runtime.npu_codegen import SimulatorCodegen, simulator_codegen_for

    from .evaluate import prepared
    prep = prepared(spec)
    codegen = simulator_codegen_for(spec.target) or SimulatorCodegen(spec.target)
    chooser = TileChooser()
    cycles, parts = [], []
    with use_chooser(chooser):
        for symbol, func in prep.partitions:
            prog = codegen.program(func, symbol, cfg)
            stats = collect_stats(prog, schedule(prog))
            cycles.extend(int(s.exclusive_cycles) for s in stats.per_layer)
            parts.extend(symbol for _ in stats.per_layer)
    return chooser.layers, cycles, parts


def _search_order(lp, trials: int, seed: int) -> list:
    """The configurations to measure for one workload: the default, the best-estimated ones, a seeded sample."""
    from npu_sim.tuning import TileConfig
    default = TileConfig.of(lp.default)
    ranked = []
    for p in sorted(lp.candidates, key=lambda p: (p.estimate, -(p.bh * p.bw * p.bc))):
        c = TileConfig.of(p)
        if c != default and c not in ranked:
            ranked.append(c)
    top = trials // 2
    order = [default] + ranked[:top]
    rest = ranked[top:]
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}|{lp.key}".encode()).digest()[:8], "big"))
    order += rng.sample(rest, min(len(rest), max(0, trials - len(order))))
    return order[:max(1, trials)]


def tune(model, *, target: str = "ethos-u", npu_config="ethos-u55-256", trials: int = 16, output=None,
         workers: int | None = None, cluster: str | None = None, seed: int = 0, semantics: str = "auto",
         on_trial=None) -> TuneResult:
    """Tune the block configurations of ``model``'s ``target`` partitions on ``npu_config`` (a preset name, a TOML
    path or an NPUConfig); ``trials`` configurations per layer workload (the default included). Writes the records
    to ``output`` (JSON lines) when given. ``workers``/``cluster``: as for ``sweep``. ``on_trial(done, total)``
    after each trial."""
    import byoc
    from npu_sim.tuning import TileConfig, TuningRecord, write_records
    from runtime.npu_codegen import resolve_npu_config, simulator_codegen_for

    from .runners import map_jobs
    from .sweep import model_spec
    t0 = time.perf_counter()
    if trials < 1:
        raise ConfigError(f"tune: trials must be at least 1, got {trials}")
    if simulator_codegen_for(target) is None:
        raise ConfigError(f"tune: target {target!r} does not run on the NPU simulator; nothing to tune",
                          hint="tune a target whose codegen is the NPU simulator: ethos-u, npu, vta")
    cfg = resolve_npu_config(npu_config)
    spec = model_spec(model, target, semantics)
    layers, base, parts = _baseline(spec, cfg)
    if not layers:
        raise ConfigError(f"tune: {spec.name} has no {target!r} partition; nothing to tune",
                          hint=f"check `byoc partition {spec.name} --target {target}`")
    first = {}
    for i, lp in enumerate(layers):
        first.setdefault(lp.key, i)
    order = {k: _search_order(layers[i], trials, seed) for k, i in first.items()}
    n_trials = max(len(o) for o in order.values())
    jobs = [tuple((k, o[t]) for k, o in order.items() if t < len(o)) for t in range(1, n_trials)]
    measured = {0: [(parts[i], lp.name, lp.key, TileConfig.of(lp.default), base[i]) for i, lp in enumerate(layers)]}
    for done, (j, rows) in enumerate(map_jobs(_trial_job, (spec, cfg), list(jobs), workers, cluster), 1):
        measured[j + 1] = rows
        if on_trial:
            on_trial(done, len(jobs))
    # 4. per workload, the trial whose configuration gave its layers the fewest cycles, none slower
    chosen: dict = {}
    for k in first:
        idx = [i for i, lp in enumerate(layers) if lp.key == k]
        best = (sum(base[i] for i in idx), 0)
        for t in range(1, n_trials):
            if t >= len(order[k]):
                break
            rows = measured[t]
            cyc = [rows[i][4] for i in idx]
            if all(c <= base[i] for c, i in zip(cyc, idx)) and (sum(cyc), t) < best:
                best = (sum(cyc), t)
        if best[1]:
            chosen[k] = order[k][best[1]]
    # 5. the chosen set together: give up choices until no layer is slower than its baseline
    runs = 1 + len(jobs)
    reverted = 0
    while True:
        final = _measure((spec, cfg), tuple(chosen.items()))
        runs += 1
        slower = [i for i, r in enumerate(final) if r[4] > base[i]]
        if not slower:
            break
        for i in slower:
            k = _culprit(layers, parts, chosen, i)
            if k is not None:
                del chosen[k]
                reverted += 1
        if not chosen:
            final = [(parts[i], lp.name, lp.key, TileConfig.of(lp.default), base[i]) for i, lp in enumerate(layers)]
            break
    records = []
    for k, i in first.items():
        idx = [j for j, lp in enumerate(layers) if lp.key == k]
        extra = (("default_cycles", sum(base[j] for j in idx)), ("instances", len(idx)),
                 ("layers", [layers[j].name for j in idx]))
        # no tuned choice: config null (each layer keeps its own default plan)
        records.append(TuningRecord(layers[i].workload, chosen.get(k), sum(final[j][4] for j in idx),
                                    len(order[k]), byoc.__version__, 0, extra))
    if output is not None:
        write_records(output, records)
    out_layers = tuple(LayerResult(parts[i], lp.name, lp.workload["op"], str(TileConfig.of(lp.default)),
                                   str(final[i][3]), base[i], final[i][4]) for i, lp in enumerate(layers))
    return TuneResult(None if output is None else str(output), out_layers, len(first), len(chosen), trials, runs,
                      reverted, time.perf_counter() - t0)


def _culprit(layers, parts, chosen, i):
    """The workload to give up when layer ``i`` got slower: its own choice, else the nearest tuned layer of its
    partition (an earlier layer that now ends sooner, or a later one whose weights it now prefetches)."""
    if layers[i].key in chosen:
        return layers[i].key
    for d in range(1, len(layers)):
        for j in (i - d, i + d):
            if 0 <= j < len(layers) and parts[j] == parts[i] and layers[j].key in chosen:
                return layers[j].key
    return None
