"""InferType: sets ``checked_type`` on every node, iteratively; errors show the offending line.

As in Relay, every function also gets its ``ret_type`` (the body's type) where none is declared; a declared one
is checked. Like the type memo it is filled in place: it is a pure function of the body, which never changes.
"""
from __future__ import annotations

from ..errors import ByocError, TypeInferenceError
from ..ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Op, RefCreate, RefRead, RefWrite, Tuple,
                       TupleGetItem, Var)
from ..ir.module import IRModule
from ..ir.traversal import children, plain_on_calls, post_order
from ..ir.types import FuncType, RelayRefType, TensorType, TupleType, Type
from ..ops.registry import arg_types_hint
from .pass_infra import ModulePass, PassContext

__all__ = ["InferType", "InferTypeLocal", "infer_expr", "infer_module"]


@plain_on_calls
def _type_children(node: Expr) -> tuple[Expr, ...]:
    # A Let's value is typed before its variable, so an unannotated variable takes the value's type.
    if isinstance(node, Let):
        return (node.value, node.var, node.body)
    return children(node)


def _type_children_args_first(node: Expr) -> tuple[Expr, ...]:
    # The slow order, used only when a parameter has no annotation: a called function literal comes after its
    # arguments, so its unannotated parameters take their argument's type (Relay unifies them the same way).
    if type(node) is Call and type(node.op) is Function:
        return node.args + (node.op,)
    return _type_children(node)


class _RecursiveResult(Type):
    """The not-yet-known return type of a let-bound function that calls itself (Relay's while-loop idiom,
    ``let %loop = fn(...) { if (...) { %loop(...) } else { ... } }``). Relay's solver gives it a type variable
    and unifies; here a recursive call's result may flow only into ``If`` branches and ``Let`` bodies (where
    the other branch decides), which is what the idiom needs, and is replaced by the function's body type
    once the function is typed."""

    __slots__ = ("var", "nodes")

    def __init__(self, var: Var):
        self.var = var
        self.nodes: list[Expr] = []          # nodes typed with this placeholder, patched at resolution

    def __repr__(self) -> str:
        return f"<return type of %{self.var.name_hint}>"


# Ops typed as their operand, through which a recursive call's not-yet-known result may flow.
_IDENTITY_TYPED = frozenset({"annotation.compiler_begin", "annotation.compiler_end"})


def _pending(t) -> bool:
    return type(t) is _RecursiveResult


def _recursive_ref(var: Var, value: Function, touched) -> Type:
    """The type of a reference to a let-bound function from inside its own body."""
    for p in value.params:
        if p._checked_type is None:
            msg, hint = _unannotated_message(p)
            raise TypeInferenceError(msg + f" (a parameter of the recursive function %{var.name_hint})", hint=hint)
    params = tuple(p.checked_type for p in value.params)
    if value.ret_type is not None:
        return FuncType(params, value.ret_type)
    return FuncType(params, _RecursiveResult(var))


def _resolve_recursive(let: Let, touched) -> None:
    """The let-bound function is typed: its variable gets the function's type, recursive calls its result."""
    var, ft = let.var, let.value.checked_type
    placeholder = var._checked_type.ret_type if isinstance(var._checked_type, FuncType) else None
    if _pending(placeholder):
        for n in placeholder.nodes:
            n._set_checked_type(ft.ret_type)
    _annotate(var, ft, touched)


class _Touched:
    """What the slow order typed (and which variables it annotated), so a failure can undo it: two flat lists
    rather than a (node, flag) tuple per node, which at 100,000 nodes is megabytes of short-lived garbage."""

    __slots__ = ("typed", "annotated")

    def __init__(self):
        self.typed: list[Expr] = []
        self.annotated: list[Var] = []

    def undo(self) -> None:
        for n in self.typed:
            object.__setattr__(n, "_checked_type", None)
        for v in self.annotated:
            object.__setattr__(v, "_checked_type", None)
            object.__setattr__(v, "type_annotation", None)


class _Unannotated(TypeInferenceError):
    """A variable without a type annotation (retried once in the arguments-first order)."""


def _describe(node: Expr) -> str:
    if isinstance(node, Call):
        return node.op.name if isinstance(node.op, Op) else "call"
    return type(node).__name__


def infer_expr(expr: Expr, global_types: dict[str, Type] | None = None, root: Expr | None = None) -> Type:
    """Type every node under ``expr``; ``global_types`` gives the types of called global functions."""
    return _infer_in_order(expr, post_order(expr, child_fn=_type_children), global_types, root)


def InferTypeLocal(expr: Expr) -> Type:  # noqa: N802 - TVM's name
    """``relay.transform.InferTypeLocal(expr)``: type ``expr`` in place (free variables need annotations) and
    return its type."""
    return infer_expr(expr)


def _infer_in_order(expr: Expr, order: list[Expr], global_types: dict[str, Type] | None = None,
                    root: Expr | None = None) -> Type:
    """``infer_expr`` given ``post_order(expr, child_fn=_type_children)``."""
    # One sweep finds the binders (each sweep over a 100,000-node graph reads every node from main memory).
    # An unannotated let variable takes its value's type; the value precedes the variable in ``order``.
    let_value: dict[int, Expr] = {}
    literal_calls = False
    for n in order:
        t = type(n)
        if t is Call:
            if type(n.op) is Function:
                literal_calls = True
        elif isinstance(n, Let):
            let_value[id(n.var)] = n.value
    try:
        return _infer_ordered(expr, order, global_types, root, let_value)
    except _Unannotated:
        pass
    # The slow order may type nodes (and annotate variables) before it fails: then it undoes them, so a failed
    # inference leaves the graph as the fast order would.
    touched = _Touched()
    # The two orders differ only at calls of function literals: without one the fast order is reused (a second
    # traversal of a 100,000-node graph costs a tenth of the pass).
    if literal_calls:
        order = post_order(expr, child_fn=_type_children_args_first)
        let_value = dict(let_value)
        for n in order:  # ... and an unannotated parameter of a called function literal its argument's
            if type(n) is Call and type(n.op) is Function:
                for p, a in zip(n.op.params, n.args):
                    if p.type_annotation is None:
                        let_value.setdefault(id(p), a)
    try:
        return _infer_ordered(expr, order, global_types, root, let_value, touched)
    except ByocError:
        touched.undo()
        raise


def _infer_ordered(expr: Expr, order: list[Expr], global_types, root, let_value: dict[int, Expr],
                   touched: _Touched | None = None) -> Type:
    """Type the nodes of ``order``; with ``touched`` (the arguments-first retry) unannotated variables are left
    to the op that uses them, and what gets typed is logged for undoing."""
    global_types = global_types or {}
    args_first = touched is not None
    typed = touched.typed.append if touched is not None else None
    shared = _SHARED_TYPES.get
    for node in order:
        if node._checked_type is not None:  # type: ignore[attr-defined]
            if type(node) is Function and node.ret_type is None:  # typed by a pass that carries types over
                _fill_ret_type(node, node.body.checked_type)
            continue
        if args_first and type(node) is Var and node.type_annotation is None and id(node) not in let_value:
            continue  # typed by the op that uses it (arg_types), or reported at its function
        try:
            t = _infer_node(node, global_types, let_value, touched)
        except _Unannotated:
            raise  # the fast order gives up at once (the slow order skips such variables above)
        except ByocError as e:
            _attach_excerpt(e, root if root is not None else expr, node)
            raise
        if type(t) is TensorType:   # one object per distinct tensor type (``_shared``, inlined: once per node)
            t = shared((t.shape, t.dtype)) or _shared(t)
        node._set_checked_type(t)
        if typed is not None:
            typed(node)
    return expr.checked_type


_SHARED_TYPES: dict[tuple[tuple[int, ...], str], TensorType] = {}
_SHARED_LIMIT = 4096


def _shared(t: Type) -> Type:
    """Equal tensor types as one object: a graph's nodes have a few distinct types, and a fresh object per node
    is memory that every later pass walks past (a bounded table: types are values, sharing never changes one)."""
    if type(t) is not TensorType:
        return t
    key = (t.shape, t.dtype)
    s = _SHARED_TYPES.get(key)
    if s is None:
        if len(_SHARED_TYPES) >= _SHARED_LIMIT:
            _SHARED_TYPES.clear()
        s = _SHARED_TYPES[key] = t
    return s


def _fill_ret_type(func: Function, body_type: Type) -> None:
    object.__setattr__(func, "ret_type", body_type)


def _attach_excerpt(err: ByocError, root: Expr, node: Expr) -> None:
    try:
        from ..text.printer import excerpt
        text = excerpt(root, node)
    except Exception:  # the excerpt is a courtesy; never mask the type error itself
        text = None
    if text:
        err.with_note(text)


def _annotate(var: Var, t: Type, touched: _Touched | None) -> None:
    """Give an unannotated variable its inferred type as annotation, as Relay's InferType does (in place, like a
    function's ret_type: it is a pure function of what the variable is bound to)."""
    t = _shared(t)
    object.__setattr__(var, "type_annotation", t)
    var._set_checked_type(t)
    if touched is not None:
        touched.annotated.append(var)


def _type_args_from_op(call: Call, touched: _Touched | None = None) -> None:
    """Unannotated variables among ``call``'s operands take the types the op determines (``arg_types``)."""
    hint = arg_types_hint(call.op.name)
    types = [a._checked_type for a in call.args]
    if hint is not None:
        types = hint(types, call.attrs)
    for a, t in zip(call.args, types):
        if a._checked_type is not None:
            continue
        if t is None or type(a) is not Var:
            msg, h = _unannotated_message(a) if type(a) is Var else (f"operand of {call.op.name} has no type", None)
            raise TypeInferenceError(msg + f" (and {call.op.name} does not determine it)", hint=h)
        _annotate(a, t, touched)


def _type_args_from_callee(call: Call, ftype: Type, touched: _Touched | None = None) -> None:
    """Unannotated variables passed to a typed global function take its parameter types."""
    if not isinstance(ftype, FuncType) or len(ftype.arg_types) != len(call.args):
        return
    for a, t in zip(call.args, ftype.arg_types):
        if a._checked_type is None and type(a) is Var:
            _annotate(a, t, touched)


def _unannotated_message(var: Var) -> tuple[str, str]:
    return (f"variable %{var.name_hint} has no type annotation",
            "give it one: relay.var(name, shape=..., dtype=...)")


def _infer_node(node: Expr, global_types, let_value, touched: _Touched | None = None) -> Type:
    if isinstance(node, Constant):
        return node.type
    if isinstance(node, Var):
        if node.type_annotation is not None:
            return node.type_annotation
        if id(node) in let_value and type(let_value[id(node)]) is Function \
                and let_value[id(node)]._checked_type is None:    # used inside its own (let-bound) function
            return _recursive_ref(node, let_value[id(node)], touched)
        if id(node) in let_value:
            # As Relay's InferType, an unannotated variable gets its inferred type as annotation (filled in
            # place like a function's ret_type: it is a pure function of the value bound to it).
            t = let_value[id(node)].checked_type
            _annotate(node, t, touched)
            return t
        msg, hint = _unannotated_message(node)
        raise _Unannotated(msg, hint=hint)
    if isinstance(node, Call):
        arg_types = [a._checked_type for a in node.args]
        if None in arg_types:  # an unannotated variable (slow order only): its use determines its type
            if isinstance(node.op, Op):
                _type_args_from_op(node, touched)
            elif isinstance(node.op, GlobalVar) and node.op.name_hint in global_types:
                _type_args_from_callee(node, global_types[node.op.name_hint], touched)
            arg_types = [a.checked_type for a in node.args]
        for i, t in enumerate(arg_types):
            if _pending(t):
                if isinstance(node.op, Op) and node.op.name in _IDENTITY_TYPED and len(arg_types) == 1:
                    t.nodes.append(node)        # BYOC's region markers wrap the recursive call: same type
                    return t
                raise _early_use(t, f"argument {i} of {_describe(node)}")
        if isinstance(node.op, Op):
            op_def = node.op.op_def
            if op_def.type_rel is None:
                raise TypeInferenceError(f"{op_def.name} has no type relation")
            return op_def.type_rel(arg_types, node.attrs)
        if isinstance(node.op, GlobalVar):
            if node.op.name_hint not in global_types:
                raise TypeInferenceError(f"call to unknown or recursive global function @{node.op.name_hint}")
            ftype = global_types[node.op.name_hint]
        else:
            ftype = node.op.checked_type
        if not isinstance(ftype, FuncType):
            raise TypeInferenceError(f"callee is not a function (type {ftype})")
        if len(ftype.arg_types) != len(arg_types):
            raise TypeInferenceError(f"function call expects {len(ftype.arg_types)} arguments, got {len(arg_types)}")
        for i, (want, got) in enumerate(zip(ftype.arg_types, arg_types)):
            if want != got:
                raise TypeInferenceError(f"function call argument {i}: expected {want}, found {got}")
        if _pending(ftype.ret_type):
            ftype.ret_type.nodes.append(node)
        return ftype.ret_type
    if isinstance(node, Tuple):
        for i, f in enumerate(node.fields):
            if _pending(f.checked_type):
                raise _early_use(f.checked_type, f"field {i} of a tuple")
        return TupleType(tuple(f.checked_type for f in node.fields))
    if isinstance(node, TupleGetItem):
        t = node.tuple_value.checked_type
        if _pending(t):
            raise _early_use(t, "a tuple projection")
        if not isinstance(t, TupleType):
            raise TypeInferenceError(f"TupleGetItem on a non-tuple value of type {t}")
        if node.index >= len(t.fields):
            raise TypeInferenceError(f"TupleGetItem index {node.index} out of range for {len(t.fields)} fields")
        return t.fields[node.index]
    if isinstance(node, Let):
        vt = node.var.checked_type
        if (type(node.value) is Function and isinstance(vt, FuncType)
                and node.var.type_annotation is None):     # a recursive let-bound function, now typed
            _resolve_recursive(node, touched)
            vt = node.var.checked_type
        if _pending(node.value.checked_type):
            raise _early_use(node.value.checked_type, f"the value of let %{node.var.name_hint}")
        if vt != node.value.checked_type:
            raise TypeInferenceError(f"let %{node.var.name_hint}: annotated {vt}, value has {node.value.checked_type}")
        bt = node.body.checked_type
        if _pending(bt):
            bt.nodes.append(node)
        return bt
    if isinstance(node, If):
        ct = node.cond.checked_type
        if not (isinstance(ct, TensorType) and ct.ndim == 0 and ct.dtype in ("bool", "int32", "int64", "int8",
                                                                                 "uint8")):
            raise TypeInferenceError(f"if condition must be a scalar bool, found {ct}")
        tt, ft = node.true_branch.checked_type, node.false_branch.checked_type
        if _pending(tt) or _pending(ft):        # unify: the other branch decides the recursive result's type
            if _pending(tt) and _pending(ft) and tt is ft:
                tt.nodes.append(node)
                return tt
            if _pending(tt) and _pending(ft):
                raise TypeInferenceError("if branches are results of two recursive functions, neither typed")
            return ft if _pending(tt) else tt
        if tt != ft:
            raise TypeInferenceError(f"if branches disagree: then {tt}, else {ft}")
        return tt
    if isinstance(node, Function):
        for p in node.params:
            if p._checked_type is None:
                msg, hint = _unannotated_message(p)
                raise TypeInferenceError(msg, hint=hint)
        body_t = node.body.checked_type
        if _pending(body_t):
            raise TypeInferenceError(f"the recursive function %{body_t.var.name_hint} never returns a value of "
                                     "known type (every path calls it again)",
                                     hint="give the function a return type: relay.Function(params, body, ret_type)")
        if node.ret_type is None:
            _fill_ret_type(node, body_t)
        elif node.ret_type != body_t:
            raise TypeInferenceError(f"function declares return type {node.ret_type}, body has {body_t}")
        return FuncType(tuple(p.checked_type for p in node.params), body_t)
    if isinstance(node, Op):
        return FuncType((), TupleType(()))
    if isinstance(node, GlobalVar):
        if node.name_hint in global_types:
            return global_types[node.name_hint]
        raise TypeInferenceError(f"reference to unknown global function @{node.name_hint}")
    if isinstance(node, (RefCreate, RefRead, RefWrite)):
        return _ref_type(node)
    raise TypeInferenceError(f"cannot type node {type(node).__name__}")


def _ref_type(node: Expr) -> Type:
    """Relay's rules: ``RefCreate(v: T)`` is ``Ref[T]``, ``RefRead(r: Ref[T])`` is ``T``, ``RefWrite(r: Ref[T],
    v: T)`` is the empty tuple."""
    name = type(node).__name__
    for k in children(node):
        if _pending(k.checked_type):
            raise _early_use(k.checked_type, f"an operand of {name}")
    if isinstance(node, RefCreate):
        return RelayRefType(node.value.checked_type)
    rt = node.ref.checked_type
    if not isinstance(rt, RelayRefType):
        raise TypeInferenceError(f"{name}: the reference operand has type {rt}, expected a reference (ref(T))",
                                 hint="make the reference with relay.RefCreate(value)")
    if isinstance(node, RefRead):
        return rt.value
    vt = node.value.checked_type
    if vt != rt.value:
        raise TypeInferenceError(f"RefWrite: the cell holds {rt.value}, the value written has type {vt}")
    return TupleType(())


def _early_use(t: _RecursiveResult, where: str) -> TypeInferenceError:
    return TypeInferenceError(f"the result of the recursive function %{t.var.name_hint} is used as {where} before "
                              "its return type is known (only if-branches and let bodies can take it)",
                              hint="give the function a return type: relay.Function(params, body, ret_type)")


def _global_order(mod: IRModule, orders: dict[str, list[Expr]]) -> list[str]:
    """Functions ordered callees first; recursion is reported. ``orders``: each function's type-inference
    post-order (global variables are leaves, so they come in the order ``post_order`` meets them)."""
    deps: dict[str, list[str]] = {}
    for gv, f in mod.sorted_items():
        deps[gv.name_hint] = list(dict.fromkeys(
            n.name_hint for n in orders[gv.name_hint] if isinstance(n, GlobalVar) and n.name_hint in mod))
    order: list[str] = []
    state: dict[str, int] = {}
    for start in deps:
        if state.get(start):
            continue
        stack = [(start, 0)]
        while stack:
            name, i = stack.pop()
            if i == 0:
                if state.get(name) == 2:
                    continue
                state[name] = 1
            if i < len(deps[name]):
                stack.append((name, i + 1))
                dep = deps[name][i]
                if state.get(dep) == 1:
                    raise TypeInferenceError(f"global function @{dep} is recursive; recursion is not supported")
                if not state.get(dep):
                    stack.append((dep, 0))
            else:
                state[name] = 2
                order.append(name)
    return order


def infer_module(mod: IRModule) -> IRModule:
    global_types: dict[str, Type] = {}
    orders = {gv.name_hint: post_order(f, child_fn=_type_children) for gv, f in mod.items()}
    for name in _global_order(mod, orders):
        func = mod[name]
        try:
            global_types[name] = _infer_in_order(func, orders.pop(name), global_types)
        except TypeInferenceError as e:
            e.with_note(f"in function @{name}")
            raise
        mod.get_global_var(name)._set_checked_type(global_types[name])
    return mod


class InferType(ModulePass):
    name = "InferType"
    opt_level = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return infer_module(mod.copy())
