"""Regions delimited by compiler_begin / compiler_end annotations (Relay's ``AnnotatedRegionSet``), with
union-find instead of linear region scans.

Rules (annotated_region_set.cc): every ``compiler_begin`` opens a new region; any other node joins the regions of
its operands that are not ``compiler_end`` (merging them; references too); a ``compiler_end`` joins its
operand's region and is one of the region's outputs. If, Let, Function, Var and Constant nodes never belong to a region.
"""
from __future__ import annotations

from ..errors import PartitionError
from ..ir.expr import REF_NODES, Call, Expr, Function, Op, Tuple, TupleGetItem
from ..ir.traversal import children, plain_on_calls, post_order, rebuild
from ..ops.annotation import COMPILER_BEGIN, COMPILER_END

__all__ = ["AnnotatedRegion", "AnnotatedRegionSet", "RegionSet", "region_operands", "skip_composites", "describe_node", "rewrite_in_order"]


@plain_on_calls
def skip_composites(n: Expr) -> tuple[Expr, ...]:
    if isinstance(n, Function) and "Composite" in n.attrs:
        return ()
    return children(n)


def rewrite_in_order(order: list[Expr], fn) -> dict[int, Expr]:
    """Rebuild ``order`` (a post-order that does not enter composites) bottom-up; ``fn(orig, rebuilt)`` may
    return a replacement or None. Returns the memo (old id → new node)."""
    memo: dict[int, Expr] = {}
    for n in order:
        kids = skip_composites(n)
        new = rebuild(n, tuple(memo[id(c)] for c in kids), keep_ret_type=True) if kids else n  # see type_carry
        out = fn(n, new)
        memo[id(n)] = new if out is None else out
    return memo


def _is_ann(e: Expr, name: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def region_operands(n: Expr) -> tuple[Expr, ...] | None:
    """Operands through which a node joins regions (None: the node is never in a region)."""
    if isinstance(n, Call):
        return n.args
    if isinstance(n, Tuple):
        return n.fields
    if isinstance(n, TupleGetItem):
        return (n.tuple_value,)
    if isinstance(n, REF_NODES):  # non-call ops, as tuples (AnnotateTarget's include_non_call_ops)
        return children(n)
    return None


def describe_node(n: Expr) -> str:
    if isinstance(n, Call):
        if isinstance(n.op, Op):
            name = n.op.name
            if name in (COMPILER_BEGIN, COMPILER_END):
                name += f"[{n.attrs.compiler}]"
        elif isinstance(n.op, Function) and "Composite" in n.op.attrs:
            name = f"composite {n.op.attrs['Composite']}"
        else:
            name = "call"
        span = getattr(n, "span", None)
        return f"{name}" + (f" ({span})" if span is not None else "")
    return type(n).__name__


class RegionSet:
    """Regions of one function body. Raw region ids are union-find elements; ``find`` gives the class."""

    def __init__(self, body: Expr):
        self.order: list[Expr] = post_order(body, child_fn=skip_composites)
        self.index: dict[int, int] = {id(n): i for i, n in enumerate(self.order)}
        self.parent: list[int] = []
        self.target: list[str] = []
        self.region_of: dict[int, int] = {}
        self.begins: list[list[Call]] = []
        self.ends: list[list[Call]] = []
        self._build()

    # -- union-find -----------------------------------------------------------------------------------------
    def find(self, r: int) -> int:
        parent = self.parent
        root = r
        while parent[root] != root:
            root = parent[root]
        while parent[r] != root:
            parent[r], r = root, parent[r]
        return root

    def union(self, keep: int, absorb: int) -> int:
        """Merge the class of ``absorb`` into the class of ``keep``; returns the surviving root."""
        a, b = self.find(keep), self.find(absorb)
        if a == b:
            return a
        self.parent[b] = a
        if len(self.begins[b]) > len(self.begins[a]):
            self.begins[a], self.begins[b] = self.begins[b], self.begins[a]
        self.begins[a].extend(self.begins[b])
        self.begins[b] = []
        if len(self.ends[b]) > len(self.ends[a]):
            self.ends[a], self.ends[b] = self.ends[b], self.ends[a]
        self.ends[a].extend(self.ends[b])
        self.ends[b] = []
        return a

    def region(self, node: Expr) -> int | None:
        r = self.region_of.get(id(node))
        return None if r is None else self.find(r)

    def _new(self, target: str) -> int:
        r = len(self.parent)
        self.parent.append(r)
        self.target.append(target)
        self.begins.append([])
        self.ends.append([])
        return r

    # -- construction -------------------------------------------------------------------------------------
    def _build(self) -> None:
        problems: list[str] = []
        for n in self.order:
            if _is_ann(n, COMPILER_BEGIN):
                r = self._new(n.attrs.compiler)
                self.region_of[id(n)] = r
                self.begins[r].append(n)
                continue
            if _is_ann(n, COMPILER_END):
                r = self.region(n.args[0])
                if r is None:
                    problems.append(f"compiler_end[{n.attrs.compiler}] on {describe_node(n.args[0])} closes no "
                                    f"region (its operand has no compiler_begin on its inputs)")
                    continue
                if self.target[r] != n.attrs.compiler:
                    problems.append(f"compiler_end[{n.attrs.compiler}] closes a region of target "
                                    f"{self.target[r]!r} at {describe_node(n.args[0])}")
                self.region_of[id(n)] = r
                self.ends[r].append(n)
                continue
            ops = region_operands(n)
            if not ops:
                continue
            inside = [a for a in ops if not _is_ann(a, COMPILER_END)]
            regions = [self.region(a) for a in inside]
            if all(r is None for r in regions):
                continue
            if any(r is None for r in regions):
                loose = [describe_node(a) for a, r in zip(inside, regions) if r is None]
                problems.append(f"{describe_node(n)} mixes region operands with unannotated ones "
                                f"({', '.join(loose)})")
                continue
            first = regions[0]
            for r in regions[1:]:
                if self.target[self.find(r)] != self.target[self.find(first)]:
                    problems.append(f"{describe_node(n)} joins regions of targets "
                                    f"{self.target[self.find(first)]!r} and {self.target[self.find(r)]!r}")
                first = self.union(first, r)
            self.region_of[id(n)] = first
        if problems:
            raise PartitionError("malformed region annotations: " + "; ".join(problems[:10])
                                 + (f"; and {len(problems) - 10} more" if len(problems) > 10 else ""),
                                 hint="annotate with relay.transform.AnnotateTarget(...) and run "
                                      "MergeCompilerRegions before PartitionGraph")

    # -- views --------------------------------------------------------------------------------------------
    def classes(self) -> list[int]:
        """Surviving region classes in topological order (by first output)."""
        firsts: dict[int, int] = {}
        for r in range(len(self.parent)):
            root = self.find(r)
            if self.ends[root]:
                firsts[root] = min(self.index[id(e)] for e in self.ends[root])
            else:
                firsts.setdefault(root, min((self.index[id(b)] for b in self.begins[root]), default=0))
        return sorted(firsts, key=lambda k: firsts[k])

    def class_nodes(self) -> dict[int, list[Expr]]:
        out: dict[int, list[Expr]] = {}
        for n in self.order:
            r = self.region_of.get(id(n))
            if r is not None:
                out.setdefault(self.find(r), []).append(n)
        return out


class AnnotatedRegion:
    """One region of an ``AnnotatedRegionSet`` (TVM's view): ``target``, ``args`` (its compiler_begin
    calls), ``rets`` (its compiler_end calls), ``nodes`` (every node in it, annotations included), ``id``."""

    def __init__(self, rid: int, target: str, args: list, rets: list, nodes: list):
        self.id = rid
        self.target = target
        self.args = tuple(args)
        self.rets = tuple(rets)
        self.nodes = tuple(nodes)

    def __repr__(self) -> str:
        return f"AnnotatedRegion(id={self.id}, target={self.target!r}, {len(self.nodes)} nodes)"


class AnnotatedRegionSet:
    """``relay.analysis.AnnotatedRegionSet(expr, begin_op, end_op)``: the regions of an annotated function
    (or expression), in topological order; ``get_region(node)`` is the region holding ``node`` or None."""

    def __init__(self, expr: Expr, region_begin_op=None, region_end_op=None):
        for given, want in ((region_begin_op, COMPILER_BEGIN), (region_end_op, COMPILER_END)):
            name = getattr(given, "name", given)
            if given is not None and name != want:
                raise PartitionError(f"AnnotatedRegionSet delimits regions with {want}, not {name}",
                                     hint="pass relay.op.get('annotation.compiler_begin') / '...compiler_end'")
        body = expr.body if isinstance(expr, Function) else expr
        self._set = rs = RegionSet(body)
        nodes = rs.class_nodes()
        self._regions = [AnnotatedRegion(i, rs.target[r], rs.begins[r], rs.ends[r], nodes.get(r, []))
                         for i, r in enumerate(rs.classes())]
        self._by_class = {r: reg for r, reg in zip(rs.classes(), self._regions)}

    def __len__(self) -> int:
        return len(self._regions)

    def __iter__(self):
        return iter(self._regions)

    def get_region(self, node: Expr) -> AnnotatedRegion | None:
        r = self._set.region(node)
        return None if r is None else self._by_class.get(r)
