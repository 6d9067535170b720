"""How many convolutions, depthwise convolutions and fully connected layers — and quantized activations,
softmaxes and means (``ACT_KINDS``) — TVM's own pattern tables offload on a model imported by byoc, and whether
partitioning changed the result (it must not, bit for bit).

Run as a script for the measurement table: ``python tests/byoc/tvm/table_offload.py MODEL.tflite ...``."""
from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # this checkout's byoc, not an installed one

KINDS = ("conv2d", "depthwise", "dense")
# The float op of TVM's dequantize → f → quantize form (or cast → mean → requantize), or byoc's integer op.
ACT_KINDS = ("softmax", "mean", "sigmoid", "tanh", "hard_swish", "leaky_relu")
_ACT_OPS = {"nn.softmax": "softmax", "qnn.softmax": "softmax", "mean": "mean", "qnn.mean": "mean",
            "sigmoid": "sigmoid", "qnn.sigmoid": "sigmoid", "tanh": "tanh", "qnn.tanh": "tanh",
            "qnn.hardswish": "hard_swish", "nn.leaky_relu": "leaky_relu", "qnn.leaky_relu": "leaky_relu"}
_HERE = Path(__file__).parent


def op_kind(node) -> str | None:
    from byoc.ir.expr import Call, Op
    if not isinstance(node, Call) or not isinstance(node.op, Op):
        return None
    name = node.op.name
    if name in ("qnn.conv2d", "nn.conv2d"):
        return "depthwise" if int(node.attrs.groups) > 1 else "conv2d"
    if name in ("qnn.dense", "nn.dense"):
        return "dense"
    if name == "divide" and _is_hard_swish(node):
        return "hard_swish"
    return _ACT_OPS.get(name)


def _is_hard_swish(div) -> bool:
    """The divide(multiply(x, clip(add(x, 3))), 6) of TVM's HARD_SWISH form."""
    from byoc.ir.expr import Call
    m = div.args[0]
    return isinstance(m, Call) and getattr(m.op, "name", "") == "multiply" and isinstance(m.args[1], Call) \
        and getattr(m.args[1].op, "name", "") == "clip"


def count_kinds(mod) -> tuple[Counter, Counter]:
    """(all, offloaded): ops of each kind in the module, and those inside ``Compiler`` functions."""
    from byoc.ir.expr import Function
    from byoc.ir.traversal import post_order
    total, offloaded = Counter(), Counter()
    for gv, func in mod.functions.items():
        if not isinstance(func, Function):
            continue
        external = "Compiler" in func.attrs
        for n in post_order(func.body):
            k = op_kind(n)
            if k:
                total[k] += 1
                if external:
                    offloaded[k] += 1
            if isinstance(n, Function) and "Compiler" in n.attrs:  # inline partitions (not lifted)
                for m in post_order(n.body):
                    k = op_kind(m)
                    if k:
                        offloaded[k] += 1
    return total, offloaded


@dataclass
class Result:
    table: str
    total: Counter
    offloaded: Counter
    partitions: int
    identical: bool | None = None
    error: str = ""
    failed_checks: Counter = field(default_factory=Counter)


def random_inputs(mod, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for p in mod["main"].params:
        t = p.type_annotation
        if np.dtype(t.dtype).kind in "iu":
            info = np.iinfo(t.dtype)
            out[p.name_hint] = rng.integers(info.min, int(info.max) + 1, size=t.shape, dtype=t.dtype)
        else:
            out[p.name_hint] = rng.standard_normal(t.shape).astype(t.dtype)
    return out


def partition_functions(mods) -> dict[str, object]:
    return {"cmsis-nn": mods["tvm_cmsisnn"].partition_for_cmsisnn,
            "ethos-u": mods["tvm_ethosu"].partition_for_ethosu,
            "arm_compute_lib": mods["tvm_arm_compute_lib"].partition_for_arm_compute_lib}


def track_failed_checks(table) -> tuple[list, Counter]:
    """Wrap each entry's check to count the entries whose check returned False (TVM checks give no reason)."""
    failed: Counter = Counter()
    wrapped = []
    for name, pattern, check in table:
        if check is None:
            wrapped.append((name, pattern))
            continue

        def w(expr, _check=check, _name=name):
            ok = _check(expr)
            if not ok:
                failed[_name] += 1
            return ok
        wrapped.append((name, pattern, w))
    return wrapped, failed


def measure(model_path, mods, check_outputs: bool = True) -> list[Result]:
    import byoc
    from byoc import relay
    mod, params = relay.frontend.from_tflite(Path(model_path).read_bytes())
    inputs = random_inputs(mod)
    ref = byoc.evaluate(mod, inputs) if check_outputs else None
    results = []
    for table, fn in partition_functions(mods).items():
        total, _ = count_kinds(mod)
        try:
            out = fn(mod.copy(), params)
        except Exception as e:  # noqa: BLE001 - reported in the measurement table
            results.append(Result(table, total, Counter(), 0, None, f"{type(e).__name__}: {e}"))
            continue
        _, offloaded = count_kinds(out)
        parts = sum(1 for f in out.functions.values() if "Compiler" in getattr(f, "attrs", {}))
        identical = None
        if check_outputs:
            got = byoc.evaluate(out, inputs)
            identical = len(got) == len(ref) and all(
                a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes() for a, b in zip(got, ref))
        results.append(Result(table, total, offloaded, parts, identical))
    return results


def main(argv: list[str]) -> None:
    from tvm_tables import load_tables
    import tempfile
    mods = load_tables(Path(tempfile.mkdtemp(prefix="tvm_tables_")))
    kinds = KINDS + ACT_KINDS
    print(f"| model | table | {' | '.join(kinds)} | partitions | bit-identical |")
    print("|---|---|" + "---|" * len(kinds) + "---|---|")
    for path in argv:
        for r in measure(path, mods):
            cells = [f"{r.offloaded[k]}/{r.total[k]}" if r.total[k] else "-" for k in kinds]
            print(f"| {Path(path).name} | {r.table} | {' | '.join(cells)} | {r.partitions} | "
                  f"{r.identical if not r.error else r.error[:60]} |")


if __name__ == "__main__":
    main(sys.argv[1:])

