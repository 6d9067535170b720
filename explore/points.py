"""One sweep point: an NPU configuration built from a preset and field overrides, and its stable identity.

``point_id`` hashes (model bytes' hash, target, canonical config) with SHA-256: the resume key. The canonical
config is every field of the ``NPUConfig`` (not its name) as sorted JSON, so two spellings of the same hardware
(a preset, or another preset overridden to equal it) are one point.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, replace

from byoc.errors import ConfigError

__all__ = ["UnknownAxisError", "ConfigPoint", "apply_overrides", "canonical_config", "point_id", "model_hash", "FIELD_PATHS"]

AREA_FIELDS = ("bytes_per_cycle", "read_latency", "write_latency", "burst_bytes", "size_bytes")
FIELD_PATHS = ("preset", "target", "clock_hz", "weight_compression", "sram_kib", "mac.<field>",
               "buffer.<name>.size_bytes", "area.<name>." + "|".join(AREA_FIELDS), "overheads.<field>")
# Weight compression switched on without a ratio: Ethos-U55's typical encoded/raw ratio (the u55 preset's value).
DEFAULT_COMPRESSION = 0.914


class UnknownAxisError(ConfigError):
    """An axis path no configuration has: a mistake in the sweep itself, refused before any point runs."""


@dataclass(frozen=True)
class ConfigPoint:
    """A point's coordinates (axis path → value) and what they resolve to."""
    coords: tuple[tuple[str, object], ...]
    target: str
    config: object          # npu_sim.NPUConfig


def _mac_fields():
    from npu_sim.config import MacArray
    return tuple(f.name for f in dataclasses.fields(MacArray))


def apply_overrides(coords: dict, default_preset: str, default_target: str = "npu") -> ConfigPoint:
    """The configuration of one point: ``coords["preset"]`` (or ``default_preset``) with every other coordinate
    applied; a ConfigError names the axis and the allowed spellings, and the result is validated."""
    import npu_sim
    coords = dict(coords)
    name = coords.pop("preset", default_preset)
    target = str(coords.pop("target", default_target))
    if name not in npu_sim.PRESETS:
        raise ConfigError(f"sweep: unknown NPU preset {name!r}", hint="presets: " + ", ".join(npu_sim.PRESETS))
    cfg = npu_sim.PRESETS[name]
    for path, value in coords.items():
        cfg = _apply(cfg, path, value)
    return ConfigPoint(tuple(sorted(dict(coords, preset=name, target=target).items())), target, cfg.validate())


def _apply(cfg, path: str, value):
    parts = path.split(".")
    head = parts[0]
    if path == "clock_hz":
        return replace(cfg, clock_hz=float(value))
    if path == "weight_compression":
        if isinstance(value, bool):
            on = cfg.weight_compression if cfg.weight_compression != 1.0 else DEFAULT_COMPRESSION
            return replace(cfg, weight_compression=on if value else 1.0)
        return replace(cfg, weight_compression=float(value))
    if path == "sram_kib":  # scale every local buffer so they total this many KiB, keeping their proportions
        total = sum(b.size_bytes for b in cfg.local_buffers)
        want = int(round(float(value) * 1024))
        bufs = tuple(replace(b, size_bytes=max(1, int(b.size_bytes * want // total))) for b in cfg.local_buffers)
        return replace(cfg, local_buffers=bufs)
    if head == "mac" and len(parts) == 2 and parts[1] in _mac_fields():
        v = bool(value) if parts[1] == "part_kernel" else int(value)
        return replace(cfg, mac=replace(cfg.mac, **{parts[1]: v}))
    if head == "overheads" and len(parts) == 2 and parts[1] in {f.name for f in dataclasses.fields(cfg.overheads)}:
        return replace(cfg, overheads=replace(cfg.overheads, **{parts[1]: int(value)}))
    if head == "buffer" and len(parts) == 3 and parts[2] == "size_bytes":
        names = [b.name for b in cfg.local_buffers]
        if parts[1] not in names:
            raise ConfigError(f"sweep axis {path!r}: {cfg.name} has no local buffer {parts[1]!r}",
                              hint="buffers: " + ", ".join(names))
        return replace(cfg, local_buffers=tuple(replace(b, size_bytes=int(value)) if b.name == parts[1] else b
                                                for b in cfg.local_buffers))
    if head == "area" and len(parts) == 3 and parts[2] in AREA_FIELDS:
        names = [a.name for a in cfg.memory_areas]
        if parts[1] not in names:
            raise ConfigError(f"sweep axis {path!r}: {cfg.name} has no memory area {parts[1]!r}",
                              hint="areas: " + ", ".join(names))
        v = float(value) if parts[2] == "bytes_per_cycle" else int(value)
        return replace(cfg, memory_areas=tuple(replace(a, **{parts[2]: v}) if a.name == parts[1] else a
                                               for a in cfg.memory_areas))
    raise UnknownAxisError(f"unknown sweep axis {path!r}", hint="axes: " + ", ".join(FIELD_PATHS))


def canonical_config(cfg) -> str:
    """Every field of the configuration except its name, as sorted compact JSON."""
    d = dataclasses.asdict(cfg)
    d.pop("name")
    return json.dumps(d, sort_keys=True, separators=(",", ":"))


def model_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def point_id(model_sha: str, target: str, cfg) -> str:
    key = json.dumps([model_sha, target, canonical_config(cfg)], separators=(",", ":"))
    return hashlib.sha256(key.encode()).hexdigest()[:24]
