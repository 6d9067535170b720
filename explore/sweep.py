"""``sweep(...)``: run every point of a space over models and targets, store each as it finishes, resume.

Points are identified by ``points.point_id``; those already in the database are skipped, so re-running an
interrupted sweep computes only the rest. Results are written by this (the parent) process only.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from byoc.errors import ConfigError

from .evaluate import ModelSpec
from .points import UnknownAxisError, apply_overrides, model_hash, point_id
from .space import Space
from .store import Store

__all__ = ["sweep", "SweepResult", "plan", "model_spec"]


@dataclass(frozen=True)
class SweepResult:
    db: str
    total: int          # points in the sweep
    computed: int       # computed by this call
    skipped: int        # already in the database (resumed)
    errors: int         # points recorded with an error (all runs)
    outputs: tuple[str, ...] = ()


def model_spec(path, target: str = "npu", semantics: str = "auto") -> ModelSpec:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        from byoc.errors import ModelError
        raise ModelError(f"cannot read model {str(p)!r}: {e.strerror or e}", hint="check the path") from None
    return ModelSpec(p.name, model_hash(data), data, p.suffix.lower() or ".tflite", target, semantics)


def plan(specs: list[ModelSpec], space: Space, default_preset: str) -> list[tuple]:
    """Every point task ``(seq, point_id, model key, coords json, default preset)`` in sweep order. A point whose
    coordinates do not make a valid configuration keeps an id from its coordinates and fails when run."""
    tasks, seen = [], set()
    for spec in specs:
        for coords in space.points():
            target = str(coords.get("target", spec.target))
            cj = json.dumps(coords, sort_keys=True, separators=(",", ":"))
            try:
                pid = point_id(spec.sha, target, apply_overrides(coords, default_preset, target).config)
            except UnknownAxisError:
                raise
            except ConfigError:
                pid = model_hash(f"{spec.sha}|{target}|invalid|{cj}".encode())[:24]
            if pid in seen:   # two coordinates that spell the same hardware: one point
                continue
            seen.add(pid)
            key = f"{spec.sha}:{target}"
            tasks.append((len(tasks), pid, key, cj, default_preset))
    return tasks


def _specs_by_key(specs, tasks) -> dict:
    out = {}
    by_sha = {s.sha: s for s in specs}
    for t in tasks:
        sha, target = t[2].split(":", 1)
        if t[2] not in out:
            s = by_sha[sha]
            out[t[2]] = ModelSpec(s.name, s.sha, s.data, s.suffix, target, s.semantics)
    return out


def measure_cpu(spec: ModelSpec, repeat: int = 3) -> float:
    """Measured (not simulated) host time of the model's CPU part: build ``<target>,llvm`` once and run it."""
    import tempfile

    from byoc.build import build
    from byoc.cli.common import load_model, make_inputs
    from byoc.partition import partition_for
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model" + spec.suffix)
        Path(path).write_bytes(spec.data)
        model = load_model(path, spec.semantics)
    pmod = partition_for(spec.target, model.mod, model.params)
    module = build(pmod, target=f"{spec.target},llvm")
    return float(module.estimate(make_inputs(model.mod["main"], (), 0), repeat).cpu_seconds)


def sweep(models, space, db, *, target: str = "npu", preset: str = "ethos-u55-256-like",
          workers: int | None = None, cluster: str | None = None, measure_cpu_time: bool = True,
          out_dir=None, progress: bool = True, on_point=None, semantics: str = "auto") -> SweepResult:
    """Run ``space`` (a ``Space``, or ``{axis path: values}`` for a grid) over ``models`` (paths) for ``target``,
    storing points in the SQLite file ``db``.

    ``workers``: local processes (default: the CPU count; 0 or 1 runs in this process). ``cluster``: a Ray address
    (``ray://host:port``, ``host:port``, ``auto`` or ``local``) runs the points as Ray tasks instead.
    ``out_dir``: write the results table, Pareto front, plots and HTML page there. ``on_point(row)`` is called
    after each stored point (the tests use it to interrupt a sweep)."""
    import npu_sim
    if isinstance(space, dict):   # {axis path: values}: a grid
        from .space import Axis
        space = Space(tuple(Axis(k, values=tuple(v)) for k, v in space.items()))
    if preset not in npu_sim.PRESETS:
        raise ConfigError(f"sweep: unknown NPU preset {preset!r}", hint="presets: " + ", ".join(npu_sim.PRESETS))
    specs = [model_spec(m, target, semantics) for m in models]
    tasks = plan(specs, space, preset)
    keyed = _specs_by_key(specs, tasks)
    with Store(db) as store:
        done = store.done_ids()
        pending = [t for t in tasks if t[1] not in done]
        skipped = len(tasks) - len(pending)
        for key, spec in keyed.items():
            if store.model_cpu(spec.sha, spec.target) is None:
                if measure_cpu_time:
                    from byoc.errors import NoKernelError
                    try:
                        store.set_model(spec.sha, spec.target, spec.name, measure_cpu(spec), "measured")
                    except NoKernelError as e:   # an opaque custom op without a kernel: its CPU part cannot run
                        store.set_model(spec.sha, spec.target, spec.name, None,
                                        f"not measured: no kernel for {e.op_name}")
                else:
                    store.set_model(spec.sha, spec.target, spec.name, None, "not measured")
        from .runners import run_tasks
        computed = 0
        bar = _bar(len(tasks), skipped, progress)
        try:
            for row in run_tasks(keyed, pending, workers=workers, cluster=cluster):
                layers = row.pop("_layers")
                if store.add(row, layers):
                    computed += 1
                if bar:
                    bar.advance(row)
                if on_point:
                    on_point(row)
        finally:
            if bar:
                bar.close()
        errors = store.db.execute("SELECT COUNT(*) FROM points WHERE status='error'").fetchone()[0]
    outputs: tuple[str, ...] = ()
    if out_dir is not None:
        from .outputs import write_outputs
        outputs = tuple(write_outputs(db, out_dir))
    return SweepResult(str(db), len(tasks), computed, skipped, int(errors), outputs)


class _Bar:
    """A rich progress bar on stderr (only on a terminal): points done, errors, elapsed and remaining time."""

    def __init__(self, total: int, done: int):
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)
        self.p = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          TimeRemainingColumn(), TextColumn("{task.description}"),
                          console=Console(file=sys.stderr), transient=False)
        self.errors = 0
        self.task = self.p.add_task("", total=total, completed=done)
        self.p.start()

    def advance(self, row) -> None:
        self.errors += row["status"] != "ok"
        self.p.update(self.task, advance=1, description=f"{self.errors} error(s)" if self.errors else "")

    def close(self) -> None:
        self.p.stop()


def _bar(total: int, done: int, enabled: bool):
    if not enabled or not sys.stderr.isatty():
        return None
    return _Bar(total, done)
