"""``compare -o DIR``: every executor's outputs and the inputs as plain .npy files, listed in ``manifest.json``.

Layout: ``DIR/inputs/<i>_<name>.npy``, ``DIR/<executor>/<i>_<output name>.npy`` (names reduced to
``[A-Za-z0-9_.-]``, at most 64 characters; the manifest keeps the full names). Arrays are written with
``allow_pickle=False``.
"""
from __future__ import annotations

import json
import os
import re

import numpy as np

from ..errors import ExecutionError

__all__ = ["save_outputs"]


def _file_name(i: int, name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")[:64] or "tensor"
    return f"{i}_{safe}.npy"


def _save(path: str, a: np.ndarray) -> None:
    try:
        np.save(path, np.ascontiguousarray(a), allow_pickle=False)
    except OSError as e:
        raise ExecutionError(f"cannot write {path!r}: {e.strerror or e}") from None


def save_outputs(result, inputs: dict[str, np.ndarray], directory: str) -> list[str]:
    """Write the arrays of ``result`` (a ``CompareResult``) and ``inputs``; returns the paths written, manifest
    last."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise ExecutionError(f"cannot create directory {directory!r}: {e.strerror or e}") from None
    written: list[str] = []
    manifest = {"model": result.model, "semantics": result.semantics, "oracle": result.oracle or None,
                "inputs": [], "outputs": {}}

    def put(sub: str, i: int, name: str, a: np.ndarray) -> dict:
        os.makedirs(os.path.join(directory, sub), exist_ok=True)
        rel = os.path.join(sub, _file_name(i, name))
        _save(os.path.join(directory, rel), a)
        written.append(os.path.join(directory, rel))
        return {"file": rel, "name": name, "shape": list(a.shape), "dtype": a.dtype.name}

    for i, (name, a) in enumerate(inputs.items()):
        manifest["inputs"].append(put("inputs", i, name, np.asarray(a)))
    names = [t.name for t in result.outputs]
    for executor, arrays in result.arrays.items():
        manifest["outputs"][executor] = [put(executor, i, names[i] if i < len(names) else f"output{i}",
                                             np.asarray(a)) for i, a in enumerate(arrays)]
    path = os.path.join(directory, "manifest.json")
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
    except OSError as e:
        raise ExecutionError(f"cannot write {path!r}: {e.strerror or e}") from None
    written.append(path)
    return written
