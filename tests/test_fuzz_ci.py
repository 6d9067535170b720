"""The CI slice of the fuzzers (the long mode is ``make fuzz`` / ``python -m tests.fuzz --minutes N``).

* Random quantized graphs (tests/fuzz/graphs.py), derandomized: each is written with TFLiteWriter, run by LiteRT
  BUILTIN_REF (the oracle), imported, partitioned for npu and vta, built, run on every executor and compared bit
  for bit. A few hundred graphs on the cheap executors, fewer through the compiled ones.
* File fuzzing (tests/fuzz/files.py): 2,000 mutated ONNX models, TFLite models (semantic field edits of
  writer-built graphs; the shared models' byte fuzzing lives in tests/byoc/frontend/test_tflite_fuzz.py),
  artifact containers and NPU programs, in rlimited child processes: only ByocError may escape, no case may hang.

Findings saved as open regressions (tests/regressions/data, status "open") are known bugs tracked by
tests/regressions/test_saved_cases.py; only exactly those signatures are tolerated here.
"""
from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz.differential import ALL_EXECUTORS, check_model
from tests.fuzz.files import CASE_SECONDS, run_file_fuzz
from tests.fuzz.graphs import graph_cases
from tests.fuzz.regressions import known_signatures

pytest.importorskip("ai_edge_litert.interpreter")

KNOWN = known_signatures()
CHEAP = ("interpreter", "partitioned:npu", "partitioned:vta")
_SETTINGS = dict(deadline=None, database=None, derandomize=True, print_blob=False,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.filter_too_much])


def _check(case, executors) -> None:
    rep = check_model(case.model, case.inputs, executors)
    assert rep.rejected is None, f"the generator wrote a model LiteRT refuses: {rep.rejected}"
    new = [f for f in rep.findings if f.signature() not in KNOWN]
    assert not new, "\n".join(f.render() for f in new) + "\n" + rep.render()


@settings(max_examples=400, **_SETTINGS)
@given(graph_cases(max_ops=6, max_side=6, max_channels=6))
def test_random_graphs_interpreter_and_partitions_match_litert(case):
    _check(case, CHEAP)


@settings(max_examples=120, **_SETTINGS)
@given(graph_cases(max_ops=5, max_side=5, max_channels=5))
def test_random_graphs_all_executors_match_litert(case):
    _check(case, ALL_EXECUTORS)


@pytest.mark.skipif(sys.platform == "win32", reason="uses resource limits and SIGALRM")
def test_mutated_files_load_or_raise_byoc_errors():
    plan = {"onnx": 700, "tflite": 500, "container": 400, "program": 400}
    sums = run_file_fuzz(plan, seed=20240601, workers=2, chunk=350)
    problems = []
    for target, s in sums.items():
        assert not s.skipped, f"{target}: {s.skipped}"
        assert s.cases == plan[target], (target, s.cases)
        # both outcomes occur: the mutations get past parsing, and loading is not rejecting everything
        assert s.ok > 0 and s.rejected > 0, (target, s.ok, s.rejected)
        assert s.worst_seconds < CASE_SECONDS
        problems += [f"{f.signature()}: {f.detail[:300]} — reproduce: {f.reproducer()}" for f in s.findings
                     if f.signature() not in KNOWN]
    assert sum(s.cases for s in sums.values()) >= 2000
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------ the harness itself can fail
def test_harness_reports_and_localizes_a_wrong_executor(monkeypatch):
    import numpy as np

    from byoc.interpreter import Interpreter
    from byoc.testing import TFLiteWriter

    w = TFLiteWriter()
    x = w.input("x", (1, 4, 4, 2), "int8", scale=0.1, zero_point=3)
    rng = np.random.default_rng(0)
    y = w.conv2d(x, rng.integers(-127, 128, (3, 1, 1, 2)).astype(np.int8), np.zeros(3, np.int32),
                 weight_scale=0.02, padding="VALID", out_scale=0.05, out_zp=0)
    w.output(w.max_pool2d(y, (2, 2), (2, 2)))
    model = w.finish()
    inputs = [rng.integers(-128, 128, (1, 4, 4, 2)).astype(np.int8)]
    assert not check_model(model, inputs, ("interpreter", "llvm")).findings

    original = Interpreter._apply_op

    def off_by_one_max_pool(self, call, args):  # max pooling of slightly wrong data
        if call.op.name == "nn.max_pool2d":
            args = [np.asarray(args[0]) ^ np.int8(1)] + list(args[1:])
        return original(self, call, args)

    monkeypatch.setattr(Interpreter, "_apply_op", off_by_one_max_pool)
    rep = check_model(model, inputs, ("interpreter", "llvm"))
    assert [(f.executor, f.kind, f.where) for f in rep.findings] == [("interpreter", "mismatch", "MAX_POOL_2D")]


def test_file_fuzz_classifies_outcomes(monkeypatch):
    import time

    from byoc.errors import ModelError
    from tests.fuzz import files

    def consume_with(exc=None, sleep=0.0):
        def consume(target, data, rng):
            time.sleep(sleep)
            if exc is not None:
                raise exc
            return "ok"
        return consume

    monkeypatch.setattr(files, "CASE_SECONDS", 1)
    outcomes = {}
    for name, fn in {"ok": consume_with(), "model_error": consume_with(ModelError("bad")),
                     "key_error": consume_with(KeyError(3)), "hang": consume_with(sleep=3)}.items():
        monkeypatch.setattr(files, "consume", fn)
        outcome, finding = files.run_one("container", 0, 0)
        outcomes[name] = (outcome, finding.kind if finding else None)
    assert outcomes == {"ok": ("ok", None), "model_error": ("rejected", None), "key_error": ("finding", "escape"),
                        "hang": ("finding", "timeout")}
