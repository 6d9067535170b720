"""TFLite CUSTOM operators without a converter: imported as one opaque ``tflite.custom`` op (byoc/ops/custom.py),
kept on the CPU by every pattern table, refused with ``NoKernelError`` by every executor unless a kernel is
registered, and refused at import with ``strict=True``.

The model: int8 input → CONV_2D → CUSTOM:VendorDecoder (inputs: the conv output and a constant; outputs: a
shapeless float32 tensor, as PoseNet's decoder stores its outputs, and an int8 tensor of known shape) → MAX_POOL_2D
of the int8 output. Expected values come from LiteRT's reference kernels run on the same model without the
custom operator, with the test's own numpy kernel applied in between."""
from __future__ import annotations

import numpy as np
import pytest
import tflite

import byoc
from byoc.errors import ExecutionError, IRError, ModelError, NoKernelError, UnsupportedOpsError
from byoc.frontend import cut_before_custom_ops, from_tflite
from byoc.ir.types import TensorType, TupleType
from byoc.ops.custom import register_custom_kernel, unregister_custom_kernel
from byoc.testing.tflite_writer import TFLiteWriter
from tests.byoc.frontend.tflite_oracles import litert_run

OPTIONS = b"\x01vendor-options\x00\xff\x10"
NAME = "VendorDecoder"
S_CONV, ZP_CONV = 0.08, -3
S_OUT, ZP_OUT = 0.05, 2


def _conv(w: TFLiteWriter, x):
    rng = np.random.default_rng(1)
    return w.conv2d(x, rng.integers(-127, 128, (6, 3, 3, 4)).astype(np.int8), rng.integers(-300, 300, 6),
                    weight_scale=0.02, out_scale=S_CONV, out_zp=ZP_CONV, padding="SAME", name="conv")


def custom_model() -> bytes:
    w = TFLiteWriter()
    x = w.input("x", (1, 8, 8, 4), "int8", scale=0.1, zero_point=1)
    y = _conv(w, x)
    bias = w.const("bias", np.arange(6, dtype=np.int8))
    shapeless = w.tensor("scores", (), "float32")
    q = w.tensor("decoded", (1, 8, 8, 6), "int8", scale=S_OUT, zero_point=ZP_OUT)
    w.custom(NAME, [y, bias], [shapeless, q], OPTIONS)
    pooled = w.tensor("pooled", (1, 4, 4, 6), "int8", scale=S_OUT, zero_point=ZP_OUT)
    w.op("MAX_POOL_2D", [q], [pooled], "Pool2DOptions",
         {"padding": 1, "stride_w": 2, "stride_h": 2, "filter_width": 2, "filter_height": 2})
    w.output(shapeless, pooled)
    return w.finish()


def conv_model() -> bytes:
    """The same convolution alone (LiteRT runs it: the oracle of everything before the custom op)."""
    w = TFLiteWriter()
    x = w.input("x", (1, 8, 8, 4), "int8", scale=0.1, zero_point=1)
    w.output(_conv(w, x))
    return w.finish()


def pool_model() -> bytes:
    w = TFLiteWriter()
    q = w.input("decoded", (1, 8, 8, 6), "int8", scale=S_OUT, zero_point=ZP_OUT)
    pooled = w.tensor("pooled", (1, 4, 4, 6), "int8", scale=S_OUT, zero_point=ZP_OUT)
    w.op("MAX_POOL_2D", [q], [pooled], "Pool2DOptions",
         {"padding": 1, "stride_w": 2, "stride_h": 2, "filter_width": 2, "filter_height": 2})
    w.output(pooled)
    return w.finish()


def vendor_kernel(inputs, op):
    """The test's decoder: the int8 conv output plus the constant per channel, saturated, and its sum as a
    float32 vector (a shape the file does not declare)."""
    y, bias = inputs
    decoded = np.clip(y.astype(np.int32) + bias.astype(np.int32), -128, 127).astype(np.int8)
    return np.asarray([float(decoded.astype(np.int64).sum())], np.float32), decoded


def vendor_shapes(types, op):
    """What the decoder's Prepare would size: a one-element score vector, the decoded tensor as declared."""
    return [(1,), types[0].shape]


@pytest.fixture
def kernel():
    register_custom_kernel(NAME, vendor_kernel, output_shapes=vendor_shapes)
    yield vendor_kernel
    unregister_custom_kernel(NAME)


def _x(seed=0):
    return np.random.default_rng(seed).integers(-128, 128, (1, 8, 8, 4)).astype(np.int8)


def _expected(x):
    (y,) = litert_run(conv_model(), [x])[0]
    scores, decoded = vendor_kernel([y, np.arange(6, dtype=np.int8)], None)
    (pooled,) = litert_run(pool_model(), [decoded])[0]
    return y, scores, pooled


def _custom_call(mod):
    from byoc.ir.traversal import post_order
    from byoc.ops.custom import is_custom_call
    calls = [n for n in post_order(mod["main"].body) if is_custom_call(n)]
    assert len(calls) == 1
    return calls[0]


def test_import_keeps_the_opaque_op():
    data = custom_model()
    mod, _ = from_tflite(data)
    call = _custom_call(mod)
    a = call.attrs
    assert a.name == NAME and a.opcode == "CUSTOM:VendorDecoder" and a.custom_options == OPTIONS
    assert a.operator_index == 1
    # the operator table's offset, read with the flatbuffers classes
    op = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0).Operators(1)
    assert a.file_offset == op._tab.Pos
    assert a.out_dtypes == ("float32", "int8") and a.out_shapes == ((), (1, 8, 8, 6))
    assert a.out_shapes_known == (False, True)
    assert a.out_scales == ((), (float(np.float32(S_OUT)),)) and a.out_zero_points == ((), (ZP_OUT,))
    assert a.input_names == ("conv", "bias")
    assert call.checked_type == TupleType((TensorType((), "float32"), TensorType((1, 8, 8, 6), "int8")))
    # the text format keeps every attribute (artifacts store the graph as text)
    again = byoc.parse(mod.astext(show_meta_data=True))
    assert byoc.structural_equal(again["main"], mod["main"])


def test_strict_refuses_and_builtins_are_still_reported_together():
    with pytest.raises(UnsupportedOpsError, match=r"CUSTOM:VendorDecoder ×1 \(operator 1\)") as info:
        from_tflite(custom_model(), strict=True)
    assert "without strict=True" in info.value.hint
    w = TFLiteWriter()
    x = w.input("x", (4,), "float32")
    a, b, c = (w.tensor(n, (4,), "float32") for n in "abc")
    w.op("EXP", [x], [a])
    w.custom(NAME, [a], [b])
    w.op("SIN", [b], [c])
    w.output(c)
    with pytest.raises(UnsupportedOpsError) as info:
        from_tflite(w.finish())
    assert info.value.unsupported == {"EXP": (0,), "SIN": (2,)}   # the custom op is importable


def test_executing_raises_the_named_error():
    mod, _ = from_tflite(custom_model())
    with pytest.raises(NoKernelError, match=r"TFLite operator 1 \(CUSTOM:VendorDecoder\) at file offset \d+ has "
                                            r"no kernel") as info:
        byoc.evaluate(mod, {"x": _x()})
    e = info.value
    assert (e.op_name, e.operator_index) == ("CUSTOM:VendorDecoder", 1) and e.file_offset > 0
    assert "register_custom_kernel('VendorDecoder'" in e.hint and "conv, bias" in e.hint
    exe = byoc.build(mod, target="llvm")    # building is not executing: the run is refused
    with pytest.raises(NoKernelError, match="CUSTOM:VendorDecoder"):
        exe.run({"x": _x()})


def test_partition_keeps_it_on_the_cpu_with_the_reason():
    from byoc.partition import partition_for
    mod, params = from_tflite(custom_model(), semantics="tflm")
    for target in ("ethos-u", "npu"):
        pmod, report = partition_for(target, mod, params, return_report=True)
        cpu = [n for n in report.cpu_ops() if n.op == "tflite.custom"]
        assert len(cpu) == 1 and cpu[0].reason.startswith("no kernel for CUSTOM:VendorDecoder (TFLite operator 1)")
        assert any(n.op.endswith("conv2d") for n in report.offloaded()), target
        assert "tflite.custom" in pmod["main"].astext()


def test_a_target_predicate_cannot_offload_it():
    from byoc.ops.registry import remove_op_attr
    from byoc.partition import partition_for
    from patterns import register_op_predicate, register_pattern_table
    register_pattern_table("greedy_custom", lambda: [])
    register_op_predicate("greedy_custom", "tflite.custom", lambda call: True)
    try:
        mod, params = from_tflite(custom_model())
        pmod, report = partition_for("greedy_custom", mod, params, return_report=True)
        assert [n.op for n in report.offloaded()] == []
        (custom,) = [n for n in report.cpu_ops() if n.op == "tflite.custom"]
        assert custom.reason.startswith("no kernel for CUSTOM:VendorDecoder")
    finally:
        remove_op_attr("tflite.custom", "target.greedy_custom")


def test_registered_kernel_runs_on_every_executor(kernel):
    from byoc.partition import partition_for
    x = _x(3)
    _, scores, pooled = _expected(x)
    mod, params = from_tflite(custom_model(), semantics="tflm")
    assert _custom_call(mod).attrs.out_shapes == ((1,), (1, 8, 8, 6))   # sized by output_shapes
    got = byoc.evaluate(mod, {"x": x})
    np.testing.assert_array_equal(got[0], scores)
    np.testing.assert_array_equal(got[1], pooled)
    cpu = byoc.build(mod, target="llvm").run({"x": x})
    np.testing.assert_array_equal(cpu[1], pooled)
    np.testing.assert_array_equal(cpu[0], scores)
    pmod, report = partition_for("ethos-u", mod, params, return_report=True)
    assert "registered numpy kernel runs" in [n for n in report.cpu_ops() if n.op == "tflite.custom"][0].reason
    from byoc.cli.adapters import build_module, simulator_config
    exe, _ = build_module(pmod, "ethos-u,llvm", simulator_config("ethos-u", None))
    npu = exe.run({"x": x})
    np.testing.assert_array_equal(npu[1], pooled)
    np.testing.assert_array_equal(npu[0], scores)


def test_shapeless_outputs_need_output_shapes_for_a_build():
    x = _x(4)
    _, scores, pooled = _expected(x)
    mod, _ = from_tflite(custom_model())      # imported before any kernel: output 0 keeps its unknown shape
    register_custom_kernel(NAME, vendor_kernel)
    try:
        got = byoc.evaluate(mod, {"x": x})    # the interpreter takes the kernel's shape
        np.testing.assert_array_equal(got[0], scores)
        np.testing.assert_array_equal(got[1], pooled)
        with pytest.raises(ExecutionError, match=r"output\(s\) 0 are stored without a shape") as info:
            byoc.build(mod, target="llvm").run({"x": x})
        assert "output_shapes=" in info.value.hint
    finally:
        unregister_custom_kernel(NAME)
    register_custom_kernel(NAME, vendor_kernel, output_shapes=lambda types, op: [(1,), (1, 8, 8, 5)])
    try:
        with pytest.raises(ModelError, match=r"gave \[\(1,\), \(1, 8, 8, 5\)\]; the file declares"):
            from_tflite(custom_model())
    finally:
        unregister_custom_kernel(NAME)


def test_cut_before_custom_ops_runs_up_to_its_inputs():
    x = _x(5)
    y, _, _ = _expected(x)
    mod, _ = from_tflite(custom_model())
    cut = cut_before_custom_ops(mod)
    assert "tflite.custom" not in cut.astext()
    out = byoc.evaluate(cut, {"x": x})
    assert len(out) == 2   # the custom op's inputs: the conv output and the constant
    np.testing.assert_array_equal(out[0], y)
    np.testing.assert_array_equal(out[1], np.arange(6, dtype=np.int8))


def test_bad_kernels_are_named():
    mod, _ = from_tflite(custom_model())
    x = _x()
    cases = [(lambda ins, op: ins[0], "returned 1 output"),
             (lambda ins, op: (np.zeros(1, np.float64), ins[0]), "returned float64 for output 0"),
             (lambda ins, op: (np.zeros(1, np.float32), np.zeros((1, 8, 8, 5), np.int8)), r"shape \[1, 8, 8, 5\]"),
             (lambda ins, op: 1 / 0, "raised ZeroDivisionError")]
    for fn, message in cases:
        register_custom_kernel(NAME, fn, override=True)
        try:
            with pytest.raises(ExecutionError, match=message):
                byoc.evaluate(mod, {"x": x})
        finally:
            unregister_custom_kernel(NAME)


def test_registry_rejects_mistakes(kernel):
    with pytest.raises(IRError, match="already registered"):
        register_custom_kernel(NAME, lambda ins, op: ins)
    with pytest.raises(IRError, match="without 'CUSTOM:'"):
        register_custom_kernel("CUSTOM:X", vendor_kernel)
    with pytest.raises(IRError, match="must be callable"):
        register_custom_kernel("Other", 3)
    assert byoc.register_custom_kernel is register_custom_kernel


def test_constant_inputs_are_not_folded(kernel):
    """A custom op whose inputs are all constants stays an op: its kernel runs when the model runs."""
    calls = []

    def counting(inputs, op):
        calls.append(1)
        return inputs[0] + 1
    register_custom_kernel("Counter", counting)
    try:
        w = TFLiteWriter()
        x = w.input("x", (3,), "float32")
        c = w.const("c", np.arange(3, dtype=np.float32))
        y = w.tensor("y", (3,), "float32")
        w.custom("Counter", [c], [y])
        z = w.tensor("z", (3,), "float32")
        w.op("ADD", [x, y], [z], "AddOptions", {})
        w.output(z)
        mod, params = from_tflite(w.finish())
        from byoc.partition import partition_for
        pmod = partition_for("npu", mod, params)
        assert "tflite.custom" in pmod["main"].astext() and not calls
        np.testing.assert_array_equal(byoc.evaluate(pmod, {"x": np.ones(3, np.float32)})[0], [2, 3, 4])
        assert calls == [1]
    finally:
        unregister_custom_kernel("Counter")
