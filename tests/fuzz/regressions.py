"""Saved fuzz findings: ``tests/regressions/data/*.npz`` (numpy archives, read with ``allow_pickle=False``).

Graph cases hold the ``.tflite`` bytes, the inputs and the op log; file cases hold the mutated bytes and the
target loader. Every case carries ``status`` ("open": a known bug, replayed as a strict xfail so the test turns
red when it is fixed and the mark can go; "fixed": must pass), a ``note`` and the finding ``signature``.
``python -m tests.fuzz.regressions replay-file <path>`` runs one file case under the fuzzer's limits;
``replay-graph <path>`` runs one graph case through every executor (a child that dies is itself the finding).
"""
from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["DATA_DIR", "HEAP_CHECK_ENV", "SavedCase", "save_graph_case", "save_file_case", "load_case", "saved_cases",
           "known_signatures"]

DATA_DIR = Path(__file__).resolve().parents[1] / "regressions" / "data"


def _heap_check_env() -> dict[str, str]:
    """glibc checks the heap on every free and poisons freed memory: generated code that writes out of bounds
    then crashes at the case that did it instead of at some later allocation (set for every child that runs
    graphs). Since glibc 2.34 MALLOC_CHECK_ works only with libc_malloc_debug.so preloaded; it is preloaded
    when this machine has it."""
    env = {"MALLOC_CHECK_": "3", "MALLOC_PERTURB_": "165"}
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib"):
        lib = Path(d) / "libc_malloc_debug.so.0"
        if lib.is_file() and sys.platform.startswith("linux"):
            env["LD_PRELOAD"] = " ".join(filter(None, [os.environ.get("LD_PRELOAD", ""), str(lib)]))
            break
    return env


HEAP_CHECK_ENV = _heap_check_env()


@dataclass(frozen=True)
class SavedCase:
    path: Path
    kind: str                       # "graph" | "file"
    status: str                     # "open" | "fixed"
    note: str
    signature: str
    model: bytes = b""
    inputs: tuple[np.ndarray, ...] = ()
    log: str = ""
    target: str = ""
    data: bytes = b""
    rng_key: tuple[int, ...] = (0,)


def _name(kind: str, signature: str) -> str:
    return f"{kind}-{hashlib.sha1(signature.encode()).hexdigest()[:12]}.npz"


def _write(path: Path, arrays: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, path)
    return path


def save_graph_case(model: bytes, inputs, signature: str, note: str, log: str = "", status: str = "open",
                    directory: Path = DATA_DIR) -> Path:
    arrays = {"kind": np.array("graph"), "status": np.array(status), "note": np.array(note),
              "signature": np.array(signature), "log": np.array(log),
              "model": np.frombuffer(model, np.uint8)}
    for i, a in enumerate(inputs):
        arrays[f"in_{i}"] = np.asarray(a)
    return _write(directory / _name("graph", signature), arrays)


def save_file_case(target: str, data: bytes, signature: str, note: str, status: str = "open",
                   rng_key: tuple[int, ...] = (0,), directory: Path = DATA_DIR) -> Path:
    """``rng_key`` seeds the random inputs fed to the model after a successful load (as the fuzzer did)."""
    arrays = {"kind": np.array("file"), "status": np.array(status), "note": np.array(note),
              "signature": np.array(signature), "target": np.array(target), "data": np.frombuffer(data, np.uint8),
              "rng_key": np.asarray(rng_key, np.int64)}
    return _write(directory / _name(f"file-{target}", signature), arrays)


def load_case(path: Path) -> SavedCase:
    with np.load(path, allow_pickle=False) as z:
        kind = str(z["kind"])
        common = dict(path=Path(path), kind=kind, status=str(z["status"]), note=str(z["note"]),
                      signature=str(z["signature"]))
        if kind == "graph":
            n = sum(1 for k in z.files if k.startswith("in_"))
            return SavedCase(**common, model=z["model"].tobytes(), inputs=tuple(z[f"in_{i}"] for i in range(n)),
                             log=str(z["log"]))
        return SavedCase(**common, target=str(z["target"]), data=z["data"].tobytes(),
                         rng_key=tuple(int(v) for v in z["rng_key"]))


def saved_cases(directory: Path = DATA_DIR) -> list[SavedCase]:
    return [load_case(p) for p in sorted(directory.glob("*.npz"))] if directory.is_dir() else []


def known_signatures(directory: Path = DATA_DIR) -> dict[str, str]:
    """Signatures of open (not yet fixed) findings → note; the long fuzzer does not re-report them."""
    return {c.signature: c.note for c in saved_cases(directory) if c.status == "open"}


def replay_file(path: str) -> int:
    """Child side of a file regression: load (and run) the case under the fuzzer's limits; exit 0 when only
    a ByocError (or nothing) came out."""
    import resource
    import signal

    from byoc.errors import ByocError

    from .files import CASE_SECONDS, MEMORY_LIMIT, CaseTimeout, consume

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    def on_alarm(signum, frame):
        raise CaseTimeout(f"case ran longer than {CASE_SECONDS} s")

    signal.signal(signal.SIGALRM, on_alarm)
    case = load_case(Path(path))
    signal.alarm(CASE_SECONDS)
    try:
        consume(case.target, case.data, np.random.default_rng(list(case.rng_key)))
        print("ok")
    except ByocError as e:
        print(f"rejected: {type(e).__name__}: {str(e)[:300]}")
    finally:
        signal.alarm(0)
    return 0


def replay_graph(path: str) -> int:
    """Child side of a graph regression: every executor on the saved model; prints a JSON report."""
    import json

    from .differential import ALL_EXECUTORS, check_model
    case = load_case(Path(path))
    rep = check_model(case.model, case.inputs, ALL_EXECUTORS)
    print(json.dumps({"rejected": rep.rejected, "signatures": sorted({f.signature() for f in rep.findings}),
                      "ran": rep.ran, "report": rep.render()[:4000]}))
    return 0


def set_status(path: str, status: str) -> int:
    """Flip a saved case between "open" and "fixed" (the archive is rewritten with every other field kept)."""
    if status not in ("open", "fixed"):
        print(f"status must be open or fixed, not {status!r}")
        return 2
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["status"] = np.array(status)
    _write(Path(path), arrays)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["replay-file"]:
        sys.exit(replay_file(sys.argv[2]))
    if sys.argv[1:2] == ["replay-graph"]:
        sys.exit(replay_graph(sys.argv[2]))
    if sys.argv[1:2] == ["set-status"]:
        sys.exit(set_status(sys.argv[2], sys.argv[3]))
    print(__doc__)
    sys.exit(2)
