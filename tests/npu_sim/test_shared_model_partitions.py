"""Every npu partition of every shared model, compiled and simulated under each preset, equals ``byoc.evaluate`` of
the same partition on the same inputs, element for element.

Each partition's inputs are the values that reach it in the real model: main is rewritten to return the arguments of
every npu call, and the reference interpreter computes them.
"""
from __future__ import annotations

import numpy as np
import pytest

import byoc
import npu_sim
from byoc.ir.expr import Call, Function, GlobalVar, Tuple
from byoc.ir.module import IRModule
from byoc.ir.traversal import post_order
from tests.shared_models import shared_model, shared_params


def _random_inputs(func, seed):
    rng = np.random.default_rng(seed)
    feed = {}
    for p in func.params:
        t = p.type_annotation
        info = np.iinfo(t.dtype)
        feed[p.name_hint] = rng.integers(info.min, info.max + 1, size=t.shape).astype(t.dtype)
    return feed


def _partition_inputs(pm: IRModule, feed: dict) -> list[tuple[str, Function, list[np.ndarray]]]:
    main = pm["main"]
    calls = [n for n in post_order(main.body) if isinstance(n, Call) and isinstance(n.op, GlobalVar)
             and pm[n.op.name_hint].attrs.get("Compiler") == "npu"]
    args = [a for c in calls for a in c.args]
    probe = pm.copy()
    probe["main"] = Function(main.params, Tuple(args))
    values = iter(byoc.evaluate(probe, feed))
    return [(c.op.name_hint, pm[c.op.name_hint], [next(values) for _ in c.args]) for c in calls]


@pytest.fixture(scope="module", params=shared_params())
def partitioned(request):
    path = shared_model(request.param)
    # TFLite-Micro semantics make FULLY_CONNECTED fixed-point, so dense layers are offloaded too.
    mod, params = byoc.frontend.from_tflite(path.read_bytes(), semantics="tflm")
    pm = byoc.partition_for("npu", mod, params)
    parts = _partition_inputs(pm, _random_inputs(mod["main"], seed=7))
    assert parts, f"{request.param}: no npu partition"
    return request.param, parts


@pytest.mark.parametrize("preset", ["ethos-u55-256-like", "ethos-n78-like", "vta-default"])
def test_every_npu_partition_is_bit_exact_under_each_preset(partitioned, preset):
    name, parts = partitioned
    config = npu_sim.preset(preset)
    for symbol, func, inputs in parts:
        expected = byoc.evaluate(IRModule.from_expr(func), {p.name_hint: v for p, v in zip(func.params, inputs)})
        program = npu_sim.compile(func, config)
        outputs, stats = npu_sim.simulate(program, {p.name_hint: v for p, v in zip(func.params, inputs)})
        outputs = list(outputs.values()) if isinstance(outputs, dict) else list(outputs)
        assert len(outputs) == len(expected), f"{name} {symbol}"
        for got, want in zip(outputs, expected):
            assert got.dtype == want.dtype and got.shape == want.shape, f"{name} {symbol}"
            mismatches = int(np.count_nonzero(got != want))
            assert mismatches == 0, f"{name} {symbol} under {preset}: {mismatches} mismatching elements"
        assert stats.total_cycles > 0
