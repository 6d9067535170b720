"""A sweep's search space: axes over NPU configuration fields, sampled as a grid, at random or by Latin hypercube.

An axis names a field by path (``points.FIELD_PATHS``): ``preset``, ``clock_hz``, ``weight_compression``,
``mac.<field>``, ``buffer.<name>.size_bytes``, ``area.<name>.bytes_per_cycle`` (or ``read_latency``,
``write_latency``, ``burst_bytes``), ``sram_kib`` (every local buffer scaled to this total), ``target``.
A grid takes each axis's ``values``; random and Latin-hypercube samples draw from ``values`` (a discrete axis) or
from ``[low, high]`` (``log=True`` samples the exponent; ``integer=True`` rounds). Sampling is seeded, so the same
space gives the same points.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from byoc.errors import ConfigError

__all__ = ["Axis", "Space", "parse_axis"]

METHODS = ("grid", "random", "lhs")


@dataclass(frozen=True)
class Axis:
    path: str
    values: tuple = ()
    low: float | None = None
    high: float | None = None
    log: bool = False
    integer: bool = False

    def __post_init__(self):
        if not self.values and (self.low is None or self.high is None):
            raise ConfigError(f"sweep axis {self.path!r} has neither values nor a [low, high] range",
                              hint="e.g. mac.ublock_c=4,8,16 or clock_hz=100e6:1e9:log")
        if not self.values and not self.low <= self.high:
            raise ConfigError(f"sweep axis {self.path!r}: low {self.low} > high {self.high}")
        if self.log and not self.values and self.low <= 0:
            raise ConfigError(f"sweep axis {self.path!r}: a log range needs low > 0, got {self.low}")

    def at(self, u: float):
        """The value at quantile ``u`` in [0, 1)."""
        if self.values:
            return self.values[min(int(u * len(self.values)), len(self.values) - 1)]
        if self.log:
            v = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            v = self.low + u * (self.high - self.low)
        return int(round(v)) if self.integer else float(v)


@dataclass(frozen=True)
class Space:
    axes: tuple[Axis, ...]
    method: str = "grid"
    samples: int = 0          # random / lhs: how many points
    seed: int = 0

    def __post_init__(self):
        if self.method not in METHODS:
            raise ConfigError(f"unknown sweep method {self.method!r}", hint="methods: " + ", ".join(METHODS))
        if self.method != "grid" and self.samples < 1:
            raise ConfigError(f"a {self.method} sweep needs samples >= 1, got {self.samples}")
        if self.method == "grid":
            for a in self.axes:
                if not a.values:
                    raise ConfigError(f"grid axis {a.path!r} needs explicit values, not a range",
                                      hint="use --method random or lhs with --samples N for ranges")
        seen = [a.path for a in self.axes]
        for p in sorted(set(seen)):
            if seen.count(p) > 1:
                raise ConfigError(f"sweep axis {p!r} is given {seen.count(p)} times")

    def points(self) -> list[dict]:
        """Every point as ``{axis path: value}``, in a fixed order."""
        if not self.axes:
            return [{}]
        if self.method == "grid":
            return [dict(zip((a.path for a in self.axes), combo))
                    for combo in itertools.product(*(a.values for a in self.axes))]
        rng = np.random.default_rng(self.seed)
        n, d = self.samples, len(self.axes)
        if self.method == "random":
            u = rng.random((n, d))
        else:  # Latin hypercube: one sample in each of n equal strata per axis, strata shuffled per axis
            u = (np.stack([rng.permutation(n) for _ in range(d)], axis=1) + rng.random((n, d))) / n
        return [{a.path: a.at(float(u[i, j])) for j, a in enumerate(self.axes)} for i in range(n)]


def _number(text: str, path: str):
    try:
        v = float(text)
    except ValueError:
        return text
    return int(v) if v.is_integer() and "." not in text and "e" not in text.lower() else v


def parse_axis(spec: str) -> Axis:
    """``PATH=V1,V2,...`` (values) or ``PATH=LOW:HIGH[:log][:int]`` (a range), as ``byoc sweep --axis`` takes."""
    if "=" not in spec:
        raise ConfigError(f"sweep axis {spec!r} is not PATH=VALUES", hint="e.g. mac.ublock_c=4,8,16")
    path, rhs = (s.strip() for s in spec.split("=", 1))
    if ":" in rhs and "," not in rhs:
        parts = rhs.split(":")
        flags = set(parts[2:])
        bad = flags - {"log", "int"}
        if len(parts) < 2 or bad:
            raise ConfigError(f"sweep axis {spec!r}: a range is LOW:HIGH[:log][:int]")
        try:
            low, high = float(parts[0]), float(parts[1])
        except ValueError:
            raise ConfigError(f"sweep axis {spec!r}: LOW and HIGH must be numbers") from None
        return Axis(path, low=low, high=high, log="log" in flags, integer="int" in flags)
    vals = []
    for t in rhs.split(","):
        t = t.strip()
        if t.lower() in ("true", "false", "on", "off"):
            vals.append(t.lower() in ("true", "on"))
        else:
            vals.append(_number(t, path))
    return Axis(path, values=tuple(vals))
