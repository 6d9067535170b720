"""Tuning records: ``byoc tune`` searches tile plans per layer workload, ``--tuning-records`` / ``byoc.build(...,
tuning_records=)`` applies the best per workload. On the keyword-spotting model (small, fast); MobileNetV2 is in
benchmarks/bench_tuning.py."""
from __future__ import annotations

import json

import numpy as np
import pytest

import byoc
from npu_sim.tuning import (TileChooser, TuningRecordError, apply_history_best, load_records, use_chooser,
                            workload_key)

from .conftest import KWS

TARGET, PRESET = "ethos-u", "ethos-u55-256"
TRIALS = 8


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    from explore.tune import tune
    out = tmp_path_factory.mktemp("tune") / "kws.jsonl"
    res = tune(KWS, target=TARGET, npu_config=PRESET, trials=TRIALS, output=out, workers=1)
    return res, out


@pytest.fixture(scope="module")
def partitioned():
    from byoc.cli.common import load_model
    model = load_model(str(KWS), target=TARGET)   # TFLite Micro's arithmetic, as `byoc compile` imports it
    return model, byoc.partition_for(TARGET, model.mod, model.params)


def _build(pmod, **kw):
    return byoc.build(pmod, target=f"{TARGET},llvm", npu_config=PRESET, **kw)


def _layer_cycles(module) -> list[tuple[str, int]]:
    return [(lay.name, lay.cycles) for r in module.partitions.values() for lay in r.device_profile().layers]


def _program_bytes(module) -> list[bytes]:
    return [r.to_bytes() for r in module.partitions.values()]


def test_tuned_build_is_never_slower_on_any_layer_and_faster_overall(tuned, partitioned):
    """The simulator's per-layer cycles of a build with the records, against a build without them."""
    res, path = tuned
    _, pmod = partitioned
    base = _layer_cycles(_build(pmod))
    with_records = _build(pmod, tuning_records=path)
    got = _layer_cycles(with_records)
    assert [n for n, _ in got] == [n for n, _ in base] and len(got) == len(res.layers) >= 10
    assert all(t <= b for (_, t), (_, b) in zip(got, base)), list(zip(got, base))
    assert sum(c for _, c in got) < sum(c for _, c in base)
    assert with_records.tuned_layers > 0 and with_records.tuning_notes == ()
    # the tuner's own account is the build's
    assert [(r.name, r.default_cycles, r.tuned_cycles) for r in res.layers] == \
        [(n, b, t) for (n, t), (_, b) in zip(got, base)]


def test_tuned_program_computes_the_same_outputs(tuned, partitioned):
    """Tiling changes the schedule, never the values: the tuned build equals the reference interpreter."""
    from byoc.cli.common import make_inputs
    model, pmod = partitioned
    inputs = make_inputs(model.mod["main"], (), 3)
    want = byoc.evaluate(model.mod, inputs, model.params)
    got = _build(pmod, tuning_records=tuned[1]).run(inputs)
    assert len(got) == len(want) and all(np.array_equal(np.asarray(a), b) for a, b in zip(got, want))


def test_records_apply_deterministically(tuned, partitioned, tmp_path):
    _, path = tuned
    _, pmod = partitioned
    a, b = _build(pmod, tuning_records=path), _build(pmod, tuning_records=load_records(path))
    assert _program_bytes(a) == _program_bytes(b) and _layer_cycles(a) == _layer_cycles(b)
    # the same records in another order, with a worse duplicate of each: the best per workload still wins
    lines = path.read_text().splitlines()
    worse = []
    for line in lines:
        d = json.loads(line)
        d["cycles"] += 1000
        d["config"] = {"bh": 1, "bw": 1, "bc": 8, "order": "depth_outer"} if d["config"] else None
        worse.append(json.dumps(d))
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("\n".join(worse[::-1] + lines[::-1]) + "\n")
    c = _build(pmod, tuning_records=shuffled)
    assert _program_bytes(c) == _program_bytes(a)


def test_no_records_leaves_the_default_heuristic_untouched(partitioned):
    _, pmod = partitioned
    plain = _build(pmod)
    with use_chooser(TileChooser()) as chooser:   # an empty chooser: every layer gets the default plan
        watched = _build(pmod)
    assert _program_bytes(plain) == _program_bytes(watched)
    assert chooser.layers and all(lp.chosen is lp.default for lp in chooser.layers)
    with apply_history_best([]):
        assert _program_bytes(_build(pmod)) == _program_bytes(plain)


def test_the_records_file_has_one_record_per_workload(tuned):
    res, path = tuned
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == res.workloads == len({workload_key(r["workload"]) for r in rows})
    assert sum(r["instances"] for r in rows) == len(res.layers)
    for r in rows:
        assert r["byoc"] == byoc.__version__ and 1 <= r["trials"] <= TRIALS
        assert r["workload"]["npu_config"] == PRESET and r["cycles"] <= r["default_cycles"]
        assert r["config"] is None or set(r["config"]) == {"bh", "bw", "bc", "order"}
    assert any(r["config"] for r in rows)
    assert sum(r["cycles"] for r in rows) == res.tuned_cycles < res.default_cycles


def test_records_that_do_not_apply_are_ignored_with_a_note(tuned, partitioned, tmp_path):
    _, path = tuned
    _, pmod = partitioned
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    no_fit = dict(rows[0], config={"bh": 4096, "bw": 4096, "bc": 4096, "order": "depth_outer"}, cycles=0)
    elsewhere = dict(rows[1], workload=dict(rows[1]["workload"], ifm=[7, 7, 7]))
    p = tmp_path / "odd.jsonl"
    p.write_text(json.dumps(no_fit) + "\n" + json.dumps(elsewhere) + "\n")
    m = _build(pmod, tuning_records=p)
    notes = " | ".join(m.tuning_notes)
    assert "4096x4096x4096" in notes and "not a fitting candidate" in notes
    assert "line 2: no compiled layer has its workload" in notes
    assert _program_bytes(m) == _program_bytes(_build(pmod))   # nothing applied: the default program


@pytest.mark.parametrize("text, line, phrase", [
    ('{"byoc": "0.1.0"\n', 1, "not a JSON object"),
    ("\n[1, 2]\n", 2, "expected a JSON object"),
    ('{"byoc": "0.1.0", "workload": {}, "config": {"bh": 1, "bw": 1, "bc": 1}, "trials": 1}\n', 1, "'cycles'"),
    ('{"byoc": "0.1.0", "workload": {}, "config": {"bh": 0, "bw": 1, "bc": 1}, "cycles": 1, "trials": 1}\n', 1,
     "config.bh"),
    ('{"byoc": "0.1.0", "workload": {}, "config": {"bh": 1, "bw": 1, "bc": 1, "order": "zigzag"}, "cycles": 1, '
     '"trials": 1}\n', 1, "config.order"),
])
def test_malformed_records_are_an_error_naming_the_line(tmp_path, text, line, phrase):
    good = '{"byoc": "0.1.0", "workload": {}, "config": {"bh": 1, "bw": 1, "bc": 1}, "cycles": 1, "trials": 1}\n'
    p = tmp_path / "bad.jsonl"
    p.write_text(good + text)
    with pytest.raises(TuningRecordError) as e:
        load_records(p)
    assert f"{p}:{line + 1}:" in str(e.value) and phrase in str(e.value)


def test_tuning_on_the_process_pool_gives_the_same_records(tuned, tmp_path):
    from explore.tune import tune
    _, path = tuned
    out = tmp_path / "pool.jsonl"
    tune(KWS, target=TARGET, npu_config=PRESET, trials=TRIALS, output=out, workers=2)
    assert out.read_text() == path.read_text()


def test_cli_tune_then_compile_with_the_records(tmp_path, capsys):
    from byoc.cli import main
    rec, art, bad = tmp_path / "r.jsonl", tmp_path / "m.byoc", tmp_path / "bad.jsonl"
    assert main(["tune", str(KWS), "--target", TARGET, "--preset", PRESET, "--trials", "3", "--workers", "1",
                 "-o", str(rec), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["records"] == str(rec) and doc["tuned_cycles"] <= doc["default_cycles"]
    assert all(r["tuned_cycles"] <= r["default_cycles"] for r in doc["layers"])
    assert main(["compile", str(KWS), "--target", f"{TARGET},llvm", "--npu-config", PRESET, "--tuning-records",
                 str(rec), "-o", str(art), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["tuning"]
    assert got["notes"] == [] and got["tuned_layers"] == sum(r["tuned"] != r["default"] for r in doc["layers"])
    bad.write_text(rec.read_text() + "not json\n")
    assert main(["compile", str(KWS), "--target", f"{TARGET},llvm", "--tuning-records", str(bad), "-o",
                 str(art)]) == 3
    n = len(rec.read_text().splitlines()) + 1
    assert f"{bad}:{n}: not a JSON object" in capsys.readouterr().err


@pytest.mark.parametrize("args, code, phrase", [
    (["--preset", "no-such-npu"], 3, "no-such-npu"),
    (["--trials", "0"], 2, "--trials"),
    (["--target", "llvm"], 3, "does not run on the NPU simulator"),
])
def test_cli_tune_mistakes(tmp_path, capsys, args, code, phrase):
    from byoc.cli import main
    try:
        got = main(["tune", str(KWS), "-o", str(tmp_path / "r.jsonl"), "--workers", "1", *args])
    except SystemExit as e:   # argparse's own usage errors
        got = e.code
    err = capsys.readouterr().err
    assert got == code and phrase in err and "Traceback" not in err
    assert not (tmp_path / "r.jsonl").exists()
