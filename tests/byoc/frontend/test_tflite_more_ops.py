"""The wider TFLite op coverage end to end: SLICE, EXPAND_DIMS, SPLIT_V, PACK, UNPACK, MAXIMUM, MINIMUM, ARG_MAX,
ARG_MIN, REDUCE_MAX, REDUCE_MIN, SUM, DEPTH_TO_SPACE, SPACE_TO_DEPTH, GATHER, PRELU, RESIZE_BILINEAR and
BATCH_MATMUL.

Each case writes a single-op model with random shapes and parameters (seeded per case), imports it, and requires
``byoc.evaluate`` to equal LiteRT BUILTIN_REF bit for bit (float models: to float32 rounding), and the LLVM CPU
build to equal ``byoc.evaluate`` bit for bit. The oracle is LiteRT; nothing here computes expected values, except
the independent numpy checks of LiteRT's own int8 SUM quirk and of the refusals. RESIZE_BILINEAR and
BATCH_MATMUL float results are compared bit for bit too (the IR sums in LiteRT's order).
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import byoc
from byoc.errors import ByocError
from byoc.frontend import from_tflite
from byoc.testing import TFLiteWriter

from tflite_oracles import check_against_litert, litert_run, random_inputs

pytest.importorskip("ai_edge_litert")
DTYPES = ("int8", "uint8", "float32")
SAMPLES = 2


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _input(w: TFLiteWriter, rng, shape, dtype, name="x"):
    if dtype == "float32":
        return w.input(name, shape, "float32")
    zp = int(rng.integers(-20, 20)) if dtype == "int8" else int(rng.integers(100, 156))
    return w.input(name, shape, dtype, scale=float(rng.uniform(0.01, 0.1)), zero_point=zp)


def _shape(rng, rank, lo=1, hi=5):
    return tuple(int(d) for d in rng.integers(lo, hi + 1, rank))


def check(data: bytes, seed: int, cpu: bool = True, exact_float: bool = False) -> None:
    check_against_litert(data, np.random.default_rng(seed), exact_float=exact_float, samples=SAMPLES, cpu=cpu)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(3))
def test_slice(dtype, case):
    rng = _rng("slice", dtype, case)
    w = TFLiteWriter()
    shape = _shape(rng, int(rng.integers(1, 5)))
    x = _input(w, rng, shape, dtype)
    begin = [int(rng.integers(0, d)) for d in shape]
    size = [-1 if rng.random() < 0.3 else int(rng.integers(1, d - b + 1)) for b, d in zip(begin, shape)]
    w.output(w.slice(x, begin, size))
    check(w.finish(), case)


@pytest.mark.parametrize("dtype", DTYPES)
def test_expand_dims(dtype):
    rng = _rng("expand_dims", dtype)
    for axis in (0, -1, 2):
        w = TFLiteWriter()
        x = _input(w, rng, _shape(rng, 3), dtype)
        y = w.expand_dims(x, axis)
        w.output(w.relu(y) if dtype != "float32" else y)  # a consumer, so the reshape is fused on the CPU
        check(w.finish(), axis + 7)


@pytest.mark.parametrize("dtype", DTYPES)
def test_split_v(dtype):
    rng = _rng("split_v", dtype)
    w = TFLiteWriter()
    shape = _shape(rng, 3, 2, 6)
    x = _input(w, rng, shape, dtype)
    axis = int(rng.integers(-3, 3))
    dim = shape[axis]
    cuts = sorted(rng.choice(np.arange(1, dim), size=min(2, dim - 1), replace=False).tolist())
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [dim])]
    sizes[int(rng.integers(0, len(sizes)))] = -1
    w.output(*w.split_v(x, sizes, axis))
    check(w.finish(), 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pack_unpack(dtype):
    rng = _rng("pack", dtype)
    for axis in (0, 1, -1):
        w = TFLiteWriter()
        shape = _shape(rng, 3)
        a = _input(w, rng, shape, dtype, "a")
        b = w.input("b", shape, dtype, scale=a.scale, zero_point=a.zero_point[0] if a.quantized else 0)
        packed = w.pack([a, b, a], axis)
        w.output(packed, *w.unpack(packed, (axis + 1) % 3))
        check(w.finish(), axis + 7)


def test_pack_with_other_quantization_is_refused():
    w = TFLiteWriter()
    a = w.input("a", (2, 3), "int8", scale=0.1, zero_point=1)
    b = w.input("b", (2, 3), "int8", scale=0.2, zero_point=1)
    w.output(w.pack([a, b], 0))
    with pytest.raises(ByocError, match="PACK requires equal quantization"):
        from_tflite(w.finish())


@pytest.mark.parametrize("op", ("maximum", "minimum"))
@pytest.mark.parametrize("dtype", DTYPES)
def test_maximum_minimum(op, dtype):
    rng = _rng(op, dtype)
    w = TFLiteWriter()
    shape = _shape(rng, 3)
    a = _input(w, rng, shape, dtype, "a")
    if rng.random() < 0.5:
        b = _input(w, rng, (1,) + shape[1:], dtype, "b")
    else:
        b = rng.integers(0, 100, shape[-1:]).astype(dtype)
    w.output(getattr(w, op)(a, b))
    check(w.finish(), 2)


@pytest.mark.parametrize("op", ("arg_max", "arg_min"))
@pytest.mark.parametrize("dtype", DTYPES)
def test_arg_max_min(op, dtype):
    rng = _rng(op, dtype)
    w = TFLiteWriter()
    shape = _shape(rng, 3, 1, 6)
    x = _input(w, rng, shape, dtype)
    axis = int(rng.integers(-3, 3))
    w.output(getattr(w, op)(x, axis, output_type="int64" if dtype == "uint8" else "int32"))
    check(w.finish(), 3)


@pytest.mark.parametrize("op", ("REDUCE_MAX", "REDUCE_MIN", "SUM"))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("keep", (False, True))
def test_reduce(op, dtype, keep):
    rng = _rng(op, dtype, keep)
    w = TFLiteWriter()
    shape = _shape(rng, 4, 1, 5)
    x = _input(w, rng, shape, dtype)
    axes = sorted(set(int(a) for a in rng.integers(-4, 4, int(rng.integers(1, 3)))))
    kw = {}
    if op == "SUM" and dtype != "float32":
        kw = dict(out_scale=float(x.scale[0]) * float(rng.uniform(1, 6)),
                  out_zp=int(rng.integers(-20, 20)) + (128 if dtype == "uint8" else 0))
    w.output(w.reduce(op, x, axes, keep, **kw))
    check(w.finish(), 4)


def test_int8_sum_reads_bytes_as_uint8_like_litert():
    """LiteRT's REF SUM passes int8 data as uint8: an independent numpy check of that reading, so the IR's
    reproduction of it is known to be LiteRT's behaviour and not a coincidence."""
    w = TFLiteWriter()
    x = w.input("x", (1, 4), "int8", scale=0.1, zero_point=-3)
    w.output(w.reduce("SUM", x, [1], out_scale=0.5, out_zp=2))
    data = w.finish()
    xv = np.array([[-1, 5, -100, 7]], np.int8)
    ref = litert_run(data, [xv])[0][0]
    as_u8 = int(xv.view(np.uint8).astype(np.int64).sum())
    assert int(ref.view(np.uint8)[0]) == round((as_u8 + 3 * 4) * 0.2) + 2
    mod, _ = from_tflite(data)
    assert np.array_equal(byoc.evaluate(mod, {"x": xv})[0], ref)


@pytest.mark.parametrize("op", ("depth_to_space", "space_to_depth"))
@pytest.mark.parametrize("dtype", DTYPES)
def test_depth_space(op, dtype):
    rng = _rng(op, dtype)
    w = TFLiteWriter()
    bs = int(rng.integers(2, 4))
    n, h, wd, c = 1, int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    shape = (n, h, wd, c * bs * bs) if op == "depth_to_space" else (n, h * bs, wd * bs, c)
    x = _input(w, rng, shape, dtype)
    w.output(getattr(w, op)(x, bs))
    check(w.finish(), 5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(3))
def test_gather(dtype, case):
    rng = _rng("gather", dtype, case)
    w = TFLiteWriter()
    shape = _shape(rng, 3, 2, 5)
    x = _input(w, rng, shape, dtype)
    axis = int(rng.integers(0, 3))
    batch_dims = int(rng.integers(0, axis + 1)) if case == 2 else 0
    ishape = tuple(shape[:batch_dims]) + _shape(rng, int(rng.integers(1, 3)), 1, 3)
    indices = rng.integers(0, shape[axis], ishape).astype(np.int32)
    if case == 1:  # runtime indices: a graph input (random_inputs draws them in range below)
        iref = w.input("i", ishape, "int32")
        w.output(w.gather(x, iref, axis, batch_dims))
        data = w.finish()
        mod, _ = from_tflite(data)
        exe = byoc.build(mod, target="llvm")
        xv = random_inputs(mod, rng)[0]
        ref, _ = litert_run(data, [xv, indices])
        ours = byoc.evaluate(mod, {"x": xv, "i": indices})
        assert np.array_equal(ours[0], ref[0]) and np.array_equal(exe.run({"x": xv, "i": indices})[0], ours[0])
        bad = indices.copy()
        bad.reshape(-1)[0] = shape[axis]
        for run in (lambda: byoc.evaluate(mod, {"x": xv, "i": bad}), lambda: exe.run({"x": xv, "i": bad})):
            with pytest.raises(byoc.ExecutionError, match="out of range"):
                run()
        return
    w.output(w.gather(x, indices, axis, batch_dims))
    check(w.finish(), 6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(3))
def test_prelu(dtype, case):
    rng = _rng("prelu", dtype, case)
    w = TFLiteWriter()
    shape = _shape(rng, 4, 1, 5)
    x = _input(w, rng, shape, dtype)
    ashape = [shape[-1:], shape[1:], (1, 1, shape[-1])][case]
    if dtype == "float32":
        w.output(w.prelu(x, rng.uniform(-1, 1, ashape).astype(np.float32)))
    else:
        info = np.iinfo(dtype)
        alpha = rng.integers(info.min, info.max + 1, ashape).astype(dtype)
        a_zp = int(rng.integers(-10, 10)) + (128 if dtype == "uint8" else 0)
        out_zp = int(rng.integers(-20, 20)) + (128 if dtype == "uint8" else 0)
        w.output(w.prelu(x, alpha, alpha_scale=float(rng.uniform(0.002, 0.02)), alpha_zp=a_zp,
                         out_scale=float(x.scale[0]) * float(rng.uniform(0.5, 2)), out_zp=out_zp))
    check(w.finish(), 8 + case)


# ---------------------------------------------------------------------------------------- RESIZE_BILINEAR
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ("asymmetric", "align_corners", "half_pixel"))
@pytest.mark.parametrize("case", range(2))
def test_resize_bilinear(dtype, mode, case):
    rng = _rng("resize_bilinear", dtype, mode, case)
    w = TFLiteWriter()
    shape = (int(rng.integers(1, 3)),) + _shape(rng, 3, 1, 6)
    x = _input(w, rng, shape, dtype)
    size = [int(rng.integers(1, 3 * d + 3)) for d in shape[1:3]]  # up- and down-sampling
    y = w.resize_bilinear(x, size, align_corners=mode == "align_corners", half_pixel_centers=mode == "half_pixel")
    w.output(w.relu(y) if case == 1 and dtype != "float32" else y)  # a fused consumer on the CPU
    check(w.finish(), 10 + case, exact_float=True)


@pytest.mark.parametrize("dtype", ("int8", "uint8"))
def test_resize_bilinear_upscale_64(dtype):
    """The benchmark shape (1×32×32×16 → 64×64) with half-pixel centres."""
    rng = _rng("resize64", dtype)
    w = TFLiteWriter()
    x = _input(w, rng, (1, 32, 32, 16), dtype)
    w.output(w.resize_bilinear(x, (64, 64), half_pixel_centers=True))
    check(w.finish(), 12)


def test_resize_bilinear_integer_arithmetic_is_litert_s():
    """Independent numpy checks of LiteRT's two 8-bit schemes on one column [lo, hi] resized to 3 rows: uint8
    interpolates in float32, adds 0.5 and truncates; int8 uses 10-bit weights (scale₁₀ = (2048 + 1) // 3 = 683
    for 2 → 3 rows) and divides by 2^20 rounding half away from zero (−0.5 → −1)."""
    for dtype, col in (("uint8", [0, 255]), ("int8", [-128, 127])):
        models = []
        for align in (True, False):  # source rows 0, 1/2, 1 (align_corners) or 0, 2/3, 4/3 (clamped to 1)
            w = TFLiteWriter()
            x = w.input("x", (1, 2, 1, 1), dtype, scale=0.1, zero_point=0 if dtype == "int8" else 128)
            w.output(w.resize_bilinear(x, (3, 1), align_corners=align))
            models.append(w.finish())
        xv = np.array(col, dtype).reshape(1, 2, 1, 1)
        got = [litert_run(m, [xv])[0][0].reshape(-1).tolist() for m in models]
        if dtype == "uint8":
            f = np.float32
            mid = int(np.trunc(f(255) * f(0.5) + f(0.5)))
            two_thirds = int(np.trunc(f(255) * (f(2) / f(3)) + f(0.5)))
            assert got == [[0, mid, 255], [0, two_thirds, 255]]
        else:
            def div20(v):  # C's truncating division of v ± 2^19 by 2^20
                q = v + (1 << 19 if v > 0 else -(1 << 19))
                return int(np.sign(q)) * (abs(q) >> 20)
            mid = div20((-128 * 512 + 127 * 512) * 1024)
            s10 = (1024 * 2 + 1) // 3
            two_thirds = div20((-128 * (1024 - s10) + 127 * s10) * 1024)
            assert got == [[-128, mid, 127], [-128, two_thirds, 127]] and mid == -1
        for m, ref in zip(models, got):
            mod, _ = from_tflite(m)
            assert byoc.evaluate(mod, {"x": xv})[0].reshape(-1).tolist() == ref


def test_resize_bilinear_refusals():
    w = TFLiteWriter()
    x = w.input("x", (1, 2, 2, 1), "int32")
    w.output(w.resize_bilinear(x, (4, 4)))
    with pytest.raises(ByocError, match="RESIZE_BILINEAR takes"):
        from_tflite(w.finish())
    w = TFLiteWriter()
    x = w.input("x", (1, 2, 2, 1), "float32")
    w.output(w.resize_bilinear(x, (4, 4), align_corners=True, half_pixel_centers=True))
    with pytest.raises(ByocError, match="cannot both be set"):
        from_tflite(w.finish())
    # 1 → 55 rows: scale₁₀ = (1024 + 27) // 55 = 19, and 54·19 = 1026 reads row 1 of a 1-row input
    w = TFLiteWriter()
    x = w.input("x", (2, 1, 1, 1), "int8", scale=0.1, zero_point=0)
    w.output(w.resize_bilinear(x, (55, 1)))
    data = w.finish()
    xv = np.array([10, 100], np.int8).reshape(2, 1, 1, 1)
    assert litert_run(data, [xv])[0][0][0, -1, 0, 0] == 100  # LiteRT read batch 1's row for batch 0
    with pytest.raises(ByocError, match="past the input's edge"):
        from_tflite(data)


# ------------------------------------------------------------------------------------------- BATCH_MATMUL
def _bmm_shapes(rng, case):
    """(a shape, b shape, adj_x, adj_y): ranks 2-5 with broadcasting batch dimensions."""
    m, k, n = (int(v) for v in rng.integers(1, 6, 3))
    adj_x, adj_y = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
    batch = [(), (3,), (2, 3), (2, 1, 2)][case % 4]
    a_batch = tuple(1 if rng.random() < 0.4 else d for d in batch)
    b_batch = tuple(d if a == 1 or rng.random() < 0.5 else 1 for a, d in zip(a_batch, batch))
    if case % 2:
        b_batch = b_batch[int(rng.integers(0, len(b_batch) + 1)):]  # a lower-rank rhs
    a = a_batch + ((k, m) if adj_x else (m, k))
    b = b_batch + ((n, k) if adj_y else (k, n))
    return a, b, adj_x, adj_y


@pytest.mark.parametrize("dtype", ("int8", "float32"))
@pytest.mark.parametrize("case", range(8))
def test_batch_matmul(dtype, case):
    rng = _rng("batch_matmul", dtype, case)
    w = TFLiteWriter()
    ashape, bshape, adj_x, adj_y = _bmm_shapes(rng, case)
    a = _input(w, rng, ashape, dtype, "a")
    kw = {}
    if dtype == "int8":
        k = ashape[-2] if adj_x else ashape[-1]
        b_scale, b_zp = float(rng.uniform(0.005, 0.05)), int(rng.integers(-20, 20))
        kw = dict(out_scale=float(a.scale[0]) * b_scale * float(rng.uniform(4, 40)) * np.sqrt(k),
                  out_zp=int(rng.integers(-20, 20)))
    if case < 4:  # a constant rhs (weights)
        bv = rng.integers(-128, 128, bshape).astype(np.int8) if dtype == "int8" else \
            rng.standard_normal(bshape).astype(np.float32)
        b = bv
        if dtype == "int8":
            kw.update(b_scale=b_scale, b_zp=b_zp)
    else:
        b = w.input("b", bshape, dtype, **({} if dtype == "float32" else dict(scale=b_scale, zero_point=b_zp)))
    w.output(w.batch_matmul(a, b, adj_x=adj_x, adj_y=adj_y, **kw))
    check(w.finish(), 20 + case, exact_float=True)


def test_batch_matmul_refusals():
    """uint8 BATCH_MATMUL: LiteRT refuses it, and so does the importer; mismatched reduction sizes too."""
    w = TFLiteWriter()
    a = w.input("a", (2, 3, 4), "uint8", scale=0.1, zero_point=128)
    w.output(w.batch_matmul(a, np.ones((4, 5), np.uint8), b_scale=0.1, b_zp=128, out_scale=1.0, out_zp=128))
    data = w.finish()
    with pytest.raises(Exception):
        litert_run(data, [np.zeros((2, 3, 4), np.uint8)])
    with pytest.raises(ByocError, match="float32, int8 or int16"):
        from_tflite(data)
    w = TFLiteWriter()
    a = w.input("a", (2, 3, 4), "float32")
    b = w.input("b", (2, 5, 6), "float32")
    w.output(w.batch_matmul(a, b))
    with pytest.raises(ByocError, match="reduction sizes 4 and 5"):
        from_tflite(w.finish())


def test_resize_lowering_is_chosen_per_call():
    """Nearest resizing keeps fusing element by element into its consumers' loop nest (no anchor); a bilinear
    call of the same op gets a kernel lowering that anchors its group, with the consumer as its epilogue."""
    from byoc import relay
    from byoc.backend.llvm import fuse_groups
    from byoc.transform.infer_type import InferType
    x = relay.var("x", shape=(1, 3, 4, 2), dtype="int8")
    for method, anchored in (("nearest_neighbor", False), ("linear", True)):
        y = relay.image.resize2d(x, size=(5, 7), layout="NHWC", method=method,
                                 coordinate_transformation_mode="asymmetric")
        mod = InferType()(byoc.IRModule.from_expr(relay.Function([x], relay.cast(y, "int32"))))
        groups = fuse_groups(mod["main"])
        assert len(groups) == 1
        assert [n.op.name for n in groups[0].nodes] == ["image.resize2d", "cast"]
        assert (groups[0].anchor is not None) == anchored
        xv = np.arange(24, dtype=np.int8).reshape(1, 3, 4, 2)
        assert np.array_equal(byoc.build(mod, target="llvm").run({"x": xv})[0], byoc.evaluate(mod, {"x": xv})[0])
