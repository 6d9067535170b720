"""FoldConstant: evaluate calls whose operands are all constants, with the ops' reference implementations.

TVM semantics (``src/relay/transforms/fold_constant.cc``), kept here:

* only calls of primitive ops with at least one operand are evaluated (``ones()``-style zero-operand calls are
  left alone: folding them only makes big constants);
* an operand counts as constant when it is a ``Constant`` or a ``Tuple`` of constants (recursively);
* ``qnn.*`` ops are folded only with ``fold_qnn=True``;
* a Let whose value folds to a constant is removed and its variable replaced by the constant;
* ``TupleGetItem`` of a ``Tuple`` becomes the field, and ``If`` with a constant condition becomes the branch;
* nothing is folded inside ``Primitive`` functions; global ``Compiler``/``Extern``/``SkipOptimization``
  functions are skipped by the function-pass driver.

Deliberate difference: functions with a ``Composite`` attribute are treated like ``Primitive`` ones. A
composite body is exactly the op chain a pattern matched; folding inside it would silently change what the
backend receives. A TVM-form quantized-activation / MEAN chain on a constant folds to its exact integer kernel's
value (``_exact_chain_value``), never to its float ops'. A call whose reference implementation rejects its constant operands (e.g. an integer
division by zero) is left unfolded, so the error surfaces only if that code actually runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import ByocError, PassError
from ..ir.expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.traversal import children, let_value_first, post_order, rebuild
from ..ir.types import TensorType, TupleType, Type
from .canonicalize_qnn import chain_kernel
from .pass_infra import FunctionPass, PassContext

__all__ = ["FoldConstant", "fold_constant", "OPAQUE_FUNCTION_ATTRS"]

# Function literals whose bodies no simplifying pass may change.
OPAQUE_FUNCTION_ATTRS = ("Primitive", "Composite", "Compiler", "Extern")


def is_opaque_function(node: Expr) -> bool:
    if not isinstance(node, Function):
        return False
    return any(node.attrs.get(k) not in (None, 0, "") for k in OPAQUE_FUNCTION_ATTRS)


def _outside_opaque(node: Expr) -> tuple[Expr, ...]:
    """Operands, treating opaque function literals as leaves (their bodies are not foldable)."""
    if is_opaque_function(node):
        return ()
    return let_value_first(node)


def _value_type(value) -> Type:
    if isinstance(value, tuple):  # op results are flat tuples of arrays
        return TupleType(tuple(_value_type(v) for v in value))
    return TensorType(value.shape, value.dtype.name)


def _value_expr(value, span) -> Expr:
    if isinstance(value, tuple):
        return Tuple(tuple(_value_expr(v, span) for v in value), span)
    return Constant(np.asarray(value), span)


class _Folder:
    """Folds one function; ``values`` maps each constant-valued rewritten node (Constant, or Tuple of
    constant-valued nodes) to its value and type, filled bottom-up so nested tuples need no recursion."""

    def __init__(self, fold_qnn: bool):
        self.fold_qnn = fold_qnn
        self.values: dict[int, tuple[object, Type]] = {}

    def constant_value(self, node: Expr):
        if isinstance(node, Constant):
            return node.data, node.type
        if isinstance(node, Tuple):
            got = self.values.get(id(node))
            if got is None:
                fields = [self.constant_value(f) if isinstance(f, Constant) else self.values.get(id(f))
                          for f in node.fields]
                if any(f is None for f in fields):
                    return None
                got = (tuple(v for v, _ in fields), TupleType(tuple(t for _, t in fields)))
                self.values[id(node)] = got
            return got
        return None

    def foldable_op(self, call: Call) -> bool:
        if not isinstance(call.op, Op) or not call.args:
            return False
        if call.op.name.startswith("qnn.") and not self.fold_qnn:
            return False
        if call.op.name == "tflite.custom":   # a user's kernel runs when the model runs, never while compiling
            return False
        return call.op.op_def.compute is not None

    def evaluate(self, call: Call) -> Expr | None:
        if not all(isinstance(a, (Constant, Tuple)) for a in call.args):
            return None
        operands = [self.constant_value(a) for a in call.args]
        if any(o is None for o in operands):
            return None
        op_def = call.op.op_def
        try:
            expected = op_def.type_rel([t for _, t in operands], call.attrs) if op_def.type_rel else None
            out = op_def.compute([v for v, _ in operands], call.attrs)
        except (ByocError, ArithmeticError, ValueError, IndexError, TypeError):
            return None  # ill-typed or failing on these values: leave it for the executor to report
        out = tuple(np.asarray(o) for o in out) if isinstance(out, (tuple, list)) else np.asarray(out)
        if expected is not None and _value_type(out) != expected:
            raise PassError(f"FoldConstant: {op_def.name}'s reference implementation returned "
                            f"{_value_type(out)}, its type relation says {expected}",
                            hint="the op's compute and type relation disagree; fix the op definition")
        return _value_expr(out, call.span)


def fold_constant(expr: Expr, fold_qnn: bool = False) -> Expr:
    """Fold constants in ``expr`` (iteratively; shared sub-expressions are folded once)."""
    order = post_order(expr, child_fn=let_value_first)
    if not _may_fold(order):
        return expr  # the rewrite below would rebuild every node into itself
    folder = _Folder(fold_qnn)
    foldable = {id(n) for n in post_order(expr, child_fn=_outside_opaque)}
    let_of_var = {id(n.var): n for n in order if isinstance(n, Let)}
    memo: dict[int, Expr] = {}
    for node in order:
        if isinstance(node, Let):
            if isinstance(memo[id(node.value)], Constant) and id(node) in foldable:
                memo[id(node)] = memo[id(node.body)]  # the variable was replaced by the constant
                continue
        elif isinstance(node, Var) and id(node) in foldable:
            let = let_of_var.get(id(node))
            # let_value_first: the value was rewritten before its variable is met.
            if let is not None and id(let) in foldable and isinstance(memo[id(let.value)], Constant):
                memo[id(node)] = memo[id(let.value)]
                continue
        if id(node) in foldable and chain_kernel(node):
            exact = _exact_chain_value(folder, node, memo)
            if exact is not None:
                memo[id(node)] = exact
                continue
        # Folding is type-preserving (each folded value is checked against its type relation).
        new = rebuild(node, tuple(memo.get(id(c), c) for c in children(node)), keep_ret_type=True)
        if id(node) in foldable:
            new = _fold_node(folder, new)
        memo[id(node)] = new
    return memo[id(expr)]


def _exact_chain_value(folder: _Folder, node: Call, memo: dict[int, Expr]) -> Expr | None:
    """A TVM-form chain (``qnn.dequantize → sigmoid → qnn.quantize(kernel=…)``, ``cast → mean →
    qnn.requantize(kernel="qnn.mean")``) on a constant folds to its exact integer kernel's value, never to the
    float ops' (byoc/transform/canonicalize_qnn.py). With ``fold_qnn`` off only MEAN's chain folds this way: its
    cast and mean are not qnn ops and would otherwise fold alone, leaving a broken chain."""
    from .canonicalize_qnn import as_integer_op
    if not folder.fold_qnn and chain_kernel(node) != "qnn.mean":
        return None
    exact = as_integer_op(node)
    if exact is None:
        return None
    args = tuple(memo.get(id(a), a) for a in exact.args)
    if not all(isinstance(a, Constant) for a in args):
        return None
    return folder.evaluate(Call(exact.op, args, exact.attrs, exact.span))


def _may_fold(order: list[Expr]) -> bool:
    """Whether any node is a seed of folding (every fold cascades from one; a cheap necessary condition)."""
    for n in order:
        if type(n) is Constant or type(n) is Var:
            continue
        if isinstance(n, Call):
            if n.args and isinstance(n.op, Op) and all(isinstance(a, (Constant, Tuple)) for a in n.args):
                return True
        elif isinstance(n, TupleGetItem):
            if isinstance(n.tuple_value, Tuple):
                return True
        elif isinstance(n, If):
            if isinstance(n.cond, Constant):
                return True
        elif isinstance(n, Let) and isinstance(n.value, Constant):
            return True
    return False


def _fold_node(folder: _Folder, new: Expr) -> Expr:
    if isinstance(new, Call):
        if folder.foldable_op(new):
            folded = folder.evaluate(new)
            if folded is not None:
                return folded
        return new
    if isinstance(new, Tuple):
        folder.constant_value(new)  # record nested constant tuples bottom-up
        return new
    if isinstance(new, TupleGetItem) and isinstance(new.tuple_value, Tuple):
        return new.tuple_value.fields[new.index]
    if isinstance(new, If) and isinstance(new.cond, Constant):
        return new.true_branch if bool(new.cond.data.reshape(-1)[0]) else new.false_branch
    return new


@dataclass(frozen=True)
class FoldConstant(FunctionPass):
    """``relay.transform.FoldConstant(fold_qnn=False)`` (TVM's default: qnn ops are not folded)."""

    fold_qnn: bool = False

    name: ClassVar[str] = "FoldConstant"
    opt_level: ClassVar[int] = 2

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = fold_constant(func, self.fold_qnn)
        assert isinstance(out, Function)
        return out
