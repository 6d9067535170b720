"""``partition_for`` runs AnnotateTarget → MergeCompilerRegions → PartitionGraph as one pass that works on the
un-annotated graph when a body is plain dataflow (``AnnotateMergePartition``). The oracle is the annotation
passes themselves: on random graphs both must give the same module text, the same partition names and the same
placement decisions, whichever options are set."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import byoc
import patterns
from byoc import relay
from byoc.relay.transform import (AnnotateTarget, InferType, MergeCompilerRegions, MergeComposite,
                                  PartitionGraph)
from byoc.transform.partition_graph import AnnotateMergePartition, direct_order
from byoc.transform.pass_infra import PassContext
from byoc.transform.placement import LOG_KEY, PlacementLog

from graphgen import build_float, build_quantized

STEPS = st.lists(st.tuples(st.integers(0, 63), st.integers(0, 63), st.integers(0, 2**16)), min_size=1,
                 max_size=10)
SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def _decisions(log: PlacementLog) -> list[tuple]:
    return [(id(d.node), d.op, d.target, d.reasons, d.function, d.inner_ops) for d in log.decisions]


def _both_ways(mod, target: str, merge: bool, bind: bool):
    mod = MergeComposite(patterns.get_pattern_table(target))(InferType()(mod))
    direct_log, passes_log = PlacementLog(), PlacementLog()
    with PassContext(config={LOG_KEY: direct_log}):
        direct = AnnotateMergePartition(target, merge, "default", bind)(mod)
    with PassContext(config={LOG_KEY: passes_log}):
        annotated = AnnotateTarget(target)(mod)
        merged = MergeCompilerRegions()(annotated) if merge else annotated
        by_passes = PartitionGraph("default", bind)(merged)
    return mod, direct, by_passes, _decisions(direct_log), _decisions(passes_log)


def _single_sink(mod, k: int = 0):
    """The graph of one output of a (possibly multi-output) random graph: plain dataflow, no tuple."""
    body = mod["main"].body
    out = body.fields[min(k, len(body.fields) - 1)] if isinstance(body, relay.Tuple) else body
    return byoc.IRModule.from_expr(relay.Function(mod["main"].params, out))


@settings(max_examples=60, **SETTINGS)
@given(STEPS, st.sampled_from(["npu", "vta"]), st.booleans(), st.booleans(), st.integers(0, 3))
def test_direct_partitioning_equals_the_annotation_passes(steps, target, merge, bind, k):
    mod, direct, by_passes, d1, d2 = _both_ways(_single_sink(build_quantized(steps), k), target, merge, bind)
    assert direct_order(mod["main"].body) is not None  # the direct path is the one compared
    assert direct.astext() == by_passes.astext()
    assert [gv.name_hint for gv in direct.get_global_vars()] == [gv.name_hint for gv in by_passes.get_global_vars()]
    assert d1 == d2


@settings(max_examples=25, **SETTINGS)
@given(STEPS, st.booleans())
def test_direct_partitioning_on_float_graphs(steps, merge):
    _, direct, by_passes, d1, d2 = _both_ways(_single_sink(build_float(steps)), "example_accelerator", merge, True)
    assert direct.astext() == by_passes.astext() and d1 == d2


@settings(max_examples=25, **SETTINGS)
@given(STEPS)
def test_bodies_with_tuples_take_the_annotation_passes(steps):
    """Several outputs make a tuple body: the pass falls back to the annotation passes, same result."""
    mod, direct, by_passes, d1, d2 = _both_ways(build_quantized(steps), "npu", True, True)
    if isinstance(mod["main"].body, relay.Tuple):
        assert direct_order(mod["main"].body) is None
    assert direct.astext() == by_passes.astext() and d1 == d2


def test_partition_for_report_is_unchanged_by_the_direct_path():
    """With a pass instrument partition_for runs the three passes one by one; without, the direct pass."""
    from byoc.transform.pass_infra import PassTimingInstrument
    mod = _single_sink(build_quantized([(4, 0, 1), (0, 1, 2), (8, 2, 3), (4, 5, 4), (11, 0, 5), (15, 0, 6)]))
    fast, fast_report = byoc.partition_for("npu", mod, return_report=True)
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        slow, slow_report = byoc.partition_for("npu", mod, return_report=True)
    assert "PartitionGraph" in [name for name, _ in timing.timings]
    assert fast.astext() == slow.astext()
    assert fast_report.render() == slow_report.render()
    assert fast_report.nodes == slow_report.nodes
