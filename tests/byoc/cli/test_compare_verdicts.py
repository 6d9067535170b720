"""``byoc compare`` verdicts on real MLPerf Tiny int8 models (issue 15): tensors are matched by producer, each
executor is held to the oracle of the model's semantics, and any diverging compared tensor fails the run."""
from __future__ import annotations

import json

import numpy as np
import pytest

from cli_helpers import REPO, run_cli, run_json

TINY = REPO / "tests" / "data" / "mlcommons_tiny"
KWS_FIRST_CONV = ("functional_1/activation/Relu;functional_1/batch_normalization/FusedBatchNormV3;functional_1/"
                  "conv2d/BiasAdd/ReadVariableOp/resource;functional_1/conv2d/BiasAdd;functional_1/conv2d_4/"
                  "Conv2D;functional_1/conv2d/Conv2D1")


def _load(name: str, semantics: str = "auto"):
    from byoc.cli.common import load_model, make_inputs
    model = load_model(str(TINY / name), semantics)
    return model, make_inputs(model.mod["main"], seed=0)


@pytest.mark.parametrize("name", ["kws_ref_model.tflite", "str_ww_ref_model.tflite"])
def test_cpu_step_sharing_a_name_with_an_npu_tensor_is_no_divergence(name):
    """Item 1: the first conv's int32 bias_add stays on the CPU while its requantize is offloaded; both carry one
    TFLite name. The run agrees everywhere and says nothing "differs"."""
    pytest.importorskip("ai_edge_litert")
    p = run_cli("compare", TINY / name, "--target", "npu")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "differ" not in p.stdout and p.stdout.strip().splitlines()[-1].startswith("MATCH")


def test_producers_sharing_a_name_are_two_tensors():
    pytest.importorskip("ai_edge_litert")
    from byoc.compare import compare_model
    model, x = _load("kws_ref_model.tflite")
    result = compare_model(model, x, "npu", fault=None)
    assert result.ok, result.verdict()
    same = {t.producer: t for t in result.intermediates if t.name == KWS_FIRST_CONV}
    host, npu = same["nn.bias_add"], same["qnn.requantize"]
    assert (host.dtype, host.placement, host.expected, host.model_tensor) == ("int32", "cpu", "evaluate", False)
    assert (npu.dtype, npu.expected, npu.model_tensor) == ("int8", "litert", True)
    assert npu.placement.startswith("tvmgen_default_npu_main_")    # an NPU partition (named by region id)
    assert {d.executor for d in host.diffs} == {"npu"}          # the int32 value the NPU partition reads
    assert {d.executor for d in npu.diffs} == {"evaluate", "cpu", "npu"}
    # every layer an NPU partition computes is compared (read from the simulator's memory)
    from byoc.ir.expr import Call
    from byoc.ir.traversal import post_order
    from byoc.partition import partition_for
    pmod = partition_for("npu", model.mod, model.params, inline_non_mac=True)
    layers = [n for gv, f in pmod.sorted_items() if f.attrs.get("Compiler") == "npu"
              for n in post_order(f.body, enter_functions=False) if isinstance(n, Call)]
    on_npu = [t for t in result.intermediates + result.outputs
              if t.placement.startswith("tvmgen_") and any(d.executor == "npu" for d in t.diffs)]
    assert len(layers) == 9 and len(on_npu) == len(layers)
    # the HTML report's compare section names the reference and says nothing differs
    from types import SimpleNamespace

    from byoc.report import _compare_section
    html = _compare_section(SimpleNamespace(comparison=result))
    assert 'id="reference"' in html and "LiteRT reference kernels (BUILTIN_REF)" in html and "(expected)" in html
    assert "differ" not in html


def _litert(data: bytes, x: np.ndarray) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def _tflm(data: bytes, x: np.ndarray) -> np.ndarray:
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    it = runtime.Interpreter.from_bytes(data)
    it.set_input(x, 0)
    it.invoke()
    return it.get_output(0)


def test_tflm_semantics_is_checked_against_tflite_micro(tmp_path):
    """Item 2: a model of FULLY_CONNECTED layers imported with TFLite Micro's arithmetic is compared with TFLite
    Micro (not LiteRT, whose FC rounds differently); the saved NPU output is TFLite Micro's, bit for bit."""
    pytest.importorskip("ai_edge_litert")
    pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    path = TINY / "ad01_int8.tflite"
    doc = run_json("compare", path, "--target", "npu", "--semantics", "tflm", "-o", tmp_path / "out")
    assert doc["ok"] is True and doc["oracle"] == "tflm" and "TFLite Micro" in doc["reference"]
    assert all(e["checked_against"] == "tflm" for e in doc["executors"] if e["name"] in ("evaluate", "cpu", "npu"))
    assert [t["expected"] for t in doc["outputs"]] == ["tflm"]
    assert any(t["placement"].startswith("tvmgen_") for t in doc["intermediates"])   # FC layers are offloaded
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert set(manifest["outputs"]) == {"evaluate", "cpu", "npu", "tflm"}
    x = np.load(tmp_path / "out" / manifest["inputs"][0]["file"], allow_pickle=False)
    npu = np.load(tmp_path / "out" / manifest["outputs"]["npu"][0]["file"], allow_pickle=False)
    data = path.read_bytes()
    np.testing.assert_array_equal(npu, _tflm(data, x))
    assert not np.array_equal(npu, _litert(data, x))   # LiteRT as the oracle would have reported a mismatch


def test_diverging_intermediate_fails_the_run():
    """Item 3: a wrong NPU requantization whose effect does not reach the output is a MISMATCH (exit 1)."""
    pytest.importorskip("ai_edge_litert")
    env = {"BYOC_TESTING_FAULT": "requant-off-by-one"}
    p = run_cli("compare", TINY / "vww_96_int8.tflite", "--target", "npu", env=env)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    verdict = p.stdout.strip().splitlines()[-1]
    assert verdict.startswith("MISMATCH") and "(outputs agree)" in verdict and "on npu" in verdict


def test_outputs_only_relaxes_the_verdict_explicitly():
    pytest.importorskip("ai_edge_litert")
    from byoc.compare import compare_model
    model, x = _load("vww_96_int8.tflite")
    result = compare_model(model, x, "npu", fault="requant-off-by-one", outputs_only=True)
    assert result.ok and result.intermediates == () and "--outputs-only" in result.verdict()
    assert all(d.mismatches == 0 for t in result.outputs for d in t.diffs)


def test_a_fault_in_every_kind_of_npu_layer_is_caught():
    """One run per kind of quantized op the NPU computes in ResNet-8 (requantize, add, ...): each is caught."""
    from byoc.compare import Fault, compare_model, fault_sites
    from byoc.partition import partition_for
    model, x = _load("pretrainedResnet_quant.tflite")
    partitioned = partition_for("npu", model.mod, model.params, return_report=True, inline_non_mac=True)
    sites = fault_sites(partitioned[0], Fault("npu-off-by-one"), "npu")
    assert {g for g, _ in sites} == {gv.name_hint for gv, f in partitioned[0].sorted_items()
                                     if f.attrs.get("Compiler") == "npu"}
    first_of_kind = {}
    for i, (_, call) in enumerate(sites):
        first_of_kind.setdefault(call.op.name, i)
    assert {"qnn.requantize", "qnn.add"} <= set(first_of_kind)
    for op, i in first_of_kind.items():
        r = compare_model(model, x, "npu", oracle=False, partitioned=partitioned, fault=f"npu-off-by-one:@{i}")
        assert not r.ok, op
        assert r.first_divergence.placement.startswith("tvmgen_") and \
            {d.executor for d in r.first_divergence.diffs if d.mismatches} == {"npu"}, (op, r.verdict())


@pytest.mark.parametrize("kind, executor", [("cpu-off-by-one", "cpu"), ("host-off-by-one", "npu")])
def test_a_fault_in_a_cpu_build_is_caught(kind, executor):
    from byoc.compare import compare_model
    model, x = _load("kws_ref_model.tflite")
    r = compare_model(model, x, "npu", oracle=False, fault=kind)
    assert not r.ok and (executor == "cpu" or r.first_divergence.placement == "cpu")
    assert {d.executor for d in r.first_divergence.diffs if d.mismatches} == {executor}, r.verdict()


def test_a_fault_that_changes_nothing_is_refused():
    """TFLite's int8 softmax ignores its output zero point: it is never a fault site (the run would wrongly pass)."""
    from byoc.compare import Fault, fault_sites
    model, _ = _load("kws_ref_model.tflite", "tflm")
    from byoc.partition import partition_for
    pmod = partition_for("npu", model.mod, model.params, inline_non_mac=True)
    from byoc.ir.traversal import post_order
    # the softmax is TVM's dequantize → nn.softmax → quantize(kernel="qnn.softmax"): its quantize is no site
    ends = [n for n in post_order(pmod["main"].body) if getattr(getattr(n, "op", None), "name", "") == "qnn.quantize"
            and n.attrs.kernel == "qnn.softmax"]
    assert ends
    assert all(c.op.name != "qnn.softmax" and c not in ends for _, c in fault_sites(pmod, Fault("host-off-by-one")))


def test_onnx_float_tensors_are_held_to_onnxruntime_within_the_stated_tolerance(tmp_path):
    """A QDQ model ending in a float softmax: onnxruntime's MLAS softmax is not reproduced bit for bit (1e-8-level
    differences), so floats of ONNX models agree within ONNX_FLOAT_TOLERANCE and the verdict says so; a float
    error beyond it is still a MISMATCH."""
    pytest.importorskip("onnxruntime")
    import sys
    sys.path.insert(0, str(REPO / "tests" / "byoc" / "frontend"))
    from onnx_models import cnn, quantize_qdq
    from byoc.compare import compare_model
    from byoc.compare.result import diff
    from byoc.compare.run import ONNX_FLOAT_TOLERANCE
    from byoc.cli.common import load_model, make_inputs
    path = tmp_path / "qdq_softmax.onnx"
    path.write_bytes(quantize_qdq(cnn(batch_norm=False), tmp_path, per_channel=False).SerializeToString())
    model = load_model(str(path), "auto")
    result = compare_model(model, make_inputs(model.mod["main"], seed=0), "npu", fault=None)
    assert result.ok, result.verdict()
    assert result.float_tolerance == ONNX_FLOAT_TOLERANCE and "floats within" in result.verdict()
    # the tolerance is relative to max(1, |x|): one ulp passes, 1e-3 does not, integers stay exact
    x = np.array([0.25, 0.5, 0.25], np.float32)
    ulp = np.nextafter(x, np.float32(1))
    assert diff(x, ulp, "cpu", ONNX_FLOAT_TOLERANCE).mismatches == 0
    assert diff(x, x + np.float32(1e-3), "cpu", ONNX_FLOAT_TOLERANCE).mismatches == 3
    assert diff(x, ulp, "cpu").mismatches == 3
    q = np.array([1, 2, 3], np.int8)
    assert diff(q, q + np.int8(1), "cpu", ONNX_FLOAT_TOLERANCE).mismatches == 3
