"""LiteRT's reference kernels in a child process, so a CHECK failure inside LiteRT cannot kill the fuzzer.

LiteRT's BUILTIN_REF kernels abort the whole process on some valid models (SOFTMAX with an int8 output
``abort()``s when a row's sum of exponentials reaches 2^28, e.g. 512 entries equal to the row maximum; found by
``make fuzz``). Run in-process, that abort killed the long-lived graph worker. ``LiteRTOracle`` keeps one child
running ``python -m tests.fuzz.oracle``; requests and replies are ``.npz`` blobs (no pickles) behind a length
header. A child that dies mid-request is reported as ``OracleDied`` and replaced for the next request.
"""
from __future__ import annotations

import functools
import io
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np

__all__ = ["LiteRTOracle", "OracleDied", "OracleRefused", "default_oracle"]

_HEADER = struct.Struct("<Q")


class OracleRefused(Exception):
    """LiteRT raised an error for the model (it says nothing about it)."""


class OracleDied(Exception):
    """The LiteRT child died while running the model (a crash or CHECK failure inside LiteRT)."""

    def __init__(self, returncode: int | None, stderr_tail: str):
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        super().__init__(f"LiteRT's child process died (exit {returncode}) running this model"
                         + (f": {stderr_tail}" if stderr_tail else ""))


def _pack(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    blob = buf.getvalue()
    return _HEADER.pack(len(blob)) + blob


def _read_exact(stream, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _unpack(stream) -> dict[str, np.ndarray] | None:
    head = _read_exact(stream, _HEADER.size)
    if head is None:
        return None
    blob = _read_exact(stream, _HEADER.unpack(head)[0])
    if blob is None:
        return None
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


class LiteRTOracle:
    """``run(model, inputs, preserve=False) -> (outputs, tensors by name)``, like ``litert_run``, in a child."""

    def __init__(self):
        self._proc: subprocess.Popen | None = None
        self.deaths = 0

    def _start(self) -> subprocess.Popen:
        root = Path(__file__).resolve().parents[2]
        env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("LD_PRELOAD", None)
        return subprocess.Popen([sys.executable, "-m", "tests.fuzz.oracle"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=root)

    def run(self, model: bytes, inputs, preserve: bool = False):
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self._start()
        p = self._proc
        request = {"model": np.frombuffer(model, np.uint8), "preserve": np.array(bool(preserve))}
        request.update({f"in_{i}": np.asarray(a) for i, a in enumerate(inputs)})
        try:
            p.stdin.write(_pack(request))
            p.stdin.flush()
            reply = _unpack(p.stdout)
        except (BrokenPipeError, OSError):
            reply = None
        if reply is None:
            self._proc = None
            self.deaths += 1
            try:
                p.kill()
                _, err = p.communicate(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                err = b""
            tail = err.decode(errors="replace").strip().splitlines()
            raise OracleDied(p.returncode, tail[-1][:300] if tail else "")
        if "error" in reply:
            raise OracleRefused(str(reply["error"]))
        outs = [reply[f"out_{i}"] for i in range(int(reply["num_outputs"]))]
        tensors = {str(n): reply[f"t_{i}"] for i, n in enumerate(reply.get("names", np.array([], str)))}
        return outs, tensors

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None


@functools.cache
def default_oracle() -> LiteRTOracle:
    """One oracle per process; its child starts on the first request."""
    return LiteRTOracle()


def _serve() -> None:
    from .differential import litert_run
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        req = _unpack(stdin)
        if req is None:
            return
        inputs = [req[f"in_{i}"] for i in range(sum(1 for k in req if k.startswith("in_")))]
        try:
            outs, tensors = litert_run(req["model"].tobytes(), inputs, preserve=bool(req["preserve"]))
        except Exception as e:  # noqa: BLE001 - LiteRT refuses the model: the parent decides what that means
            reply = {"error": np.array(f"{type(e).__name__}: {e}"[:500])}
        else:
            names = sorted(tensors)
            reply = {"num_outputs": np.array(len(outs)), "names": np.array(names, dtype=str)}
            reply.update({f"out_{i}": o for i, o in enumerate(outs)})
            reply.update({f"t_{i}": tensors[n] for i, n in enumerate(names)})
        stdout.write(_pack(reply))
        stdout.flush()


if __name__ == "__main__":
    _serve()
