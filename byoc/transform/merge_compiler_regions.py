"""MergeCompilerRegions: grow same-target regions without creating cycles, in near-linear time.

Semantics of Relay's pass (merge_compiler_regions.cc): regions are visited in the order of their first
``compiler_end`` (so producers are settled before consumers); a region absorbs each producer region of the same
target unless a path from that producer reaches it through another region (of any target, "default" included)
or through a node outside every region. Then ``compiler_begin(compiler_end(x))`` pairs inside one region are
removed.

Relay keeps a restriction set per region and rewrites every set on every merge (quadratic). Here the regions
form a quotient graph over union-find classes whose topological order is maintained incrementally
(Pearce–Kelly): the "other path?" question is a forward search from the producer bounded by the consumer's
position, and a merge reorders only the vertices inside that window. On dataflow graphs the windows are tiny.

Regions that depend on a variable bound inside the function (Let, nested function parameters) are never merged,
so a partition call can always be placed where its inputs are in scope.
"""
from __future__ import annotations

import heapq

from ..errors import PartitionError
from ..ir.analysis import bound_vars
from ..ir.expr import Call, Expr, Function, Var
from ..ir.module import IRModule
from ..ops.annotation import COMPILER_BEGIN, COMPILER_END
from .type_carry import ensure_typed, typed_like
from .pass_infra import ModulePass, PassContext
from .regions import RegionSet, describe_node, rewrite_in_order, skip_composites

__all__ = ["MergeCompilerRegions", "merge_compiler_regions"]


def _is_ann(e: Expr, name: str) -> bool:
    return isinstance(e, Call) and getattr(e.op, "name", None) == name


class _Quotient:
    """Classes of regions plus nodes outside regions, with a maintained topological order ``pos``."""

    def __init__(self, rs: RegionSet):
        self.rs = rs
        k = len(rs.parent)
        self.k = k
        n = len(rs.order)
        self.succ: list[list[int]] = [[] for _ in range(k + n)]
        self.pred: list[list[int]] = [[] for _ in range(k + n)]
        index = {node: i for i, node in enumerate(rs.order)}  # nodes hash by identity
        first_index = [n] * (k + n)
        for i, node in enumerate(rs.order):
            v = self.vertex_of(node, i)
            if i < first_index[v]:
                first_index[v] = i
            for c in skip_composites(node):
                u = self.vertex_of(c, index[c])
                if u != v:
                    self.succ[u].append(v)
                    self.pred[v].append(u)
        self.pos = self._topological_positions(first_index)

    def vertex_of(self, node: Expr, i: int) -> int:
        r = self.rs.region(node)
        return r if r is not None else self.k + i

    def canon(self, v: int) -> int:
        return self.rs.find(v) if v < self.k else v

    def _topological_positions(self, first_index: list[int]) -> list[int]:
        total = len(self.succ)
        alive = [v for v in range(total) if v >= self.k or self.rs.find(v) == v]
        indeg = [0] * total
        for v in alive:
            for w in self.succ[v]:
                indeg[w] += 1
        heap = [(first_index[v], v) for v in alive if indeg[v] == 0]
        heapq.heapify(heap)
        pos = [-1] * total
        p = 0
        while heap:
            _, v = heapq.heappop(heap)
            pos[v] = p
            p += 1
            for w in self.succ[v]:
                indeg[w] -= 1
                if indeg[w] == 0:
                    heapq.heappush(heap, (first_index[w], w))
        if p != len(alive):
            stuck = [v for v in alive if pos[v] < 0 and v < self.k][:3]
            where = ", ".join(describe_node(self.rs.begins[v][0]) if self.rs.begins[v] else f"region {v}"
                              for v in stuck)
            raise PartitionError("annotated regions depend on each other in a cycle" + (f" (at {where})"
                                                                                         if where else ""),
                                 hint="annotations were edited by hand or by a pass that ignores data "
                                      "dependencies; re-run AnnotateTarget on the un-annotated graph")
        return pos

    def forward_window(self, p: int, r: int) -> list[int] | None:
        """Vertices reachable from class ``p`` (not through ``r``) positioned before ``r``; None if ``r`` is
        reachable other than by a direct edge."""
        pos, succ, canon = self.pos, self.succ, self.canon
        limit = pos[r]
        seen: set[int] = set()
        out: list[int] = []
        stack = [w for w in (canon(x) for x in succ[p]) if w != r and w != p]
        while stack:
            v = canon(stack.pop())
            if v == r:
                return None
            if v == p or v in seen or pos[v] > limit:
                continue
            seen.add(v)
            out.append(v)
            stack.extend(succ[v])
        return out

    def backward_window(self, p: int, r: int) -> list[int]:
        pos, pred, canon = self.pos, self.pred, self.canon
        limit = pos[p]
        seen: set[int] = set()
        out: list[int] = []
        stack = list(pred[r])
        while stack:
            v = canon(stack.pop())
            if v == p or v == r or v in seen or pos[v] < limit:
                continue
            seen.add(v)
            out.append(v)
            stack.extend(pred[v])
        return out

    def contract(self, p: int, r: int, forward: list[int]) -> int:
        """Merge class ``p`` into class ``r`` (edge p → r, no other path) keeping ``pos`` topological."""
        pos = self.pos
        if not forward:
            new_pos = pos[r]
        else:
            backward = self.backward_window(p, r)
            if not backward:
                new_pos = pos[p]
            else:
                backward.sort(key=lambda v: pos[v])
                forward = sorted(forward, key=lambda v: pos[v])
                slots = sorted([pos[v] for v in backward] + [pos[v] for v in forward] + [pos[p], pos[r]])
                for v, s in zip(backward, slots):
                    pos[v] = s
                new_pos = slots[len(backward)]
                for v, s in zip(forward, slots[len(backward) + 2:]):
                    pos[v] = s
        root = self.rs.union(r, p)
        other = p if root == r else r
        for lists in (self.succ, self.pred):
            if len(lists[other]) > len(lists[root]):
                lists[root], lists[other] = lists[other], lists[root]
            lists[root].extend(lists[other])
            lists[other] = []
        pos[root] = new_pos
        return root


def _tainted_classes(rs: RegionSet, body: Expr) -> list[bool]:
    """Per region class: does it depend on a variable bound inside the function (Let, nested parameters)?"""
    inner = {id(v) for v in bound_vars(body)}
    tainted_node: dict[int, bool] = {}
    tainted_class = [False] * len(rs.parent)
    for node in rs.order:
        if isinstance(node, Var):
            t = id(node) in inner
        else:
            t = any(tainted_node.get(id(c), False) for c in skip_composites(node))
        tainted_node[id(node)] = t
        r = rs.region(node)
        if t and r is not None:
            tainted_class[r] = True
    return tainted_class


def merge_classes(rs, body: Expr, ends: list, region_of_end, parent_classes, acyclic: bool = False) -> bool:
    """The merge loop, on ``rs`` (a ``RegionSet`` or anything with its union-find interface, whose ``order``
    is the graph ``_Quotient`` sees). ``ends``: the region outputs in post-order; ``region_of_end(e)``: its class
    now; ``parent_classes(r)``: the classes feeding class ``r``, in the order of its inputs (those of another
    target may be left out). True if any merged. ``acyclic``: the regions are known not to form a cycle, so
    the quotient graph is only built when a merge is considered."""
    # The quotient also reports regions that depend on each other in a cycle.
    q = None if acyclic else _Quotient(rs)
    # The taint is computed on the first same-target candidate (before any merge, so it is the same).
    tainted_class: list[bool] | None = None
    merged = False
    processed: set[int] = set()
    for e in ends:
        r = region_of_end(e)
        if r is None or r in processed:
            continue
        target = rs.target[r]
        for p in parent_classes(r):
            p = rs.find(p)
            r = rs.find(r)
            if p == r or rs.target[p] != target:
                continue
            if tainted_class is None:
                tainted_class = _tainted_classes(rs, body)
            if q is None:
                q = _Quotient(rs)  # before any merge: the same graph as when built up front
            if tainted_class[p] or tainted_class[r]:
                continue
            window = q.forward_window(p, r)
            if window is None:
                continue
            r = q.contract(p, r, window)
            merged = True
        processed.add(rs.find(r))
    return merged


def merge_compiler_regions(func: Function) -> Function:
    body = func.body
    rs = RegionSet(body)
    if not rs.parent:
        return func
    index = rs.index

    def parent_classes(r: int) -> list[int]:
        parents: list[int] = []
        for b in sorted(rs.begins[r], key=lambda x: index[id(x)]):
            arg = b.args[0]
            if _is_ann(arg, COMPILER_END):
                pr = rs.region(arg)
                if pr is not None and pr not in parents:
                    parents.append(pr)
        return parents

    ends = [n for n in rs.order if _is_ann(n, COMPILER_END)]
    if not merge_classes(rs, body, ends, rs.region, parent_classes):
        return func  # a begin and its producer's end share a class only after a merge: nothing to drop

    def drop_internal(orig: Expr, new: Expr) -> Expr | None:
        if _is_ann(orig, COMPILER_BEGIN) and _is_ann(orig.args[0], COMPILER_END):
            if rs.region(orig) is not None and rs.region(orig) == rs.region(orig.args[0]):
                return new.args[0].args[0]
        return typed_like(new, orig)

    memo = rewrite_in_order(rs.order, drop_internal)
    return typed_like(func.replace(body=memo[id(body)]), func)


class MergeCompilerRegions(ModulePass):
    """``relay.transform.MergeCompilerRegions()``."""

    name = "MergeCompilerRegions"
    opt_level = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = ensure_typed(mod)
        out = mod.copy()
        for gv, func in mod.items():
            if "Compiler" in func.attrs or "SkipOptimization" in func.attrs:
                continue
            try:
                out[gv] = merge_compiler_regions(func)
            except PartitionError as e:
                raise e.with_note(f"in function @{gv.name_hint}")
        return ensure_typed(out)
