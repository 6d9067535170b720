"""TFLite_Detection_PostProcess: the flexbuffer options, LiteRT BUILTIN_REF's decoding and fast / regular NMS on
models built here (float inputs, random boxes and scores) and on detect.tflite when /work/ext/unseen holds it.
Rows past num_detections are compared too where LiteRT writes them (regular NMS: its max_detections rows); the
fast path leaves them unwritten in LiteRT, so only the rows it writes (num_detections anchors × classes per
anchor) are compared there."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from flatbuffers import flexbuffers

import byoc
from byoc.errors import ModelError
from byoc.frontend import from_tflite
from byoc.testing.tflite_writer import TFLiteWriter
from tests.byoc.frontend.tflite_oracles import litert_run

UNSEEN = Path("/work/ext/unseen")


def _options(**kw) -> bytes:
    opts = {"max_detections": 6, "max_classes_per_detection": 1, "detections_per_class": 4, "use_regular_nms": False,
            "nms_score_threshold": 0.85, "nms_iou_threshold": 0.3, "num_classes": 5, "y_scale": 10.0,
            "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0}
    opts.update(kw)
    return bytes(flexbuffers.Dumps(opts))


def _model(n: int = 20, classes: int = 5, options: bytes | None = None) -> bytes:
    w = TFLiteWriter()
    enc = w.input("enc", (1, n, 4), "float32")
    cls = w.input("cls", (1, n, classes + 1), "float32")
    anchors = w.input("anchors", (n, 4), "float32")
    outs = [w.tensor(f"out{j}", (), "float32") for j in range(4)]
    w.custom("TFLite_Detection_PostProcess", [enc, cls, anchors], outs, options or _options(num_classes=classes))
    w.output(*outs)
    return w.finish()


def _inputs(rng, n: int = 20, classes: int = 5, coarse: bool = True):
    enc = rng.normal(0, 2, (1, n, 4)).astype(np.float32)
    # coarse scores: ties between classes and anchors exercise the sort orders
    cls = (rng.integers(0, 12, (1, n, classes + 1)) / 12 if coarse else
           rng.uniform(0.0, 0.9, (1, n, classes + 1))).astype(np.float32)
    centre = rng.uniform(0.2, 0.8, (n, 2))
    size = rng.uniform(0.05, 0.4, (n, 2))
    anchors = np.concatenate([centre, size], axis=1).astype(np.float32)
    return [enc, cls, anchors]


def _compare(data: bytes, xs, rows_all: bool, per: int = 1):
    mod, _ = from_tflite(data)
    ref = litert_run(data, xs)[0]
    ours = byoc.evaluate(mod, {p.name_hint: x for p, x in zip(mod["main"].params, xs)})
    n = int(ref[3][0])
    assert np.asarray(ours[3]).tolist() == ref[3].tolist()
    for o, r in zip(ours[:3], ref[:3]):
        o = np.asarray(o)
        assert o.shape == r.shape and o.dtype == r.dtype
        # regular NMS writes its max_detections rows (zeros past num_detections); the fast path the n·per rows
        rows = 6 if rows_all else n * per
        np.testing.assert_array_equal(o[0, :rows], r[0, :rows])
    return n


@pytest.mark.parametrize("regular,per,per_class", [(False, 1, 4), (False, 3, 4), (False, 5, 4), (True, 1, 4),
                                                   (True, 2, 4), (True, 1, 10)])
def test_matches_litert(regular, per, per_class):
    data = _model(options=_options(use_regular_nms=regular, max_classes_per_detection=per,
                                   detections_per_class=per_class))
    rng = np.random.default_rng(5 + per + 10 * regular)
    # coarse scores tie often: LiteRT orders tied classes with libstdc++'s std::partial_sort (a heap)
    counts = {_compare(data, _inputs(rng), rows_all=regular, per=per) for _ in range(12)}
    assert len(counts) > 1, counts     # different inputs keep different numbers of boxes


def test_bad_options_are_a_model_error():
    with pytest.raises(ModelError, match="custom option 'max_classes_per_detection' is missing"):
        from_tflite(_model(options=bytes(flexbuffers.Dumps({"max_detections": 3}))))
    with pytest.raises(ModelError, match="flexbuffer"):
        from_tflite(_model(options=b"\x01\x02\x03garbage"))


def test_cpu_build_runs_it_as_a_host_step_between_kernels():
    """A dequantize kernel in front and an add behind: the CPU build (the op is a host step) equals LiteRT."""
    w = TFLiteWriter()
    enc_q = w.input("enc_q", (1, 20, 4), "uint8", scale=0.05, zero_point=128)
    enc = w.dequantize(enc_q, name="enc")
    cls = w.input("cls", (1, 20, 6), "float32")
    anchors = w.input("anchors", (20, 4), "float32")
    outs = [w.tensor(f"out{j}", (), "float32") for j in range(4)]
    w.custom("TFLite_Detection_PostProcess", [enc, cls, anchors], outs, _options())
    w.output(outs[0], outs[1], outs[2], outs[3])
    data = w.finish()
    mod, params = from_tflite(data)
    exe = byoc.build(mod, target="llvm", params=params)
    rng = np.random.default_rng(9)
    for _ in range(6):
        enc_f, cls_f, anchors_f = _inputs(rng)
        xs = [rng.integers(0, 256, (1, 20, 4)).astype(np.uint8), cls_f, anchors_f]
        ref = litert_run(data, xs)[0]
        got = exe.run({p.name_hint: x for p, x in zip(mod["main"].params, xs)})
        n = int(ref[3][0])
        assert got[3].tolist() == ref[3].tolist()
        for o, r in zip(got[:3], ref[:3]):
            np.testing.assert_array_equal(o[0, :n], r[0, :n])


def test_detect_tflite_matches_litert():
    path = UNSEEN / "detect.tflite"
    if not path.exists():
        pytest.skip(f"{path} is not present (benchmarks/unseen_models.md)")
    data = path.read_bytes()
    rng = np.random.default_rng(1)
    for _ in range(2):
        assert _compare(data, [rng.integers(0, 256, (1, 300, 300, 3)).astype(np.uint8)], rows_all=False) == 10
