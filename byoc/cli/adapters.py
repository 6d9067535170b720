"""Thin adapters over subsystems whose public API is still being finished.

* ``SimCodegen``: an NPU codegen for ``Compiler="npu"`` partitions built directly on ``npu_sim.compile`` and the
  simulator's ``Machine``; used when no ``npu`` codegen is registered with ``byoc.build``. It can record every
  tensor an NPU program left in its memory areas (compare's intermediates) and the programs it ran (profiles).
* ``build_module``: ``byoc.build`` with the registered codegens, or with ``SimCodegen`` passed as an extern
  without registering anything globally (so a later registration by the runtime is never shadowed).
* ``export_module`` / ``load_artifact``: ``module.export(path)`` and ``byoc.load(path)`` when the runtime provides
  them, else a container (``runtime.container``) holding the partitioned IR text, rebuilt on load.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ArtifactError, ConfigError

__all__ = ["NpuConfigChoice", "resolve_npu_config", "SimCodegen", "NpuRecorder", "build_module",
           "export_module", "load_artifact", "LoadedArtifact", "ARTIFACT_FORMAT"]

ARTIFACT_FORMAT = "byoc.cli/ir-text/1"
DEFAULT_PRESET = "ethos-u55-256-like"


@dataclass(frozen=True, eq=False)
class NpuConfigChoice:
    """An NPU configuration and how the user named it (kept so an artifact can record it)."""
    config: Any             # npu_sim.NPUConfig
    preset: str | None
    toml_text: str | None

    @property
    def name(self) -> str:
        return self.config.name


def resolve_npu_config(spec: str | None) -> NpuConfigChoice:
    """``--npu-config``: a preset name, a TOML file path, or None for the default preset."""
    import npu_sim
    if spec is None:
        return NpuConfigChoice(npu_sim.preset(DEFAULT_PRESET), DEFAULT_PRESET, None)
    if spec in npu_sim.PRESETS:
        return NpuConfigChoice(npu_sim.preset(spec), spec, None)
    if os.path.exists(spec):
        try:
            with open(spec, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"cannot read NPU config {spec!r}: {e}") from None
        return NpuConfigChoice(_config_from_toml(text, spec), None, text)
    raise ConfigError(f"--npu-config {spec!r} is neither a preset nor an existing file",
                      hint="presets: " + ", ".join(npu_sim.PRESETS))


def _config_from_toml(text: str, source: str):
    from npu_sim.config import config_from_dict
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"NPU config {source!r} is not valid TOML: {e}") from None
    return config_from_dict(data, source=source)


# ------------------------------------------------------------------------------------------ NPU codegen

@dataclass(eq=False)
class NpuRecorder:
    """What ``SimCodegen`` saw: compiled programs by symbol and, when asked, the bytes of every named tensor
    (activation and output regions) after each run."""
    keep_tensors: bool = False
    programs: dict[str, Any] = field(default_factory=dict)
    tensors: dict[str, tuple[str, bytes]] = field(default_factory=dict)   # tensor name -> (partition, bytes)


class SimCodegen:
    """``fn(func, symbol) -> runner`` for ``Compiler="npu"`` functions, on npu_sim."""

    def __init__(self, config, recorder: NpuRecorder | None = None):
        self.config = config
        self.recorder = recorder

    def __call__(self, func, symbol: str):
        import npu_sim
        from npu_sim.execute import Machine
        prog = npu_sim.compile(func, self.config, symbol)
        names = [p.name_hint for p in func.params]
        rec = self.recorder
        if rec is not None:
            rec.programs[symbol] = prog

        def run(arrays: list[np.ndarray]) -> list[np.ndarray]:
            m = Machine(prog)
            m.write_inputs(dict(zip(names, arrays)))
            m.run()
            if rec is not None and rec.keep_tensors:
                for r in prog.regions:
                    if r.kind in ("activation", "output"):
                        rec.tensors[r.name] = (symbol, m.mem[r.area][r.base:r.base + r.size].tobytes())
            return m.read_outputs()

        return run


def registered_npu_codegen() -> bool:
    from ..build import registered_codegens
    return "npu" in registered_codegens()


def build_module(mod, target: str, npu_config: NpuConfigChoice | None = None,
                 recorder: NpuRecorder | None = None, prefer_simulator: bool = False):
    """Build ``mod`` for ``target``; returns ``(executable, codegen description)``."""
    from ..build import _parse_target, build  # noqa: PLC2701 - same validation as build itself
    names = [t.strip() for t in target.split(",") if t.strip()]
    if "npu" not in names:
        return build(mod, target=target), "llvm"
    cfg = (npu_config or resolve_npu_config(None)).config
    if registered_npu_codegen() and not prefer_simulator:
        return build(mod, target=target, npu_config=cfg), "registered npu codegen"
    from ..backend.llvm.executor import compile_function
    from ..interpreter import bind_params
    from ..ir.expr import Expr
    from ..ir.module import IRModule
    from ..transform.infer_type import InferType
    others = [n for n in names if n != "npu"]
    _parse_target(",".join(others))
    if isinstance(mod, Expr):
        mod = IRModule.from_expr(mod)
    mod = InferType()(bind_params(mod, None))
    exe = compile_function(mod["main"], externs={"npu": SimCodegen(cfg, recorder)}, mod=mod)
    return exe, f"npu_sim ({cfg.name})"


# --------------------------------------------------------------------------------------------- artifacts

@dataclass(frozen=True, eq=False)
class LoadedArtifact:
    module: Any             # something with run(inputs) -> list[np.ndarray]
    input_names: tuple[str, ...]
    meta: dict
    func: Any = None        # main, when the artifact carries IR (input types for random inputs)
    npu_config: NpuConfigChoice | None = None
    partitioned: Any = None


def export_module(exe, pmod, path: str, target: str, npu_config: NpuConfigChoice | None, model: str) -> str:
    """Write the compiled module; returns a description of the format used."""
    if hasattr(exe, "export"):
        exe.export(path)
        return "runtime artifact"
    from runtime.container import write_container
    meta = {"format": ARTIFACT_FORMAT, "target": target, "model": os.path.basename(model),
            "npu_preset": npu_config.preset if npu_config else None}
    sections = {"ir": pmod.astext(show_meta_data=True).encode("utf-8")}
    if npu_config is not None and npu_config.toml_text is not None:
        sections["npu_config.toml"] = npu_config.toml_text.encode("utf-8")
    try:
        write_container(path, meta, sections)
    except OSError as e:
        raise ArtifactError(f"cannot write artifact {path!r}: {e.strerror or e}") from None
    return "byoc container (IR, rebuilt on load)"


def load_artifact(path: str, recorder: NpuRecorder | None = None) -> LoadedArtifact:
    from runtime.container import read_container
    meta, sections = read_container(path)
    if meta.get("format") != ARTIFACT_FORMAT:
        try:
            import byoc
            loaded = byoc.load(path)
        except ImportError:
            raise ArtifactError(f"{path}: artifact format {meta.get('format')!r} needs the runtime's loader "
                                f"(byoc.load), which is not available in this installation") from None
        names = tuple(getattr(loaded, "input_names", ()) or ())
        return LoadedArtifact(loaded, names, meta)
    from ..text.parser import parse
    from ..transform.infer_type import InferType
    if "ir" not in sections:
        raise ArtifactError(f"{path}: artifact has no 'ir' section", hint="recompile with byoc compile")
    try:
        text = sections["ir"].decode("utf-8")
    except UnicodeDecodeError as e:
        raise ArtifactError(f"{path}: 'ir' section is not UTF-8 (byte {e.start})") from None
    pmod = InferType()(parse(text))
    cfg = None
    target = str(meta.get("target", "llvm"))
    if "npu" in target.split(","):
        if "npu_config.toml" in sections:
            cfg = NpuConfigChoice(_config_from_toml(sections["npu_config.toml"].decode("utf-8"), path), None,
                                  sections["npu_config.toml"].decode("utf-8"))
        else:
            cfg = resolve_npu_config(meta.get("npu_preset") or None)
    exe, _ = build_module(pmod, target, cfg, recorder=recorder)
    main = pmod["main"]
    return LoadedArtifact(exe, tuple(p.name_hint for p in main.params), meta, main, cfg, pmod)

