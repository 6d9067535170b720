"""Random-graph properties run by tests/test_fuzz_ci.py in a child pytest (so a crash in generated code
cannot take the whole test session down). Run directly: ``python -m pytest tests/fuzz/graph_properties.py``.

Each graph (tests/fuzz/graphs.py, derandomized) is run by LiteRT BUILTIN_REF (the oracle), imported, partitioned
for npu and vta, built, run on every executor and compared bit for bit. Findings saved as open regressions
(tests/regressions/data, status "open") are known bugs; only exactly those signatures are tolerated.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.differential import ALL_EXECUTORS, check_model
from tests.fuzz.graphs import graph_cases
from tests.fuzz.regressions import known_signatures

pytest.importorskip("ai_edge_litert.interpreter")

KNOWN = known_signatures()
CHEAP = ("interpreter", "partitioned:npu", "partitioned:vta")
_SETTINGS = dict(deadline=None, database=None, derandomize=True, print_blob=False,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.filter_too_much])


def _check(case, executors) -> None:
    scratch = os.environ.get("BYOC_FUZZ_CURRENT_CASE")
    if scratch:  # so the parent can name the case if this process dies
        np.savez(scratch, model=np.frombuffer(case.model, np.uint8), log=np.array("\n".join(case.log)),
                 **{f"in_{i}": a for i, a in enumerate(case.inputs)})
    rep = check_model(case.model, case.inputs, executors)
    assert rep.rejected is None, f"the generator wrote a model LiteRT refuses: {rep.rejected}"
    new = [f for f in rep.findings if f.signature() not in KNOWN]
    assert not new, "\n".join(f.render() for f in new) + "\n" + rep.render()


@settings(max_examples=400, **_SETTINGS)
@given(graph_cases(max_ops=6, max_side=6, max_channels=6))
def test_random_graphs_interpreter_and_partitions_match_litert(case):
    _check(case, CHEAP)


# no shrinking here: a shrink through every build takes minutes; `make fuzz` shrinks and saves failures
@settings(max_examples=120, phases=(Phase.explicit, Phase.generate), **_SETTINGS)
@given(graph_cases(max_ops=5, max_side=5, max_channels=5))
def test_random_graphs_all_executors_match_litert(case):
    _check(case, ALL_EXECUTORS)


