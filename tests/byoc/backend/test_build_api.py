"""byoc.build's module API, diagnostics, the codegen registry and the kernel cache."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import byoc
from backend_cases import c, ints
from byoc import relay
from byoc.backend.llvm import codegen as cg_mod
from byoc.backend.llvm import get_codegen
from byoc.build import register_codegen
from byoc.errors import CodegenError, ExecutionError
from byoc.relay.op import make_call


def _model():
    x = relay.var("x", shape=(1, 6, 6, 8), dtype="int8")
    w = c(np.random.RandomState(0).randint(-128, 128, (8, 1, 1, 8)), "int8")
    e = make_call("qnn.conv2d", [x, w, c(1, "int32"), c(0, "int32"), c(0.1), c(0.02)],
                  dict(data_layout="NHWC", kernel_layout="OHWI"))
    e = make_call("qnn.requantize", [e, c(0.002), c(0, "int32"), c(0.05), c(-3, "int32")], dict(axis=3))
    return byoc.IRModule.from_expr(relay.Function([x], e))


def test_run_set_input_get_output():
    mod = _model()
    inp = ints(np.random.RandomState(1), (1, 6, 6, 8))
    exe = byoc.build(mod, target="llvm")
    (a,) = exe.run({"x": inp})
    exe.set_input("x", inp)
    exe.run()
    assert np.array_equal(exe.get_output(0), a)
    assert np.array_equal(a, byoc.evaluate(mod, {"x": inp})[0])


def test_params_are_bound():
    x = relay.var("x", shape=(4,), dtype="int32")
    w = relay.var("w", shape=(4,), dtype="int32")
    mod = byoc.IRModule.from_expr(relay.Function([x, w], make_call("multiply", [x, w])))
    exe = byoc.build(mod, params={"w": np.array([1, 2, 3, 4], "int32")})
    assert exe.run({"x": np.array([5, 6, 7, 8], "int32")})[0].tolist() == [5, 12, 21, 32]


def test_bad_inputs_are_diagnosed():
    exe = byoc.build(_model())
    with pytest.raises(ExecutionError, match="missing input"):
        exe.run({"y": np.zeros(3)})
    with pytest.raises(ExecutionError, match="expected shape"):
        exe.run({"x": np.zeros((1, 6, 6, 7), "int8")})


def test_integer_division_by_zero_is_an_error_not_a_crash():
    x = relay.var("x", shape=(3,), dtype="int32")
    y = relay.var("y", shape=(3,), dtype="int32")
    exe = byoc.build(byoc.IRModule.from_expr(relay.Function([x, y], make_call("divide", [x, y]))))
    assert exe.run({"x": np.array([7, -7, 9], "int32"), "y": np.array([2, 2, -4], "int32")})[0].tolist() == [3, -3, -2]
    with pytest.raises(ExecutionError, match="division by zero"):
        exe.run({"x": np.array([1, 2, 3], "int32"), "y": np.array([1, 0, 1], "int32")})


def test_unknown_target_and_non_constant_scale_are_diagnosed():
    with pytest.raises(CodegenError, match="unknown target"):
        byoc.build(_model(), target="gpu,llvm")
    x = relay.var("x", shape=(4,), dtype="int32")
    s = relay.var("s", shape=(), dtype="float32")
    e = make_call("qnn.requantize", [x, s, c(0, "int32"), c(0.1), c(0, "int32")])
    with pytest.raises(CodegenError, match="must be a constant"):
        byoc.build(byoc.IRModule.from_expr(relay.Function([x, s], e)))


def test_threads_give_identical_results():
    mod = _model()
    inp = {"x": ints(np.random.RandomState(2), (1, 6, 6, 8))}
    one = byoc.build(mod, num_threads=1).run(inp)[0]
    two = byoc.build(mod, num_threads=2)
    two.steps[0].work = 1 << 30  # force the split even on this small kernel
    assert np.array_equal(two.run(inp)[0], one)


def test_external_codegen_plugs_in_by_compiler_name():
    calls = []

    def codegen(func, name):
        def run(arrays):
            calls.append(name)
            return [arrays[0] * 2]
        return run

    register_codegen("unit_test_dev", codegen, override=True)
    a = relay.var("a", shape=(3,), dtype="int32")
    ext = relay.Function([a], make_call("add", [a, a])).with_attr("Compiler", "unit_test_dev") \
        .with_attr("global_symbol", "ext0")
    x = relay.var("x", shape=(3,), dtype="int32")
    mod = byoc.IRModule()
    mod["ext0"] = ext
    gv = mod.get_global_var("ext0")
    mod["main"] = relay.Function([x], make_call("add", [relay.Call(gv, [x]), c(1, "int32")]))
    exe = byoc.build(mod, target="unit_test_dev,llvm")
    assert exe.run({"x": np.array([1, 2, 3], "int32")})[0].tolist() == [3, 5, 7]
    assert calls == ["ext0"]


def test_identical_kernels_compile_once_per_process():
    get_codegen()
    before = get_codegen().stats.compiled
    x1 = byoc.build(_model())
    mid = get_codegen().stats.compiled
    x2 = byoc.build(_model())
    assert get_codegen().stats.compiled == mid >= before
    assert x1.kernel_symbols == x2.kernel_symbols


def test_disk_cache_round_trip_and_corruption(tmp_path):
    obj = b"\x7fELF-not-really"
    cg_mod._write_cached(tmp_path, "k", obj)
    assert cg_mod._read_cached(tmp_path, "k") == obj
    p = tmp_path / "k.o"
    p.write_bytes(p.read_bytes()[:-3])  # truncated: rejected, never loaded
    assert cg_mod._read_cached(tmp_path, "k") is None


def test_second_process_loads_kernels_from_disk(tmp_path):
    script = (
        "import numpy as np, byoc; from byoc import relay; from byoc.relay.op import make_call\n"
        "x = relay.var('x', shape=(8,), dtype='int8')\n"
        "e = make_call('qnn.requantize', [x, relay.const(0.5), relay.const(1), relay.const(0.25), relay.const(2)],"
        " dict(out_dtype='int8'))\n"
        "exe = byoc.build(byoc.IRModule.from_expr(relay.Function([x], e)))\n"
        "from byoc.backend.llvm import get_codegen; s = get_codegen().stats\n"
        "print(s.compiled, s.disk_hits, exe.run({'x': np.arange(8, dtype='int8')})[0].tolist())\n")
    env = dict(os.environ, BYOC_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    c1, h1, out1 = first.stdout.split(" ", 2)
    c2, h2, out2 = second.stdout.split(" ", 2)
    assert (int(c1), int(h1)) == (1, 0) and (int(c2), int(h2)) == (0, 1)
    assert out1 == out2
    assert len(list(Path(tmp_path).glob("*.o"))) == 1


def test_composite_functions_run_on_the_cpu():
    a = relay.var("a", shape=(4,), dtype="int32")
    comp = relay.Function([a], make_call("multiply", [a, c(3, "int32")])).with_attr("Composite", "cpu.triple")
    x = relay.var("x", shape=(4,), dtype="int32")
    mod = byoc.IRModule.from_expr(relay.Function([x], make_call("add", [relay.Call(comp, [x]), c(1, "int32")])))
    inp = {"x": np.array([1, -2, 3, 4], "int32")}
    assert byoc.build(mod).run(inp)[0].tolist() == byoc.evaluate(mod, inp)[0].tolist() == [4, -5, 10, 13]
