"""Tensors in artifacts: raw little-endian bytes plus a JSON descriptor, validated before any allocation."""
from __future__ import annotations

import numpy as np

from byoc.errors import ArtifactError

__all__ = ["ALLOWED_DTYPES", "describe_array", "decode_array"]

ALLOWED_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "float16", "float32",
                  "float64")
MAX_RANK = 8


def describe_array(a: np.ndarray) -> tuple[dict, bytes]:
    a = np.ascontiguousarray(a)
    dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    return {"dtype": a.dtype.name, "shape": list(a.shape)}, a.astype(dt, copy=False).tobytes()


def decode_array(desc: object, blob: bytes, what: str) -> np.ndarray:
    """The array ``desc`` describes, from ``blob``; every field is checked against the blob's actual size."""
    if not isinstance(desc, dict):
        raise ArtifactError(f"{what}: tensor descriptor is not an object")
    dtype, shape = desc.get("dtype"), desc.get("shape")
    if dtype not in ALLOWED_DTYPES:
        raise ArtifactError(f"{what}: dtype {dtype!r} is not allowed", hint=", ".join(ALLOWED_DTYPES))
    if not isinstance(shape, list) or len(shape) > MAX_RANK or \
            not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < (1 << 40) for d in shape):
        raise ArtifactError(f"{what}: shape {shape!r} is malformed")
    count = 1
    for d in shape:
        count *= d
    nbytes = count * np.dtype(dtype).itemsize
    if nbytes != len(blob):
        raise ArtifactError(f"{what}: shape {tuple(shape)} of {dtype} needs {nbytes} bytes, the section has "
                            f"{len(blob)}", hint="the artifact is corrupt")
    return np.frombuffer(blob, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype, copy=False).reshape(shape)
