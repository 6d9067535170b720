"""MergeComposite: group multi-op patterns into inline composite functions (Relay semantics).

For each table entry in order (order = priority) the entry's pattern is partitioned over the whole function
with ``{"Composite": name}``. Every rewrite is type-preserving and carries ``checked_type`` over, so later checks
see types without re-running InferType (Relay re-infers the whole module after each pattern). A check receives the matched root call of the un-rewritten graph, or, for
a ``Check`` object, a context with that root and the match's named captures. Nodes already inside a composite
are never matched again.
"""
from __future__ import annotations

from ..ir.expr import Call, Function
from ..ir.module import IRModule
from ..relay.dataflow_pattern.graph import IndexedGraph
from ..relay.dataflow_pattern.partition import partition_with_memo
from ..relay.dataflow_pattern.pattern import root_op_names
from ..relay.dataflow_pattern.table import CompositePattern, normalize_table
from .type_carry import ensure_typed
from .pass_infra import FunctionPass, PassContext
from .placement import current_log

__all__ = ["MergeComposite", "merge_composite"]


def merge_composite(func: Function, table: tuple[CompositePattern, ...], global_types=None, log=None) -> Function:
    """MergeComposite on one function (typed)."""
    graph = None
    # Op names called in the body: rewrites only move calls into composites, so the names seen when the
    # graph was first indexed stay a superset, and a pattern rooted at other ops cannot match (no re-index).
    present: frozenset[str] | None = None
    for entry in table:
        roots = root_op_names(entry.pattern)
        if present is not None and roots is not None and not (roots & present):
            continue
        if graph is None or graph.root is not func.body:
            graph = IndexedGraph(func.body)
            if present is None:
                present = graph.op_names()
        body, memo, refusals = partition_with_memo(entry.pattern, func.body, {"Composite": entry.name},
                                                   entry.check, label=f"{entry.name} check", graph=graph,
                                                   fill_ret_type=True)
        if log is not None:
            for refusal in refusals:
                s = refusal.support
                for n in refusal.interior:
                    if isinstance(n, Call):
                        log.add_refusal(n, f"{entry.name}: {s.reason}", strong=s.applies)
            log.remap(memo)
        if body is not func.body:
            # Types carry over (every rewrite here is type-preserving, so ret_type stays right too); only the
            # function node is new.
            t = func._checked_type
            func = func.replace(body=body)
            if t is not None:
                func._set_checked_type(t)
    return func


class MergeComposite(FunctionPass):
    """``relay.transform.MergeComposite(pattern_table)``."""

    name = "MergeComposite"
    opt_level = 0

    def __init__(self, pattern_table):
        self.table = normalize_table(pattern_table)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = ensure_typed(mod)
        self._global_types = {gv.name_hint: gv._checked_type for gv in mod.get_global_vars()}
        return super().run(mod, ctx)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return merge_composite(func, self.table, self._global_types, current_log(ctx))
