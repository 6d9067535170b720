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
``ContainerFile`` does the same checks on an open file (hashing in bounded chunks) and then hands out one section
at a time, so a loader never holds the whole file.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Mapping

from byoc.errors import ArtifactError

__all__ = ["MAGIC", "FORMAT_VERSION", "write_container", "read_container", "encode_container",
           "decode_container", "ContainerFile"]

MAGIC = b"BYOCART\x00"
FORMAT_VERSION = 1
_FIXED = struct.Struct("<8sII32s")
MAX_HEADER = 64 << 20
MAX_SECTIONS = 100_000


def _head(meta: dict, sections: dict[str, bytes]) -> bytes:
    """The fixed part and the JSON header that precede ``sections``."""
    entries = []
    offset = 0
    for name, blob in sections.items():
        entries.append({"name": name, "offset": offset, "size": len(blob),
                        "sha256": hashlib.sha256(blob).hexdigest()})
        offset += len(blob)
    header = json.dumps({"meta": meta, "sections": entries}, sort_keys=True, separators=(",", ":")).encode()
    return _FIXED.pack(MAGIC, FORMAT_VERSION, len(header), hashlib.sha256(header).digest()) + header


def encode_container(meta: dict, sections: dict[str, bytes]) -> bytes:
    return b"".join([_head(meta, sections)] + list(sections.values()))


def write_container(path: str | os.PathLike, meta: dict, sections: dict[str, bytes]) -> None:
    """The bytes of ``encode_container``, written piece by piece (the file is never held twice in memory)."""
    head = _head(meta, sections)
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "wb") as f:
        f.write(head)
        for blob in sections.values():
            f.write(blob)
    os.replace(tmp, path)


def _layout(data, file_len: int, bad) -> tuple[dict, list[dict], int]:
    """(meta, section entries, payload start) from ``data``, which holds at least the fixed part and the JSON
    header of a ``file_len``-byte container: everything but the section hashes is checked here."""
    if file_len < _FIXED.size:
        raise bad(f"file is {file_len} bytes, shorter than the {_FIXED.size}-byte artifact header",
                  hint="the file is truncated or not a byoc artifact")
    magic, version, header_len, header_hash = _FIXED.unpack_from(data, 0)
    if magic != MAGIC:
        raise bad(f"not a byoc artifact (magic {magic!r}, expected {MAGIC!r})", 0)
    if version != FORMAT_VERSION:
        raise bad(f"artifact format version {version}, this byoc reads version {FORMAT_VERSION}", 8,
                  hint="recompile the model with this version of byoc")
    if header_len > MAX_HEADER or _FIXED.size + header_len > file_len:
        raise bad(f"header length {header_len} does not fit in a {file_len}-byte file", 12,
                  hint="the file is truncated or corrupt")
    header_bytes = bytes(data[_FIXED.size:_FIXED.size + header_len])
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
    payload_len = file_len - base
    expected = 0
    names: set[str] = set()
    for i, e in enumerate(entries):
        if not (isinstance(e, dict) and isinstance(e.get("name"), str) and _is_int(e.get("offset"))
                and _is_int(e.get("size")) and isinstance(e.get("sha256"), str)):
            raise bad(f"section entry {i} is malformed", _FIXED.size)
        if e["offset"] != expected or e["size"] < 0 or e["offset"] + e["size"] > payload_len:
            raise bad(f"section {e['name']!r} at offset {e['offset']} size {e['size']} does not fit the payload "
                      f"({payload_len} bytes, next section expected at {expected})", base)
        if e["name"] in names:
            raise bad(f"section {e['name']!r} appears twice", _FIXED.size)
        names.add(e["name"])
        expected += e["size"]
    if expected != payload_len:
        raise bad(f"sections cover {expected} bytes but the payload has {payload_len}", base,
                  hint="the file has trailing bytes or is truncated")
    return header["meta"], entries, base


def _complaint(source: str):
    def bad(msg: str, offset: int | None = None, hint: str | None = None) -> ArtifactError:
        where = f" at byte {offset}" if offset is not None else ""
        return ArtifactError(f"{source}: {msg}{where}", hint=hint)
    return bad


def decode_container(data: bytes, source: str = "<bytes>", *, copy: bool = True
                     ) -> tuple[dict, dict[str, bytes]]:
    """(meta, {section name: bytes}); with ``copy=False`` the sections are read-only memoryviews of ``data``
    (no second copy of the payload)."""
    bad = _complaint(source)
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    meta, entries, base = _layout(view, len(view), bad)
    sections: dict[str, bytes] = {}
    for e in entries:
        blob = view[base + e["offset"]: base + e["offset"] + e["size"]]
        if hashlib.sha256(blob).hexdigest() != e["sha256"]:
            raise bad(f"section {e['name']!r} checksum mismatch", base + e["offset"], hint="the file is corrupt")
        sections[e["name"]] = blob.tobytes() if copy else blob.toreadonly()
    return meta, sections


class ContainerFile(Mapping):
    """A container read from an open file one section at a time: ``sections[name]`` reads that section (and
    checks its hash again), so a loader holds only the sections it is working on, never the whole file.

    Opening checks the layout and every section's hash (streamed in bounded chunks) before anything large is
    allocated; use it as a context manager (it closes the file)."""

    CHUNK = 1 << 20

    def __init__(self, path: str | os.PathLike):
        self.source = os.fspath(path)
        bad = _complaint(self.source)
        try:
            self._file = open(self.source, "rb")
        except OSError as e:
            raise ArtifactError(f"cannot read artifact {self.source!r}: {e.strerror or e}",
                                hint="check the path") from None
        try:
            size = os.fstat(self._file.fileno()).st_size
            prefix = self._file.read(_FIXED.size)
            if len(prefix) == _FIXED.size:
                _, _, header_len, _ = _FIXED.unpack_from(prefix, 0)
                if header_len <= MAX_HEADER:
                    prefix += self._file.read(header_len)
            self.meta, entries, self._base = _layout(prefix, size, bad)
            self._entries = {e["name"]: e for e in entries}
            self._bad = bad
            for e in entries:  # every checksum first, holding one chunk at a time
                self._file.seek(self._base + e["offset"])
                h = hashlib.sha256()
                left = e["size"]
                while left:
                    chunk = self._file.read(min(left, self.CHUNK))
                    if not chunk:
                        raise bad(f"section {e['name']!r} is cut short", self._base + e["offset"],
                                  hint="the file changed while it was read")
                    h.update(chunk)
                    left -= len(chunk)
                if h.hexdigest() != e["sha256"]:
                    raise bad(f"section {e['name']!r} checksum mismatch", self._base + e["offset"],
                              hint="the file is corrupt")
        except OSError as e:
            self._file.close()
            raise ArtifactError(f"cannot read artifact {self.source!r}: {e.strerror or e}") from None
        except BaseException:
            self._file.close()
            raise

    def __getitem__(self, name: str) -> bytes:
        e = self._entries[name]
        try:
            self._file.seek(self._base + e["offset"])
            blob = self._file.read(e["size"])
        except OSError as err:
            raise ArtifactError(f"cannot read artifact {self.source!r}: {err.strerror or err}") from None
        if len(blob) != e["size"] or hashlib.sha256(blob).hexdigest() != e["sha256"]:
            raise self._bad(f"section {name!r} changed while the file was read", self._base + e["offset"],
                            hint="the file was modified during loading")
        return blob

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self):
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "ContainerFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
