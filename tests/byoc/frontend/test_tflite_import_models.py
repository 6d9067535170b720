"""Real int8 models (the four shared ones when present, the committed MLPerf Tiny ones always): from_tflite +
byoc.evaluate against LiteRT BUILTIN_REF and TFLite Micro.

Every output and every intermediate tensor LiteRT exposes is compared bit for bit, matched through tensor names
(the spans on the IR nodes, seen through ``byoc.evaluate``'s tap).
"""
from __future__ import annotations

import numpy as np
import pytest

from byoc.frontend import from_tflite
from byoc.frontend.tflite_reader import read_model

from tests.shared_models import COMMITTED_NAMES, committed_model, shared_params
from tflite_oracles import (compare_tensors, ir_run, litert_run, model_path, patch_bias_quantized_dimension,
                            random_inputs, tflm_run)

pytest.importorskip("ai_edge_litert")
SAMPLES = 5


def _op_output_names(data: bytes) -> set[str]:
    m = read_model(data)
    return {m.tensors[j].name or f"t{j}" for op in m.operators for j in op.outputs}


def _check_against_litert(data: bytes, mod, seed: int) -> None:
    rng = np.random.default_rng(seed)
    expected_names = _op_output_names(data)
    for _ in range(SAMPLES):
        inputs = random_inputs(mod, rng)
        ref_outs, ref_tensors = litert_run(data, inputs)
        outs, taps = ir_run(mod, inputs)
        assert len(outs) == len(ref_outs)
        for o, r in zip(outs, ref_outs):
            assert o.dtype == r.dtype and o.shape == r.shape
            assert (o == r).all(), f"{int((o != r).sum())} output mismatches"
        compared, bad = compare_tensors(ref_tensors, taps)
        assert not bad, f"intermediate mismatches: {bad}"
        # Every operator's output tensor was seen and compared (the comparison is not vacuous).
        assert compared == len(expected_names), (compared, len(expected_names))


@pytest.mark.parametrize("name", shared_params(["hello_world_int8.tflite", "micro_speech_quantized.tflite",
                                                 "mobilenet_v2_quantized_1x3x224x224.tflite"]) + list(COMMITTED_NAMES))
def test_model_matches_litert_bit_exact(name):
    data = (committed_model(name) if name in COMMITTED_NAMES else model_path(name)).read_bytes()
    mod, params = from_tflite(data)
    assert params == {}
    _check_against_litert(data, mod, seed=len(name))


def test_person_detect_matches_tflite_micro():
    data = model_path("person_detect.tflite").read_bytes()
    rng = np.random.default_rng(7)
    for semantics in ("litert", "tflm"):
        mod, _ = from_tflite(data, semantics=semantics)
        for _ in range(SAMPLES):
            inputs = random_inputs(mod, rng)
            (out,), _ = ir_run(mod, inputs)
            (ref,) = tflm_run(data, inputs)
            assert (out == ref).all(), (semantics, out, ref)


def test_person_detect_patched_copy_matches_litert_intermediates():
    data = model_path("person_detect.tflite").read_bytes()
    from ai_edge_litert.interpreter import Interpreter
    with pytest.raises(Exception, match="quantiz"):  # LiteRT refuses the original file
        Interpreter(model_content=data).allocate_tensors()
    patched, count = patch_bias_quantized_dimension(data)
    assert count == 14
    mod, _ = from_tflite(data)  # the original imports; bias quantization is never used
    _check_against_litert(patched, mod, seed=11)


def test_hello_world_tflm_semantics_matches_tflite_micro_on_every_input():
    data = model_path("hello_world_int8.tflite").read_bytes()
    mod_tflm, _ = from_tflite(data, semantics="tflm")
    mod_litert, _ = from_tflite(data, semantics="litert")
    xs = [np.array([[v]], np.int8) for v in range(-128, 128)]
    diff_modes = 0
    for x in xs:
        (ref,) = tflm_run(data, [x])
        (out,), _ = ir_run(mod_tflm, [x])
        assert (out == ref).all(), (x, out, ref)
        (lit,), _ = ir_run(mod_litert, [x])
        (lit_ref,), _ = litert_run(data, [x])
        assert (lit == lit_ref).all(), (x, lit, lit_ref)
        diff_modes += int((lit != out).sum())
    # FC requantization differs between the two runtimes (quant-semantics §3.3); both are reproduced.
    assert diff_modes > 0
