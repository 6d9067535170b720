"""The CLI's glue over the runtime: NPU configs as the user named them, builds, artifacts.

* ``resolve_npu_config``: ``--npu-config`` (a preset name, a TOML file, or the default preset) through the
  runtime's resolver, remembering how the user named it.
* ``build_module``: ``byoc.build`` (the ``npu`` codegen is npu_sim's compiler and simulator,
  ``runtime/npu_codegen.py``); an ``NpuRecorder`` collects the compiled programs and, when asked, every tensor
  the NPU programs left in their memory (``byoc compare``'s intermediates).
* ``export_module`` / ``load_artifact``: ``module.export(path)`` and ``byoc.load(path)`` (``runtime/artifact.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["NpuConfigChoice", "resolve_npu_config", "simulator_config", "NpuRecorder", "build_module",
           "export_module", "load_artifact", "LoadedArtifact", "attach_recorder"]


@dataclass(frozen=True, eq=False)
class NpuConfigChoice:
    """An NPU configuration and how the user named it."""
    config: Any             # npu_sim.NPUConfig
    preset: str | None
    path: str | None = None

    @property
    def name(self) -> str:
        return self.config.name


def resolve_npu_config(spec: str | None) -> NpuConfigChoice:
    """``--npu-config``: a preset name, a TOML file path, or None for the default preset."""
    import npu_sim
    from runtime.npu_codegen import DEFAULT_PRESET, resolve_npu_config as resolve
    cfg = resolve(spec)
    name = DEFAULT_PRESET if spec is None else spec
    return NpuConfigChoice(cfg, name if name in npu_sim.PRESETS else None, None if name in npu_sim.PRESETS else spec)


def simulator_config(target: str, spec: str | None) -> NpuConfigChoice | None:
    """``--npu-config`` (or the target codegen's default) for a target whose codegen is the NPU simulator
    (``npu``, ``vta``, a user's ``register_simulator_codegen``); None for any other target."""
    from runtime.npu_codegen import simulator_codegen_for
    cg = simulator_codegen_for(target)
    if cg is None:
        return None
    if spec is None and cg.npu_config is not None:
        import npu_sim
        name = cg.npu_config.name
        return NpuConfigChoice(cg.npu_config, name if npu_sim.PRESETS.get(name) == cg.npu_config else None)
    return resolve_npu_config(spec)


@dataclass(eq=False)
class NpuRecorder:
    """Programs by partition symbol and, with ``keep_tensors``, the bytes of every named NPU tensor (activation
    and output regions) after each run."""
    keep_tensors: bool = False
    programs: dict[str, Any] = field(default_factory=dict)
    tensors: dict[str, tuple[str, bytes]] = field(default_factory=dict)   # tensor name -> (partition, bytes)

    def capture(self, partition: str, tensor: str, blob: bytes) -> None:
        self.tensors[tensor] = (partition, blob)


def attach_recorder(module, recorder: NpuRecorder | None) -> None:
    if recorder is None:
        return
    for symbol, runner in module.partitions.items():
        if hasattr(runner, "program"):
            recorder.programs[symbol] = runner.program
            if recorder.keep_tensors and hasattr(runner, "capture"):
                runner.capture = recorder.capture


def build_module(mod, target: str, npu_config: NpuConfigChoice | None = None,
                 recorder: NpuRecorder | None = None, prefer_simulator: bool = False, tuning_records=None):
    """Build ``mod`` for ``target``; returns ``(module, codegen description)``. (``prefer_simulator`` is kept
    for callers of the earlier adapter: the npu codegen is the simulator.)"""
    from ..build import HOST_TARGETS, build
    names = [t.strip() for t in target.split(",") if t.strip()]
    devices = [n for n in names if n not in HOST_TARGETS]
    configs = [c for c in (simulator_config(n, None) for n in devices) if c is not None]
    if not configs:
        return build(mod, target=target), (f"the {', '.join(devices)} codegen" if devices else "llvm")
    cfg = npu_config.config if npu_config is not None else configs[0].config
    opts = {"npu_config": npu_config.config} if npu_config is not None else {}
    if tuning_records is not None:
        opts["tuning_records"] = tuning_records
    module = build(mod, target=target, **opts)
    attach_recorder(module, recorder)
    return module, f"npu_sim ({cfg.name})"


@dataclass(frozen=True, eq=False)
class LoadedArtifact:
    module: Any             # runtime.module.GraphModule
    input_names: tuple[str, ...]
    meta: dict
    func: Any = None        # the typed main (input types for random inputs)
    npu_config: NpuConfigChoice | None = None
    partitioned: Any = None


def export_module(exe, pmod, path: str, target: str, npu_config: NpuConfigChoice | None, model: str) -> str:
    """Write the compiled module; returns a description of the format."""
    exe.export(path)
    from runtime.artifact import FORMAT, FORMAT_VERSION
    return f"{FORMAT} v{FORMAT_VERSION}"


def load_artifact(path: str, recorder: NpuRecorder | None = None) -> LoadedArtifact:
    import byoc
    module = byoc.load(path)
    attach_recorder(module, recorder)
    cfg = module.npu_config
    main = module.main
    return LoadedArtifact(module, tuple(p.name_hint for p in main.params), dict(module.artifact_meta or {}), main,
                          NpuConfigChoice(cfg, None) if cfg is not None else None, module.source)
