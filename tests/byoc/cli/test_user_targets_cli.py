"""A user's own target from the command line: a pattern table in the user's file (``--patterns FILE.py``) or in an
installed package's ``byoc.targets`` entry point, its composites under its own names, lowered onto the NPU
simulator by a lowering map, through every command; and bad target files exit 3 naming the file."""
from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

from cli_helpers import REPO, litert_reference, run_cli, run_json
from tests.shared_models import PERSON_DETECT, SHARED_MODELS

KWS = REPO / "tests" / "data" / "mlcommons_tiny" / "kws_ref_model.tflite"

# Written like a user's port of a TVM table (TVM-style entries: (name, pattern, check) with a check on the
# matched root), in the user's own composite names.
USER_TABLE = '''
from byoc.relay.dataflow_pattern import is_constant, is_op, wildcard
from byoc.targets import register_pattern_table, register_simulator_codegen

def _requantized(core):
    biased = core.optional(lambda x: is_op("nn.bias_add")(x, is_constant()))
    rq = is_op("qnn.requantize")(biased, is_constant(), is_constant(), is_constant(), is_constant())
    return rq.optional(is_op("clip"))

def conv_block():
    data = wildcard()
    padded = is_op("nn.pad")(data, is_constant()) | data
    return _requantized(is_op("qnn.conv2d")(padded, *[is_constant() for _ in range(5)]))

def fc():
    return _requantized(is_op("qnn.dense")(wildcard(), *[is_constant() for _ in range(5)]))

def avg_pool():
    cast = is_op("cast")(wildcard())
    return is_op("cast")(is_op("nn.avg_pool2d")(cast))

def _root_requantize(call):
    return call.args[0] if call.op.name == "clip" else call

def check_conv(call):
    rq = _root_requantize(call)
    return rq.attrs.rounding == "TFLITE"

def check_fc(call):
    # LiteRT's FULLY_CONNECTED requantizes in double precision (TFLITE_FLOAT): refuse it
    return _root_requantize(call).attrs.rounding == "TFLITE"

@register_pattern_table("myacc")
def pattern_table():
    return [("myacc.conv_block", conv_block(), check_conv),
            ("myacc.fc", fc(), check_fc),
            ("myacc.pool", avg_pool())]

register_simulator_codegen("myacc", {"myacc.conv_block": "conv2d", "myacc.fc": "dense",
                                     "myacc.pool": "avg_pool2d"})
'''


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "myacc_targets.py"
    path.write_text(USER_TABLE)
    return path


def test_user_table_file_runs_through_every_command(user_file, tmp_path):
    pat = ("--patterns", user_file)
    doc = run_json("partition", KWS, "--target", "myacc", *pat)
    comps = [c for p in doc["partitions"] for c in p["composites"]]
    assert doc["partitions"] and all(p["target"] == "myacc" for p in doc["partitions"])
    assert comps.count("myacc.conv_block") == 9 and "myacc.pool" in comps, comps
    assert any(n["op"] == "qnn.dense" and "check_fc" in n["reason"] for n in doc["cpu_ops"])

    art = tmp_path / "kws.byoc"
    doc = run_json("compile", KWS, "--target", "myacc,llvm", "-o", art, *pat)
    assert doc["npu_config"] == "ethos-u55-256-like" and art.exists()
    x = np.random.default_rng(11).integers(-128, 128, size=(1, 49, 10, 1)).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    doc = run_json("run", art, "--input", tmp_path / "x.npy", "-o", tmp_path / "y.npy", "--profile", *pat)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), litert_reference(KWS.read_bytes(), x))
    assert doc["profile"]["npu_cycles"] > 0
    p = run_cli("run", art)  # the artifact's codegen is the user's: without the file it cannot be loaded
    assert p.returncode == 3 and "myacc" in p.stderr and "Traceback" not in p.stderr

    doc = run_json("profile", KWS, "--target", "myacc", "--npu-config", "vta-default", *pat)
    assert doc["npu_config"] == "vta-default" and doc["total_cycles"] > 0
    assert {r["composite"] for r in doc["layers"]} == {"myacc.conv_block", "myacc.pool"}

    doc = run_json("compare", KWS, "--target", "myacc", *pat)
    assert doc["ok"] and doc["verdict"].startswith("MATCH"), doc["verdict"]
    assert {e["name"] for e in doc["executors"] if e["available"]} >= {"evaluate", "cpu", "myacc", "litert"}

    doc = run_json("report", KWS, "--target", "myacc", "-o", tmp_path / "r.html", *pat)
    assert doc["ok"] and doc["verdict"].startswith("MATCH") and not doc["problems"]
    assert "tvmgen_default_myacc_main_0" in (tmp_path / "r.html").read_text()

    doc = run_json("patterns", "myacc", *pat)
    assert [r["name"] for r in doc["targets"]["myacc"]] == ["myacc.conv_block", "myacc.fc", "myacc.pool"]


# A port in the shape of TVM's CMSIS-NN table: its target name (with a hyphen) and composite names, conv2d
# covering depthwise, the same bodies; softmax is left out (no simulator kind).
CMSIS_PORT = '''
from byoc.relay.dataflow_pattern import is_constant, is_op, wildcard
from byoc.targets import register_pattern_table, register_simulator_codegen

def conv():
    data = wildcard()
    c = is_op("qnn.conv2d")(is_op("nn.pad")(data, is_constant()) | data, *[is_constant() for _ in range(5)])
    rq = is_op("qnn.requantize")(c | is_op("nn.bias_add")(c, is_constant()), *[is_constant() for _ in range(4)])
    return rq.optional(is_op("clip"))

def binary(op):
    return is_op(op)(wildcard(), wildcard(), *[is_constant() for _ in range(6)]).optional(is_op("clip"))

@register_pattern_table("cmsis-nn")
def table():
    return [("cmsis-nn.qnn_conv2d", conv()),
            ("cmsis-nn.qnn_avg_pool2d", is_op("cast")(is_op("nn.avg_pool2d")(is_op("cast")(wildcard()))).optional(is_op("clip"))),
            ("cmsis-nn.qnn_max_pool2d", is_op("nn.max_pool2d")(wildcard()).optional(is_op("clip"))),
            ("cmsis-nn.qnn_add", binary("qnn.add")), ("cmsis-nn.qnn_mul", binary("qnn.mul"))]

register_simulator_codegen("cmsis-nn", {"cmsis-nn.qnn_conv2d": "conv2d", "cmsis-nn.qnn_avg_pool2d": "avg_pool2d",
                                        "cmsis-nn.qnn_max_pool2d": "max_pool2d", "cmsis-nn.qnn_add": "add",
                                        "cmsis-nn.qnn_mul": "mul"})
'''

RESNET8 = REPO / "tests" / "data" / "mlcommons_tiny" / "pretrainedResnet_quant.tflite"


def test_a_cmsis_nn_shaped_port_compiles_runs_and_matches(tmp_path):
    path = tmp_path / "cmsis_port.py"
    path.write_text(CMSIS_PORT)
    pat = ("--patterns", path)
    doc = run_json("partition", RESNET8, "--target", "cmsis-nn", *pat)
    comps = sorted({c for p in doc["partitions"] for c in p["composites"]})
    assert comps == ["cmsis-nn.qnn_add", "cmsis-nn.qnn_avg_pool2d", "cmsis-nn.qnn_conv2d"], comps
    art = tmp_path / "r8.byoc"
    assert run_cli("compile", RESNET8, "--target", "cmsis-nn,llvm", "-o", art, *pat).returncode == 0
    x = np.random.default_rng(2).integers(-128, 128, size=(1, 32, 32, 3)).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    assert run_cli("run", art, "--input", tmp_path / "x.npy", "-o", tmp_path / "y.npy", *pat).returncode == 0
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), litert_reference(RESNET8.read_bytes(), x))
    doc = run_json("compare", RESNET8, "--target", "cmsis-nn", *pat)
    assert doc["ok"] and doc["verdict"].startswith("MATCH")


def _bad(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return run_cli("partition", KWS, "--target", "myacc", "--patterns", path), str(path)


@pytest.mark.parametrize("case, text, expect", [
    ("syntax", "def pattern_table(:\n    pass\n", ["syntax error", ":1:"]),
    ("raises_on_import", "import math\nraise RuntimeError('no licence server')\n",
     ["RuntimeError: no licence server", ":2:"]),
    ("table_raises", """
        from patterns import register_pattern_table

        @register_pattern_table("myacc")
        def pattern_table():
            return [("myacc.conv", None)] + [1 / 0]
        """, ["ZeroDivisionError", "pattern table 'myacc'", ":6:"]),
    ("bad_entry", """
        from patterns import register_pattern_table

        @register_pattern_table("myacc")
        def pattern_table():
            return [("myacc.conv", "not a pattern")]
        """, ["pattern must be a DFPattern", "myacc.conv"]),
    ("nothing", "X = 1\n", ["registered no pattern table and no codegen"]),
    ("bad_kind", """
        from byoc.targets import register_simulator_codegen
        register_simulator_codegen("myacc", {"myacc.conv": "conv_2d", "other.fc": "dense"})
        """, ["'conv_2d' is not a simulator layer kind", "did you mean 'conv2d'", "'other.fc'"]),
])
def test_bad_target_files_exit_3_naming_the_file(tmp_path, case, text, expect):
    p, path = _bad(tmp_path, f"{case}.py", text)
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert path in p.stderr and "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    for e in expect:
        assert e in p.stderr, (e, p.stderr)


def test_missing_target_file_and_unknown_target_hint(tmp_path):
    p = run_cli("patterns", "--patterns", tmp_path / "nope.py")
    assert p.returncode == 3 and str(tmp_path / "nope.py") in p.stderr and "does not exist" in p.stderr
    p = run_cli("partition", KWS, "--target", "nobody")
    assert p.returncode == 3 and "--patterns FILE.py" in p.stderr and "byoc.targets" in p.stderr
    p = run_cli("compile", KWS, "--target", "example_accelerator,llvm", "-o", tmp_path / "a.byoc")
    assert p.returncode == 3 and "no codegen registered" in p.stderr


@pytest.mark.parametrize("name", ["foo.bar", "../x", ""])
def test_target_names_that_are_no_module_name_are_unknown_targets(name):
    # regression: "foo.bar" was imported as patterns.foo.bar and crashed with exit 4
    p = run_cli("partition", KWS, "--target", name)
    assert p.returncode in (2, 3) and "internal error" not in p.stderr, p.stderr


def test_help_says_the_target_file_is_executed():
    p = run_cli("partition", "--help")
    assert p.returncode == 0 and "--patterns FILE.py" in p.stdout and "EXECUTED" in p.stdout


# -- byoc.targets entry points --------------------------------------------------------------------------------

PLUGIN = '''
from byoc.relay.dataflow_pattern import is_constant, is_op, wildcard

def register():
    from byoc.targets import register_pattern_table, register_simulator_codegen

    @register_pattern_table("epacc")
    def table():
        data = wildcard()
        conv = is_op("qnn.conv2d")(is_op("nn.pad")(data, is_constant()) | data, *[is_constant() for _ in range(5)])
        rq = is_op("qnn.requantize")(is_op("nn.bias_add")(conv, is_constant()), *[is_constant() for _ in range(4)])
        return [("epacc.conv", rq.optional(is_op("clip")))]

    register_simulator_codegen("epacc", {"epacc.conv": "conv2d"}, npu_config="ethos-n78-like")
'''


def fake_distribution(root, entry: str, module_text: str, module: str = "epacc_plugin"):
    """An installed distribution as importlib.metadata sees it: a .dist-info with entry_points.txt."""
    info = root / "epacc_byoc-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: epacc-byoc\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[byoc.targets]\n{entry}\n")
    (root / f"{module}.py").write_text(module_text)
    return {"PYTHONPATH": os.pathsep.join([str(root), str(REPO)])}


def test_entry_point_target_works_without_any_flag(tmp_path):
    env = fake_distribution(tmp_path / "site", "epacc = epacc_plugin:register", PLUGIN)
    p = run_cli("patterns", env=env)
    assert p.returncode == 0 and "== epacc: 1 composite pattern(s)" in p.stdout, p.stderr
    doc = run_json("compare", KWS, "--target", "epacc", env=env)
    assert doc["ok"] and doc["verdict"].startswith("MATCH")
    assert any("ethos-n78-like" in e["description"] for e in doc["executors"] if e["name"] == "epacc")
    art = tmp_path / "ep.byoc"
    assert run_cli("compile", KWS, "--target", "epacc,llvm", "-o", art, env=env).returncode == 0
    p = run_cli("run", art, env=env)
    assert p.returncode == 0 and "1x12" in p.stdout


def test_broken_entry_point_exits_3_naming_it(tmp_path):
    env = fake_distribution(tmp_path / "site", "epacc = epacc_plugin:register", "def register():\n    1 / 0\n")
    p = run_cli("partition", KWS, "--target", "epacc", env=env)
    assert p.returncode == 3 and "entry point 'epacc' (epacc_plugin:register)" in p.stderr
    assert "ZeroDivisionError" in p.stderr and "Traceback" not in p.stderr


# -- a codegen that is not the simulator, and the built-in vta codegen -------------------------------------

EVAL_CODEGEN = '''
import byoc
from byoc.build import register_codegen
from patterns import register_pattern_table
from byoc.relay.dataflow_pattern import is_op, wildcard

@register_pattern_table("evalacc")
def table():
    return [("evalacc.pool", is_op("cast")(is_op("nn.avg_pool2d")(is_op("cast")(wildcard()))))]

def codegen(func, symbol):
    """runs the partition with the reference interpreter: a stand-in for the user's own simulator"""
    sub = byoc.IRModule.from_expr(func.replace(attrs={}))
    return lambda arrays: byoc.evaluate(sub, {p.name_hint: a for p, a in zip(func.params, arrays)})

register_codegen("evalacc", codegen)
'''


def test_profile_and_compare_for_a_codegen_of_ones_own(tmp_path):
    path = tmp_path / "evalacc.py"
    path.write_text(EVAL_CODEGEN)
    doc = run_json("profile", KWS, "--target", "evalacc", "--patterns", path)
    devices = [n for n in doc["nodes"] if n["device"] == "evalacc"]
    assert len(devices) == 1 and devices[0]["ops"] == ["evalacc.pool"] and devices[0]["wall_seconds"] > 0
    doc = run_json("compare", KWS, "--target", "evalacc", "--patterns", path)
    assert doc["ok"] and doc["verdict"].startswith("MATCH")


MODELS = [KWS, REPO / "tests" / "data" / "mlcommons_tiny" / "vww_96_int8.tflite",
          SHARED_MODELS / PERSON_DETECT]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.stem)
def test_vta_codegen_is_bit_exact_on_real_models(model):
    if not model.exists():
        pytest.skip(f"{model} is not present")
    doc = run_json("compare", model, "--target", "vta")
    vta = next(e for e in doc["executors"] if e["name"] == "vta")
    assert "vta-default" in vta["description"] and doc["ok"] and doc["verdict"].startswith("MATCH")
    ran = {e["name"] for e in doc["executors"] if e["available"]}
    assert ran >= {"evaluate", "cpu", "vta"} and ran & {"litert", "tflm"}, ran  # the TFLite oracle ran
    assert any(t["placement"].startswith("tvmgen_default_vta") for t in doc["intermediates"])


def test_vta_profile_uses_the_vta_preset():
    doc = run_json("profile", KWS, "--target", "vta")
    assert doc["npu_config"] == "vta-default" and doc["clock_hz"] == 100e6
    assert {r["composite"] for r in doc["layers"]} == {"vta.qnn_conv2d"} and doc["total_cycles"] > 0


def test_the_documented_target_file_works(tmp_path):
    """docs/targets.md's example file, as printed there: KWS's nine convolutions and its pool offloaded, MATCH."""
    doc_text = (REPO / "docs" / "targets.md").read_text()
    code = doc_text.split("```python\n# myacc_targets.py\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "myacc_targets.py"
    path.write_text(code)
    doc = run_json("compare", KWS, "--target", "myacc", "--patterns", path)
    assert doc["ok"] and doc["verdict"].startswith("MATCH")
    doc = run_json("partition", KWS, "--target", "myacc", "--patterns", path)
    comps = sorted(c for p in doc["partitions"] for c in p["composites"])
    assert comps == ["myacc.conv_block"] * 9 + ["myacc.pool"], comps
