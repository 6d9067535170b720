"""A both-broadcast SUB (an HxWx1 map minus a 1xC vector, MoveNet's keypoint decoding) as Vela 5.2 runs it: regor
materialises the first operand as an ADD of an OFM-sized zero constant, read from flash in the bursts its NHWC rows
and the op's block give, and the operand broadcast as IFM2, read once per output element
(``ReplaceBroadcastWithAdd``; ``cost.constant_operand_timing``). Before, byoc charged the materialising layer its
output stage only: 113,004 cycles against Vela's 626,688 for MoveNet's 48x48x17 ones (a flash-constant grid).

The Vela cycles are Vela 5.2.0's per-layer CSV for the same models (``vela --accelerator-config ethos-u55-256``,
default system config), recorded here; outputs are held to LiteRT BUILTIN_REF."""
from __future__ import annotations

import numpy as np
import pytest

from byoc.testing.tflite_writer import TFLiteWriter

PRESET = "ethos-u55-256"


def _model(hwc: tuple[int, int, int], grid_in_flash: bool) -> bytes:
    h, w_, c = hwc
    w = TFLiteWriter()
    if grid_in_flash:
        y = w.input("y", (1, c), "int8", scale=0.05, zero_point=-3)
        x = w.const("grid", np.random.default_rng(4).integers(-128, 128, size=(h, w_, 1)).astype(np.int8), "int8",
                    scale=0.05, zero_point=-3)
    else:
        x = w.input("x", (1, h, w_, 1), "int8", scale=0.05, zero_point=-3)
        y = w.input("y", (1, c), "int8", scale=0.05, zero_point=-3)
    w.output(w.sub(x, y, out_scale=0.1, out_zp=0, name="out"))
    return w.finish()


# (OFM h×w×c, the map operand is a flash constant, Vela 5.2's cycles of its "<operand>_broadcasted" ADD)
CASES = [((48, 48, 16), False, 36864), ((48, 48, 17), False, 313344), ((48, 48, 32), False, 589824),
         ((48, 48, 40), False, 737280), ((20, 20, 5), False, 32000), ((48, 48, 17), True, 626688)]


@pytest.mark.parametrize("hwc,flash,vela", CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple)
                         else str(v))
def test_materialised_operand_is_timed_as_velas_broadcast_add(hwc, flash, vela):
    import byoc
    from byoc.cli.summary import profile_partitions
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    data = _model(hwc, flash)
    mod, params = from_tflite(data, semantics="tflm")
    pmod = partition_for("ethos-u", mod, params, inline_non_mac=False, boundary_rule=False)
    stats = {s.name: s.exclusive_cycles for p in profile_partitions(pmod, "ethos-u", PRESET)
             for s in p.stats.per_layer}
    assert 0.95 <= stats["out/materialise"] / vela <= 1.05, (stats, vela)
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    rng = np.random.default_rng(1)
    feeds = {p.name_hint: rng.integers(-128, 128, size=[int(d) for d in p.checked_type.shape]).astype(np.int8)
             for p in mod["main"].params}
    it = litert.Interpreter(model_content=data, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], feeds[d["name"]])
    it.invoke()
    ref = it.get_tensor(it.get_output_details()[0]["index"])
    exe = byoc.build(pmod, target="ethos-u,llvm", npu_config=PRESET)
    assert exe.npu_programs
    got = exe.run(feeds)
    np.testing.assert_array_equal(np.asarray(got[0] if isinstance(got, (list, tuple)) else got), ref)


# SOFTMAX's rounding ADD reads an OFM-sized int32 constant the same way: a row of 16 channels is a 64-byte burst,
# half a 128-byte flash burst (YOLOv8n's 8400x16 DFL softmax: 1,075,200 of its 2,282,822 cycles in Vela 5.2).
# (input shape, Vela 5.2's cycles over all the softmax's rows)
SOFTMAX_CASES = [((1, 2100, 4, 16), 2282822), ((1, 1, 1, 12), 905)]


@pytest.mark.parametrize("shape,vela", SOFTMAX_CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple)
                         else str(v))
def test_softmax_reads_its_rounding_constant_in_velas_bursts(shape, vela):
    from byoc.cli.summary import profile_partitions
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    w = TFLiteWriter()
    w.output(w.softmax(w.input("x", shape, "int8", scale=0.1, zero_point=3), name="probs"))
    mod, params = from_tflite(w.finish(), semantics="tflm")
    pmod = partition_for("ethos-u", mod, params, inline_non_mac=False, boundary_rule=False)
    cycles = sum(s.exclusive_cycles for p in profile_partitions(pmod, "ethos-u", PRESET) for s in p.stats.per_layer)
    # before: 1,769,659 for the 8400x16 one (0.78x Vela: the constant streamed in whole flash bursts)
    assert 0.95 <= cycles / vela <= 1.05, (cycles, vela)
