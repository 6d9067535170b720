"""The compiled-artifact container: a versioned, checksummed, section-based binary file.

Layout (all integers little-endian):

    magic        8 bytes   b"BYOCART\\0"
    version      u32       FORMAT_VERSION
    header_len   u32       length of the JSON header
    header_hash  32 bytes  SHA-256 of the JSON header
    header       header_len bytes of UTF-8 JSON: {"meta": {...}, "sections": [{"name", "offset", "size",
                 "sha256"}, ...]}; offsets are relative to the end of the header
    payload      the sections, back to back, in header order

Reading validates everything before allocating anything large: the magic, the version, that the header fits in
the file, its hash, that the sections tile the payload exactly (sizes add up to the file length), and each
section's hash. Nothing in the file is ever executed or unpickled: the header is JSON, sections are bytes.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct

from byoc.errors import ArtifactError

__all__ = ["MAGIC", "FORMAT_VERSION", "write_container", "read_container", "encode_container",
           "decode_container"]

MAGIC = b"BYOCART\x00"
FORMAT_VERSION = 1
_FIXED = struct.Struct("<8sII32s")
MAX_HEADER = 64 << 20
MAX_SECTIONS = 100_000


def encode_container(meta: dict, sections: dict[str, bytes]) -> bytes:
    entries = []
    offset = 0
    for name, blob in sections.items():
        entries.append({"name": name, "offset": offset, "size": len(blob),
                        "sha256": hashlib.sha256(blob).hexdigest()})
        offset += len(blob)
    header = json.dumps({"meta": meta, "sections": entries}, sort_keys=True, separators=(",", ":")).encode()
    fixed = _FIXED.pack(MAGIC, FORMAT_VERSION, len(header), hashlib.sha256(header).digest())
    return b"".join([fixed, header] + list(sections.values()))


def write_container(path: str | os.PathLike, meta: dict, sections: dict[str, bytes]) -> None:
    data = encode_container(meta, sections)
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def decode_container(data: bytes, source: str = "<bytes>") -> tuple[dict, dict[str, bytes]]:
    def bad(msg: str, offset: int | None = None, hint: str | None = None) -> ArtifactError:
        where = f" at byte {offset}" if offset is not None else ""
        return ArtifactError(f"{source}: {msg}{where}", hint=hint)

    if len(data) < _FIXED.size:
        raise bad(f"file is {len(data)} bytes, shorter than the {_FIXED.size}-byte artifact header",
                  hint="the file is truncated or not a byoc artifact")
    magic, version, header_len, header_hash = _FIXED.unpack_from(data, 0)
    if magic != MAGIC:
        raise bad(f"not a byoc artifact (magic {magic!r}, expected {MAGIC!r})", 0)
    if version != FORMAT_VERSION:
        raise bad(f"artifact format version {version}, this byoc reads version {FORMAT_VERSION}", 8,
                  hint="recompile the model with this version of byoc")
    if header_len > MAX_HEADER or _FIXED.size + header_len > len(data):
        raise bad(f"header length {header_len} does not fit in a {len(data)}-byte file", 12,
                  hint="the file is truncated or corrupt")
    header_bytes = data[_FIXED.size:_FIXED.size + header_len]
    if hashlib.sha256(header_bytes).digest() != header_hash:
        raise bad("header checksum mismatch", _FIXED.size, hint="the file is corrupt")
    try:
        header = json.loads(header_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:  # RecursionError: absurd nesting
        raise bad(f"header is not valid JSON: {e}", _FIXED.size) from e
    if not isinstance(header, dict) or not isinstance(header.get("sections"), list) \
            or not isinstance(header.get("meta"), dict):
        raise bad("header lacks 'meta' and 'sections'", _FIXED.size)
    entries = header["sections"]
    if len(entries) > MAX_SECTIONS:
        raise bad(f"{len(entries)} sections is implausible", _FIXED.size)
    base = _FIXED.size + header_len
    payload_len = len(data) - base
    expected = 0
    sections: dict[str, bytes] = {}
    for i, e in enumerate(entries):
        if not (isinstance(e, dict) and isinstance(e.get("name"), str) and _is_int(e.get("offset"))
                and _is_int(e.get("size")) and isinstance(e.get("sha256"), str)):
            raise bad(f"section entry {i} is malformed", _FIXED.size)
        if e["offset"] != expected or e["size"] < 0 or e["offset"] + e["size"] > payload_len:
            raise bad(f"section {e['name']!r} at offset {e['offset']} size {e['size']} does not fit the payload "
                      f"({payload_len} bytes, next section expected at {expected})", base)
        if e["name"] in sections:
            raise bad(f"section {e['name']!r} appears twice", _FIXED.size)
        blob = data[base + e["offset"]: base + e["offset"] + e["size"]]
        if hashlib.sha256(blob).hexdigest() != e["sha256"]:
            raise bad(f"section {e['name']!r} checksum mismatch", base + e["offset"], hint="the file is corrupt")
        sections[e["name"]] = blob
        expected += e["size"]
    if expected != payload_len:
        raise bad(f"sections cover {expected} bytes but the payload has {payload_len}", base,
                  hint="the file has trailing bytes or is truncated")
    return header["meta"], sections


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)  # JSON true/false are not sizes


def read_container(path: str | os.PathLike) -> tuple[dict, dict[str, bytes]]:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            data = f.read(size + 1)
    except OSError as e:
        raise ArtifactError(f"cannot read artifact {os.fspath(path)!r}: {e.strerror}") from e
    return decode_container(data, os.fspath(path))
