"""Channel slices read in place: a STRIDED_SLICE / SPLIT piece that takes whole rows of some channels of a computed
map (YOLOv8n's C2f split) is no COPY layer; its readers load that channel window of the map, as regor reads a
slice through its IFM's offset (Vela has no row for these slices; byoc charged ~0.3M cycles of copies on YOLOv8n).
A window that must be contiguous (a partition output, a reshape of it) is copied once. And a concatenation input
whose only reader is the concatenation is written by its producer straight into its block of the output (regor
MoveConcatSliceToProducer; ~0.5M cycles of copies on YOLOv8n). Results are LiteRT BUILTIN_REF's bit for bit."""
from __future__ import annotations

import numpy as np

from byoc.testing.tflite_writer import TFLiteWriter
from tests.runtime.runtime_helpers import litert_reference

PRESET = "ethos-u55-256"


def _conv(w, rng, v, cin, cout, name):
    return w.conv2d(v, rng.integers(-127, 128, size=(cout, 1, 1, cin)).astype(np.int8),
                    rng.integers(-1000, 1000, size=cout).astype(np.int32), weight_scale=0.01, out_scale=0.5, out_zp=0,
                    name=name)


def _c2f_like() -> bytes:
    """conv → SPLIT(2) → [a, b]; b → conv → m; CONCAT(a, b, m) → conv; plus a STRIDED_SLICE output, and a reshaped
    slice, returned as partition outputs."""
    rng = np.random.default_rng(17)
    w = TFLiteWriter()
    x = w.input("x", (1, 12, 10, 8), "int8", scale=0.05, zero_point=-3)
    y = _conv(w, rng, x, 8, 32, "cv1")
    a, b = w.split(y, 2, 3, names=["part_a", "part_b"])
    m = _conv(w, rng, b, 16, 16, "m")
    cat = w.concatenation([a, b, m], 3, name="cat")
    out = _conv(w, rng, cat, 48, 8, "cv2")
    tail = w.strided_slice(y, [0, 0, 0, 8], [1, 12, 10, 24], name="tail")
    flat = w.reshape(w.strided_slice(y, [0, 0, 0, 24], [1, 12, 10, 32], name="last"), (1, 120, 8), name="flat")
    w.output(out, tail, flat)
    return w.finish()


def test_channel_slices_are_read_in_place_and_exact():
    import byoc
    from byoc.cli.summary import profile_partitions
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    data = _c2f_like()
    mod, params = from_tflite(data, semantics="tflm")
    pmod = partition_for("ethos-u", mod, params)
    layers = [s for p in profile_partitions(pmod, "ethos-u", PRESET) for s in p.stats.per_layer]
    names = [s.name for s in layers]
    # the split pieces are loaded in place; the concatenation still copies them (Vela's MemoryCopy rows), while
    # the convolution m, its third input's only writer, writes its block of the output itself (no "cat/2")
    assert not any(n.startswith("part_a") or n.startswith("part_b") for n in names), names
    assert sorted(s.name for s in layers if s.kind == "copy" and s.name.startswith("cat/")) == ["cat/0", "cat/1"]
    # the two slices returned by the partition are copied once each
    assert sum(1 for n in names if n in ("tail", "last")) == 2, names
    x = np.random.default_rng(4).integers(-128, 128, size=(1, 12, 10, 8)).astype(np.int8)
    refs = litert_reference(data, [x])
    assert refs is not None
    exe = byoc.build(pmod, target="ethos-u,llvm", npu_config=PRESET)
    assert exe.npu_programs
    got = exe.run({mod["main"].params[0].name_hint: x})
    assert len(got) == len(refs) == 3
    for name, g, ref in zip(("cv2", "tail", "flat"), got, refs):   # the model's output order in both
        np.testing.assert_array_equal(np.asarray(g), ref, err_msg=name)
