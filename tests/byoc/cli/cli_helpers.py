from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

# A small MobileNetV2-shaped model: stem, one plain block, one block with a residual ADD, head, MEAN, FC, SOFTMAX.
SMALL_BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2))


def run_cli(*args, env: dict | None = None, timeout: float = 300, stderr=subprocess.PIPE):
    """``python -m byoc.cli ARGS`` from the repository root; returns the CompletedProcess."""
    full_env = dict(os.environ)
    full_env.pop("BYOC_TESTING_FAULT", None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "byoc.cli", *map(str, args)], cwd=REPO, env=full_env,
                          stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=timeout)


def run_json(*args, expect: int = 0, env: dict | None = None) -> dict:
    p = run_cli(*args, "--json", env=env)
    assert p.returncode == expect, f"exit {p.returncode}, expected {expect}\nstdout:\n{p.stdout[-3000:]}\n" \
                                   f"stderr:\n{p.stderr[-3000:]}"
    return json.loads(p.stdout)


def litert_reference(model: bytes, x):
    """TFLite's reference kernels, the independent oracle."""
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    it = litert.Interpreter(model_content=model,
                            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])
