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
    from byoc.ops.catalog import REFERENCE_ONLY
    ops = [o for o in byoc.ops.list_ops() if o not in REFERENCE_ONLY]
    assert [o for o in ops if o not in registered_lowerings()] == []
    assert [o for o in ops if o not in CASES] == [], "add a case to backend_cases.CASES for new ops"
    # the reference-only ops (TVM compatibility) really have no lowering: a build must say so, not miscompile
    assert [o for o in REFERENCE_ONLY if o in registered_lowerings()] == []


def test_a_reference_only_op_is_refused_by_the_cpu_build_naming_it():
    from byoc import relay
    from byoc.errors import CodegenError
    x = relay.var("x", shape=(2,))
    mod = byoc.IRModule.from_expr(relay.Function([x], relay.log(x)))
    with pytest.raises(CodegenError, match=r"cannot lower: log \(1x\)"):
        byoc.build(mod, target="llvm")
    assert byoc.evaluate(mod, {"x": np.array([1.0, 2.0], "float32")})[0].tolist() == [0.0, float(np.log(np.float32(2)))]


@pytest.mark.parametrize("op", sorted(CASES))
def test_op_matches_reference(op):
    rs = np.random.RandomState(sum(map(ord, op)))
    func, inputs, exact = CASES[op](rs)
    ref, out, exe = run_both(func, inputs)
    assert_matches(ref, out, exact, op)
    assert exe.ir_texts, "no kernel was generated"
    for text in exe.ir_texts.values():
        llvm.parse_assembly(text).verify()
