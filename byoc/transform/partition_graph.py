"""PartitionGraph: outline every annotated region as a global function for its compiler.

Relay semantics (partition_graph.cc): a ``compiler_end`` on a tuple is pushed onto the tuple's fields;
``"default"`` annotations are removed (those nodes stay in the caller, for the CPU); each remaining region
becomes a global function with ``Compiler=<target>``, ``global_symbol``, ``Primitive=1`` and ``Inline=1``.
Inputs are de-duplicated by producer, outputs by value; several outputs make the body a ``Tuple`` and each use
a ``TupleGetItem`` of the call. With ``bind_constants`` constant inputs are bound into the body instead of
passed. Names are ``tvmgen_<mod>_<target>_<func>_<n>`` with non-alphanumerics replaced by ``_``; ``n`` counts
the regions of one function in topological order.
"""
from __future__ import annotations

import re

from ..errors import PartitionError
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import TupleType
from ..ir.traversal import children, post_order, rebuild
from ..ops.annotation import COMPILER_BEGIN, COMPILER_END
from .annotate_target import DEFAULT_TARGET, compiler_end
from .type_carry import ensure_typed, type_function, typed_like
from .pass_infra import ModulePass, PassContext
from .regions import RegionSet, describe_node, rewrite_in_order, skip_composites

__all__ = ["PartitionGraph", "partition_graph", "mangle_name", "sanitize_name"]


def sanitize_name(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "_", name)


def mangle_name(mod_name: str, name: str) -> str:
    prefix = "tvmgen_" + mod_name if mod_name else "tvmgen"
    return sanitize_name(f"{prefix}_{name}")


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
        while True:
            name = mangle_name(mod_name, f"{target}_{fname}_{counter}")
            counter += 1
            if name not in taken:
                break
        taken.add(name)
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
        outs = [new[k] for k in outputs]
        fbody = outs[0] if len(outs) == 1 else _typed_tuple(outs)
        f = type_function(Function(tuple(params.values()), fbody,
                                   attrs={"global_symbol": name, "Primitive": 1, "Compiler": target, "Inline": 1}))
        gv = GlobalVar(name)
        if f._checked_type is not None:  # type: ignore[attr-defined]
            gv._set_checked_type(f._checked_type)  # type: ignore[attr-defined]
        made.append((gv, f))
        info[c] = {"gv": gv, "edges": list(edge_of.values()), "out_index": out_index,
                   "single": len(outs) == 1, "call": None, "type": fbody._checked_type}

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
                out.add(new_gv, f)
        return ensure_typed(out)
