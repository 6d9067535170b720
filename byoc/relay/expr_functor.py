"""``relay.ExprFunctor`` / ``ExprVisitor`` / ``ExprMutator``: TVM's memoised visitor classes.

Subclasses override ``visit_call`` etc. and call ``self.visit(child)`` (or ``super().visit_call(call)``), as in
TVM. Such user code recurses over the graph, so ``visit`` bounds the recursion: past ``_DEPTH`` nested visits it
first visits the node's operands iteratively in post-order (each through the overridden ``visit_*``), so the
recursive calls below only hit the memo. A 100,000-deep graph is visited without raising the recursion limit;
only beyond that depth does the visiting order differ from a plain recursive visit (operands before users).
"""
from __future__ import annotations

from ..errors import IRError
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.traversal import post_order

__all__ = ["ExprFunctor", "ExprVisitor", "ExprMutator"]

_DEPTH = 100  # nested visit() calls before switching to the iterative pre-visit (each costs ~3 Python frames)


class ExprFunctor:
    """Dispatch on the node kind with a memo (each node is visited once)."""

    def __init__(self):
        self.memo_map: dict[Expr, object] = {}  # nodes hash by identity
        self._depth = 0

    def visit(self, expr: Expr):
        memo = self.memo_map
        if expr in memo:
            return memo[expr]
        if self._depth >= _DEPTH:
            for n in post_order(expr):
                if n not in memo:
                    memo[n] = self._dispatch_at(n)
            return memo[expr]
        self._depth += 1
        try:
            res = self._dispatch(expr)
        finally:
            self._depth -= 1
        memo[expr] = res
        return res

    def _dispatch_at(self, n: Expr):
        # Operands are memoised already, so whatever visit_* calls below returns at once.
        saved, self._depth = self._depth, 0
        try:
            return self._dispatch(n)
        finally:
            self._depth = saved

    def _dispatch(self, expr: Expr):
        t = type(expr)
        if t is Call:
            return self.visit_call(expr)
        if t is Var:
            return self.visit_var(expr)
        if t is Constant:
            return self.visit_constant(expr)
        if t is Tuple:
            return self.visit_tuple(expr)
        if t is TupleGetItem:
            return self.visit_tuple_getitem(expr)
        if t is Function:
            return self.visit_function(expr)
        if t is Let:
            return self.visit_let(expr)
        if t is If:
            return self.visit_if(expr)
        if t is Op:
            return self.visit_op(expr)
        if t is GlobalVar:
            return self.visit_global_var(expr)
        visit_ref = _REF_VISITS.get(t.__name__)
        if visit_ref is not None:
            return getattr(self, visit_ref)(expr)
        raise IRError(f"{type(self).__name__}.visit: not an expression: {type(expr).__name__}")

    def visit_function(self, fn):
        raise NotImplementedError

    def visit_let(self, let):
        raise NotImplementedError

    def visit_call(self, call):
        raise NotImplementedError

    def visit_var(self, var):
        raise NotImplementedError

    def visit_type(self, typ):
        return typ

    def visit_if(self, ite):
        raise NotImplementedError

    def visit_tuple(self, tup):
        raise NotImplementedError

    def visit_tuple_getitem(self, t):
        raise NotImplementedError

    def visit_global_var(self, gvar):
        raise NotImplementedError

    def visit_op(self, op):
        raise NotImplementedError

    def visit_constant(self, const):
        raise NotImplementedError

    def visit_ref_create(self, ref):
        raise NotImplementedError

    def visit_ref_read(self, ref):
        raise NotImplementedError

    def visit_ref_write(self, ref):
        raise NotImplementedError


_REF_VISITS = {"RefCreate": "visit_ref_create", "RefRead": "visit_ref_read", "RefWrite": "visit_ref_write"}


class ExprVisitor(ExprFunctor):
    """Visits every node once; override ``visit_*`` and call the base method to keep walking."""

    def visit_tuple(self, tup):
        for x in tup.fields:
            self.visit(x)

    def visit_call(self, call):
        self.visit(call.op)
        for a in call.args:
            self.visit(a)

    def visit_var(self, var):
        pass

    def visit_let(self, let):
        self.visit(let.var)
        self.visit(let.value)
        self.visit(let.body)

    def visit_function(self, fn):
        for x in fn.params:
            self.visit(x)
        self.visit(fn.body)

    def visit_if(self, i):
        self.visit(i.cond)
        self.visit(i.true_branch)
        self.visit(i.false_branch)

    def visit_global_var(self, gv):
        pass

    def visit_constant(self, const):
        pass

    def visit_op(self, op):
        pass

    def visit_tuple_getitem(self, t):
        self.visit(t.tuple_value)

    def visit_ref_create(self, r):
        self.visit(r.value)

    def visit_ref_read(self, r):
        self.visit(r.ref)

    def visit_ref_write(self, r):
        self.visit(r.ref)
        self.visit(r.value)


class ExprMutator(ExprFunctor):
    """Rebuilds the expression from the ``visit_*`` results; unchanged nodes are returned as they are."""

    def visit_function(self, fn):
        new_params = tuple(self.visit(x) for x in fn.params)
        new_body = self.visit(fn.body)
        if new_body is fn.body and all(a is b for a, b in zip(new_params, fn.params)):
            return fn
        return Function(new_params, new_body, None, fn.attrs, fn.span)

    def visit_let(self, let):
        new_var = self.visit(let.var)
        new_val = self.visit(let.value)
        new_body = self.visit(let.body)
        return let.replace(var=new_var, value=new_val, body=new_body)

    def visit_call(self, call):
        new_fn = self.visit(call.op)
        new_args = tuple(self.visit(a) for a in call.args)
        if new_fn is call.op and all(a is b for a, b in zip(new_args, call.args)):
            return call
        return Call(new_fn, new_args, call.attrs, call.span)

    def visit_var(self, var):
        return var

    def visit_global_var(self, gvar):
        return gvar

    def visit_if(self, ite):
        return ite.replace(cond=self.visit(ite.cond), true_branch=self.visit(ite.true_branch),
                           false_branch=self.visit(ite.false_branch))

    def visit_tuple(self, tup):
        fields = tuple(self.visit(f) for f in tup.fields)
        if all(a is b for a, b in zip(fields, tup.fields)):
            return tup
        return Tuple(fields, tup.span)

    def visit_tuple_getitem(self, op):
        tv = self.visit(op.tuple_value)
        return op if tv is op.tuple_value else TupleGetItem(tv, op.index, op.span)

    def visit_constant(self, const):
        return const

    def visit_op(self, op):
        return op

    def visit_ref_create(self, r):
        return r.replace(value=self.visit(r.value))

    def visit_ref_read(self, r):
        return r.replace(ref=self.visit(r.ref))

    def visit_ref_write(self, r):
        return r.replace(ref=self.visit(r.ref), value=self.visit(r.value))
