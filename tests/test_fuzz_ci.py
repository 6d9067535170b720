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

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from tests.fuzz.differential import check_model
from tests.fuzz.files import CASE_SECONDS, run_file_fuzz
from tests.fuzz.regressions import HEAP_CHECK_ENV, known_signatures

pytest.importorskip("ai_edge_litert.interpreter")

KNOWN = known_signatures()
ROOT = Path(__file__).resolve().parents[1]


def _run_child_pytest(selector: str) -> None:
    """The graph properties run in a child pytest: generated code that corrupts memory kills the child, not
    this session, and the crash is reported as a failure."""
    current = Path(tempfile.mkdtemp(prefix="byoc-ci-fuzz-")) / "current.npz"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONFAULTHANDLER="1", BYOC_FUZZ_CURRENT_CASE=str(current), **HEAP_CHECK_ENV)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                        f"tests/fuzz/graph_properties.py::{selector}"], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=900)
    died = ""
    if p.returncode < 0:
        died = f"the child process died (exit {p.returncode}) "
        if current.exists():
            with np.load(current, allow_pickle=False) as z:
                died += (f"while checking this graph (saved in {current}):\n{z['log']}\n")
    assert p.returncode == 0, f"{died}child pytest output:\n{(p.stdout + p.stderr)[-4000:]}"


def test_random_graphs_interpreter_and_partitions_match_litert():
    _run_child_pytest("test_random_graphs_interpreter_and_partitions_match_litert")


def test_random_graphs_all_executors_match_litert():
    _run_child_pytest("test_random_graphs_all_executors_match_litert")


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


def _long_softmax_model(n: int):
    from byoc.testing import TFLiteWriter
    w = TFLiteWriter()
    x = w.input("x", (1, n), "int8", scale=0.1, zero_point=40)
    w.output(w.softmax(x, beta=1.0))
    return w.finish(), [np.full((1, n), 40, np.int8)]


def test_litert_aborting_on_a_valid_model_does_not_stop_the_fuzzer():
    """LiteRT BUILTIN_REF's SOFTMAX abort()s when an int8 row's sum of exponentials reaches 2^28 (here 600 equal
    entries); it killed the long-lived graph worker of ``make fuzz``. The oracle now runs in a child: the abort
    is reported, the next model runs, and every byoc executor must refuse the model as TFLite does."""
    from tests.fuzz.oracle import LiteRTOracle, OracleDied

    oracle = LiteRTOracle()
    try:
        model, inputs = _long_softmax_model(600)
        with pytest.raises(OracleDied):
            oracle.run(model, inputs)
        small, small_inputs = _long_softmax_model(8)
        (out,), _ = oracle.run(small, small_inputs)  # a fresh child answers the next request
        assert out.shape == (1, 8) and oracle.deaths == 1
        rep = check_model(model, inputs, oracle=oracle)
    finally:
        oracle.close()
    assert rep.oracle_died and not rep.findings, rep.render()
    assert {"interpreter", "llvm", "npu,llvm", "artifact"} <= set(rep.ran), rep.ran
