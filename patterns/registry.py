"""Pattern-table registry (TVM's ``register_pattern_table`` / ``get_pattern_table``) and the rule listing.

A table function is registered under a target name and called once, lazily, on first use (op names in its
patterns are validated then). Tables come from ``patterns/<target>.py``, from a user's file (``--patterns``,
``byoc.targets.load_target_file``) or from an installed package's ``byoc.targets`` entry point. ``describe_rules(target)`` turns the table's checks and the target's op
predicates into sentences — the same objects that decide are the ones that explain.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from byoc.errors import PatternError
from byoc.ops.registry import get_op_attr, list_ops
from byoc.relay.dataflow_pattern.check import Check, MatchContext, Rule, Support, describe_check, rule
from byoc.relay.dataflow_pattern.table import CompositePattern, normalize_table

__all__ = ["register_pattern_table", "get_pattern_table", "registered_targets", "describe_rules", "RuleText",
           "CompositePattern", "Check", "Rule", "Support", "MatchContext", "rule", "register_op_predicate",
           "op_predicates", "table_functions", "preferred_semantics", "set_preferred_semantics"]

_TABLE_FUNCS: dict[str, Callable[[], list]] = {}
_TABLES: dict[str, tuple[CompositePattern, ...]] = {}
_PREDICATE_OPS: dict[str, list[str]] = {}


def register_pattern_table(target: str, table: Callable[[], list] | None = None):
    """``@register_pattern_table("npu")`` on a function returning the table (list of entries, priority order)."""
    if not isinstance(target, str) or not target or "." in target:
        raise PatternError(f"pattern table target must be a non-empty name without '.', got {target!r}")

    def wrap(fn: Callable[[], list]) -> Callable[[], list]:
        _TABLE_FUNCS[target] = fn
        _TABLES.pop(target, None)
        return fn

    return wrap(table) if table is not None else wrap


# Built-in targets whose name is not a module name.
_BUILTIN_MODULES = {"ethos-u": "ethos_u"}


def _load_builtin(target: str) -> None:
    import importlib
    target = _BUILTIN_MODULES.get(target, target)
    if not target.isidentifier():  # "foo.bar", "../x": no module of this package, never an import path
        return
    try:
        importlib.import_module(f"patterns.{target}")
    except ModuleNotFoundError as e:
        if e.name != f"patterns.{target}":
            raise


def table_functions() -> dict[str, Callable[[], list]]:
    """The registered table functions by target (a copy)."""
    return dict(_TABLE_FUNCS)


def _build_table(target: str, fn: Callable[[], list]) -> tuple[CompositePattern, ...]:
    """The table function's entries, normalized. A user's table that raises or returns malformed entries is
    bad input naming its file and line; a built-in table that does is a bug and is not disguised."""
    if getattr(fn, "__module__", "").startswith("patterns."):
        return normalize_table(fn())
    code = getattr(fn, "__code__", None)
    where = code.co_filename if code else repr(fn)
    try:
        entries = fn()
    except Exception as e:  # noqa: BLE001 - the user's code
        import traceback
        lines = [f.lineno for f in traceback.extract_tb(e.__traceback__) if code and f.filename == where]
        line = lines[-1] if lines else (code.co_firstlineno if code else "?")
        msg = e.message if isinstance(e, PatternError) else f"{type(e).__name__}: {e}"
        raise PatternError(f"{where}:{line}: pattern table {target!r} ({getattr(fn, '__name__', fn)}) raised "
                           f"{msg}", hint="fix the table function") from None
    try:
        return normalize_table(entries)
    except PatternError as e:
        raise PatternError(f"{where}: pattern table {target!r}: {e.message}", hint=e.hint) from None


def get_pattern_table(target: str) -> tuple[CompositePattern, ...] | None:
    """The table registered for ``target`` (built-in tables load on first request, then ``byoc.targets`` entry
    points), or None."""
    if target not in _TABLE_FUNCS:
        _load_builtin(target)
    if target not in _TABLE_FUNCS:
        from byoc.targets import load_entry_point
        load_entry_point(target)
    if target not in _TABLE_FUNCS:
        return None
    if target not in _TABLES:
        table = _build_table(target, _TABLE_FUNCS[target])
        wrong = [e.name for e in table if e.target != target]
        if wrong:
            raise PatternError(f"pattern table {target!r} has entries named for another target: {', '.join(wrong)}",
                               hint=f"composite names must start with '{target}.'")
        _TABLES[target] = table
    return _TABLES[target]


def registered_targets() -> list[str]:
    """Targets with a pattern table: the built-in ones, those registered so far, and the names of installed
    ``byoc.targets`` entry points (loaded when their table is asked for)."""
    from byoc.targets import entry_point_names
    for t in ("npu", "vta", "example_accelerator", "ethos-u"):
        _load_builtin(t)
    return sorted(set(_TABLE_FUNCS) | set(entry_point_names()))


def register_op_predicate(target: str, op_name: str, predicate) -> None:
    """``target.<name>`` op attribute for a single op (a bool/Support function or a ``Check``)."""
    from byoc.ops.registry import register_op_attr
    register_op_attr(op_name, f"target.{target}", predicate)
    ops = _PREDICATE_OPS.setdefault(target, [])
    if op_name not in ops:
        ops.append(op_name)


def op_predicates(target: str) -> list[tuple[str, object]]:
    """(op, predicate) pairs registered for ``target`` (all registered ops are scanned, so decorator
    registrations made elsewhere are included)."""
    get_pattern_table(target)
    out = []
    for op in list_ops():
        pred = get_op_attr(op, f"target.{target}")
        if pred is not None:
            out.append((op, pred))
    return out


_PREFERRED_SEMANTICS: dict[str, str] = {}


def set_preferred_semantics(target: str, semantics: str) -> None:
    """The TFLite arithmetic ``target``'s hardware implements (``"tflm"``: fixed-point requantization everywhere,
    TFLite Micro's kernels). A model imported for that target with ``semantics="auto"`` gets it, so its layers
    can be offloaded bit-exactly and ``compare`` holds them to that reference."""
    if semantics not in ("litert", "tflm"):
        raise PatternError(f"target {target!r}: preferred semantics must be 'litert' or 'tflm', got {semantics!r}")
    _PREFERRED_SEMANTICS[target] = semantics


def preferred_semantics(target: str) -> str | None:
    """The semantics ``target`` declared (its table is loaded first), or None."""
    if target not in _PREFERRED_SEMANTICS and target not in _TABLE_FUNCS:
        try:
            get_pattern_table(target)
        except PatternError:
            return None
    return _PREFERRED_SEMANTICS.get(target)


_VENDOR_PLACEMENT: dict[str, str] = {}


def set_vendor_placement(target: str, compiler: str) -> None:
    """``target`` stands for hardware whose own compiler (``compiler``, e.g. "Vela") places every op it supports:
    partitions without multiply-accumulate work included (Ethos-N's InlineNonComputeIntensivePartitions gives
    them back) and whatever their boundaries cost. The CLI then follows that placement by default: compute-free
    partitions stay, and the boundary rule only advises (the report's notes name the layers it would give back)."""
    _VENDOR_PLACEMENT[target] = str(compiler)


def vendor_compiler(target: str) -> str | None:
    """The compiler ``target`` declared with ``set_vendor_placement`` (its table is loaded first), or None."""
    if target not in _VENDOR_PLACEMENT and target not in _TABLE_FUNCS:
        try:
            get_pattern_table(target)
        except PatternError:
            return None
    return _VENDOR_PLACEMENT.get(target)


_DESIRED_LAYOUTS: dict[str, dict[str, list[str]]] = {}


def set_desired_layouts(target: str, layouts: dict[str, list[str]]) -> None:
    """The layouts ``target``'s hardware runs ops in (ConvertLayout's ``desired_layouts``, e.g. ``{"qnn.conv2d":
    ["NHWC", "default"]}``): ``partition_for`` converts a model's other layouts (ONNX's NCHW) first."""
    if not isinstance(layouts, dict):
        raise PatternError(f"target {target!r}: desired layouts must be a dict of op name -> [data, kernel layout]")
    _DESIRED_LAYOUTS[target] = {k: list(v) for k, v in layouts.items()}


def desired_layouts(target: str) -> dict[str, list[str]] | None:
    """The layouts ``target`` declared (its table is loaded first), or None."""
    if target not in _DESIRED_LAYOUTS and target not in _TABLE_FUNCS:
        try:
            get_pattern_table(target)
        except PatternError:
            return None
    return _DESIRED_LAYOUTS.get(target)


@dataclass(frozen=True)
class RuleText:
    """What the CLI prints: one composite (or single op) and its rules in words."""
    name: str
    kind: str  # "composite" | "op"
    rules: tuple[str, ...]


def describe_rules(target: str) -> list[RuleText]:
    table = get_pattern_table(target)
    if table is None:
        known = ", ".join(registered_targets()) or "none"
        raise PatternError(f"no pattern table registered for target {target!r}", hint=f"known targets: {known}")
    out = [RuleText(e.name, "composite", tuple(e.rules() or ([e.description] if e.description else []))) for e in table]
    for op, pred in op_predicates(target):
        out.append(RuleText(op, "op", tuple(describe_check(pred))))
    return out
