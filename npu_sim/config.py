"""NPU configurations: frozen values built from a named preset or a TOML file (npu-model.md §5.3).

A configuration describes the MAC array geometry, the post-processing unit's cost table, the local SRAM buffers
(which tile kinds each one holds), the memory areas with their bandwidth/latency/burst, where tensors live, the
clock and the per-command overheads. ``validate`` reports every problem at once as a ``ConfigError``.
"""
from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from byoc.errors import ConfigError

__all__ = ["MacArray", "PostProcessing", "LocalBuffer", "MemoryArea", "Placement", "Overheads", "NPUConfig",
           "PRESETS", "preset", "load_config", "config_from_dict", "TILE_KINDS", "PPU_OPS", "TABLE_ENTRY_BYTES"]

# Kinds of tiles the compiler places in local SRAM.
TILE_KINDS = ("ifm", "weight", "table", "acc", "ofm")
# Post-processing operations with a cost entry (cycles per output element, or per tap / input element).
PPU_OPS = ("requant", "add", "mul", "max_pool_tap", "avg_pool_tap", "mean_input", "lut", "copy")
# Per-output-channel table entry: int32 bias, int32 multiplier, int8 shift, one spare byte (as Ethos-U's 10 B).
TABLE_ENTRY_BYTES = 10
# How weights are stored in the weight area (timing only): raw bytes, or Arm's MLW compressed streams.
WEIGHT_ENCODINGS = ("raw", "mlw")


@dataclass(frozen=True)
class MacArray:
    """A "ublock" MAC array: each micro-step produces ublock_h×ublock_w×ublock_c outputs, each a dot_depth dot."""
    ublock_h: int = 2
    ublock_w: int = 2
    ublock_c: int = 8
    dot_depth: int = 8
    ifm_block_depth: int = 32          # IFM channels consumed per block pass (D_blk)
    weight_buffer_min: int = 32        # minimum cycles per kernel step (weight-buffer refill bound)
    part_kernel: bool = True           # shallow IFMs may pack kernel taps into the dot depth
    dw_kernel_group: int = 4           # depthwise: kernel taps per pass
    dw_cycles_per_ublock: int = 4      # depthwise: cycles per xy-ublock per pass
    pipe_fill: int = 2                 # cycles of pipeline fill per MAC command
    step_delay: int = 0                # Ethos-U: cycles per kernel step when a block is one micro-block in x/y
    pool_tap_cycles: int = 1           # Ethos-U: pooling cycles per tap and micro-block, per byte of input element
    cores: int = 1                     # Ethos-U65-512: two such arrays share each block's OFM depth

    @property
    def macs_per_cycle(self) -> int:
        return self.ublock_h * self.ublock_w * self.ublock_c * self.dot_depth * self.cores

    @property
    def dw_macs_per_cycle(self) -> float:
        return self.ublock_h * self.ublock_w * self.ublock_c * self.dw_kernel_group / self.dw_cycles_per_ublock \
            * self.cores


@dataclass(frozen=True)
class PostProcessing:
    """The PPU (Ethos-U AO / Ethos-N PLE / VTA ALU): cost per element per operation."""
    cycles_per_element: tuple[tuple[str, float], ...] = ()
    channel_quantum: int = 8           # channels are processed in groups of this many (MAC outputs)
    elementwise_quantum: int = 0       # the same for PPU-only ops (0: channel_quantum); Ethos-U: 16 (NHCWB16)
    command_overhead: int = 0          # cycles added to every PPU command (Ethos-N: 10 per block)
    shares_mac_engine: bool = False    # VTA: the tensor ALU and the GEMM core are one unit
    pool_on_mac: bool = False          # Ethos-U: pooling runs on the MAC engine per micro-block (cost.pool_cycles)
    # The output stage scales in float32 (many NPUs do; Ethos-U's is fixed-point only): it then runs ONNX's
    # requantization (Rounding.FLOAT32_HALF_EVEN), charged like the fixed-point requantize.
    float_scale: bool = False

    def cost(self, op: str) -> float:
        for name, value in self.cycles_per_element:
            if name == op:
                return value
        raise ConfigError(f"PPU cost table has no entry for {op!r}", hint="entries: " + ", ".join(PPU_OPS))


@dataclass(frozen=True)
class LocalBuffer:
    name: str
    size_bytes: int
    holds: tuple[str, ...]


@dataclass(frozen=True)
class MemoryArea:
    name: str
    bytes_per_cycle: float
    read_latency: int = 0
    write_latency: int = 0
    burst_bytes: int = 1
    size_bytes: int = 0                # 0 = unbounded


@dataclass(frozen=True)
class Placement:
    feature_maps: str = "sram"
    weights: str = "flash"
    # Area of a partition's inputs and outputs ("": the feature-map area). Vela's Dedicated_Sram memory mode
    # keeps the network's tensors in DRAM and uses the SRAM for the NPU's intermediate maps.
    io: str = ""

    @property
    def io_area(self) -> str:
        return self.io or self.feature_maps


@dataclass(frozen=True)
class Overheads:
    cmd_issue: int = 1                 # decode/setup cycles of every command
    dma_in_channels: int = 1           # DMA-in transfers in flight at once
    dma_out_channels: int = 1
    # Ethos-U: a block (one MAC/PPU command) costs at least its serial work over this many overlapping stages:
    # IFM-block read and OFM-block write (each with its latency) + output + MAC cycles (Vela's per-block command
    # cost, "per DPU" = 4). 0: no floor.
    block_overlap: int = 0


@dataclass(frozen=True)
class NPUConfig:
    name: str
    clock_hz: float
    mac: MacArray
    ppu: PostProcessing
    local_buffers: tuple[LocalBuffer, ...]
    memory_areas: tuple[MemoryArea, ...]
    placement: Placement = Placement()
    overheads: Overheads = Overheads()
    weight_compression: float = 1.0    # timing-only ratio of encoded to raw weight bytes ("raw" encoding)
    weight_encoding: str = "raw"       # "mlw": weights fetched as Arm's MLW streams (weight_encoding.py)
    fm_channel_quantum: int = 1        # feature maps stored with channels padded to this (Ethos-U bricks: 16)

    def area(self, name: str) -> MemoryArea:
        for a in self.memory_areas:
            if a.name == name:
                return a
        raise ConfigError(f"config {self.name!r} has no memory area {name!r}",
                          hint="areas: " + ", ".join(a.name for a in self.memory_areas))

    def buffer_for(self, kind: str) -> LocalBuffer:
        for b in self.local_buffers:
            if kind in b.holds:
                return b
        raise ConfigError(f"config {self.name!r}: no local buffer holds {kind!r} tiles")

    def replace(self, **changes) -> "NPUConfig":
        return replace(self, **changes)

    def validate(self) -> "NPUConfig":
        problems = _problems(self)
        if problems:
            raise ConfigError(f"invalid NPU config {self.name!r}: {len(problems)} problem(s)",
                              notes=tuple("  - " + p for p in problems),
                              hint="fix every listed field; see npu_sim.config.PRESETS for working examples")
        return self


def _problems(cfg: NPUConfig) -> list[str]:
    out: list[str] = []
    if not (cfg.clock_hz > 0 and math.isfinite(cfg.clock_hz)):
        out.append(f"clock_hz must be positive, got {cfg.clock_hz}")
    m = cfg.mac
    for f in fields(MacArray):
        v = getattr(m, f.name)
        if f.name == "part_kernel":
            continue
        lo = 0 if f.name in ("pipe_fill", "step_delay") else 1
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            out.append(f"mac.{f.name} must be an integer >= {lo}, got {v!r}")
    if isinstance(m.ifm_block_depth, int) and isinstance(m.dot_depth, int) and m.dot_depth > 0 \
            and m.ifm_block_depth % m.dot_depth:
        out.append(f"mac.ifm_block_depth ({m.ifm_block_depth}) must be a multiple of mac.dot_depth "
                   f"({m.dot_depth})")
    costs = dict(cfg.ppu.cycles_per_element)
    for op in PPU_OPS:
        if op not in costs:
            out.append(f"ppu.cycles_per_element has no entry for {op!r}")
        elif not (isinstance(costs[op], (int, float)) and costs[op] > 0 and math.isfinite(costs[op])):
            out.append(f"ppu.cycles_per_element.{op} must be positive, got {costs[op]!r}")
    for op in costs:
        if op not in PPU_OPS:
            out.append(f"ppu.cycles_per_element has unknown entry {op!r}" + _suggest(op, PPU_OPS))
    if cfg.ppu.channel_quantum < 1:
        out.append(f"ppu.channel_quantum must be >= 1, got {cfg.ppu.channel_quantum}")
    if cfg.ppu.elementwise_quantum < 0:
        out.append(f"ppu.elementwise_quantum must be >= 0, got {cfg.ppu.elementwise_quantum}")
    if cfg.ppu.command_overhead < 0:
        out.append(f"ppu.command_overhead must be >= 0, got {cfg.ppu.command_overhead}")
    # Memory areas.
    names = [a.name for a in cfg.memory_areas]
    if not names:
        out.append("at least one memory area is needed")
    for n in sorted(set(names)):
        if names.count(n) > 1:
            out.append(f"memory area {n!r} is defined {names.count(n)} times")
    for a in cfg.memory_areas:
        if not (a.bytes_per_cycle > 0 and math.isfinite(a.bytes_per_cycle)):
            out.append(f"memory area {a.name!r}: bytes_per_cycle must be positive, got {a.bytes_per_cycle}")
        if a.read_latency < 0 or a.write_latency < 0:
            out.append(f"memory area {a.name!r}: latencies must be >= 0")
        if a.burst_bytes < 1:
            out.append(f"memory area {a.name!r}: burst_bytes must be >= 1, got {a.burst_bytes}")
        if a.size_bytes < 0:
            out.append(f"memory area {a.name!r}: size_bytes must be >= 0 (0 = unbounded), got {a.size_bytes}")
    for what in ("feature_maps", "weights", "io"):
        area = getattr(cfg.placement, what)
        if what == "io" and not area:
            continue
        if area not in names:
            out.append(f"placement.{what} = {area!r} is not a memory area" + _suggest(area, names))
    # Local buffers: each tile kind held by exactly one buffer; each can hold two minimal tiles.
    bnames = [b.name for b in cfg.local_buffers]
    for n in sorted(set(bnames)):
        if bnames.count(n) > 1:
            out.append(f"local buffer {n!r} is defined {bnames.count(n)} times")
    for kind in TILE_KINDS:
        holders = [b.name for b in cfg.local_buffers if kind in b.holds]
        if len(holders) != 1:
            out.append(f"exactly one local buffer must hold {kind!r} tiles, found {holders or 'none'}")
    for b in cfg.local_buffers:
        for k in b.holds:
            if k not in TILE_KINDS:
                out.append(f"local buffer {b.name!r} holds unknown tile kind {k!r}" + _suggest(k, TILE_KINDS))
        if b.size_bytes <= 0:
            out.append(f"local buffer {b.name!r}: size_bytes must be positive, got {b.size_bytes}")
    if not out:
        need = minimal_tile_bytes(cfg)
        for b in cfg.local_buffers:
            want = sum(2 * need[k] for k in b.holds)
            if want > b.size_bytes:
                detail = ", ".join(f"2×{k} {need[k]} B" for k in b.holds)
                out.append(f"local buffer {b.name!r}: size_bytes ({b.size_bytes} B) is smaller than two minimal "
                           f"tiles ({detail} = {want} B)")
    o = cfg.overheads
    if o.cmd_issue < 0:
        out.append(f"overheads.cmd_issue must be >= 0, got {o.cmd_issue}")
    if o.block_overlap < 0:
        out.append(f"overheads.block_overlap must be >= 0 (0 = no per-block floor), got {o.block_overlap}")
    if o.dma_in_channels < 1 or o.dma_out_channels < 1:
        out.append("overheads.dma_in_channels and dma_out_channels must be >= 1")
    if cfg.weight_encoding not in WEIGHT_ENCODINGS:
        out.append(f"weight_encoding must be one of {', '.join(WEIGHT_ENCODINGS)}, got {cfg.weight_encoding!r}")
    if not (0 < cfg.weight_compression <= 1.0):
        out.append(f"weight_compression must be in (0, 1], got {cfg.weight_compression}")
    return out


def minimal_tile_bytes(cfg: NPUConfig) -> dict[str, int]:
    """Bytes of the smallest useful tile of each kind: one ublock of a 1×1 conv over one IFM block depth."""
    m = cfg.mac
    xy = m.ublock_h * m.ublock_w
    return {"ifm": xy * m.ifm_block_depth, "weight": m.ifm_block_depth * m.ublock_c,
            "table": m.ublock_c * TABLE_ENTRY_BYTES, "acc": xy * m.ublock_c * 4, "ofm": xy * m.ublock_c}


def _suggest(name: str, options) -> str:
    close = difflib.get_close_matches(str(name), list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _costs(**kw: float) -> tuple[tuple[str, float], ...]:
    return tuple((op, float(kw[op])) for op in PPU_OPS)


KIB = 1024

# "ethos-u55-256-like" is kept as the name of ethos-u55-256 (below) that older configs and programs use; as the
# generic ``npu`` target's default it also has a float32 output stage (ppu.float_scale), which Ethos-U has not.
# Arm's default U55-256 system (vela.ini Ethos_U55_High_End_Embedded + Shared_Sram), npu-model.md §3.6/§5.3.
# PPU costs are Vela's AO table (0.25/element for int8 MAC outputs, 0.75 for Add, 0.375 for Mul, 0.125 for
# pooling). MEAN runs on Ethos-U as a depthwise pass over 1×1 output blocks, bound by the 32-cycle weight-buffer
# step per 8 channels × 4 taps: 1 cycle per input element.
_U55_256 = NPUConfig(
    name="ethos-u55-256-like", clock_hz=500e6,
    mac=MacArray(ublock_h=2, ublock_w=2, ublock_c=8, dot_depth=8, ifm_block_depth=32, weight_buffer_min=32,
                 part_kernel=True, dw_kernel_group=4, dw_cycles_per_ublock=4, pipe_fill=2, step_delay=2,
                 pool_tap_cycles=4),
    ppu=PostProcessing(cycles_per_element=_costs(requant=0.25, add=0.75, mul=0.375, max_pool_tap=0.125,
                                                 avg_pool_tap=0.125, mean_input=1.0, lut=1.0, copy=0.125),
                       channel_quantum=8, elementwise_quantum=16, command_overhead=0, pool_on_mac=True,
                       float_scale=True),
    local_buffers=(LocalBuffer("shram", 46 * KIB, ("ifm", "acc", "ofm")),
                   LocalBuffer("weight_buffer", 256 * KIB, ("weight", "table"))),
    memory_areas=(MemoryArea("sram", 8.0, 32, 32, 32), MemoryArea("flash", 1.0, 64, 64, 128)),
    placement=Placement(feature_maps="sram", weights="flash"),
    overheads=Overheads(cmd_issue=4, dma_in_channels=4, dma_out_channels=1, block_overlap=4),
    # Weights are fetched as MLW streams; each layer's encoded size is computed from its weights.
    weight_encoding="mlw", fm_channel_quantum=16)

# TVM's default VTA: 1×16×16 int8 GEMM, pynq 100 MHz, 64-bit AXI (npu-model.md §1.1, §5.3).
_VTA = NPUConfig(
    name="vta-default", clock_hz=100e6,
    mac=MacArray(ublock_h=1, ublock_w=1, ublock_c=16, dot_depth=16, ifm_block_depth=16, weight_buffer_min=1,
                 part_kernel=False, dw_kernel_group=1, dw_cycles_per_ublock=1, pipe_fill=4),
    ppu=PostProcessing(cycles_per_element=_costs(requant=0.625, add=1.0, mul=1.0, max_pool_tap=0.125,
                                                 avg_pool_tap=0.125, mean_input=0.125, lut=1.0, copy=0.125),
                       channel_quantum=16, command_overhead=4, shares_mac_engine=True),
    local_buffers=(LocalBuffer("inp", 32 * KIB, ("ifm",)), LocalBuffer("wgt", 256 * KIB, ("weight",)),
                   LocalBuffer("acc", 128 * KIB, ("acc", "table")), LocalBuffer("out", 32 * KIB, ("ofm",))),
    memory_areas=(MemoryArea("dram", 8.0, 32, 32, 64),),
    placement=Placement(feature_maps="dram", weights="dram"),
    overheads=Overheads(cmd_issue=1, dma_in_channels=1, dma_out_channels=1))

# Ethos-N78 1 TOPS (2 engines × 4 IG × 4 OG × 8 MAC units), PLE patch costs / (16 elements × 2 lanes).
_N78 = NPUConfig(
    name="ethos-n78-like", clock_hz=1e9,
    mac=MacArray(ublock_h=4, ublock_w=2, ublock_c=8, dot_depth=8, ifm_block_depth=8, weight_buffer_min=1,
                 part_kernel=False, dw_kernel_group=1, dw_cycles_per_ublock=1, pipe_fill=4),
    ppu=PostProcessing(cycles_per_element=_costs(requant=6 / 32, add=35 / 32, mul=35 / 32, max_pool_tap=37 / 288,
                                                 avg_pool_tap=97 / 288, mean_input=37 / 1568, lut=41 / 32,
                                                 copy=6 / 32),
                       channel_quantum=2, command_overhead=10, float_scale=True),
    local_buffers=(LocalBuffer("sram", 448 * KIB, TILE_KINDS),),
    memory_areas=(MemoryArea("dram", 16.0, 100, 100, 64),),
    placement=Placement(feature_maps="dram", weights="dram"),
    overheads=Overheads(cmd_issue=1, dma_in_channels=2, dma_out_channels=1))



def _ethos_u(name: str, ublock: tuple[int, int, int], shram_banks: int, ppu_scale: float,
             u65: str = "", cores: int = 1) -> NPUConfig:
    """An Ethos-U configuration as Vela's architecture_features gives it (OFM micro-block, SHRAM banks of 1 KiB,
    output cycles per element relative to the 256-MAC table) on Vela's default system config: U55 on
    Ethos_U55_High_End_Embedded + Shared_Sram (SRAM 8 B/cycle, off-chip flash 1 B/cycle at 500 MHz), U65 on
    Ethos_U65_Client_Server (SRAM 16 B/cycle, DRAM 12 B/cycle at 1 GHz, 16 reads in flight = Sram_max_reads as
    the U55's 4). U65 memory modes: ``dedicated`` is Vela's default Dedicated_Sram_384KB (the network's input and
    output tensors in DRAM, the NPU's intermediate maps in its SRAM; a first layer reading a shallow NHWC input
    from DRAM pays the DRAM's 128-byte bursts), ``shared`` is Shared_Sram (every feature map in SRAM). Weights
    are in DRAM in both. Intermediate maps larger than Vela's 384 KiB SRAM cache stay in SRAM here (Vela spills
    them to DRAM)."""
    h, w, c = ublock
    base = _U55_256
    ppu = replace(base.ppu, cycles_per_element=tuple((op, v * ppu_scale) for op, v in base.ppu.cycles_per_element),
                  float_scale=False)   # Ethos-U's output stage is fixed-point only
    mac = replace(base.mac, ublock_h=h, ublock_w=w, ublock_c=c, cores=cores)
    if h * w * c == 4:
        # Vela: the 32-MAC U55 pools one cycle per tap whatever the element size and waits 3 cycles per step
        mac = replace(mac, pool_tap_cycles=1, step_delay=3)
    cfg = replace(base, name=name, mac=mac, ppu=ppu,
                  local_buffers=(LocalBuffer("shram", (shram_banks - 2) * KIB, ("ifm", "acc", "ofm")),
                                 base.local_buffers[1]))
    if u65:
        cfg = replace(cfg, clock_hz=1e9,
                      memory_areas=(MemoryArea("sram", 16.0, 32, 32, 32), MemoryArea("dram", 12.0, 500, 250, 128)),
                      placement=Placement(feature_maps="sram", weights="dram",
                                          io="dram" if u65 == "dedicated" else ""),
                      overheads=replace(base.overheads, dma_in_channels=16))
    return cfg


_ETHOS_U = tuple(_ethos_u(*a) for a in (
    ("ethos-u55-32", (1, 1, 4), 16, 8.0), ("ethos-u55-64", (1, 1, 8), 16, 4.0),
    ("ethos-u55-128", (1, 2, 8), 24, 2.0), ("ethos-u55-256", (2, 2, 8), 48, 1.0),
    ("ethos-u65-256", (2, 2, 8), 48, 1.0, "dedicated"), ("ethos-u65-256-shared", (2, 2, 8), 48, 1.0, "shared"),
    # two 256-MAC cores (2x2x8 each) sharing every block's OFM depth, as Vela models them: a block's MAC cycles
    # divided by the core count, half the output cycles per element (regor s_EthosU65Configs / PerfInfo)
    ("ethos-u65-512", (2, 2, 8), 48, 0.5, "dedicated", 2),
    ("ethos-u65-512-shared", (2, 2, 8), 48, 0.5, "shared", 2)))

PRESETS: dict[str, NPUConfig] = {c.name: c for c in (_N78, _VTA, _U55_256) + _ETHOS_U}


def preset(name: str) -> NPUConfig:
    if name not in PRESETS:
        raise ConfigError(f"unknown NPU preset {name!r}" + _suggest(name, PRESETS),
                          hint="presets: " + ", ".join(PRESETS))
    return PRESETS[name]


# ---------------------------------------------------------------------------------------------------- TOML

_SECTIONS = {"mac": MacArray, "ppu": PostProcessing, "placement": Placement, "overheads": Overheads}
_TOP_KEYS = ("name", "base", "clock_hz", "weight_compression", "weight_encoding", "fm_channel_quantum", "mac", "ppu", "placement", "overheads",
             "local_buffer", "memory_area")


def load_config(path: str | Path) -> NPUConfig:
    """Read a TOML config (``base = "<preset>"`` starts from a preset and overrides the given fields)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read NPU config {str(p)!r}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"NPU config {str(p)!r} is not UTF-8 text (byte {e.start})") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"NPU config {str(p)!r} is not valid TOML: {e}") from e
    return config_from_dict(data, source=str(p))


def config_from_dict(data: dict[str, Any], source: str = "<dict>") -> NPUConfig:
    problems: list[str] = []
    for k in data:
        if k not in _TOP_KEYS:
            problems.append(f"unknown key {k!r}" + _suggest(k, _TOP_KEYS))
    base_name = data.get("base")
    if base_name is not None and base_name not in PRESETS:
        problems.append(f"base = {base_name!r} is not a preset" + _suggest(str(base_name), PRESETS))
        base_name = None
    base = PRESETS[base_name] if base_name else _U55_256
    if base_name is None:
        # Without a base every section must be given in full (no silent defaults from an unrelated preset).
        for k in ("clock_hz", "mac", "ppu", "local_buffer", "memory_area"):
            if k not in data:
                problems.append(f"missing {k!r} (or set base = \"<preset>\")")
    if not isinstance(data.get("name", ""), str):
        problems.append(f"name must be a string, got {data['name']!r}")
    changes: dict[str, Any] = {"name": str(data.get("name", f"{base.name}+{Path(source).stem}"))}
    for k in ("clock_hz", "weight_compression"):
        if k in data:
            changes[k] = _number(data[k], k, problems)
    if "fm_channel_quantum" in data:
        v = data["fm_channel_quantum"]
        if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
            changes["fm_channel_quantum"] = v
        else:
            problems.append(f"fm_channel_quantum must be an integer >= 1, got {v!r}")
    if "weight_encoding" in data:
        if isinstance(data["weight_encoding"], str):
            changes["weight_encoding"] = data["weight_encoding"]
        else:
            problems.append(f"weight_encoding must be a string, got {data['weight_encoding']!r}")
    for sec, cls in _SECTIONS.items():
        if sec in data:
            changes[sec] = _section(getattr(base, sec), cls, data[sec], sec, problems)
    if "local_buffer" in data:
        changes["local_buffers"] = tuple(_table_list(data["local_buffer"], "local_buffer", LocalBuffer, problems))
    if "memory_area" in data:
        changes["memory_areas"] = tuple(_table_list(data["memory_area"], "memory_area", MemoryArea, problems))
    if problems:
        raise ConfigError(f"NPU config {source!r}: {len(problems)} problem(s)",
                          notes=tuple("  - " + p for p in problems))
    try:
        cfg = replace(base, **changes)
    except TypeError as e:
        raise ConfigError(f"NPU config {source!r}: {e}") from e
    return cfg.validate()


def _number(v, key, problems):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        problems.append(f"{key} must be a number, got {v!r}")
        return 0
    return v


_KIND_CHECKS = {
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "float": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "tuple[str, ...]": (lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v),
                        "an array of strings"),
}


def _well_typed(cls, key: str, v, where: str, problems: list[str]) -> bool:
    """A TOML value of the field's type (a wrong type is a listed problem, never a TypeError later)."""
    annotation = next((str(f.type) for f in fields(cls) if f.name == key), "")
    check = _KIND_CHECKS.get(annotation)
    if check is None or check[0](v):
        return True
    problems.append(f"{where} must be {check[1]}, got {v!r}")
    return False


def _section(base, cls, table, sec, problems):
    if not isinstance(table, dict):
        problems.append(f"[{sec}] must be a table, got {type(table).__name__}")
        return base
    known = [f.name for f in fields(cls)]
    vals = {}
    for k, v in table.items():
        if k not in known:
            problems.append(f"unknown key {sec}.{k}" + _suggest(k, known))
            continue
        if sec == "ppu" and k == "cycles_per_element":
            if not isinstance(v, dict) or not all(isinstance(c, (int, float)) and not isinstance(c, bool)
                                                  for c in v.values()):
                problems.append("ppu.cycles_per_element must be a table of op = cycles (numbers)")
                continue
            merged = dict(base.cycles_per_element)
            merged.update(v)
            v = tuple((op, float(c)) for op, c in merged.items())
        elif not _well_typed(cls, k, v, f"{sec}.{k}", problems):
            continue
        vals[k] = v
    return replace(base, **vals)


def _table_list(items, sec, cls, problems):
    if not isinstance(items, list):
        problems.append(f"[[{sec}]] must be an array of tables")
        return []
    known = [f.name for f in fields(cls)]
    out = []
    for i, t in enumerate(items):
        if not isinstance(t, dict):
            problems.append(f"{sec}[{i}] must be a table, got {type(t).__name__}")
            continue
        bad = [k for k in t if k not in known]
        for k in bad:
            problems.append(f"{sec}[{i}]: unknown key {k!r}" + _suggest(k, known))
        if "name" not in t:
            problems.append(f"{sec}[{i}]: missing 'name'")
            continue
        if bad or not all([_well_typed(cls, k, v, f"{sec}[{i}].{k}", problems) for k, v in t.items()]):
            continue
        vals = dict(t)
        if "holds" in vals:
            vals["holds"] = tuple(vals["holds"])
        try:
            out.append(cls(**vals))
        except TypeError as e:
            problems.append(f"{sec}[{i}] ({t.get('name')}): {e}")
    return out
