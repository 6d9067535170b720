"""Support decisions with reasons, and checks built from rules that describe themselves in words.

A composite check or a ``target.<name>`` op predicate may return a plain bool (TVM style) or a ``Support``.
``Check`` bundles ``Rule``s; each rule carries the sentence that explains it, so the same object decides,
explains a refusal ("strides are 1..3 in each dimension: found (4, 4)") and prints the rule list for the CLI.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from ...ir.expr import Expr

__all__ = ["Support", "Rule", "Check", "MatchContext", "rule", "evaluate_check", "describe_check"]


@dataclass(frozen=True)
class Support:
    """Whether a target takes an op/composite, and why not. ``applies=False`` marks "this pattern is not meant
    for this node" (a guard failed), a weaker statement than a hardware refusal."""
    ok: bool
    reason: str = ""
    applies: bool = True

    def __bool__(self) -> bool:
        return self.ok

    @staticmethod
    def yes() -> "Support":
        return _YES

    @staticmethod
    def no(reason: str) -> "Support":
        return Support(False, reason)


_YES = Support(True)


@dataclass(frozen=True)
class MatchContext:
    """What a rule sees: the matched root call (typed) and the named captures of the match."""
    root: Expr
    captures: Mapping[str, Expr] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Expr:
        return self.captures[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.captures.get(name, default)


@dataclass(frozen=True)
class Rule:
    """One hardware rule. ``test(ctx)`` returns True/None when satisfied, False or a detail string otherwise."""
    description: str
    test: Callable[[MatchContext], Any]
    guard: bool = False

    def evaluate(self, ctx: MatchContext) -> Support:
        out = self.test(ctx)
        if out is None or out is True:
            return _YES
        return self.refusal(out)

    def refusal(self, out: Any) -> Support:
        """The refusal for a test result other than None/True."""
        detail = out if isinstance(out, str) else ""
        reason = f"{self.description}: {detail}" if detail else self.description
        return Support(False, reason, applies=not self.guard)


def rule(description: str, *, guard: bool = False) -> Callable[[Callable[[MatchContext], Any]], Rule]:
    """Decorator: ``@rule("strides are 1..3")`` turns ``def f(ctx) -> None | str`` into a ``Rule``."""
    def wrap(fn: Callable[[MatchContext], Any]) -> Rule:
        return Rule(description, fn, guard)
    return wrap


@dataclass(frozen=True)
class Check:
    """All rules must hold; guards are evaluated first. Callable on a ``MatchContext`` or a bare root call."""
    rules: tuple[Rule, ...]
    summary: str = ""

    def __post_init__(self):
        object.__setattr__(self, "rules", tuple(sorted(self.rules, key=lambda r: not r.guard)))

    def __call__(self, ctx_or_root) -> Support:
        ctx = ctx_or_root if isinstance(ctx_or_root, MatchContext) else MatchContext(ctx_or_root)
        for r in self.rules:
            if type(r) is Rule:  # Rule.evaluate inlined: checks run once per match
                out = r.test(ctx)
                if out is None or out is True:
                    continue
                return r.refusal(out)
            s = r.evaluate(ctx)
            if not s.ok:
                return s
        return _YES

    def describe(self) -> list[str]:
        return [("applies when " if r.guard else "") + r.description for r in self.rules]


def evaluate_check(check, root: Expr, captures: Mapping[str, Expr] | None = None, *,
                   label: str = "check") -> Support:
    """Run a TVM-style ``check(root) -> bool``, a ``Support``-returning callable or a ``Check``.

    A check that raises propagates, as in TVM: a ``PatternCheckError`` naming the table entry (``label``) and
    the op, chained to the original exception. Swallowing it into a refusal once kept every convolution of a
    ported table on the CPU without a word (a check that called a missing method).
    """
    if check is None:
        return _YES
    try:
        if isinstance(check, Check):
            out = check(MatchContext(root, dict(captures or {})))
        else:
            out = check(root)
    except Exception as e:  # noqa: BLE001 - re-raised with the entry and op named
        raise check_error(label, root, e) from e
    if isinstance(out, Support):
        return out
    if out:
        return _YES
    name = getattr(check, "__name__", None) or type(check).__name__
    return Support(False, f"{label} {name} returned {out!r}")


def check_error(label: str, root: Expr, error: Exception) -> Exception:
    """The error for a check that raised: names the table entry and the matched op."""
    from ...errors import PatternCheckError
    op = getattr(getattr(root, "op", None), "name", None) or type(root).__name__
    return PatternCheckError(f"{label} raised {type(error).__name__} on {op}: {error}",
                             hint="the check function itself failed (not a refusal); fix the check or return False",
                             entry=label, op=op, cause=error)


def describe_check(check) -> list[str]:
    """Rule sentences of a check (a ``Check``'s rules, else the first docstring line of a function)."""
    if check is None:
        return []
    if isinstance(check, Check):
        return check.describe()
    doc = (getattr(check, "__doc__", None) or "").strip()
    return [doc.splitlines()[0]] if doc else []
