"""relay.op.contrib.dnnl: TVM's DNNL pattern table (partitioning only) after FoldScaleAxis / SimplifyExpr, as
TVM's own test_pass_partition_graph uses it: conv2d + batch_norm + relu folds to conv2d + bias + relu and becomes
one dnnl.conv2d_bias_relu; the sum pattern's check refuses an add of different shapes."""
from __future__ import annotations

import numpy as np
import pytest

import byoc as tvm
from byoc import relay
from byoc.ir.expr import Function
from byoc.relay.op.contrib import get_pattern_table

transform = relay.transform
RNG = np.random.default_rng(2)


@pytest.fixture
def dnnl(monkeypatch):
    # a registry copy: the table stays out of registered_targets() for later tests
    import patterns.registry as registry
    monkeypatch.setattr(registry, "_TABLE_FUNCS", dict(registry._TABLE_FUNCS))
    monkeypatch.setattr(registry, "_TABLES", dict(registry._TABLES))
    return get_pattern_table("dnnl")


def _composites(mod):
    return sorted(f.attrs["Composite"] for f in _functions(mod) if "Composite" in f.attrs)


def _functions(mod):
    from byoc.ir.traversal import post_order
    return [n for gv in mod.get_global_vars() for n in post_order(mod[gv]) if isinstance(n, Function)]


def _partition(mod, table):
    seq = tvm.transform.Sequential([transform.InferType(), transform.SimplifyInference(), transform.FoldConstant(),
                                    transform.FoldScaleAxis(), transform.SimplifyExpr(), transform.FoldConstant(),
                                    transform.MergeComposite(table), transform.AnnotateTarget("dnnl"),
                                    transform.PartitionGraph()])
    with tvm.transform.PassContext(opt_level=3):
        return seq(mod)


def test_conv_batch_norm_relu_becomes_one_dnnl_composite(dnnl):
    names = [e.name for e in dnnl]
    assert names[:5] == ["dnnl.qnn.conv2d", "dnnl.qnn.dense", "dnnl.dense_bias_sum", "dnnl.conv2d_bias_sum_relu",
                         "dnnl.conv2d_bias_sum"]
    assert "dnnl.deconv2d_bias_mish" in names and "dnnl.dense_gelu" in names
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.const(RNG.standard_normal((4, 3, 3, 3)).astype("float32"))
    gamma, beta, mean = (relay.const(RNG.standard_normal(4).astype("float32")) for _ in range(3))
    var = relay.const(RNG.uniform(0.5, 2, 4).astype("float32"))
    bn = relay.nn.batch_norm(relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1)), gamma, beta,
                             mean, var)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(bn[0])))
    part = _partition(mod, dnnl)
    assert _composites(part) == ["dnnl.conv2d_bias_relu"]
    data = RNG.standard_normal((1, 3, 8, 8)).astype("float32")
    np.testing.assert_allclose(tvm.evaluate(part, {"x": data})[0], tvm.evaluate(mod, {"x": data})[0],
                               rtol=1e-5, atol=1e-5)


def test_sum_pattern_needs_same_shapes(dnnl):
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.const(RNG.standard_normal((4, 4, 1, 1)).astype("float32"))
    b = relay.const(RNG.standard_normal((4, 1, 1)).astype("float32"))
    conv = relay.add(relay.nn.conv2d(x, w, channels=4, kernel_size=(1, 1)), b)
    same = relay.var("same", shape=(1, 4, 6, 6))
    bcast = relay.var("bcast", shape=(1, 1, 6, 6))
    for other, want in ((same, "dnnl.conv2d_bias_sum_relu"), (bcast, "dnnl.conv2d_bias")):
        mod = tvm.IRModule.from_expr(relay.Function([x, other], relay.nn.relu(relay.add(conv, other))))
        assert want in _composites(_partition(mod, dnnl))
