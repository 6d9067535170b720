"""Design-space exploration: which NPU configuration and which offload plan make a model fastest.

``sweep(models, space, db=...)`` partitions each model once per target, then compiles and simulates every NPU
configuration point of ``space`` (a grid, random or Latin-hypercube sample over ``npu_sim.NPUConfig`` fields,
starting from presets), records each point in an SQLite database as it finishes (the resume key is a hash of the
model bytes, the target and the canonical config) and writes a results table, the Pareto front and plots.
Points run in a local process pool by default, or as tasks on a Ray cluster (``cluster="ray://..."``/``"auto"``).
``tune(model, ...)`` (``explore.tune``) searches the NPU compiler's tile plans per layer workload on the same
executors and writes tuning records (``npu_sim.tuning``).

Layering: this package sits above ``runtime``/``npu_sim``/``byoc`` and nothing below imports it (``byoc.sweep``
imports it lazily).
"""
from __future__ import annotations

from .space import Axis, Space
from .points import ConfigPoint, apply_overrides, canonical_config, point_id
from .sweep import SweepResult, sweep

__all__ = ["Axis", "Space", "ConfigPoint", "apply_overrides", "canonical_config", "point_id", "sweep",
           "SweepResult"]
