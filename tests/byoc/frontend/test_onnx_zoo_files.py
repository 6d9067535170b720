"""Real torch.onnx exports (tests/data/onnx_zoo, see its PROVENANCE.md): byoc's interpreter and CPU build against
onnxruntime (ORT_ENABLE_ALL, one thread) — statically quantized models bit for bit, float and dynamically
quantized ones within 1e-5·max(1, |x|)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.frontend import from_onnx

ort = pytest.importorskip("onnxruntime")
ZOO = Path(__file__).resolve().parents[2] / "data" / "onnx_zoo"


@pytest.mark.parametrize("name", sorted(p.name for p in ZOO.glob("*.onnx")))
def test_zoo_model_matches_onnxruntime(name):
    path = ZOO / name
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    mod, _ = from_onnx(str(path))
    exe = byoc.build(mod, target="llvm")
    exact = not any(f".{c}." in name for c in ("float", "dynamic"))
    rng = np.random.default_rng(11)
    for _ in range(2):
        x = rng.normal(0, 1, inp.shape).astype(np.float32)
        ref = sess.run(None, {inp.name: x})[0]
        for got in (byoc.evaluate(mod, {inp.name: x}), exe.run({inp.name: x})):
            got = np.asarray(got[0] if isinstance(got, (list, tuple)) else got)
            if exact:
                np.testing.assert_array_equal(got, ref)
            else:
                np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
