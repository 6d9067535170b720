"""Relay-style text printer: ``astext(mod_or_expr)`` and ``excerpt(root, node)``.

The output follows TVM's text format (version 0.0.5)::

    def @main(%x: Tensor[(1, 8), int8]) -> Tensor[(1, 8), int8] {
      %0 = add(%x, 1i8) /* ty=Tensor[(1, 8), int8] */;
      nn.relu(%0) /* ty=Tensor[(1, 8), int8] */
    }

Layout, computed from one ``post_order`` walk and never by recursion:

* Every non-leaf node used as an operand, or used more than once, is bound once as ``%n = ...;`` (numbered in
  post-order). A node whose single use is a block's tail or a let's value is written out in place.
* Blocks are function bodies, if branches and non-tail ``let`` groups. A bound node goes into the innermost
  block that encloses all of its uses (the lowest common ancestor in the block tree), so values shared by both
  branches of an ``if`` are bound before it, and lines within a block are ordered by post-order index.
* A ``Let`` in tail position becomes ``let %v = value;`` followed by the rest of the block (its body), so a
  chain of lets is a flat list of statements.
* Tensor constants (and scalars that are shared or have no exact literal) are ``meta[relay.Constant][k]``,
  written in a ``#[metadata]`` section at the end.

The emitter walks an explicit stack of (text line | block) items into a ``list[str]`` and records the line of
every node, which ``excerpt`` uses to mark the line of an error.
"""
from __future__ import annotations

import re

import numpy as np

from ..ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Op, RefCreate, RefRead, RefWrite, Tuple,
                       TupleGetItem, Var)
from ..ir.module import IRModule
from ..ir.traversal import children, post_order
from .literals import (IDENT_RE, NO_DEFAULT, attr_defaults, attr_text, encode_metadata, gc_paused, quote_name,
                       same_value, scalar_literal, type_text)

__all__ = ["astext", "excerpt", "VERSION_LINE"]

VERSION_LINE = '#[version = "0.0.5"]'

# How a node is used by its user: as an operand (printed as a reference), or in a slot that can hold a whole
# expression (a block's tail, a let's value).
_OPERAND, _TAIL, _LETVAL = 0, 1, 2

# How a node is printed.
_LEAF = 0    # %var, @global, a literal or meta constant
_BOUND = 1   # `%n = expr;` in its home block
_INLINE = 2  # written out in its single slot
_FLAT = 3    # a tail Let: `let %v = value;` statements continuing the enclosing block

_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]")
_LEAF_TYPES = frozenset((Var, Constant, GlobalVar, Op))
_REF_TYPES = frozenset((RefCreate, RefRead, RefWrite))   # printed as TVM does: ref(v), ref_read(r), ref_write(r, v)
_COMPOUND_TYPES = frozenset((Tuple, TupleGetItem, Let, If, Function)) | _REF_TYPES  # and Call
_MISSING = object()


def _uses(node: Expr) -> list[tuple[Expr, int]]:
    """The operands of ``node`` with how each is used (binders - params, let variables - are not uses)."""
    if isinstance(node, Call):
        uses = [(a, _OPERAND) for a in node.args]
        if not isinstance(node.op, Op):
            uses.insert(0, (node.op, _OPERAND))
        return uses
    if isinstance(node, Tuple):
        return [(f, _OPERAND) for f in node.fields]
    if isinstance(node, TupleGetItem):
        return [(node.tuple_value, _OPERAND)]
    if isinstance(node, Let):
        return [(node.value, _LETVAL), (node.body, _TAIL)]
    if isinstance(node, If):
        return [(node.cond, _OPERAND), (node.true_branch, _TAIL), (node.false_branch, _TAIL)]
    if isinstance(node, Function):
        return [(node.body, _TAIL)]
    return [(c, _OPERAND) for c in children(node)]   # references: operands only


class _Output:
    """What one ``astext`` call accumulates: lines, the line of each node, and the metadata constants."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.line_of: dict[Expr, int] = {}
        self.meta: list[np.ndarray] = []
        self.meta_index: dict[Constant, int] = {}
        self.type_cache: dict = {}
        self.comment_cache: dict[int, str] = {}
        self.attrs_cache: dict[tuple[type, str], list[str]] = {}
        self.attrs_by_id: dict[int, list[str]] = {}
        self.literal_cache: dict[tuple[str, bytes], str | None] = {}

    def type_comment(self, t) -> str:
        # Keyed by identity: the type objects stay alive (held by the nodes) while one text is printed.
        s = self.comment_cache.get(id(t))
        if s is None:
            s = self.comment_cache[id(t)] = f" /* ty={self.type_str(t)} */"
        return s

    def type_str(self, t) -> str:
        try:
            s = self.type_cache.get(t)
        except TypeError:  # an unhashable foreign type object
            return type_text(t)
        if s is None:
            s = self.type_cache[t] = type_text(t)
        return s

    def attr_parts(self, attrs) -> list[str]:
        """``name=value`` for the fields that differ from their defaults, when that provably round-trips."""
        parts = self.attrs_by_id.get(id(attrs))  # attrs objects stay alive while one text is printed
        if parts is not None:
            return parts
        key = (type(attrs), repr(attrs))  # repr tells 1, 1.0 and True apart, which == does not
        parts = self.attrs_cache.get(key)
        if parts is None:
            fields = attr_defaults(type(attrs))
            every = [(name, getattr(attrs, name)) for name, _ in fields]
            short = {name: v for (name, default), (_, v) in zip(fields, every)
                     if default is NO_DEFAULT or not same_value(v, default)}
            try:  # rebuilding from the short form must give the same value, else print every field
                if type(attrs)(**short) != attrs:
                    short = dict(every)
            except Exception:  # noqa: BLE001 - any failure means "print everything"
                short = dict(every)
            parts = self.attrs_cache[key] = [f"{name}={attr_text(v)}" for name, v in short.items()]
        self.attrs_by_id[id(attrs)] = parts
        return parts


class _RootPrinter:
    """Layout and emission of one root: a global function (printed as ``def``) or a bare expression.

    Side tables are keyed by the nodes themselves (identity hashed) and filled in two linear passes.
    """

    def __init__(self, out: _Output, root: Expr):
        self.out = out
        self.root = root
        self.order = order = post_order(root)
        # Uses: how many times each node is used, and the slot of those whose use is a tail or a let value.
        count: dict[Expr, int] = {root: 1}
        slot_use: dict[Expr, int] = {root: _TAIL}
        get = count.get
        for node in order:
            t = type(node)
            if t is Call:
                if type(node.op) is not Op:
                    count[node.op] = get(node.op, 0) + 1
                for c in node.args:
                    count[c] = get(c, 0) + 1
            elif t in _LEAF_TYPES:
                continue
            elif t not in _COMPOUND_TYPES:  # the layout dispatches on exact node classes
                from ..errors import IRError
                raise IRError(f"cannot print a {t.__name__} node: not one of the IR's node classes",
                              hint="build nodes with the byoc.relay / byoc.ir constructors")
            else:
                for c, k in _uses(node):
                    count[c] = get(c, 0) + 1
                    if k != _OPERAND:
                        slot_use[c] = k
        self.count = count
        mode: dict[Expr, int] = {}
        for node in order:
            t = type(node)
            if t in _LEAF_TYPES:
                continue
            if count[node] == 1 and node in slot_use:
                mode[node] = _FLAT if t is Let and slot_use[node] == _TAIL else _INLINE
            else:
                mode[node] = _BOUND
        self.mode = mode
        self._place()
        self._name()

    # ------------------------------------------------------------------------------------------- layout

    def _place(self) -> None:
        """Assign every node its home block (the LCA of its uses' blocks), users before operands."""
        parent, depth = [-1], [0]
        tail_of: list[Expr] = [self.root]
        home: dict[Expr, int] = {self.root: 0}
        owned: dict[Expr, tuple[int, ...]] = {}
        mode = self.mode
        leaf_types = _LEAF_TYPES
        has_lets: set[int] = set()

        def new_scope(p: int, tail: Expr) -> int:
            parent.append(p)
            depth.append(depth[p] + 1)
            tail_of.append(tail)
            return len(parent) - 1

        def settle(c: Expr, s: int) -> None:
            cur = home.get(c)
            if cur is None:
                home[c] = s
            elif cur != s:
                a, b = cur, s
                while a != b:
                    if depth[a] >= depth[b]:
                        a = parent[a]
                    else:
                        b = parent[b]
                home[c] = a

        for node in reversed(self.order):
            t = type(node)
            if t in leaf_types:
                continue
            h = home[node]
            if t is Call or t is Tuple or t is TupleGetItem:
                for c in (node.args if t is Call else node.fields if t is Tuple else (node.tuple_value,)):
                    if type(c) not in leaf_types:
                        cur = home.get(c)
                        if cur is None:
                            home[c] = h
                        elif cur != h:
                            settle(c, h)
                if t is Call and type(node.op) not in leaf_types:
                    settle(node.op, h)
            elif t in _REF_TYPES:
                for c in children(node):
                    if type(c) not in leaf_types:
                        settle(c, h)
            elif t is Let:
                s = h if mode[node] == _FLAT else new_scope(h, node.body)
                owned[node] = (s,)
                has_lets.add(s)
                settle(node.value, s)
                settle(node.body, s)
            elif t is If:
                tb, fb = new_scope(h, node.true_branch), new_scope(h, node.false_branch)
                owned[node] = (tb, fb)
                settle(node.cond, h)
                settle(node.true_branch, tb)
                settle(node.false_branch, fb)
            elif t is Function:
                s = new_scope(h, node.body)
                owned[node] = (s,)
                settle(node.body, s)
        self.owned, self.tail_of = owned, tail_of
        items: list[list[tuple[float, Expr, bool]]] = [[] for _ in parent]
        index = {node: i for i, node in enumerate(self.order)} if has_lets else {}
        for i, node in enumerate(self.order):
            m = mode.get(node)
            if m == _BOUND:
                items[home[node]].append((i, node, False))
            if m is not None and type(node) is Let:
                key = max(index[node.var], index[node.value]) + 0.5
                items[owned[node][0]].append((key, node, True))
        for s in has_lets:
            items[s].sort(key=lambda item: item[0])
        self.items = items

    def _name(self) -> None:
        """%0, %1, ... for bound nodes in post-order; variables keep their names, made unique."""
        refs: dict[Expr, str] = {}
        taken: set[str] = set()
        next_suffix: dict[str, int] = {}
        bound: set[Expr] = set()
        mode = self.mode
        n = 0
        for node in self.order:
            t = type(node)
            if t is Var:
                base = _BAD_NAME_CHARS.sub("_", node.name_hint) or "v"
                if base.isdigit():
                    base = "v" + base  # bare numbers are the names of bound nodes
                k = next_suffix.get(base, 0)  # resume where the last clash stopped: linear, not quadratic
                name = f"{base}_{k}" if k else base
                while name in taken:
                    k += 1
                    name = f"{base}_{k}"
                next_suffix[base] = k
                taken.add(name)
                refs[node] = "%" + name
            elif mode.get(node) == _BOUND:
                refs[node] = f"%{n}"
                n += 1
            elif t is GlobalVar:
                refs[node] = "@" + quote_name(node.name_hint)
            if t is Function:
                bound.update(node.params)
            elif t is Let:
                bound.add(node.var)
        self.refs = refs
        self.free_vars = [v for v in self.order if type(v) is Var and v not in bound]

    # ----------------------------------------------------------------------------------------- spelling

    def ref(self, node: Expr) -> str:
        text = self.refs.get(node)
        if text is not None:
            return text
        if type(node) is Constant:
            text = self._const_ref(node)
        elif isinstance(node, Op):
            text = node.name
        else:  # unreachable for well-formed layouts: a slot-only node referenced as an operand
            text = f"%<{type(node).__name__}>"
        self.refs[node] = text
        return text

    def _const_ref(self, node: Constant) -> str:
        out = self.out
        text = None
        data = node.data
        if data.ndim == 0 and self.count.get(node, 0) <= 1:
            key = (data.dtype.str, data.tobytes())
            text = out.literal_cache.get(key, _MISSING)
            if text is _MISSING:
                text = out.literal_cache[key] = scalar_literal(data)
        if text is None:
            k = out.meta_index.get(node)
            if k is None:
                k = out.meta_index[node] = len(out.meta)
                out.meta.append(data)
            text = f"meta[relay.Constant][{k}]"
        return text + self.ty(node)

    def ty(self, node: Expr) -> str:
        t = node._checked_type  # type: ignore[attr-defined]
        return "" if t is None else self.out.type_comment(t)

    def expr_text(self, node: Expr) -> str:
        refs, ref = self.refs, self.ref
        t = type(node)
        if t is Call:
            parts = [refs.get(a) or ref(a) for a in node.args]
            op = node.op
            if type(op) is Op:
                if node.attrs is not None:
                    parts.extend(self.out.attr_parts(node.attrs))
                return f"{op.name}({', '.join(parts)})"
            return f"{ref(op)}({', '.join(parts)})"
        if t is Tuple:
            inner = ", ".join(ref(f) for f in node.fields)
            return f"({inner},)" if len(node.fields) == 1 else f"({inner})"
        if t is TupleGetItem:
            return f"{ref(node.tuple_value)}.{node.index}"
        if t is RefCreate:
            return f"ref({ref(node.value)})"
        if t is RefRead:
            return f"ref_read({ref(node.ref)})"
        if t is RefWrite:
            return f"ref_write({ref(node.ref)}, {ref(node.value)})"
        return ref(node)

    def signature(self, func: Function) -> str:
        """``(%x: T, Key=value) -> R``: parameters, then function attributes, as TVM prints them."""
        parts = []
        for p in func.params:
            ann = p.type_annotation
            parts.append(self.refs[p] + ("" if ann is None else ": " + self.out.type_str(ann)))
        for key, value in func.attrs.items():
            k = key if isinstance(key, str) and IDENT_RE.match(key) else attr_text(str(key))
            parts.append(f"{k}={attr_text(value)}")
        ret = "" if func.ret_type is None else " -> " + self.out.type_str(func.ret_type)
        return f"({', '.join(parts)}){ret}"

    # ----------------------------------------------------------------------------------------- emission

    def emit(self, def_name: str | None = None) -> None:
        """Append the root's lines to the output; a Function root with ``def_name`` prints as ``def @name``."""
        if def_name is not None:
            assert isinstance(self.root, Function)
            head = f"def @{quote_name(def_name)}{self.signature(self.root)} {{"
            work: list[tuple] = [("t", "}", None), ("b", self.owned[self.root][0], 1), ("t", head, self.root)]
        else:
            work = [("b", 0, 0)]
        lines, line_of = self.out.lines, self.out.line_of
        while work:
            item = work.pop()
            tag = item[0]
            if tag == "t":
                if item[2] is not None and item[2] not in line_of:
                    line_of[item[2]] = len(lines)
                lines.append(item[1])
            elif tag == "m":
                if item[1] not in line_of:
                    line_of[item[1]] = len(lines)
            else:
                expanded = self._block(item[1], item[2])
                expanded.reverse()
                work.extend(expanded)

    def _block(self, scope: int, depth: int) -> list[tuple]:
        pad = "  " * depth
        out: list[tuple] = []
        type_str = self.out.type_str
        if scope == 0:
            for v in self.free_vars:
                ann = v.type_annotation
                out.append(("t", f"{pad}free_var {self.refs[v]}{'' if ann is None else ': ' + type_str(ann)};", v))
        mode, refs = self.mode, self.refs
        for _, node, is_let in self.items[scope]:
            if is_let:
                var, value = node.var, node.value
                ann = "" if var.type_annotation is None else ": " + type_str(var.type_annotation)
                head = f"{pad}let {refs[var]}{ann} = "
                if mode.get(value) == _INLINE:
                    out.append(("m", node))
                    self._expr_items(out, value, head, ";", depth)
                else:
                    out.append(("t", head + self.ref(value) + ";", node))
            else:
                t = type(node)
                if t is Call or t is Tuple or t is TupleGetItem or t in _REF_TYPES:  # the single-line case
                    out.append(("t", f"{pad}{refs[node]} = {self.expr_text(node)}{self.ty(node)};", node))
                else:
                    self._expr_items(out, node, f"{pad}{refs[node]} = ", ";", depth)
        tail = self.tail_of[scope]
        while mode.get(tail) == _FLAT:
            tail = tail.body  # type: ignore[attr-defined]
        if mode.get(tail) == _INLINE:
            self._expr_items(out, tail, pad, "", depth)
        else:
            out.append(("t", pad + self.ref(tail), None))
        return out

    def _expr_items(self, out: list[tuple], node: Expr, prefix: str, suffix: str, depth: int) -> None:
        pad = "  " * depth
        ty = self.ty(node)
        t = type(node)
        if t is Function:
            out.append(("t", f"{prefix}fn {self.signature(node)} {{", node))
            out.append(("b", self.owned[node][0], depth + 1))
            out.append(("t", f"{pad}}}{ty}{suffix}", None))
        elif t is If:
            tb, fb = self.owned[node]
            out.append(("t", f"{prefix}if ({self.ref(node.cond)}) {{", node))
            out.append(("b", tb, depth + 1))
            out.append(("t", f"{pad}}} else {{", None))
            out.append(("b", fb, depth + 1))
            out.append(("t", f"{pad}}}{ty}{suffix}", None))
        elif t is Let:
            out.append(("t", f"{prefix}{{", node))
            out.append(("b", self.owned[node][0], depth + 1))
            out.append(("t", f"{pad}}}{ty}{suffix}", None))
        else:
            out.append(("t", f"{prefix}{self.expr_text(node)}{ty}{suffix}", node))


def _render(obj, show_meta_data: bool) -> _Output:
    out = _Output()
    out.lines.append(VERSION_LINE)
    if isinstance(obj, IRModule):
        for i, (gv, func) in enumerate(obj.sorted_items()):
            if i:
                out.lines.append("")
            _RootPrinter(out, func).emit(gv.name_hint)
    elif isinstance(obj, Expr):
        _RootPrinter(out, obj).emit()
    else:
        from ..errors import IRError
        raise IRError(f"astext needs an IRModule or an Expr, got {type(obj).__name__}")
    if out.meta:
        if show_meta_data:
            out.lines.extend(encode_metadata(out.meta))
        else:
            out.lines.append("/* metadata section omitted; print with show_meta_data=True to include it */")
    return out


def astext(obj, show_meta_data: bool = True) -> str:
    """The text of a module or expression; ``byoc.parse`` reads it back (with ``show_meta_data=True``)."""
    with gc_paused():
        return "\n".join(_render(obj, show_meta_data).lines) + "\n"


def excerpt(root, node: Expr, before: int = 4, after: int = 2) -> str:
    """The printed lines of ``root`` around the one that defines ``node``, marked with ``^^^^`` beneath."""
    with gc_paused():
        out = _render(root, show_meta_data=False)
    line = out.line_of.get(node)
    if line is None:  # a leaf printed inside its first user's line
        roots = [f for _, f in root.sorted_items()] if isinstance(root, IRModule) else [root]
        for user in post_order(roots):
            if user in out.line_of and any(c is node for c in children(user)):
                line = out.line_of[user]
                break
    if line is None:
        return ""
    lines = out.lines
    lo, hi = max(1, line - before), min(len(lines), line + after + 1)
    width = len(str(hi))
    text = []
    for i in range(lo, hi):  # lines[0] is the version header, so list index i is text line i + 1
        text.append(f"{i + 1:>{width}} | {lines[i]}")
        if i == line:
            content = lines[i]
            start = len(content) - len(content.lstrip())
            end = content.find(" /* ty=")
            end = len(content.rstrip(";")) if end < 0 else end
            text.append(f"{'':>{width}} | {' ' * start}{'^' * max(4, end - start)}")
    return "\n".join(text)
