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


@settings(max_examples=250, **_SETTINGS)
@given(graph_cases(max_ops=6, max_side=6, max_channels=6))
def test_random_graphs_interpreter_and_partitions_match_litert(case):
    _check(case, CHEAP)


@settings(max_examples=50, **_SETTINGS)
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
