"""Long-running random-graph fuzzing: hypothesis with fresh seeds until a deadline; each new failure is shrunk
and saved as a regression case (``tests/regressions/data/graph-*.npz``).

Once a failure is seen, the rest of that hypothesis run (the shrink) re-checks only the executor that failed and
counts only the same failure signature, so shrinking is fast and keeps the bug it started with. Signatures that
are already saved as open regressions are not reported again, so the fuzzer keeps looking for new bugs.

Run as a child of ``python -m tests.fuzz``: ``python -m tests.fuzz.graph_fuzz <deadline> <seed> <max_ops> <out>``.
Before each example the case is written to ``<out>/current.npz`` so the parent can save it if the child dies.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .differential import ALL_EXECUTORS, check_model
from .regressions import DATA_DIR, known_signatures, save_graph_case

__all__ = ["GraphFuzzResult", "fuzz_graphs"]

SHRINK_SECONDS = 120   # per failure
SHRINK_GRACE = 60      # how far a shrink may run past the deadline
SIZES = ({"max_side": 8, "max_channels": 8}, {"max_side": 20, "max_channels": 24, "max_elements": 24_000})


@dataclass
class GraphFuzzResult:
    examples: int = 0
    rejected: int = 0
    oracle_died: int = 0          # LiteRT aborted on the model (it runs in a child; see tests.fuzz.oracle)
    known_hits: dict[str, int] = field(default_factory=dict)
    saved: list[dict] = field(default_factory=list)
    executors_run: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


class _Found(AssertionError):
    pass


def _executors_for(executor: str) -> tuple[str, ...]:
    if executor == "npu_sim+llvm":
        return ("npu,llvm",)
    if executor.startswith("import"):
        return ("interpreter",)
    return (executor,) if executor in ALL_EXECUTORS else ALL_EXECUTORS


def fuzz_graphs(deadline: float, seed: int, max_ops: int = 10, out_dir: Path = DATA_DIR,
                scratch: Path | None = None, batch: int = 50) -> GraphFuzzResult:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    from .graphs import graph_cases

    res = GraphFuzzResult()
    known = dict(known_signatures(out_dir))
    state: dict = {"target": None, "executors": ALL_EXECUTORS, "last": None, "shrink_until": 0.0}

    def check(case) -> None:
        now = time.time()
        if state["target"] is None and now > deadline:
            return
        if state["target"] is not None and now > min(state["shrink_until"], deadline + SHRINK_GRACE):
            # Out of shrink time: fail at once without running anything, so hypothesis's shrinker converges
            # quickly; state["last"] keeps the smallest case that really failed.
            raise _Found("shrink time is up")
        if scratch is not None:
            np.savez(scratch / "current.npz", model=np.frombuffer(case.model, np.uint8),
                     log=np.array("\n".join(case.log)), **{f"in_{i}": a for i, a in enumerate(case.inputs)})
        rep = check_model(case.model, case.inputs, state["executors"])
        if rep.oracle_died:
            res.oracle_died += 1
        if rep.rejected:
            res.rejected += 1
            return
        res.examples += 1
        for e in rep.ran:
            res.executors_run[e] = res.executors_run.get(e, 0) + 1
        res.skipped.update(rep.skipped)
        for f in rep.findings:
            sig = f.signature()
            if state["target"] is None and sig in known:
                res.known_hits[sig] = res.known_hits.get(sig, 0) + 1
                continue
            if state["target"] is None:
                state["target"] = sig
                state["executors"] = _executors_for(f.executor)
                state["shrink_until"] = time.time() + SHRINK_SECONDS
            if sig == state["target"]:
                state["last"] = (case, f)
                raise _Found(f.render())

    run_index = 0
    while time.time() < deadline:
        state.update(target=None, executors=ALL_EXECUTORS, last=None)
        # alternate small graphs with larger ones (NPU tiling, multi-block CPU kernels)
        sizes = SIZES[run_index % len(SIZES)]
        test = settings(max_examples=batch, deadline=None, database=None, derandomize=False,
                        suppress_health_check=list(HealthCheck))(
            given(graph_cases(max_ops=max_ops, **sizes))(check))
        test = hseed(seed * 1_000_003 + run_index)(test)
        run_index += 1
        try:
            test()
        except _Found:
            pass
        except Exception as e:  # noqa: BLE001 - hypothesis itself (flaky shrink, ...) must not stop the run
            if state["last"] is None:
                res.skipped[f"hypothesis run {run_index}"] = f"{type(e).__name__}: {e}"[:300]
        if state["last"] is not None:
            case, f = state["last"]
            sig = f.signature()
            path = save_graph_case(case.model, case.inputs, sig, f.render()[:4000], "\n".join(case.log),
                                   directory=out_dir)
            known[sig] = f.render()
            res.saved.append({"signature": sig, "path": str(path), "finding": f.render()[:1500],
                              "log": list(case.log)})
    return res


def main(argv: list[str]) -> int:
    deadline, seed, max_ops, out = float(argv[0]), int(argv[1]), int(argv[2]), Path(argv[3])
    scratch = Path(argv[4]) if len(argv) > 4 else None
    res = fuzz_graphs(deadline, seed, max_ops, out, scratch)
    print(json.dumps(res.__dict__))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
