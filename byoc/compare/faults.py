"""Deliberately wrong builds, for proving that ``compare`` catches a wrong executor (tests only).

``BYOC_TESTING_FAULT=<kind>[:<selector>]`` adds one to the output zero point of one quantized op call of one
build. ``<selector>`` is a model tensor name (the first candidate carrying it) or ``@<n>`` (the n-th candidate in
topological order); without it, the first candidate.

| kind | build | candidates |
|---|---|---|
| ``requant-off-by-one`` | the offloaded build, inside a partition | ``qnn.requantize`` |
| ``npu-off-by-one`` | the offloaded build, inside a partition | every op with an ``output_zero_point`` operand |
| ``host-off-by-one`` | the offloaded build, its CPU part (main) | every op with an ``output_zero_point`` operand |
| ``cpu-off-by-one`` | the CPU-only build | every op with an ``output_zero_point`` operand |
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ExecutionError
from ..ir.expr import Call, Constant, Op, Span
from ..ir.module import IRModule
from ..ir.traversal import post_order, rewrite_post_order

__all__ = ["FAULT_ENV", "FAULT_KINDS", "Fault", "parse_fault", "fault_sites", "inject"]

FAULT_ENV = "BYOC_TESTING_FAULT"
# Ops whose output quantization is implied by the kernel (TFLite's int8 softmax always writes zero point -128), so
# changing the operand changes nothing: not a fault.
_FIXED_OUTPUT_QUANT = frozenset({"qnn.softmax", "qnn.log_softmax"})


def _fixed_output_quant(call: Call) -> bool:
    """The op (or the integer kernel a TVM-form chain's end stands for) never reads its output parameters; so
    do TFLite Micro's fixed-point sigmoid / tanh."""
    from ..transform.canonicalize_qnn import chain_kernel
    kernel = chain_kernel(call) or call.op.name
    rounding = getattr(call.attrs, "kernel_rounding", "") or getattr(call.attrs, "rounding", "")
    return kernel in _FIXED_OUTPUT_QUANT or (kernel in ("qnn.sigmoid", "qnn.tanh") and rounding == "TFLM")


FAULT_KINDS = {"requant-off-by-one": "npu", "npu-off-by-one": "npu", "host-off-by-one": "host",
               "cpu-off-by-one": "cpu"}


@dataclass(frozen=True)
class Fault:
    kind: str
    selector: str = ""

    @property
    def build(self) -> str:
        """Which build it changes: "npu" (partitions), "host" (the offloaded build's main) or "cpu"."""
        return FAULT_KINDS[self.kind]

    def __str__(self) -> str:
        return self.kind + (f":{self.selector}" if self.selector else "")


def parse_fault(spec: str | None) -> Fault | None:
    if not spec:
        return None
    kind, _, selector = spec.partition(":")
    if kind not in FAULT_KINDS:
        raise ExecutionError(f"{FAULT_ENV}={spec!r}: unknown fault kind {kind!r}",
                             hint="one of " + ", ".join(f"{k}[:<tensor name>|@<n>]" for k in FAULT_KINDS))
    return Fault(kind, selector)


def _zero_point_index(call: Call, requant_only: bool) -> int | None:
    if not (isinstance(call, Call) and isinstance(call.op, Op)):
        return None
    if (requant_only and call.op.name != "qnn.requantize") or _fixed_output_quant(call):
        return None
    from ..ops.registry import get_op_def
    names = get_op_def(call.op.name).arg_names
    if "output_zero_point" not in names:
        return None
    i = names.index("output_zero_point")
    return i if isinstance(call.args[i], Constant) else None


def _functions(mod: IRModule, fault: Fault, target: str):
    """(global var, function, enter nested functions) the fault may change."""
    for gv, func in mod.sorted_items():
        if fault.build == "npu" and func.attrs.get("Compiler") == target:
            yield gv, func, True
        elif fault.build in ("host", "cpu") and gv.name_hint == "main":
            yield gv, func, False


def fault_sites(mod: IRModule, fault: Fault, target: str = "") -> list[tuple[str, Call]]:
    """(global function name, call) of every candidate in ``mod`` (the build ``fault`` applies to)."""
    out = []
    for gv, func, enter in _functions(mod, fault, target):
        for n in post_order(func.body, enter_functions=enter):
            if _zero_point_index(n, fault.kind == "requant-off-by-one") is not None:
                out.append((gv.name_hint, n))
    return out


def inject(mod: IRModule, fault: Fault, target: str = "") -> tuple[IRModule, str]:
    """``mod`` with the fault applied; returns (module, description of the changed call)."""
    sites = fault_sites(mod, fault, target)
    sel = fault.selector
    if sel.startswith("@") and sel[1:].isdigit():
        chosen = sites[int(sel[1:])] if int(sel[1:]) < len(sites) else None
    else:
        chosen = next(((g, n) for g, n in sites if not sel or (isinstance(n.span, Span) and n.span.source == sel)),
                      None)
    if chosen is None:
        raise ExecutionError(f"{FAULT_ENV}={fault}: no candidate for this fault in the {fault.build} build"
                             + (f" matches {sel!r}" if sel else "") + f" ({len(sites)} candidates)")
    gname, victim = chosen
    i = _zero_point_index(victim, fault.kind == "requant-off-by-one")
    zp = victim.args[i]
    bumped = zp.replace(data=(np.asarray(zp.data).astype(np.int64) + 1).astype(zp.data.dtype))

    def fn(orig, new):
        if orig is victim:
            return new.replace(args=new.args[:i] + (bumped,) + new.args[i + 1:])
        return None
    out = mod.copy()
    gv = out.get_global_var(gname)
    func = mod[gv]
    enter = fault.build == "npu"
    out[gv] = func.replace(body=rewrite_post_order(func.body, fn, enter_functions=enter, preserves_types=True))
    name = victim.span.source if isinstance(victim.span, Span) else "?"
    return out, f"{victim.op.name} of {name!r} in @{gname}"
