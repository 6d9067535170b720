"""A TFLite model ending in a vendor CUSTOM operator on the command line: analysis commands (import, partition,
profile, report, compile) work; executing it (compare, run) exits 3 naming the operator, without a traceback;
``--strict`` refuses the model as before; a kernel registered in a ``--patterns`` file makes ``run`` work. The
real PoseNet (google-coral/test_data, /work/ext/unseen/more) is partitioned like Vela when it is present."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import REPO, run_cli, run_json

sys.path.insert(0, str(REPO))
from tests.byoc.frontend.test_tflite_custom_op import _expected, custom_model  # noqa: E402

POSENET = Path("/work/ext/unseen/more/posenet_mobilenet_v1_075_353_481_16_quant_decoder.tflite")

KERNEL_FILE = '''
import numpy as np
import byoc

def shapes(types, op):
    return [(1,), types[0].shape]

@byoc.register_custom_kernel("VendorDecoder", output_shapes=shapes)
def decoder(inputs, op):
    y, bias = inputs
    decoded = np.clip(y.astype(np.int32) + bias.astype(np.int32), -128, 127).astype(np.int8)
    return np.asarray([float(decoded.astype(np.int64).sum())], np.float32), decoded
'''


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("custom") / "vendor.tflite"
    path.write_bytes(custom_model())
    return path


def test_analysis_commands_work(model, tmp_path):
    doc = run_json("import", model)
    assert "tflite.custom" in doc["ir"] and 'name="VendorDecoder"' in doc["ir"]
    assert doc["custom_ops"] == [{"op": "CUSTOM:VendorDecoder", "operator_index": 1,
                                  "file_offset": doc["custom_ops"][0]["file_offset"], "kernel_registered": False}]
    p = run_cli("import", model)
    assert p.returncode == 0 and "opaque op without a kernel" in p.stderr
    doc = run_json("partition", model, "--target", "ethos-u")
    (cpu,) = [n for n in doc["cpu_ops"] if n["op"] == "tflite.custom"]
    assert cpu["reason"].startswith("no kernel for CUSTOM:VendorDecoder (TFLite operator 1)")
    p = run_cli("partition", model, "--target", "ethos-u", "--report")
    assert p.returncode == 0 and "no kernel for CUSTOM:VendorDecoder" in p.stdout
    p = run_cli("partition", model, "--target", "ethos-u", "--placement", "cost", "--report")
    assert p.returncode == 0, p.stderr   # cost placement works; its simulated plans need to run the model
    assert "no kernel for CUSTOM:VendorDecoder" in p.stdout and "plans were not simulated" in p.stderr
    doc = run_json("profile", model, "--target", "ethos-u")
    assert doc["total_cycles"] > 0 and doc["cpu"]["ops"] >= 1
    out = tmp_path / "r.html"
    p = run_cli("report", model, "--target", "ethos-u", "-o", out)
    assert p.returncode == 0 and out.stat().st_size > 0
    assert "has no kernel" in p.stdout          # the comparison could not run: the report says why
    assert "CUSTOM:VendorDecoder" in out.read_text()   # the graph names the op by its custom code
    art = tmp_path / "a.byoc"
    p = run_cli("compile", model, "--target", "ethos-u,llvm", "-o", art)
    assert p.returncode == 0 and "CUSTOM:VendorDecoder" in p.stderr and "--patterns" in p.stderr


def test_executing_exits_3_naming_the_operator(model, tmp_path):
    for args in (("compare", model, "--target", "ethos-u"), ("compare", model, "--target", "llvm")):
        p = run_cli(*args)
        assert p.returncode == 3, p.stderr
        assert p.stderr.startswith("error: TFLite operator 1 (CUSTOM:VendorDecoder) at file offset ")
        assert "Traceback" not in p.stderr and "hint: register a numpy kernel" in p.stderr
    doc = run_json("compare", model, "--target", "ethos-u", expect=3)
    assert doc["error"]["type"] == "NoKernelError"
    art = tmp_path / "a.byoc"
    assert run_cli("compile", model, "--target", "ethos-u,llvm", "-o", art).returncode == 0
    p = run_cli("run", art)
    assert p.returncode == 3 and "CUSTOM:VendorDecoder" in p.stderr and "Traceback" not in p.stderr


def test_strict_refuses_the_model(model):
    p = run_cli("import", "--strict", model)
    assert p.returncode == 3 and "CUSTOM:VendorDecoder ×1 (operator 1)" in p.stderr
    doc = run_json("partition", "--strict", model, "--target", "ethos-u", expect=3)
    assert doc["error"]["type"] == "UnsupportedOpsError"


def test_a_kernel_in_a_patterns_file_runs(model, tmp_path):
    kernel = tmp_path / "kernel.py"
    kernel.write_text(textwrap.dedent(KERNEL_FILE))
    x = np.random.default_rng(7).integers(-128, 128, (1, 8, 8, 4)).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    _, scores, pooled = _expected(x)
    art = tmp_path / "k.byoc"
    p = run_cli("compile", model, "--target", "ethos-u,llvm", "-o", art, "--patterns", kernel)
    assert p.returncode == 0, p.stderr
    assert "has no kernel" not in p.stderr
    out = tmp_path / "y.npy"
    p = run_cli("run", art, "--input", tmp_path / "x.npy", "-o", out, "--patterns", kernel)
    assert p.returncode == 0, p.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y_0.npy"), scores)
    np.testing.assert_array_equal(np.load(tmp_path / "y_1.npy"), pooled)
    # compare: every executor runs the kernel; LiteRT cannot (no kernel for the custom op), so evaluate is the
    # reference and the verdict is still a verdict, not an error
    doc = run_json("compare", model, "--target", "ethos-u", "--patterns", kernel)
    assert doc["ok"] is True, doc.get("verdict")


@pytest.mark.skipif(not POSENET.exists(), reason="PoseNet (google-coral/test_data) is not in /work/ext/unseen/more")
def test_posenet_partition_like_vela(tmp_path):
    doc = run_json("partition", POSENET, "--target", "ethos-u")
    cpu = doc["cpu_ops"]
    assert [n["op"] for n in cpu] == ["tflite.custom"]
    assert cpu[0]["reason"].startswith("no kernel for CUSTOM:PosenetDecoderOp (TFLite operator 37)")
    assert [p["target"] for p in doc["partitions"]] == ["ethos-u"]
    sys.path.insert(0, str(REPO / "tests" / "patterns"))
    from vela_placement import placement, vela_executable
    if vela_executable() is None:
        pytest.skip("vela is not installed")
    pl = placement(POSENET, tmp_path)
    assert pl.differences == [] and len(pl.ops) - len(pl.vela_cpu) == 37   # all 37 of Vela's NPU operators
    p = run_cli("compare", POSENET, "--target", "ethos-u")
    assert p.returncode == 3 and "TFLite operator 37 (CUSTOM:PosenetDecoderOp) at file offset 1224" in p.stderr
