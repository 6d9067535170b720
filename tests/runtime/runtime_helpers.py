"""Shared models and oracles for the runtime tests."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.shared_models import COMMITTED_NAMES, REPO, SHARED_NAMES, committed_model, shared_model  # noqa: F401

MODELS = SHARED_NAMES


def model_bytes(name: str) -> bytes:
    """A committed MLPerf Tiny model, or a shared one (the test skips when that is absent)."""
    return (committed_model(name) if name in COMMITTED_NAMES else shared_model(name)).read_bytes()


@functools.lru_cache(maxsize=None)
def imported(name: str, semantics: str):
    """(mod, params, partitioned) of a shared model; partitioned with the default policy of partition_for."""
    import byoc
    from byoc.frontend import from_tflite
    mod, params = from_tflite(model_bytes(name), semantics=semantics)
    return mod, params, byoc.partition_for("npu", mod, params)


def random_inputs(func, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for p in func.params:
        t = p.type_annotation
        info = np.iinfo(str(t.dtype))
        out[p.name_hint] = rng.integers(info.min, info.max + 1, size=[int(d) for d in t.shape]).astype(str(t.dtype))
    return out


def litert_reference(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray] | None:
    """TFLite's reference kernels (BUILTIN_REF), or None when LiteRT refuses the file."""
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    try:
        it = litert.Interpreter(model_content=model, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
    except (ValueError, RuntimeError):
        return None
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def npu_partitions(mod) -> list[str]:
    return [gv.name_hint for gv, f in mod.sorted_items() if f.attrs.get("Compiler") == "npu"]
