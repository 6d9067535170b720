"""1,100 damaged artifacts: each is refused with a ByocError (ArtifactError for damage the loader sees) or loads
and runs exactly like the original. Nothing else: no other exception, no different output.

Mutations: bit flips, truncations, inserted bytes, edits of the JSON header's fields and of the container's
section table (resealed with a correct header hash so the deeper validation runs), and payload edits resealed
with correct section hashes for the sections that carry their own integrity or do not affect results (NPU
programs with their CRC, node names, object code, which an untrusted load never links). Payload edits of the
graph text or parameters with recomputed checksums are not in the mix: they describe a different but valid
model, which no checksum can tell apart from the original.
"""
from __future__ import annotations

import copy
import hashlib
import json
import struct

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import ByocError
from byoc.relay.op import make_call
from runtime.artifact import export_bytes, load_bytes
from runtime.container import FORMAT_VERSION, MAGIC, decode_container, encode_container
from runtime_helpers import imported, random_inputs

ODD_VALUES = [None, True, False, 0, -1, 1, 7, 2**31, 2**63, -2**63, 1.5, float("1e308"), "", "x", "int8",
              "npu", "llvm", "main", "graph", "spans", [], [0], [1 << 40], [-1, 2], {}, {"a": 1}, "\u00e9" * 3]


@pytest.fixture(scope="module")
def bases():
    """(artifact, feed, expected outputs) for an npu,llvm build and a CPU build with parameters."""
    mod, params, pm = imported("micro_speech_quantized.tflite", "tflm")
    speech = byoc.build(pm, target="npu,llvm")
    feed = random_inputs(mod["main"], seed=21)
    out = [(export_bytes(speech), feed, speech.run(feed))]
    x = relay.var("x", shape=(2, 3), dtype="int8")
    w = relay.var("w", shape=(2, 3), dtype="int8")
    e = make_call("clip", [make_call("add", [x, w])], dict(a_min=-20.0, a_max=20.0))
    tiny = byoc.build(byoc.IRModule.from_expr(relay.Function([x, w], e)),
                      params={"w": np.array([[1, -2, 3], [30, 0, -7]], "int8")})
    feed = {"x": np.array([[5, 6, -100], [0, 1, 2]], "int8")}
    out.append((export_bytes(tiny), feed, tiny.run(feed)))
    return out


def _split(data: bytes) -> tuple[dict, bytes]:
    (hlen,) = struct.unpack_from("<I", data, 12)
    return json.loads(data[48:48 + hlen]), data[48 + hlen:]


def _seal_header(header: dict, payload: bytes) -> bytes:
    hb = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<8sII32s", MAGIC, FORMAT_VERSION, len(hb), hashlib.sha256(hb).digest()) + hb + payload


def _json_slots(doc) -> list[tuple[object, object]]:
    """Every (container, key) in a JSON document, iteratively."""
    slots, stack = [], [doc]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for k in keys:
            slots.append((node, k))
            stack.append(node[k])
    return slots


def _pick(rng, seq):
    return seq[int(rng.integers(0, len(seq)))]


def _odd(rng, extra=()):
    return copy.deepcopy(_pick(rng, ODD_VALUES + list(extra)))  # a fresh copy: never one list in two places


def _edit_meta(data: bytes, rng) -> bytes:
    meta, sections = decode_container(data)
    for _ in range(int(rng.integers(1, 3))):
        slots = _json_slots(meta)
        node, key = _pick(rng, slots)
        action = int(rng.integers(0, 6))
        if action == 0 and isinstance(node, dict):
            del node[key]
        elif action == 1 and isinstance(node[key], int) and not isinstance(node[key], bool):
            node[key] = node[key] + int(_pick(rng, [-1, 1, 8, 1 << 20]))
        elif action == 2 and isinstance(node[key], str) and node[key]:
            s = node[key]
            i = int(rng.integers(0, len(s)))
            node[key] = s[:i] + _pick(rng, ["", "x", ":", "0"]) + s[i + 1:]
        elif action == 3 and isinstance(node, dict):
            node[_pick(rng, ["extra", "section", "name", "shape"]) + "_"] = _odd(rng)
        elif action == 4 and isinstance(node[key], list) and node[key]:
            node[key] = node[key][::-1] if rng.random() < 0.5 else node[key] + node[key][:1]
        else:
            node[key] = _odd(rng)
    return encode_container(meta, sections)


def _edit_table(data: bytes, rng) -> bytes:
    header, payload = _split(data)
    entry = _pick(rng, header["sections"])
    field = _pick(rng, ["name", "offset", "size", "sha256"])
    entry[field] = _odd(rng, [entry["size"] + 1, max(entry["offset"] - 1, 0), "0" * 64])
    return _seal_header(header, payload)


def _edit_payload(data: bytes, rng) -> bytes | None:
    meta, sections = decode_container(data)
    names = [n for n in sections if n.split(":")[0] in ("partition", "spans", "object")]
    if not names:
        return None
    name = _pick(rng, names)
    blob = bytearray(sections[name])
    for _ in range(int(rng.integers(1, 4))):
        i = int(rng.integers(0, len(blob)))
        blob[i] ^= 1 << int(rng.integers(0, 8))
    sections[name] = bytes(blob)
    return encode_container(meta, sections)


def _mutants(data: bytes, rng, n: int):
    kinds = ["flip"] * 5 + ["truncate"] * 3 + ["insert"] + ["meta"] * 7 + ["table"] * 2 + ["payload"] * 2
    for _ in range(n):
        kind = _pick(rng, kinds)
        if kind == "flip":
            b = bytearray(data)
            for _ in range(int(rng.integers(1, 9))):
                i = int(rng.integers(0, len(b)))
                b[i] ^= 1 << int(rng.integers(0, 8))
            yield kind, bytes(b)
        elif kind == "truncate":
            cut = int(rng.integers(0, len(data))) if rng.random() < 0.7 else int(rng.integers(0, 200))
            yield kind, data[:cut]
        elif kind == "insert":
            i = int(rng.integers(0, len(data) + 1))
            yield kind, data[:i] + bytes(rng.integers(0, 256, int(rng.integers(1, 16)), dtype=np.uint8)) + data[i:]
        elif kind == "meta":
            yield kind, _edit_meta(data, rng)
        elif kind == "table":
            yield kind, _edit_table(data, rng)
        else:
            m = _edit_payload(data, rng)
            if m is not None:
                yield kind, m


def test_damaged_artifacts_are_refused_or_run_identically(bases):
    rng = np.random.default_rng(20261122)
    counts: dict[tuple[str, str], int] = {}
    problems: list[str] = []
    total = 0
    for bi, (data, feed, expected) in enumerate(bases):
        for kind, blob in _mutants(data, rng, 800 if bi == 0 else 300):
            total += 1
            try:
                module = load_bytes(blob, f"mutant{total}")
                outs = module.run(feed)
            except ByocError as e:
                counts[(kind, type(e).__name__)] = counts.get((kind, type(e).__name__), 0) + 1
                continue
            except Exception as e:  # noqa: BLE001 - precisely what must never happen
                problems.append(f"{kind} #{total}: {type(e).__name__}: {str(e)[:200]}")
                continue
            counts[(kind, "loaded")] = counts.get((kind, "loaded"), 0) + 1
            if len(outs) != len(expected) or not all(o.dtype == x.dtype and np.array_equal(o, x)
                                                     for o, x in zip(outs, expected)):
                problems.append(f"{kind} #{total}: loaded and ran with different outputs")
    assert not problems, "\n".join(problems[:20])
    assert total >= 1000
    by_kind = {}
    for (kind, result), n in counts.items():
        by_kind.setdefault(kind, {})[result] = n
    # The mix really exercised every mutation kind and the deeper validation (not only the checksums).
    assert set(by_kind) == {"flip", "truncate", "insert", "meta", "table", "payload"}, by_kind
    assert by_kind["meta"].get("ArtifactError", 0) >= 100, by_kind
    assert by_kind["meta"].get("loaded", 0) >= 10, by_kind
