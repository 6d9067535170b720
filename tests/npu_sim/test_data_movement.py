"""Data movement on the NPU: unit-stride strided_slice, split, standalone nn.pad and nn.depth_to_space.

Each op becomes PPU COPY layers over windows of its input (npu_sim/lower_move.py), as Vela and Ethos-N run them
as DMA/passthrough layers. Oracles: numpy slicing/padding written here, byoc.evaluate on every preset (tiled
large shapes included), and LiteRT BUILTIN_REF on a writer-built TFLite model partitioned with partition_for.
"""
from __future__ import annotations

import numpy as np
import pytest

import byoc
import npu_sim
from byoc import relay
from byoc.errors import NPUError
from npu_sim.isa import Load, Ppu, PpuOp, Store, TileKind

from npu_builders import litert_outputs, partition, simulate_on_presets


def _data(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype)


def _fn(shape, dtype, make):
    x = relay.var("x", shape=shape, dtype=dtype)
    return partition([x], make(x))


# -- random cases against numpy written here ----------------------------------------------------------------

def _random_case(seed):
    """(shape, dtype, relay builder, numpy oracle) of a random slice/split/pad/depth_to_space."""
    rng = np.random.default_rng(seed)
    dtype = "uint8" if rng.random() < 0.4 else "int8"
    kind = ["slice", "split", "pad", "d2s"][seed % 4]
    rank = int(rng.choice([4, 4, 3, 2, 1])) if kind in ("slice", "split") else (4 if kind == "d2s" else
                                                                                int(rng.choice([4, 4, 3, 2])))
    shape = [int(rng.integers(1, 10)) for _ in range(rank)]
    if rank == 4:
        shape[0] = 1 if rng.random() < 0.7 else int(rng.integers(2, 4))
    if kind == "slice":
        begin = [int(rng.integers(0, d)) for d in shape]
        end = [int(rng.integers(b + 1, d + 1)) for b, d in zip(begin, shape)]
        if rank == 4 and end[0] - begin[0] > 1:
            begin[1], end[1] = 0, shape[1]  # several batches: whole height (else refused, tested below)
        if rng.random() < 0.3:  # negative begin / end as Relay and TFLite allow
            begin[-1] -= shape[-1]
            end[-1] = end[-1] - shape[-1] if end[-1] < shape[-1] else end[-1]
        sl = tuple(slice(b, e) for b, e in zip(begin, end))
        return shape, dtype, lambda x: relay.strided_slice(x, begin=tuple(begin), end=tuple(end)), \
            lambda a: [a[sl]]
    if kind == "split":
        axis = int(rng.integers(0, rank))
        if rank == 4 and axis == 1:
            shape[0] = 1
        shape[axis] = max(shape[axis], 2)
        cuts = sorted(set(int(v) for v in rng.integers(1, shape[axis], size=int(rng.integers(1, 3)))))
        return shape, dtype, lambda x: relay.split(x, tuple(cuts), axis=axis).astuple(), \
            lambda a: np.split(a, cuts, axis=axis)
    if kind == "pad":
        pw = [[0, 0] for _ in range(rank)]
        hw = {4: (1, 2), 3: (0, 1), 2: (0,)}[rank]
        if rank == 4 and shape[0] > 1:
            hw = (2,)
        for k in hw:
            pw[k] = [int(rng.integers(0, 8)), int(rng.integers(0, 8))]
        info = np.iinfo(dtype)
        pv = int(rng.integers(int(info.min), int(info.max) + 1))
        return shape, dtype, lambda x: relay.nn.pad(x, tuple(map(tuple, pw)), relay.const(pv, dtype)), \
            lambda a: [np.pad(a, pw, constant_values=pv)]
    b = int(rng.integers(2, 4))
    shape[3] = b * b * int(rng.integers(1, 4))

    def d2s(a):  # TFLite DepthToSpace (DCR), element by element
        n, h, w, c = a.shape
        co = c // (b * b)
        out = np.empty((n, h * b, w * b, co), a.dtype)
        for y in range(h * b):
            for xx in range(w * b):
                ch = ((y % b) * b + xx % b) * co
                out[:, y, xx, :] = a[:, y // b, xx // b, ch:ch + co]
        return [out]
    return shape, dtype, lambda x: relay.nn.depth_to_space(x, b, layout="NHWC"), d2s


@pytest.mark.parametrize("chunk", range(4))
def test_random_ops_bit_exact_on_every_preset(chunk):
    for seed in range(chunk * 12, chunk * 12 + 12):
        shape, dtype, make, oracle = _random_case(seed)
        x = _data(np.random.default_rng(seed + 100), tuple(shape), dtype)
        runs = simulate_on_presets(_fn(tuple(shape), dtype, make), {"x": x})  # every preset equals evaluate
        ref = runs["ethos-u55-256-like"][2]
        want = oracle(x)
        assert len(ref) == len(want), seed
        for r, w in zip(ref, want):
            np.testing.assert_array_equal(r, w, err_msg=f"seed {seed}")


@pytest.mark.parametrize("make,shape", [
    (lambda x: relay.strided_slice(x, begin=(0, 3, 5, 17), end=(1, 61, 90, 290)), (1, 64, 96, 300)),
    (lambda x: relay.split(x, (100, 230), axis=3).astuple(), (1, 40, 56, 300)),
    (lambda x: relay.nn.pad(x, ((0, 0), (7, 3), (2, 7), (0, 0)), relay.const(-7, "int8")), (1, 100, 120, 48)),
    (lambda x: relay.nn.depth_to_space(x, 2, layout="NHWC"), (1, 48, 60, 64)),
])
def test_tiled_large_shapes_bit_exact(make, shape):
    x = _data(np.random.default_rng(1), shape, "int8")
    runs = simulate_on_presets(_fn(shape, "int8", make), {"x": x}, presets=("ethos-u55-256-like", "vta-default"))
    prog = runs["vta-default"][0]
    # the windows are cut into several tiles (small local SRAM)
    assert sum(isinstance(c, Store) for c in prog.commands) > len(prog.layers)


# -- commands, DMA bytes and timing ------------------------------------------------------------------------

def test_slice_reads_only_its_window_and_pad_fills_with_the_pad_value():
    fn = _fn((1, 20, 30, 40), "int8", lambda x: relay.strided_slice(x, begin=(0, 2, 3, 8), end=(1, 12, 23, 24)))
    prog = npu_sim.compile(fn, "ethos-u55-256-like")
    loads = [c for c in prog.commands if isinstance(c, Load) and c.kind == TileKind.IFM]
    ppus = [c for c in prog.commands if isinstance(c, Ppu)]
    assert ppus and all(c.op == PpuOp.COPY for c in ppus)
    assert sum(c.h * c.w * c.c for c in loads) == 10 * 20 * 16  # the window, nothing else
    assert {c.c0 for c in loads} == {8} and min(c.y0 for c in loads) == 2 and min(c.x0 for c in loads) == 3
    (info,) = prog.layers
    assert dict(info.bytes_by_area)["sram"] == 2 * 10 * 20 * 16  # window read + output written

    fn = _fn((1, 6, 7, 16), "uint8", lambda x: relay.nn.pad(x, ((0, 0), (2, 1), (3, 4), (0, 0)),
                                                           relay.const(131, "uint8")))
    prog = npu_sim.compile(fn, "ethos-u55-256-like")
    loads = [c for c in prog.commands if isinstance(c, Load) and c.kind == TileKind.IFM]
    assert all(c.pad and c.pad_value == 131 for c in loads if c.y0 < 0 or c.x0 < 0)
    assert min(c.y0 for c in loads) == -2 and min(c.x0 for c in loads) == -3
    (info,) = prog.layers
    # the input is read once (padding is not read), the padded output written once
    assert dict(info.bytes_by_area)["sram"] == 6 * 7 * 16 + 9 * 14 * 16
    x = _data(np.random.default_rng(3), (1, 6, 7, 16), "uint8")
    (got,), st = npu_sim.simulate(prog, {"x": x})
    np.testing.assert_array_equal(got, np.pad(x, ((0, 0), (2, 1), (3, 4), (0, 0)), constant_values=131))
    assert st.total_cycles >= (6 * 7 * 16 + 9 * 14 * 16) / prog.config.area("sram").bytes_per_cycle


def test_depth_to_space_is_block_size_copies_into_column_blocks():
    fn = _fn((1, 4, 5, 12), "int8", lambda x: relay.nn.depth_to_space(x, 2, layout="NHWC"))
    prog = npu_sim.compile(fn, "ethos-u55-256-like")
    assert [info.kind for info in prog.layers] == ["copy", "copy"]
    stores = [c for c in prog.commands if isinstance(c, Store)]
    # the output seen as (N·H, b·W, b·C') = (4, 10, 6): block i starts at column i·W
    assert {(c.img_h, c.img_w, c.img_c) for c in stores} == {(4, 10, 6)}
    assert {c.x0 for c in stores if c.layer == 1} >= {5}


def test_split_of_a_graph_input_and_cycles_scale_with_bytes():
    small = _fn((1, 8, 8, 32), "int8", lambda x: relay.split(x, 2, axis=3).astuple())
    big = _fn((1, 32, 32, 32), "int8", lambda x: relay.split(x, 2, axis=3).astuple())
    cyc = []
    for fn, shape in ((small, (1, 8, 8, 32)), (big, (1, 32, 32, 32))):
        x = _data(np.random.default_rng(0), shape, "int8")
        prog = npu_sim.compile(fn, "ethos-u55-256-like")
        got, st = npu_sim.simulate(prog, {"x": x})
        for g, w in zip(got, np.split(x, 2, axis=3)):
            np.testing.assert_array_equal(g, w)
        cyc.append(st.total_cycles)
    assert cyc[1] > 8 * cyc[0]  # 16x the bytes: DMA-bound copies cost about proportionally


# -- what the compiler refuses (the pattern check refuses the same; tests/patterns) -----------------------

@pytest.mark.parametrize("shape,make,msg", [
    ((1, 8, 8, 4), lambda x: relay.strided_slice(x, begin=(0, 0, 0, 0), end=(1, 8, 8, 4), strides=(1, 2, 1, 1)),
     "stride 2 on axis 1"),
    ((2, 6, 4, 4), lambda x: relay.strided_slice(x, begin=(0, 1, 0, 0), end=(2, 4, 4, 4)), "2 batches"),
    ((2, 6, 4, 4), lambda x: relay.split(x, 2, axis=1).astuple(), "2 batches"),
    ((1, 6, 4, 4), lambda x: relay.nn.pad(x, ((0, 0), (0, 0), (0, 0), (1, 0)), relay.const(0, "int8")),
     "other than height and width"),
    ((2, 6, 4, 4), lambda x: relay.nn.pad(x, ((0, 0), (1, 0), (0, 0), (0, 0)), relay.const(0, "int8")),
     "height of 2 batches"),
])
def test_unsupported_variants_are_npu_errors(shape, make, msg):
    with pytest.raises(NPUError) as e:
        npu_sim.compile(_fn(shape, "int8", make), "ethos-u55-256-like")
    assert msg in str(e.value)


def test_int16_slice_copies_exactly_and_int32_is_refused():
    """16-bit slices are copies too (an unrolled LSTM's time steps; Vela runs them); 32-bit ones are not."""
    x = np.random.default_rng(5).integers(-32768, 32768, (1, 4, 4, 4)).astype(np.int16)
    fn = _fn((1, 4, 4, 4), "int16", lambda v: relay.strided_slice(v, begin=(0, 0, 0, 1), end=(1, 4, 4, 3)))
    simulate_on_presets(fn, {"x": x})   # every preset equals byoc.evaluate
    (got,), _ = npu_sim.simulate(npu_sim.compile(fn, "ethos-u55-256-like"), {"x": x})
    np.testing.assert_array_equal(got, x[:, :, :, 1:3])
    fn = _fn((1, 4, 4, 4), "int32", lambda v: relay.strided_slice(v, begin=(0, 0, 0, 1), end=(1, 4, 4, 3)))
    with pytest.raises(NPUError, match="int32 tensors are not supported"):
        npu_sim.compile(fn, "ethos-u55-256-like")


# -- end to end: a writer-built TFLite model through partition_for and build("npu,llvm"), against LiteRT ------

def _model(dtype):
    from byoc.testing import TFLiteWriter
    rng = np.random.default_rng(7)
    w = TFLiteWriter()
    zp = 9 if dtype == "int8" else 130
    x = w.input("x", (1, 8, 8, 16), dtype, scale=0.05, zero_point=zp)
    lo, hi = (-128, 128) if dtype == "int8" else (0, 256)
    wzp = 0 if dtype == "int8" else 128
    c = w.conv2d(x, rng.integers(lo, hi, (16, 1, 1, 16)).astype(dtype), rng.integers(-300, 300, 16),
                 weight_scale=0.004, weight_zp=wzp, padding="SAME", out_scale=0.08, out_zp=zp - 3)
    p = w.pad(c, [[0, 0], [1, 1], [2, 0], [0, 0]])                       # (1, 10, 10, 16)
    a, b = w.split(p, 2, axis=3)                                         # 2 × (1, 10, 10, 8)
    s = w.strided_slice(a, [0, 1, 1, 0], [1, 9, 9, 8])                   # (1, 8, 8, 8)
    sl = w.slice(b, [0, 0, 2, 0], [1, 8, -1, 8])                          # (1, 8, 8, 8)
    d = w.depth_to_space(sl, 2)                                          # (1, 16, 16, 2)
    v1, v2 = w.split_v(s, [3, -1], axis=3)                               # (1, 8, 8, 3), (1, 8, 8, 5)
    w.output(d, v1, v2)
    return w.finish(), rng.integers(lo, hi, (1, 8, 8, 16)).astype(dtype)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_tflite_model_end_to_end_matches_litert(dtype):
    from byoc.frontend import from_tflite
    model, x = _model(dtype)
    want = litert_outputs(model, x)
    mod, params = from_tflite(model)
    pm, report = byoc.partition_for("npu", mod, params, return_report=True)
    main = pm["main"].astext()
    for op in ("strided_slice", "split", "nn.pad", "nn.depth_to_space"):
        assert op not in main, op  # offloaded, not left on the CPU
    assert not report.cpu_ops(), [n.op for n in report.cpu_ops()]
    exe = byoc.build(pm, target="npu,llvm", npu_config="ethos-u55-256-like")
    got = exe.run({mod["main"].params[0].name_hint: x})
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_whatever_partition_for_offers_compiles_and_is_exact():
    """Random slices/splits/pads, supported or not: the pattern check offers the NPU only what npu_sim
    compiles, and the built module equals byoc.evaluate (refused variants run on the CPU)."""
    offered = refused = 0
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed)
        shape = (int(rng.integers(1, 3)), int(rng.integers(2, 6)), int(rng.integers(2, 6)), int(rng.integers(2, 6)))
        x = relay.var("x", shape=shape, dtype="int8")
        kind = seed % 3
        if kind == 0:
            begin = [int(rng.integers(0, d)) for d in shape]
            end = [int(rng.integers(b + 1, d + 1)) for b, d in zip(begin, shape)]
            strides = [int(rng.choice([1, 1, 1, 2])) for _ in shape]
            y = relay.strided_slice(x, begin=tuple(begin), end=tuple(end), strides=tuple(strides))
        elif kind == 1:
            axis = int(rng.integers(0, 4))
            y = relay.split(x, (1,), axis=axis)[int(rng.integers(0, 2))]
        else:
            pw = tuple((int(rng.integers(0, 3)) if rng.random() < 0.3 else 0,
                        int(rng.integers(0, 10)) if rng.random() < 0.4 else 0) for _ in shape)
            y = relay.nn.pad(x, pw, relay.const(int(rng.integers(-128, 128)), "int8"))
        mod = byoc.IRModule.from_expr(relay.Function([x], relay.clip(y, -128, 127)))
        pm, report = byoc.partition_for("npu", mod, return_report=True)
        op = {0: "strided_slice", 1: "split", 2: "nn.pad"}[kind]
        cpu = [n.op for n in report.cpu_ops()]
        refused += op in cpu
        offered += op not in cpu
        data = _data(rng, shape, "int8")
        exe = byoc.build(pm, target="npu,llvm", npu_config="ethos-u55-256-like")
        (got,) = exe.run({"x": data})
        np.testing.assert_array_equal(got, byoc.evaluate(mod, {"x": data})[0], err_msg=f"seed {seed}")
    assert offered >= 10 and refused >= 5, (offered, refused)


@pytest.mark.parametrize("make,shape", [
    (lambda x: relay.nn.depth_to_space(x, 2, layout="NHWC"), (1, 6, 5, 16)),
    (lambda x: relay.nn.pad(x, ((0, 0), (3, 1), (0, 2), (0, 0)), relay.const(4, "int8")), (1, 9, 7, 24)),
    (lambda x: relay.split(x, (5,), axis=2).astuple(), (1, 9, 7, 24)),
])
def test_program_round_trip_and_hazard_validation(make, shape):
    prog = npu_sim.compile(_fn(shape, "int8", make), "ethos-n78-like")
    again = type(prog).from_bytes(prog.to_bytes())
    assert again.to_bytes() == prog.to_bytes()
    assert again.validate(check_hazards=True) is not None  # every token/ordering the copies need is there
    x = _data(np.random.default_rng(2), shape, "int8")
    for a, b in zip(npu_sim.simulate(again, {"x": x})[0], npu_sim.simulate(prog, {"x": x})[0]):
        np.testing.assert_array_equal(a, b)
