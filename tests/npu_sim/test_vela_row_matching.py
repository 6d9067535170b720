"""Pairing Vela 5.2's per-layer rows with byoc's layers (``benchmarks.bench_npu.vela_per_layer`` / ``_model_rows``)
where regor names a row after a tensor another operator writes:

* a producer whose output only feeds a CONCATENATION writes straight into its slice of the output: its row
  carries the concatenation's name (YOLOv8n's ``tf.concat/concat`` Add, MaxPool, Mul, ResizeNearestNeighbor rows
  were left unmatched, ~0.9M cycles);
* an activation whose input has no other reader runs as its producer's output stage: the producer's row carries
  the activation's name, the activation's own row is 0 cycles (traffic_model's ADD + uint8 LOGISTIC);
* SOFTMAX is a sequence of rows writing intermediates the model does not hold: all of them are the one layer
  (before, only the last row was compared with byoc's whole softmax: YOLOv8n's 1.77M cycles against 151k);
* a half-pixel RESIZE_BILINEAR's edge-padding copies carry its input's name: they are the resize's (before, they
  were compared with the convolution writing that input: MoveNet's 0.35-0.59x "convolutions").

The expected cycles are Vela's own CSV rows, read here independently of the code under test."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from byoc.testing.tflite_writer import TFLiteWriter


def _model() -> bytes:
    rng = np.random.default_rng(21)
    w = TFLiteWriter()
    x = w.input("x", (1, 16, 16, 16), "int8", scale=0.05, zero_point=-3)

    def conv(v, cin, cout, name):
        return w.conv2d(v, rng.integers(-127, 128, size=(cout, 1, 1, cin)).astype(np.int8),
                        rng.integers(-1000, 1000, size=cout).astype(np.int32), weight_scale=0.01, out_scale=0.5,
                        out_zp=0, name=name)
    a, b = conv(x, 16, 16, "conv_a"), conv(x, 16, 16, "conv_b")
    cat = w.concatenation([a, b], 3, name="cat")
    c = conv(cat, 32, 16, "conv_c")
    d = w.add(c, x, out_scale=0.3, out_zp=2, name="sum")
    e = w.logistic(d, name="gate")
    up = w.resize_bilinear(conv(x, 16, 16, "pre_up"), (32, 32), half_pixel_centers=True, name="up")
    w.output(w.softmax(e, name="probs"), up)
    return w.finish()


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    from benchmarks.bench_npu import _model_rows, vela_per_layer
    d = tmp_path_factory.mktemp("rows")
    path = d / "matching.tflite"
    path.write_bytes(_model())
    if vela_per_layer(path, d / "vela") is None:
        pytest.skip("vela is not installed")
    with open(d / "vela" / "matching_per-layer.csv", newline="") as f:
        csv_rows = list(csv.DictReader(f))
    got = _model_rows("matching", path, d / "vela")
    return csv_rows, {r["name"]: r for r in got["rows"]}


def _ours_by_name(path_bytes: bytes) -> dict[str, int]:
    from byoc.cli.summary import profile_partitions
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    from benchmarks.bench_npu import PRESET
    mod, params = from_tflite(path_bytes, semantics="tflm")
    out: dict[str, int] = {}
    for p in profile_partitions(partition_for("ethos-u", mod, params), "ethos-u", PRESET):
        for s in p.stats.per_layer:
            out[s.name] = out.get(s.name, 0) + s.exclusive_cycles
    return out


def test_producers_written_into_a_concatenation_are_compared_with_ours(rows):
    csv_rows, got = rows
    vela_convs = [r for r in csv_rows if r["Original Operator"] == "Conv2D" and r["Name"] == "cat"]
    assert len(vela_convs) == 2, "regor no longer writes both convolutions into the concatenation"
    ours = _ours_by_name(_model())
    row = got["cat"]
    assert row["op"] == "Conv2D" and row["vela"] == sum(int(float(r["Op Cycles"])) for r in vela_convs)
    assert row["ours"] == ours["conv_a"] + ours["conv_b"]


def test_an_activation_run_as_its_producers_output_stage_is_compared_with_both_of_ours(rows):
    csv_rows, got = rows
    named = [r for r in csv_rows if r["Name"] == "gate"]
    assert {r["Original Operator"] for r in named} == {"Add", "Sigmoid"}, "regor no longer fuses the LUT"
    ours = _ours_by_name(_model())
    add = got["gate (Add)"]
    assert add["vela"] == sum(int(float(r["Op Cycles"])) for r in named if r["Original Operator"] == "Add")
    assert add["ours"] == ours["sum"] + ours["gate"]
    assert got["gate (Sigmoid)"]["ours"] is None   # counted with the Add


def test_all_of_a_softmax_sequence_is_one_layer(rows):
    csv_rows, got = rows
    seq = [r for r in csv_rows if r["Original Operator"] == "Softmax"]
    assert len(seq) > 5
    assert got["probs"]["vela"] == sum(int(float(r["Op Cycles"])) for r in seq)
    assert not [n for n in got if "_softmax_" in n]


def test_a_bilinear_resizes_padding_copies_are_the_resizes(rows):
    csv_rows, got = rows
    copies = [r for r in csv_rows if r["Original Operator"] == "ResizeBilinear" and r["Name"] == "pre_up"]
    assert copies, "regor no longer names the resize's padding copies after its input"
    everything = sum(int(float(r["Op Cycles"])) for r in csv_rows if r["Original Operator"] == "ResizeBilinear")
    assert got["up"]["vela"] == everything
    assert got["pre_up"]["op"] == "Conv2D" and "pre_up (ResizeBilinear)" not in got
