"""Run one model on every executor and compare each, tensor by tensor, with the reference it must equal.

``compare_model(model, inputs, target)`` (``run.py``) runs:

* ``evaluate`` — ``byoc.evaluate`` on the imported module, its ``tap`` recording every op call's value;
* ``cpu`` — ``byoc.build(target="llvm")`` of the imported module;
* ``<target>`` — ``partition_for(target)`` then a ``"<target>,llvm"`` build;
* the oracle of the model's semantics (``oracles.py``): LiteRT's BUILTIN_REF kernels (``litert``), TFLite Micro
  (``tflm``) or onnxruntime (ONNX).

Tensors are matched by producer (``producers.py``): the op call of the imported model computing them, followed
through partitioning by the identity of its attributes object, so a CPU-side int32 step and the NPU's int8 end
of one TFLite operator are two tensors even though they carry the same name. Each executor must equal the
oracle on every tensor the oracle exposes (model tensors by name, and the outputs) and ``evaluate`` elsewhere;
any compared tensor that differs makes the result a MISMATCH (``result.py``). ``faults.py`` holds the testing
hook ``BYOC_TESTING_FAULT`` that makes one build deliberately wrong.
"""
from __future__ import annotations

from ..ir.expr import Call, Span
from ..ir.module import IRModule
from ..ir.traversal import post_order
from .faults import FAULT_ENV, FAULT_KINDS, Fault, fault_sites, inject, parse_fault
from .oracles import OracleRun, litert_refusal, run_oracle, run_tflite_oracle
from .result import CompareResult, ExecutorDiff, ExecutorInfo, TensorComparison
from .result import diff as _diff
from .run import compare_model
from .save import save_outputs

__all__ = ["compare_model", "CompareResult", "TensorComparison", "ExecutorDiff", "ExecutorInfo", "OracleRun",
           "litert_refusal", "run_oracle", "run_tflite_oracle", "save_outputs", "FAULT_ENV", "FAULT_KINDS", "Fault",
           "parse_fault", "fault_sites", "inject"]


def _placement_by_name(report, pmod: IRModule) -> dict[str, str]:
    """Tensor name → the partition computing it ('cpu' when it stays on the host), for the report's graph."""
    out: dict[str, str] = {}
    for n in report.nodes:
        if n.name and not n.on_cpu:
            out[n.name] = n.partition or n.target
    for gv, func in pmod.sorted_items():
        if func.attrs.get("Compiler"):
            for node in post_order(func.body):
                span = getattr(node, "span", None)
                if isinstance(span, Span) and isinstance(node, Call):
                    out.setdefault(span.source, gv.name_hint)
    return out
