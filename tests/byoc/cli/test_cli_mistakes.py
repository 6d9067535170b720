"""A user's mistake exits 2 (usage) or 3 (bad input) with one message, never 4 (internal error) or a traceback.

Most cases run ``byoc.cli.main`` in this process (argparse and input checks fail before any model work); the
ONNX compare runs as a child so onnxruntime's own stderr (written by C++, not Python) is seen too.
"""
from __future__ import annotations

import numpy as np
import pytest

from byoc.errors import ModelError
from byoc.frontend import from_tflite
from byoc.testing import TFLiteWriter

from cli_helpers import run_cli


def cli(capsys, *args) -> tuple[int, str, str]:
    """``byoc ARGS`` in this process: (exit code, stdout, stderr)."""
    from byoc.cli import main
    try:
        code = main([str(a) for a in args])
    except SystemExit as e:  # argparse's own usage errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_message(code: int, err: str, expected_code: int, *phrases: str) -> None:
    assert code == expected_code, err
    assert "Traceback" not in err and "internal error" not in err, err
    for p in phrases:
        assert p in err, (p, err)


# ------------------------------------------------------------------------------------------ numbers

@pytest.mark.parametrize("args, phrase", [
    (["--seed", "-1"], "argument --seed: -1 is out of range"),
    (["--seed", "x"], "argument --seed: 'x' is not an integer"),
    (["--seed", str(2**128)], "out of range"),
    (["--min-partition-size", "0"], "argument --min-partition-size: 0 is out of range"),
    (["--min-partition-size", str(2**70)], "out of range"),
    (["--shape", "x"], "expected NAME=D0,D1,..."),
    (["--shape", "x=1,a"], "dimension 'a' is not an integer"),
    (["--shape", "x=1,0"], "dimension 0 is not positive"),
    (["--shape", "x=65536,65536"], "over the limit of 2147483647"),
])
def test_bad_numbers_are_usage_errors(capsys, tmp_path, args, phrase):
    code, out, err = cli(capsys, "compare", tmp_path / "never_read.tflite", *args)
    assert_one_message(code, err, 2, phrase)
    assert out == ""


def test_huge_seed_within_range_is_accepted(capsys, small_model):
    code, _, err = cli(capsys, "compare", small_model, "--seed", str(2**100), "--target", "llvm", "--no-oracle")
    assert code == 0, err


# ------------------------------------------------------------------------------------------ input files

def _write_bad_inputs(tmp_path):
    (tmp_path / "text.npy").write_text("1 2 3\n")
    (tmp_path / "empty.npy").write_bytes(b"")
    np.savez(tmp_path / "arrays.npz", a=np.zeros(3))
    np.save(tmp_path / "objects.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    np.save(tmp_path / "full.npy", np.zeros((64,), np.int8))
    (tmp_path / "truncated.npy").write_bytes((tmp_path / "full.npy").read_bytes()[:-40])


@pytest.mark.parametrize("name, phrase", [
    ("text.npy", "is not a .npy file: it does not start with numpy's .npy header"),
    ("empty.npy", "is not a .npy file: the file is empty"),
    ("arrays.npz", "is not a .npy file: it is an .npz archive"),
    ("objects.npy", "not a plain .npy array"),
    ("truncated.npy", "not a plain .npy array"),
    ("missing.npy", "cannot read input file"),
    (".", "cannot read input file"),
])
def test_bad_input_files_exit_3_with_one_message(capsys, tmp_path, name, phrase):
    _write_bad_inputs(tmp_path)
    # run checks its --input files before it opens the artifact, so the artifact need not exist
    code, _, err = cli(capsys, "run", tmp_path / "never_read.byoc", "--input", tmp_path / name)
    assert_one_message(code, err, 3, phrase)
    assert "pickled" not in err and err.count("error: ") == 1


def test_wrong_input_shape_and_dtype_are_named(capsys, tmp_path, small_model):
    np.save(tmp_path / "f32.npy", np.zeros((1, 32, 32, 3), np.float32))
    np.save(tmp_path / "short.npy", np.zeros((3,), np.int8))
    for f, found in (("f32.npy", "float32[1, 32, 32, 3]"), ("short.npy", "int8[3]")):
        code, _, err = cli(capsys, "compare", small_model, "--input", tmp_path / f)
        assert_one_message(code, err, 3, f"input 'input': expected int8[1, 32, 32, 3], file has {found}")
    code, _, err = cli(capsys, "compare", small_model, "--input", f"nope={tmp_path / 'short.npy'}")
    assert_one_message(code, err, 2, "the model has no input 'nope' (inputs: input)")


def test_given_inputs_are_not_drawn(monkeypatch):
    from byoc import relay
    from byoc.cli import common
    from byoc.ir.module import IRModule
    x = relay.var("x", shape=(2, 3), dtype="int8")
    y = relay.var("y", shape=(4,), dtype="int16")
    func = IRModule.from_expr(relay.Function([x, y], relay.Tuple([x, y])))["main"]
    drawn = []
    real = common.random_tensor
    def recording(rng, shape, dtype):
        drawn.append(shape)
        return real(rng, shape, dtype)
    monkeypatch.setattr(common, "random_tensor", recording)
    monkeypatch.setattr(common, "load_npy", lambda path: np.ones((2, 3), np.int8))
    got = common.make_inputs(func, ["x=given.npy"], seed=9)
    assert drawn == [(4,)]                      # only y
    assert (got["x"] == 1).all()
    # y is the seed's first draw, as if it were the only input (numpy, not the code under test, gives it)
    want = np.random.default_rng(9).integers(-2**15, 2**15, size=(4,), dtype=np.int64).astype(np.int16)
    np.testing.assert_array_equal(got["y"], want)


@pytest.fixture(scope="module")
def huge_model(tmp_path_factory):
    """A model whose int8 input has 2**31 - 1 elements (TFLite's limit): importable, never to be drawn."""
    w = TFLiteWriter()
    x = w.input("x", (1, 2**31 - 1), "int8", scale=0.1, zero_point=0)
    w.output(w.relu(x))
    path = tmp_path_factory.mktemp("huge") / "huge.tflite"
    path.write_bytes(w.finish())
    return path


def test_huge_inputs_are_refused_before_allocating(capsys, monkeypatch, tmp_path, huge_model):
    from byoc.cli import common

    def never(*a, **k):
        raise AssertionError("a random input was drawn")
    monkeypatch.setattr(common, "random_tensor", never)
    code, _, err = cli(capsys, "compare", huge_model, "--target", "llvm")
    assert_one_message(code, err, 3, "too large for random values", "input 'x' (int8[1, 2147483647]",
                       "--input NAME=FILE.npy")
    np.save(tmp_path / "x.npy", np.zeros((1, 4), np.int8))
    code, _, err = cli(capsys, "compare", huge_model, "--target", "llvm", "--input", tmp_path / "x.npy")
    assert_one_message(code, err, 3, "expected int8[1, 2147483647], file has int8[1, 4]")


# ------------------------------------------------------------------------------------------ models and outputs

def test_tflite_file_identifier_is_checked(capsys, tmp_path, small_model):
    data = small_model.read_bytes()
    assert data[4:8] == b"TFL3"
    bad = data[:4] + b"XXXX" + data[8:]
    with pytest.raises(ModelError, match=r"file identifier b'XXXX' at offset 4, expected b'TFL3'"):
        from_tflite(bad)
    # LiteRT's verifier refuses the same file (the identifier is not a formality)
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    with pytest.raises(Exception, match="not a valid Flatbuffer"):
        litert.Interpreter(model_content=bad)
    (tmp_path / "bad.tflite").write_bytes(bad)
    code, _, err = cli(capsys, "import", tmp_path / "bad.tflite")
    assert_one_message(code, err, 3, "file identifier")
    (tmp_path / "notes.tflite").write_text("0123text that is not a model at all\n")
    code, _, err = cli(capsys, "import", tmp_path / "notes.tflite")
    assert_one_message(code, err, 3, "file identifier b'text' at offset 4")


@pytest.mark.parametrize("what", ["directory", "empty"])
def test_model_path_mistakes_exit_3(capsys, tmp_path, what):
    path = tmp_path / "m.tflite"
    path.mkdir() if what == "directory" else path.write_bytes(b"")
    code, _, err = cli(capsys, "import", path)
    assert_one_message(code, err, 3, "Is a directory" if what == "directory" else "too short")


def test_run_writes_the_named_output_and_refuses_a_directory(capsys, tmp_path, small_model):
    art = tmp_path / "m.byoc"
    code, _, err = cli(capsys, "compile", small_model, "--target", "llvm", "-o", art)
    assert code == 0, err
    code, _, err = cli(capsys, "run", art, "-o", tmp_path / "y")   # no .npy appended behind the user's back
    assert code == 0 and f"wrote {tmp_path / 'y'}" in err, err
    assert (tmp_path / "y").is_file() and not (tmp_path / "y.npy").exists()
    assert np.load(tmp_path / "y", allow_pickle=False).shape == (1, 10)
    code, _, err = cli(capsys, "run", art, "-o", tmp_path)
    assert_one_message(code, err, 3, "Is a directory")
    assert not tmp_path.with_suffix(".npy").exists()


def test_tflite_shape_is_accepted_only_when_it_repeats_the_model(capsys, small_model):
    code, out, err = cli(capsys, "import", small_model, "--shape", "input=1,32,32,3")
    assert code == 0 and "1, 32, 32, 3" in out, err
    code, _, err = cli(capsys, "import", small_model, "--shape", "input=2,32,32,3")
    assert_one_message(code, err, 3, "static shape [1, 32, 32, 3]; --shape gives [2, 32, 32, 3]",
                       "drop --shape")
    code, _, err = cli(capsys, "import", small_model, "--shape", "image=1,32,32,3")
    assert_one_message(code, err, 2, "--shape names no input of the model: 'image' (inputs: input)")
    code, _, err = cli(capsys, "import", small_model, "--shape", "input=1,32,32,3", "--shape", "input=1,8,8,3")
    assert_one_message(code, err, 2, "two shapes")


# ------------------------------------------------------------------------------------------ ONNX

@pytest.fixture(scope="module")
def dynamic_onnx(tmp_path_factory):
    """An int8 QOperator CNN (onnxruntime's quantizer) whose batch is symbolic ``N``, with two unused
    initializers (onnxruntime warns about those when it loads the file)."""
    pytest.importorskip("onnxruntime")
    from onnx import numpy_helper
    import onnx
    from tests.byoc.frontend.onnx_models import cnn, quantize_qoperator
    d = tmp_path_factory.mktemp("onnx")
    model = quantize_qoperator(cnn(0), d, "int8")
    for vi in (model.graph.input[0], model.graph.output[0]):
        vi.type.tensor_type.shape.dim[0].dim_param = "N"
    model.graph.initializer.extend(numpy_helper.from_array(np.zeros(3, np.float32), f"unused{i}") for i in range(2))
    path = d / "dynamic.onnx"
    onnx.save(model, str(path))
    return path


def test_onnx_dynamic_batch_needs_and_takes_shape(capsys, dynamic_onnx):
    code, _, err = cli(capsys, "import", dynamic_onnx)
    assert_one_message(code, err, 3, "input 'x' has dynamic dimensions ['N', 3, 16, 16]",
                       "hint: give static shapes: --shape x=1,3,16,16")
    assert "from_onnx" not in err
    code, out, err = cli(capsys, "import", dynamic_onnx, "--shape", "x=2,3,16,16", "--json")
    assert code == 0, err
    import json
    assert json.loads(out)["inputs"] == [{"name": "x", "shape": [2, 3, 16, 16], "dtype": "float32"}]
    for shape, phrase in (("x=2,3,16", "declared ['N', 3, 16, 16]; --shape gives [2, 3, 16]"),
                          ("x=2,4,16,16", "--shape gives [2, 4, 16, 16]")):
        code, _, err = cli(capsys, "partition", dynamic_onnx, "--shape", shape)
        assert_one_message(code, err, 3, phrase)
    code, _, err = cli(capsys, "compile", dynamic_onnx, "-o", "never.byoc", "--shape", "y=2,3,16,16")
    assert_one_message(code, err, 2, "--shape names no input of the model: 'y' (inputs: x)")
    code, _, err = cli(capsys, "import", dynamic_onnx, "--shape", "x=1,3,16,16", "--semantics", "tflm")
    assert_one_message(code, err, 2, "--semantics tflm applies to TFLite models")


def test_onnx_compare_with_shape_is_exact_and_quiet(dynamic_onnx):
    pytest.importorskip("onnxruntime")
    p = run_cli("compare", dynamic_onnx, "--shape", "x=3,3,16,16", "--json")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "onnxruntime" not in p.stderr and "[W:" not in p.stderr, p.stderr[-3000:]
    import json
    doc = json.loads(p.stdout)
    assert doc["ok"] is True
    (out,) = doc["outputs"]
    assert out["shape"] == [3, 10] and out["expected"] == "onnxruntime"   # held to onnxruntime's output
    assert out["executors"] and all(e["mismatches"] == 0 for e in out["executors"].values())


# ------------------------------------------------------------------------------------------ packaging

def test_pyproject_license_is_an_spdx_string():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    from pathlib import Path
    meta = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
    # A TOML table makes setuptools >= 77 print its deprecation block on every install.
    assert meta["project"]["license"] == "Apache-2.0"
    assert any(r.replace(" ", "") == "setuptools>=77" for r in meta["build-system"]["requires"])


def test_onnx_external_data_beside_the_model_is_read(capsys, tmp_path, dynamic_onnx):
    import onnx
    model = onnx.load(str(dynamic_onnx))
    onnx.save_model(model, str(tmp_path / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").stat().st_size > 0
    p = run_cli("compare", tmp_path / "m.onnx", "--shape", "x=1,3,16,16", "--json")
    assert p.returncode == 0, p.stderr[-3000:]
    import json
    doc = json.loads(p.stdout)
    assert doc["ok"] is True and doc["outputs"][0]["expected"] == "onnxruntime"
    (tmp_path / "weights.bin").unlink()
    code, _, err = cli(capsys, "import", tmp_path / "m.onnx", "--shape", "x=1,3,16,16")
    assert_one_message(code, err, 3, "external data file 'weights.bin' not found next to the model")
