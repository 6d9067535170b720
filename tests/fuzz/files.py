"""File fuzzing in child processes: mutated ``.tflite`` / ``.onnx`` / artifact containers / NPU programs /
exported modules must load (and then run) or raise a ``byoc.errors.ByocError`` subclass — nothing else.

Each child runs under an address-space limit (``RLIMIT_AS``) so a loader that believes an absurd size fails with
MemoryError instead of taking the machine, and every case under ``SIGALRM`` so none runs past ``CASE_SECONDS``.
Case ``i`` of a run seeded ``s`` is rebuilt from ``np.random.default_rng([s, i])``, so a finding is reproduced by

    python -m tests.fuzz.files replay <target> <seed> <index>

A child that dies (a signal, the OOM killer) is reported with the index it was running and restarted after it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

__all__ = ["TARGETS", "run_cases", "run_file_fuzz", "FileFinding", "consume", "make_case"]

MEMORY_LIMIT = 3 << 30
CASE_SECONDS = 10
MAX_RUN_ELEMENTS = 200_000  # inputs larger than this are not fed to evaluate/simulate after a successful load


class CaseTimeout(BaseException):
    """Raised by the per-case alarm; a BaseException so ``except Exception`` in the code under test can't eat it."""


@dataclass(frozen=True)
class FileFinding:
    target: str
    seed: int
    index: int
    kind: str        # "escape" (non-ByocError exception), "timeout", "died"
    detail: str
    location: str = ""  # file:line of the innermost project frame

    def signature(self) -> str:
        head = self.detail.split(":", 1)[0]
        return f"{self.target}|{self.kind}|{head}|{self.location}"

    def reproducer(self) -> str:
        return f"python -m tests.fuzz.files replay {self.target} {self.seed} {self.index}"


# ---------------------------------------------------------------------------------------------- targets
_SEEDS: dict[str, list] = {}


def _seeds(target: str) -> list:
    if target not in _SEEDS:
        from . import mutate as m
        _SEEDS[target] = {
            "tflite": lambda: list(range(len(m.tflite_seeds_cached()))),
            "onnx": m.onnx_seeds,
            "container": m.container_seeds,
            "program": m.program_seeds,
            "artifact": _artifact_seeds,
        }[target]()
    return _SEEDS[target]


def _artifact_seeds() -> list[bytes]:
    """Exported modules (``module.export``), when this checkout can export; empty otherwise."""
    import byoc
    from . import mutate as m
    out = []
    for w in (m._small_chain(2),):
        mod, params = byoc.frontend.from_tflite(w.finish())
        exe = byoc.build(mod, target="llvm")
        if not hasattr(exe, "export"):
            return []
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.byoc")
            exe.export(p)
            out.append(open(p, "rb").read())
    return out


def artifact_available() -> bool:
    try:
        import byoc
        byoc.load  # noqa: B018 - the lazy attribute imports runtime.artifact
    except (ImportError, AttributeError):
        return False
    return True


def make_case(target: str, seed: int, index: int) -> bytes:
    from . import mutate as m
    rng = np.random.default_rng([seed, index])
    seeds = _seeds(target)
    s = seeds[int(rng.integers(0, len(seeds)))]
    if target == "tflite":
        return m.mutate_tflite(s, rng)
    if target == "onnx":
        return m.mutate_onnx(s, rng)
    if target == "container":
        return m.mutate_container(s, rng)
    if target == "program":
        return m.mutate_program(s, rng)
    return m.mutate_container(s, rng) if rng.integers(0, 2) else m.mutate_bytes(s, rng)


def _random_feed(params, rng) -> dict | None:
    feed = {}
    total = 0
    for p in params:
        t = p.type_annotation if getattr(p, "type_annotation", None) is not None else p.checked_type
        shape, dtype = tuple(int(d) for d in t.shape), str(t.dtype)
        total += int(np.prod(shape)) if shape else 1
        if total > MAX_RUN_ELEMENTS or any(d < 0 for d in shape):
            return None
        if dtype.startswith(("int", "uint")):
            info = np.iinfo(dtype)
            feed[p.name_hint] = rng.integers(info.min, info.max + 1, shape).astype(dtype)
        elif dtype == "bool":
            feed[p.name_hint] = rng.integers(0, 2, shape).astype(bool)
        else:
            feed[p.name_hint] = rng.standard_normal(shape).astype(dtype)
    return feed


def consume(target: str, data: bytes, rng: np.random.Generator) -> str:
    """Load ``data`` as ``target`` and, when that works and the inputs are small, run it. Returns "ok"."""
    import byoc
    if target in ("tflite", "onnx"):
        mod, params = (byoc.frontend.from_tflite(data) if target == "tflite" else byoc.frontend.from_onnx(data))
        feed = _random_feed(mod["main"].params, rng)
        if feed is not None:
            byoc.evaluate(mod, feed)
            if target == "tflite" and rng.integers(0, 4) == 0:
                byoc.evaluate(byoc.partition_for("npu", mod, params), feed)
        return "ok"
    if target == "container":
        from runtime.arrays import decode_array
        from runtime.container import decode_container
        meta, sections = decode_container(data)
        tensors = meta.get("tensors") if isinstance(meta, dict) else None
        if isinstance(tensors, dict):
            for k, desc in tensors.items():
                decode_array(desc, sections.get(f"tensor/{k}", b""), f"tensor {k!r}")
        return "ok"
    if target == "program":
        import npu_sim
        from npu_sim.program import Program
        prog = Program.from_bytes(data)
        feed, total = {}, 0
        for b in prog.inputs:
            total += int(np.prod(b.shape)) if b.shape else 1
            if total > MAX_RUN_ELEMENTS:
                return "ok"
            info = np.iinfo(b.dtype) if b.dtype.startswith(("int", "uint")) else None
            feed[b.name] = (rng.integers(info.min, info.max + 1, b.shape).astype(b.dtype) if info else
                            np.zeros(b.shape, b.dtype))
        npu_sim.simulate(prog, feed)
        return "ok"
    if target == "artifact":
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "case.byoc")
            with open(p, "wb") as f:
                f.write(data)
            m = byoc.load(p)
        names = getattr(m, "input_names", None)
        if names and hasattr(m, "_inputs"):
            feed = {n: np.zeros_like(m._inputs[n]) for n in names}
            m.run(feed)
        return "ok"
    raise ValueError(f"unknown target {target!r}")


TARGETS = ("tflite", "onnx", "container", "program", "artifact")


# ---------------------------------------------------------------------------------------------- child side
def _project_frame(tb) -> str:
    frames = traceback.extract_tb(tb)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for fr in reversed(frames):
        if fr.filename.startswith(root) and "/tests/" not in fr.filename and "/.venv/" not in fr.filename:
            return f"{os.path.relpath(fr.filename, root)}:{fr.lineno}"
    return f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""


def run_one(target: str, seed: int, index: int) -> tuple[str, FileFinding | None]:
    """(outcome, finding): outcome is "ok", "rejected" (a ByocError) or "finding"."""
    import signal
    from byoc.errors import ByocError

    def on_alarm(signum, frame):
        raise CaseTimeout(f"case ran longer than {CASE_SECONDS} s")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(CASE_SECONDS)
    try:
        data = make_case(target, seed, index)
        consume(target, data, np.random.default_rng([seed, index, 1]))
        return "ok", None
    except ByocError:
        return "rejected", None
    except CaseTimeout as e:
        return "finding", FileFinding(target, seed, index, "timeout", str(e))
    except BaseException as e:  # noqa: BLE001 - anything else is the bug we are hunting
        return "finding", FileFinding(target, seed, index, "escape", f"{type(e).__name__}: {e}"[:600],
                                      _project_frame(e.__traceback__))
    finally:
        signal.alarm(0)


def run_cases(target: str, seed: int, start: int, count: int, deadline: float, progress: str | None) -> dict:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    result = {"target": target, "seed": seed, "ok": 0, "rejected": 0, "cases": 0, "findings": [],
              "worst_seconds": 0.0}
    if not _seeds(target):
        result["skipped"] = f"no {target} seeds in this checkout"
        return result
    for i in range(start, start + count):
        if time.time() > deadline:
            break
        if progress:
            with open(progress, "w") as f:
                f.write(str(i))
        t0 = time.perf_counter()
        outcome, finding = run_one(target, seed, i)
        result["worst_seconds"] = max(result["worst_seconds"], time.perf_counter() - t0)
        result["cases"] += 1
        if finding is None:
            result[outcome] += 1
        else:
            result["findings"].append(finding.__dict__)
    return result


# ---------------------------------------------------------------------------------------------- parent side
@dataclass
class TargetSummary:
    target: str
    cases: int = 0
    ok: int = 0
    rejected: int = 0
    findings: list[FileFinding] = field(default_factory=list)
    worst_seconds: float = 0.0
    skipped: str = ""


def _spawn(target, seed, start, count, deadline, progress) -> subprocess.Popen:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "tests.fuzz.files", "run", target, str(seed), str(start), str(count),
           repr(deadline), progress]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=root)


def run_file_fuzz(plan: dict[str, int], seed: int, *, workers: int = 2, deadline: float | None = None,
                  chunk: int = 500) -> dict[str, TargetSummary]:
    """Run ``plan`` ({target: cases}) in child processes, ``workers`` at a time, in chunks of ``chunk`` cases."""
    deadline = deadline if deadline is not None else time.time() + 3600
    jobs = []
    for t, n in plan.items():
        for start in range(0, n, chunk):
            jobs.append((t, start, min(chunk, n - start)))
    summaries = {t: TargetSummary(t) for t in plan}
    running: list[tuple] = []
    tmp = tempfile.mkdtemp(prefix="byoc-fuzz-")
    while jobs or running:
        while jobs and len(running) < workers:
            t, start, n = jobs.pop(0)
            progress = os.path.join(tmp, f"{t}-{start}.progress")
            running.append((t, start, n, progress, _spawn(t, seed, start, n, deadline, progress)))
        t, start, n, progress, p = running.pop(0)
        out, err = p.communicate()
        s = summaries[t]
        if p.returncode == 0:
            res = json.loads(out.decode().strip().splitlines()[-1])
            s.cases += res["cases"]
            s.ok += res["ok"]
            s.rejected += res["rejected"]
            s.worst_seconds = max(s.worst_seconds, res["worst_seconds"])
            s.skipped = res.get("skipped", "")
            s.findings.extend(FileFinding(**f) for f in res["findings"])
            continue
        # The child died: blame the case it was running and carry on after it.
        try:
            last = int(open(progress).read())
        except (OSError, ValueError):
            last = start
        s.findings.append(FileFinding(t, seed, last, "died", f"child exited with {p.returncode}: "
                                      f"{err.decode(errors='replace')[-400:]}"))
        s.cases += last - start + 1
        if last + 1 < start + n:
            jobs.insert(0, (t, last + 1, start + n - last - 1))
    return summaries


def main(argv: list[str]) -> int:
    if argv[:1] == ["run"]:
        target, seed, start, count, deadline, progress = argv[1:7]
        res = run_cases(target, int(seed), int(start), int(count), float(deadline), progress)
        print(json.dumps(res))
        return 0
    if argv[:1] == ["replay"]:
        target, seed, index = argv[1], int(argv[2]), int(argv[3])
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        data = make_case(target, seed, index)
        print(f"case {target} seed {seed} index {index}: {len(data)} bytes")
        consume(target, data, np.random.default_rng([seed, index, 1]))  # raises what the fuzzer saw
        print("loaded and ran without error")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
