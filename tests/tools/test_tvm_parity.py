"""tools/tvm_parity.py changes import lines only, and counts what a rewritten TVM test file does."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("tvm_parity", ROOT / "tools" / "tvm_parity.py")
tvm_parity = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tvm_parity)


def test_only_tvm_import_lines_change():
    source = "import numpy as np\nimport tvm\nfrom tvm import relay\nx = relay.var('x')  # import tvm in a comment\n"
    out = tvm_parity.rewrite(source)
    assert "import byoc as tvm" in out and "from byoc import relay" in out
    assert "import numpy as np\n" in out and "x = relay.var('x')  # import tvm in a comment\n" in out
    assert "import tvm\n" not in out


def test_submodule_and_aliased_imports():
    assert "import byoc.relay.testing" in tvm_parity.rewrite_import("import tvm.relay.testing")
    assert "import byoc as tvm" in tvm_parity.rewrite_import("import tvm.relay.testing")
    assert "import byoc.relay as r" in tvm_parity.rewrite_import("import tvm.relay as r")
    both = tvm_parity.rewrite_import("    from tvm.relay.dataflow_pattern import is_op, wildcard")
    assert "    from byoc.relay.dataflow_pattern import is_op" in both
    assert "    from byoc.relay.dataflow_pattern import wildcard" in both
    assert tvm_parity.rewrite_import("from tvmc import x") is None
    assert tvm_parity.rewrite_import("import numpy") is None


def test_missing_names_fail_only_the_tests_that_use_them(tmp_path, capsys):
    tests = tmp_path / tvm_parity.TEST_DIR
    tests.mkdir(parents=True)
    (tests / "test_fake.py").write_text(
        "import tvm\nfrom tvm import relay\nfrom tvm.no_such_module import thing\n\n"
        "def test_uses_byoc():\n    x = relay.var('x', shape=(2,))\n    assert tvm.ir.IRModule.from_expr(x + x)\n\n"
        "def test_uses_missing():\n    thing.run()\n")
    tvm_parity.main(["--tvm-src", str(tmp_path), "--out", str(tmp_path / "out"), "test_fake.py"])
    table = capsys.readouterr().out
    assert "| test_fake.py | 1 | 1 | 0 |" in table
    assert "missing: tvm.no_such_module.thing" in table
