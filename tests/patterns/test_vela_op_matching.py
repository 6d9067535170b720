"""Pairing Vela's CPU operators with the model's (``benchmarks.bench_npu.match_ops``), used by the placement
table and ``vela_placement.py``. Vela writes every unnamed tensor as '<unnamed>', so names alone made the table
count all of keyword_scrambled's operators as NPU operators (Vela itself reports 8 of 15 on the CPU)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.bench_npu import OpSig, _op_sigs, match_ops
from byoc.testing.tflite_writer import TFLiteWriter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vela_placement import vela_cpu_ops, vela_executable  # noqa: E402

UNSEEN = Path("/work/ext/unseen")


def _unnamed_model() -> bytes:
    """FC, QUANTIZE→int32, QUANTIZE→int8, FC, QUANTIZE→int32, every tensor unnamed and every output 1x16: only
    the int32 QUANTIZEs (operators 1 and 4) are outside Vela's supported data types."""
    rng = np.random.default_rng(0)
    w = TFLiteWriter()
    x = w.input("", (1, 16), "int8", scale=0.05, zero_point=-3)

    def fc(v):
        return w.fully_connected(v, rng.integers(-127, 128, (16, 16)).astype(np.int8),
                                 rng.integers(-100, 100, 16).astype(np.int32), weight_scale=0.01, out_scale=0.1,
                                 out_zp=0, name="")
    a = fc(x)
    b = w.quantize(a, out_scale=0.01, out_zp=0, out_dtype="int32", name="")
    c = w.quantize(a, out_scale=0.02, out_zp=0, out_dtype="int8", name="")
    e = w.quantize(fc(c), out_scale=0.01, out_zp=0, out_dtype="int32", name="")
    w.output(b, e)
    return w.finish()


def test_unnamed_operators_pair_by_their_tensor_facts_not_by_order_alone():
    sigs = _op_sigs(_unnamed_model())
    assert [s.name for s in sigs] == [None] * 5
    # what Vela's file holds for its CPU operators: the same tensors, renamed '<unnamed>'
    vela = [OpSig("<unnamed>", s.opcode, s.shape, s.dtype, s.detail) for s in (sigs[1], sigs[4])]
    assert match_ops(sigs, vela) == {0: 1, 1: 4}


def test_named_operators_pair_by_name_even_out_of_order():
    sigs = [_sig(n, "ADD") for n in ("a", "b", "c")]
    assert match_ops(sigs, [sigs[2], sigs[0]]) == {0: 2, 1: 0}


def test_a_repeated_name_falls_back_to_order_of_occurrence():
    sigs = [_sig("same", "ADD"), _sig("same", "MUL"), _sig("same", "ADD")]
    assert match_ops(sigs, [_sig("same", "ADD"), _sig("same", "ADD")]) == {0: 0, 1: 2}


def _sig(name, opcode):
    return OpSig(name, opcode, (1, 4), "int8")


def _vela_cpu_count(model: Path, out: Path) -> int:
    exe = vela_executable()
    if exe is None:
        pytest.skip("vela is not installed")
    run = subprocess.run([exe, str(model), "--accelerator-config", "ethos-u55-256", "--output-dir", str(out)],
                         check=True, capture_output=True, text=True, timeout=600)
    return int(re.search(r"CPU operators = (\d+)", run.stdout).group(1))


def test_vela_cpu_operators_of_an_unnamed_model(tmp_path):
    model = tmp_path / "unnamed.tflite"
    model.write_bytes(_unnamed_model())
    n = _vela_cpu_count(model, tmp_path / "count")
    cpu = vela_cpu_ops(model, tmp_path / "vela")
    assert n == 2
    assert cpu == {_out_name(model, 1), _out_name(model, 4)}


def _out_name(model: Path, i: int) -> str:
    from byoc.frontend.tflite_context import tensor_name
    from byoc.frontend.tflite_reader import read_model
    m = read_model(model.read_bytes())
    return tensor_name(m.tensors[m.operators[i].outputs[0]])


@pytest.mark.parametrize("stem", ["keyword_scrambled", "keyword_scrambled_8bit"])
def test_keyword_scrambled_cpu_operators_match_velas_count(stem, tmp_path):
    model = UNSEEN / f"{stem}.tflite"
    if not model.exists():
        pytest.skip(f"{model} is not present (benchmarks/unseen_models.md)")
    n = _vela_cpu_count(model, tmp_path / "count")
    cpu = vela_cpu_ops(model, tmp_path / "vela")
    names = [_out_name(model, i) for i in range(15)]
    codes = [s.opcode for s in _op_sigs(model.read_bytes())]
    assert len(cpu) == n == 8
    assert sorted(codes[names.index(c)] for c in cpu) == ["QUANTIZE"] + ["SVDF"] * 7
    assert names[-1] in cpu and names[0] not in cpu   # the int32 QUANTIZE at the end, not the int16→int8 one
