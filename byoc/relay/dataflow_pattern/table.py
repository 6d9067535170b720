"""Pattern-table entries: ``CompositePattern(name, pattern, check)``; TVM's 2- and 3-tuples are accepted."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ...errors import PatternError
from .check import describe_check
from .pattern import DFPattern

__all__ = ["CompositePattern", "normalize_table"]


@dataclass(frozen=True)
class CompositePattern:
    """One table entry. ``name`` is ``<target>.<pattern>``; the text before the first dot is the target."""
    name: str
    pattern: DFPattern
    check: Callable[[Any], Any] | None = None
    description: str = ""

    @property
    def target(self) -> str:
        return self.name.split(".", 1)[0]

    def rules(self) -> list[str]:
        return describe_check(self.check)

    # TVM's tables are lists of (name, pattern, check) tuples: an entry unpacks and indexes the same way
    def __iter__(self):
        return iter((self.name, self.pattern, self.check))

    def __getitem__(self, index):
        return (self.name, self.pattern, self.check)[index]

    def __len__(self) -> int:
        return 3


def normalize_table(table) -> tuple[CompositePattern, ...]:
    """A list of entries in priority order; every malformed entry is reported at once."""
    if table is None:
        raise PatternError("MergeComposite needs a pattern table, got None",
                           hint="pass patterns.get_pattern_table('<target>') or a list of (name, pattern) entries")
    out: list[CompositePattern] = []
    problems: list[str] = []
    for i, entry in enumerate(table):
        if isinstance(entry, CompositePattern):
            out.append(entry)
            continue
        if isinstance(entry, (tuple, list)) and len(entry) in (2, 3):
            name, pattern = entry[0], entry[1]
            check = entry[2] if len(entry) == 3 else None
            if not isinstance(name, str) or not name:
                problems.append(f"entry {i}: name must be a non-empty string, got {name!r}")
            elif not isinstance(pattern, DFPattern):
                problems.append(f"entry {i} ({name}): pattern must be a DFPattern, got {type(pattern).__name__}")
            elif check is not None and not callable(check):
                problems.append(f"entry {i} ({name}): check must be callable, got {type(check).__name__}")
            else:
                out.append(CompositePattern(name, pattern, check))
            continue
        problems.append(f"entry {i}: expected (name, pattern[, check]) or CompositePattern, got {entry!r:.80}")
    if problems:
        raise PatternError("bad pattern table: " + "; ".join(problems))
    return tuple(out)
