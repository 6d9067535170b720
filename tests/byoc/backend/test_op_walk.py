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
    from byoc.backend.llvm.host_ops import HOST_OPS
    from byoc.ops.catalog import REFERENCE_ONLY
    ops = [o for o in byoc.ops.list_ops() if o not in REFERENCE_ONLY and o not in HOST_OPS]
    assert [o for o in ops if o not in registered_lowerings()] == []
    assert [o for o in HOST_OPS if o in registered_lowerings()] == []   # a host op runs its reference only
    assert [o for o in ops if o not in CASES] == [], "add a case to backend_cases.CASES for new ops"
    # the reference-only ops (TVM compatibility) really have no lowering: a build must say so, not miscompile
    assert [o for o in REFERENCE_ONLY if o in registered_lowerings()] == []


def test_an_einsum_the_cpu_backend_cannot_lower_is_refused_naming_it():
    from byoc import relay
    from byoc.errors import CodegenError
    a = relay.var("a", shape=(2, 3, 4))
    b = relay.var("b", shape=(4, 5))
    mod = byoc.IRModule.from_expr(relay.Function([a, b], relay.einsum([a, b], "...k,kl->...l")))
    with pytest.raises(CodegenError, match=r"einsum '\.\.\.k,kl->\.\.\.l'.*'\.\.\.'"):
        byoc.build(mod, target="llvm")
    assert byoc.evaluate(mod, {"a": np.ones((2, 3, 4), "float32"), "b": np.ones((4, 5), "float32")})[0].shape \
        == (2, 3, 5)


@pytest.mark.parametrize("seed", range(3))
def test_integer_power_and_shift_errors_match_the_reference(seed):
    from backend_cases_tvm import _power_int
    rs = np.random.RandomState(seed)
    func, inputs, _ = _power_int(rs)
    ref, out, _ = run_both(func, inputs)
    assert_matches(ref, out, True, "power int16")
    inputs["b"][0, 0] = -1          # a negative integer exponent: both refuse
    assert run_both(func, inputs)[:2] == ([], [])


def test_shift_amount_out_of_range_is_refused_by_both():
    from byoc import relay
    a = relay.var("a", shape=(3,), dtype="int8")
    b = relay.var("b", shape=(3,), dtype="int8")
    func = relay.Function([a, b], relay.left_shift(a, b))
    ins = {"a": np.array([1, 2, 3], "int8"), "b": np.array([1, 8, 0], "int8")}
    assert run_both(func, ins)[:2] == ([], [])
    ins["b"] = np.array([1, 7, 0], "int8")
    ref, out, _ = run_both(func, ins)
    assert out[0].tolist() == ref[0].tolist() == [2, 0, 3]


@pytest.mark.parametrize("op", sorted(CASES))
def test_op_matches_reference(op):
    rs = np.random.RandomState(sum(map(ord, op)))
    func, inputs, exact = CASES[op](rs)
    ref, out, exe = run_both(func, inputs)
    assert_matches(ref, out, exact, op)
    assert exe.ir_texts, "no kernel was generated"
    for text in exe.ir_texts.values():
        llvm.parse_assembly(text).verify()


def test_upsampling_is_tvms_nearest_and_bilinear_resize():
    from byoc import relay
    from backend_cases_tvm import _upsampling
    x = np.arange(2 * 3 * 4, dtype="float32").reshape(1, 2, 3, 4)
    v = relay.var("x", shape=(1, 2, 3, 4))
    func = relay.Function([v], relay.nn.upsampling(v, scale_h=2, scale_w=2))
    ref, out, _ = run_both(func, {"x": x})
    want = np.repeat(np.repeat(x, 2, axis=2), 2, axis=3)           # nearest, integer scales: a pixel repeat
    np.testing.assert_array_equal(ref[0], want)
    np.testing.assert_array_equal(out[0], want)
    rs = np.random.RandomState(0)
    func, inputs, _ = _upsampling("bilinear", "NHWC", (1, 3, 4, 2), "float32")(rs)
    ref, out, _ = run_both(func, inputs)
    assert ref[0].shape == (1, 6, 6, 2)         # round(3·2) × round(4·1.5)
    assert_matches(ref, out, True, "nn.upsampling bilinear")
    # asymmetric coordinates: output row y reads y·(3/6), so row 1 is halfway between input rows 0 and 1
    xi = inputs["x"]
    np.testing.assert_allclose(ref[0][0, 1, 0], (xi[0, 0, 0] + xi[0, 1, 0]) / 2, rtol=1e-6)
