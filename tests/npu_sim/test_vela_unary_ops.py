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


def test_a_one_row_convolution_works_in_one_by_four_micro_blocks():
    """Vela's GetOfmMicroBlock: a convolution whose whole OFM is one row of even width under a one-row kernel
    runs in 1x4 micro-blocks on arrays whose micro-block is two high (audio models shaped 1 x T x C)."""
    import npu_sim
    from npu_sim.cost import mac_cycles, mac_op
    from npu_sim.isa import MacOp
    assert mac_op("conv", (1, 32, 8), (1, 1)) == MacOp.CONV_ROW
    assert mac_op("conv", (1, 32, 8), (1, 7)) == MacOp.CONV_ROW
    assert mac_op("conv", (2, 32, 8), (1, 1)) == MacOp.CONV          # two rows
    assert mac_op("conv", (1, 31, 8), (1, 1)) == MacOp.CONV          # odd width
    assert mac_op("conv", (1, 32, 8), (3, 1)) == MacOp.CONV          # a kernel three rows high
    assert mac_op("depthwise", (1, 32, 8), (1, 1)) == MacOp.DEPTHWISE
    cfg = npu_sim.preset(PRESET)
    # 1x32x8 tile over 256 input channels (8 passes of 32), 1x1 kernel. 2x2 micro-blocks: 16 of them, 4 cycles
    # each = 64 per pass; 1x4: 8 micro-blocks, 32 per pass (the weight-buffer minimum). Plus issue 4 + fill 2.
    assert mac_cycles(cfg, MacOp.CONV, 1, 32, 8, 256, 1, 1) == 4 + 2 + 8 * 64
    assert mac_cycles(cfg, MacOp.CONV_ROW, 1, 32, 8, 256, 1, 1) == 4 + 2 + 8 * 32


def test_one_row_audio_convolution_against_vela(tmp_path):
    """A 1x7 convolution over a 1x296x39 map (wav2letter's first layer shape): Vela 5.2 times it in 1x4
    micro-blocks; before, byoc charged 2x2 ones and came out at 2.2x Vela."""
    from byoc.testing.tflite_writer import TFLiteWriter
    from benchmarks.bench_npu import vela_per_layer
    rng = np.random.default_rng(11)
    w = TFLiteWriter()
    x = w.input("x", (1, 1, 296, 39), "int8", scale=0.05, zero_point=-3)
    wts = rng.integers(-127, 128, size=(250, 1, 7, 39)).astype(np.int8)
    w.output(w.conv2d(x, wts, rng.integers(-1000, 1000, size=250).astype(np.int32), weight_scale=0.01,
                      padding="SAME", out_scale=0.5, out_zp=0))
    path = tmp_path / "row_conv.tflite"
    path.write_bytes(w.finish())
    vela = vela_per_layer(path, tmp_path / "vela")
    if vela is None:
        pytest.skip("vela is not installed")
    from byoc.cli.summary import profile_partitions
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    mod, params = from_tflite(str(path), semantics="tflm")
    ours = sum(s.exclusive_cycles for p in profile_partitions(partition_for("ethos-u", mod, params), "ethos-u",
                                                              PRESET) for s in p.stats.per_layer)
    assert 0.8 <= ours / vela[1] <= 1.2, (ours, vela[1])


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_shallow_binary_layer_on_a_deeper_view_stays_exact(op, dtype):
    """ADD / MUL of same-shape 3-channel maps (a constant operand included) are lowered on Vela's deeper view of
    the bytes; every element keeps its own computation, so the result is LiteRT BUILTIN_REF's bit for bit."""
    import byoc
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    from byoc.testing.tflite_writer import TFLiteWriter
    rng = np.random.default_rng(5)
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    shape = (1, 24, 20, 3)
    w = TFLiteWriter()
    x = w.input("x", shape, dtype, scale=0.05, zero_point=125 if dtype == "uint8" else -3)
    c = rng.integers(lo, hi, size=shape)
    y = (w.add if op == "add" else w.mul)(x, c, out_scale=0.11 if op == "add" else 0.2, out_zp=7)
    w.output(y)
    data = w.finish()
    mod, params = from_tflite(data, semantics="tflm")
    pmod = partition_for("ethos-u", mod, params)
    exe = byoc.build(pmod, target="ethos-u,llvm", npu_config=PRESET)
    assert exe.npu_programs
    from npu_sim.isa import Ppu
    ppus = [c for prog in exe.npu_programs.values() for c in prog.commands if isinstance(c, Ppu)]
    assert ppus and all(c.oc == 16 for c in ppus)   # 24x20x3 = 1440 elements viewed 16 deep
    xin = rng.integers(lo, hi, size=shape).astype(dtype)
    got = exe.run({mod["main"].params[0].name_hint: xin})
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_array_equal(np.asarray(got), litert_outputs(data, xin)[0])
