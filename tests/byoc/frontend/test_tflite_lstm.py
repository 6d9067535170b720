"""UNIDIRECTIONAL_SEQUENCE_LSTM (integer) against both oracles: TFLite Micro (``semantics="tflm"``) and LiteRT's
BUILTIN_REF kernels (``semantics="litert"``), on small LSTMs built here and on the real models when present.

The two runtimes disagree on some elements (TFLM's interpolated sigmoid/tanh table vs LiteRT's gemmlowp int16
fixed point, MBQM vs RoundingDivideByPOT in the cell products): the last test shows that, so each semantics is
really checked against its own oracle.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.errors import ModelError
from byoc.frontend import from_tflite
from byoc.testing.tflite_writer import TFLiteWriter

sys.path.insert(0, str(Path(__file__).parent))
from tflite_oracles import litert_run, tflm_run  # noqa: E402

UNSEEN = Path("/work/ext/unseen")
SEMANTICS = ("tflm", "litert")


def _oracle(semantics: str, data: bytes, x: np.ndarray) -> np.ndarray:
    return tflm_run(data, [x])[0] if semantics == "tflm" else litert_run(data, [x])[0][0]


def lstm_model(batch=1, steps=5, n_input=6, n_cell=4, *, seed=0, time_major=False, cell_scale=2.0 ** -11,
               cell_clip=0.0, hidden_zp=3, hidden_intermediate=None) -> bytes:
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()
    shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    x = w.input("x", shape, "int8", scale=0.03, zero_point=-5)
    wi = [rng.integers(-127, 128, (n_cell, n_input)) for _ in range(4)]
    wr = [rng.integers(-127, 128, (n_cell, n_cell)) for _ in range(4)]
    b = [rng.integers(-3000, 3000, n_cell) for _ in range(4)]
    y = w.unidirectional_sequence_lstm(x, wi, wr, b, weight_scales=rng.uniform(0.005, 0.02, 4),
                                       recurrent_scales=rng.uniform(0.005, 0.02, 4), hidden_scale=0.0078,
                                       hidden_zp=hidden_zp, cell_scale=cell_scale, cell_clip=cell_clip,
                                       time_major=time_major, hidden_intermediate=hidden_intermediate)
    w.output(y)
    return w.finish()


def _check(data: bytes, semantics: str, samples: int = 3, cpu: bool = True) -> int:
    """Outputs of byoc.evaluate (and the LLVM build) equal the oracle's; returns the elements compared."""
    mod, _ = from_tflite(data, semantics=semantics)
    exe = byoc.build(mod, target="llvm") if cpu else None
    p = mod["main"].params[0]
    rng = np.random.default_rng(7)
    n = 0
    for _ in range(samples):
        x = rng.integers(-128, 128, p.type_annotation.shape).astype(np.int8)
        want = _oracle(semantics, data, x)
        got = byoc.evaluate(mod, {p.name_hint: x})
        got = got[0] if isinstance(got, (list, tuple)) else got
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.array_equal(got, want), f"{int((got != want).sum())}/{want.size} differ from {semantics}"
        if exe is not None:
            cpu_out = exe.run({p.name_hint: x})[0]
            assert np.array_equal(cpu_out, want), f"{int((cpu_out != want).sum())} CPU mismatches"
        n += want.size
    return n


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize("case", [
    dict(),                                              # 5 steps, batch 1
    dict(batch=2, steps=3, seed=1),                      # batches run side by side
    dict(steps=4, time_major=True, batch=2, seed=2),     # time-major layout
    dict(steps=6, cell_scale=2.0 ** -13, cell_clip=1.5, seed=3, hidden_zp=-7),  # clip active, other tanh shift
    dict(steps=1, n_input=9, n_cell=8, seed=4),          # one step: no recurrence (dtln's shape)
])
def test_small_lstm_is_bit_exact(semantics, case):
    assert _check(lstm_model(**case), semantics) > 0


def test_litert_reads_the_hidden_intermediate_and_tflm_the_hidden_state():
    """LiteRT requantizes the hidden state with intermediate 4's parameters, TFLM with the state tensor's."""
    data = lstm_model(steps=3, hidden_intermediate=(0.011, -2), seed=5)
    for semantics in SEMANTICS:
        _check(data, semantics, samples=2, cpu=False)


def test_the_two_runtimes_differ_and_each_semantics_follows_its_own():
    data = lstm_model(steps=8, n_cell=16, n_input=12, seed=6)
    rng = np.random.default_rng(0)
    diffs = 0
    for _ in range(4):
        x = rng.integers(-128, 128, (1, 8, 12)).astype(np.int8)
        diffs += int((_oracle("tflm", data, x) != _oracle("litert", data, x)).sum())
    assert diffs > 0, "TFLM and LiteRT agreed everywhere: the semantics split would be untested"
    for semantics in SEMANTICS:
        _check(data, semantics, samples=2, cpu=False)


def test_unsupported_variants_are_refused_naming_the_operator():
    w = TFLiteWriter()
    x = w.input("x", (1, 2, 3), "float32")
    y = w.tensor("y", (1, 2, 4), "float32")
    w.op("UNIDIRECTIONAL_SEQUENCE_LSTM", [x] + [None] * 23, [y], "UnidirectionalSequenceLSTMOptions",
         dict(fused_activation_function=4))
    w.output(y)
    with pytest.raises(ModelError, match="UNIDIRECTIONAL_SEQUENCE_LSTM.*float"):
        from_tflite(w.finish())


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize("name", ["dtln_noise_suppression", "trained_lstm_int8"])
def test_real_lstm_models_are_bit_exact(name, semantics):
    path = UNSEEN / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    assert _check(path.read_bytes(), semantics, samples=3, cpu=name.startswith("dtln")) > 0


@pytest.mark.parametrize("case", [dict(steps=3, n_cell=8, seed=8), dict(batch=2, steps=2, seed=9, cell_clip=0.9),
                                  dict(steps=3, time_major=True, batch=2, seed=10)])
def test_ethos_u_runs_the_whole_lstm_on_the_npu_bit_exact(case):
    """Every op of the unrolled LSTM is offloaded (Vela places it all on the NPU) and the build equals TFLM."""
    from byoc.cli.cmd_model import give_back_policies
    from byoc.partition import partition_for
    data = lstm_model(**case)
    mod, params = from_tflite(data, semantics="tflm")
    pm, report = partition_for("ethos-u", mod, params, return_report=True, **give_back_policies("ethos-u"))
    assert not list(report.cpu_ops()), [(n.op, n.reason) for n in report.cpu_ops()][:3]
    exe = byoc.build(pm, target="ethos-u,llvm")
    layers = [x for p in exe.npu_programs.values() for x in p.layers]
    kinds = {x.kind for x in layers}
    assert {"dense", "add", "mul", "lut"} <= kinds, kinds
    # regor's decomposition (compiler/lstm.cpp): per recurrence (each batch; all batches when time-major) and step,
    # each gate's feature and recurrent FC (step 0's from the zero state too), named as Vela's rows
    batches = range(1 if case.get("time_major") else case.get("batch", 1))
    want = sorted(f"{g}_gate_b{b}.t{t}_{w}_fc_ofm" for b in batches for t in range(case["steps"])
                  for g in ("input", "forget", "cell", "output") for w in ("feature", "recurrent"))
    assert sorted(x.name for x in layers if x.kind == "dense") == want
    # the step's input rows are read in place (no copy of the input), each gate's activation is fused in its add
    assert not [x.name for x in layers if x.kind == "copy" and "feauture" in x.name]
    assert sum(1 for x in layers if x.kind == "add" and x.name.endswith("_feature_fc_ofm/Add")) == len(want) // 2
    p = mod["main"].params[0]
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.integers(-128, 128, p.type_annotation.shape).astype(np.int8)
        got = exe.run({p.name_hint: x})[0]
        want = _oracle("tflm", data, x)
        assert np.array_equal(got, want), f"{int((got != want).sum())} NPU-build mismatches vs TFLM"


@pytest.mark.parametrize("case", [dict(steps=8, n_input=28, n_cell=20, seed=11, hidden_zp=-2),
                                  dict(steps=6, n_input=40, n_cell=32, seed=12, cell_clip=1.5),
                                  dict(batch=2, steps=4, n_input=12, n_cell=16, seed=13),
                                  dict(steps=4, time_major=True, batch=2, n_input=12, n_cell=16, seed=14)])
def test_lstm_layers_match_vela_rows_and_time(tmp_path, case):
    """Vela 5.2 (regor) on the same file: every FC row it reports (named after the LSTM's internal tensors) is one
    of our layers, within ±25% after step 0, and the network within ±15% (the tiny elementwise layers of a 16-32 cell LSTM are
    charged DMA latency that Vela's elementwise estimate leaves out; the bench's real LSTMs are within ±10%)."""
    from benchmarks.bench_npu import _model_rows, _vela_exe
    if _vela_exe() is None:
        pytest.skip("vela is not installed")
    path = tmp_path / "lstm.tflite"
    path.write_bytes(lstm_model(**case))
    r = _model_rows("lstm", path, tmp_path / "vela")
    fc = [x for x in r["rows"] if x["op"] == "FullyConnected"]
    assert len(fc) == 8 * case["steps"] * (1 if case.get("time_major") else case.get("batch", 1))
    assert all(x["ours"] is not None for x in fc), [x["name"] for x in fc if x["ours"] is None][:4]
    # (step 0 of the first batch left out: the network's first FC also waits for its input, cold)
    off = [(x["name"], x["ratio"]) for x in fc if "_b0.t0_" not in x["name"] and abs(x["ratio"] - 1) > 0.25]
    assert not off, off[:4]
    assert abs(r["ratio"] - 1) <= 0.15, r["ratio"]
