"""``byoc.build(mod, target="llvm", params=None)``: compile a module to something you can ``run``.

The host target is the llvmlite CPU backend (byoc/backend/llvm). Functions that carry a ``Compiler`` attribute
belong to another codegen, looked up by that name in a registry (``register_codegen``), so adding a target
(e.g. ``target="npu,llvm"``) plugs in here without touching the CPU backend. The ``npu`` codegen (npu_sim's
compiler and simulator, ``runtime/npu_codegen.py``) and the ``vta`` one (the same simulator with the ``vta``
table's lowering map, ``patterns/vta.py``) are registered by their modules, imported on first use; a name
registered nowhere else is looked up among the ``byoc.targets`` entry points (``byoc/targets.py``).

``build`` takes the module as given: it does not partition. Partition first (``byoc.partition_for("npu", mod,
params)``), then ``byoc.build(partitioned, target="npu,llvm", npu_config="ethos-u55-256-like")``. Building an
unpartitioned module for ``"npu,llvm"`` runs everything on the CPU.

A codegen is ``fn(func, symbol)`` or ``fn(func, symbol, options)`` (when it has a parameter named ``options``:
build's keyword options, e.g. ``{"npu_config": ...}``) returning a runner ``runner(list[np.ndarray]) ->
list[np.ndarray]``. Optional runner methods: ``to_bytes()`` (``module.export`` stores it; the codegen's
``loader(func, symbol, blob, options)`` rebuilds the runner from it on ``byoc.load`` without recompiling) and
``device_profile()`` (cycles and per-layer figures for ``module.profile()``). This is TVM's ``relay.ext.<compiler>``
contract in Python; docs/targets.md describes it with a worked example.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Callable

from .errors import CodegenError
from .interpreter import bind_params
from .ir.expr import Expr, Function
from .ir.module import IRModule

__all__ = ["build", "register_codegen", "unregister_codegen", "registered_codegens", "get_codegen_entry", "inline_composites",
           "CodegenEntry", "HOST_TARGETS", "register_builtin_codegen", "codegen_entries"]

HOST_TARGETS = ("llvm", "cpu")


@dataclass(frozen=True)
class CodegenEntry:
    name: str
    compile: Callable
    loader: Callable | None = None
    takes_options: bool = False

    def compile_with(self, options: dict) -> Callable:
        """``fn(func, symbol) -> runner`` with build's options bound (the executor's extern protocol)."""
        if self.takes_options:
            return lambda func, symbol: self.compile(func, symbol, options=options)
        return self.compile


_CODEGENS: dict[str, CodegenEntry] = {}
# Built-in codegens, imported on first use so ``import byoc.build`` stays light: name -> the module whose import
# registers it (through ``register_builtin_codegen``).
_BUILTIN: dict[str, str] = {"npu": "runtime.npu_codegen", "vta": "patterns.vta", "ethos-u": "patterns.ethos_u",
                            "ccompiler": "byoc.backend.ccompiler"}


def _takes_options(fn: Callable) -> bool:
    try:
        return "options" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def register_codegen(name: str, fn: Callable, *, loader: Callable | None = None, override: bool = False) -> Callable:
    """Register the codegen for functions whose ``Compiler`` attribute is ``name``.

    ``fn(func, symbol[, options])`` compiles one function and returns a callable taking and returning lists of
    arrays; ``loader(func, symbol, blob, options)`` (optional) rebuilds it from its runner's ``to_bytes()``."""
    if not isinstance(name, str) or not name or name in HOST_TARGETS or "," in name:
        raise CodegenError(f"invalid codegen name {name!r}", hint="a non-empty name other than llvm/cpu, no commas")
    if not callable(fn) or (loader is not None and not callable(loader)):
        raise CodegenError(f"codegen {name!r}: fn and loader must be callables")
    if (name in _CODEGENS or name in _BUILTIN) and not override:
        raise CodegenError(f"a codegen named {name!r} is already registered", hint="pass override=True to replace it")
    _BUILTIN.pop(name, None)
    _CODEGENS[name] = CodegenEntry(name, fn, loader, _takes_options(fn))
    return fn


def register_builtin_codegen(name: str, fn: Callable, *, loader: Callable | None = None) -> Callable:
    """How the project's own modules register their codegens on import: a codegen the user registered under
    the same name first is kept."""
    _BUILTIN.pop(name, None)
    if name not in _CODEGENS:
        _CODEGENS[name] = CodegenEntry(name, fn, loader, _takes_options(fn))
    return fn


def codegen_entries() -> dict[str, CodegenEntry]:
    """The codegens registered so far (a copy; built-ins not yet imported are not in it)."""
    return dict(_CODEGENS)


def unregister_codegen(name: str) -> None:
    """Remove a user codegen (tests, plugins being reloaded); unknown names are ignored."""
    _CODEGENS.pop(name, None)


def registered_codegens() -> list[str]:
    return sorted(set(_CODEGENS) | set(_BUILTIN))


def get_codegen_entry(name: str) -> CodegenEntry | None:
    """The codegen registered for ``name``: a built-in is imported, an unknown name is looked up among the
    ``byoc.targets`` entry points; None when there is none."""
    if name not in _CODEGENS and name in _BUILTIN:
        importlib.import_module(_BUILTIN.pop(name))
    if name not in _CODEGENS and name not in HOST_TARGETS:
        from .targets import load_entry_point
        load_entry_point(name)
    return _CODEGENS.get(name)


def inline_composites(mod: IRModule) -> IRModule:
    """Replace calls to ``Composite`` function literals (MergeComposite's output) and to FuseOps's primitive
    functions in main by their bodies: the host backend runs plain ops (and does its own fusion). Functions that carry a ``Compiler`` attribute are left to their codegen."""
    from .ir.expr import Call
    from .ir.traversal import rewrite_post_order
    from .transform.bind import bind
    from .transform.defuse_ops import is_primitive

    def fn(orig, new):
        if isinstance(new, Call) and isinstance(new.op, Function) and "Compiler" not in new.op.attrs \
                and ("Composite" in new.op.attrs or is_primitive(new.op)):
            return bind(new.op.body, dict(zip(new.op.params, new.args)))
        return None

    main = mod["main"]
    body = main.body
    for _ in range(4):  # composites nested in composites unfold one level per sweep
        new_body = rewrite_post_order(body, fn, enter_functions=False)
        if new_body is body:
            break
        body = new_body
    if body is main.body:
        return mod
    out = mod.copy()
    out["main"] = main.replace(body=body)
    return out


def parse_target(target) -> list[str]:
    """``"npu,llvm"`` (or a list) → validated target names, in the given order."""
    if not isinstance(target, (str, list, tuple)):
        raise CodegenError(f"target must be a string like 'npu,llvm', got {type(target).__name__}")
    names = [str(t).strip() for t in (target.split(",") if isinstance(target, str) else list(target))
             if str(t).strip()]
    if not names:
        raise CodegenError("empty target", hint='use target="llvm"')
    unknown = [t for t in names if t not in HOST_TARGETS and get_codegen_entry(t) is None]
    if unknown:
        raise CodegenError(f"unknown target(s) {', '.join(unknown)}: no codegen registered",
                           hint=f"known: {', '.join(HOST_TARGETS + tuple(registered_codegens()))}; a target's "
                                f"pattern table partitions, its codegen builds and runs the partitions: register "
                                f"one (byoc.targets.register_simulator_codegen or byoc.build.register_codegen) in "
                                f"the file you pass with --patterns, or in a byoc.targets entry point")
    if not any(t in HOST_TARGETS for t in names):
        raise CodegenError(f"target {target!r} has no host target for the graph itself", hint='add "llvm"')
    return names


def build(mod, target="llvm", params: dict | None = None, *, num_threads: int = 1, **options):
    """Compile ``mod`` (an IRModule, Function or expression) for ``target``; returns a ``runtime.module.
    GraphModule`` with ``run(inputs: dict) -> list[numpy.ndarray]``, ``set_input``, ``run()``, ``get_output``,
    ``get_num_outputs``, ``profile()``, ``estimate()`` and ``export(path)``.

    ``target``: ``"llvm"`` (CPU only) or ``"<codegen>,llvm"`` (e.g. ``"npu,llvm"``). Options are passed to the
    codegens, e.g. ``npu_config`` (a preset name, a TOML path or an ``npu_sim.NPUConfig``). The module is built
    as given: partition it first with ``byoc.partition_for``. ``tuning_records`` (a JSON-lines file from ``byoc
    tune``, or ``npu_sim.tuning`` records) plans each NPU layer with its workload's best record; the module's
    ``tuning_notes`` name the records that did not apply."""
    from runtime.module import build_module

    names = parse_target(target)
    if isinstance(mod, Expr):
        mod = IRModule.from_expr(mod)
    if not isinstance(mod, IRModule):
        raise CodegenError(f"build expects an IRModule, Function or expression, got {type(mod).__name__}")
    if "main" not in mod or not isinstance(mod["main"], Function):
        raise CodegenError("module has no main function")
    entries = {n: get_codegen_entry(n) for n in names if n not in HOST_TARGETS}
    if options.get("npu_config") is not None and any(_on_simulator(e) for e in entries.values()):
        # resolve once (a TOML file is read once) and refuse a bad config even without partitions
        from runtime.npu_codegen import resolve_npu_config
        options["npu_config"] = resolve_npu_config(options["npu_config"])
    records = options.pop("tuning_records", None)
    externs = {n: e.compile_with(options) for n, e in entries.items()}
    if records is None:
        return build_module(mod, names, params, externs, options, num_threads=num_threads)
    # Tuning records (``byoc tune``): the NPU compiler plans each layer with its workload's best record.
    from npu_sim.tuning import apply_history_best
    with apply_history_best(records) as chooser:
        module = build_module(mod, names, params, externs, options, num_threads=num_threads)
    module.tuning_notes = tuple(chooser.notes)   # records that did not apply, and why
    module.tuned_layers = sum(lp.chosen is not lp.default for lp in chooser.layers)
    return module


def _on_simulator(entry: CodegenEntry) -> bool:
    from runtime.npu_codegen import SimulatorCodegen
    return isinstance(entry.compile, SimulatorCodegen)


def lower_for_host(mod: IRModule, params: dict | None) -> IRModule:
    """Bind params, unfold CPU composites, run TVM-form chains as their exact integer kernels and infer types:
    what the CPU executor compiles."""
    from .transform.canonicalize_qnn import canonicalize_module
    from .transform.infer_type import InferType
    return InferType()(_host_layouts(canonicalize_module(inline_composites(bind_params(mod, params)))))


# The CPU's integer convolution kernels (backend/llvm/gemm.py, depthwise.py) run NHWC: ONNX's NCHW ones are
# converted first. Integer sums are exact in any order, so the outputs do not change; float convolutions keep
# their layout (their summation order follows MLAS's, which is layout-specific).
_HOST_LAYOUTS = {"qnn.conv2d": ["NHWC", "default"]}


def _host_layouts(mod: IRModule) -> IRModule:
    from .transform.convert_layout import to_layouts
    return to_layouts(mod, _HOST_LAYOUTS, "host_layouts")


class _CallableModule(__import__("types").ModuleType):
    """``byoc.build`` is both this module and its function: importing the submodule rebinds the package
    attribute to the module, so the module itself forwards calls to ``build``."""

    def __call__(self, *args, **kwargs):
        return build(*args, **kwargs)


__import__("sys").modules[__name__].__class__ = _CallableModule
