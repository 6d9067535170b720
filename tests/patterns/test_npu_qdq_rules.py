"""The npu table's ONNX QDQ entries (patterns/npu_qdq.py): their rules print as sentences, and each refusal names
the rule (a float op IEEE does not round exactly, a non-elementwise op, a float mean, a float transposed
convolution)."""
from __future__ import annotations

import numpy as np

import byoc
import patterns
from byoc import relay
from byoc.ir.expr import Call, Function
from byoc.ir.traversal import post_order
from byoc.relay.op import make_call


def _composites(part):
    return [n.op.attrs["Composite"] for _, f in part.items() if f.attrs.get("Compiler")
            for n in post_order(f) if isinstance(n, Call) and isinstance(n.op, Function)]


def _group(float_op):
    x = relay.var("x", shape=(1, 4, 4, 8), dtype="int8")
    d = relay.qnn.op.dequantize(x, relay.const(np.float32(0.05)), relay.const(0))
    y = make_call("qnn.quantize", [float_op(d), relay.const(np.float32(0.02)), relay.const(-3)],
                  {"out_dtype": "int8", "rounding": "ONNX"})
    return byoc.IRModule.from_expr(relay.Function([x], y))


def test_rules_print_as_sentences():
    rules = {r.name: r for r in patterns.describe_rules("npu")}
    for name in ("npu.qdq_elementwise", "npu.qdq_resize", "npu.qnn_global_avg_pool"):
        assert rules[name].kind == "composite" and len(rules[name].rules) >= 4
    assert any("IEEE 754 rounds exactly" in s for s in rules["npu.qdq_elementwise"].rules)
    for op, words in (("nn.global_avg_pool2d", "float32 sum"), ("nn.conv2d_transpose", "float32"),
                      ("mean", "float32 sum")):
        assert any(words in s for s in rules[op].rules), rules[op]


def test_exactly_rounded_chain_is_a_table_and_an_approximated_one_is_refused():
    ok = _group(lambda d: relay.maximum(relay.multiply(d, relay.const(np.float32(0.3))), d))
    part = byoc.partition_for("npu", ok)
    assert _composites(part) == ["npu.qdq_elementwise"]
    x = np.arange(-128, 128).astype(np.int8).reshape(1, 4, 8, 8)[:, :, :4, :]
    np.testing.assert_array_equal(byoc.build(part, target="npu,llvm").run({"x": x})[0],
                                  byoc.evaluate(ok, {"x": x})[0])
    bad = _group(lambda d: relay.exp(relay.multiply(d, relay.const(np.float32(0.3)))))
    part, rep = byoc.partition_for("npu", bad, return_report=True)
    assert not _composites(part)
    assert any("npu.qdq_elementwise" in n.reason and "found exp" in n.reason for n in rep.cpu_ops())


def test_a_non_elementwise_op_between_dequantize_and_quantize_is_no_table():
    mod = _group(lambda d: relay.nn.softmax(d, axis=-1))
    part = byoc.partition_for("npu", mod)
    assert "npu.qdq_elementwise" not in _composites(part)


def test_float_mean_and_transposed_convolution_stay_on_the_cpu_with_their_reason():
    x = relay.var("x", shape=(1, 8, 6, 6), dtype="float32")
    w = relay.const(np.random.default_rng(0).normal(0, 1, (8, 4, 2, 2)).astype(np.float32))
    y = relay.nn.global_avg_pool2d(relay.nn.conv2d_transpose(x, w, channels=4, kernel_size=(2, 2), strides=(2, 2)))
    _, rep = byoc.partition_for("npu", byoc.IRModule.from_expr(relay.Function([x], y)), return_report=True)
    why = {n.op: n.reason for n in rep.cpu_ops()}
    assert "float32 sum in its own order" in why["nn.global_avg_pool2d"]
    assert "MLAS products and sums" in why["nn.conv2d_transpose"]
