"""PartitionGraph: outline every annotated region as a global function for its compiler.

Relay semantics (partition_graph.cc): a ``compiler_end`` on a tuple is pushed onto the tuple's fields;
``"default"`` annotations are removed (those nodes stay in the caller, for the CPU); each remaining region
becomes a global function with ``Compiler=<target>``, ``global_symbol``, ``Primitive=1`` and ``Inline=1``.
Inputs are de-duplicated by producer, outputs by value; several outputs make the body a ``Tuple`` and each use
a ``TupleGetItem`` of the call. With ``bind_constants`` constant inputs are bound into the body instead of
passed. Names are ``tvmgen_<mod>_<target>_<func>_<n>`` with non-alphanumerics replaced by ``_``; ``n`` is Relay's
region id: every compiler_begin opens a region numbered in post-order, and a merged region keeps the number of
its first one (so after MergeCompilerRegions the numbers can skip: ``..._main_0``, ``..._main_2``).
"""
from __future__ import annotations

import bisect
import re

from ..errors import ByocError, CodegenError, PartitionError
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import TupleType
from ..ir.traversal import children, post_order, rebuild
from ..ops.annotation import COMPILER_BEGIN, COMPILER_END
from .annotate_target import DEFAULT_TARGET, compiler_end
from .type_carry import ensure_typed, type_function, typed_like
from .pass_infra import ModulePass, PassContext
from .regions import RegionSet, describe_node, rewrite_in_order, skip_composites

__all__ = ["PartitionGraph", "partition_graph", "mangle_name", "sanitize_name"]


_NOT_ALNUM = re.compile(r"[^0-9A-Za-z]")


def sanitize_name(name: str) -> str:
    return _NOT_ALNUM.sub("_", name)


def mangle_name(mod_name: str, name: str) -> str:
    prefix = "tvmgen_" + mod_name if mod_name else "tvmgen"
    return sanitize_name(f"{prefix}_{name}")


def fresh_partition_name(mod_name: str, target: str, fname: str, start: int, taken: set[str]) -> tuple[str, int]:
    """The first unused ``tvmgen_<mod>_<target>_<func>_<n>`` with ``n >= start``, recorded in ``taken``."""
    n = start
    while (name := mangle_name(mod_name, f"{target}_{fname}_{n}")) in taken:
        n += 1
    taken.add(name)
    return name, n


def _is_ann(e: Expr, name: str) -> bool:
    return isinstance(e, Call) and getattr(e.op, "name", None) == name


def _strip(e: Expr) -> Expr:
    while _is_ann(e, COMPILER_BEGIN) or _is_ann(e, COMPILER_END):
        e = e.args[0]
    return e


def _is_constant_input(e: Expr) -> bool:
    return isinstance(e, Constant) or (isinstance(e, Tuple) and len(e.fields) > 0
                                       and all(isinstance(f, Constant) for f in e.fields))


def _prepare(body: Expr) -> Expr:
    """FlattenTupleOutputs + RemoveDefaultAnnotations."""
    def fn(orig: Expr, new: Expr) -> Expr | None:
        if _is_ann(new, COMPILER_END) or _is_ann(new, COMPILER_BEGIN):
            target = new.attrs.compiler
            if target == DEFAULT_TARGET:
                return new.args[0]
            if _is_ann(new, COMPILER_END) and isinstance(new.args[0], Tuple):
                return typed_like(new.args[0].replace(fields=tuple(compiler_end(f, target)
                                                                   for f in new.args[0].fields)), orig)
        return typed_like(new, orig)
    return rewrite_in_order(post_order(body, child_fn=skip_composites), fn)[id(body)]


def _typed_tuple(fields: list[Expr]) -> Tuple:
    t = Tuple(tuple(fields))
    if all(f._checked_type is not None for f in fields):  # type: ignore[attr-defined]
        t._set_checked_type(TupleType(tuple(f._checked_type for f in fields)))  # type: ignore[attr-defined]
    return t


def _partition_function(name: str, target: str, params: tuple[Var, ...], outs: list[Expr]
                        ) -> tuple[GlobalVar, Function, Expr]:
    """The typed partition function (TVM's attributes) and its GlobalVar; one output or a tuple of them.
    Its ``ret_type`` is its body's type, as after the InferType that ends Relay's PartitionGraph."""
    fbody = outs[0] if len(outs) == 1 else _typed_tuple(outs)
    f = type_function(Function(params, fbody, fbody._checked_type,  # type: ignore[attr-defined]
                               attrs={"global_symbol": name, "Primitive": 1, "Compiler": target, "Inline": 1}))
    gv = GlobalVar(name)
    if f._checked_type is not None:  # type: ignore[attr-defined]
        gv._set_checked_type(f._checked_type)  # type: ignore[attr-defined]
    return gv, f, fbody


def partition_graph(func: Function, fname: str, mod_name: str, bind_constants: bool,
                    taken: set[str]) -> tuple[Function, list[tuple[GlobalVar, Function]]]:
    body = _prepare(func.body)
    if body is not func.body:
        func = typed_like(func.replace(body=body), func)
    rs = RegionSet(body)
    if not rs.parent:
        return func, []
    index = rs.index
    classes = rs.classes()
    made: list[tuple[str, Function]] = []
    # Per class: outputs, inputs (by producer), and the function.
    info: dict[int, dict] = {}
    counter = 0
    region_id = {c: min((rs.region_of[id(b)] for b in rs.begins[c]), default=None) for c in classes}
    for c in classes:
        ends = sorted(rs.ends[c], key=lambda e: index[id(e)])
        if not ends:
            raise PartitionError(f"a region of target {rs.target[c]!r} has no compiler_end "
                                 f"(starting at {describe_node(rs.begins[c][0])})",
                                 hint="every region value that is used must leave through compiler_end")
        outputs: dict[int, Expr] = {}
        for e in ends:
            outputs.setdefault(id(e.args[0]), e.args[0])
        out_index = {k: i for i, k in enumerate(outputs)}
        target = rs.target[c]
        start = region_id[c] if region_id[c] is not None else counter
        name, number = fresh_partition_name(mod_name, target, fname, start, taken)
        counter = number + 1
        # Inputs: first begin per producer, in the order a traversal of the region body meets them.
        params: dict[int, Var] = {}
        edge_of: dict[int, Expr] = {}
        bound: dict[int, Expr] = {}
        new: dict[int, Expr] = {}

        def kids(n: Expr) -> tuple[Expr, ...]:
            return () if _is_ann(n, COMPILER_BEGIN) else skip_composites(n)

        for n in post_order(list(outputs.values()), child_fn=kids):
            if _is_ann(n, COMPILER_BEGIN):
                producer = _strip(n.args[0])
                key = id(producer)
                if bind_constants and _is_constant_input(producer):
                    bound[key] = producer
                    new[id(n)] = producer
                    continue
                if key not in params:
                    t = n._checked_type or producer._checked_type  # type: ignore[attr-defined]
                    params[key] = typed_like(Var(f"{target}_{counter - 1}_i{len(params)}", t), n)
                    edge_of[key] = n.args[0]
                new[id(n)] = params[key]
                continue
            if isinstance(n, Function) and "Composite" in n.attrs:
                new[id(n)] = n
                continue
            new[id(n)] = typed_like(rebuild(n, tuple(new[id(ch)] for ch in children(n))), n)
        gv, f, fbody = _partition_function(name, target, tuple(params.values()), [new[k] for k in outputs])
        made.append((gv, f))
        info[c] = {"gv": gv, "edges": list(edge_of.values()), "out_index": out_index,
                   "single": len(outputs) == 1, "call": None, "type": fbody._checked_type}

    # Rewrite the caller: every compiler_end becomes the call (or an item of it).
    def main_kids(n: Expr) -> tuple[Expr, ...]:
        if _is_ann(n, COMPILER_END):
            return tuple(info[rs.region(n)]["edges"])
        return skip_composites(n)

    main: dict[int, Expr] = {}
    for n in post_order(body, child_fn=main_kids):
        if _is_ann(n, COMPILER_END):
            entry = info[rs.region(n)]
            if entry["call"] is None:
                missing = [e for e in entry["edges"] if id(e) not in main]
                if missing:
                    raise PartitionError(f"partition {entry['gv'].name_hint} and its inputs form a cycle "
                                         f"(input {describe_node(missing[0])} depends on the partition)",
                                         hint="run MergeCompilerRegions instead of merging regions by hand")
                entry["call"] = Call(entry["gv"], tuple(main[id(e)] for e in entry["edges"]))
                if entry["type"] is not None:
                    entry["call"]._set_checked_type(entry["type"])
            call = entry["call"]
            if entry["single"]:
                main[id(n)] = call
            else:
                k = entry["out_index"][id(n.args[0])]
                items = entry.setdefault("items", {})
                if k not in items:
                    items[k] = typed_like(TupleGetItem(call, k), n)
                main[id(n)] = items[k]
            continue
        if _is_ann(n, COMPILER_BEGIN) or rs.region(n) is not None:
            raise PartitionError(f"{describe_node(n)} of a region is used outside it without compiler_end",
                                 hint="regions must be closed by compiler_end on every outgoing edge")
        if isinstance(n, Function) and "Composite" in n.attrs:
            main[id(n)] = n
            continue
        try:
            main[id(n)] = typed_like(rebuild(n, tuple(main[id(ch)] for ch in children(n))), n)
        except KeyError:
            raise PartitionError(f"partitions form a cycle around {describe_node(n)}",
                                 hint="run MergeCompilerRegions instead of merging regions by hand") from None
    return typed_like(func.replace(body=main[id(body)]), func), made


def optimize_partition(func: Function) -> Function:
    """Run ``relay.ext.<compiler>.optimize`` (if registered) on a partition PartitionGraph just made, as TVM's
    PartitionGraph did: on a module holding the partition's function, before its attributes are attached (so
    function passes such as FoldConstant treat it as an ordinary function); the attributes go back on after."""
    from .._ffi.registry import optimize_pass_for
    compiler = func.attrs.get("Compiler")
    fn = optimize_pass_for(str(compiler)) if compiler else None
    if fn is None:
        return func
    from .infer_type import InferType
    try:
        result = fn(InferType()(IRModule({"main": func.replace(attrs={})})))
    except ByocError:
        raise
    except Exception as e:  # the user's function failed, not this pass: say whose it is, keep the cause
        raise CodegenError(f"relay.ext.{compiler}.optimize raised {type(e).__name__}: {e}",
                           hint="the registered optimize function failed on this partition") from e
    if not isinstance(result, IRModule) or "main" not in result:
        raise CodegenError(f"relay.ext.{compiler}.optimize returned {type(result).__name__}, not a module "
                           f"with a main function", hint="return the module it was given, transformed")
    new = result["main"]
    for k, v in func.attrs.items():
        if k not in new.attrs:
            new = new.with_attr(k, v)
    return new


def optimize_partitions(mod: IRModule) -> IRModule:
    """``optimize_partition`` on every partition of ``mod`` (for modules partitioned by other means)."""
    out = None
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function) and func.attrs.get("Compiler"):
            new = optimize_partition(func)
            if new is not func:
                out = out or mod.copy()
                out[gv.name_hint] = new
    return out or mod


class PartitionGraph(ModulePass):
    """``relay.transform.PartitionGraph(mod_name="default", bind_constants=True)``."""

    name = "PartitionGraph"
    opt_level = 0

    def __init__(self, mod_name: str = "default", bind_constants: bool = True):
        self.mod_name = mod_name
        self.bind_constants = bool(bind_constants)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = ensure_typed(mod)
        out = mod.copy()
        taken = {gv.name_hint for gv in mod.get_global_vars()}
        for gv, func in mod.items():
            if "Compiler" in func.attrs or "SkipOptimization" in func.attrs:
                continue
            try:
                new_func, made = partition_graph(func, gv.name_hint, self.mod_name, self.bind_constants, taken)
            except PartitionError as e:
                raise e.with_note(f"in function @{gv.name_hint}")
            out[gv] = new_func
            for new_gv, f in made:
                out.add(new_gv, optimize_partition(f))
        return ensure_typed(out)


# -- the same three passes without annotation nodes ------------------------------------------------------------
#
# On a dataflow body of op and composite calls, AnnotateTarget puts a compiler_begin on every operand edge and a
# compiler_end behind every call used as an operand, so each call is a region of its own; MergeCompilerRegions
# merges those regions and drops the annotations inside them; PartitionGraph outlines each region. The
# functions below compute the same regions, orders and names directly on the un-annotated graph: a region is a
# call, an annotation sits on an operand edge, and its place in the annotated post-order is where the edge
# completes in a depth-first walk of the un-annotated graph (annotations only interleave with the nodes).
# ``partition_for`` uses them when a body is plain dataflow; anything else takes the annotation passes.


def direct_order(body: Expr) -> list[Expr] | None:
    """The composite-skipping post-order of ``body`` when the direct path handles it (calls of ops and
    composites with operands, variables, constants), else None."""
    walk = direct_walk(body)
    return None if walk is None else walk[0]


def _plain(n: Expr) -> bool:
    """A node the direct path handles: a variable, a constant, or a call of an op or a composite with operands
    that are calls, variables or constants."""
    t = type(n)
    if t is Var or t is Constant:
        return True
    if t is not Call or not n.args:
        return False
    op = n.op
    if type(op) is Op:
        if op.name in (COMPILER_BEGIN, COMPILER_END):
            return False
    elif not (isinstance(op, Function) and "Composite" in op.attrs):
        return False
    return all(type(a) is Call or type(a) is Var or type(a) is Constant for a in n.args)


def direct_walk(body: Expr) -> tuple[list[Expr], dict[Expr, list[int]]] | None:
    """For a plain dataflow body (see ``_plain``), in one depth-first walk: its composite-skipping post-order
    (``post_order(body, child_fn=skip_composites)``) and, per call, where each operand edge completes. An
    edge's completion is the place of its annotations in the annotated graph's post-order (positions
    increase along the walk; nodes hash by identity). None when the body is not plain."""
    if not _plain(body):
        return None
    order: list[Expr] = []
    edge_pos: dict[Expr, list[int]] = {}
    counter = 0
    entered = {body}
    frames: list[list] = []

    def enter(n: Expr) -> None:
        if type(n) is Call:
            op = n.op
            if type(op) is not Op and op not in entered:  # the composite callee: post_order's first child
                entered.add(op)
                order.append(op)
            frames.append([n, n.args, 0, []])
        else:
            frames.append([n, (), 0, None])

    enter(body)
    while frames:
        frame = frames[-1]
        n, kids, i, pos = frame
        if i < len(kids):
            c = kids[i]
            if c in entered:  # finished already (a DAG: it cannot be on the current path)
                pos.append(counter)
                counter += 1
                frame[2] = i + 1
            else:
                if not _plain(c):
                    return None
                entered.add(c)
                enter(c)
            continue
        frames.pop()
        order.append(n)
        if pos is not None:
            edge_pos[n] = pos
        counter += 1
        if frames:
            parent = frames[-1]
            parent[3].append(counter)
            counter += 1
            parent[2] += 1
    return order, edge_pos


class _CallRegions(RegionSet):
    """The regions AnnotateTarget's annotations would make, without them: one region per call of ``order``.
    ``begins[r]`` holds (position, operand) per operand edge of the region's calls."""

    def __init__(self, order: list[Expr], calls: list[Call], targets: list[str],
                 edge_pos: dict[Expr, list[int]]):
        self.order = order
        self.parent = list(range(len(calls)))
        self.target = targets
        self.region_of: dict[Expr, int] = {n: r for r, n in enumerate(calls)}  # keyed by node, not id
        self.begins = [list(zip(edge_pos[n], n.args)) for n in calls]
        self.ends = [[] for _ in calls]

    def region(self, node: Expr) -> int | None:
        r = self.region_of.get(node)
        return None if r is None else self.find(r)

    def parent_classes(self, r: int) -> list[int]:
        """Classes feeding class ``r`` (calls that are operands of its calls), in the order of its inputs;
        none when no feeding class has ``r``'s target (the merge loop would skip them all)."""
        target, region_of, find = self.target[r], self.region_of, self.find
        for _, a in self.begins[r]:
            if isinstance(a, Call) and self.target[find(region_of[a])] == target:
                break
        else:
            return []
        parents: list[int] = []
        for _, a in sorted(self.begins[r], key=_first):
            if isinstance(a, Call):
                pr = self.region(a)
                if pr not in parents:
                    parents.append(pr)
        return parents


def _region_ids(calls: list[Call], cls: dict, target_of_class, edge_pos) -> dict[int, int]:
    """Relay's region ids for the direct path: the rank of a class's first input edge (a compiler_begin in the
    annotated graph) among all non-default input edges in post-order (see ``partition_graph``)."""
    first: dict[int, int] = {}
    positions: list[int] = []
    for n in calls:
        cn = cls[n]
        if target_of_class[cn] == DEFAULT_TARGET:
            continue
        for pos, a in zip(edge_pos[n], n.args):
            if type(a) is Call and cls[a] == cn:
                continue  # an edge inside the region carries no annotation after merging
            positions.append(pos)
            if pos < first.get(cn, pos + 1):
                first[cn] = pos
    positions.sort()
    return {c: bisect.bisect_left(positions, p) for c, p in first.items()}


def _first(item):
    return item[0]


def partition_direct(func: Function, walk: tuple[list[Expr], dict[Expr, list[int]]], annotator, merge: bool,
                     fname: str, mod_name: str, bind_constants: bool,
                     taken: set[str]) -> tuple[Function, list[tuple[GlobalVar, Function]]]:
    """AnnotateTarget (``annotator``'s decisions), MergeCompilerRegions (when ``merge``) and PartitionGraph on a
    body accepted by ``direct_walk`` (``walk``): the same module, names and placement log."""
    from .merge_compiler_regions import merge_classes
    body = func.body
    order, edge_pos = walk
    calls = [n for n in order if type(n) is Call]
    if not calls:
        return func, []
    targets = [annotator.decide(n) for n in calls]  # AnnotateTarget's order: the log reads the same
    rs = _CallRegions(order, calls, targets, edge_pos)
    if merge:
        merge_classes(rs, body, calls, rs.region, rs.parent_classes, acyclic=True)  # one region per call
    find = rs.find
    cls: dict[Expr, int] = {n: find(r) for r, n in enumerate(calls)}  # nodes hash by identity
    target_of_class = rs.target

    # Region outputs: a compiler_end sits on every edge leaving a non-default class, and after the body.
    end_pos: dict[int, list[tuple[int, Call]]] = {}
    for n in calls:
        cn = cls[n]
        for pos, a in zip(edge_pos[n], n.args):
            if type(a) is Call:
                ca = cls[a]
                if ca != cn and target_of_class[ca] != DEFAULT_TARGET:
                    if ca in end_pos:
                        end_pos[ca].append((pos, a))
                    else:
                        end_pos[ca] = [(pos, a)]
    if isinstance(body, Call) and target_of_class[cls[body]] != DEFAULT_TARGET:
        end_pos.setdefault(cls[body], []).append((float("inf"), body))
    if not end_pos:
        return func, []
    for ends in end_pos.values():
        ends.sort(key=_first)  # positions are distinct
    classes = sorted(end_pos, key=lambda c: end_pos[c][0][0])

    made: list[tuple[GlobalVar, Function]] = []
    info: dict[int, dict] = {}
    counter = 0
    region_id = _region_ids(calls, cls, target_of_class, edge_pos)
    for c in classes:
        outputs: dict[Call, None] = dict.fromkeys(a for _, a in end_pos[c])
        target = target_of_class[c]
        start = region_id.get(c, counter)
        name, number = fresh_partition_name(mod_name, target, fname, start, taken)
        counter = number + 1
        # Parameters: one per producer, in the order a post-order walk of the region from its outputs meets
        # the input edges (PartitionGraph's walk, where each input edge is a compiler_begin leaf).
        params: dict[Expr, Var] = {}
        edge_value: dict[tuple[Expr, int], Expr] = {}
        new: dict[Expr, Expr] = {}
        seen: set[Expr] = set()
        stack: list[tuple] = [(0, o, 0) for o in reversed(outputs)]

        def param_for(a: Expr) -> Var:
            """The partition parameter fed by ``a`` (one per distinct producer), typed like it."""
            v = params.get(a)
            if v is None:
                t = a._checked_type  # type: ignore[attr-defined]
                v = params[a] = Var(f"{target}_{counter - 1}_i{len(params)}", t)
                if t is not None:
                    v._set_checked_type(t)
            return v
        if len(outputs) == 1:
            (o,) = outputs
            if not any(type(a) is Call and cls[a] == c for a in o.args):
                # A one-call region (the common case): its input edges are its operands, in order.
                kids = [] if type(o.op) is Op else [o.op]
                for a in o.args:
                    if bind_constants and type(a) is Constant:
                        kids.append(a)
                        continue
                    kids.append(param_for(a))
                new[o] = typed_like(rebuild(o, tuple(kids)), o)
                stack = []
        while stack:
            kind, n, i = stack.pop()
            if kind == 2:  # an input edge (n, i)
                a = n.args[i]
                if bind_constants and type(a) is Constant:
                    edge_value[(n, i)] = a
                    continue
                edge_value[(n, i)] = param_for(a)
                continue
            if kind == 1:  # all operands done
                kids = [] if type(n.op) is Op else [n.op]
                for j, a in enumerate(n.args):
                    kids.append(new[a] if (n, j) not in edge_value else edge_value[(n, j)])
                new[n] = typed_like(rebuild(n, tuple(kids)), n)
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((1, n, 0))
            args = n.args
            for j in range(len(args) - 1, -1, -1):
                a = args[j]
                if type(a) is Call and cls[a] == c:
                    if a not in seen:
                        stack.append((0, a, 0))
                else:
                    stack.append((2, n, j))
        gv, f, fbody = _partition_function(name, target, tuple(params.values()), [new[o] for o in outputs])
        made.append((gv, f))
        info[c] = {"gv": gv, "producers": tuple(params), "out_index": {o: j for j, o in enumerate(outputs)},
                   "single": len(outputs) == 1, "call": None, "type": fbody._checked_type, "items": {}}

    # The caller: outputs become the partition call (or an item of it), other calls are rebuilt.
    def main_kids(n: Expr) -> tuple[Expr, ...]:
        if type(n) is Call:
            c = cls[n]
            return info[c]["producers"] if c in info else n.args  # a composite callee is kept as it is
        return ()

    main: dict[Expr, Expr] = {}
    for n in post_order(body, child_fn=main_kids):
        if type(n) is not Call:
            main[n] = n
            continue
        c = cls[n]
        if c not in info:
            kids = tuple([main[a] for a in n.args])
            main[n] = typed_like(rebuild(n, kids if type(n.op) is Op else (n.op,) + kids), n)
            continue
        entry = info[c]
        if entry["call"] is None:
            entry["call"] = Call(entry["gv"], tuple([main[p] for p in entry["producers"]]))
            if entry["type"] is not None:
                entry["call"]._set_checked_type(entry["type"])
        if entry["single"]:
            main[n] = entry["call"]
        else:
            k = entry["out_index"][n]
            if k not in entry["items"]:
                entry["items"][k] = typed_like(TupleGetItem(entry["call"], k), n)
            main[n] = entry["items"][k]
    return typed_like(func.replace(body=main[body]), func), made


class AnnotateMergePartition(ModulePass):
    """``AnnotateTarget(target)`` → ``MergeCompilerRegions()`` (when ``merge``) → ``PartitionGraph(mod_name,
    bind_constants)`` as one pass: directly (``partition_direct``) when every body is plain dataflow, else by
    running those passes. The result and the placement log are the same either way."""

    name = "AnnotateMergePartition"
    opt_level = 0

    def __init__(self, target: str, merge: bool = True, mod_name: str = "default", bind_constants: bool = True):
        from .annotate_target import AnnotateTarget
        self.annotate = AnnotateTarget(target)
        self.merge = bool(merge)
        self.partition = PartitionGraph(mod_name, bind_constants)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        from .annotate_target import _Annotator
        from .merge_compiler_regions import MergeCompilerRegions
        from .pass_infra import _run_pass
        from .placement import current_log
        mod = ensure_typed(mod)
        todo = [(gv, func) for gv, func in mod.items()
                if "Compiler" not in func.attrs and "SkipOptimization" not in func.attrs]
        walks = [direct_walk(func.body) for _, func in todo]
        if any(w is None for w in walks):
            passes = [self.annotate] + ([MergeCompilerRegions()] if self.merge else []) + [self.partition]
            for p in passes:
                mod = _run_pass(p, mod, ctx)
            return mod
        log = current_log(ctx)
        out = mod.copy()
        taken = {gv.name_hint for gv in mod.get_global_vars()}
        for (gv, func), walk in zip(todo, walks):
            annotator = _Annotator(self.annotate.targets, True, log, gv.name_hint)
            new_func, made = partition_direct(func, walk, annotator, self.merge, gv.name_hint,
                                              self.partition.mod_name, self.partition.bind_constants, taken)
            out[gv] = new_func
            for new_gv, f in made:
                out.add(new_gv, optimize_partition(f))
        return ensure_typed(out)
