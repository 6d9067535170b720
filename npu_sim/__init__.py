"""A cycle-approximate, bit-exact int8 NPU simulator modelled on Arm Ethos-N/Ethos-U and TVM's VTA.

``compile(func, config)`` turns a partitioned ``Compiler="npu"`` function into a ``Program`` (a command stream for
four decoupled engines linked by dependency tokens); ``simulate(program, inputs)`` returns the exact outputs and
``Stats`` (cycles per engine and per layer, roofline, trace). Configurations come from ``preset(name)`` or
``load_config(path)`` (TOML).
"""
from __future__ import annotations

from .compiler import compile  # noqa: A004 - the public spelling
from .config import PRESETS, NPUConfig, load_config, preset
from .program import Program
from .simulator import LayerStats, Stats, simulate

__all__ = ["compile", "simulate", "Program", "Stats", "LayerStats", "NPUConfig", "preset", "load_config", "PRESETS"]
