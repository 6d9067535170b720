"""SOFTMAX, TRANSPOSE and RESIZE_* on the ``ethos-u`` target: offloaded under Vela's (Regor's) rules, lowered on
the NPU simulator bit-exact with TFLite Micro (int8) or LiteRT's reference kernels (uint8 / int16, which TFLite
Micro does not run) and with byoc's reference interpreter, and timed as Vela's operation sequences.

Expected values come from the reference runtimes; the Vela comparison runs the installed Vela.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.cli.cmd_model import give_back_policies
from byoc.frontend import from_tflite
from byoc.partition import partition_for
from byoc.testing.tflite_writer import TFLiteWriter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "byoc" / "frontend"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from tflite_oracles import litert_run  # noqa: E402
from vela_placement import vela_executable  # noqa: E402


def tflm_run(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    from tflite_micro import runtime
    it = runtime.Interpreter.from_bytes(data, arena_size=1 << 20)   # room for the larger tensors here
    for i, v in enumerate(inputs):
        it.set_input(v, i)
    it.invoke()
    return [np.array(it.get_output(0))]


def _model(shape, dtype, build) -> bytes:
    w = TFLiteWriter()
    x = w.input("x", shape, dtype, scale=0.07, zero_point=0 if dtype == "int16" else 3)
    w.output(build(w, x))
    return w.finish()


def _offload(data: bytes):
    mod, params = from_tflite(data, semantics="tflm")
    pm, report = partition_for("ethos-u", mod, params, return_report=True)
    exe = byoc.build(pm, target="ethos-u,llvm")
    kinds = [x.kind for p in exe.npu_programs.values() for x in p.layers]
    return mod, report, exe, kinds


def _inputs(shape, dtype, seed=0) -> list[np.ndarray]:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    out = [rng.integers(info.min, int(info.max) + 1, size=shape).astype(dtype)]
    if dtype != "int16" and int(np.prod(shape)) >= 256:   # every 8-bit value once
        every = np.resize(np.arange(info.min, int(info.max) + 1), int(np.prod(shape))).astype(dtype)
        out.append(every.reshape(shape))
    return out


def _check_exact(data: bytes, shape, dtype, kind: str, min_tiles: int = 1):
    from npu_sim.isa import Ppu
    mod, report, exe, kinds = _offload(data)
    (prog,) = exe.npu_programs.values()
    assert sum(isinstance(c, Ppu) for c in prog.commands) >= min_tiles   # large tensors: many tiles, each exact
    assert kinds == [kind], (kinds, [(n.op, n.reason) for n in report.cpu_ops()])
    assert not report.cpu_ops()
    for x in _inputs(shape, dtype):
        got = exe.run({"x": x})[0]
        want = tflm_run(data, [x])[0] if dtype == "int8" else litert_run(data, [x])[0][0]
        ref = byoc.evaluate(mod, {"x": x})
        ref = ref[0] if isinstance(ref, (list, tuple)) else ref
        np.testing.assert_array_equal(np.asarray(ref), want)
        np.testing.assert_array_equal(got, want)


# -- bit-exact ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,beta,dtype", [((1, 10), 1.0, "int8"), ((1, 3, 5, 40), 0.5, "int8"),
                                              ((4, 1000), 1.0, "int8"), ((2, 7), 1.0, "uint8"),
                                              ((1, 48, 48, 32), 1.0, "int8"),
                                              ((1, 1, 1, 12), 2.0, "uint8")])
def test_softmax_runs_on_the_npu_bit_exact(shape, beta, dtype):
    data = _model(shape, dtype, lambda w, x: w.softmax(x, beta=beta))
    _check_exact(data, shape, dtype, "softmax", min_tiles=4 if int(np.prod(shape)) > 30000 else 1)


@pytest.mark.parametrize("shape,perm,dtype", [
    ((1, 3, 24, 20), (0, 2, 3, 1), "int8"),      # NWCH: MobileNetV2's NCHW → NHWC input
    ((1, 5, 24, 20), (0, 2, 1, 3), "int8"),      # NWHC
    ((1, 6, 9, 20), (0, 1, 3, 2), "int8"),       # NHCW
    ((1, 6, 9, 20), (0, 3, 1, 2), "int8"),       # NCHW
    ((17, 33), (1, 0), "int8"),
    ((7, 9, 11), (2, 0, 1), "uint8"),
    ((1, 1, 5, 7), (0, 1, 3, 2), "int8"),
    ((1, 3, 24, 20), (0, 2, 3, 1), "int16"),
    ((1, 3, 112, 112), (0, 2, 3, 1), "int8"),
    ((1, 64, 64, 32), (0, 2, 1, 3), "int8"),
])
def test_transpose_runs_on_the_npu_bit_exact(shape, perm, dtype):
    data = _model(shape, dtype, lambda w, x: w.transpose(x, perm))
    _check_exact(data, shape, dtype, "transpose", min_tiles=4 if int(np.prod(shape)) > 30000 else 1)


_RESIZES = {
    "nearest 2x": ((1, 8, 6, 5), lambda w, x: w.resize_nearest_neighbor(x, (16, 12))),
    "nearest 8x": ((1, 3, 4, 2), lambda w, x: w.resize_nearest_neighbor(x, (24, 32))),
    "nearest align_corners 4x": ((1, 8, 8, 5), lambda w, x: w.resize_nearest_neighbor(x, (29, 29),
                                                                                        align_corners=True)),
    "nearest half_pixel 2x": ((1, 7, 5, 3), lambda w, x: w.resize_nearest_neighbor(x, (14, 10),
                                                                                     half_pixel_centers=True)),
    "nearest from 1x1": ((1, 1, 1, 16), lambda w, x: w.resize_nearest_neighbor(x, (5, 3))),
    "nearest width only 2x": ((1, 1, 8, 4), lambda w, x: w.resize_nearest_neighbor(x, (1, 16))),
    "bilinear 4x": ((1, 8, 8, 3), lambda w, x: w.resize_bilinear(x, (32, 32))),
    "bilinear align_corners 2x": ((1, 9, 9, 4), lambda w, x: w.resize_bilinear(x, (17, 17), align_corners=True)),
    "bilinear half_pixel 2x": ((1, 8, 6, 5), lambda w, x: w.resize_bilinear(x, (16, 12), half_pixel_centers=True)),
    "bilinear large 2x": ((1, 40, 40, 16), lambda w, x: w.resize_bilinear(x, (80, 80), half_pixel_centers=True)),
}


# every case in int8; one of each kind in uint8 and int16
_RESIZE_RUNS = [(c, "int8") for c in _RESIZES] + [(c, d) for d in ("uint8", "int16")
                                                  for c in ("nearest 2x", "bilinear 4x", "bilinear half_pixel 2x")]


@pytest.mark.parametrize("case,dtype", _RESIZE_RUNS)
def test_resize_runs_on_the_npu_bit_exact(case, dtype):
    shape, build = _RESIZES[case]
    _check_exact(_model(shape, dtype, build), shape, dtype, "resize", min_tiles=4 if case == "bilinear large 2x" else 1)


# -- outside Vela's rules: on the CPU, every failed rule named --------------------------------------------------

def _cpu_reasons(data: bytes, op: str) -> str:
    mod, params = from_tflite(data, semantics="tflm")
    _, report = partition_for("ethos-u", mod, params, return_report=True)
    assert not report.partitions
    (node,) = [n for n in report.cpu_ops() if op in (n.op, *n.inner_ops)]
    return node.reason


def test_ops_outside_the_rules_stay_on_the_cpu_with_each_failed_rule():
    why = _cpu_reasons(_model((1, 8, 8, 3), "int8", lambda w, x: w.resize_bilinear(x, (20, 20))), "image.resize2d")
    assert "are equal and one of 2x/4x/8x" in why and "factors 2.5, 2.5" in why
    why = _cpu_reasons(_model((1, 8, 8, 3), "int8",
                              lambda w, x: w.resize_bilinear(x, (32, 32), half_pixel_centers=True)), "image.resize2d")
    assert "bilinear with half_pixel_centers: 2x" in why
    why = _cpu_reasons(_model((1, 8, 8, 3), "int8", lambda w, x: w.resize_nearest_neighbor(x, (16, 32))),
                       "image.resize2d")
    assert "factors 2, 4" in why
    why = _cpu_reasons(_model((2, 3, 4, 5), "int8", lambda w, x: w.transpose(x, (3, 1, 0, 2))), "transpose")
    assert "at most three of its axes are longer than 1" in why
    assert "moves 4 axes longer than 1" in why
    why = _cpu_reasons(_model((1, 300, 300, 4), "int8", lambda w, x: w.softmax(x)), "nn.softmax")  # TVM's form
    assert "less than 65536" in why and "found 300x300" in why


ETHOS_U_PRESETS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256",
                   "ethos-u65-256-shared", "ethos-u65-512", "ethos-u65-512-shared")


@pytest.mark.parametrize("preset", ETHOS_U_PRESETS)
def test_an_int8_to_int16_softmax_runs_on_the_npu_bit_exact_under_every_preset(preset):
    """keyword_scrambled's int8 → int16 SOFTMAX (output 1/65536, zp −32768): TFLite Micro's Softmax<int8, int16>."""
    for shape in ((1, 12), (4, 1000), (1, 3, 5, 40)):
        w = TFLiteWriter()
        x = w.input("x", shape, "int8", scale=0.07, zero_point=3)
        w.output(w.softmax(x, beta=0.5 if len(shape) == 4 else 1.0, out_dtype="int16", out_scale=1 / 65536,
                           out_zp=-32768))
        data = w.finish()
        mod, params = from_tflite(data, semantics="tflm")
        pm, report = partition_for("ethos-u", mod, params, return_report=True)
        exe = byoc.build(pm, target="ethos-u,llvm", npu_config=preset)
        assert [x.kind for p in exe.npu_programs.values() for x in p.layers] == ["softmax"]
        assert not report.cpu_ops()
        for x in _inputs(shape, "int8"):
            want = tflm_run(data, [x])[0]
            assert want.dtype == np.int16 and want.max() > -32768 + 1000   # beyond an 8-bit range
            ref = byoc.evaluate(mod, {"x": x})
            np.testing.assert_array_equal(np.asarray(ref[0] if isinstance(ref, (list, tuple)) else ref), want)
            got = exe.run({"x": x})[0]
            assert got.dtype == np.int16
            np.testing.assert_array_equal(got, want)


def test_a_uint8_to_int16_softmax_stays_on_the_cpu():
    """Only int8 → int16 widens on the NPU; built in the IR (the importer never produces it), the rule names it."""
    from byoc import relay
    x = relay.var("x", shape=(1, 10), dtype="uint8")
    f = relay.Function([x], relay.qnn.op.softmax(x, relay.const(0.07, "float32"), relay.const(3, "int32"),
                                                 relay.const(1 / 65536, "float32"), relay.const(-32768, "int32"),
                                                 out_dtype="int16"))
    mod = byoc.IRModule.from_expr(f)
    _, report = partition_for("ethos-u", mod, {}, return_report=True)
    (node,) = [n for n in report.cpu_ops() if "qnn.softmax" in (n.op, *n.inner_ops)]
    assert "or int8 → int16" in node.reason and "found uint8 → int16" in node.reason


# -- timing -----------------------------------------------------------------------------------------------------

def _chain_model() -> bytes:
    w = TFLiteWriter()
    x = w.input("x", (1, 3, 16, 16), "int8", scale=0.07, zero_point=3)
    t = w.transpose(x, (0, 2, 3, 1))
    r = w.resize_nearest_neighbor(t, (32, 32))
    w.output(w.softmax(r))
    return w.finish()


def test_timing_is_deterministic_and_never_below_the_roofline():
    import npu_sim
    data = _chain_model()
    stats = []
    for _ in range(2):
        _, _, exe, kinds = _offload(data)
        assert kinds == ["transpose", "resize", "softmax"]
        (prog,) = exe.npu_programs.values()
        x = np.zeros((1, 3, 16, 16), np.int8)
        _, st = npu_sim.simulate(prog, {prog.inputs[0].name: x})
        stats.append(st)
    a, b = stats
    assert a.total_cycles == b.total_cycles
    assert [s.cycles for s in a.per_layer] == [s.cycles for s in b.per_layer]
    for s in a.per_layer:
        assert s.cycles >= s.roofline_cycles > 0, s


def test_lowered_op_costs_grow_with_the_tensor_and_add_up_over_tiles():
    from npu_sim import PRESETS
    from npu_sim.cost import lowered_op_cycles, resize_cycles, softmax_cycles, transpose_cycles
    from npu_sim.isa import PpuOp
    cfg = PRESETS["ethos-u55-256"]
    assert softmax_cycles(cfg, 1, 10) < softmax_cycles(cfg, 1, 1000) < softmax_cycles(cfg, 64, 1000)
    assert transpose_cycles(cfg, 4096, 1, (1, 0, 2)) < transpose_cycles(cfg, 4096, 1, (1, 2, 0))
    assert resize_cycles(cfg, (8, 8), (16, 16), 16, False) < resize_cycles(cfg, (8, 8), (32, 32), 16, False)
    assert resize_cycles(cfg, (8, 8), (32, 32), 16, False) < resize_cycles(cfg, (8, 8), (32, 32), 16, True)
    whole = softmax_cycles(cfg, 64, 100)
    halves = sum(lowered_op_cycles(cfg, PpuOp.SOFTMAX, 32, 1, 100, (0, 1, 2), 1, False, False, (64,))
                 for _ in range(2))
    assert whole <= halves <= whole + 1


def _vela_cycles(model: Path, out: Path) -> dict[str, int]:
    import csv
    subprocess.run([vela_executable(), str(model), "--accelerator-config", "ethos-u55-256", "--output-dir",
                    str(out), "--verbose-performance"], check=True, capture_output=True, timeout=600)
    got: dict[str, int] = {}
    with open(out / f"{model.stem}_per-layer.csv", newline="") as f:
        for row in csv.DictReader(f):
            got[row["Original Operator"]] = got.get(row["Original Operator"], 0) + int(float(row["Op Cycles"]))
    return got


@pytest.mark.parametrize("name,shape,build", [
    ("softmax", (1, 8, 8, 64), lambda w, x: w.softmax(x)),
    ("transpose", (1, 3, 224, 224), lambda w, x: w.transpose(x, (0, 2, 3, 1))),
    ("resize", (1, 16, 16, 32), lambda w, x: w.resize_nearest_neighbor(x, (32, 32))),
    ("resize", (1, 8, 8, 16), lambda w, x: w.resize_bilinear(x, (32, 32))),
], ids=["softmax", "transpose", "resize_nearest", "resize_bilinear"])
def test_layer_cycles_are_within_20_percent_of_vela(name, shape, build, tmp_path):
    if vela_executable() is None:
        pytest.skip("vela (ethos-u-vela) is not installed")
    import npu_sim
    data = _model(shape, "int8", build)
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    vela = _vela_cycles(path, tmp_path)
    (op,) = [k for k in vela if k in ("Softmax", "Transpose", "ResizeNearestNeighbor", "ResizeBilinear")]
    _, _, exe, kinds = _offload(data)
    (prog,) = exe.npu_programs.values()
    _, st = npu_sim.simulate(prog, {prog.inputs[0].name: np.zeros(shape, np.int8)})
    ours = sum(s.exclusive_cycles for s in st.per_layer)
    assert 0.8 <= ours / vela[op] <= 1.2, (ours, vela[op])


# -- real models end to end: `byoc compare --target ethos-u` --------------------------------------------------

def _compare_models() -> list[Path]:
    from tests.shared_models import COMMITTED_MODELS, SHARED_MODELS
    out = [COMMITTED_MODELS / "kws_ref_model.tflite", COMMITTED_MODELS / "vww_96_int8.tflite"]
    return out + [p for p in (SHARED_MODELS / "mobilenet_v2_quantized_1x3x224x224.tflite",) if p.exists()]


@pytest.mark.parametrize("path", _compare_models(), ids=lambda p: p.stem)
def test_byoc_compare_on_ethos_u_matches_tflite_micro(path):
    """The softmax (kws, vww) and MobileNetV2's input transpose run inside the ethos-u partitions, and every
    executor agrees with TFLite Micro bit for bit."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "byoc" / "cli"))
    from cli_helpers import run_cli
    p = run_cli("compare", path, "--target", "ethos-u", timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "MATCH:" in p.stdout and "across evaluate, cpu, ethos-u, tflm" in p.stdout
    from byoc.cli.common import load_model
    m = load_model(str(path), "auto", target="ethos-u")
    _, report = partition_for("ethos-u", m.mod, m.params, return_report=True, **give_back_policies("ethos-u"))
    cpu = {n.op for n in report.cpu_ops()} | {i for n in report.cpu_ops() for i in n.inner_ops}
    assert not cpu & {"qnn.softmax", "ethos-u.qnn_softmax", "transpose"}, cpu


def test_the_program_validator_refuses_inconsistent_transpose_and_resize_commands():
    import dataclasses
    from npu_sim.isa import N_PPU_PARAMS, Ppu, PpuOp
    from byoc.errors import NPUError
    _, _, exe, _ = _offload(_chain_model())
    (prog,) = exe.npu_programs.values()
    prog.validate()
    for op, bad in ((PpuOp.TRANSPOSE, (0, 0, 1)), (PpuOp.RESIZE, (0, 7))):
        i = next(k for k, c in enumerate(prog.commands) if isinstance(c, Ppu) and c.op == op)
        c = prog.commands[i]
        params = (bad + c.params[len(bad):])[:N_PPU_PARAMS]
        cmds = list(prog.commands)
        cmds[i] = dataclasses.replace(c, params=params)
        with pytest.raises(NPUError) as e:
            dataclasses.replace(prog, commands=tuple(cmds)).validate(check_hazards=False)
        assert any(f"#{i}:" in n and ("transpose" in n or "resize" in n) for n in e.value.notes), e.value.notes
