"""Why each op ended up where it did: a side table the partitioning passes fill when asked to.

``partition_for`` puts a ``PlacementLog`` in the pass context (``config["byoc.placement_log"]``);
MergeComposite records refused composite matches (re-keyed through each rewrite so entries follow their node)
and AnnotateTarget records one decision per call with the reasons it was not offloaded. Without a log in the
context the passes record nothing and cost nothing extra.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Expr, Span

__all__ = ["PlacementLog", "Decision", "LOG_KEY", "current_log", "unit_key"]

LOG_KEY = "byoc.placement_log"


@dataclass(frozen=True, slots=True)
class Decision:
    """One call of the graph AnnotateTarget saw: an op, or a composite standing for several ops."""
    node: Expr
    op: str
    target: str
    reasons: tuple[str, ...]
    function: str
    inner_ops: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        span = getattr(self.node, "span", None)
        return span.source if isinstance(span, Span) else ""


class PlacementLog:
    def __init__(self):
        # id(node) -> (node, [(reason, strong)]); the node reference keeps ids from being reused.
        self._refusals: dict[int, tuple[Expr, list[tuple[str, bool]]]] = {}
        self.decisions: list[Decision] = []
        self.notes: list[str] = []
        # Units a later policy keeps on the CPU (boundary_cost): id(key attrs) -> (attrs, reason). They survive
        # ``fresh()`` so a re-run of the pipeline refuses them.
        self.deny: dict[int, tuple[object, str]] = {}

    def fresh(self) -> "PlacementLog":
        """An empty log for a re-run of the pipeline, keeping the denied units."""
        out = PlacementLog()
        out.deny = dict(self.deny)
        return out

    def denied(self, node: Expr) -> str | None:
        key = unit_key(node)
        entry = self.deny.get(id(key)) if key is not None else None
        return entry[1] if entry is not None and entry[0] is key else None

    def add_refusal(self, node: Expr, reason: str, strong: bool = True) -> None:
        entry = self._refusals.get(id(node))
        if entry is None:
            entry = (node, [])
            self._refusals[id(node)] = entry
        if (reason, strong) not in entry[1]:
            entry[1].append((reason, strong))

    def remap(self, memo: dict[Expr, Expr]) -> None:
        """Follow a rewrite (``memo``: old node → new node): entries move to the nodes that replaced them."""
        if not memo or not self._refusals:
            return
        moved: dict[int, tuple[Expr, list[tuple[str, bool]]]] = {}
        for key, (node, reasons) in self._refusals.items():
            new = memo.get(node, node)
            if id(new) in moved:
                for r in reasons:
                    if r not in moved[id(new)][1]:
                        moved[id(new)][1].append(r)
            else:
                moved[id(new)] = (new, list(reasons))
        self._refusals = moved

    def refusals_of(self, node: Expr) -> list[str]:
        """Strong reasons (hardware rules) when there are any, else the weak ones (pattern did not apply)."""
        entry = self._refusals.get(id(node))
        if entry is None:
            return []
        strong = [r for r, s in entry[1] if s]
        return strong if strong else [r for r, s in entry[1]]

    def record(self, decision: Decision) -> None:
        self.decisions.append(decision)


def unit_key(node: Expr) -> object | None:
    """What identifies a placed unit across re-runs of the pipeline: the attribute object of the op call (shared by
    every rebuilt copy), or of a composite body's root call."""
    from ..ir.expr import Call, Function, Op
    if isinstance(node, Call) and isinstance(node.op, Function):
        node = node.op.body
    if isinstance(node, Call) and isinstance(node.op, Op):
        return node.attrs
    return None


def current_log(ctx) -> PlacementLog | None:
    log = ctx.config.get(LOG_KEY) if ctx is not None else None
    return log if isinstance(log, PlacementLog) else None
