"""Targets that lower their own composite names onto the NPU simulator (``register_simulator_codegen``), the
built-in ``vta`` codegen, and ``byoc.targets`` loading (files and entry points) in-process."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.build import get_codegen_entry, register_codegen, unregister_codegen
from byoc.errors import CodegenError, PluginError
from byoc.frontend import from_tflite
from byoc.relay.dataflow_pattern import is_constant, is_op, wildcard
from patterns import register_pattern_table, registry
from runtime.npu_codegen import SimulatorCodegen, register_simulator_codegen, simulator_codegen_for

REPO = Path(__file__).resolve().parents[2]
AD01 = REPO / "tests" / "data" / "mlcommons_tiny" / "ad01_int8.tflite"


@pytest.fixture
def target(request):
    """A fresh target name; its table and codegen are removed afterwards."""
    name = "t_" + request.node.name.split("[")[0][5:]
    yield name
    unregister_codegen(name)
    registry._TABLE_FUNCS.pop(name, None)
    registry._TABLES.pop(name, None)


def _fc_pattern():
    dense = is_op("qnn.dense")(wildcard(), *[is_constant() for _ in range(5)])
    rq = is_op("qnn.requantize")(is_op("nn.bias_add")(dense, is_constant()), *[is_constant() for _ in range(4)])
    return rq.optional(is_op("clip"))


def _tflm(data: bytes, x: np.ndarray) -> np.ndarray:
    """TFLite Micro's interpreter: the oracle of semantics='tflm' imports."""
    pytest.importorskip("tflite_micro")
    from tflite_micro import runtime
    it = runtime.Interpreter.from_bytes(data)
    it.set_input(x, 0)
    it.invoke()
    return np.array(it.get_output(0))


def test_own_composite_names_run_bit_exact_and_keep_their_names(target):
    register_pattern_table(target, lambda: [(f"{target}.fc", _fc_pattern())])
    register_simulator_codegen(target, {f"{target}.fc": "dense"}, npu_config="vta-default")
    data = AD01.read_bytes()
    mod, params = from_tflite(data, semantics="tflm")
    pm = byoc.partition_for(target, mod, params)
    parts = [f for _, f in pm.sorted_items() if f.attrs.get("Compiler") == target]
    assert parts
    exe = byoc.build(pm, target=f"{target},llvm")
    progs = exe.npu_programs
    assert progs and {x.composite for p in progs.values() for x in p.layers} == {f"{target}.fc"}
    assert {p.config.name for p in progs.values()} == {"vta-default"}
    rng = np.random.default_rng(5)
    for _ in range(2):
        x = rng.integers(-128, 128, size=(1, 640)).astype(np.int8)
        np.testing.assert_array_equal(exe.run({mod["main"].params[0].name_hint: x})[0], _tflm(data, x))


def test_a_body_the_kind_cannot_run_is_a_codegen_error_naming_the_composite(target):
    register_pattern_table(target, lambda: [(f"{target}.fc", _fc_pattern())])
    register_simulator_codegen(target, {f"{target}.fc": "conv2d"})  # wrong kind for a dense body
    mod, params = from_tflite(AD01.read_bytes(), semantics="tflm")
    pm = byoc.partition_for(target, mod, params)
    with pytest.raises(CodegenError) as e:
        byoc.build(pm, target=f"{target},llvm")
    text = str(e.value)
    assert f"target {target!r}" in text and f"{target}.fc" in text and "layer kind 'conv2d'" in text
    assert "qnn.dense → nn.bias_add → qnn.requantize does not match" in text


def test_a_composite_missing_from_the_map_is_named(target):
    register_pattern_table(target, lambda: [(f"{target}.fc", _fc_pattern()),
                                            (f"{target}.relu", is_op("nn.relu")(wildcard()))])
    register_simulator_codegen(target, {f"{target}.relu": "relu"})
    mod, params = from_tflite(AD01.read_bytes(), semantics="tflm")
    with pytest.raises(CodegenError, match=rf"composite '{target}\.fc' has no layer kind in the target's lowering "):
        byoc.build(byoc.partition_for(target, mod, params), target=f"{target},llvm")


def _litert(data: bytes, x: np.ndarray) -> np.ndarray:
    """LiteRT's reference kernels (BUILTIN_REF), the oracle of semantics='litert' imports."""
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    it = litert.Interpreter(model_content=data, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


@pytest.mark.parametrize("dtype, zp", [("int8", 3), ("uint8", 131)])
def test_lut_kind_runs_any_elementwise_chain_bit_exact(target, dtype, zp):
    from byoc.testing.tflite_writer import TFLiteWriter
    w = TFLiteWriter()
    x = w.input("x", (1, 4, 4, 8), dtype, scale=0.05, zero_point=zp)
    y = w.hard_swish(x, out_scale=0.04, out_zp=zp - 8)
    w.output(w.leaky_relu(y, 0.3, out_scale=0.03, out_zp=zp + 2))
    data = w.finish()
    # the importer's (TVM's) forms: dequantize → x·clip(x + 3, 0, 6)/6 → quantize, dequantize → leaky → quantize
    def chain(body):
        deq = is_op("qnn.dequantize")(wildcard(), is_constant(), is_constant())
        return is_op("qnn.quantize")(body(deq), is_constant(), is_constant())
    hswish = chain(lambda d: is_op("divide")(is_op("multiply")(d, is_op("clip")(is_op("add")(d, is_constant()))),
                                             is_constant()))
    leaky = chain(lambda d: is_op("nn.leaky_relu")(d))
    register_pattern_table(target, lambda: [(f"{target}.hswish", hswish), (f"{target}.leaky", leaky)])
    register_simulator_codegen(target, {f"{target}.hswish": "lut", f"{target}.leaky": "lut"})
    mod, params = from_tflite(data)
    exe = byoc.build(byoc.partition_for(target, mod, params), target=f"{target},llvm")
    assert [x.kind for p in exe.npu_programs.values() for x in p.layers] == ["lut", "lut"]
    info = np.iinfo(dtype)
    v = np.arange(info.min, info.max + 1).astype(dtype).reshape(1, 4, 8, 8)[:, :, :4, :].copy()
    for feed in (v, np.arange(info.min, info.max + 1).astype(dtype).reshape(1, 4, 8, 8)[:, :, 4:, :].copy()):
        np.testing.assert_array_equal(exe.run({"x": feed})[0], _litert(data, feed))


def test_lut_kind_refuses_what_is_not_elementwise(target):
    x = relay.var("x", shape=(1, 2, 2, 4), dtype="int8")
    pool = relay.nn.max_pool2d(x, pool_size=(2, 2), layout="NHWC")
    mod = byoc.IRModule.from_expr(relay.Function([x], pool))
    register_pattern_table(target, lambda: [(f"{target}.pool", is_op("nn.max_pool2d")(wildcard()))])
    register_simulator_codegen(target, {f"{target}.pool": "lut"})
    with pytest.raises(CodegenError, match=rf"{target}\.pool.*nn\.max_pool2d is not elementwise"):
        byoc.build(byoc.partition_for(target, mod), target=f"{target},llvm")


def test_lowering_map_mistakes_are_reported_together(target):
    with pytest.raises(CodegenError) as e:
        register_simulator_codegen(target, {f"{target}.a": "dens", "x.b": "add", f"{target}.c": 3})
    text = str(e.value)
    assert "3 problem(s)" in text and "did you mean 'dense'" in text and "'x.b'" in text and "3 is not" in text
    with pytest.raises(CodegenError, match="non-empty mapping"):
        register_simulator_codegen(target, {})
    assert get_codegen_entry(target) is None


def test_vta_relu_runs_on_the_simulator_as_a_clamp():
    x = relay.var("x", shape=(1, 4, 4, 16), dtype="int8")
    mod = byoc.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    pm = byoc.partition_for("vta", mod)
    assert any(f.attrs.get("Compiler") == "vta" for _, f in pm.sorted_items())
    exe = byoc.build(pm, target="vta,llvm")
    assert [x.composite for p in exe.npu_programs.values() for x in p.layers] == ["vta.relu"]
    v = np.random.default_rng(0).integers(-128, 128, size=(1, 4, 4, 16)).astype(np.int8)
    np.testing.assert_array_equal(exe.run({"x": v})[0], np.maximum(v, 0))


def test_vta_and_npu_are_simulator_codegens_and_a_user_codegen_wins(target):
    vta = simulator_codegen_for("vta")
    assert isinstance(vta, SimulatorCodegen) and vta.npu_config.name == "vta-default"
    assert simulator_codegen_for("npu").composites is None and simulator_codegen_for("llvm") is None
    register_codegen(target, lambda func, symbol: (lambda arrays: arrays))
    assert simulator_codegen_for(target) is None


# -- byoc.targets: files and entry points, in-process ------------------------------------------------------

def test_target_file_is_loaded_once_and_reports_what_it_registered(tmp_path):
    from byoc.targets import load_target_file
    path = tmp_path / "filetarget.py"
    path.write_text("from byoc.targets import register_pattern_table\n"
                    "from byoc.relay.dataflow_pattern import is_op, wildcard\n"
                    "COUNT = [0]\n"
                    "@register_pattern_table('filetgt')\n"
                    "def table():\n"
                    "    return [('filetgt.relu', is_op('nn.relu')(wildcard()))]\n")
    try:
        got = load_target_file(path)
        assert got.tables == ("filetgt",) and got.codegens == ()
        assert load_target_file(str(path)) is got   # executed once per process
        assert [e.name for e in registry.get_pattern_table("filetgt")] == ["filetgt.relu"]
    finally:
        registry._TABLE_FUNCS.pop("filetgt", None)
        registry._TABLES.pop("filetgt", None)


def test_entry_points_are_found_by_target_name(tmp_path, monkeypatch):
    from byoc import targets
    site = tmp_path / "site"
    info = site / "eptest-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: eptest\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[byoc.targets]\neptgt = eptest_mod\nepbad = eptest_missing_module\n")
    (site / "eptest_mod.py").write_text(
        "from byoc.targets import register_pattern_table, register_simulator_codegen\n"
        "from byoc.relay.dataflow_pattern import is_op, wildcard\n"
        "register_pattern_table('eptgt', lambda: [('eptgt.relu', is_op('nn.relu')(wildcard()))])\n"
        "register_simulator_codegen('eptgt', {'eptgt.relu': 'relu'})\n")
    monkeypatch.syspath_prepend(str(site))
    try:
        assert {"eptgt", "epbad"} <= set(registry.registered_targets())
        assert "eptgt" not in registry.table_functions()          # listed, not imported
        assert targets.load_entry_point("no_such_target") is False
        entry = get_codegen_entry("eptgt")                         # the codegen's lookup loads the plugin
        assert isinstance(entry.compile, SimulatorCodegen) and registry.get_pattern_table("eptgt")
        with pytest.raises(PluginError, match=r"entry point 'epbad' \(eptest_missing_module\) failed to load: "
                                              r"ModuleNotFoundError"):
            registry.get_pattern_table("epbad")
    finally:
        for name in ("eptgt", "epbad"):
            unregister_codegen(name)
            registry._TABLE_FUNCS.pop(name, None)
            registry._TABLES.pop(name, None)
            targets._ENTRY_POINTS.pop(name, None)
