"""``module.export(path)`` / ``byoc.load(path)``: round trips in a fresh process, no recompilation of NPU programs,
native code only when trusted, names preserved, and clear refusals of foreign, old, corrupt or inconsistent files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import ArtifactError
from byoc.ir.expr import Span
from byoc.relay.op import make_call
from runtime.artifact import export_bytes, load_bytes
from runtime.container import FORMAT_VERSION, decode_container, encode_container
from runtime_helpers import REPO, imported, model_bytes, random_inputs


def _reseal(data: bytes, edit) -> bytes:
    """Decode, let ``edit(meta, sections)`` change anything, encode again with correct checksums."""
    meta, sections = decode_container(data)
    edit(meta, sections)
    return encode_container(meta, sections)


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    mod, params, pm = imported("micro_speech_quantized.tflite", "tflm")
    exe = byoc.build(pm, target="npu,llvm")
    d = tmp_path_factory.mktemp("speech")
    path = d / "speech.byoc"
    exe.export(path)
    feed = random_inputs(mod["main"], seed=11)
    return path, feed, byoc.evaluate(mod, feed, params), exe


def _run_in_fresh_process(script: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full.update(env or {})
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=REPO, env=full, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def test_fresh_process_loads_without_recompiling_npu_programs(speech, tmp_path):
    path, feed, ref, _ = speech
    (name,) = feed
    np.save(tmp_path / "x.npy", feed[name])
    _run_in_fresh_process(f"""
        import numpy as np, npu_sim, byoc
        def refuse(*a, **k):
            raise AssertionError("npu_sim.compile called while loading an artifact")
        npu_sim.compile = refuse
        m = byoc.load({str(path)!r})
        # named by Relay's region ids (gaps where regions merged)
        assert len(m.npu_programs) == 2 and all(n.startswith('tvmgen_default_npu_main_') for n in m.npu_programs)
        out = m.run({{{name!r}: np.load({str(tmp_path / 'x.npy')!r}, allow_pickle=False)}})
        np.save({str(tmp_path / 'y.npy')!r}, out[0], allow_pickle=False)
    """)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy", allow_pickle=False), ref[0])


def test_object_code_is_linked_only_when_trusted(speech, tmp_path):
    path, feed, ref, exe = speech
    (name,) = feed
    np.save(tmp_path / "x.npy", feed[name])
    script = f"""
        import numpy as np, byoc
        from byoc.backend.llvm import get_codegen
        m = byoc.load({str(path)!r}, trust_native_code=TRUST)
        y = m.run({{{name!r}: np.load({str(tmp_path / 'x.npy')!r}, allow_pickle=False)}})[0]
        np.save({str(tmp_path / 'y_TRUST.npy')!r}, y, allow_pickle=False)
        print(get_codegen().stats.compiled, get_codegen().stats.disk_hits)
    """
    n_kernels = len(set(exe.kernel_symbols))
    for trust in (True, False):
        cache = tmp_path / f"empty_cache_{trust}"  # nothing cached: kernels are either linked or compiled
        p = _run_in_fresh_process(script.replace("TRUST", str(trust)), env={"BYOC_CACHE_DIR": str(cache)})
        compiled, hits = map(int, p.stdout.split())
        assert hits == 0 and compiled == (0 if trust else n_kernels), (trust, compiled, n_kernels)
        np.testing.assert_array_equal(np.load(tmp_path / f"y_{trust}.npy", allow_pickle=False), ref[0])


def test_names_and_spans_survive_the_round_trip():
    x = relay.var("input.5", shape=(1, 8), dtype="int32")          # the text format prints it as %input_5
    w = relay.var("w:0", shape=(1, 8), dtype="int32")
    a = make_call("add", [x, w]).replace(span=Span("model/add"))
    b = make_call("multiply", [a, relay.const(np.full((1, 8), 3, "int32"))]).replace(span=Span("model/mul"))
    mod = byoc.IRModule.from_expr(relay.Function([x, w], b))
    params = {"w:0": np.arange(8, dtype="int32").reshape(1, 8)}
    exe = byoc.build(mod, params=params)
    loaded = load_bytes(export_bytes(exe))
    assert loaded.input_names == ["input.5"]
    from byoc.ir.traversal import post_order
    spans = [(type(n).__name__, n.span.source) for n in post_order(loaded.source["main"]) if n.span is not None]
    assert spans == [("Call", "model/add"), ("Call", "model/mul")]
    assert [p.name_hint for p in loaded.source["main"].params] == ["input.5", "w:0"]
    xin = np.arange(8, dtype="int32").reshape(1, 8) - 4
    np.testing.assert_array_equal(loaded.run({"input.5": xin})[0], (xin + params["w:0"]) * 3)


def test_foreign_old_and_damaged_files_are_refused(speech, tmp_path):
    path, _, _, _ = speech
    data = path.read_bytes()
    cases = {
        "tflite": (model_bytes("hello_world_int8.tflite"), "not a byoc artifact"),
        "empty": (b"", "shorter than"),
        "truncated": (data[: len(data) // 3], "does not fit|truncated"),
        "container v2": (data[:8] + (FORMAT_VERSION + 1).to_bytes(4, "little") + data[12:], "format version"),
        "artifact v2": (_reseal(data, lambda m, s: m.update(format_version=2)), "format version 2"),
        "stop-gap format": (_reseal(data, lambda m, s: m.update(format="byoc.cli/ir-text/1")),
                            "not a byoc compiled artifact"),
        "stray section": (_reseal(data, lambda m, s: s.update(extra=b"x")), "not referenced"),
        "flipped byte": (data[:-100] + bytes([data[-100] ^ 1]) + data[-99:], "checksum"),
    }
    for what, (blob, pattern) in cases.items():
        with pytest.raises(ArtifactError, match=pattern):
            load_bytes(blob, what)
    (tmp_path / "bad.byoc").write_bytes(cases["flipped byte"][0])
    with pytest.raises(ArtifactError, match="checksum"):
        byoc.load(tmp_path / "bad.byoc")
    with pytest.raises(ArtifactError, match="cannot read"):
        byoc.load(tmp_path / "missing.byoc")


def test_sizes_that_do_not_add_up_are_refused_before_allocating():
    x = relay.var("x", shape=(4,), dtype="int32")
    w = relay.var("w", shape=(4,), dtype="int32")
    exe = byoc.build(byoc.IRModule.from_expr(relay.Function([x, w], make_call("add", [x, w]))),
                     params={"w": np.arange(4, dtype="int32")})
    data = export_bytes(exe)

    def huge(meta, sections):
        meta["params"][0]["shape"] = [1 << 39]        # 2 TiB of int32 claimed by a 16-byte section
    blob = _reseal(data, huge)
    tracemalloc.start()
    try:
        with pytest.raises(ArtifactError, match="param 'w'.*needs 2199023255552 bytes, the section has 16"):
            load_bytes(blob)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * len(blob) + (1 << 20)

    def retyped(meta, sections):
        meta["params"][0]["dtype"] = "int8"
        meta["params"][0]["shape"] = [16]
    with pytest.raises(ArtifactError, match="param 'w': int8\\[16\\] does not match main's int32\\[4\\]"):
        load_bytes(_reseal(data, retyped))

    def renamed_input(meta, sections):
        meta["inputs"][0]["name"] = "y"
    with pytest.raises(ArtifactError, match="signature does not match"):
        load_bytes(_reseal(data, renamed_input))


def test_a_program_from_another_partition_is_refused(speech):
    path, _, _, _ = speech

    def swap(meta, sections):
        a, b = [p["section"] for p in meta["partitions"]]
        sections[a], sections[b] = sections[b], sections[a]
    with pytest.raises(ArtifactError, match="does not belong to this partition"):
        load_bytes(_reseal(path.read_bytes(), swap))

    def wrong_compiler(meta, sections):
        meta["partitions"][0]["compiler"] = "llvm"
    with pytest.raises(ArtifactError, match="compiler 'llvm'"):
        load_bytes(_reseal(path.read_bytes(), wrong_compiler))


def test_header_is_plain_json_with_versions_and_checksums(speech):
    path, _, _, exe = speech
    _, _, pm = imported("micro_speech_quantized.tflite", "tflm")
    assert export_bytes(byoc.build(pm, target="npu,llvm")) == path.read_bytes()   # deterministic
    meta, sections = decode_container(path.read_bytes())
    assert meta["format"] == "byoc-artifact" and meta["format_version"] == 1
    assert meta["target"] == ["npu", "llvm"] and meta["options"]["npu_config"]["name"] == "ethos-u55-256-like"
    kinds = sorted({k.split(":")[0] for k in sections})
    assert kinds == ["graph", "object", "partition", "spans"]
    assert sections["graph"].startswith(b'#[version = "0.0.5"]')
    assert json.loads(sections["spans"])["functions"][0]["name"] == "main"
    assert all(sections[p["section"]][:8] == b"NPUSIMP\0" for p in meta["partitions"])
