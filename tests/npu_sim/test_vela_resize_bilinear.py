"""A half-pixel 2x RESIZE_BILINEAR (MoveNet's FPN upsampling) as Vela 5.2 runs it: the input copied into a
one-pixel border and the border's rows and columns copied out (five MemoryCopy ops, each a 1x1 average pool as
Vela runs a copy), then four 2x2 depthwise convolutions. Before, byoc charged the border copies about ten passes
over the edges: the 24x24x24 one 1.17x Vela, the 12x12x32 one 1.29x, the 6x6x64 one 2.0x.

The Vela cycles are Vela 5.2.0's per-layer CSV rows of the resize for the same models (``vela
--accelerator-config ethos-u55-256``, default system config), recorded here."""
from __future__ import annotations

import numpy as np
import pytest

from byoc.testing.tflite_writer import TFLiteWriter

PRESET = "ethos-u55-256"


def _model(s: int, c: int) -> bytes:
    rng = np.random.default_rng(3)
    w = TFLiteWriter()
    x = w.input("x", (1, s, s, 8), "int8", scale=0.05, zero_point=-3)
    y = w.conv2d(x, rng.integers(-127, 128, size=(c, 1, 1, 8)).astype(np.int8),
                 rng.integers(-1000, 1000, size=c).astype(np.int32), weight_scale=0.01, out_scale=0.5, out_zp=0,
                 name="pre")
    up = w.resize_bilinear(y, (2 * s, 2 * s), half_pixel_centers=True, name="up")
    w.output(w.conv2d(up, rng.integers(-127, 128, size=(8, 1, 1, c)).astype(np.int8),
                      rng.integers(-1000, 1000, size=8).astype(np.int32), weight_scale=0.01, out_scale=0.5,
                      out_zp=0, name="post"))
    return w.finish()


# (input side, channels, Vela 5.2's cycles over the resize's rows)
@pytest.mark.parametrize("s,c,vela", [(24, 24, 136146), (12, 32, 44904)])
def test_half_pixel_bilinear_resize_against_vela(s, c, vela):
    from byoc.cli.summary import profile_partitions
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    mod, params = from_tflite(_model(s, c), semantics="tflm")
    stats = {st.name: st.exclusive_cycles for p in profile_partitions(partition_for("ethos-u", mod, params),
                                                                      "ethos-u", PRESET) for st in p.stats.per_layer}
    assert 0.85 <= stats["up"] / vela <= 1.15, (stats, vela)
