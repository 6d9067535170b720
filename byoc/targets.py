"""Your own targets: pattern tables and codegens from a Python file or from an installed package.

Two ways to bring a target to every command (partition, compile, run, compare, profile, report, patterns):

* ``byoc ... --patterns FILE.py`` (``load_target_file``): the file is **executed as Python** (as ``import``
  would); it registers pattern tables (``@register_pattern_table("myacc")``) and, to build and run the
  partitions, a codegen (``register_simulator_codegen`` onto the NPU simulator, or ``register_codegen`` for
  your own runner). Pass only files you trust.
* An installed distribution's ``byoc.targets`` entry point (``ENTRY_POINT_GROUP``) named after the target, e.g.
  in its pyproject.toml ``[project.entry-points."byoc.targets"] myacc = "myacc_byoc"``: the first time a command
  asks for target ``myacc`` (its pattern table or its codegen), the module is imported (and, when the entry
  point names a function, ``"myacc_byoc:register"``, that function is called with no arguments).

Every failure (missing file, syntax error, an exception while loading, a file that registers nothing) is a
``PluginError`` naming the file or the entry point; the CLI exits with 3. docs/targets.md is the full contract.

For convenience this module re-exports the registration functions a target file needs:
``register_pattern_table``, ``register_op_predicate``, ``register_codegen``, ``register_simulator_codegen`` and
``LAYER_KINDS``.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import re
import sys
import traceback
import types
from dataclasses import dataclass

from .errors import ByocError, PluginError

__all__ = ["ENTRY_POINT_GROUP", "LoadedTargets", "load_target_file", "load_entry_point", "entry_point_names",
           "register_pattern_table", "register_op_predicate", "register_codegen", "register_simulator_codegen",
           "LAYER_KINDS"]

ENTRY_POINT_GROUP = "byoc.targets"

_REEXPORTS = {"register_pattern_table": ("patterns.registry", "register_pattern_table"),
              "register_op_predicate": ("patterns.registry", "register_op_predicate"),
              "register_codegen": ("byoc.build", "register_codegen"),
              "register_simulator_codegen": ("runtime.npu_codegen", "register_simulator_codegen"),
              "LAYER_KINDS": ("npu_sim.layer_kinds", "LAYER_KINDS")}


def __getattr__(name):
    if name in _REEXPORTS:
        module, attr = _REEXPORTS[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'byoc.targets' has no attribute {name!r}")


@dataclass(frozen=True)
class LoadedTargets:
    """What one target file (or entry point) registered."""
    source: str
    tables: tuple[str, ...]
    codegens: tuple[str, ...]
    custom_kernels: tuple[str, ...] = ()   # TFLite custom op names given a kernel (byoc.register_custom_kernel)


_FILES: dict[str, LoadedTargets] = {}    # real path → what it registered (a file is executed once)
_ENTRY_POINTS: dict[str, str] = {}       # target name → the entry point's value, once loaded


def _registrations() -> tuple[dict, dict, dict]:
    from patterns.registry import table_functions
    from .build import codegen_entries
    from .ops.custom import custom_kernels
    return table_functions(), codegen_entries(), custom_kernels()


def _changed(before: dict, after: dict) -> tuple[str, ...]:
    return tuple(sorted(k for k, v in after.items() if before.get(k) is not v))


def _where(e: BaseException, path: str) -> str:
    """``path:line`` of the deepest frame of ``e``'s traceback inside ``path`` (just ``path`` if none)."""
    line = None
    for frame in traceback.extract_tb(e.__traceback__):
        if os.path.abspath(frame.filename) == path:
            line = frame.lineno
    return f"{path}:{line}" if line else path


def load_target_file(path: str | os.PathLike) -> LoadedTargets:
    """Execute the Python file ``path`` (once per process) and return the pattern tables and codegens it
    registered; every table it registered is built at once, so a table that raises is reported here."""
    shown = os.fspath(path)
    real = os.path.realpath(shown)
    if real in _FILES:
        return _FILES[real]
    if not os.path.isfile(real):
        why = "is a directory" if os.path.isdir(real) else "does not exist"
        raise PluginError(f"target file {shown!r} {why}",
                          hint="--patterns takes a Python file that registers pattern tables (and codegens)")
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(real))[0])
    name = f"byoc_target_file_{stem}_{hashlib.sha1(real.encode()).hexdigest()[:8]}"
    loader = importlib.machinery.SourceFileLoader(name, real)
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    before = _registrations()
    sys.modules[name] = module  # dataclasses and pickling look classes up by module name
    try:
        loader.exec_module(module)
    except SyntaxError as e:
        sys.modules.pop(name, None)
        raise PluginError(f"{shown}:{e.lineno}: syntax error in target file: {e.msg}",
                          notes=(f"    {e.text.rstrip()}",) if e.text else ()) from None
    except ByocError as e:
        sys.modules.pop(name, None)
        raise PluginError(f"{_where(e, real)}: loading target file {shown!r} failed: {e.message}", notes=e.notes,
                          hint=e.hint) from None
    except Exception as e:  # noqa: BLE001 - the user's code: any failure is bad input, named with its file
        sys.modules.pop(name, None)
        raise PluginError(f"{_where(e, real)}: target file {shown!r} raised {type(e).__name__}: {e}",
                          hint="fix the file (set BYOC_TRACEBACK=1 for the full traceback)") from None
    after = _registrations()
    loaded = LoadedTargets(shown, _changed(before[0], after[0]), _changed(before[1], after[1]),
                           _changed(before[2], after[2]))
    if not loaded.tables and not loaded.codegens and not loaded.custom_kernels:
        raise PluginError(f"target file {shown!r} registered no pattern table and no codegen (nor a custom-op "
                          f"kernel)",
                          hint="decorate a table function with @patterns.register_pattern_table('<target>') and "
                               "register its codegen with byoc.targets.register_simulator_codegen (docs/targets.md); "
                               "a TFLite custom op's kernel with byoc.register_custom_kernel (docs/custom-ops.md)")
    _check_tables(loaded.tables, shown)
    _FILES[real] = loaded
    return loaded


def _check_tables(targets, source: str) -> None:
    from patterns.registry import get_pattern_table
    for t in targets:
        try:
            get_pattern_table(t)
        except ByocError as e:  # the registry's message names the table function's file and line
            named = source in e.message or os.path.realpath(source) in e.message
            raise PluginError(e.message if named else f"{source}: {e.message}", notes=e.notes,
                              hint=e.hint) from None


def _entry_points(name: str | None = None) -> list:
    eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return [ep for ep in eps if name is None or ep.name == name]


def entry_point_names() -> list[str]:
    """Target names offered by installed ``byoc.targets`` entry points (nothing is imported)."""
    return sorted({ep.name for ep in _entry_points()})


def load_entry_point(name: str) -> bool:
    """Load the ``byoc.targets`` entry point named ``name`` (once); False when there is none."""
    if name in _ENTRY_POINTS:
        return True
    eps = _entry_points(name)
    if not eps:
        return False
    ep = eps[0]
    _ENTRY_POINTS[name] = ep.value  # before loading: a plugin that asks for its own target does not loop
    where = f"byoc.targets entry point {name!r} ({ep.value})"
    before = _registrations()
    try:
        obj = ep.load()
        if callable(obj) and not isinstance(obj, (type, types.ModuleType)):
            obj()
    except ByocError as e:
        _ENTRY_POINTS.pop(name, None)
        raise PluginError(f"{where} failed to load: {e.message}", notes=e.notes, hint=e.hint) from None
    except Exception as e:  # noqa: BLE001 - a third-party plugin: its failure is named, not a crash
        _ENTRY_POINTS.pop(name, None)
        raise PluginError(f"{where} failed to load: {type(e).__name__}: {e}",
                          hint="fix or uninstall the package that provides it") from None
    after = _registrations()
    tables, codegens = _changed(before[0], after[0]), _changed(before[1], after[1])
    if name not in tables and name not in codegens and name not in after[0] and name not in after[1]:
        raise PluginError(f"{where} registered neither a pattern table nor a codegen named {name!r}",
                          hint="an entry point's name is the target it registers")
    _check_tables(tables, where)
    return True
