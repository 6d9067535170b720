"""FLOOR_DIV (float32, int32) and SQRT (float32) end to end: byoc.evaluate equals LiteRT BUILTIN_REF bit for bit
and the LLVM CPU build equals byoc.evaluate bit for bit (both ops are exact: IEEE division / square root, and a
floor of the quotient). MoveNet (google-coral/test_data) uses both in its post-processing; it is checked when a
copy sits in ../ext/unseen/coral."""
from __future__ import annotations

import pathlib
import zlib

import numpy as np
import pytest

import byoc
from byoc.errors import ByocError
from byoc.frontend import from_tflite
from byoc.testing import TFLiteWriter

from tflite_oracles import check_against_litert as check, litert_run

pytest.importorskip("ai_edge_litert")


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


@pytest.mark.parametrize("dtype", ("float32", "int32"))
@pytest.mark.parametrize("case", range(3))
def test_floor_div(dtype, case):
    rng = _rng("floor_div", dtype, case)
    w = TFLiteWriter()
    shape = tuple(int(d) for d in rng.integers(1, 6, 3))
    bshape = tuple(1 if rng.random() < 0.5 else d for d in shape)
    w.output(w.floor_div(w.input("a", shape, dtype), w.input("b", bshape, dtype)))

    def inputs(r):
        sign = np.where(r.random(bshape) < 0.5, -1, 1)
        if dtype == "float32":
            return [r.uniform(-50, 50, shape).astype(dtype), (sign * r.uniform(0.1, 7, bshape)).astype(dtype)]
        # Negative dividends and divisors, exact multiples included: floor and truncation differ there.
        a = r.integers(-1000, 1000, shape)
        a[..., 0] = 0
        return [a.astype(dtype), (sign * r.integers(1, 30, bshape)).astype(dtype)]
    check(w.finish(), rng, inputs=inputs, samples=3)


def test_floor_div_int32_extremes_and_constant_divisor():
    w = TFLiteWriter()
    w.output(w.floor_div(w.input("a", (8,), "int32"), np.int32(7)))
    a = np.int32([np.iinfo(np.int32).min, np.iinfo(np.int32).max, -7, -8, -6, 6, 7, 0])
    check(w.finish(), np.random.default_rng(0), inputs=lambda r: [a], samples=1)


def test_floor_div_by_zero_is_an_execution_error_and_uint8_is_refused():
    w = TFLiteWriter()
    w.output(w.floor_div(w.input("a", (3,), "int32"), w.input("b", (3,), "int32")))
    data = w.finish()
    ins = {"a": np.int32([1, 2, 3]), "b": np.int32([1, 0, 1])}
    mod, _ = from_tflite(data)
    exe = byoc.build(mod, target="llvm")
    for run in (lambda: byoc.evaluate(mod, ins), lambda: exe.run(ins)):
        with pytest.raises(byoc.ExecutionError):
            run()
    w = TFLiteWriter()
    a = w.input("a", (3,), "uint8", scale=0.1, zero_point=128)
    w.output(w.floor_div(a, a))
    with pytest.raises(ByocError, match="FLOOR_DIV is supported for float32 and int32"):
        from_tflite(w.finish())


def test_sqrt():
    rng = _rng("sqrt")
    w = TFLiteWriter()
    w.output(w.sqrt(w.input("x", (4, 5, 6), "float32")))

    def inputs(r):
        x = r.uniform(0, 1e4, (4, 5, 6)).astype(np.float32)
        x[0, 0, :3] = (0.0, 1e-38, 3.4e38)
        return [x]
    check(w.finish(), rng, inputs=inputs, samples=3)


def test_quantized_sqrt_is_refused():
    w = TFLiteWriter()
    w.output(w.sqrt(w.input("x", (3,), "int8", scale=0.1, zero_point=0)))
    with pytest.raises(ByocError, match="SQRT is supported for float32 only"):
        from_tflite(w.finish())


_ROOT = pathlib.Path(__file__).resolve().parents[3]   # the checkout; ../ext beside it (or beside a worktree folder)
MOVENET = next((d / "ext" / "unseen" / "coral" / "movenet_single_pose_lightning_ptq.tflite"
                for d in (_ROOT.parent, _ROOT.parent.parent)
                if (d / "ext" / "unseen" / "coral").exists()), _ROOT / "missing.tflite")


@pytest.mark.skipif(not MOVENET.exists(), reason="MoveNet copy not present")
def test_movenet_matches_litert():
    data = MOVENET.read_bytes()
    mod, _ = from_tflite(data)
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = rng.integers(0, 256, (1, 192, 192, 3)).astype(np.uint8)
        (ref,), _ = litert_run(data, [x])
        (out,) = byoc.evaluate(mod, {mod["main"].params[0].name_hint: x})
        assert np.array_equal(out, ref), f"{int((out != ref).sum())}/{ref.size} off"
