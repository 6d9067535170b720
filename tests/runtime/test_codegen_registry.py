"""User codegens: registered for a new ``Compiler`` name they receive their partitions (with build's options),
run inside the graph executor, and travel through artifacts with their own serialisation."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.build import register_codegen, registered_codegens, unregister_codegen
from byoc.errors import ArtifactError, CodegenError, ExecutionError
from byoc.relay.op import make_call
from runtime.artifact import export_bytes, load_bytes
from runtime_helpers import imported, npu_partitions, random_inputs


@pytest.fixture
def device_name(request):
    name = f"unit_rt_{request.node.name.split('[')[0][5:]}"
    yield name
    unregister_codegen(name)


def _retag(pm, compiler: str):
    out = pm.copy()
    for gv, f in pm.sorted_items():
        if f.attrs.get("Compiler") == "npu":
            out[gv.name_hint] = f.with_attr("Compiler", compiler)
    return out


def test_new_compiler_receives_its_partitions_and_runs(device_name):
    mod, params, pm = imported("hello_world_int8.tflite", "tflm")
    expected_parts = npu_partitions(pm)
    assert expected_parts
    received = []

    def codegen(func, symbol):
        received.append((symbol, func.attrs["Compiler"], [tuple(p.checked_type.shape) for p in func.params]))
        sub = byoc.IRModule.from_expr(func.replace(attrs={}))

        def run(arrays):
            return byoc.evaluate(sub, {p.name_hint: a for p, a in zip(func.params, arrays)})
        return run

    register_codegen(device_name, codegen)
    assert device_name in registered_codegens()
    exe = byoc.build(_retag(pm, device_name), target=f"{device_name},llvm")
    assert sorted(s for s, _, _ in received) == sorted(expected_parts)
    assert {c for _, c, _ in received} == {device_name} and all(shapes for _, _, shapes in received)
    for seed in range(3):
        feed = random_inputs(mod["main"], seed)
        np.testing.assert_array_equal(exe.run(feed)[0], byoc.evaluate(mod, feed, params)[0])


def _scaling_module(compiler: str):
    a = relay.var("a", shape=(2, 3), dtype="int32")
    ext = relay.Function([a], make_call("add", [a, a])).with_attr("Compiler", compiler) \
        .with_attr("global_symbol", "ext0")
    x = relay.var("x", shape=(2, 3), dtype="int32")
    mod = byoc.IRModule()
    mod["ext0"] = ext
    mod["main"] = relay.Function([x], make_call("subtract", [relay.Call(mod.get_global_var("ext0"), [x]),
                                                             relay.const(1, "int32")]))
    return mod


class _Scale:
    """A device that multiplies by a factor fixed at compile time; its 'binary' is the factor."""

    def __init__(self, factor: int):
        self.factor = factor

    def __call__(self, arrays):
        return [arrays[0] * np.int32(self.factor)]

    def to_bytes(self) -> bytes:
        return int(self.factor).to_bytes(4, "little")


def test_options_reach_the_codegen_and_artifacts_use_its_loader(device_name):
    calls = {"compile": 0, "load": 0}

    def codegen(func, symbol, options):
        calls["compile"] += 1
        return _Scale(options["factor"])

    def loader(func, symbol, blob, options):
        calls["load"] += 1
        if len(blob) != 4:
            raise ArtifactError(f"{symbol}: factor blob of {len(blob)} bytes")
        return _Scale(int.from_bytes(blob, "little"))

    register_codegen(device_name, codegen, loader=loader)
    exe = byoc.build(_scaling_module(device_name), target=f"{device_name},llvm", factor=5)
    x = np.arange(6, dtype="int32").reshape(2, 3)
    np.testing.assert_array_equal(exe.run({"x": x})[0], x * 5 - 1)
    blob = export_bytes(exe)
    loaded = load_bytes(blob)
    assert calls == {"compile": 1, "load": 1}
    np.testing.assert_array_equal(loaded.run({"x": x})[0], x * 5 - 1)
    unregister_codegen(device_name)
    with pytest.raises(ArtifactError, match=f"needs codegen.*{device_name}"):
        load_bytes(blob)


def test_registry_and_runner_mistakes_are_diagnosed(device_name):
    register_codegen(device_name, lambda func, symbol: (lambda arrays: [np.zeros((5,), "int32")]))
    with pytest.raises(CodegenError, match="already registered"):
        register_codegen(device_name, lambda func, symbol: None)
    with pytest.raises(CodegenError, match="invalid codegen name"):
        register_codegen("llvm", lambda func, symbol: None)
    exe = byoc.build(_scaling_module(device_name), target=f"{device_name},llvm")
    with pytest.raises(ExecutionError, match=r"returned int32\[5\], expected int32\[2, 3\]"):
        exe.run({"x": np.zeros((2, 3), "int32")})
    register_codegen(device_name, lambda func, symbol: "not a runner", override=True)
    with pytest.raises(CodegenError, match="not a runner"):
        byoc.build(_scaling_module(device_name), target=f"{device_name},llvm")
    with pytest.raises(CodegenError, match="no registered codegen|unknown target"):
        byoc.build(_scaling_module("nobody_registered_this"), target="llvm")
