"""The documentation's code runs, and what it says it prints is what it prints.

Every ```python block of docs/tutorial.md runs in order in one fresh process (pattern tables and op attributes
are process-wide registrations), from the project root as the tutorial says; so does the README's Python API
example. The tutorial's quoted report lines must appear verbatim in the real report.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT.parent / "shared" / "models" / "mobilenet_v2_quantized_1x3x224x224.tflite"

# The docs name ../shared/models literally, so only that directory will do (not $BYOC_SHARED_MODELS).
pytestmark = pytest.mark.skipif(not MODEL.exists(), reason=f"the docs use {MODEL}: put the shared models in "
                                                           f"{MODEL.parent}")


def _blocks(path: Path, lang: str) -> list[str]:
    """The fenced blocks whose opening fence names ``lang`` ("" = unlabelled), in order."""
    blocks, current, current_lang = [], None, None
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            if current is None:
                current, current_lang = [], line[3:].strip()
            else:
                if current_lang == lang:
                    blocks.append("\n".join(current) + "\n")
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def _run(code: str) -> str:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode == 0, f"the documented code failed:\n{p.stderr[-3000:]}"
    return p.stdout


def test_tutorial_runs_and_prints_what_it_quotes():
    doc = ROOT / "docs" / "tutorial.md"
    code = "\n".join(_blocks(doc, "python"))
    # after the tutorial's own blocks: print what the prose claims about the npu table
    code += "\nprint('NPU-CPU:', sorted(n.op for n in byoc.partition_for('npu', mod, params, " \
            "return_report=True)[1].cpu_ops()))\n"
    out = _run(code)
    quoted = _blocks(doc, "")  # the report excerpt is the one unlabelled block
    assert quoted, "the tutorial lost its report excerpt"
    for line in quoted[0].splitlines():
        if line.strip() and line.strip() != "..." and "(...)" not in line:
            assert line in out, f"the tutorial quotes {line!r}, which the report does not print"
    # "only the input transpose and the classifier stay on the CPU"
    npu_cpu = out.split("NPU-CPU:", 1)[1].splitlines()[0]
    assert "transpose" in npu_cpu and "qnn.dense" in npu_cpu and "qnn.conv2d" not in npu_cpu, npu_cpu


def test_readme_python_example_runs():
    (code,) = _blocks(ROOT / "README.md", "python")
    out = _run(code)
    assert 'Composite="myaccel.qnn_conv2d"' in out and 'Compiler="myaccel"' in out
