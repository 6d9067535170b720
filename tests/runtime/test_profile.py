"""``module.profile()`` and the end-to-end estimate, the executor's memory plan, and NPU partitions whose output
is only a view of their input (micro_speech's reshape-only partition)."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import NPUError
from byoc.ir.expr import Call, Op
from byoc.ir.traversal import post_order
from byoc.relay.op import make_call
from runtime_helpers import imported, random_inputs


def _nbytes(t) -> int:
    return int(np.prod([int(d) for d in t.shape], dtype=np.int64)) * np.dtype(str(t.dtype)).itemsize


def _macs(call) -> int:
    """Multiply-accumulates of conv/dense calls, from the IR's shapes (written here, not taken from byoc)."""
    if call.op.name not in ("qnn.dense", "qnn.conv2d"):
        return 0
    out = [int(d) for d in call.checked_type.shape]
    w = [int(d) for d in call.args[1].checked_type.shape]
    if call.op.name == "qnn.dense":
        return int(np.prod(out)) * w[1]
    if call.op.name == "qnn.conv2d":
        o_axis = str(call.attrs.kernel_layout).index("O")
    return int(np.prod(out)) * int(np.prod(w)) // w[o_axis]


def _ops(func) -> list:
    return [n for n in post_order(func.body) if isinstance(n, Call) and isinstance(n.op, Op)]


def test_profile_figures_match_the_simulator_and_the_ir():
    import npu_sim
    mod, params, pm = imported("micro_speech_quantized.tflite", "tflm")
    exe = byoc.build(pm, target="npu,llvm", npu_config="ethos-n78-like")
    feed = random_inputs(mod["main"], seed=3)
    report = exe.profile(feed, repeat=2)
    np.testing.assert_array_equal(exe.get_output(0), byoc.evaluate(mod, feed, params)[0])
    assert [n.index for n in report.nodes] == list(range(len(exe.steps)))
    cfg = npu_sim.preset("ethos-n78-like")
    bandwidth = cfg.area(cfg.placement.feature_maps).bytes_per_cycle * cfg.clock_hz
    npu_nodes = [n for n in report.nodes if n.device == "npu"]
    assert sorted(n.name for n in npu_nodes) == sorted(exe.npu_programs)
    typed = byoc.relay.transform.InferType()(pm)
    for n in npu_nodes:
        prog = exe.npu_programs[n.name]
        zeros = {b.name: np.zeros(b.shape, b.dtype) for b in prog.inputs}
        assert n.cycles == npu_sim.simulate(prog, zeros)[1].total_cycles > 0
        assert sum(layer.cycles for layer in n.layers) == n.cycles
        func = typed[n.name]
        assert n.bytes_in == sum(_nbytes(p.checked_type) for p in func.params)
        assert n.bytes_out == _nbytes(func.body.checked_type)
        assert n.transfer_seconds == pytest.approx((n.bytes_in + n.bytes_out) / bandwidth)
        assert n.wall_seconds > 0
    cpu_nodes = [n for n in report.nodes if n.device == "cpu"]
    assert cpu_nodes and all(n.cycles is None and n.wall_seconds > 0 for n in cpu_nodes)
    est = report.estimate
    npu_cycles = sum(n.cycles for n in npu_nodes)
    assert est.npu_cycles == npu_cycles and est.npu_seconds == pytest.approx(npu_cycles / cfg.clock_hz)
    assert est.cpu_seconds == pytest.approx(sum(n.wall_seconds for n in cpu_nodes))
    assert est.transfer_bytes == sum(n.bytes_in + n.bytes_out for n in npu_nodes)
    assert est.total_seconds == pytest.approx(est.npu_seconds + est.cpu_seconds + est.transfer_seconds)
    npu_macs = sum(_macs(c) for _, f in typed.sorted_items() if f.attrs.get("Compiler") == "npu" for c in _ops(f))
    cpu_macs = sum(_macs(c) for c in _ops(typed["main"]))
    assert npu_macs > 0 and (est.npu_macs, est.total_macs) == (npu_macs, npu_macs + cpu_macs)
    assert est.npu_mac_share == pytest.approx(npu_macs / (npu_macs + cpu_macs))
    text = report.table()
    for n in report.nodes:
        assert n.name in text
    assert "estimate per inference" in text and f"{est.npu_cycles} cycles" in text
    assert report.to_json()["estimate"]["npu_mac_share"] == pytest.approx(est.npu_mac_share)


def test_cpu_only_build_has_no_device_time():
    mod, params, _ = imported("hello_world_int8.tflite", "litert")
    exe = byoc.build(mod, target="llvm", params=params)
    est = exe.estimate(random_inputs(mod["main"]), repeat=2)
    assert est.npu_cycles == 0 and est.transfer_bytes == 0 and est.npu_mac_share == 0.0
    assert est.total_seconds == est.cpu_seconds > 0


def test_memory_plan_reuses_intermediate_buffers():
    x = relay.var("x", shape=(1, 8, 8, 16), dtype="int32")
    e = x
    for _ in range(40):  # each pool anchors its own kernel; the add joins it as an epilogue
        e = make_call("add", [relay.nn.max_pool2d(e, pool_size=(1, 1), layout="NHWC"), relay.const(1, "int32")])
    exe = byoc.build(byoc.IRModule.from_expr(relay.Function([x], e)))
    assert len(exe.kernel_symbols) == 40
    outs = [a for s in exe.steps for a, k in zip(s.keep_alive, s.kinds) if k == "out"]
    assert len({a.ctypes.data for a in outs[:-1]}) <= 2   # ping-pong between two intermediate buffers
    xin = np.arange(1024, dtype="int32").reshape(1, 8, 8, 16)
    np.testing.assert_array_equal(exe.run({"x": xin})[0], xin + 40)
    np.testing.assert_array_equal(exe.run({"x": -xin})[0], 40 - xin)   # reused buffers hold no stale data


def _npu_function(body_fn, shape, dtype):
    a = relay.var("a", shape=shape, dtype=dtype)
    return relay.Function([a], body_fn(a)).with_attr("Compiler", "npu").with_attr("global_symbol", "npu_view")


def test_partition_whose_output_is_a_view_of_its_input():
    import npu_sim
    from byoc.transform.infer_type import infer_expr
    func = _npu_function(lambda a: make_call("reshape", [a], dict(newshape=[1, 49, 40, 1])), (1, 1960), "int8")
    infer_expr(func)
    prog = npu_sim.compile(func, "ethos-u55-256-like", "npu_view")
    x = np.random.default_rng(0).integers(-128, 128, (1, 1960)).astype(np.int8)
    (y,), stats = npu_sim.simulate(prog, {"a": x})
    np.testing.assert_array_equal(y, x.reshape(1, 49, 40, 1))
    assert [layer.kind for layer in prog.layers] == ["copy"] and stats.total_cycles > 0
    # an int32 reshape is copied too (Vela's MemoryCopy of int32 RESHAPEs); a float one has no NPU copy
    wide = _npu_function(lambda a: make_call("reshape", [a], dict(newshape=[4, 2])), (8,), "int32")
    infer_expr(wide)
    prog = npu_sim.compile(wide, "ethos-u55-256-like", "npu_view")
    v = np.arange(-4, 4, dtype=np.int32) * 100000
    (y,), _ = npu_sim.simulate(prog, {"a": v})
    np.testing.assert_array_equal(y, v.reshape(4, 2))
    flt = _npu_function(lambda a: make_call("reshape", [a], dict(newshape=[4, 2])), (8,), "float32")
    infer_expr(flt)
    with pytest.raises(NPUError, match="view of an input of type float32"):
        npu_sim.compile(flt, "ethos-u55-256-like", "npu_view")
