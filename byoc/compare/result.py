"""What ``compare_model`` returns: executors, one ``TensorComparison`` per compared producer, the verdict."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ExecutorInfo", "ExecutorDiff", "TensorComparison", "CompareResult"]


@dataclass(frozen=True)
class ExecutorInfo:
    name: str
    description: str
    available: bool
    note: str = ""
    seconds: float = 0.0
    checked_against: str = ""    # the reference it must equal ("" for the oracle itself)


@dataclass(frozen=True)
class ExecutorDiff:
    executor: str
    mismatches: int          # elements that differ (-1: not comparable, e.g. another shape)
    max_diff: float
    elements: int


@dataclass(frozen=True)
class TensorComparison:
    """One producer (an op call of the imported model) seen by one or more executors."""
    name: str                # the model tensor name its node carries ("" when none)
    kind: str                # "output" | "intermediate"
    shape: tuple[int, ...]
    dtype: str
    placement: str           # "cpu" or the NPU partition computing it in the offloaded build
    diffs: tuple[ExecutorDiff, ...]
    producer: str = ""       # the op computing it, e.g. "qnn.requantize"
    expected: str = ""       # whose value the executors must equal: the oracle's name or "evaluate"
    model_tensor: bool = False   # the node computes the model's tensor of that name (not a step inside an op)

    @property
    def mismatches(self) -> int:
        return sum(d.mismatches for d in self.diffs if d.mismatches > 0)

    @property
    def differs(self) -> bool:
        return any(d.mismatches != 0 for d in self.diffs)

    @property
    def label(self) -> str:
        """The name and, for a step inside one of the model's ops, which step (two producers may share a name)."""
        name = self.name or "(unnamed)"
        return name if self.model_tensor or not self.producer else f"{name} [{self.producer}]"


@dataclass(frozen=True)
class CompareResult:
    model: str
    target: str
    executors: tuple[ExecutorInfo, ...]
    outputs: tuple[TensorComparison, ...]
    intermediates: tuple[TensorComparison, ...]
    first_divergence: TensorComparison | None
    notes: tuple[str, ...] = field(default=())
    oracle: str = ""             # "litert" | "tflm" | "onnxruntime" | "" (none ran)
    oracle_description: str = ""
    semantics: str = ""
    outputs_only: bool = False   # intermediates were not compared (--outputs-only)
    float_tolerance: float | None = None   # float tensors agree within it (ONNX: onnxruntime's float kernels)
    arrays: dict = field(default_factory=dict, compare=False, repr=False)   # executor → its output arrays

    @property
    def ok(self) -> bool:
        """Every compared tensor agrees bit for bit on every executor with its reference."""
        return not any(t.differs for t in self.outputs + self.intermediates)

    @property
    def reference(self) -> str:
        """The reference every executor must equal, in words."""
        if self.oracle:
            return f"{self.oracle_description} ({self.semantics} semantics); tensors it does not expose: " \
                   f"byoc.evaluate, itself checked against it"
        return "byoc.evaluate (no oracle ran)"

    def verdict(self) -> str:
        ran = [e.name for e in self.executors if e.available]
        against = self.oracle or "evaluate"
        if self.ok:
            what = f"{len(self.outputs)} output(s)" + ("" if self.outputs_only else
                                                        f" and {len(self.intermediates)} intermediate tensors")
            how = "bit for bit" if self.float_tolerance is None else \
                f"(integers bit for bit, floats within {self.float_tolerance:g}·max(1, |x|))"
            return f"MATCH: {what} agree {how} with their reference ({against}) across {', '.join(ran)}" + \
                ("; intermediates not compared (--outputs-only)" if self.outputs_only else "")
        bad = [t for t in self.outputs + self.intermediates if t.differs]
        f = self.first_divergence
        where = ""
        if f is not None:
            who = ", ".join(f"{d.executor} ({d.mismatches} elements, max diff {d.max_diff:g})"
                            if d.mismatches > 0 else f"{d.executor} (not comparable)"
                            for d in f.diffs if d.mismatches != 0)
            op = f", {f.producer}" if f.producer else ""
            where = f"; first diverging tensor {f.label!r} ({f.placement}{op}) on {who}, expected from {f.expected}"
        outs = "outputs differ" if any(t.differs for t in self.outputs) else "outputs agree"
        return f"MISMATCH: {len(bad)} of {len(self.outputs) + len(self.intermediates)} compared tensors " \
               f"differ ({outs})" + where

    def to_json(self) -> dict:
        def t(x: TensorComparison) -> dict:
            return {"name": x.name, "kind": x.kind, "producer": x.producer, "model_tensor": x.model_tensor,
                    "shape": list(x.shape), "dtype": x.dtype, "placement": x.placement, "expected": x.expected,
                    "executors": {d.executor: {"mismatches": d.mismatches, "max_diff": d.max_diff,
                                               "elements": d.elements} for d in x.diffs}}
        return {"model": self.model, "target": self.target, "ok": self.ok, "verdict": self.verdict(),
                "semantics": self.semantics, "oracle": self.oracle or None, "reference": self.reference,
                "float_tolerance": self.float_tolerance,
                "outputs_only": self.outputs_only,
                "executors": [{"name": e.name, "description": e.description, "available": e.available,
                               "note": e.note, "seconds": round(e.seconds, 3),
                               "checked_against": e.checked_against} for e in self.executors],
                "outputs": [t(x) for x in self.outputs],
                "intermediates": [t(x) for x in self.intermediates],
                "first_divergence": t(self.first_divergence) if self.first_divergence else None,
                "notes": list(self.notes)}


def diff(expected: np.ndarray, got: np.ndarray | None, executor: str,
         float_tolerance: float | None = None) -> ExecutorDiff | None:
    """Element-wise comparison; ``None`` when the executor did not observe the tensor. Integers compare exactly;
    floats too unless ``float_tolerance`` (t) is given: then |got − expected| ≤ t·max(1, |expected|) agrees."""
    if got is None:
        return None
    if got.shape != expected.shape:
        if got.size != expected.size:
            return ExecutorDiff(executor, -1, float("nan"), int(expected.size))
        got = got.reshape(expected.shape)
    if got.dtype != expected.dtype and not (got.dtype.kind == expected.dtype.kind == "f"):
        return ExecutorDiff(executor, -1, float("nan"), int(expected.size))
    wide = np.float64 if expected.dtype.kind == "f" or got.dtype.kind == "f" else np.int64
    d = np.abs(expected.astype(wide) - got.astype(wide))
    if wide is np.float64 and float_tolerance is not None:
        with np.errstate(invalid="ignore"):
            bad = ~(d <= float_tolerance * np.maximum(1.0, np.abs(expected.astype(wide))))
    else:
        bad = ~(d == 0)
    if wide is np.float64:
        bad &= ~(np.isnan(expected.astype(wide)) & np.isnan(got.astype(wide)))
    n = int(bad.sum())
    return ExecutorDiff(executor, n, float(np.nanmax(np.where(bad, d, 0))) if n else 0.0, int(expected.size))
