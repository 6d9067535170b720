"""ONNX's own backend node tests (``onnx.backend.test.loader``) run through ``from_onnx`` + ``byoc.evaluate``
for every op type the importer claims, in two forms: every input fed at run time ("fed"), and every input after
the first frozen as an initializer ("frozen"). Integer outputs must be exact, float outputs within 1e-5
(absolute and relative). A case that does not pass must fail with a ByocError (never another exception).

``python tests/byoc/frontend/onnx_conformance.py`` prints the per-op table (docs/onnx-conformance.md holds it).
"""
from __future__ import annotations

import functools
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np
import onnx

TOL = 1e-5


def claimed_ops() -> set[str]:
    from byoc.frontend.onnx.float_ops import FLOAT_CONVERTERS
    from byoc.frontend.onnx.qdq import QOPERATOR_CONVERTERS
    return set(FLOAT_CONVERTERS) | set(QOPERATOR_CONVERTERS)


@functools.lru_cache(maxsize=1)
def all_node_cases():
    from onnx.backend.test.loader import load_model_tests
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return tuple(load_model_tests(kind="node"))


def claimed_cases():
    ops = claimed_ops()
    out = []
    for c in all_node_cases():
        types = {n.op_type for n in c.model.graph.node}
        if types and types <= ops and all(n.domain in ("", "ai.onnx") for n in c.model.graph.node):
            out.append(c)
    return out


def main_op(case) -> str:
    return case.model.graph.node[-1].op_type if len(case.model.graph.node) == 1 else \
        Counter(n.op_type for n in case.model.graph.node).most_common(1)[0][0]


def frozen_model(case) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """The model with inputs 1.. turned into initializers, and the inputs still fed."""
    from onnx import numpy_helper
    m = onnx.ModelProto()
    m.CopyFrom(case.model)
    inputs = case.data_sets[0][0]
    names = [i.name for i in m.graph.input]
    for name, v in zip(names[1:], inputs[1:]):
        if isinstance(v, onnx.TensorProto):  # element types numpy cannot hold (float8, int4)
            t = onnx.TensorProto()
            t.CopyFrom(v)
            t.name = name
        else:
            t = numpy_helper.from_array(np.asarray(v), name)
        m.graph.initializer.append(t)
    del m.graph.input[1:]
    return m, list(inputs[:1])


@dataclass(frozen=True)
class Outcome:
    status: str  # "pass" | "mismatch" | "refused" | "crash"
    detail: str = ""


def _close(got, ref) -> bool:
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        return False
    if ref.dtype.kind in "iub":
        return got.dtype == ref.dtype and np.array_equal(got, ref)
    return np.allclose(got.astype(np.float64), ref.astype(np.float64), rtol=TOL, atol=TOL, equal_nan=True)


def run_case(case, form: str) -> Outcome:
    import byoc
    from byoc.errors import ByocError
    from byoc.frontend import from_onnx
    if form == "frozen":
        model, _ = frozen_model(case)
    else:
        model = case.model
    results = []
    try:
        mod, _ = from_onnx(model)
        names = [p.span.source if p.span is not None else p.name_hint for p in mod["main"].params]
        for inputs, refs in case.data_sets:
            inputs, refs = [_arr(v) for v in inputs], [_arr(v) for v in refs]
            feeds = dict(zip([i.name for i in case.model.graph.input], inputs))
            got = byoc.evaluate(mod, {n: feeds[n] for n in names})
            got = list(got) if isinstance(got, (list, tuple)) else [got]
            ok = len(got) == len(refs) and all(_close(g, r) for g, r in zip(got, refs))
            if not ok and len(got) == len(refs):
                # A few stored expectations are rounded to 4 digits (e.g. averagepool ceil cases); the onnx
                # package's reference evaluator recomputes them at full precision.
                refs = _reference(case, feeds)
                ok = refs is not None and all(_close(g, r) for g, r in zip(got, refs))
            results.append(ok)
    except ByocError as e:
        return Outcome("refused", " ".join(str(e).split())[:300])
    except Exception as e:  # noqa: BLE001 - anything else is a bug to report
        return Outcome("crash", f"{type(e).__name__}: {e}"[:200])
    return Outcome("pass" if all(results) else "mismatch")


def _arr(v):
    if isinstance(v, onnx.TensorProto):
        from onnx import numpy_helper
        return numpy_helper.to_array(v)
    return v


def _reference(case, feeds):
    try:
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(case.model).run(None, feeds)
    except Exception:  # noqa: BLE001 - no reference, keep the stored expectation's verdict
        return None


def table(cases=None) -> dict[str, dict[str, Counter]]:
    per_op: dict[str, dict[str, Counter]] = defaultdict(lambda: {"fed": Counter(), "frozen": Counter()})
    for c in cases or claimed_cases():
        for form in ("fed", "frozen"):
            per_op[main_op(c)][form][run_case(c, form).status] += 1
    return per_op


def markdown(per_op) -> str:
    lines = ["| op | cases | fed: pass | fed: refused | fed: mismatch/crash | frozen: pass | frozen: refused | "
             "frozen: mismatch/crash |", "|---|---|---|---|---|---|---|---|"]
    tot = Counter()
    for op in sorted(per_op):
        f, z = per_op[op]["fed"], per_op[op]["frozen"]
        n = sum(f.values())
        tot.update({"n": n, "fp": f["pass"], "fr": f["refused"], "fb": f["mismatch"] + f["crash"],
                    "zp": z["pass"], "zr": z["refused"], "zb": z["mismatch"] + z["crash"]})
        lines.append(f"| {op} | {n} | {f['pass']} | {f['refused']} | {f['mismatch'] + f['crash']} | {z['pass']} | "
                     f"{z['refused']} | {z['mismatch'] + z['crash']} |")
    lines.append(f"| **total** | {tot['n']} | {tot['fp']} | {tot['fr']} | {tot['fb']} | {tot['zp']} | {tot['zr']} | "
                 f"{tot['zb']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # this checkout's byoc, not an installed one
    verbose = "-v" in sys.argv
    cs = claimed_cases()
    if verbose:
        for c in cs:
            for form in ("fed", "frozen"):
                o = run_case(c, form)
                if o.status != "pass":
                    print(f"{c.name} [{form}] {o.status}: {o.detail}")
    print(markdown(table(cs)))
