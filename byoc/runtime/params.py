"""``save_param_dict`` / ``load_param_dict``: a name → tensor dict in the checksummed container format
(``runtime/container.py``), every field checked on load (``runtime/arrays.py``); never pickle."""
from __future__ import annotations

import numpy as np

from ..errors import ArtifactError
from ..nd import NDArray, as_ndarray

__all__ = ["save_param_dict", "load_param_dict"]

_FORMAT = "byoc-params"
_MAX_PARAMS = 1 << 20


def save_param_dict(params: dict) -> bytes:
    """The bytes of ``params`` (names sorted: the same dict always gives the same bytes)."""
    from runtime.arrays import describe_array
    from runtime.container import encode_container
    entries, sections = [], {}
    for i, (name, value) in enumerate(sorted(params.items(), key=lambda kv: str(kv[0]))):
        desc, blob = describe_array(np.asarray(value))
        entries.append({"name": str(name), **desc, "section": f"param:{i}"})
        sections[f"param:{i}"] = blob
    return encode_container({"format": _FORMAT, "params": entries}, sections)


def load_param_dict(data) -> dict[str, NDArray]:
    """What ``save_param_dict`` wrote; anything else is an ``ArtifactError`` saying what is wrong."""
    from runtime.arrays import decode_array
    from runtime.container import decode_container
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ArtifactError(f"load_param_dict expects bytes, got {type(data).__name__}")
    meta, sections = decode_container(bytes(data), "<param dict>")
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise ArtifactError("not a parameter dict written by save_param_dict",
                            hint=f"expected format {_FORMAT!r}, found {meta.get('format') if isinstance(meta, dict) else meta!r}")
    entries = meta.get("params")
    if not isinstance(entries, list) or len(entries) > _MAX_PARAMS:
        raise ArtifactError("parameter dict: 'params' is not a list of entries")
    out: dict[str, NDArray] = {}
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) or not isinstance(e.get("section"), str) \
                or e["section"] not in sections:
            raise ArtifactError(f"parameter dict: entry {i} is malformed or names a missing section")
        if e["name"] in out:
            raise ArtifactError(f"parameter dict: {e['name']!r} appears twice")
        arr = decode_array(e, sections[e["section"]], f"parameter {e['name']!r}")
        out[e["name"]] = as_ndarray(np.array(arr, copy=True))
    return out
