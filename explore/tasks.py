"""What a worker runs for one point: resolve its configuration, evaluate it, and turn any failure into an error
row (a point that crashes is recorded with its error; the sweep goes on)."""
from __future__ import annotations

import json
import os
import traceback

from .evaluate import evaluate, prepared

__all__ = ["PointTask", "run_point", "init_worker", "run_in_worker"]

# (seq, point_id, model key, coords json, default preset)
PointTask = tuple

_SPECS: dict = {}


def run_point(spec, task) -> dict:
    from .points import apply_overrides
    seq, pid, _, coords_json, default_preset = task
    coords = json.loads(coords_json)
    row = {"point_id": pid, "seq": seq, "model": spec.name, "model_sha": spec.sha, "target": spec.target,
           "config_name": str(coords.get("preset", default_preset)), "coords": coords_json, "config": "",
           "status": "ok", "error": "", "metrics": {}, "_layers": [], "_pid": os.getpid()}
    try:
        from .points import canonical_config
        point = apply_overrides(coords, default_preset, spec.target)
        row["config"] = canonical_config(point.config)
        metrics, layers = evaluate(prepared(spec), point.config)
        row["metrics"], row["_layers"] = metrics, layers
    except Exception as e:  # noqa: BLE001 - any failure of one point is that point's result
        row["status"] = "error"
        msg = getattr(e, "message", None) or str(e)
        notes = [n.strip() for n in getattr(e, "notes", ()) or ()]
        if notes:
            msg += " (" + "; ".join(notes) + ")"
        row["error"] = f"{type(e).__name__}: {msg}"
        if os.environ.get("BYOC_TRACEBACK"):
            row["error"] += "\n" + traceback.format_exc()
    return row


def init_worker(specs: dict) -> None:
    """Process-pool initializer: the models arrive once per worker, not with every point."""
    _SPECS.update(specs)


def run_in_worker(task) -> dict:
    return run_point(_SPECS[task[2]], task)
