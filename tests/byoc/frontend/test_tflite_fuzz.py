"""Fuzzing from_tflite: seeded mutations of real models must import or raise ModelError — nothing else.

The shared models are fuzzed when present, else the committed MLPerf Tiny models (tests/data/mlcommons_tiny).

Mutations: bit flips, truncation, random byte runs, and random bytes / extreme 32-bit values written into the
operator and tensor tables (offsets, vtables, vector lengths, enum fields). Each model is fuzzed in a child
process under an address-space limit (no case may allocate gigabytes) with a per-case alarm (no hangs).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.shared_models import REPO, SHARED_NAMES, committed_model, has_shared, shared_model

# (model, mutations): 2,100 cases; MobileNetV2 (4 MB) fewer times, the small models more.
SHARED_PLAN = [("hello_world_int8.tflite", 900), ("micro_speech_quantized.tflite", 700),
               ("person_detect.tflite", 300), ("mobilenet_v2_quantized_1x3x224x224.tflite", 200)]
COMMITTED_PLAN = [("kws_ref_model.tflite", 700), ("str_ww_ref_model.tflite", 600), ("ad01_int8.tflite", 300),
                  ("pretrainedResnet_quant.tflite", 300), ("vww_96_int8.tflite", 200)]
MEMORY_LIMIT = 3 << 30  # bytes of address space for the child
CASE_SECONDS = 10


def _mutate(data: bytes, rng, table_offsets: list[int]) -> bytes:
    import numpy as np
    b = bytearray(data)
    n = len(b)
    kind = int(rng.integers(0, 6))
    if kind == 0:
        for _ in range(int(rng.integers(1, 8))):
            i = int(rng.integers(0, n))
            b[i] ^= 1 << int(rng.integers(0, 8))
    elif kind == 1:
        b = b[:int(rng.integers(0, n))]
    elif kind == 2:
        i, k = int(rng.integers(0, n)), int(rng.integers(1, 16))
        b[i:i + k] = rng.integers(0, 256, k, dtype=np.uint8).tobytes()
    elif kind in (3, 4):
        pos = table_offsets[int(rng.integers(0, len(table_offsets)))] + int(rng.integers(-8, 48))
        pos = max(0, min(n - 4, pos))
        if kind == 3:
            b[pos] = int(rng.integers(0, 256))
        else:
            v = [0, 1, 2, 3, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, int(rng.integers(0, 2**32))][int(rng.integers(0, 8))]
            b[pos:pos + 4] = v.to_bytes(4, "little")
    else:
        pos = int(rng.integers(max(0, n - 4096), n - 4))
        v = [0, 0xFFFFFFFF, 0x7FFFFFFF, 1, 255][int(rng.integers(0, 5))]
        b[pos:pos + 4] = v.to_bytes(4, "little")
    return bytes(b)


def _worker(path: str, count: int, seed: int) -> dict:
    import resource
    import signal
    import time

    import numpy as np

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    from byoc.errors import ModelError
    from byoc.frontend import from_tflite
    from byoc.frontend.tflite_reader import read_model

    def on_alarm(signum, frame):
        raise TimeoutError("case took too long")

    signal.signal(signal.SIGALRM, on_alarm)
    data = open(path, "rb").read()
    model = read_model(data)
    offsets = [o.offset for o in model.operators] + [t.offset for t in model.tensors]
    rng = np.random.default_rng(seed)
    result = {"ok": 0, "model_error": 0, "escaped": [], "worst_seconds": 0.0}
    for i in range(count):
        mutated = _mutate(data, rng, offsets)
        start = time.perf_counter()
        signal.alarm(CASE_SECONDS)
        try:
            from_tflite(mutated)
            result["ok"] += 1
        except ModelError:
            result["model_error"] += 1
        except BaseException as e:  # noqa: BLE001 - anything else is the bug we are looking for
            result["escaped"].append(f"case {i}: {type(e).__name__}: {e}"[:300])
        finally:
            signal.alarm(0)
        result["worst_seconds"] = max(result["worst_seconds"], time.perf_counter() - start)
    return result


@pytest.mark.skipif(sys.platform == "win32", reason="uses resource limits and SIGALRM")
def test_mutated_models_import_or_raise_model_error():
    # The child imports byoc from this checkout (its cwd is this directory, not the repository root).
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    shared = all(has_shared(n) for n in SHARED_NAMES)
    plan = [(shared_model(n), c) for n, c in SHARED_PLAN] if shared else \
        [(committed_model(n), c) for n, c in COMMITTED_PLAN]
    procs = []
    for seed, (path, count) in enumerate(plan):
        name = path.name
        cmd = [sys.executable, __file__, str(path), str(count), str(seed)]
        procs.append((name, count, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                                    cwd=os.path.dirname(__file__))))
    total = 0
    for name, count, p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, f"{name}: fuzz worker died ({p.returncode}): {err.decode()[-2000:]}"
        res = json.loads(out.decode().strip().splitlines()[-1])
        assert not res["escaped"], f"{name}: non-ModelError exceptions: {res['escaped'][:5]}"
        assert res["ok"] + res["model_error"] == count
        # Both outcomes occur, so the mutations reach past the header and the importer still accepts benign ones.
        assert res["ok"] > 0 and res["model_error"] > 0, res
        total += count
    assert total >= 2000


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    print(json.dumps(_worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
