"""Codegens on the NPU simulator: ``npu`` (the ``npu`` table's composites) and any target with a lowering map.

``byoc.build(mod, target="npu,llvm", npu_config=...)`` hands every ``Compiler="npu"`` function to
``npu_codegen``, which compiles it once (``npu_sim.compile``) into an ``NpuPartition``: a runner the CPU graph
executor calls with the partition's input arrays. The partition keeps its ``Program`` (exported in its binary
encoding by ``module.export``; ``load_npu_partition`` decodes it again without recompiling) and, computed once
because NPU timing does not depend on the data, its cycle statistics.

Another target runs on the same simulator through a ``SimulatorCodegen`` with its lowering map (``{its composite
name: layer kind}``, ``npu_sim.layer_kinds``): ``register_simulator_codegen("myacc", {"myacc.conv_block":
"conv2d"}, npu_config="vta-default")`` registers it as the codegen of ``Compiler="myacc"`` functions. A partition
the simulator cannot run is a ``CodegenError`` naming the composite. docs/targets.md has the whole contract.

``npu_config`` is a preset name (``npu_sim.PRESETS``), the path of a TOML file, an ``npu_sim.NPUConfig`` or None
(the codegen's default: ``ethos-u55-256-like`` for ``npu``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import numpy as np

from byoc.errors import ArtifactError, CodegenError, ConfigError, NPUError

__all__ = ["DEFAULT_PRESET", "resolve_npu_config", "NpuPartition", "npu_codegen", "load_npu_partition",
           "check_program_matches", "SimulatorCodegen", "register_simulator_codegen", "simulator_codegen_for"]

DEFAULT_PRESET = "ethos-u55-256-like"
# A decoded program may not claim more NPU memory than this (a corrupt region table must not allocate GiBs).
MAX_PROGRAM_MEMORY = 1 << 30


def resolve_npu_config(spec=None):
    """An ``npu_sim.NPUConfig`` from a preset name, a TOML path, an NPUConfig, or None (the default preset)."""
    import npu_sim
    if spec is None:
        return npu_sim.preset(DEFAULT_PRESET)
    if isinstance(spec, npu_sim.NPUConfig):
        return spec.validate()
    if isinstance(spec, os.PathLike) or isinstance(spec, str):
        text = os.fspath(spec)
        if text in npu_sim.PRESETS:
            return npu_sim.preset(text)
        if os.path.exists(text):
            return npu_sim.load_config(text).validate()
        raise ConfigError(f"npu_config {text!r} is neither a preset nor an existing file",
                          hint="presets: " + ", ".join(npu_sim.PRESETS))
    raise ConfigError(f"npu_config must be a preset name, a TOML path or an npu_sim.NPUConfig, got "
                      f"{type(spec).__name__}")


@dataclass(frozen=True)
class DeviceLayer:
    """One NPU layer's share of a partition's time."""
    name: str
    kind: str
    cycles: int             # exclusive cycles: the layers of a partition sum to its total
    macs: int


@dataclass(frozen=True)
class DeviceProfile:
    """What a device runner reports about one partition, independent of the data."""
    device: str
    cycles: int
    clock_hz: float
    layers: tuple[DeviceLayer, ...]
    transfer_bytes_per_second: float   # how fast the host moves tensors in and out of the device's memory

    @property
    def seconds(self) -> float:
        return self.cycles / self.clock_hz


class NpuPartition:
    """A compiled NPU partition: ``runner(arrays) -> arrays`` on the simulator, plus its program and timing."""

    def __init__(self, program, symbol: str):
        self.program = program
        self.symbol = symbol
        self.input_names = tuple(b.name for b in program.inputs)
        self.capture: Callable[[str, str, bytes], None] | None = None   # (partition, tensor, bytes) after a run
        self._profile: DeviceProfile | None = None

    def __call__(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        from npu_sim.execute import Machine, single_threaded_blas
        m = Machine(self.program)
        m.write_inputs(dict(zip(self.input_names, arrays)))
        with single_threaded_blas():
            m.run()
        if self.capture is not None:
            for r in self.program.regions:
                if r.kind in ("activation", "linear", "output"):
                    self.capture(self.symbol, r.name, m.mem[r.area][r.base:r.base + r.size].tobytes())
        return m.read_outputs()

    def to_bytes(self) -> bytes:
        return self.program.to_bytes()

    def device_profile(self) -> DeviceProfile:
        if self._profile is None:
            from npu_sim.simulator import collect_stats, schedule
            prog = self.program
            stats = collect_stats(prog, schedule(prog))
            layers = tuple(DeviceLayer(s.name, s.kind, int(s.exclusive_cycles), int(s.macs))
                           for s in stats.per_layer)
            cfg = prog.config
            fm = cfg.area(cfg.placement.feature_maps)
            self._profile = DeviceProfile(f"npu ({cfg.name})", int(stats.total_cycles), float(cfg.clock_hz), layers,
                                          float(fm.bytes_per_cycle) * float(cfg.clock_hz))
        return self._profile

    def device_timeline(self) -> tuple[tuple[str, str, str, int, int], ...]:
        """Every command of one run as (engine, command, layer, start cycle, end cycle), in issue order (the
        schedule does not depend on the data). DMA engines keep several transfers in flight, so one engine's
        commands may overlap; ``runtime.profile`` lays them out on one track per channel."""
        from npu_sim.isa import ENGINE_NAMES
        stats = self.stats
        s, layers = stats._schedule, stats.per_layer  # noqa: SLF001 - the simulator's own schedule of this program
        return tuple((ENGINE_NAMES[int(s.engine[i])], stats._labels[i],  # noqa: SLF001
                      layers[int(s.layer[i])].name if 0 <= int(s.layer[i]) < len(layers) else "",
                      int(s.start[i]), int(s.end[i])) for i in range(len(s.start)))

    @property
    def stats(self):
        """The simulator's full ``Stats`` (per-engine busy time, roofline, trace)."""
        from npu_sim.simulator import collect_stats, schedule
        return collect_stats(self.program, schedule(self.program))

    def __repr__(self) -> str:
        return f"NpuPartition({self.symbol}, {len(self.program.commands)} commands, {self.program.config.name})"


@dataclass(frozen=True)
class SimulatorCodegen:
    """The codegen of ``target`` on the NPU simulator: ``codegen(func, symbol, options) -> NpuPartition``.

    ``composites`` is the lowering map as (composite name, layer kind) pairs, or None for the ``npu`` table's own
    ``npu.*`` composites; ``npu_config`` is the default configuration (build's ``npu_config`` option wins)."""
    target: str
    composites: tuple[tuple[str, str], ...] | None = None
    npu_config: object = None

    @property
    def composite_map(self) -> dict[str, str] | None:
        return None if self.composites is None else dict(self.composites)

    def config(self, options: dict | None = None):
        spec = (options or {}).get("npu_config")
        return resolve_npu_config(self.npu_config if spec is None else spec)

    def program(self, func, symbol: str, config):
        """The partition compiled for ``config``; a partition the simulator cannot run is refused with its
        composites named (NPUError for ``npu``, CodegenError for another target)."""
        import npu_sim
        try:
            return npu_sim.compile(func, config, symbol, composites=self.composite_map)
        except NPUError as e:
            if self.composites is None:
                raise
            raise CodegenError(f"target {self.target!r}: partition @{symbol} cannot run on the NPU simulator: "
                               f"{e.message}", notes=e.notes,
                               hint=f"map each composite to the layer kind whose body it has (docs/targets.md), "
                                    f"or refuse these cases in the {self.target!r} pattern table's checks") from None

    def __call__(self, func, symbol: str, options: dict | None = None) -> NpuPartition:
        return NpuPartition(self.program(func, symbol, self.config(options)), symbol)

    def load(self, func, symbol: str, blob: bytes, options: dict | None = None) -> NpuPartition:
        return load_npu_partition(func, symbol, blob, options)

    def __repr__(self) -> str:
        cfg = getattr(self.npu_config, "name", self.npu_config) or DEFAULT_PRESET
        kinds = "npu.* composites" if self.composites is None else f"{len(self.composites)} mapped composite(s)"
        return f"SimulatorCodegen({self.target!r}, {kinds}, default config {cfg})"


npu_codegen = SimulatorCodegen("npu")


def register_simulator_codegen(target: str, composites, *, npu_config=None, override: bool = False,
                               builtin: bool = False) -> SimulatorCodegen:
    """Register the codegen of ``Compiler=target`` partitions: each composite is lowered as the layer kind
    ``composites`` maps it to (``{"myacc.conv_block": "conv2d", ...}``; kinds: ``npu_sim.layer_kinds.
    LAYER_KINDS``) and runs on the NPU simulator, by default with ``npu_config`` (a preset name, TOML path or
    NPUConfig; None: ``ethos-u55-256-like``). ``builtin``: a registration made by the project's own modules,
    which yields to one the user made first."""
    from byoc.build import register_builtin_codegen, register_codegen
    from npu_sim.layer_kinds import check_composite_map
    kinds = check_composite_map(target, composites)
    if npu_config is not None:
        npu_config = resolve_npu_config(npu_config)
    cg = SimulatorCodegen(target, tuple(kinds.items()), npu_config)
    (register_builtin_codegen if builtin else register_codegen)(target, cg, loader=cg.load,
                                                                **({} if builtin else {"override": override}))
    return cg


def simulator_codegen_for(target: str) -> SimulatorCodegen | None:
    """The registered codegen of ``target`` when it runs on the NPU simulator, else None."""
    from byoc.build import get_codegen_entry
    entry = get_codegen_entry(target) if target else None
    return entry.compile if entry is not None and isinstance(entry.compile, SimulatorCodegen) else None


def load_npu_partition(func, symbol: str, blob: bytes, options: dict | None = None) -> NpuPartition:
    """The partition an artifact stored for ``symbol``: decoded (and validated), never recompiled."""
    from npu_sim.program import Program
    try:
        prog = Program.from_bytes(blob)
    except NPUError as e:
        raise ArtifactError(f"NPU program for @{symbol} is invalid: {e.message}", notes=e.notes,
                            hint="the artifact is corrupt; recompile the model") from None
    check_program_matches(prog, func, symbol)
    return NpuPartition(prog, symbol)


def check_program_matches(prog, func, symbol: str) -> None:
    """The program's inputs and outputs are exactly the partition function's (a program from another model,
    or a corrupt one, is refused), and its memory map is compact."""
    from byoc.ir.types import TensorType, TupleType
    params = [(p.name_hint, tuple(int(d) for d in p.checked_type.shape), str(p.checked_type.dtype))
              for p in func.params if isinstance(p.checked_type, TensorType)]
    ret = func.body.checked_type
    rets = list(ret.fields) if isinstance(ret, TupleType) else [ret]
    outs = [(tuple(int(d) for d in t.shape), str(t.dtype)) for t in rets if isinstance(t, TensorType)]
    got_in = [(b.name, tuple(b.shape), b.dtype) for b in prog.inputs]
    got_out = [(tuple(b.shape), b.dtype) for b in prog.outputs]
    problems = []
    if got_in != params:
        problems.append(f"inputs {got_in} ≠ the partition's {params}")
    if got_out != outs:
        problems.append(f"outputs {got_out} ≠ the partition's {outs}")
    tops: dict[int, int] = {}
    total = 0
    for r in prog.regions:
        tops[r.area] = max(tops.get(r.area, 0), r.base + r.size)
        total += r.size
    if total > MAX_PROGRAM_MEMORY or sum(tops.values()) > 2 * total + 4096 * (len(prog.regions) + 1):
        problems.append(f"memory map spans {sum(tops.values())} bytes for {total} bytes of regions")
    if problems:
        raise ArtifactError(f"NPU program for @{symbol} does not belong to this partition: " + "; ".join(problems),
                            hint="the artifact is corrupt or was assembled from different models")


def _register() -> None:
    from byoc.build import register_builtin_codegen
    register_builtin_codegen("npu", npu_codegen, loader=load_npu_partition)


_register()
