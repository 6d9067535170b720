"""Pattern-table registry (TVM's ``register_pattern_table`` / ``get_pattern_table``) and the rule listing.

A table function is registered under a target name and called once, lazily, on first use (op names in its
patterns are validated then). ``describe_rules(target)`` turns the table's checks and the target's op
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
           "op_predicates"]

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


def _load_builtin(target: str) -> None:
    import importlib
    try:
        importlib.import_module(f"patterns.{target}")
    except ModuleNotFoundError as e:
        if e.name != f"patterns.{target}":
            raise


def get_pattern_table(target: str) -> tuple[CompositePattern, ...] | None:
    """The table registered for ``target`` (built-in tables load on first request), or None."""
    if target not in _TABLE_FUNCS:
        _load_builtin(target)
    if target not in _TABLE_FUNCS:
        return None
    if target not in _TABLES:
        table = normalize_table(_TABLE_FUNCS[target]())
        wrong = [e.name for e in table if e.target != target]
        if wrong:
            raise PatternError(f"pattern table {target!r} has entries named for another target: {', '.join(wrong)}",
                               hint=f"composite names must start with '{target}.'")
        _TABLES[target] = table
    return _TABLES[target]


def registered_targets() -> list[str]:
    for t in ("npu", "vta", "example_accelerator"):
        _load_builtin(t)
    return sorted(_TABLE_FUNCS)


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
