"""Every op in the registry lowers on the CPU backend, compiles, and matches byoc.evaluate; every generated
LLVM module passes the LLVM verifier."""
from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
import pytest

import byoc
from backend_cases import CASES, assert_matches, run_both
from byoc.backend.llvm import registered_lowerings


def test_every_registered_op_has_a_lowering_and_a_case():
    ops = byoc.ops.list_ops()
    assert [o for o in ops if o not in registered_lowerings()] == []
    assert [o for o in ops if o not in CASES] == [], "add a case to backend_cases.CASES for new ops"


@pytest.mark.parametrize("op", sorted(CASES))
def test_op_matches_reference(op):
    rs = np.random.RandomState(sum(map(ord, op)))
    func, inputs, exact = CASES[op](rs)
    ref, out, exe = run_both(func, inputs)
    assert_matches(ref, out, exact, op)
    assert exe.ir_texts, "no kernel was generated"
    for text in exe.ir_texts.values():
        llvm.parse_assembly(text).verify()
