"""Lone elementwise-like layers on Ethos-U as Vela 5.2 (its regor core) runs them: a QUANTIZE, a lone activation
(RELU, a LOGISTIC table) is a 1x1 average pool on the MAC engine, and a map shallower than 8 channels is first
reshaped deeper (regor ``ReshapeToIncreaseDepth``), so a 3-channel 224x224 QUANTIZE is not charged 16-deep bricks.
The Vela cycles are Vela 5.2.0's per-layer CSV for the same single-op models (``vela --accelerator-config
ethos-u55-256``, default system and Performance mode), recorded here; outputs are held to LiteRT BUILTIN_REF."""
from __future__ import annotations

import numpy as np
import pytest

from npu_builders import litert_outputs
from npu_sim.cost import deepened_shape

PRESET = "ethos-u55-256"


def test_shallow_maps_are_reshaped_deeper_as_vela_reshapes_them():
    # Vela's high-level command stream for these QUANTIZEs: [1, 168, 56, 16] and [1, 5, 1, 20]
    assert deepened_shape(224, 224, 3) == (168, 56, 16)
    assert deepened_shape(10, 10, 1) == (5, 1, 20)
    # 8 channels or more, or 16 elements or fewer: unchanged
    assert deepened_shape(28, 28, 64) == (28, 28, 64)
    assert deepened_shape(4, 4, 1) == (4, 4, 1)
    # a prime element count cannot be made deeper than itself: all of it becomes the depth
    assert deepened_shape(1, 17, 1) == (1, 1, 17)


def _single_op(name: str, shape, dtype: str) -> bytes:
    from byoc.testing.tflite_writer import TFLiteWriter
    w = TFLiteWriter()
    x = w.input("x", shape, dtype, scale=0.05, zero_point=125 if dtype == "uint8" else -3)
    if name == "quantize":
        y = w.quantize(x, out_scale=0.05, out_zp=-3)
    elif name == "relu":
        y = w.relu(x)
    else:
        y = w.logistic(x)
    w.output(y)
    return w.finish()


# (op, shape, input type, Vela 5.2 cycles)
CASES = [("quantize", (1, 224, 224, 3), "uint8", 76064), ("quantize", (1, 10, 10, 1), "int8", 271),
         ("quantize", (1, 28, 28, 64), "int8", 29824), ("relu", (1, 224, 224, 3), "int8", 76064),
         ("logistic", (1, 224, 224, 3), "int8", 76384)]


@pytest.mark.parametrize("op,shape,dtype,vela", CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple)
                         else str(v))
def test_lone_elementwise_layer_is_timed_as_velas_average_pool_and_stays_exact(op, shape, dtype, vela):
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    from byoc.cli.summary import profile_partitions
    import byoc
    data = _single_op(op, shape, dtype)
    mod, params = from_tflite(data, semantics="tflm")
    pmod = partition_for("ethos-u", mod, params)
    profs = list(profile_partitions(pmod, "ethos-u", PRESET))
    cycles = sum(s.exclusive_cycles for p in profs for s in p.stats.per_layer)
    # before: 224x224x3 QUANTIZE 202,416 cycles (2.66x Vela: 16-deep bricks over 3 channels at 0.25 / element)
    assert 0.85 <= cycles / vela <= 1.15, (cycles, vela)
    x = np.random.default_rng(3).integers(0 if dtype == "uint8" else -128, 256 if dtype == "uint8" else 128,
                                           size=shape).astype(dtype)
    exe = byoc.build(pmod, target="ethos-u,llvm", npu_config=PRESET)
    assert exe.npu_programs
    got = exe.run({mod["main"].params[0].name_hint: x})
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_array_equal(np.asarray(got), litert_outputs(data, x)[0])
