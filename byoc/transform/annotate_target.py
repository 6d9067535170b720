"""AnnotateTarget: decide a target per call and mark every data edge with compiler_begin/compiler_end.

Relay semantics (annotate_target.cc): an op call is a candidate for every target (in priority order) whose
``target.<t>`` predicate accepts it; a composite call for the target named before the first ``.`` of its
``Composite`` attribute; ``"default"`` (the CPU) comes last and the first candidate wins. Each argument edge gets
``compiler_end(arg, producer_target)`` (when the producer was annotated) then ``compiler_begin(·, target)``;
inputs and constants get only the begin. Tuples, TupleGetItems and references (RefCreate/RefRead/RefWrite)
take their arguments' common target (``include_non_call_ops=True``) or stay outside every region (``False``).
If nodes, Let nodes and function literals are never in a region: their operands get ``compiler_end``.
Annotated graphs can be annotated again (earlier non-default decisions are kept), so running for A then for B
equals running for [A, B].

One deliberate difference: Relay wraps a non-function Let value in a ``compiler_begin`` that no region can own
(MergeCompilerRegions then fails); here the value gets a ``compiler_end`` like an If operand.
"""
from __future__ import annotations

from ..errors import PassError
from ..ir.expr import REF_NODES, Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.traversal import children, plain_on_calls, post_order, rebuild
from ..ops.annotation import COMPILER_BEGIN, COMPILER_END, CompilerAttrs
from ..ops.registry import get_op_attr
from ..relay.dataflow_pattern.check import evaluate_check
from .type_carry import ensure_typed, typed_like
from .canonicalize_qnn import EXACT_CHAINS, chain_kernel
from .pass_infra import ModulePass, PassContext
from .placement import Decision, PlacementLog, current_log

__all__ = ["AnnotateTarget", "annotate_target", "compiler_begin", "compiler_end", "is_begin", "is_end",
           "is_composite", "DEFAULT_TARGET"]

DEFAULT_TARGET = "default"


_ATTRS: dict[str, CompilerAttrs] = {}


def _attrs(target: str) -> CompilerAttrs:
    a = _ATTRS.get(target)
    if a is None:
        a = _ATTRS[target] = CompilerAttrs(target)
    return a


def compiler_begin(expr: Expr, target: str) -> Call:
    call = Call(Op.get(COMPILER_BEGIN), (expr,), _attrs(target))
    if expr._checked_type is not None:  # type: ignore[attr-defined]
        call._set_checked_type(expr._checked_type)  # type: ignore[attr-defined]
    return call


def compiler_end(expr: Expr, target: str) -> Call:
    call = Call(Op.get(COMPILER_END), (expr,), _attrs(target))
    if expr._checked_type is not None:  # type: ignore[attr-defined]
        call._set_checked_type(expr._checked_type)  # type: ignore[attr-defined]
    return call


def is_begin(e: Expr) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == COMPILER_BEGIN


def is_end(e: Expr) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == COMPILER_END


def is_composite(e: Expr) -> bool:
    return isinstance(e, Function) and "Composite" in e.attrs


@plain_on_calls
def _skip_composites(n: Expr) -> tuple[Expr, ...]:
    return () if is_composite(n) else children(n)


def _composite_ops(func: Function) -> tuple[str, ...]:
    body = func.body
    if type(body) is Call and type(body.op) is Op and all(type(a) is Var or type(a) is Constant for a in body.args):
        return (body.op.name,)  # a one-op composite (the common case): no walk needed
    return tuple(n.op.name for n in post_order(body) if isinstance(n, Call) and isinstance(n.op, Op))


class _Annotator:
    def __init__(self, targets: tuple[str, ...], include_non_call_ops: bool, log: PlacementLog | None,
                 fname: str):
        self.targets = targets
        self.include_non_call_ops = include_non_call_ops
        self.log = log
        self.fname = fname
        self.target_of: dict[int, str] = {}

    # -- helpers (TVM: AnnotateArgs / InsertCompilerEndAndPropogateTarget) --------------------------------
    def annotate_args(self, args: tuple[Expr, ...], target: str | None) -> tuple[str, tuple[Expr, ...]]:
        ref: str | None = None
        slots: list[tuple[bool, Expr]] = []  # (keep as is, expr)
        for arg in args:
            arg_target = DEFAULT_TARGET
            if is_begin(arg):
                if arg.attrs.compiler != DEFAULT_TARGET:
                    slots.append((True, arg))
                else:
                    slots.append((False, arg.args[0]))
                if is_end(arg.args[0]):
                    arg_target = arg.args[0].attrs.compiler
            elif id(arg) in self.target_of:
                arg_target = self.target_of[id(arg)]
                if isinstance(arg, Call) and not arg.args:
                    slots.append((False, arg))
                else:
                    slots.append((False, compiler_end(arg, arg_target)))
            else:
                slots.append((False, arg))
            ref = arg_target if ref is None else (ref if ref == arg_target else DEFAULT_TARGET)
        op_target = target or ref or DEFAULT_TARGET
        if ref is None:
            return op_target, args
        return op_target, tuple(e if keep else compiler_begin(e, op_target) for keep, e in slots)

    def end_of(self, e: Expr) -> Expr:
        t = self.target_of.get(id(e))
        if t is None:
            return e
        # An empty tuple, like a call without operands, is left alone (TVM).
        if isinstance(e, (TupleGetItem,) + REF_NODES) or (isinstance(e, (Tuple, Call)) and children(e)):
            end = compiler_end(e, t)
            self.target_of[id(end)] = t
            return end
        return e

    # -- per node -----------------------------------------------------------------------------------------
    def run(self, body: Expr) -> Expr:
        new: dict[int, Expr] = {}
        for n in post_order(body, child_fn=_skip_composites):
            if isinstance(n, (Var, Constant, Op, GlobalVar)) or is_composite(n):
                new[id(n)] = n
                continue
            kids = tuple(new[id(c)] for c in children(n))
            # Calls, tuples and projections are built once, with their annotated operands.
            if isinstance(n, Call):
                new[id(n)] = self.visit_call(n, kids)
                continue
            if isinstance(n, Tuple):
                if self.include_non_call_ops:
                    t, fields = self.annotate_args(kids, None)
                    out = typed_like(n.replace(fields=fields), n)
                    self.target_of[id(out)] = t
                else:
                    out = typed_like(n.replace(fields=tuple(self.end_of(f) for f in kids)), n)
                new[id(n)] = out
                continue
            if isinstance(n, TupleGetItem):
                if self.include_non_call_ops:
                    t, (tv,) = self.annotate_args(kids, None)
                    out = typed_like(n.replace(tuple_value=tv), n)
                    self.target_of[id(out)] = t
                else:
                    out = typed_like(n.replace(tuple_value=self.end_of(kids[0])), n)
                new[id(n)] = out
                continue
            if isinstance(n, REF_NODES):
                # References are non-call ops (TVM): they take their operands' common target, or close them.
                if self.include_non_call_ops:
                    t, operands = self.annotate_args(kids, None)
                    out = typed_like(rebuild(n, operands), n)
                    self.target_of[id(out)] = t
                else:
                    out = typed_like(rebuild(n, tuple(self.end_of(k) for k in kids)), n)
                new[id(n)] = out
                continue
            post = typed_like(rebuild(n, kids), n)
            if isinstance(n, Function):
                new[id(n)] = typed_like(post.replace(body=self.end_of(post.body)), n)
            elif isinstance(n, Let):
                value = post.value if isinstance(post.value, Function) else self.end_of(post.value)
                new[id(n)] = typed_like(post.replace(value=value, body=self.end_of(post.body)), n)
            elif isinstance(n, If):
                new[id(n)] = typed_like(post.replace(cond=self.end_of(post.cond),
                                                     true_branch=self.end_of(post.true_branch),
                                                     false_branch=self.end_of(post.false_branch)), n)
            else:
                new[id(n)] = post
        return self.end_of(new[id(body)])

    def visit_call(self, pre: Call, kids: tuple[Expr, ...]) -> Expr:
        """``kids``: the rewritten operands of ``pre`` (``children`` order)."""
        if is_begin(pre):
            return typed_like(rebuild(pre, kids), pre)
        if is_end(pre):
            post = typed_like(rebuild(pre, kids), pre)
            inner = post.args[0]
            target = self.target_of.setdefault(id(inner), post.attrs.compiler)
            if target != post.attrs.compiler:
                # The producer was re-decided by this run (it had been left to "default"): follow it.
                return compiler_end(inner, target)
            return post
        if pre.args and is_begin(pre.args[0]) and pre.args[0].attrs.compiler != DEFAULT_TARGET:
            return typed_like(rebuild(pre, kids), pre)  # annotated by an earlier run
        if isinstance(pre.op, Var) and not self.include_non_call_ops:
            # A call of a variable (a let-bound or recursive function) is not an op: without non-call ops TVM
            # only closes its operands' regions, and gives the call no target.
            new_call = Call(kids[0], tuple(self.end_of(a) for a in kids[1:]), pre.attrs, pre.span)
            if pre._checked_type is not None:  # type: ignore[attr-defined]
                new_call._set_checked_type(pre._checked_type)  # type: ignore[attr-defined]
            return new_call
        target = self.decide(pre)
        if isinstance(pre.op, Op):
            callee, post_args = pre.op, kids
        else:
            callee, post_args = kids[0], kids[1:]
        t, args = self.annotate_args(post_args, target)
        if callee is pre.op and args == pre.args:  # operands compare by identity
            new_call = pre
        else:
            new_call = Call(callee, args, pre.attrs, pre.span)
        if pre._checked_type is not None:  # type: ignore[attr-defined]
            new_call._set_checked_type(pre._checked_type)  # type: ignore[attr-defined]
        self.target_of[id(new_call)] = target
        return new_call

    def decide(self, pre: Call) -> str:
        """The target of call ``pre``: the first target whose predicate (op) or name (composite) accepts it,
        else "default". The decision and the reasons for a refusal go to the placement log."""
        candidates: list[str] = []
        reasons: list[str] = []
        op_label = None
        inner_ops: tuple[str, ...] = ()
        cpu_only = get_op_attr(pre.op.name, "cpu_only_reason") if isinstance(pre.op, Op) else None
        if cpu_only is not None:
            # an op no accelerator can have a kernel for (an opaque TFLite custom op): CPU whatever the tables say
            if self.log is not None:
                self.log.record(Decision(pre, pre.op.name, DEFAULT_TARGET, (cpu_only(pre),), self.fname, ()))
            return DEFAULT_TARGET
        if isinstance(pre.op, Op):
            op_label = pre.op.name
            for t in self.targets:
                pred = get_op_attr(pre.op.name, "target." + t)
                if pred is None:
                    continue
                s = evaluate_check(pred, pre, label=f"target.{t} predicate")
                if s.ok:
                    candidates.append(t)
                else:
                    reasons.append(f"target.{t}: {s.reason}")
        elif is_composite(pre.op):
            op_label = str(pre.op.attrs["Composite"])
            if self.log is not None:
                inner_ops = _composite_ops(pre.op)
            prefix = op_label.split(".", 1)[0] if "." in op_label else None
            if prefix in self.targets:
                candidates.append(prefix)
            else:
                reasons.append(f"composite {op_label} belongs to target {prefix!r}, not one of "
                               f"{', '.join(self.targets)}")
        denied = self.log.denied(pre) if self.log is not None and candidates else None
        if denied:
            candidates, reasons = [], [denied]
        target = candidates[0] if candidates else DEFAULT_TARGET
        if self.log is not None and op_label is not None:
            if target == DEFAULT_TARGET:
                if not denied:
                    reasons = self.log.refusals_of(pre) + reasons
                if not reasons:
                    what = op_label
                    kernel = chain_kernel(pre)
                    if kernel:  # the end of TVM's form of a quantized activation / MEAN
                        what = f"{op_label} (the end of TVM's {kernel} form, {EXACT_CHAINS[kernel].form})"
                    reasons = [f"{what} is in no accepted {t!r} composite and has no target.{t} predicate"
                               for t in self.targets]
            else:
                reasons = []
            self.log.record(Decision(pre, op_label, target, tuple(reasons), self.fname, inner_ops))
        return target


def annotate_target(func: Function, targets, include_non_call_ops: bool = True,
                    log: PlacementLog | None = None, fname: str = "main") -> Function:
    annotator = _Annotator(tuple(targets), include_non_call_ops, log, fname)
    return typed_like(func.replace(body=annotator.run(func.body)), func)


def _normalize_targets(targets) -> tuple[str, ...]:
    if isinstance(targets, str):
        targets = [targets]
    if not isinstance(targets, (list, tuple)):
        raise PassError(f"AnnotateTarget: targets must be a string or a list of strings, got "
                        f"{type(targets).__name__} {targets!r}", hint='e.g. AnnotateTarget(["npu"])')
    out = []
    for t in targets:
        if not isinstance(t, str) or not t:
            raise PassError(f"AnnotateTarget: targets must be non-empty strings, got {t!r}")
        if t == DEFAULT_TARGET:
            raise PassError("AnnotateTarget: 'default' is the CPU fallback, not a target to annotate for")
        out.append(t)
    if not out:
        raise PassError("AnnotateTarget needs at least one target")
    return tuple(dict.fromkeys(out))


class AnnotateTarget(ModulePass):
    """``relay.transform.AnnotateTarget(targets, include_non_call_ops=True)``."""

    name = "AnnotateTarget"
    opt_level = 0

    def __init__(self, targets, include_non_call_ops: bool = True):
        self.targets = _normalize_targets(targets)
        self.include_non_call_ops = bool(include_non_call_ops)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = ensure_typed(mod)
        log = current_log(ctx)
        out = mod.copy()
        for gv, func in mod.items():
            if "Compiler" in func.attrs or "SkipOptimization" in func.attrs:
                continue
            out[gv] = annotate_target(func, self.targets, self.include_non_call_ops, log, gv.name_hint)
        return ensure_typed(out)
