"""The reference interpreter: ``byoc.evaluate(mod, inputs, params)``.

An explicit-stack machine (no recursion over graph depth) that evaluates Let, If, tuples, closures and calls
to composite, partitioned and global functions. Primitive ops run their registry reference implementation, the
bit-exact definition every backend is compared against.

A closure captures only the values of its function's free variables, and a call's frame holds only the
callee's parameters and let bindings (looked up before the captured values): a call costs O(parameters), never
O(size of the caller's environment), so A-normal-form programs with many closure calls stay linear.

References (``RefCreate`` / ``RefRead`` / ``RefWrite``) are mutable cells. Evaluation order is Relay's: operands
left to right, a let's value before its body, an if's condition before the branch taken. A node shared by several
users is evaluated once per function activation, at its first use (the graph's meaning, as ``ToANormalForm``
binds it once): bind a reference with ``let`` to read it again after a write.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ByocError, ExecutionError
from .ir.analysis import free_vars
from .ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Op, RefCreate, RefRead, RefWrite, Tuple,
                      TupleGetItem, Var)
from .ir.traversal import children
from .ir.module import IRModule
from .ir.types import TensorType

__all__ = ["evaluate", "Interpreter", "Closure", "RefValue", "check_inputs"]


@dataclass(eq=False)
class Closure:
    """A function value: ``env`` maps (by variable id) the function's free variables to their values."""
    func: Function
    env: dict[int, Any]


@dataclass(eq=False)
class RefValue:
    """A reference cell (Relay's ``RefValue``): ``RefWrite`` changes ``value`` in place."""
    value: Any


_NO_ENV: dict[int, Any] = {}  # the captured environment of a closed function (never written)


class _Frame:
    """One function activation: ``env`` holds its parameters and let bindings, ``captured`` the values its
    closure captured (read only)."""
    __slots__ = ("env", "captured", "memo")

    def __init__(self, env: dict[int, Any], captured: dict[int, Any]):
        self.env = env
        self.captured = captured
        self.memo: dict[int, Any] = {}


class Interpreter:
    """Evaluates expressions of a module. ``tap`` (optional) sees every primitive op's output."""

    def __init__(self, mod: IRModule, tap=None):
        self.mod = mod
        self.tap = tap
        # Per function literal (by id; the literal is kept alive with it): the ids of its free variables, in
        # first-use order (a tuple, so capturing never iterates a set) and as a set.
        self._free: dict[int, tuple[Function, tuple[int, ...], frozenset[int]]] = {}

    def call_function(self, func: Function, args: list, env: dict[int, Any] | None = None):
        return self.eval(func.body, _Frame({id(p): a for p, a in zip(func.params, args)}, env or _NO_ENV))

    def _free_vars(self, func: Function) -> tuple[Function, tuple[int, ...], frozenset[int]]:
        entry = self._free.get(id(func))
        if entry is None:
            ids = tuple(id(v) for v in free_vars(func))
            entry = self._free[id(func)] = (func, ids, frozenset(ids))
        return entry

    def _make_closure(self, func: Function, fr: _Frame) -> Closure:
        env: dict[int, Any] = {}
        local, captured = fr.env, fr.captured
        for key in self._free_vars(func)[1]:
            if key in local:
                env[key] = local[key]
            elif key in captured:
                env[key] = captured[key]
            # else: a recursive let binding (filled in by let_body) or an unbound variable (reported on use)
        return Closure(func, env)

    def eval(self, root: Expr, frame: _Frame):
        # Work items: (kind, node, frame, extra). Results flow through each frame's memo.
        stack: list[tuple] = [("eval", root, frame, None)]
        while stack:
            kind, node, fr, extra = stack.pop()
            memo = fr.memo
            key = id(node)
            if kind == "eval":
                if key in memo:
                    continue
                if isinstance(node, Var):
                    if key in fr.env:
                        memo[key] = fr.env[key]
                    elif key in fr.captured:
                        memo[key] = fr.captured[key]
                    else:
                        raise ExecutionError(f"variable %{node.name_hint} is not bound",
                                             hint="pass it in inputs or params")
                elif isinstance(node, Constant):
                    memo[key] = node.data
                elif isinstance(node, (Op, GlobalVar)):
                    memo[key] = node
                elif isinstance(node, Function):
                    memo[key] = self._make_closure(node, fr)
                elif isinstance(node, Let):
                    stack.append(("let_body", node, fr, None))
                    stack.append(("eval", node.value, fr, None))
                elif isinstance(node, If):
                    stack.append(("if_branch", node, fr, None))
                    stack.append(("eval", node.cond, fr, None))
                else:
                    stack.append(("finish", node, fr, None))
                    kids = node.fields if isinstance(node, Tuple) else (
                        (node.tuple_value,) if isinstance(node, TupleGetItem) else
                        children(node) if isinstance(node, (RefCreate, RefRead, RefWrite)) else
                        (node.args if isinstance(node.op, Op) else (node.op,) + node.args))
                    for k in reversed(kids):
                        if id(k) not in memo:
                            stack.append(("eval", k, fr, None))
            elif kind == "let_body":
                value = memo[id(node.value)]
                fr.env[id(node.var)] = value
                memo[id(node.var)] = value
                if isinstance(value, Closure) and value.func is node.value \
                        and id(node.var) in self._free_vars(value.func)[2]:
                    value.env[id(node.var)] = value  # a recursive binding: the closure calls itself
                stack.append(("alias", node, fr, node.body))
                stack.append(("eval", node.body, fr, None))
            elif kind == "if_branch":
                cond = memo[id(node.cond)]
                branch = node.true_branch if bool(np.asarray(cond).reshape(-1)[0]) else node.false_branch
                stack.append(("alias", node, fr, branch))
                stack.append(("eval", branch, fr, None))
            elif kind == "alias":
                memo[key] = memo[id(extra)]
            elif kind == "return":
                # extra = (caller frame, callee frame, body)
                caller, callee, body = extra
                caller.memo[key] = callee.memo[id(body)]
            elif kind == "finish":
                if isinstance(node, Tuple):
                    memo[key] = tuple(memo[id(f)] for f in node.fields)
                elif isinstance(node, TupleGetItem):
                    memo[key] = memo[id(node.tuple_value)][node.index]
                elif isinstance(node, RefCreate):
                    memo[key] = RefValue(memo[id(node.value)])
                elif isinstance(node, (RefRead, RefWrite)):
                    cell = memo[id(node.ref)]
                    if not isinstance(cell, RefValue):
                        raise ExecutionError(f"{type(node).__name__} of a value that is not a reference "
                                             f"({type(cell).__name__})", hint="run InferType to find the error")
                    if isinstance(node, RefRead):
                        memo[key] = cell.value
                    else:
                        cell.value = memo[id(node.value)]
                        memo[key] = ()
                elif isinstance(node.op, Op):
                    memo[key] = self._apply_op(node, [memo[id(a)] for a in node.args])
                else:
                    callee = memo[id(node.op)]
                    args = [memo[id(a)] for a in node.args]
                    if isinstance(callee, GlobalVar):
                        func, captured = self.mod[callee.name_hint], _NO_ENV
                    elif isinstance(callee, Closure):
                        func, captured = callee.func, callee.env
                    else:
                        raise ExecutionError(f"cannot call a value of type {type(callee).__name__}")
                    if len(args) != len(func.params):
                        raise ExecutionError(f"function expects {len(func.params)} arguments, got {len(args)}")
                    callee_frame = _Frame({id(p): a for p, a in zip(func.params, args)}, captured)
                    stack.append(("return", node, fr, (fr, callee_frame, func.body)))
                    stack.append(("eval", func.body, callee_frame, None))
        return frame.memo[id(root)]

    def _apply_op(self, call: Call, args: list):
        op_def = call.op.op_def
        if op_def.compute is None:
            raise ExecutionError(f"{op_def.name} has no reference implementation")
        try:
            out = op_def.compute(args, call.attrs)
        except ByocError:
            raise
        except (ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError, MemoryError) as e:
            raise ExecutionError(f"{op_def.name} failed on inputs of shapes "
                                 f"{[getattr(a, 'shape', None) for a in args]}: {e}") from e
        if self.tap is not None:
            self.tap(call, out)
        return out


def check_inputs(func: Function, inputs: dict[str, Any]) -> list[np.ndarray]:
    """Inputs by parameter name, checked against the parameter types; reports every problem at once."""
    problems = []
    names = [p.name_hint for p in func.params]
    values = []
    for p in func.params:
        if p.name_hint not in inputs:
            problems.append(f"missing input %{p.name_hint}")
            values.append(None)
            continue
        v = np.asarray(inputs[p.name_hint])
        t = p.type_annotation
        if isinstance(t, TensorType):
            if tuple(v.shape) != t.shape:
                problems.append(f"input %{p.name_hint}: expected shape {t.shape}, found {tuple(v.shape)}")
            if v.dtype.name != t.dtype:
                problems.append(f"input %{p.name_hint}: expected dtype {t.dtype}, found {v.dtype.name}")
        values.append(v)
    extra = [k for k in inputs if k not in names]
    if extra:
        problems.append(f"unknown input(s) {', '.join(sorted(extra))}")
    if problems:
        raise ExecutionError("bad inputs: " + "; ".join(problems), hint=f"main takes: {', '.join(names)}")
    return values


def _flatten(value) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(reversed(v))
        elif isinstance(v, (RefValue, Closure)):
            raise ExecutionError(f"main returns a {'reference' if isinstance(v, RefValue) else 'function'}, "
                                 "not tensors", hint="return RefRead(ref) to get the value a reference holds"
                                 if isinstance(v, RefValue) else "return the result of calling it")
        else:
            out.append(np.asarray(v))
    return out


def bind_params(mod: IRModule, params: dict | None) -> IRModule:
    """Replace main's parameters named in ``params`` by constants (``bind_params_by_name``)."""
    if not params:
        return mod
    from .transform.bind import bind_params_by_name
    out = mod.copy()
    out["main"] = bind_params_by_name(mod["main"], params)
    return out


def evaluate(mod, inputs: dict | None = None, params: dict | None = None, tap=None) -> list[np.ndarray]:
    """Run ``main`` on ``inputs`` (by parameter name); returns the outputs as a flat list of arrays."""
    if isinstance(mod, Expr):
        mod = IRModule.from_expr(mod)
    if not isinstance(mod, IRModule):
        raise ExecutionError(f"evaluate expects an IRModule or an expression, got {type(mod).__name__}",
                             hint="import a model with byoc.frontend.from_tflite(...) or build one with relay")
    if inputs is not None and not isinstance(inputs, dict):
        raise ExecutionError(f"inputs must be a dict of parameter name -> array, got {type(inputs).__name__}",
                             hint="inputs: " + ", ".join(p.name_hint for p in mod["main"].params))
    mod = bind_params(mod, params)
    values = check_inputs(mod["main"], dict(inputs or {}))
    from .ops.custom import require_kernels
    require_kernels(mod["main"])   # an opaque custom op without a kernel: refused before any work is done
    # TVM-form chains run as the exact integer kernels they name; the tap sees the chain's end call.
    from .transform.canonicalize_qnn import canonicalize_module
    origin: dict = {}
    mod = canonicalize_module(mod, origin if tap is not None else None)
    if tap is not None and origin:
        user_tap = tap

        def tap(call, value):
            hit = origin.get(id(call))
            user_tap(hit[1] if hit is not None and hit[0] is call else call, value)
    out = Interpreter(mod, tap).call_function(mod["main"], values)
    return _flatten(out)
