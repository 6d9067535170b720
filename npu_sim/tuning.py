"""Tile-plan overrides keyed by layer workload, and tuning records (AutoTVM's log, for the NPU's block search).

The compiler asks ``current()`` for a chooser before it plans a layer; without one (the default) it runs
``tiling.plan_layer`` exactly as before. A chooser sees the layer's workload key: what the tile search depends on
besides the data (op kind, IFM/OFM shapes, kernel, strides, dilation, depth multiplier, dtypes, whether the IFM/OFM
are partition inputs/outputs, and the NPU configuration's name and digest), so a record applies to every layer of
any model with that workload on that configuration.

A record is one JSON object per line::

    {"byoc": "0.1.0", "workload": {...}, "config": {"bh": 8, "bw": 16, "bc": 32, "order": "depth_outer"},
     "cycles": 1234, "default_cycles": 1500, "trials": 16, "instances": 2, "layers": [...]}

``"config": null`` records that the compiler's own heuristic won for that workload: its layers keep their
default plans (which may differ between layers of one workload, as the weights' compression ratio does).

``apply_history_best(records)`` (a context manager) compiles with the lowest-cycle record of each workload;
a record whose configuration the layer's search does not offer (it does not fit, or is not a candidate) is
ignored with a note, and so is one whose workload never occurs. ``load_records`` refuses a malformed line with a
``TuningRecordError`` naming the file and line.
"""
from __future__ import annotations

import contextvars
import hashlib
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field

from byoc.errors import ConfigError

from .isa import PpuOp
from .tiling import Geometry, TilePlan, fitting_plans, plan_layer

__all__ = ["TileConfig", "TuningRecord", "TuningRecordError", "TileChooser", "workload_of", "workload_key",
           "current", "use_chooser", "load_records", "parse_records", "best_records", "apply_history_best",
           "write_records", "ORDERS"]

ORDERS = ("depth_outer", "spatial_outer")
_REQUIRED = {"byoc": str, "workload": dict, "config": (dict, type(None)), "cycles": int, "trials": int}


class TuningRecordError(ConfigError):
    pass


@dataclass(frozen=True, order=True)
class TileConfig:
    """One block configuration of a layer: tile height, width, depth and loop order."""
    bh: int
    bw: int
    bc: int
    order: str = "depth_outer"

    @classmethod
    def of(cls, plan: TilePlan) -> "TileConfig":
        return cls(plan.bh, plan.bw, plan.bc, plan.order)

    def to_json(self) -> dict:
        return {"bh": self.bh, "bw": self.bw, "bc": self.bc, "order": self.order}

    def matches(self, plan: TilePlan) -> bool:
        return (plan.bh, plan.bw, plan.bc, plan.order) == (self.bh, self.bw, self.bc, self.order)

    def __str__(self) -> str:
        return f"{self.bh}x{self.bw}x{self.bc} {self.order}"


@dataclass(frozen=True)
class TuningRecord:
    workload: dict
    config: TileConfig | None    # None: the compiler's default heuristic
    cycles: int
    trials: int
    byoc: str
    line: int = 0                # where it was read (0: made in memory)
    extra: tuple = ()            # the other fields, kept for writing the record back

    @property
    def key(self) -> str:
        return workload_key(self.workload)

    def to_json(self) -> dict:
        d = {"byoc": self.byoc, "workload": self.workload,
             "config": None if self.config is None else self.config.to_json(), "cycles": self.cycles,
             "trials": self.trials}
        d.update(dict(self.extra))
        return d


def config_digest(cfg) -> str:
    from .program import _config_to_dict
    return hashlib.sha256(json.dumps(_config_to_dict(cfg), sort_keys=True).encode()).hexdigest()[:16]


def workload_of(cfg, g: Geometry, in_dtype: str, out_dtype: str) -> dict:
    """The layer workload a record is keyed by (a plain JSON object)."""
    op = g.kind if g.kind != "ppu" else PpuOp(g.ppu_op).name.lower()
    return {"op": op, "ifm": list(g.in_hwc), "ofm": list(g.out_hwc), "kernel": list(g.kernel),
            "stride": list(g.stride), "dilation": list(g.dilation), "depth_multiplier": g.dm,
            "inputs": g.n_inputs, "broadcast": g.in2_bcast, "dtypes": [str(in_dtype), str(out_dtype)],
            "ifm_is_input": g.in_linear, "ofm_is_output": g.out_linear,
            "npu_config": cfg.name, "npu_config_digest": config_digest(cfg)}


def workload_key(workload: dict) -> str:
    return json.dumps(workload, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class LayerPlan:
    """What a chooser saw and chose for one layer (in compile order)."""
    name: str
    key: str
    workload: dict
    default: TilePlan
    chosen: TilePlan
    candidates: tuple[TilePlan, ...]


@dataclass(eq=False)
class TileChooser:
    """Plans layers with ``overrides`` ({workload key: TileConfig}); layers without one get the default plan.
    Records every decision in ``layers``; ``notes`` says which overrides were ignored and why."""
    overrides: dict = field(default_factory=dict)
    layers: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    used: set = field(default_factory=set)

    def plan(self, cfg, g: Geometry, in_dtype: str, out_dtype: str, name: str, fm_area: int,
             w_area: int) -> TilePlan:
        plans = fitting_plans(cfg, g, fm_area, w_area)
        default = plan_layer(cfg, g, name, fm_area, w_area, plans)
        workload = workload_of(cfg, g, in_dtype, out_dtype)
        key = workload_key(workload)
        chosen = default
        want = self.overrides.get(key)
        if want is not None:
            hit = next((p for p in plans if want.matches(p)), None)
            if hit is None:
                self.notes.append(f"layer {name!r}: tile {want} is not a fitting candidate of its search on "
                                  f"{cfg.name!r}; the default {TileConfig.of(default)} is used")
            else:
                chosen = hit
                self.used.add(key)
        self.layers.append(LayerPlan(name, key, workload, default, chosen, tuple(plans)))
        return chosen


_CURRENT: contextvars.ContextVar = contextvars.ContextVar("npu_sim_tile_chooser", default=None)


def current() -> TileChooser | None:
    """The chooser compiles in this context use (None: the default heuristic alone)."""
    return _CURRENT.get()


@contextmanager
def use_chooser(chooser: TileChooser):
    token = _CURRENT.set(chooser)
    try:
        yield chooser
    finally:
        _CURRENT.reset(token)


# ---------------------------------------------------------------------------------------------- record files
def _check_config(c, where: str) -> TileConfig:
    if not isinstance(c, dict):
        raise TuningRecordError(f"{where}: 'config' must be an object, found {type(c).__name__}")
    for k in ("bh", "bw", "bc"):
        v = c.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise TuningRecordError(f"{where}: config.{k} must be a positive integer, found {v!r}")
    order = c.get("order", "depth_outer")
    if order not in ORDERS:
        raise TuningRecordError(f"{where}: config.order must be one of {', '.join(ORDERS)}, found {order!r}")
    return TileConfig(c["bh"], c["bw"], c["bc"], order)


def parse_records(lines, source: str = "<records>") -> list[TuningRecord]:
    """Records from JSON lines (blank lines skipped); ``TuningRecordError`` names the first bad line."""
    out = []
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        where = f"{source}:{n}"
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise TuningRecordError(f"{where}: not a JSON object ({e.msg} at column {e.colno})",
                                    hint="a tuning-records file has one JSON object per line "
                                         "(byoc tune writes them)") from None
        if not isinstance(d, dict):
            raise TuningRecordError(f"{where}: expected a JSON object, found {type(d).__name__}")
        for k, t in _REQUIRED.items():
            if k not in d:
                raise TuningRecordError(f"{where}: the record has no {k!r} field",
                                        hint="fields: " + ", ".join(_REQUIRED))
            if not isinstance(d[k], t) or isinstance(d[k], bool):
                want = "object or null" if k == "config" else t.__name__
                raise TuningRecordError(f"{where}: {k!r} must be {want}, found {type(d[k]).__name__}")
        if d["cycles"] < 0 or d["trials"] < 0:
            raise TuningRecordError(f"{where}: cycles and trials must be non-negative")
        cfg = None if d["config"] is None else _check_config(d["config"], where)
        extra = tuple((k, v) for k, v in d.items() if k not in _REQUIRED)
        out.append(TuningRecord(d["workload"], cfg, d["cycles"], d["trials"], d["byoc"], n, extra))
    return out


def load_records(path) -> list[TuningRecord]:
    p = os.fspath(path)
    try:
        with open(p, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise TuningRecordError(f"cannot read tuning records {p!r}: {e.strerror or e}",
                                hint="write them with `byoc tune MODEL -o records.jsonl`") from None
    except UnicodeDecodeError:
        raise TuningRecordError(f"{p}: not a UTF-8 text file of JSON lines") from None
    return parse_records(text.splitlines(), p)


def write_records(path, records) -> None:
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r.to_json(), sort_keys=True, separators=(",", ":")) + "\n")


def best_records(records) -> dict[str, TuningRecord]:
    """The lowest-cycle record of each workload (the first of equals, in file order)."""
    best: dict[str, TuningRecord] = {}
    for r in records:
        k = r.key
        if k not in best or r.cycles < best[k].cycles:
            best[k] = r
    return best


def _as_records(records):
    if isinstance(records, (str, os.PathLike)):
        return load_records(records)
    return list(records)


@contextmanager
def apply_history_best(records):
    """Compile with the best record of each workload (AutoTVM's ``apply_history_best``). ``records``: a path to a
    JSON-lines file or TuningRecords. Yields the ``TileChooser``; after the block its ``notes`` also name the
    records whose workload no compiled layer had."""
    best = best_records(_as_records(records))
    chooser = TileChooser({k: r.config for k, r in best.items() if r.config is not None})
    with use_chooser(chooser):
        yield chooser
    seen = {lp.key for lp in chooser.layers}
    for k, r in best.items():
        if k not in seen:
            w = r.workload
            where = f"line {r.line}" if r.line else "a record"
            chooser.notes.append(f"{where}: no compiled layer has its workload ({w.get('op')} "
                                 f"{w.get('ifm')}->{w.get('ofm')} on {w.get('npu_config')}); ignored")
