"""Elementwise operands and 1x1 resizes on Ethos-U as Vela 5.2 (its regor core) accounts them:

* a second operand of more than one element is read once per output element even when it is broadcast, in the
  bursts its format and the op's block give: a [1,1,1,3] constant read from flash in 8-byte bursts costs 16 flash
  cycles per output element (MoveNet's input normalisation), while an 8-bit scalar is a register value;
* an op with a scalar operand is reshaped deeper like a same-shape one (regor ``ReshapeToIncreaseDepth``);
* an NHWC output (read by the host) counts its exact channels at the output stage, not 16-deep bricks;
* a RESIZE of a 1x1 input is an ADD of the broadcast input and an OFM-sized zero-point constant from flash
  (regor ``RewriteResize``; DeepLabV3's image-pooling branch).

The Vela cycles are Vela 5.2.0's per-layer CSV for the same single-op models (``vela --accelerator-config
ethos-u55-256``, default system and Performance mode), recorded here; outputs are held to LiteRT BUILTIN_REF."""
from __future__ import annotations

import numpy as np
import pytest

PRESET = "ethos-u55-256"


def _litert(model: bytes, xs: list[np.ndarray]) -> np.ndarray:
    """The output under LiteRT BUILTIN_REF, inputs in the model's order (skipped without LiteRT)."""
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    it = litert.Interpreter(model_content=model, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def _model(kind: str) -> tuple[bytes, list[tuple[str, tuple[int, ...]]]]:
    from byoc.testing.tflite_writer import TFLiteWriter
    w = TFLiteWriter()
    if kind.startswith("resize1x1"):
        c, size = (256, 33) if kind.endswith("deep") else (64, 17)
        x = w.input("x", (1, 1, 1, c), "int8", scale=0.05, zero_point=-3)
        y = w.resize_bilinear(x, (size, size))
        ins = [("x", (1, 1, 1, c))]
    elif kind == "sub_vec3":
        x = w.input("x", (1, 64, 64, 3), "int8", scale=0.05, zero_point=-3)
        y = w.sub(x, np.array([[[[10, -20, 30]]]], np.int8))
        ins = [("x", (1, 64, 64, 3))]
    elif kind == "add_vec32":
        x = w.input("x", (1, 24, 24, 32), "int8", scale=0.05, zero_point=-3)
        y = w.add(x, np.arange(32, dtype=np.int8).reshape(1, 1, 1, 32))
        ins = [("x", (1, 24, 24, 32))]
    elif kind == "mul_scalar3":
        x = w.input("x", (1, 64, 64, 3), "int8", scale=0.05, zero_point=-3)
        y = w.mul(x, np.array([[[[7]]]], np.int8), out_scale=0.1, out_zp=1)
        ins = [("x", (1, 64, 64, 3))]
    else:   # add_nhwc17: two 17-deep model inputs, the sum a model output
        x = w.input("x", (1, 48, 48, 17), "int8", scale=0.05, zero_point=-3)
        z = w.input("z", (1, 48, 48, 17), "int8", scale=0.04, zero_point=2)
        y = w.add(x, z, out_scale=0.1, out_zp=1)
        ins = [("x", (1, 48, 48, 17)), ("z", (1, 48, 48, 17))]
    w.output(y)
    return w.finish(), ins


# (model, Vela 5.2 cycles, byoc before these rules, tolerance)
CASES = [
    ("resize1x1", 73984, 5286, 0.05),            # Add: flash 73,984 (17x17x64 zeros in 16-byte bursts)
    ("resize1x1_deep", 2230272, 70978, 0.05),    # DeepLabV3's shape: 33x33x256
    ("sub_vec3", 196608, 50295, 0.05),           # Sub: flash 196,608 = 12,288 elements x 16
    ("add_vec32", 18432, 14520, 0.05),           # Add: flash 18,432 (32-byte bursts: x4 on 128-byte flash)
    ("mul_scalar3", 4608, 27852, 0.2),           # Mul: NPU 4,608 = 12,288 x 0.375 (viewed 16 deep)
    ("add_nhwc17", 29376, 56082, 0.05),          # Add: NPU 29,376 = 48x48x17 x 0.75 (not 32 deep)
]


@pytest.mark.parametrize("kind,vela,before,tol", CASES, ids=[c[0] for c in CASES])
def test_elementwise_operands_timed_as_vela_and_exact(kind, vela, before, tol):
    import byoc
    from byoc.cli.summary import profile_partitions
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    data, ins = _model(kind)
    mod, params = from_tflite(data, semantics="tflm")
    pmod = partition_for("ethos-u", mod, params)
    cycles = sum(s.exclusive_cycles for p in profile_partitions(pmod, "ethos-u", PRESET) for s in p.stats.per_layer)
    assert abs(cycles / vela - 1) <= tol, (cycles, vela, before)
    rng = np.random.default_rng(7)
    xs = [rng.integers(-128, 128, size=shape).astype(np.int8) for _, shape in ins]
    exe = byoc.build(pmod, target="ethos-u,llvm", npu_config=PRESET)
    assert exe.npu_programs
    names = [p.name_hint for p in mod["main"].params]
    got = exe.run(dict(zip(names, xs)))
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_array_equal(np.asarray(got), _litert(data, xs))


def test_elementwise_block_is_velas_largest_fitting_block():
    """Vela's elementwise OFM block (FindBlockConfig): two 8-bit IFM blocks double-buffered in the U55-256's
    44 free 1 KiB banks, granule 8, hold at most 8 KiB each; the first largest block found wins (depth from 16).
    DeepLabV3's 33x33x256 ADD: 16x32x16 (Vela's NPU cycles 610,385 = (64 + 8 x 8192) / 8192 flash cycles per
    element + 0.75, over 4, times 278,784 elements); a 3-deep map: 8 deep."""
    import npu_sim
    from npu_sim.cost import elementwise_block, operand_read_burst
    cfg = npu_sim.preset(PRESET)
    assert elementwise_block(cfg, 33, 33, 256) == (16, 32, 16)
    h, w, d = elementwise_block(cfg, 192, 192, 3)
    assert d == 8 and h * w * d <= 8192
    # NHWC operand: one block depth per burst unless the operand is exactly one block deep
    assert operand_read_burst((16, 32, 16), 33, 256, 1, True) == 16
    assert operand_read_burst((16, 64, 8), 1, 3, 1, True) == 8
    assert operand_read_burst((16, 32, 16), 1, 16, 1, True) == 32 * 16


def test_broadcast_reread_is_charged_per_output_element():
    """A [1,1,1,3] flash constant under a 64x64x3 SUB (NHWC input): 12,288 elements in 8-byte bursts of the
    128-byte flash = 196,608 flash cycles, Vela's OffFlash AC; a scalar or a same-shape operand adds nothing."""
    import npu_sim
    from npu_sim.cost import binary_reread_cycles, binary_timing
    cfg = npu_sim.preset(PRESET)
    flash = [a.name for a in cfg.memory_areas].index("flash")
    t = binary_timing(cfg, (64, 64, 3), (1, 1, 3), flash, True, True, True)
    assert t == (flash + 1, 8, 3)
    assert binary_reread_cycles(cfg, t, 64, 64, 3) == 196608
    assert binary_timing(cfg, (64, 64, 3), (1, 1, 1), flash, True, True, False)[:2] == (0, 0)
    assert binary_timing(cfg, (64, 64, 3), (64, 64, 3), flash, True, True, False)[:2] == (0, 0)


# (depthwise, OFM hwc, IFM hwc, kernel, stride, Vela 5.2's OFM block and IFM block from its debug database
# (--enable-debug-db, perf_debug_main) for DeepLabV3 MNv2 and MobileNetV2 on ethos-u55-256)
BLOCKS = [
    (False, (65, 65, 16), (65, 65, 72), (1, 1), (1, 1), (10, 12, 16), (10, 12, 32)),
    (False, (65, 65, 96), (65, 65, 16), (1, 1), (1, 1), (6, 14, 48), (6, 14, 16)),
    (True, (65, 65, 96), (65, 65, 96), (3, 3), (1, 1), (14, 14, 16), (16, 16, 16)),
    (False, (33, 33, 288), (33, 33, 48), (1, 1), (1, 1), (2, 34, 48), (2, 34, 32)),
    (False, (33, 33, 21), (33, 33, 256), (1, 1), (1, 1), (6, 18, 24), (6, 18, 32)),
    (False, (33, 33, 80), (33, 33, 480), (1, 1), (1, 1), (4, 12, 80), (4, 12, 32)),
    (False, (56, 56, 24), (56, 56, 96), (1, 1), (1, 1), (2, 56, 24), (2, 56, 32)),
    (False, (14, 14, 576), (14, 14, 96), (1, 1), (1, 1), (4, 14, 64), (4, 14, 32)),
    (True, (28, 28, 144), (56, 56, 144), (3, 3), (2, 2), (10, 12, 16), (22, 26, 16)),
    (True, (7, 7, 960), (7, 7, 960), (3, 3), (1, 1), (8, 8, 16), (10, 10, 16)),
]


@pytest.mark.parametrize("dw,out,inp,kernel,stride,ofm_block,ifm_block", BLOCKS)
def test_mac_block_is_velas_block_config(dw, out, inp, kernel, stride, ofm_block, ifm_block):
    import npu_sim
    from npu_sim.vela_access import mac_block
    assert mac_block(npu_sim.preset(PRESET), dw, out, inp, kernel, stride) == (ofm_block, ifm_block)


def test_access_floor_is_velas_sram_count():
    """DeepLabV3's expanded_conv_3/project (65x65x72 -> 16, 1x1): Vela reads 42 10x12 IFM blocks of 80
    (brick-rounded) channels = 403,200 bytes, writes 67,600, and re-reads its 1,248 staged weight bytes
    once per block position (42x): SRAM AC (403,200 + 67,600 + 52,416) / 8 = 65,402 cycles."""
    import npu_sim
    from npu_sim.vela_access import access_floor
    cfg = npu_sim.preset(PRESET)
    names = [a.name for a in cfg.memory_areas]
    got = access_floor(cfg, False, (65, 65, 16), (65, 65, 72), (1, 1), (1, 1), (1, 1), 1248, 160,
                       names.index("sram"), names.index("flash"))
    assert got == 65402
    # a preset without an Ethos-U SHRAM (VTA): no floor
    assert access_floor(npu_sim.preset("vta-default"), False, (65, 65, 16), (65, 65, 72), (1, 1), (1, 1), (1, 1),
                        1248, 160, 0, 0) == 0


def test_odd_sized_project_convolution_against_vela(tmp_path):
    """Three 1x1 convolutions at DeepLabV3's 65x65 (16 -> 72 -> 16 -> 24): the middle one reads its IFM in Vela's
    10x12 blocks (partial ones at the edges read whole) and its staged weights once per block, the last writes
    the host's NHWC output in 16-byte bursts; before, byoc counted the maps' own bytes: 0.77x and 0.70x Vela."""
    from byoc.testing.tflite_writer import TFLiteWriter
    from benchmarks.bench_npu import vela_per_layer
    rng = np.random.default_rng(13)
    w = TFLiteWriter()
    x = w.input("x", (1, 65, 65, 16), "int8", scale=0.05, zero_point=-3)
    y = x
    for i, (ci, co) in enumerate(((16, 72), (72, 16), (16, 24))):
        y = w.conv2d(y, rng.integers(-127, 128, size=(co, 1, 1, ci)).astype(np.int8),
                     rng.integers(-1000, 1000, size=co).astype(np.int32), weight_scale=0.01, out_scale=0.5,
                     out_zp=0, name=f"conv{i}")
    w.output(y)
    path = tmp_path / "odd_project.tflite"
    path.write_bytes(w.finish())
    vela = vela_per_layer(path, tmp_path / "vela")
    if vela is None:
        pytest.skip("vela is not installed")
    from byoc.cli.summary import profile_partitions
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    mod, params = from_tflite(str(path), semantics="tflm")
    ours = {s.name: s.exclusive_cycles for p in profile_partitions(partition_for("ethos-u", mod, params), "ethos-u",
                                                                   PRESET) for s in p.stats.per_layer}
    for layer in ("conv1", "conv2"):
        assert abs(ours[layer] / vela[0][layer]["cycles"] - 1) <= 0.1, (ours, vela[0])
