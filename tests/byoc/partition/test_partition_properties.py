"""Property tests: on random small graphs, partition_for preserves every output bit for bit (the reference
interpreter runs the graph before and after), and the partitioned module passes the verifier (well-formed
Compiler functions, no annotation left, every original op in exactly one place)."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import byoc
from byoc.partition import verify_partitioned

from graphgen import build_float, build_quantized, random_inputs

STEPS = st.lists(st.tuples(st.integers(0, 63), st.integers(0, 63), st.integers(0, 2**16)), min_size=1,
                 max_size=8)
SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def check_preserved(mod, target, **options):
    part, report = byoc.partition_for(target, mod, return_report=True, **options)
    verify_partitioned(part, mod)
    ins = random_inputs(mod)
    before = byoc.evaluate(mod, ins)
    after = byoc.evaluate(part, ins)
    assert len(before) == len(after)
    for a, b in zip(before, after):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    # The report accounts for every op call: CPU ones with a reason.
    for n in report.cpu_ops():
        assert n.reason
    return part, report


@settings(max_examples=1000, **SETTINGS)
@given(STEPS)
def test_npu_partition_preserves_semantics(steps):
    check_preserved(build_quantized(steps), "npu")


@settings(max_examples=1000, **SETTINGS)
@given(STEPS)
def test_vta_partition_preserves_semantics(steps):
    check_preserved(build_quantized(steps), "vta")


@settings(max_examples=200, **SETTINGS)
@given(STEPS)
def test_example_accelerator_partition_preserves_semantics(steps):
    check_preserved(build_float(steps), "example_accelerator")


@settings(max_examples=150, **SETTINGS)
@given(STEPS, st.integers(1, 4), st.booleans(), st.booleans())
def test_policies_and_unmerged_regions_preserve_semantics(steps, min_size, inline_non_mac, merge):
    check_preserved(build_quantized(steps), "npu", min_partition_size=min_size, inline_non_mac=inline_non_mac,
                    merge_regions=merge)
