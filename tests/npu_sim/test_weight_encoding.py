"""Encoded weight sizes (timing only) against Arm's own MLW encoder, and their effect on simulated time."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import npu_sim
from npu_sim.weight_encoding import encoded_weight_bytes

TINY = pathlib.Path(__file__).resolve().parents[1] / "data" / "mlcommons_tiny"


def _conv_layers(model: str):
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    from npu_sim.lower import ConvLayer, lower_function
    mod, params = from_tflite(str(TINY / model), semantics="tflm")
    pmod = partition_for("npu", mod, params)
    for _, f in pmod.sorted_items():
        if f.attrs.get("Compiler") == "npu":
            yield from (L for L in lower_function(f).layers if isinstance(L, ConvLayer))


def _vela_bytes(mlw, L, step: int) -> int:
    """Vela's encoder on the same weights: per OFM slice a 16-aligned 10 B/channel scale table + the stream."""
    w = L.weights.astype(np.int16) - L.zp_w
    dw = L.kind == "depthwise"
    ohwi = w[..., None] if w.ndim == 3 else w
    ic, kk = ohwi.shape[3], ohwi.shape[1] * ohwi.shape[2]
    # Vela's traversal choice (weight_compressor): part-kernel-first when it uses the dot product better (never
    # for a fully connected layer).
    part = not dw and L.kind != "dense" and (ic / (-(-ic // 32) * 32) <= ic / (-(-ic // 8) * 8) * kk / (-(-kk // 4) * 4) or ic <= 8)
    total = 0
    for c0 in range(0, w.shape[0], step):
        sl = ohwi[c0:c0 + step]
        if dw:
            # regor (unlike the Python core's reorder) pads a depthwise kernel to a multiple of 4 elements
            # (test_traversal_pads_as_regor_reads_the_weights): its encoder on that order
            from npu_sim.weight_encoding import _decode_order
            enc = mlw.encode(_decode_order(w[None, c0:c0 + step], "depthwise", 8, 8)[0].tolist())
        else:
            enc, _ = mlw.reorder_encode(8, 8, sl, sl.shape[0], dw, part, 8, 8, 8)
        total += -(-sl.shape[0] * 10 // 16) * 16 + len(enc)
    return total


@pytest.mark.parametrize("model", ["vww_96_int8.tflite", "ad01_int8.tflite", "kws_ref_model.tflite"])
def test_encoded_size_matches_velas_encoder(model):
    mlw = pytest.importorskip("ethosu.mlw_codec")
    ours = vela = raw = 0
    for L in _conv_layers(model):
        o = encoded_weight_bytes(L.weights, L.zp_w, L.kind, 16)
        v = _vela_bytes(mlw, L, 16)
        if v >= 4096:   # large streams: the cheapest-split approximation of the slice search is a small part
            # depthwise streams are short and a third padding zeros, where the Python package's encoder and
            # regor's differ in when zeros go as runs (regor: > 5x the most common other value, runs of >= 2
            # holding half of them): looser there
            lo, hi = (0.9, 1.1) if L.kind == "depthwise" else (0.97, 1.03)
            assert lo <= o / v <= hi, (L.name, o, v)
        ours, vela, raw = ours + o, vela + v, raw + L.weights.nbytes
    # before following regor's palette and traversal rules: 0.97-0.99
    assert 0.985 <= ours / vela <= 1.015, (ours, vela, raw)


def test_sparse_weights_encode_smaller_and_sizes_are_stream_aligned():
    rng = np.random.default_rng(0)
    dense = rng.integers(-127, 128, size=(64, 1, 1, 64)).astype(np.int8)
    sparse = np.where(rng.random(dense.shape) < 0.85, 0, dense).astype(np.int8)
    d = encoded_weight_bytes(dense, 0, "conv", 16)
    s = encoded_weight_bytes(sparse, 0, "conv", 16)
    assert d % 16 == 0 and s % 16 == 0
    assert s < 0.5 * d
    assert d >= dense.size  # uniformly random int8 values do not compress
    # the zero point is removed before coding: a constant tensor at its zero point codes as (almost) nothing
    assert encoded_weight_bytes(np.full((16, 1, 1, 16), 5, np.int8), 5, "conv", 16) <= 16 * 10 + 2 * 16


def test_sparse_weights_shorten_a_flash_bound_dense_layer():
    # A 1x512 -> 512 FC moves 256 KiB of weights over 1 B/cycle flash and does 1 MAC cycle per 256 weights: its
    # time is the weight stream. 85% zero weights must cut it (Vela charges the encoded stream, not raw bytes).
    from tests.npu_sim.npu_builders import dense_composite, partition
    rng = np.random.default_rng(1)
    dense = rng.integers(-127, 128, size=(512, 512)).astype(np.int8)
    sparse = np.where(rng.random(dense.shape) < 0.85, 0, dense).astype(np.int8)
    cycles = []
    for w in (dense, sparse):
        p, call = dense_composite((1, 512), w)
        prog = npu_sim.compile(partition([p], call), "ethos-u55-256")
        _, st = npu_sim.simulate(prog, {prog.inputs[0].name: np.zeros((1, 512), np.int8)})
        assert st.total_cycles >= st.per_layer[0].roofline_cycles   # never below the roofline on encoded bytes
        cycles.append(st.total_cycles)
    assert cycles[1] < 0.5 * cycles[0], cycles


@pytest.mark.parametrize("model", ["vww_96_int8.tflite", "ad01_int8.tflite"])
def test_smaller_ethos_u_configs_never_run_faster(model):
    from byoc.cli.summary import profile_partitions
    from byoc.frontend import from_tflite
    from byoc.partition import partition_for
    mod, params = from_tflite(str(TINY / model), semantics="tflm")
    pmod = partition_for("npu", mod, params)
    totals = [sum(p.stats.total_cycles for p in profile_partitions(pmod, "npu", name))
              for name in ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256")]
    # A flash-bound model may run a hair faster on U55-32: its 4-deep OFM micro-blocks pad fewer channels into the
    # weight streams. Vela 5.2 on ad01: U55-32 201104 cycles (184384 encoded weight bytes), U55-64 201184 (184464).
    assert all(a >= 0.999 * b for a, b in zip(totals, totals[1:])), totals
    u65 = sum(p.stats.total_cycles for p in profile_partitions(pmod, "npu", "ethos-u65-512"))
    assert u65 <= totals[-1]


def test_traversal_pads_as_regor_reads_the_weights():
    # Stream lengths worked by hand from regor's weight traversal (ethos_u55_weight_encoder.cpp): OFM channels in
    # micro-blocks of 8; depthwise and part-kernel-first round the kernel elements up to 4; depth-first reads the
    # IFM in blocks of 32 channels at 8 bits (16 at 16 bits); part-kernel-first (chosen when the IFM has <= 8
    # channels) in micro-blocks of 8; a fully connected layer is always depth-first.
    from npu_sim.weight_encoding import _decode_order
    one = lambda *shape: np.ones((1, *shape), np.int32)
    assert _decode_order(one(5, 3, 3), "depthwise", 8, 8).shape == (1, 8 * 12)
    # 60 channels: depth-first fills 60/64, part-kernel 60/64 x 9/12: depth-first, IFM padded to 64
    assert _decode_order(one(8, 3, 3, 60), "conv", 8, 8).shape == (1, 8 * 9 * 64)
    # 40 channels: depth-first 40/64 < part-kernel 40/40 x 9/12: part-kernel, kernel padded to 12
    assert _decode_order(one(8, 3, 3, 40), "conv", 8, 8).shape == (1, 8 * 12 * 40)
    # 16-bit IFM: depth-first 40/48 < part-kernel 9/10 (kernel elements in pairs)
    assert _decode_order(one(8, 3, 3, 40), "conv", 8, 8, ifm_bits=16).shape == (1, 8 * 10 * 40)
    assert _decode_order(one(8, 3, 3, 3), "conv", 8, 8).shape == (1, 8 * 12 * 8)
    assert _decode_order(one(8, 1, 1, 3), "dense", 8, 8).shape == (1, 8 * 32)
    # depthwise order: per micro-block of 8 channels, kernel element outer, channel inner (padding zeros last)
    w = np.arange(1, 1 + 8 * 4, dtype=np.int32).reshape(1, 8, 2, 2)
    row = _decode_order(w, "depthwise", 8, 8)[0]
    assert row[:8].tolist() == [1, 5, 9, 13, 17, 21, 25, 29] and not row[4 * 8:].any()


def test_stream_sizes_worked_by_hand():
    """Bit counts of regor's stream syntax (mlw_encode.cpp) worked by hand."""
    from npu_sim.weight_encoding import _stream_bytes
    # 32768 uniform int8 values with 2% isolated zeros: regor codes zeros as runs only when runs of >= 2 hold half
    # of them, so none here; 255 distinct values: no palette (the top 32 cover far less than half), stored
    # uncompressed at the width of the largest code (-127 -> 255: 8 bits). Two slices (SLICELEN is 15 bits):
    # 2 x 23 header bits + 13 palette-header bits + 8 x 32768 + 3 end bits -> 32776 bytes -> 16-aligned 32784.
    # (The legacy Python core's encoder lacks the run-length rule and codes runs: 36128 bytes.)
    rng = np.random.default_rng(7)
    u = rng.integers(-127, 128, size=32768)
    u = np.where(rng.random(u.size) < 0.02, 0, u)
    u[np.flatnonzero((u[1:] == 0) & (u[:-1] == 0))] = 5   # keep every zero isolated
    assert (u == -127).any()
    assert _stream_bytes(u) == 32784
    # 16 equal values: a 2-entry palette (size 1 is padded to 2) of 2-bit entries, every symbol index 0 in 1 bit:
    # 23 + 13 + 2 x 2 + 16 (+ the last unary word's padding) + 3 bits -> one 16-byte unit
    assert _stream_bytes(np.ones(16, np.int64)) == 16
    # 4000 values cycling 0, 1, -1 (1334 zeros: not 5x the 1333 ones, no runs): all fit a 3-entry palette of
    # 2-bit entries, zero (most frequent) is symbol 0. Truncated Rice, divisor 0: symbol 0 in 1 bit, 1 and 2 in 2
    # bits -> 1334 + 2 x 2666 = 6666 bits (uncompressed would be 2 bits each: 8000). Plus 23 + 13 + 3 x 2 header
    # bits, 8 bits padding the last 12-bit unary word (4000 symbols), 3 end bits: 6719 bits -> 840 bytes -> 848.
    lv = np.tile([0, 1, -1], 1334)[:4000]
    assert _stream_bytes(lv) == 848


@pytest.mark.parametrize("case", ["uniform", "uniform 30% zeros", "gauss 10", "gauss 60", "laplace 15",
                                  "16 values"])
def test_stream_size_follows_velas_mode_choice(case):
    """Sizes against Vela's encoder (the Python package's mlw_codec, which shares regor's palette and Rice
    rules) on the same streams: an incompressible stream is stored uncompressed, a normal or Laplace one takes a
    palette of its 32 most frequent values, zeros go as runs."""
    mlw = pytest.importorskip("ethosu.mlw_codec")
    from npu_sim.weight_encoding import _stream_bytes
    rng = np.random.default_rng(7)
    u = rng.integers(-127, 128, size=32768)
    w = {"uniform": u,          "uniform 30% zeros": np.where(rng.random(u.size) < 0.3, 0, u),
         "gauss 10": np.clip(np.rint(rng.normal(0, 10, u.size)), -127, 127).astype(int),
         "gauss 60": np.clip(np.rint(rng.normal(0, 60, u.size)), -127, 127).astype(int),
         "laplace 15": np.clip(np.rint(rng.laplace(0, 15, u.size)), -127, 127).astype(int),
         "16 values": rng.choice(np.arange(-8, 8), u.size)}[case]
    ours, vela = _stream_bytes(w), len(mlw.encode(w.tolist()))
    # before regor's palette rule: gauss 60 / laplace 15 0.95x
    assert 0.98 <= ours / vela <= 1.02, (ours, vela)


@pytest.mark.parametrize("model", ["ad01_int8.tflite", "kws_ref_model.tflite", "vww_96_int8.tflite"])
def test_full_depth_encoding_matches_velas_encoded_weight_total(model, tmp_path, monkeypatch):
    # Vela 5.2 (regor) reports the bytes of its encoded weight streams (scale tables not included) in its
    # summary CSV; the simulator charges each layer's weights as one full-depth stream. Before following regor's
    # encoder rules: ad01 0.971, kws 0.986, vww 0.942 (the layers' weights stay alive while profiling: ids hold).
    pytest.importorskip("ethosu.vela")
    import csv
    import subprocess
    import sys
    subprocess.run([sys.executable, "-m", "ethosu.vela", "--accelerator-config", "ethos-u55-256", "--output-dir",
                    str(tmp_path), str(TINY / model)], check=True, capture_output=True)
    (summary,) = tmp_path.glob("*_summary_*.csv")
    vela = int(next(csv.DictReader(summary.open()))["total_npu_encoded_weights"])
    # the layers the simulator encodes when it compiles the model for the ethos-u target (as the bench does)
    import npu_sim.compiler
    from byoc.cli.common import load_model
    from byoc.cli.summary import profile_partitions
    from byoc.partition import partition_for
    charged = {}

    def record(w, zp, kind, depth, *args):
        oc = w.shape[0]   # one full-depth stream, without its scale table
        charged[id(w)] = encoded_weight_bytes(w, zp, kind, oc, *args) - -(-oc * 10 // 16) * 16
        return encoded_weight_bytes(w, zp, kind, depth, *args)

    monkeypatch.setattr(npu_sim.compiler, "encoded_weight_bytes", record)
    m = load_model(str(TINY / model), "auto", target="ethos-u")
    profile_partitions(partition_for("ethos-u", m.mod, m.params), "ethos-u", "ethos-u55-256-like")
    ours = sum(charged.values())
    assert 0.99 <= ours / vela <= 1.01, (ours, vela)
