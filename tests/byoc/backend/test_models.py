"""Every shared model (tests/shared_models.py), built CPU-only, is bit-exact with byoc.evaluate."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc.frontend import from_tflite

from tests.shared_models import SHARED_MODELS, shared_model_files, where_to_put

FILES = [p.name for p in shared_model_files()]


@pytest.mark.skipif(not FILES, reason=where_to_put())
@pytest.mark.parametrize("name", FILES)
def test_model_cpu_matches_reference(name):
    mod, params = from_tflite(str(SHARED_MODELS / name))
    exe = byoc.build(mod, target="llvm", params=params)
    rs = np.random.RandomState(7)
    inputs = {}
    for p in mod["main"].params:
        t = p.type_annotation
        info = np.iinfo(t.dtype) if t.dtype.startswith(("int", "uint")) else None
        inputs[p.name_hint] = (rs.randint(info.min, info.max + 1, t.shape).astype(t.dtype) if info is not None
                               else rs.uniform(-1, 1, t.shape).astype(t.dtype))
    ref = byoc.evaluate(mod, inputs, params)
    out = exe.run(inputs)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        assert o.dtype == r.dtype and o.shape == r.shape
        assert np.array_equal(o, r), f"{name}: {int((o != r).sum())} of {o.size} outputs differ"
