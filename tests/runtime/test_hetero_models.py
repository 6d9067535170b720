"""Every shared model: ``build("npu,llvm")`` of the partitioned module, ``build("llvm")`` of the original and
``byoc.evaluate`` agree bit for bit, and (where LiteRT loads the file) so do TFLite's reference kernels."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from runtime_helpers import MODELS, imported, litert_reference, model_bytes, npu_partitions, random_inputs

CASES = [(m, "litert") for m in MODELS] + [("hello_world_int8.tflite", "tflm"),
                                           ("micro_speech_quantized.tflite", "tflm")]


def _composites(mod) -> set[str]:
    from byoc.ir.expr import Call, Function
    from byoc.ir.traversal import post_order
    out = set()
    for _, f in mod.sorted_items():
        if f.attrs.get("Compiler") == "npu":
            out |= {str(n.op.attrs["Composite"]) for n in post_order(f.body)
                    if isinstance(n, Call) and isinstance(n.op, Function) and "Composite" in n.op.attrs}
    return out


@pytest.mark.parametrize("name,semantics", CASES)
def test_npu_llvm_cpu_and_reference_agree(name, semantics):
    mod, params, pm = imported(name, semantics)
    parts = npu_partitions(pm)
    if (name, semantics) != ("hello_world_int8.tflite", "litert"):  # LiteRT's float FC requantize stays on the CPU
        assert parts, f"{name}: nothing was offloaded"
    if semantics == "tflm":
        assert "npu.qnn_dense" in _composites(pm)
    feed = random_inputs(mod["main"], seed=1)
    ref = byoc.evaluate(mod, feed, params)
    hetero = byoc.build(pm, target="npu,llvm", npu_config="ethos-u55-256-like")
    assert sorted(hetero.partitions) == sorted(parts)
    got_npu = hetero.run(feed)
    got_cpu = byoc.build(mod, target="llvm", params=params).run(feed)
    assert len(ref) == len(got_npu) == len(got_cpu) == hetero.get_num_outputs()
    for r, a, b in zip(ref, got_npu, got_cpu):
        assert r.dtype == a.dtype == b.dtype and r.shape == a.shape == b.shape
        np.testing.assert_array_equal(a, r)
        np.testing.assert_array_equal(b, r)
    if semantics == "litert":
        oracle = litert_reference(model_bytes(name), [feed[p.name_hint] for p in mod["main"].params])
        if oracle is not None:  # person_detect: LiteRT refuses its per-channel depthwise bias (see MANIFEST)
            for o, a in zip(oracle, got_npu):
                np.testing.assert_array_equal(a, o)


def test_graph_executor_habits():
    mod, params, pm = imported("micro_speech_quantized.tflite", "tflm")
    exe = byoc.build(pm, target="npu,llvm")
    (name,) = exe.input_names
    feeds = [random_inputs(mod["main"], seed=s)[name] for s in (2, 3)]
    expected = [byoc.evaluate(mod, {name: x}, params)[0] for x in feeds]
    for x, want in zip(feeds, expected):
        exe.set_input(name, x)
        exe.run()
        np.testing.assert_array_equal(exe.get_output(0), want)
    assert exe.get_num_outputs() == 1
    np.testing.assert_array_equal(exe.run({name: feeds[0]})[0], expected[0])


def test_npu_config_accepts_preset_toml_and_object(tmp_path):
    import npu_sim
    from byoc.errors import ConfigError
    mod, params, pm = imported("micro_speech_quantized.tflite", "tflm")
    feed = random_inputs(mod["main"], seed=4)
    ref = byoc.evaluate(mod, feed, params)[0]
    toml = tmp_path / "slow.toml"
    toml.write_text('base = "ethos-u55-256-like"\nname = "slow-u55"\nclock_hz = 100e6\n')
    cycles = {}
    for spec in ("ethos-n78-like", str(toml), npu_sim.preset("vta-default")):
        exe = byoc.build(pm, target="npu,llvm", npu_config=spec)
        np.testing.assert_array_equal(exe.run(feed)[0], ref)
        cfg = exe.npu_config
        cycles[cfg.name] = exe.profile().estimate.npu_cycles
    assert set(cycles) == {"ethos-n78-like", "slow-u55", "vta-default"} and all(c > 0 for c in cycles.values())
    with pytest.raises(ConfigError, match="neither a preset nor an existing file"):
        byoc.build(pm, target="npu,llvm", npu_config="no-such-npu")


def test_build_does_not_partition():
    """An unpartitioned module builds for npu,llvm and simply runs on the CPU (documented behaviour)."""
    mod, params, _ = imported("micro_speech_quantized.tflite", "tflm")
    exe = byoc.build(mod, target="npu,llvm", params=params)
    assert exe.partitions == {}
    feed = random_inputs(mod["main"], seed=5)
    np.testing.assert_array_equal(exe.run(feed)[0], byoc.evaluate(mod, feed, params)[0])
