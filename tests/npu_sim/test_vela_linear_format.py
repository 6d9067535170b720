"""A map read through channel slices (YOLOv8n's C2f split: STRIDED_SLICEs of a SiLU MUL's output) is kept NHWC by
Vela 5.2: regor bricks a tensor only when its readers and writers see the same width×channels (scheduler
UpdateSchedulerTensor), and an NHWC write goes out 16 elements a burst, half an SRAM burst. Before, byoc wrote the
MUL bricked: 0.78-0.82x Vela on YOLOv8n's eight such MULs.

The Vela cycles are Vela 5.2.0's per-layer CSV for the same models (``vela --accelerator-config ethos-u55-256``,
default system config), recorded here; outputs are held to LiteRT BUILTIN_REF."""
from __future__ import annotations

import numpy as np
import pytest

from byoc.testing.tflite_writer import TFLiteWriter
from tests.runtime.runtime_helpers import litert_reference

PRESET = "ethos-u55-256"


def _model(sliced: bool) -> bytes:
    rng = np.random.default_rng(9)
    w = TFLiteWriter()
    x = w.input("x", (1, 40, 40, 16), "int8", scale=0.05, zero_point=-3)

    def conv(v, cin, cout, name):
        return w.conv2d(v, rng.integers(-127, 128, size=(cout, 1, 1, cin)).astype(np.int8),
                        rng.integers(-1000, 1000, size=cout).astype(np.int32), weight_scale=0.01, out_scale=0.5,
                        out_zp=0, name=name)
    m = w.mul(conv(x, 16, 32, "a"), conv(x, 16, 32, "b"), out_scale=0.1, out_zp=1, name="prod")
    if sliced:
        lo = w.strided_slice(m, [0, 0, 0, 0], [1, 40, 40, 16], name="lo")
        hi = w.strided_slice(m, [0, 0, 0, 16], [1, 40, 40, 32], name="hi")
        w.output(conv(lo, 16, 16, "c_lo"), conv(hi, 16, 16, "c_hi"))
    else:
        w.output(conv(m, 32, 16, "c"))
    return w.finish()


@pytest.mark.parametrize("sliced,vela", [(True, 25600), (False, 19200)])
def test_a_map_read_through_channel_slices_is_written_nhwc(sliced, vela):
    import byoc
    from byoc.cli.summary import profile_partitions
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    data = _model(sliced)
    mod, params = from_tflite(data, semantics="tflm")
    pmod = partition_for("ethos-u", mod, params)
    stats = {s.name: s.exclusive_cycles for p in profile_partitions(pmod, "ethos-u", PRESET)
             for s in p.stats.per_layer}
    # before: 21,000 cycles both ways (the sliced one 0.82x Vela)
    assert 0.9 <= stats["prod"] / vela <= 1.12, (stats, vela)
    x = np.random.default_rng(2).integers(-128, 128, size=(1, 40, 40, 16)).astype(np.int8)
    refs = litert_reference(data, [x])
    assert refs is not None
    exe = byoc.build(pmod, target="ethos-u,llvm", npu_config=PRESET)
    got = exe.run({mod["main"].params[0].name_hint: x})
    got = got if isinstance(got, (list, tuple)) else [got]
    names = ["c_lo", "c_hi"] if sliced else ["c"]
    assert len(got) == len(refs) == len(names)
    for name, g, ref in zip(names, got, refs):   # the model's output order in both
        np.testing.assert_array_equal(np.asarray(g), ref, err_msg=name)
