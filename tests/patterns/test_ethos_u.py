"""The ``ethos-u`` target: Vela's placement on real models, its rules in words, bit-exact runs on the simulator
against TFLite Micro, FULLY_CONNECTED on the NPU by default, and the boundary rule.

Vela's placement is never recorded here: each placement test runs the installed Vela 5.x
(``ethos-u-vela``, ``--accelerator-config ethos-u55-256``) and reads the operators it left to the CPU.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.cli.cmd_model import give_back_policies
from byoc.cli.common import load_model
from byoc.partition import partition_for
from tests.shared_models import SHARED_MODELS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vela_placement import placement, vela_executable  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "data" / "mlcommons_tiny"
TINY_MODELS = sorted(TINY.glob("*.tflite"))
OTHER_MODELS = [Path("/work/ext/models/pretrainedResnet_large_int8.tflite"),
                *sorted(SHARED_MODELS.glob("*.tflite"))]
KWS = TINY / "kws_ref_model.tflite"


def _ethos_u(path: Path):
    m = load_model(str(path), "auto", target="ethos-u")
    pm, report = partition_for("ethos-u", m.mod, m.params, return_report=True, **give_back_policies("ethos-u"))
    return m, pm, report


# -- rules --------------------------------------------------------------------------------------------------

def test_byoc_patterns_prints_each_vela_rule_as_a_sentence():
    sys.path.insert(0, str(REPO / "tests" / "byoc" / "cli"))
    from cli_helpers import run_cli
    p = run_cli("patterns", "ethos-u")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for composite in ("ethos-u.qnn_conv2d", "ethos-u.qnn_depthwise_conv2d", "ethos-u.qnn_dense",
                      "ethos-u.qnn_avg_pool2d", "ethos-u.qnn_max_pool2d", "ethos-u.qnn_mean", "ethos-u.qnn_add"):
        assert composite in out
    # Vela's limits (tflite_supported_operators.py), in words
    for sentence in ("the dilated kernel height is 1..64 and the dilated kernel area at most 4096",
                     "the sum of |weight - weight zero point| is at most 8323072",
                     "without padding (VALID): window height at most 256 and area at most 65536",
                     "with padding (SAME): the window is at most 8x8",
                     "for a depth multiplier above 1 the input has one channel",
                     "every dimension of the tensors it reads and writes is in [1, 65535]",
                     "the reduced area is at most 2^24 (int8)"):
        assert sentence in out, sentence
    # SOFTMAX, TRANSPOSE and RESIZE run on the NPU under Vela 5's (Regor's) rules
    assert "ethos-u.qnn_softmax (composite)" in out and "transpose (op)" in out and "image.resize2d (op)" in out
    for sentence in ("the product of the input's width and height (its 4-D view, leading 1s added) is less than "
                     "65536", "each is at most 65536 (a 3-D tensor, or one whose other axes are 1)",
                     "are equal and one of 2x/4x/8x", "bilinear with half_pixel_centers: 2x"):
        assert sentence in out, sentence
    # ARG_MAX, TRANSPOSE_CONV, PRELU, SQUARED_DIFFERENCE, MAXIMUM/MINIMUM run on the NPU too: nothing Vela offloads
    # is kept on the CPU for want of a lowering
    from patterns.ethos_u import VELA_DIFFERENCES
    assert not VELA_DIFFERENCES
    for listed in ("ethos-u.argmax (composite)", "ethos-u.qnn_conv2d_transpose (composite)", "qnn.prelu (op)",
                   "qnn.squared_difference (op)", "maximum (op)"):
        assert listed in out, listed
    assert "(differs from Vela)" not in out
    # a TRANSPOSE_CONV outside the composite (16x8): Vela's stride rule says whether that differs from Vela
    assert "qnn.conv2d_transpose (op)" in out and "2x1 / 1x2 only for a 1-high / 1-wide IFM and kernel" in out


# -- placement against Vela ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path", TINY_MODELS + [p for p in OTHER_MODELS if p.exists()], ids=lambda p: p.stem)
def test_every_operator_is_placed_as_vela_places_it(path, tmp_path):
    if vela_executable() is None:
        pytest.skip("vela (ethos-u-vela) is not installed")
    pl = placement(path, tmp_path)
    assert pl.ops
    # SOFTMAX (8 of these models) and MobileNetV2's input TRANSPOSE included: no operator differs
    assert pl.differences == [], pl.differences
    assert pl.vela_cpu == pl.byoc_cpu


# -- FULLY_CONNECTED and semantics ---------------------------------------------------------------------------

def test_ethos_u_imports_with_tflite_micro_arithmetic_so_fully_connected_is_offloaded():
    assert load_model(str(KWS), "auto").semantics == "litert"          # no target: LiteRT's reference
    m, pm, report = _ethos_u(KWS)
    assert m.semantics == "tflm"
    comps = [c for p in report.partitions for c in p.composites]
    assert "ethos-u.qnn_dense" in comps
    assert not [n for n in report.cpu_ops() if "qnn.dense" in (n.op, *n.inner_ops)]
    # an explicit --semantics litert wins, and then the double-precision FC stays on the CPU with the reason
    m2 = load_model(str(KWS), "litert", target="ethos-u")
    _, r2 = partition_for("ethos-u", m2.mod, m2.params, return_report=True)
    assert any("double precision" in n.reason for n in r2.cpu_ops() if n.op == "qnn.dense")


# -- bit-exact on the simulator -------------------------------------------------------------------------------

def _tflm(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    pytest.importorskip("tflite_micro")
    from tflite_micro import runtime
    from byoc.frontend.tflite_reader import read_model
    it = runtime.Interpreter.from_bytes(data)
    for i, x in enumerate(inputs):
        it.set_input(x, i)
    it.invoke()
    return [np.array(it.get_output(i)) for i in range(len(read_model(data).outputs))]


def _ethos_presets() -> list[str]:
    import npu_sim
    return sorted(p for p in npu_sim.PRESETS if p.startswith("ethos-u"))


# Every MLPerf Tiny model on every Ethos-U preset; the larger models on the target's default preset.
_RUNS = [(p, c) for p in TINY_MODELS for c in _ethos_presets()] + \
        [(p, "ethos-u55-256-like") for p in OTHER_MODELS if p.exists()]


@pytest.mark.parametrize("path,preset", _RUNS, ids=lambda v: v.stem if isinstance(v, Path) else v)
def test_offloaded_model_is_bit_exact_with_tflite_micro_and_the_reference(path, preset):
    m, pm, report = _ethos_u(path)
    assert report.partitions, "nothing offloaded"
    exe = byoc.build(pm, target="ethos-u,llvm", npu_config=preset)
    assert exe.npu_programs and {p.config.name for p in exe.npu_programs.values()} == {preset}
    params = m.mod["main"].params
    rng = np.random.default_rng(14)
    for _ in range(2):
        xs = []
        for p in params:
            t = p.checked_type if getattr(p, "_checked_type", None) is not None else p.type_annotation
            info = np.iinfo(t.dtype)
            xs.append(rng.integers(info.min, int(info.max) + 1, size=tuple(t.shape)).astype(t.dtype))
        got = exe.run({p.name_hint: x for p, x in zip(params, xs)})
        want = _tflm(m.data, xs)
        ref = byoc.evaluate(m.mod, {p.name_hint: x for p, x in zip(params, xs)})
        ref = ref if isinstance(ref, (list, tuple)) else [ref]
        for g, w, r in zip(got, want, ref):
            np.testing.assert_array_equal(np.asarray(r), w)   # the reference interpreter is TFLite Micro's
            np.testing.assert_array_equal(np.asarray(g), w)   # and so is the NPU + CPU build


# -- the boundary rule ----------------------------------------------------------------------------------------

def test_boundary_rule_keeps_kws_lone_int32_requantize_on_the_cpu():
    """On the ``npu`` table kws's 10x4 convolution stays on the CPU, so its requantize would take a 25x5x64 int32
    tensor (32,000 B) across to the NPU to return 8,000 int8 values: the host does that in 8,000 cycles."""
    m = load_model(str(KWS), "litert")
    _, kept = partition_for("npu", m.mod, m.params, return_report=True, inline_non_mac=True, boundary_rule=False)
    assert [n for n in kept.offloaded() if n.op == "npu.qnn_requantize"]
    _, report = partition_for("npu", m.mod, m.params, return_report=True, inline_non_mac=True, boundary_rule=True)
    rq = [n for n in report.cpu_ops() if n.op == "npu.qnn_requantize"]
    assert len(rq) == 1
    why = rq[0].reason
    assert "does not pay for itself" in why and "32,000 B in (32,000 B of it int32)" in why
    assert "8,000 B result" in why and f"{25 * 5 * 64 / 500e6 * 1e6:.1f} us it takes on the host" in why
    assert not [n for n in report.offloaded() if n.op == "npu.qnn_requantize"]
    # everything else offloaded before still is
    assert {n.op for n in kept.offloaded()} - {"npu.qnn_requantize"} == {n.op for n in report.offloaded()}


def test_boundary_rule_moves_nothing_on_kws_for_ethos_u():
    m = load_model(str(KWS), "auto", target="ethos-u")
    _, report = partition_for("ethos-u", m.mod, m.params, return_report=True, boundary_rule=True)
    assert not [n for n in report.cpu_ops() if "does not pay" in n.reason]
    assert len(report.partitions) == 1


# -- lookup-table activations ----------------------------------------------------------------------------------

def test_hard_swish_and_leaky_relu_run_as_npu_lookup_tables_bit_exact():
    from byoc.frontend import from_tflite
    from byoc.testing.tflite_writer import TFLiteWriter
    w = TFLiteWriter()
    x = w.input("x", (1, 4, 8, 8), "int8", scale=0.05, zero_point=3)
    y = w.hard_swish(x, out_scale=0.04, out_zp=-5)
    w.output(w.leaky_relu(y, 0.3, out_scale=0.03, out_zp=5))
    data = w.finish()
    mod, params = from_tflite(data, semantics="tflm")
    pm, report = partition_for("ethos-u", mod, params, return_report=True)
    assert sorted(c for p in report.partitions for c in p.composites) == ["ethos-u.qnn_hardswish",
                                                                           "ethos-u.qnn_leaky_relu"]
    exe = byoc.build(pm, target="ethos-u,llvm")
    assert [x.kind for p in exe.npu_programs.values() for x in p.layers] == ["lut", "lut"]
    every = np.arange(-128, 128).astype(np.int8).reshape(1, 4, 8, 8)   # all 256 int8 values
    np.testing.assert_array_equal(exe.run({"x": every})[0], _tflm(data, [every])[0])


def test_cli_keeps_compute_free_partitions_on_ethos_u_as_vela_does(tmp_path):
    """Vela runs a lone ADD on the NPU; Ethos-N's InlineNonComputeIntensivePartitions (the ``npu`` default)
    gives it back. With the boundary rule off, only that policy separates the two targets."""
    import json
    from byoc.testing import TFLiteWriter
    sys.path.insert(0, str(REPO / "tests" / "byoc" / "cli"))
    from cli_helpers import run_cli
    w = TFLiteWriter()
    a = w.input("a", (1, 4, 4, 8), "int8", scale=0.05, zero_point=0)
    b = w.input("b", (1, 4, 4, 8), "int8", scale=0.05, zero_point=0)
    w.output(w.add(a, b))
    path = tmp_path / "add.tflite"
    path.write_bytes(w.finish())
    got = {}
    for target in ("ethos-u", "npu"):
        p = run_cli("partition", path, "--target", target, "--keep-unprofitable", "--json")
        assert p.returncode == 0, p.stderr
        got[target] = json.loads(p.stdout)
    assert [s["target"] for s in got["ethos-u"]["summary"] if s["partitions"]] == ["ethos-u"]
    assert got["npu"]["summary"] == [{"target": "cpu", "partitions": 0, "ops": 1, "macs": 0}]
    assert any("no multiply-accumulate work" in n for n in got["npu"]["notes"])
    p = run_cli("partition", path, "--target", "npu", "--keep-unprofitable", "--keep-compute-free", "--json")
    assert [s["target"] for s in json.loads(p.stdout)["summary"] if s["partitions"]] == ["npu"]
    # By default ethos-u places as Vela does: the lone ADD stays, and a note says its boundary does not pay
    p = run_cli("partition", path, "--target", "ethos-u", "--json")
    d = json.loads(p.stdout)
    assert [s["target"] for s in d["summary"] if s["partitions"]] == ["ethos-u"]
    assert any("does not pay for itself" in n and "where Vela places it" in n for n in d["notes"]), d["notes"]
    p = run_cli("partition", path, "--target", "ethos-u", "--give-back-unprofitable", "--json")
    d = json.loads(p.stdout)
    assert d["summary"] == [{"target": "cpu", "partitions": 0, "ops": 1, "macs": 0}]
    p = run_cli("partition", path, "--target", "ethos-u", "--give-back-unprofitable", "--keep-unprofitable")
    assert p.returncode == 2   # the two flags exclude each other


def test_boundary_rule_out_of_reruns_keeps_the_report(monkeypatch):
    """A regression: when the last allowed re-run still found entry units to give back, partition_for returned
    an empty placement log (no CPU op reported at all). Now the last module's log stands and a note names what
    the rule would still give back."""
    import byoc.partition as partition
    monkeypatch.setattr(partition, "_MAX_PEELS", 0)
    m = load_model(str(KWS), "litert")
    _, report = partition_for("npu", m.mod, m.params, return_report=True, inline_non_mac=True, boundary_rule=True)
    assert report.cpu_ops(), "the placement log was lost"
    assert [n for n in report.offloaded() if n.op == "npu.qnn_requantize"]   # not given back: no re-run left
    assert any("does not pay for itself" in n and "stops after 0 re-runs" in n for n in report.notes), report.notes
