"""TVM's own CMSIS-NN table in a user's file, import lines changed and a simulator codegen added, runs through
every CLI command with ``--patterns`` (issue 15's acceptance); its conv check's C++ helper is byoc's builtin."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from byoc import relay
from byoc._ffi import get_global_func

from . import tvm_tables

REPO = Path(__file__).resolve().parents[3]
KWS = REPO / "tests" / "data" / "mlcommons_tiny" / "kws_ref_model.tflite"

USER_ADDITION = '''

# the user's own lines: run CMSIS-NN's composites on the NPU simulator
from byoc.targets import register_simulator_codegen
from npu_sim.layer_kinds import LAYER_KINDS
kinds = {"cmsis-nn.qnn_conv2d": "conv2d", "cmsis-nn.qnn_fully_connected": "dense",
         "cmsis-nn.qnn_avg_pool2d": "avg_pool2d", "cmsis-nn.qnn_max_pool2d": "max_pool2d",
         "cmsis-nn.qnn_mul": "mul", "cmsis-nn.qnn_add": "add"}
# CMSIS-NN's softmax pattern matches the importer's dequantize → nn.softmax → quantize (TVM's form): run it as the
# simulator's softmax layer when there is one, else keep it on the CPU.
if "softmax" in LAYER_KINDS:
    kinds["cmsis-nn.qnn_softmax"] = "softmax"
else:
    _cmsis_table = pattern_table
    register_pattern_table("cmsis-nn")(lambda: [e for e in _cmsis_table() if e[0] != "cmsis-nn.qnn_softmax"])
register_simulator_codegen("cmsis-nn", kinds)
'''


def test_cmsisnn_padding_builtin_adds_the_pad_to_the_conv_padding():
    x = relay.var("x", shape=(1, 8, 8, 4), dtype="int8")
    w = relay.var("w", shape=(3, 3, 4, 4), dtype="int8")
    pad = relay.nn.pad(x, ((0, 0), (1, 2), (3, 0), (0, 0)), pad_value=relay.const(0, "int8"))
    conv = relay.nn.conv2d(pad, w, padding=(1, 0, 0, 4), data_layout="NHWC", kernel_layout="HWIO")
    f = get_global_func("relay.ext.cmsisnn.transform.GetEffectiveConv2DPadding")
    assert [int(v) for v in f(conv, pad)] == [1 + 1, 0 + 3, 0 + 2, 4 + 0]   # (top, left, bottom, right)


def _cli(*args):
    env = dict(os.environ)
    env.pop("BYOC_TESTING_FAULT", None)
    return subprocess.run([sys.executable, "-m", "byoc.cli", *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(not tvm_tables.available(), reason=f"TVM's table files are not at {tvm_tables.TVM_TABLES}")
def test_tvms_cmsisnn_table_from_a_users_file_through_every_command(tmp_path):
    pytest.importorskip("tflite_micro")
    user = tmp_path / "cmsisnn_user.py"
    # import lines changed as a user would (CMSIS-NN needs no NumPy-1 dtype shim, so numpy stays numpy)
    text = tvm_tables.rewrite_imports((tvm_tables.TVM_TABLES / "cmsisnn.py").read_text())
    user.write_text(text.replace("from numpy1_dtype import np", "import numpy as np") + USER_ADDITION)
    common = ["--patterns", user, "--semantics", "tflm"]   # CMSIS-NN's FC is fixed point, as TFLite Micro's
    p = _cli("partition", KWS, "--target", "cmsis-nn", "--json", *common)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["partitions"] and all(x["target"] == "cmsis-nn" for x in doc["partitions"])
    art = tmp_path / "kws.byoc"
    assert _cli("compile", KWS, "--target", "cmsis-nn,llvm", "-o", art, *common).returncode == 0
    x = np.random.default_rng(0).integers(-128, 128, (1, 49, 10, 1)).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    p = _cli("run", art, "--patterns", user, "--input", tmp_path / "x.npy", "-o", tmp_path / "y.npy")
    assert p.returncode == 0, p.stderr
    p = _cli("profile", KWS, "--target", "cmsis-nn", "--json", *common)
    assert p.returncode == 0 and json.loads(p.stdout)["total_cycles"] > 0, p.stderr
    p = _cli("compare", KWS, "--target", "cmsis-nn", "--json", *common)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["verdict"].startswith("MATCH") and doc["oracle"] == "tflm", doc["verdict"]
    p = _cli("report", KWS, "--target", "cmsis-nn", "-o", tmp_path / "r.html", *common)
    assert p.returncode == 0 and "cmsis-nn" in (tmp_path / "r.html").read_text()
