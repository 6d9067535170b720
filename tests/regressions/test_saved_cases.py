"""Replays every saved fuzz finding in tests/regressions/data.

* graph cases: the saved ``.tflite`` and inputs through every executor, compared with LiteRT BUILTIN_REF;
* file cases: the saved bytes loaded (and run) in a child process under the fuzzer's memory and time limits;
  only ``ByocError`` subclasses may come out.

A case marked ``fixed`` must pass. A case marked ``open`` is a known bug: while it still reproduces the test is
an expected failure; once it stops reproducing the test fails and asks for the status to be flipped
(``python -m tests.fuzz.regressions set-status <file> fixed``), so fixes are noticed.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.regressions import HEAP_CHECK_ENV, saved_cases

ROOT = Path(__file__).resolve().parents[2]
CASES = saved_cases()


def _child(args: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1", **HEAP_CHECK_ENV)
    return subprocess.run([sys.executable, "-m", "tests.fuzz.regressions"] + args, capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


def _graph_outcome(case) -> tuple[bool, str, set[str], list[str]]:
    """(reproduces the saved signature, report, signatures seen, executors run); run in a child process
    because some saved cases crash the process (heap corruption in generated code)."""
    p = _child(["replay-graph", str(case.path)])
    if p.returncode != 0:
        sig = f"died|exit {p.returncode}"
        return case.signature.startswith("died|"), f"{sig}\n{p.stderr[-2000:]}", {sig}, []
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["rejected"] is None, f"LiteRT no longer runs the saved model: {res['rejected']}"
    sigs = set(res["signatures"])
    return case.signature in sigs, res["report"], sigs, res["ran"]


def _file_outcome(case) -> tuple[bool, str]:
    p = _child(["replay-file", str(case.path)])
    return p.returncode != 0, (p.stdout + p.stderr)[-3000:]


@pytest.mark.skipif(sys.platform == "win32", reason="file cases use resource limits and SIGALRM")
@pytest.mark.parametrize("case", CASES, ids=[c.path.name for c in CASES])
def test_saved_case(case):
    if case.kind == "graph":
        reproduces, report, sigs, ran = _graph_outcome(case)
        executor = case.signature.split("|")[1]
        if case.signature.startswith("died|"):
            executor = "any"
        if case.status == "open":
            if reproduces:
                pytest.xfail(f"known open bug: {case.note[:300]}")
            if executor != "any" and executor not in ran and not any(s.split("|")[1] == executor for s in sigs):
                pytest.skip(f"the executor {executor!r} of this open case is not available here")
            pytest.fail(f"{case.path.name} no longer reproduces {case.signature!r}: if the bug is fixed, run "
                        f"python -m tests.fuzz.regressions set-status {case.path} fixed\n{report}")
        assert not sigs, f"{case.path.name} ({case.note[:200]}) fails again:\n{report}"
    else:
        fails, output = _file_outcome(case)
        if case.status == "open":
            if fails:
                pytest.xfail(f"known open bug: {case.note[:300]}")
            pytest.fail(f"{case.path.name} no longer fails: if fixed, run "
                        f"python -m tests.fuzz.regressions set-status {case.path} fixed\n{output}")
        assert not fails, f"{case.path.name} ({case.note[:200]}) fails again:\n{output}"


def test_saved_cases_load_without_pickle():
    # every data file is a plain numpy archive with the fields the replay needs
    for case in CASES:
        assert case.kind in ("graph", "file") and case.status in ("open", "fixed") and case.signature
        if case.kind == "graph":
            assert case.model[4:8] == b"TFL3" and case.inputs
        else:
            assert case.target in ("tflite", "onnx", "container", "program", "artifact") and case.data
