"""ONNX's backend node tests for every op type the importer claims, inputs fed at run time and later inputs frozen
as initializers (``onnx_conformance.py``): a case passes (integers exact, floats within 1e-5) or is refused with
a ByocError naming the op or the feature; nothing is silently wrong or crashes."""
from __future__ import annotations

import pytest

import onnx_conformance as oc

pytest.importorskip("onnx.backend.test.loader")

_CASES = oc.claimed_cases()


@pytest.mark.parametrize("form", ["fed", "frozen"])
@pytest.mark.parametrize("case", _CASES, ids=[c.name for c in _CASES])
def test_node_case_passes_or_is_refused_by_name(case, form):
    o = oc.run_case(case, form)
    assert o.status in ("pass", "refused"), f"{case.name} [{form}]: {o.status} {o.detail}"
    if o.status == "refused":
        ops = {n.op_type for n in case.model.graph.node}
        assert any(op in o.detail for op in ops) or "element type" in o.detail or "input" in o.detail, o.detail


# Floors measured on this branch (fed / frozen passes of the claimed cases); raise them as ops are completed.
PASS_FLOOR = {"MatMul": (7, 7), "Clip": (12, 12), "Pad": (0, 6), "AveragePool": (13, 13), "MaxPool": (13, 13),
              "DequantizeLinear": (5, 5), "QuantizeLinear": (6, 6), "QLinearMatMul": (8, 8),
              "ReduceMean": (0, 8), "Shape": (11, 11), "Gather": (4, 4), "HardSigmoid": (4, 4), "HardSwish": (1, 1),
              "Slice": (0, 8), "ConvTranspose": (10, 10), "Resize": (0, 12), "Upsample": (0, 1),
              "LayerNormalization": (19, 19), "DynamicQuantizeLinear": (3, 3), "MatMulInteger": (1, 1),
              "ConvInteger": (0, 2), "Erf": (1, 1), "Gelu": (4, 4)}


@pytest.mark.parametrize("op", sorted(PASS_FLOOR))
def test_op_passes_in_both_forms(op):
    cases = [c for c in _CASES if oc.main_op(c) == op]
    fed = sum(oc.run_case(c, "fed").status == "pass" for c in cases)
    frozen = sum(oc.run_case(c, "frozen").status == "pass" for c in cases)
    assert (fed, frozen) >= PASS_FLOOR[op] and fed >= PASS_FLOOR[op][0] and frozen >= PASS_FLOOR[op][1]
