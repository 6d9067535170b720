"""``ethos-u`` placement of SVDF, TFLite_Detection_PostProcess and TRANSPOSE_CONV with a computed output shape,
against the installed Vela (its CPU operators read from the file it writes) when it is present."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from byoc.cli.cmd_model import give_back_policies
from byoc.errors import ModelError
from byoc.frontend import from_tflite
from byoc.partition import partition_for
from byoc.testing.tflite_writer import TFLiteWriter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vela_placement import vela_cpu_ops, vela_executable  # noqa: E402


def _cpu_reasons(data: bytes) -> dict[str, str]:
    mod, params = from_tflite(data, semantics="tflm")
    _, report = partition_for("ethos-u", mod, params, return_report=True, **give_back_policies("ethos-u"))
    out: dict[str, str] = {}
    for n in report.cpu_ops():   # every CPU node of a TFLite operator (its reasons joined)
        out[n.name] = out[n.name] + " | " + n.reason if n.name in out else n.reason
    return out


def _svdf_then_fc() -> bytes:
    rng = np.random.default_rng(0)
    w = TFLiteWriter()
    x = w.input("x", (1, 16), "int8", scale=0.05, zero_point=-3)
    s = w.svdf(x, rng.integers(-127, 128, (8, 16)).astype(np.int8), rng.integers(-900, 900, (8, 4)).astype(np.int16),
               rng.integers(-99, 99, 8).astype(np.int32), rank=1, weights_feature_scale=0.01,
               weights_time_scale=0.002, state_scale=0.01, out_scale=0.05, out_zp=0, name="svdf_out")
    y = w.fully_connected(s, rng.integers(-127, 128, (4, 8)).astype(np.int8), rng.integers(-99, 99, 4).astype(np.int32),
                          weight_scale=0.01, out_scale=0.1, out_zp=0, name="fc_out")
    w.output(y)
    return w.finish()


def test_svdf_stays_on_the_cpu_with_velas_reason(tmp_path):
    data = _svdf_then_fc()
    reasons = _cpu_reasons(data)
    assert "Unsupported opType" in reasons["svdf_out"]
    assert "fc_out" not in reasons
    if vela_executable() is None:
        pytest.skip("vela is not installed")
    model = tmp_path / "svdf.tflite"
    model.write_bytes(data)
    assert vela_cpu_ops(model, tmp_path / "vela") == {"svdf_out"}


def test_a_model_tflite_micro_cannot_run_imports_with_litert_semantics_for_ethos_u(tmp_path):
    """uint8 LOGISTIC has no TFLite Micro kernel: ``ethos-u``'s preferred semantics yield to LiteRT's (before,
    detect.tflite could not be imported for the target at all)."""
    from byoc.cli.common import load_model
    w = TFLiteWriter()
    x = w.input("x", (1, 4, 4, 8), "uint8", scale=0.05, zero_point=128)
    w.output(w.logistic(x, out_scale=1 / 256, out_zp=0))
    path = tmp_path / "u8_logistic.tflite"
    path.write_bytes(w.finish())
    with pytest.raises(ModelError, match="int8"):
        from_tflite(path.read_bytes(), semantics="tflm")
    assert load_model(str(path), "auto", target="ethos-u").semantics == "litert"


def test_detection_postprocess_stays_on_the_cpu_as_in_vela(tmp_path):
    from flatbuffers import flexbuffers
    rng = np.random.default_rng(0)
    w = TFLiteWriter()
    x = w.input("x", (1, 4, 4, 8), "int8", scale=0.05, zero_point=0)
    conv = w.conv2d(x, rng.integers(-127, 128, (8, 1, 1, 8)).astype(np.int8), np.zeros(8, np.int32),
                    weight_scale=0.01, out_scale=0.1, out_zp=0, name="conv_out")
    boxes = w.dequantize(w.reshape(conv, (1, 32, 4), name="boxes_q"), name="boxes")
    anchors = w.const("anchors", rng.uniform(0.1, 0.5, (32, 4)).astype(np.float32))
    cls = w.input("cls", (1, 32, 3), "float32")
    outs = [w.tensor(f"det{j}", (), "float32") for j in range(4)]
    w.custom("TFLite_Detection_PostProcess", [boxes, cls, anchors], outs, bytes(flexbuffers.Dumps({
        "max_detections": 5, "max_classes_per_detection": 1, "nms_score_threshold": 0.1, "nms_iou_threshold": 0.5,
        "num_classes": 2, "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0})))
    w.output(*outs)
    data = w.finish()
    reasons = _cpu_reasons(data)
    assert "det0" in reasons and "conv_out" not in reasons
    if vela_executable() is None:
        pytest.skip("vela is not installed")
    model = tmp_path / "det.tflite"
    model.write_bytes(data)
    assert "det0" in vela_cpu_ops(model, tmp_path / "vela")


@pytest.mark.parametrize("strides,vela_cpu", [((1, 2), True), ((2, 2), False)])
def test_transpose_conv_reason_follows_velas_stride_rule(strides, vela_cpu, tmp_path):
    """(H, W) strides (1, 2) on a 1-high IFM with a 3-high kernel: Vela's 'unsupported stride combination' (as the
    SEANet layers); 2x2: Vela runs it, and so does byoc's NPU (an 8-bit TRANSPOSE_CONV)."""
    rng = np.random.default_rng(3)
    w = TFLiteWriter()
    x = w.input("x", (1, 1, 5, 8), "int8", scale=0.05, zero_point=0)
    oh = 1 * strides[0]
    y = w.transpose_conv(x, rng.integers(-127, 128, (8, 3, 4, 8)).astype(np.int8), (1, oh, 5 * strides[1], 8),
                         rng.integers(-99, 99, 8).astype(np.int32), weight_scale=0.01, strides=strides,
                         out_scale=0.1, out_zp=0, name="tconv_out")
    w.output(y)
    data = w.finish()
    reasons = _cpu_reasons(data)
    if vela_cpu:
        assert "on the CPU in Vela too" in reasons["tconv_out"], reasons["tconv_out"]
    else:   # 8-bit with a stride Vela runs: the ethos-u.qnn_conv2d_transpose composite offloads it
        assert "tconv_out" not in reasons, reasons["tconv_out"]
    if vela_executable() is None:
        pytest.skip("vela is not installed")
    model = tmp_path / "tconv.tflite"
    model.write_bytes(data)
    assert (vela_cpu_ops(model, tmp_path / "vela") == {"tconv_out"}) == vela_cpu
