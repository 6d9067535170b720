"""The IR verifier: ``verify(mod_or_expr)`` checks well-formedness and reports every problem at once.

Checks (all iterative, near-linear):

* binding: each Var is bound at most once (one function parameter or one Let) in the whole module;
* scoping: every use of a bound variable lies inside its binder's scope (the Let body or the function body);
  in a module every variable is bound (``main``'s parameters are bound by ``main``); an expression may have
  free variables (they become ``main``'s parameters);
* calls: op calls have the op's arity and attribute type; function literals and global functions are called
  with as many arguments as they have parameters; called globals exist;
* types: the module type-checks (``InferType``), when the structure is sound; then every function's
  ``ret_type``, when set, is its body's type (a pass that changed a body must not keep the old return type);
* composites: a ``Composite`` function literal is only ever a call target, is closed (uses only its own
  parameters) and contains no nested composite;
* partitions: a ``Compiler`` function is a global function with ``global_symbol`` equal to its name and
  ``Primitive=1``; the call graph between global functions has no cycle.
"""
from __future__ import annotations

from ..errors import ByocError, IRError
from .expr import Call, Expr, Function, GlobalVar, Let, Op, Var
from .module import IRModule
from .scopes import Scope, is_within, lca
from .traversal import children, post_order

__all__ = ["verify", "verify_problems"]

_MAX_LISTED = 50


def _fn_label(func: Function, name: str | None) -> str:
    if name is not None:
        return "@" + name
    if "Composite" in func.attrs:
        return f"composite function {func.attrs['Composite']!r}"
    return "a function literal"


class _FunctionChecker:
    """Checks one global function (or a bare expression) and records problems."""

    def __init__(self, root: Expr, name: str | None, mod: IRModule | None, problems: list[str],
                 binder_of: dict[int, str]):
        self.root = root
        self.name = name
        self.where = f"in @{name}" if name is not None else "in the expression"
        self.mod = mod
        self.problems = problems
        self.binder_of = binder_of  # var id -> description of its binder, module-wide
        self.order = post_order(root)

    def problem(self, text: str) -> None:
        self.problems.append(f"{self.where}: {text}")

    def run(self, allow_free_vars: bool) -> None:
        self.check_binders()
        self.check_scopes(allow_free_vars)
        self.check_calls()
        self.check_function_literals()

    # -- binding and scoping -------------------------------------------------------------------------------
    def check_binders(self) -> None:
        for node in self.order:
            if isinstance(node, Function):
                binder = f"a parameter of {_fn_label(node, self.name if node is self.root else None)}"
                for p in node.params:
                    self.bind(p, binder)
            elif isinstance(node, Let):
                self.bind(node.var, "a let")

    def bind(self, var: Var, binder: str) -> None:
        prev = self.binder_of.get(id(var))
        if prev is not None:
            self.problem(f"variable %{var.name_hint} is bound more than once (as {prev} and as {binder})")
        else:
            self.binder_of[id(var)] = binder

    def check_scopes(self, allow_free_vars: bool) -> None:
        """Every use of a variable must be inside the scope its binder opens (see ``ir.scopes``)."""
        top = Scope()
        incoming: dict[int, Scope] = {id(self.root): top}
        opened: dict[int, Scope] = {}  # var id -> the scope its binder opens
        reported: set[int] = set()
        for node in reversed(self.order):
            s = incoming.get(id(node))
            if s is None:
                continue  # only reached as a binder
            if isinstance(node, Var):
                self.check_var_use(node, s, opened, allow_free_vars, reported)
                continue
            if isinstance(node, Let):
                body = Scope(s)
                if id(node.var) not in opened:
                    opened[id(node.var)] = body
                edges: tuple = ((node.value, s), (node.body, body))
            elif isinstance(node, Function):
                body = Scope(s)
                for p in node.params:
                    opened.setdefault(id(p), body)
                edges = ((node.body, body),)
            else:
                edges = tuple((c, s) for c in children(node))
            for child, edge_scope in edges:
                prev = incoming.get(id(child))
                incoming[id(child)] = edge_scope if prev is None else lca(prev, edge_scope)

    def check_var_use(self, var: Var, used_in: Scope, opened: dict[int, Scope], allow_free_vars: bool,
                      reported: set[int]) -> None:
        scope = opened.get(id(var))
        if scope is None:
            if id(var) in self.binder_of:
                self.problem(f"variable %{var.name_hint} is used outside the scope of its binding "
                             f"({self.binder_of[id(var)]})")
            elif not allow_free_vars and id(var) not in reported:
                self.problem(f"variable %{var.name_hint} is used but never bound")
            reported.add(id(var))
        elif not is_within(used_in, scope):
            self.problem(f"variable %{var.name_hint} is used outside the scope of its binding "
                         f"({self.binder_of.get(id(var), 'unknown')}): a let variable is visible only in the "
                         "let body, a parameter only in its function's body")

    # -- calls ---------------------------------------------------------------------------------------------
    def check_calls(self) -> None:
        for node in self.order:
            if not isinstance(node, Call):
                continue
            callee = node.op
            n = len(node.args)
            if isinstance(callee, Op):
                self.check_op_call(node)
            elif isinstance(callee, Function):
                if n != len(callee.params):
                    self.problem(f"call of {_fn_label(callee, None)} passes {n} argument(s), "
                                 f"it has {len(callee.params)} parameter(s)")
            elif isinstance(callee, GlobalVar):
                if self.mod is None:
                    continue
                if callee.name_hint not in self.mod:
                    self.problem(f"call of unknown global function @{callee.name_hint}")
                elif n != len(self.mod[callee.name_hint].params):
                    self.problem(f"call of @{callee.name_hint} passes {n} argument(s), "
                                 f"it has {len(self.mod[callee.name_hint].params)} parameter(s)")

    def check_op_call(self, call: Call) -> None:
        try:
            op_def = call.op.op_def  # type: ignore[union-attr]
        except ByocError as e:
            self.problem(f"call of {e.message}")
            return
        if len(call.args) != op_def.num_inputs:
            self.problem(f"{op_def.name} takes {op_def.num_inputs} argument(s) ({', '.join(op_def.arg_names)}), "
                         f"got {len(call.args)}")
        if not isinstance(call.attrs, op_def.attrs_type):
            self.problem(f"{op_def.name} attributes are {type(call.attrs).__name__}, "
                         f"expected {op_def.attrs_type.__name__}")

    # -- composite and partitioned functions ---------------------------------------------------------------
    def check_function_literals(self) -> None:
        if not any(isinstance(n, Function) and n is not self.root for n in self.order):
            return
        call_targets = {id(n.op) for n in self.order if isinstance(n, Call) and isinstance(n.op, Function)}
        users_of_composite: dict[int, int] = {}
        for node in self.order:
            kids = children(node)
            for i, c in enumerate(kids):
                if isinstance(c, Function) and "Composite" in c.attrs:
                    is_target = isinstance(node, Call) and i == 0 and node.op is c
                    if not is_target:
                        users_of_composite[id(c)] = users_of_composite.get(id(c), 0) + 1
        for node in self.order:
            if not isinstance(node, Function) or node is self.root:
                continue
            label = _fn_label(node, None)
            if "Compiler" in node.attrs:
                self.problem(f"{label} with Compiler={node.attrs['Compiler']!r} is a local function literal; "
                             "partitioned functions must be global functions of the module")
            if "Composite" not in node.attrs:
                continue
            if not isinstance(node.attrs["Composite"], str) or not node.attrs["Composite"]:
                self.problem(f"{label}: the Composite attribute must be a non-empty string")
            if id(node) not in call_targets or users_of_composite.get(id(node)):
                self.problem(f"{label} is used as a value; a composite function may only be called directly")
            self.check_composite_body(node, label)

    def check_composite_body(self, func: Function, label: str) -> None:
        params = {id(p) for p in func.params}
        inner = post_order(func.body)
        bound = {id(n.var) for n in inner if isinstance(n, Let)}
        bound.update(id(p) for n in inner if isinstance(n, Function) for p in n.params)
        for n in inner:
            if isinstance(n, Var) and id(n) not in params and id(n) not in bound:
                self.problem(f"{label} uses %{n.name_hint}, which is not one of its parameters; "
                             "composite functions must be closed")
                break
        for n in inner:
            if isinstance(n, Function) and "Composite" in n.attrs:
                self.problem(f"{label} contains a nested composite function {n.attrs['Composite']!r}")
                break


def _check_module_level(mod: IRModule, orders: dict[str, list[Expr]], problems: list[str]) -> None:
    for gv, func in mod.sorted_items():
        if "Compiler" not in func.attrs:
            continue
        name = gv.name_hint
        sym = func.attrs.get("global_symbol")
        if sym is None:
            problems.append(f"@{name} (Compiler={func.attrs['Compiler']!r}) has no global_symbol attribute")
        elif sym != name:
            problems.append(f"@{name}: global_symbol is {sym!r}, expected {name!r} (the function's name)")
        if func.attrs.get("Primitive") != 1:
            problems.append(f"@{name} (Compiler={func.attrs['Compiler']!r}) needs Primitive=1, "
                            f"found {func.attrs.get('Primitive')!r}")
    _check_call_graph(mod, orders, problems)


def _check_call_graph(mod: IRModule, orders: dict[str, list[Expr]], problems: list[str]) -> None:
    """No cycle among global functions (iterative three-colour DFS); reports one cycle path."""
    callees: dict[str, list[str]] = {}
    for name, order in orders.items():
        callees[name] = list(dict.fromkeys(
            n.name_hint for n in order if isinstance(n, GlobalVar) and n.name_hint in mod))
    colour: dict[str, int] = {}
    for start in callees:
        if colour.get(start):
            continue
        path = [start]
        stack = [(start, 0)]
        colour[start] = 1
        while stack:
            name, i = stack.pop()
            if i < len(callees[name]):
                stack.append((name, i + 1))
                nxt = callees[name][i]
                if colour.get(nxt) == 1:
                    cycle = path[path.index(nxt):] + [nxt]
                    problems.append("global functions call each other in a cycle: "
                                    + " -> ".join("@" + c for c in cycle))
                    return
                if not colour.get(nxt):
                    colour[nxt] = 1
                    path.append(nxt)
                    stack.append((nxt, 0))
            else:
                colour[name] = 2
                path.pop()


def verify_problems(mod_or_expr, check_types: bool = True) -> list[str]:
    """The list of problems ``verify`` would report (empty when the IR is well formed)."""
    problems: list[str] = []
    binder_of: dict[int, str] = {}
    orders: dict[str | None, list[Expr]] = {}
    if isinstance(mod_or_expr, IRModule):
        mod: IRModule | None = mod_or_expr
        for gv, func in mod_or_expr.sorted_items():
            checker = _FunctionChecker(func, gv.name_hint, mod, problems, binder_of)
            checker.run(allow_free_vars=False)
            orders[gv.name_hint] = checker.order
        _check_module_level(mod_or_expr, orders, problems)  # type: ignore[arg-type]
    elif isinstance(mod_or_expr, Expr):
        mod = None
        checker = _FunctionChecker(mod_or_expr, None, None, problems, binder_of)
        checker.run(allow_free_vars=True)
        orders[None] = checker.order
    else:
        return [f"verify expects an IRModule or an Expr, got {type(mod_or_expr).__name__}"]
    if check_types and not problems:
        problems.extend(_type_problems(mod_or_expr))
        if not problems:
            problems.extend(_ret_type_problems(orders))
    return problems


def _ret_type_problems(orders: dict[str | None, list[Expr]]) -> list[str]:
    """Functions whose ``ret_type`` is not their (inferred) body's type. InferType checks a declared return
    type only when it types a function, so a stale one on a function whose type memo a pass carried over
    would otherwise go unnoticed."""
    problems = []
    for name, order in orders.items():
        for node in order:
            if not isinstance(node, Function) or node.ret_type is None:
                continue
            body_type = node.body._checked_type  # type: ignore[attr-defined]
            if body_type is not None and body_type != node.ret_type:
                where = f"in @{name}" if name is not None else "in the expression"
                label = _fn_label(node, name if node is order[-1] else None)
                problems.append(f"{where}: {label} has ret_type {node.ret_type}, but its body has type {body_type} "
                                "(a stale return type: the body changed and the old type was kept)")
    return problems


def _type_problems(mod_or_expr) -> list[str]:
    from ..transform.infer_type import infer_expr, infer_module
    try:
        if isinstance(mod_or_expr, IRModule):
            infer_module(mod_or_expr.copy())
        else:
            infer_expr(mod_or_expr)
    except ByocError as e:
        return ["type error: " + str(e).replace("\n", "\n    ")]
    return []


def verify(mod_or_expr, check_types: bool = True) -> None:
    """Raise ``IRError`` listing every problem found in ``mod_or_expr``; return None when it is well formed."""
    problems = verify_problems(mod_or_expr, check_types)
    if not problems:
        return
    listed = problems[:_MAX_LISTED]
    more = len(problems) - len(listed)
    notes = tuple("  - " + p for p in listed) + ((f"  ... and {more} more",) if more else ())
    raise IRError(f"IR verification failed: {len(problems)} problem(s)", notes=notes,
                  hint="each line names the function and the node involved")
