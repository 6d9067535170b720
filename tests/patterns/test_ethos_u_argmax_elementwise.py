"""ARG_MAX, TRANSPOSE_CONV, PRELU, SQUARED_DIFFERENCE, MAXIMUM / MINIMUM and unquantized int32 ADD / SUB / MUL
(+ int32 reshapes) on the ``ethos-u`` target:
offloaded under Vela's (Regor's) rules, run on the NPU simulator bit-exact with TFLite Micro (LiteRT's
BUILTIN_REF kernels where TFLite Micro refuses the model: int64 ARG_MAX output, uint8) and with byoc's reference
interpreter under every Ethos-U preset, and timed as Vela's operations.

Expected values come from the reference runtimes; the Vela comparison runs the installed Vela.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.frontend import from_tflite
from byoc.partition import partition_for
from byoc.testing.tflite_writer import TFLiteWriter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "byoc" / "frontend"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from tflite_oracles import litert_run  # noqa: E402
from vela_placement import vela_executable  # noqa: E402

ETHOS_U_PRESETS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256",
                   "ethos-u65-256-shared", "ethos-u65-512", "ethos-u65-512-shared")


def _model(shapes, dtype, build) -> bytes:
    w = TFLiteWriter()
    quant = dtype != "int32"
    xs = [w.input(f"x{i}", s, dtype, scale=0.07 if quant else None,
                  zero_point=(0 if dtype == "int16" else 3) if quant else 0) for i, s in enumerate(shapes)]
    w.output(build(w, *xs))
    return w.finish()


def _oracle(data: bytes, inputs: list[np.ndarray]) -> np.ndarray:
    """TFLite Micro, or LiteRT's reference kernels for what TFLite Micro does not run (int64 ARG_MAX, uint8)."""
    from tflite_micro import runtime
    try:
        it = runtime.Interpreter.from_bytes(data, arena_size=1 << 22)
        for i, v in enumerate(inputs):
            it.set_input(v, i)
        it.invoke()
        return np.array(it.get_output(0))
    except RuntimeError:
        return litert_run(data, inputs)[0][0]


def _inputs(shapes, dtype, seed: int, narrow: bool = False) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    lo, hi = (-3, 3) if narrow else (max(int(info.min), -50000), min(int(info.max), 50000))   # narrow: many ties
    return [rng.integers(lo, hi + 1, size=s).astype(dtype) for s in shapes]


def _check_exact(data: bytes, shapes, dtype, kind: str | list[str], preset: str = "ethos-u55-256",
                 narrow: bool = False):
    mod, params = from_tflite(data, semantics="tflm")
    pm, report = partition_for("ethos-u", mod, params, return_report=True, boundary_rule=False)
    exe = byoc.build(pm, target="ethos-u,llvm", npu_config=preset)
    kinds = [x.kind for p in exe.npu_programs.values() for x in p.layers]
    assert kinds == ([kind] if isinstance(kind, str) else kind), (kinds, [(n.op, n.reason) for n in report.cpu_ops()])
    assert not report.cpu_ops()
    for prog in exe.npu_programs.values():
        prog.validate()
    for seed in range(2):
        xs = _inputs(shapes, dtype, seed, narrow)
        feed = {f"x{i}": x for i, x in enumerate(xs)}
        want = _oracle(data, xs)
        ref = byoc.evaluate(mod, feed)
        ref = ref[0] if isinstance(ref, (list, tuple)) else ref
        np.testing.assert_array_equal(np.asarray(ref), want)
        got = exe.run(feed)[0]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


# -- bit-exact ------------------------------------------------------------------------------------------------

_ARGMAX = [((1, 9, 10, 21), "int8", "int32"), ((1, 9, 10, 21), "int8", "int64"), ((1, 6, 5, 127), "int8", "int32"),
           ((4, 33), "int8", "int32"), ((2, 7, 13), "uint8", "int32"), ((1, 48, 64, 21), "int8", "int64")]


@pytest.mark.parametrize("shape,dtype,out", _ARGMAX, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
def test_argmax_runs_on_the_npu_bit_exact(shape, dtype, out):
    data = _model([shape], dtype, lambda w, x: w.arg_max(x, len(shape) - 1, output_type=out))
    _check_exact(data, [shape], dtype, "argmax")
    _check_exact(data, [shape], dtype, "argmax", narrow=True)   # ties: the first index wins


@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_argmax_and_raw_elementwise_are_exact_under_every_ethos_u_preset(preset):
    data = _model([(1, 20, 24, 21)], "int8", lambda w, x: w.arg_max(x, 3, output_type="int64"))
    _check_exact(data, [(1, 20, 24, 21)], "int8", "argmax", preset)
    data = _model([(1, 20, 24, 16), (1, 1, 1, 16)], "int8", lambda w, x, y: w.maximum(x, y))
    _check_exact(data, [(1, 20, 24, 16), (1, 1, 1, 16)], "int8", "raw_binary", preset)
    data = _model([(1, 1, 24, 1), (1, 20, 24, 16)], "int32", lambda w, x, y: w.sub(x, y))
    _check_exact(data, [(1, 1, 24, 1), (1, 20, 24, 16)], "int32", "raw_binary", preset)


_RAW = {
    "maximum": ([(1, 9, 10, 21), (1, 9, 10, 21)], "int8", lambda w, x, y: w.maximum(x, y)),
    "maximum broadcast first": ([(1, 1, 1, 21), (1, 9, 10, 21)], "int8", lambda w, x, y: w.maximum(x, y)),
    "minimum": ([(3, 40), (3, 40)], "int8", lambda w, x, y: w.minimum(x, y)),
    "minimum uint8 row": ([(1, 8, 12, 5), (1, 8, 1, 5)], "uint8", lambda w, x, y: w.minimum(x, y)),
    "maximum int16": ([(1, 6, 7, 9), (1, 6, 7, 9)], "int16", lambda w, x, y: w.maximum(x, y)),
    "add int32": ([(1, 9, 10, 21), (1, 9, 10, 1)], "int32", lambda w, x, y: w.add(x, y)),
    "sub int32": ([(1, 9, 10, 21), (1, 9, 10, 21)], "int32", lambda w, x, y: w.sub(x, y)),
    "sub int32 broadcast first": ([(1, 1, 1, 21), (1, 9, 10, 21)], "int32", lambda w, x, y: w.sub(x, y)),
    "mul int32": ([(2, 17), (2, 17)], "int32", lambda w, x, y: w.mul(x, y)),
    "mul int32 scalar": ([(1, 5, 6, 7), (1,)], "int32", lambda w, x, y: w.mul(x, y)),
}


@pytest.mark.parametrize("case", list(_RAW))
def test_raw_elementwise_runs_on_the_npu_bit_exact(case):
    shapes, dtype, build = _RAW[case]
    _check_exact(_model(shapes, dtype, build), shapes, dtype, "raw_binary")


def test_int32_products_wrap_as_tflite_does():
    """int32 MUL whose products leave int32: the NPU wraps them as TFLite's kernels (and byoc.evaluate) do."""
    data = _model([(1, 4, 4, 8), (1, 4, 4, 8)], "int32", lambda w, x, y: w.mul(x, y))
    mod, params = from_tflite(data, semantics="tflm")
    exe = byoc.build(partition_for("ethos-u", mod, params, boundary_rule=False), target="ethos-u,llvm")
    rng = np.random.default_rng(3)
    xs = [rng.integers(-2 ** 31, 2 ** 31, size=(1, 4, 4, 8)).astype(np.int32) for _ in range(2)]
    want = _oracle(data, xs)
    assert np.any(xs[0].astype(np.int64) * xs[1] != want)   # the test exercises the wrap
    np.testing.assert_array_equal(exe.run({"x0": xs[0], "x1": xs[1]})[0], want)


def test_int32_reshapes_around_int32_arithmetic_stay_on_the_npu():
    def build(w, x, y):
        return w.reshape(w.mul(w.reshape(x, (1, 4, 34)), w.reshape(y, (1, 4, 34))), (8, 17))
    data = _model([(8, 17), (8, 17)], "int32", build)
    mod, params = from_tflite(data, semantics="tflm")
    pm, report = partition_for("ethos-u", mod, params, return_report=True, boundary_rule=False)
    assert not report.cpu_ops(), [(n.op, n.reason) for n in report.cpu_ops()]
    exe = byoc.build(pm, target="ethos-u,llvm")
    xs = _inputs([(8, 17), (8, 17)], "int32", 0)
    np.testing.assert_array_equal(exe.run({"x0": xs[0], "x1": xs[1]})[0], _oracle(data, xs))


def test_a_lone_int32_reshape_partition_is_a_copy():
    data = _model([(4, 34)], "int32", lambda w, x: w.reshape(x, (1, 8, 17)))
    mod, params = from_tflite(data, semantics="tflm")
    pm = partition_for("ethos-u", mod, params, boundary_rule=False, inline_non_mac=False)
    exe = byoc.build(pm, target="ethos-u,llvm")
    assert [x.kind for p in exe.npu_programs.values() for x in p.layers] == ["copy"]
    x = _inputs([(4, 34)], "int32", 1)[0]
    np.testing.assert_array_equal(exe.run({"x0": x})[0], x.reshape(1, 8, 17))


def _prelu(alpha_shape, dtype="int8", high=False):
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    zp = 2 if dtype == "int8" else 128
    alpha = rng.integers(zp - 100, zp + (127 if high else 100), size=alpha_shape).astype(dtype)   # high: some > 1
    return lambda w, x: w.prelu(x, alpha, alpha_scale=0.01, alpha_zp=zp, out_scale=0.05,
                                out_zp=-1 if dtype == "int8" else 100)


_QBINARY = {
    "prelu per-channel alpha": ([(1, 9, 10, 21)], "int8", _prelu((1, 1, 21)), "prelu"),
    "prelu full alpha": ([(1, 9, 10, 21)], "int8", _prelu((9, 10, 21), high=True), "prelu"),
    "prelu uint8": ([(1, 9, 10, 21)], "uint8", _prelu((21,), "uint8"), "prelu"),
    "prelu large": ([(1, 40, 48, 32)], "int8", _prelu((1, 1, 32), high=True), "prelu"),
    "squared_difference": ([(1, 9, 10, 21), (1, 9, 10, 21)], "int8",
                           lambda w, x, y: w.squared_difference(x, y, out_scale=0.2, out_zp=-100), "squared_diff"),
    "squared_difference broadcast first": ([(1, 1, 1, 21), (1, 9, 10, 21)], "int8",
                                           lambda w, x, y: w.squared_difference(x, y, out_scale=0.2, out_zp=-100),
                                           "squared_diff"),
}


@pytest.mark.parametrize("case", list(_QBINARY))
def test_prelu_and_squared_difference_run_on_the_npu_bit_exact(case):
    shapes, dtype, build, kind = _QBINARY[case]
    _check_exact(_model(shapes, dtype, build), shapes, dtype, kind)


@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_prelu_and_squared_difference_are_exact_under_every_ethos_u_preset(preset):
    for case in ("prelu large", "squared_difference broadcast first"):
        shapes, dtype, build, kind = _QBINARY[case]
        _check_exact(_model(shapes, dtype, build), shapes, dtype, kind, preset)


def _tconv(shape, out_shape, kernel, strides, padding, dtype="int8", seed=1):
    cout, cin = out_shape[-1], shape[-1]
    rng = np.random.default_rng(seed)
    if dtype == "int8":   # per-channel weight scales
        wt, wzp, ws = rng.integers(-127, 128, size=(cout, *kernel, cin)).astype(np.int8), 0, \
            np.linspace(0.004, 0.02, cout).astype(np.float32)
    else:                 # uint8: per-tensor, weight zero point 128
        wt, wzp, ws = rng.integers(0, 256, size=(cout, *kernel, cin)).astype(np.uint8), 128, 0.01
    bias = rng.integers(-3000, 3000, size=cout).astype(np.int32)
    return lambda w, x: w.transpose_conv(x, wt, out_shape, bias, strides=strides, padding=padding, weight_scale=ws,
                                         weight_zp=wzp, out_scale=0.5, out_zp=-3 if dtype == "int8" else 7)


_TCONV = {
    "2x2 SAME 3x3": ((1, 5, 6, 8), (1, 10, 12, 4), (3, 3), (2, 2), "SAME"),
    "2x2 VALID 3x3": ((1, 5, 6, 8), (1, 11, 13, 4), (3, 3), (2, 2), "VALID"),
    "1x1 SAME 3x3": ((1, 7, 6, 3), (1, 7, 6, 5), (3, 3), (1, 1), "SAME"),
    "2x2 SAME 4x4": ((1, 4, 4, 16), (1, 8, 8, 8), (4, 4), (2, 2), "SAME"),
    "width only 2x": ((1, 1, 12, 8), (1, 1, 24, 8), (1, 3), (1, 2), "SAME"),
    "height only 2x": ((1, 12, 1, 8), (1, 24, 1, 8), (3, 1), (2, 1), "SAME"),
    "2x2 VALID 2x2": ((1, 8, 8, 8), (1, 16, 16, 8), (2, 2), (2, 2), "VALID"),
    "large 2x2 SAME": ((1, 24, 20, 32), (1, 48, 40, 24), (3, 3), (2, 2), "SAME"),
}


@pytest.mark.parametrize("case", list(_TCONV))
def test_transpose_conv_runs_on_the_npu_bit_exact(case):
    shape, out_shape, kernel, strides, padding = _TCONV[case]
    data = _model([shape], "int8", _tconv(shape, out_shape, kernel, strides, padding))
    _check_exact(data, [shape], "int8", "conv")


def test_uint8_transpose_conv_is_exact_against_litert():
    shape, out_shape = (1, 5, 6, 8), (1, 10, 12, 4)
    data = _model([shape], "uint8", _tconv(shape, out_shape, (3, 3), (2, 2), "SAME", "uint8"))
    _check_exact(data, [shape], "uint8", "conv")


@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_transpose_conv_is_exact_under_every_ethos_u_preset(preset):
    shape, out_shape, kernel, strides, padding = _TCONV["large 2x2 SAME"]
    data = _model([shape], "int8", _tconv(shape, out_shape, kernel, strides, padding))
    _check_exact(data, [shape], "int8", "conv", preset)


def _tconv16(shape, out_shape, kernel, strides, padding, bias_bits=24, activation="NONE", seed=2) -> bytes:
    """An int16x8 TRANSPOSE_CONV (SEANet's form): int16 activations with zero point 0, int8 per-channel weights,
    an int64 bias up to ``bias_bits`` wide."""
    cout, cin = out_shape[-1], shape[-1]
    rng = np.random.default_rng(seed)
    wt = rng.integers(-127, 128, size=(cout, *kernel, cin)).astype(np.int8)
    ws = np.linspace(0.004, 0.02, cout).astype(np.float32)
    bias = rng.integers(-(1 << (bias_bits - 1)), 1 << (bias_bits - 1), size=cout).astype(np.int64)
    w = TFLiteWriter()
    x = w.input("x0", shape, "int16", scale=0.001, zero_point=0)
    w.output(w.transpose_conv(x, wt, out_shape, bias, strides=strides, padding=padding, weight_scale=ws,
                              activation=activation, out_scale=0.05, out_zp=0))
    return w.finish()


_TCONV16 = {
    "2x2 SAME 3x3": ((1, 5, 6, 8), (1, 10, 12, 4), (3, 3), (2, 2), "SAME", 24, "NONE"),
    "seanet 2x2 VALID 4x4": ((1, 1, 40, 32), (1, 4, 82, 16), (4, 4), (2, 2), "VALID", 24, "NONE"),
    "1x1 SAME relu": ((1, 7, 6, 3), (1, 7, 6, 5), (3, 3), (1, 1), "SAME", 24, "RELU"),
    "40-bit bias": ((1, 4, 4, 16), (1, 8, 8, 8), (4, 4), (2, 2), "SAME", 40, "NONE"),
}


@pytest.mark.parametrize("case", list(_TCONV16))
def test_int16x8_transpose_conv_runs_on_the_npu_bit_exact(case):
    shape, *rest = _TCONV16[case]
    _check_exact(_tconv16(shape, *rest), [shape], "int16", "conv")


@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_int16x8_transpose_conv_is_exact_under_every_ethos_u_preset(preset):
    shape, *rest = _TCONV16["seanet 2x2 VALID 4x4"]
    _check_exact(_tconv16(shape, *rest), [shape], "int16", "conv", preset)


def test_int16x8_transpose_conv_with_a_bias_beyond_40_bits_stays_on_the_cpu():
    why = _cpu_reason(_tconv16((1, 4, 4, 16), (1, 8, 8, 8), (4, 4), (2, 2), "SAME", bias_bits=44),
                      "qnn.conv2d_transpose")
    assert "within 40 bits" in why and "found int64 values" in why


def test_upscaled_loads_read_only_their_source_pixels():
    """The IFM of a stride-2 TRANSPOSE_CONV crosses the DMA once, at its own size (Vela's upscaling is on chip)."""
    shape, out_shape, kernel, strides, padding = _TCONV["large 2x2 SAME"]
    data = _model([shape], "int8", _tconv(shape, out_shape, kernel, strides, padding))
    mod, params = from_tflite(data, semantics="tflm")
    exe = byoc.build(partition_for("ethos-u", mod, params, boundary_rule=False), target="ethos-u,llvm")
    (prog,) = exe.npu_programs.values()
    from npu_sim.cost import dma_command_cost
    from npu_sim.isa import LOAD_UPSCALE_H, LOAD_UPSCALE_W, Load, TileKind
    loads = [c for c in prog.commands if isinstance(c, Load) and c.kind == TileKind.IFM]
    assert loads and all(c.pad & LOAD_UPSCALE_H and c.pad & LOAD_UPSCALE_W for c in loads)
    for c in loads:   # a window of the 2x map holds about a quarter of its pixels from the source
        moved = dma_command_cost(prog.config, c)[0]
        assert moved <= (c.h // 2 + 1) * (c.w // 2 + 1) * c.c < c.h * c.w * c.c / 2, (moved, c)


def test_vela_picks_the_same_transpose_convs_as_in_seanet():
    """SEANet's decoder (/work/ext/unseen/seanet, int16): Vela offloads only its 2x2-stride transpose conv; the
    others upsample width by 2 under a kernel 3 high. The same shapes in int8 get the same answers."""
    cases = [((1, 1, 5, 64), (1, 3, 12, 64), (3, 4), (1, 2), False),
             ((1, 1, 40, 32), (1, 4, 82, 16), (4, 4), (2, 2), True),
             ((1, 2, 80, 16), (1, 4, 162, 8), (3, 4), (1, 2), False)]
    for shape, out_shape, kernel, strides, on_npu in cases:
        data = _model([shape], "int8", _tconv(shape, out_shape, kernel, strides, "VALID"))
        mod, params = from_tflite(data, semantics="tflm")
        _, report = partition_for("ethos-u", mod, params, return_report=True, boundary_rule=False)
        cpu = [n for n in report.cpu_ops() if "qnn.conv2d_transpose" in (n.op, *n.inner_ops)]
        assert bool(cpu) != on_npu, (shape, [n.reason for n in cpu])
        if cpu:
            assert "Vela's TRANSPOSE_CONV stride rule" in cpu[0].reason and "found strides (1, 2)" in cpu[0].reason


_PACK = {"movenet (1,17)x2 axis 2": ([(1, 17)] * 2, "int8", 2), "rows axis 1": ([(1, 17)] * 2, "int8", 1),
         "3-D axis 0": ([(4, 5, 6)] * 3, "int8", 0), "int16 last axis": ([(4, 5, 6)] * 3, "int16", 3),
         "uint8 vectors": ([(7,)] * 3, "uint8", 1), "4-D middle": ([(1, 6, 5)] * 4, "int8", 2)}


@pytest.mark.parametrize("case", list(_PACK))
def test_pack_runs_on_the_npu_as_copies_bit_exact(case):
    shapes, dtype, axis = _PACK[case]
    data = _model(shapes, dtype, lambda w, *xs: w.pack(list(xs), axis))
    _check_exact(data, shapes, dtype, ["copy"] * len(shapes))


@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_pack_is_exact_under_every_ethos_u_preset(preset):
    shapes, dtype, axis = _PACK["4-D middle"]
    _check_exact(_model(shapes, dtype, lambda w, *xs: w.pack(list(xs), axis)), shapes, dtype, ["copy"] * 4, preset)


def test_pack_outside_the_rules_stays_on_the_cpu():
    why = _cpu_reason(_model([(2, 3, 4)] * 2, "int8", lambda w, *xs: w.pack(list(xs), 1)), "stack")
    assert "Vela's PACK" in why and "batch 2 interleaves" in why
    why = _cpu_reason(_model([(2, 3, 4, 5)] * 2, "int8", lambda w, *xs: w.pack(list(xs), 0)), "stack")
    assert "found rank 5" not in why and "the output has rank 5" in why


def _both_broadcast(shapes, dtype, op) -> bytes:
    """A quantized binary op whose operands both broadcast (MoveNet's (48,48,1) − (1,17) → (48,48,17))."""
    scales, zps = (0.18, 0.21, 0.39), {"int8": (-128, -128, 10), "uint8": (3, 0, 130), "int16": (0, 0, 0)}[dtype]
    w = TFLiteWriter()
    xs = [w.input(f"x{i}", s, dtype, scale=scales[i], zero_point=zps[i]) for i, s in enumerate(shapes)]
    w.output(getattr(w, op)(xs[0], xs[1], out_scale=scales[2], out_zp=zps[2]))
    return w.finish()


_BOTH = {"movenet sub": ([(48, 48, 1), (1, 17)], "int8", "sub"),
         "sub reversed": ([(1, 17), (48, 48, 1)], "int8", "sub"),
         "add 4-D": ([(1, 5, 1, 7), (1, 1, 6, 1)], "int8", "add"),
         "mul 3-D": ([(4, 1, 3), (1, 5, 1)], "int8", "mul"),
         "uint8 add": ([(6, 1), (1, 9)], "uint8", "add"),
         "int16 sub": ([(6, 1), (1, 9)], "int16", "sub")}


@pytest.mark.parametrize("case", list(_BOTH))
def test_both_broadcast_binary_ops_materialise_one_operand_bit_exact(case):
    shapes, dtype, op = _BOTH[case]
    _check_exact(_both_broadcast(shapes, dtype, op), shapes, dtype,
                 ["raw_binary", "mul" if op == "mul" else "add"])


@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_both_broadcast_sub_is_exact_under_every_ethos_u_preset(preset):
    shapes, dtype, op = _BOTH["movenet sub"]
    _check_exact(_both_broadcast(shapes, dtype, op), shapes, dtype, ["raw_binary", "add"], preset)


def test_both_broadcast_stays_on_the_cpu_for_the_npu_target():
    shapes, dtype, op = _BOTH["movenet sub"]
    mod, params = from_tflite(_both_broadcast(shapes, dtype, op), semantics="tflm")
    _, report = partition_for("npu", mod, params, return_report=True)
    assert [n for n in report.cpu_ops() if "qnn.subtract" in (n.op, *n.inner_ops)]   # the npu target: unchanged


# -- outside Vela's rules: on the CPU, every failed rule named --------------------------------------------------

def _cpu_reason(data: bytes, op: str) -> str:
    mod, params = from_tflite(data, semantics="tflm")
    _, report = partition_for("ethos-u", mod, params, return_report=True, boundary_rule=False)
    (node,) = [n for n in report.cpu_ops() if op in (n.op, *n.inner_ops)]
    return node.reason


def test_ops_outside_the_rules_stay_on_the_cpu_with_each_failed_rule():
    why = _cpu_reason(_model([(1, 4, 4, 128)], "int8", lambda w, x: w.arg_max(x, 3)), "argmax")
    assert "at most 127" in why and "found depth 128" in why
    why = _cpu_reason(_model([(1, 4, 5, 6)], "int8", lambda w, x: w.arg_max(x, 1)), "argmax")
    assert "along the depth (last) axis" in why
    why = _cpu_reason(_model([(1, 4, 5, 6)], "int16", lambda w, x: w.arg_max(x, 3)), "argmax")
    assert "input dtype is int8 or uint8" in why and "int16" in why
    # Regor's ARG_MAX rule wants the axes before H, W, C to be 1 (Vela 5.2 stops with "Non-passthrough
    # operation (ArgMax) could not run on NPU" on a batch of 2)
    why = _cpu_reason(_model([(2, 4, 4, 8)], "int8", lambda w, x: w.arg_max(x, 3)), "argmax")
    assert "batch size 1" in why and "found batch 2" in why
    why = _cpu_reason(_model([(1, 4, 5, 6), (1, 4, 5, 6)], "int32", lambda w, x, y: w.maximum(x, y)), "maximum")
    assert "no 32-bit MAXIMUM/MINIMUM" in why and "found int32" in why
    why = _cpu_reason(_model([(1, 5, 6, 8)], "int8", _tconv((1, 5, 6, 8), (1, 9, 11, 4), (3, 3), (2, 2), "VALID")),
                      "qnn.conv2d_transpose")
    assert "Vela's TRANSPOSE_CONV shape rule" in why and "found input 5x6 → output 9x11" in why
    why = _cpu_reason(_model([(1, 1, 1, 6)], "int8", _prelu((1, 4, 5, 6))), "qnn.prelu")
    assert "alpha broadcasts over the input" in why and "found input (1, 1, 1, 6) → output (1, 4, 5, 6)" in why
    why = _cpu_reason(_model([(1, 4, 1, 6), (1, 1, 5, 6)], "int32", lambda w, x, y: w.add(x, y)), "add")
    assert "IFM2 broadcast" in why and "neither input has the output's shape" in why


def test_the_rules_are_listed_and_the_lowered_ops_are_no_longer_vela_differences():
    from patterns.ethos_u import VELA_DIFFERENCES
    assert not VELA_DIFFERENCES   # every op Vela offloads has a lowering
    import subprocess
    out = subprocess.run([sys.executable, "-m", "byoc.cli", "patterns", "ethos-u"], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], timeout=300)
    assert out.returncode == 0, out.stderr
    for text in ("ARG_MAX", "at most 127", "TRANSPOSE_CONV", "Vela's TRANSPOSE_CONV stride rule", "the depth (last) axis", "no 32-bit MAXIMUM/MINIMUM",
                 "TFLite's unquantized int32 arithmetic"):
        assert text in out.stdout, text


# -- timing -----------------------------------------------------------------------------------------------------

def test_argmax_cycles_grow_with_the_tensor_and_add_up_over_tiles():
    from npu_sim import PRESETS
    from npu_sim.cost import argmax_cycles, ppu_cycles
    from npu_sim.isa import PpuOp
    cfg = PRESETS["ethos-u55-256"]
    assert argmax_cycles(cfg, 100, 10) < argmax_cycles(cfg, 100, 100) < argmax_cycles(cfg, 1000, 100)
    assert argmax_cycles(cfg, 100, 10, 4) < argmax_cycles(cfg, 100, 10, 8)
    whole = argmax_cycles(cfg, 64, 21)
    halves = sum(ppu_cycles(cfg, PpuOp.ARGMAX, 32, 1, 1, 32, 1, 21, whole=(64,)) for _ in range(2))
    assert whole <= halves <= whole + 1


def _vela_rows(model: Path, out: Path, accelerator: str = "ethos-u55-256") -> list[dict]:
    import csv
    import subprocess
    subprocess.run([vela_executable(), str(model), "--accelerator-config", accelerator, "--output-dir",
                    str(out), "--verbose-performance"], check=True, capture_output=True, timeout=600)
    with open(out / f"{model.stem}_per-layer.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("shape,accelerator", [
    ((1, 64, 64, 21), "ethos-u55-256"),    # one pool op of 4096 rows, MAC-bound
    ((1, 64, 64, 21), "ethos-u55-32"),     # the same op bound by re-reading its IFM blocks per sub-kernel
    ((1, 257, 257, 7), "ethos-u55-256"),   # 66049 rows: past Regor's 65536, one op per 4-row block (+ a 1-row one)
    ((1, 300, 300, 3), "ethos-u55-64"),
])
def test_argmax_max_pool_step_matches_vela(shape, accelerator, tmp_path):
    """The max pool step of Regor's ARG_MAX lowering, against the MaxPool rows of Vela's per-layer CSV."""
    if vela_executable() is None:
        pytest.skip("vela (ethos-u-vela) is not installed")
    from npu_sim import PRESETS
    from npu_sim.cost import argmax_pool_cycles
    path = tmp_path / "argmax.tflite"
    path.write_bytes(_model([shape], "int8", lambda w, x: w.arg_max(x, 3)))
    pools = [int(float(r["Op Cycles"])) for r in _vela_rows(path, tmp_path, accelerator)
             if r["NNG Operator"] == "MaxPool"]
    rows = shape[1] * shape[2]
    assert len(pools) == (1 if rows <= 65536 else -(-rows // 4))
    ours, last = argmax_pool_cycles(PRESETS[accelerator], rows, shape[3])
    assert abs(ours / sum(pools) - 1) <= 0.02, (ours, sum(pools))
    assert abs(last / pools[-1] - 1) <= 0.02, (last, pools[-1])


def _vela_cycles(model: Path, out: Path) -> int:
    import csv
    import subprocess
    subprocess.run([vela_executable(), str(model), "--accelerator-config", "ethos-u55-256", "--output-dir",
                    str(out), "--verbose-performance"], check=True, capture_output=True, timeout=600)
    with open(out / f"{model.stem}_per-layer.csv", newline="") as f:
        return sum(int(float(r["Op Cycles"])) for r in csv.DictReader(f) if r["Target"] == "NPU")


@pytest.mark.parametrize("name,shapes,dtype,build,band", [
    ("argmax", [(1, 64, 64, 21)], "int8", lambda w, x: w.arg_max(x, 3), 0.1),
    ("transpose_conv", [(1, 16, 16, 32)], "int8", _tconv((1, 16, 16, 32), (1, 32, 32, 16), (3, 3), (2, 2), "SAME"),
     0.2),
    ("transpose_conv_4x4", [(1, 8, 8, 64)], "int8", _tconv((1, 8, 8, 64), (1, 16, 16, 32), (4, 4), (2, 2), "SAME"),
     0.2),
    ("argmax_int64", [(1, 32, 40, 100)], "int8", lambda w, x: w.arg_max(x, 3, output_type="int64"), 0.1),
    # 66049 rows: Regor cuts the max pool into 16513 ops, each paying its block latencies (was 0.78 of Vela)
    ("argmax_past_max_dim", [(1, 257, 257, 7)], "int8", lambda w, x: w.arg_max(x, 3), 0.05),
    ("maximum_int16", [(1, 32, 32, 16), (1, 32, 32, 16)], "int16", lambda w, x, y: w.maximum(x, y), 0.2),
    ("prelu_alpha_at_most_1", [(1, 64, 64, 16)], "int8", _prelu((1, 1, 16)), 0.1),
    ("prelu_alpha_above_1", [(1, 32, 32, 32)], "int8", _prelu((1, 1, 32), high=True), 0.1),
    ("prelu_full_alpha", [(1, 32, 32, 16)], "int8", _prelu((32, 32, 16), high=True), 0.1),
    ("squared_difference", [(1, 32, 32, 16), (1, 1, 1, 16)], "int8",
     lambda w, x, y: w.squared_difference(x, y, out_scale=0.2, out_zp=-100), 0.1),
    ("add_int32", [(1, 32, 32, 16), (1, 32, 32, 16)], "int32", lambda w, x, y: w.add(x, y), 0.2),
    ("mul_int32", [(1, 32, 32, 16), (1, 32, 32, 16)], "int32", lambda w, x, y: w.mul(x, y), 0.2),
], ids=lambda v: v if isinstance(v, str) else None)
def test_layer_cycles_are_close_to_vela(name, shapes, dtype, build, band, tmp_path):
    if vela_executable() is None:
        pytest.skip("vela (ethos-u-vela) is not installed")
    import npu_sim
    data = _model(shapes, dtype, build)
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    vela = _vela_cycles(path, tmp_path)
    mod, params = from_tflite(data, semantics="tflm")
    exe = byoc.build(partition_for("ethos-u", mod, params, boundary_rule=False), target="ethos-u,llvm")
    (prog,) = exe.npu_programs.values()
    _, st = npu_sim.simulate(prog, {b.name: np.zeros(b.shape, b.dtype) for b in prog.inputs})
    ours = sum(s.exclusive_cycles for s in st.per_layer)
    assert 1 - band <= ours / vela <= 1 + band, (ours, vela)
