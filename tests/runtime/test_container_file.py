"""``ContainerFile`` (sections read one at a time from an open file) and the streaming ``write_container``: the
same bytes and the same refusals as the in-memory ``encode_container`` / ``decode_container``."""
from __future__ import annotations

import hashlib
import json
import struct

import pytest

from byoc.errors import ArtifactError
from runtime.container import ContainerFile, decode_container, encode_container, write_container

SECTIONS = {"a": b"alpha" * 1000, "empty": b"", "b": bytes(range(256)) * 4097}   # "b" spans several read chunks
META = {"kind": "test", "n": 3}


def test_write_container_writes_exactly_encode_container(tmp_path):
    path = tmp_path / "c.bin"
    write_container(path, META, SECTIONS)
    assert path.read_bytes() == encode_container(META, SECTIONS)


def test_sections_read_lazily_equal_what_was_written(tmp_path):
    path = tmp_path / "c.bin"
    write_container(path, META, SECTIONS)
    with ContainerFile(path) as c:
        assert c.meta == META
        assert list(c) == list(SECTIONS) and len(c) == 3 and "a" in c and "zzz" not in c
        for name, blob in SECTIONS.items():
            assert c[name] == blob
        with pytest.raises(KeyError):
            c["zzz"]
    meta, views = decode_container(path.read_bytes(), copy=False)
    assert meta == META and {k: bytes(v) for k, v in views.items()} == SECTIONS


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1:]


def test_a_corrupt_section_is_refused_on_opening(tmp_path):
    data = encode_container(META, SECTIONS)
    header_len = struct.unpack_from("<I", data, 12)[0]
    payload = 48 + header_len
    path = tmp_path / "c.bin"
    path.write_bytes(_flip(data, payload + len(SECTIONS["a"]) + 17))   # in section "b"'s first read chunk
    with pytest.raises(ArtifactError, match="section 'b' checksum mismatch"):
        ContainerFile(path)
    path.write_bytes(_flip(data, len(data) - 1))                         # ... and in its last one
    with pytest.raises(ArtifactError, match="section 'b' checksum mismatch"):
        ContainerFile(path)
    path.write_bytes(data[:-1])
    with pytest.raises(ArtifactError, match="does not fit the payload"):
        ContainerFile(path)
    path.write_bytes(data + b"\0")
    with pytest.raises(ArtifactError, match="trailing bytes"):
        ContainerFile(path)
    path.write_bytes(data[:30])
    with pytest.raises(ArtifactError, match="shorter than the 48-byte"):
        ContainerFile(path)
    with pytest.raises(ArtifactError, match="cannot read artifact"):
        ContainerFile(tmp_path / "missing.bin")


def test_a_section_changed_after_opening_is_refused(tmp_path):
    path = tmp_path / "c.bin"
    data = encode_container(META, SECTIONS)
    path.write_bytes(data)
    with ContainerFile(path) as c:
        assert c["a"] == SECTIONS["a"]
        with open(path, "r+b") as f:              # same size, different bytes in section "b"
            f.seek(len(data) - 10)
            f.write(b"\xff" * 10)
        with pytest.raises(ArtifactError, match="section 'b' changed while the file was read"):
            c["b"]


def test_header_checks_match_the_in_memory_decoder(tmp_path):
    data = encode_container(META, SECTIONS)
    header_len = struct.unpack_from("<I", data, 12)[0]
    header = json.loads(data[48:48 + header_len])
    header["sections"][0]["size"] += 1
    hb = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    bad = data[:12] + struct.pack("<I32s", len(hb), hashlib.sha256(hb).digest()) + hb + data[48 + header_len:]
    path = tmp_path / "c.bin"
    path.write_bytes(bad)
    with pytest.raises(ArtifactError) as from_file:
        ContainerFile(path)
    with pytest.raises(ArtifactError) as from_memory:
        decode_container(bad, str(path))
    assert str(from_file.value) == str(from_memory.value)
