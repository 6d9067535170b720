"""Functional semantics of every command, in numpy, bit-exact with TFLite's reference kernels.

Commands run in stream order (the program's sequential meaning; the validator has checked that the tokens
order every hazard, so any token-respecting schedule computes the same bytes). Main memory is one byte array per
memory area; local SRAM holds typed tiles keyed by (buffer, offset). MAC accumulation goes through float64 BLAS,
which is exact for int8/uint8 operands (|Σ| < 2^53), then wraps to int32 like TFLite's accumulator.

Memory use: an area that holds only constants (the weights) is not copied per run; loads read the program's
constant images in place, and the area is materialised only if a command ever stores into it. Convolution
im2col matrices are built a block of output rows at a time, bounded by ``IM2COL_BLOCK_BYTES`` (float64 sums
of integer products are exact, so the blocking cannot change a bit).
"""
from __future__ import annotations

import contextlib

import numpy as np

from byoc.errors import ExecutionError, NPUError
from byoc.quant.fixedpoint import mbqm, rdbpot, srdhm, wrap32

from byoc.ops.image import resize_window
from byoc.ops.qnn_activation import softmax_rows_fixed
from byoc.quant.params import SoftmaxParams

from .deps import RegionIndex
from .int16_layers import requant_int64
from .isa import (DTYPES, LOAD_CONTINUE, LOAD_PAD, LOAD_UPSCALE_H, LOAD_UPSCALE_W, LUT16_INTERP, Load, Mac, MacOp, Ppu,
                  PpuOp, Rounding, Store, disassemble_command, load_source_window, src1_tile_shape)
from .program import Program

__all__ = ["Machine", "run_functional"]

_TABLE_DTYPE = np.dtype([("bias", "<i4"), ("mult", "<i4"), ("shift", "i1"), ("spare", "u1")])
_NP = [np.dtype(d) for d in DTYPES]
_RANGE = [(int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in DTYPES]
_INT32_MIN = -(1 << 31)
_INT16 = DTYPES.index("int16")
# RESIZE's ctm parameter → TFLite's coordinate mode as image.resize2d spells it (mode, rounding_method)
RESIZE_MODES = (("asymmetric", ""), ("align_corners", ""), ("half_pixel", "round_prefer_ceil"))
# Upper bound on one conv im2col block (float64): larger tiles are multiplied a band of output rows at a time.
IM2COL_BLOCK_BYTES = 4 << 20


class Machine:
    def __init__(self, prog: Program):
        self.prog = prog
        cfg = prog.config
        tops = [0] * len(cfg.memory_areas)
        for r in prog.regions:
            tops[r.area] = max(tops[r.area], r.base + r.size)
        images = {rid: data for rid, data in prog.constants}
        # Areas whose every region has a constant image are read in place (mem[area] is None until a store).
        shared = [bool(tops[a]) for a in range(len(tops))]
        end = [0] * len(tops)
        for r in sorted(prog.regions, key=lambda r: (r.area, r.base)):
            if r.id not in images or len(images[r.id]) != r.size or r.base < end[r.area]:  # overlaps: copy
                shared[r.area] = False
            end[r.area] = max(end[r.area], r.base + r.size)
        self.mem: list[np.ndarray | None] = [None if shared[a] else np.zeros(t, np.uint8)
                                             for a, t in enumerate(tops)]
        self.const_index = RegionIndex([r for r in prog.regions if shared[r.area]])
        self.const_images = {r.id: np.frombuffer(images[r.id], np.uint8) for r in prog.regions if shared[r.area]}
        for rid, data in prog.constants:
            r = prog.regions[rid]
            if not shared[r.area]:
                self.mem[r.area][r.base:r.base + r.size] = np.frombuffer(data, np.uint8)
        self.local: dict[tuple[int, int], np.ndarray] = {}
        self.const_ends: dict[tuple[int, int], int] = {}   # (buffer, end) of a 1-D constant tile → its offset
        self.tables: dict[tuple[int, int], tuple] = {}   # decoded requant tables, keyed by the tile they came from
        self.weights: dict[tuple[int, int], tuple] = {}  # float64 weight matrices, keyed likewise
        self.views: dict[tuple, np.ndarray] = {}          # (area, base, h, w, c, dtype) → that tensor's array

    def view(self, area: int, base: int, h: int, w: int, c: int, dtype: int) -> np.ndarray:
        key = (area, base, h, w, c, dtype)
        v = self.views.get(key)   # a program addresses few distinct tensors: each view is made once
        if v is not None:
            return v
        dt = _NP[dtype]
        n = h * w * c * dt.itemsize
        mem = self.mem[area]
        if mem is None:  # a constant area: the window lies in one region (the validator checked it)
            r = self.const_index.find(area, base, base + n)
            if r is None:
                raise ValueError(f"memory {base:#x}..{base + n:#x} of area {area} is not one region")
            v = self.const_images[r.id][base - r.base:base - r.base + n].view(dt).reshape(h, w, c)
        else:
            v = mem[base:base + n].view(dt).reshape(h, w, c)
        self.views[key] = v
        return v

    def writable_area(self, area: int) -> None:
        """Materialise a constant area before something stores into it (never in compiled programs)."""
        if self.mem[area] is None:
            img = np.zeros(max(r.base + r.size for r in self.prog.regions if r.area == area), np.uint8)
            for r in self.prog.regions:
                if r.area == area:
                    img[r.base:r.base + r.size] = self.const_images[r.id]
            self.mem[area] = img
            self.views.clear()   # views of the constant images would no longer see the stores

    def write_inputs(self, inputs: dict) -> None:
        problems = []
        for b in self.prog.inputs:
            if b.name not in inputs:
                problems.append(f"missing input {b.name!r}")
                continue
            v = np.asarray(inputs[b.name])
            if tuple(v.shape) != b.shape or v.dtype.name != b.dtype:
                problems.append(f"input {b.name!r}: expected {b.dtype}{list(b.shape)}, found {v.dtype.name}"
                                f"{list(v.shape)}")
                continue
            r = self.prog.regions[b.region]
            self.mem[r.area][r.base:r.base + r.size] = np.ascontiguousarray(v).view(np.uint8).reshape(-1)
        extra = sorted(set(inputs) - {b.name for b in self.prog.inputs})
        if extra:
            problems.append(f"unknown input(s) {', '.join(extra)}")
        if problems:
            raise ExecutionError("bad NPU inputs: " + "; ".join(problems),
                                 hint="inputs: " + ", ".join(f"{b.name} {b.dtype}{list(b.shape)}"
                                                             for b in self.prog.inputs))

    def read_outputs(self) -> list[np.ndarray]:
        outs = []
        for b in self.prog.outputs:
            r = self.prog.regions[b.region]
            outs.append(self.mem[r.area][r.base:r.base + r.size].view(b.dtype).reshape(b.shape).copy())
        return outs

    def tile(self, buf: int, off: int, i: int) -> np.ndarray:
        t = self.local.get((buf, off))
        if t is None:
            raise NPUError(f"command #{i} ({disassemble_command(self.prog.commands[i])}) reads local buffer {buf} "
                           f"at {off:#x}, which holds no tile")
        return t

    # ------------------------------------------------------------------------------------------- commands
    def step(self, i: int, c) -> None:
        """Run command ``c`` (number ``i``)."""
        {Load: self.load, Store: self.store, Mac: self.run_mac, Ppu: self.run_ppu}[type(c)](i, c)

    def run(self) -> None:
        step = {Load: self.load, Store: self.store, Mac: self.run_mac, Ppu: self.run_ppu}
        i, c = 0, None
        try:
            for i, c in enumerate(self.prog.commands):
                step[type(c)](i, c)
        except (ValueError, IndexError, TypeError, OverflowError, ZeroDivisionError) as e:
            # A validated program whose tiles disagree in size with what a command expects (corrupt data).
            raise NPUError(f"command #{i} ({disassemble_command(c)}) cannot run: {e}",
                           hint="the local tile it reads was written with a different shape") from e

    def load(self, i: int, c: Load) -> None:
        src = self.view(c.area, c.base, c.img_h, c.img_w, c.img_c, c.dtype)
        if c.pad & (LOAD_UPSCALE_H | LOAD_UPSCALE_W):
            # the source pixels land at the window's in-image even positions; pad_value everywhere else
            t = np.full((c.h, c.w, c.c), c.pad_value, _NP[c.dtype])
            sy, sx, sh, sw = load_source_window(c)
            fy, fx = (2 if c.pad & LOAD_UPSCALE_H else 1), (2 if c.pad & LOAD_UPSCALE_W else 1)
            if sh and sw:
                t[sy * fy - c.y0:(sy + sh - 1) * fy - c.y0 + 1:fy, sx * fx - c.x0:(sx + sw - 1) * fx - c.x0 + 1:fx] = \
                    src[sy:sy + sh, sx:sx + sw, c.c0:c.c0 + c.c]
        elif c.pad & LOAD_PAD:
            t = np.full((c.h, c.w, c.c), c.pad_value, _NP[c.dtype])
            ya, yb = max(c.y0, 0), min(c.y0 + c.h, c.img_h)
            xa, xb = max(c.x0, 0), min(c.x0 + c.w, c.img_w)
            if ya < yb and xa < xb:
                t[ya - c.y0:yb - c.y0, xa - c.x0:xb - c.x0] = src[ya:yb, xa:xb, c.c0:c.c0 + c.c]
        else:
            t = src[c.y0:c.y0 + c.h, c.x0:c.x0 + c.w, c.c0:c.c0 + c.c].copy()
        end = c.off + t.nbytes
        if c.pad & LOAD_CONTINUE:
            # a later piece of a constant tile: appended to the tile ending where it lands
            start = self.const_ends.pop((c.buf, c.off), None)
            if start is None:
                raise NPUError(f"command #{i} ({disassemble_command(c)}) continues a constant tile, but none ends at "
                               f"local buffer {c.buf} offset {c.off:#x}",
                               hint="the program is corrupt: a continued load follows the load it extends")
            head = self.tile(c.buf, start, i)
            self.local[(c.buf, start)] = np.concatenate([head.reshape(-1), t.reshape(-1)]).reshape(1, 1, -1)
            self.const_ends[(c.buf, end)] = start
            return
        if c.img_h == c.img_w == 1:
            self.const_ends[(c.buf, end)] = c.off
        self.local[(c.buf, c.off)] = t

    def store(self, i: int, c: Store) -> None:
        t = self.tile(c.buf, c.off, i)
        if self.mem[c.area] is None:
            self.writable_area(c.area)
        dst = self.view(c.area, c.base, c.img_h, c.img_w, c.img_c, c.dtype)
        dst[c.y0:c.y0 + c.h, c.x0:c.x0 + c.w, c.c0:c.c0 + c.c] = t.reshape(c.h, c.w, c.c)

    def run_mac(self, i: int, c: Mac) -> None:
        acc = self.mac(c, i)
        if c.ic0:
            # a later IFM depth slice: its partial sum adds to the tile's accumulator, wrapping like the one sum
            # of the whole depth (int32 addition is modular, so the slices' order and count do not matter)
            prev = self.tile(c.acc_buf, c.acc_off, i)
            if prev.shape != acc.shape:
                raise NPUError(f"command #{i} ({disassemble_command(c)}) adds to a {'x'.join(map(str, prev.shape))} "
                               f"accumulator tile, expected {c.oh}x{c.ow}x{c.oc}", hint="the program is corrupt")
            acc = np.add(prev, acc, dtype=acc.dtype)
        self.local[(c.acc_buf, c.acc_off)] = acc

    def run_ppu(self, i: int, c: Ppu) -> None:
        self.local[(c.dst_buf, c.dst_off)] = self.ppu(c, i)

    def raw(self, buf: int, off: int, i: int) -> np.ndarray:
        return self.tile(buf, off, i).reshape(-1).view(np.uint8)

    def mac(self, c: Mac, i: int) -> np.ndarray:
        x = self.tile(c.ifm_buf, c.ifm_off, i)
        if x.shape != (c.ih, c.iw, c.ic):
            # the strided views below are built on these extents
            raise NPUError(f"command #{i} ({disassemble_command(c)}) expects a {c.ih}x{c.iw}x{c.ic} IFM tile, "
                           f"found {'x'.join(map(str, x.shape))}", hint="the program is corrupt")
        x = np.subtract(x, c.zp_in, dtype=np.float64)
        nk = c.kh * c.kw
        w = self.weight_matrix(c, i, nk)
        if c.op != MacOp.DEPTHWISE:
            if nk == 1 and (c.ih, c.iw) == (c.oh, c.ow):   # 1x1, stride 1: the tile is its own im2col
                cols = x.reshape(c.oh, c.ow, 1, 1, c.ic)
            else:
                s0, s1, s2 = x.strides   # x is a fresh contiguous copy: a read-only strided view over it
                cols = np.ndarray((c.oh, c.ow, c.kh, c.kw, c.ic), np.float64, x,
                                  strides=(s0 * c.sh, s1 * c.sw, s0 * c.dh, s1 * c.dw, s2))
            row_bytes = c.ow * nk * c.ic * 8
            if c.oh * row_bytes <= IM2COL_BLOCK_BYTES:
                acc = cols.reshape(c.oh * c.ow, nk * c.ic) @ w.T
            else:  # a band of output rows at a time keeps the im2col copy bounded
                acc = np.empty((c.oh, c.ow, c.oc), np.float64)
                band = max(1, IM2COL_BLOCK_BYTES // row_bytes)
                for y in range(0, c.oh, band):
                    rows = cols[y:y + band]
                    np.matmul(rows.reshape(len(rows) * c.ow, nk * c.ic), w.T,
                              out=acc[y:y + band].reshape(len(rows) * c.ow, c.oc))
        else:
            if c.dm > 1:
                x = np.repeat(x, c.dm, axis=2)
            s0, s1, s2 = x.strides   # every tap of every output at once: a strided view, summed by einsum
            taps = np.ndarray((c.oh, c.ow, c.kh, c.kw, c.oc), np.float64, x,
                              strides=(s0 * c.sh, s1 * c.sw, s0 * c.dh, s1 * c.dw, s2))
            acc = np.einsum("hwklc,klc->hwc", taps, w)
        # The float64 sums are exact integers; the int64 → int32 cast wraps like TFLite's accumulator. When no
        # sum can leave int32 (the operands' ranges bound it), the direct cast is the same and one pass shorter.
        acc = acc.reshape(c.oh, c.ow, c.oc)
        if c.in_dtype == _INT16:   # an int16 IFM keeps its int64 accumulator (npu_sim/int16_layers.py)
            return acc.astype(np.int64)
        terms = nk * c.ic if c.op != MacOp.DEPTHWISE else nk
        if terms * _magnitude(self.tile(c.ifm_buf, c.ifm_off, i).dtype, c.zp_in) * \
                _magnitude(_NP[c.w_dtype], c.zp_w) < 1 << 31:
            return acc.astype(np.int32)
        return acc.astype(np.int64).astype(np.int32)

    def weight_matrix(self, c: Mac, i: int, nk: int) -> np.ndarray:
        """The MAC's weights as float64 minus their zero point ([oc, kh*kw*ic], depthwise [kh, kw, oc]); decoded
        once per weight tile (a tile stays resident across the spatial tiles of its channel slice)."""
        key = (c.w_buf, c.w_off)
        tile = self.tile(*key, i)
        depth = c.w_ic or c.ic
        per = nk * depth if c.op != MacOp.DEPTHWISE else nk
        sig = (c.op, c.oc, per, c.w_dtype, c.zp_w)
        hit = self.weights.get(key)
        if hit is not None and hit[0] is tile and hit[1] == sig:
            return self.depth_slice(c, hit[2], nk, depth)
        w = tile.reshape(-1).view(np.uint8)[:c.oc * per * _NP[c.w_dtype].itemsize].view(_NP[c.w_dtype])
        w = w.astype(np.float64)
        if c.zp_w:
            w -= c.zp_w
        # conv: [oc, kh*kw*ic] for the GEMM; depthwise: [kh, kw, oc], the taps' layout
        w = w.reshape(c.oc, per) if c.op != MacOp.DEPTHWISE else np.ascontiguousarray(
            w.reshape(c.oc, c.kh, c.kw).transpose(1, 2, 0))
        self.weights[key] = (tile, sig, w)
        return self.depth_slice(c, w, nk, depth)

    @staticmethod
    def depth_slice(c: Mac, w: np.ndarray, nk: int, depth: int) -> np.ndarray:
        """The weights of the command's IFM depth slice: its channels of every tap ([oc, kh*kw*ic])."""
        if c.op == MacOp.DEPTHWISE or depth == c.ic:
            return w
        return w.reshape(c.oc, nk, depth)[:, :, c.ic0:c.ic0 + c.ic].reshape(c.oc, nk * c.ic)

    def requant_table(self, c: Ppu, i: int) -> tuple:
        key = (c.table_buf, c.table_off)
        tile = self.tile(*key, i)
        hit = self.tables.get(key)
        if hit is not None and hit[0] is tile and hit[1] == c.oc:
            return hit[2]
        t = tile.reshape(-1).view(np.uint8)[:c.oc * 10].view(_TABLE_DTYPE)
        bias = t["bias"].astype(np.int32)   # added in int32, wrapping like TFLite's accumulator
        m, s = t["mult"].astype(np.int64), t["shift"].astype(np.int64)
        # Common case: right shifts only and no INT32_MIN multiplier, so MBQM is SRDHM + RDBPOT without the
        # left-shift wrap or the saturation test (identical results; see byoc.quant.fixedpoint.mbqm).
        simple = bool(np.all(s <= 0) and np.all(m > _INT32_MIN))
        e = -s
        # RDBPOT(x, e) + zp = (x + 2^(e-1) - [x < 0 and e > 0] + zp·2^e) >> e: its rounding as one nudge
        nudge = (np.int64(1) << e) >> 1 if simple else None
        decoded = (bias, m, s, simple, e, nudge, bool(np.all(e > 0)) if simple else False)
        self.tables[key] = (tile, c.oc, decoded)
        return decoded

    def ppu(self, c: Ppu, i: int) -> np.ndarray:
        op = c.op
        out_dt = _NP[c.out_dtype]
        src = self.tile(c.src0_buf, c.src0_off, i).reshape(c.ih, c.iw, c.ic)
        x = src.astype(np.int64) if op != PpuOp.REQUANT else src
        if op == PpuOp.REQUANT and c.rounding == Rounding.TFLITE_INT64:
            y = requant_int64(src, self.raw(c.table_buf, c.table_off, i), c.oc, c.param("zp_in")) + c.param("zp_out")
        elif op == PpuOp.REQUANT:
            bias, m, s, simple, e, nudge, all_shift = self.requant_table(c, i)
            zp_in = c.param("zp_in")
            acc = np.add(src, bias, dtype=np.int32).astype(np.int64)   # wrapping int32 bias add
            if zp_in:
                acc -= zp_in
            if c.rounding == Rounding.FLOAT32_HALF_EVEN:
                # the table's mult holds float32 scale bits; acc − zp is rounded to float32 first (as MLAS)
                scale = np.asarray(m, np.int64).astype(np.int32).view(np.float32)
                v = acc.astype(np.float32) * scale
                y = np.rint(np.clip(v, np.float32(-2.0 ** 40), np.float32(2.0 ** 40))).astype(np.int64)
            elif c.rounding == Rounding.TFLITE and simple and not zp_in:
                h = acc   # the common case, in place on the fresh accumulator copy
                h *= m
                h += 1 << 30
                h >>= 31                                       # SRDHM
                neg = h < 0
                if not all_shift:
                    neg &= e > 0
                h += nudge + (np.int64(c.param("zp_out")) << e)
                h -= neg
                h >>= e                                        # RDBPOT, plus the output zero point
                lo, hi = _RANGE[c.out_dtype]
                np.maximum(h, max(lo, c.param("act_min")), out=h)
                np.minimum(h, min(hi, c.param("act_max")), out=h)
                return h.astype(out_dt)
            elif c.rounding == Rounding.TFLITE:
                y = mbqm(acc, m, s)
            else:
                total = 31 - s
                rnd = np.int64(1) << (total - 1)
                prod = acc * m
                if c.rounding == Rounding.TONEAREST:
                    rnd = np.where(prod < 0, rnd - 1, rnd)
                y = (prod + rnd) >> total
            y = y + c.param("zp_out")
        elif op in (PpuOp.ADD, PpuOp.MUL, PpuOp.GATE_ADD):
            # A broadcast src1 keeps its one-deep axes: numpy repeats it over the tile, after its rescale.
            b = self.tile(c.src1_buf, c.src1_off, i).reshape(
                src1_tile_shape(c.ih, c.iw, c.ic, c.src1_bcast)).astype(np.int64)
            a_, b_ = x - c.param("zp_a"), b - c.param("zp_b")
            if c.rounding == Rounding.FLOAT32_HALF_EVEN:
                y = _onnx_binary(c, x, b, a_ * b_)
            elif op in (PpuOp.ADD, PpuOp.GATE_ADD):
                ls = c.param("left_shift")
                a_ <<= ls
                b_ <<= ls
                a_ = _scaled(a_, c.param("m_a"), -c.param("e_a"))
                b_ = _scaled(b_, c.param("m_b"), -c.param("e_b"))
                # sub 1: src0 - src1, 2: src1 - src0 (the broadcast operand first); a gate always adds
                sub = c.param("sub") if op == PpuOp.ADD else 0
                y = _scaled(a_ + b_ if not sub else (a_ - b_ if sub == 1 else b_ - a_), c.param("m_out"),
                            -c.param("e_out"))
            else:
                y = mbqm(wrap32(a_ * b_), c.param("m_out"), c.param("e_out"))
            if c.rounding != Rounding.FLOAT32_HALF_EVEN:
                y = y + c.param("zp_out")
        elif op in (PpuOp.MAX_POOL, PpuOp.AVG_POOL):
            kh, kw, sh, sw, dh, dw = (c.param(k) for k in ("kh", "kw", "sh", "sw", "dh", "dw"))
            taps = [x[ky * dh:ky * dh + (c.oh - 1) * sh + 1:sh, kx * dw:kx * dw + (c.ow - 1) * sw + 1:sw]
                    for ky in range(kh) for kx in range(kw)]
            if op == PpuOp.MAX_POOL:
                y = np.max(np.stack(taps), axis=0)
            else:
                total = np.sum(np.stack(taps), axis=0)
                if c.param("count_include_pad"):
                    count = np.full((c.oh, c.ow, 1), kh * kw, np.int64)
                else:
                    y0, x0, H, W = c.param("y0"), c.param("x0"), c.param("img_h"), c.param("img_w")
                    iy = y0 + np.arange(c.oh)[:, None] * sh + np.arange(kh)[None, :] * dh
                    ix = x0 + np.arange(c.ow)[:, None] * sw + np.arange(kw)[None, :] * dw
                    cy = ((iy >= 0) & (iy < H)).sum(axis=1)
                    cx = ((ix >= 0) & (ix < W)).sum(axis=1)
                    count = (cy[:, None] * cx[None, :])[:, :, None].astype(np.int64)
                if np.any(count == 0):
                    raise ExecutionError(f"command #{i}: an average-pool window covers no input pixel")
                q = (np.abs(total) + count // 2) // count
                y = np.where(total < 0, -q, q)
        elif op == PpuOp.MEAN:
            s = x.sum(axis=(0, 1), keepdims=True)
            y = mbqm(s - c.param("zp_in") * c.param("count"), c.param("m"), c.param("e")) + c.param("zp_out")
        elif op == PpuOp.LUT and c.param("fn16") == LUT16_INTERP:
            return _interpolated16(c, x, self.raw(c.table_buf, c.table_off, i)[:2048].view(np.uint32), i)
        elif op == PpuOp.LUT and c.param("fn16"):
            from byoc.quant.int16_activation import interpolated_sigmoid16, interpolated_tanh16
            fn = interpolated_sigmoid16 if c.param("fn16") == 1 else interpolated_tanh16
            return fn(x, c.param("in_mult"), c.param("in_shift")).astype(out_dt)
        elif op == PpuOp.LUT:
            if c.param("guard") and x.size and int(x.min()) < c.param("guard_min"):
                raise ExecutionError(f"command #{i}: lookup-table input {int(x.min())} is below "
                                     f"{c.param('guard_min')}, where the op has no value (RSQRT of a negative "
                                     f"value)", hint="LiteRT and the CPU build fail on this input too")
            table = self.raw(c.table_buf, c.table_off, i)[:256].view(out_dt)
            return table[x - c.param("qmin")].astype(out_dt)
        elif op == PpuOp.SOFTMAX:
            p = SoftmaxParams(c.param("multiplier"), c.param("left_shift"), c.param("diff_min"))
            return softmax_rows_fixed(x, p, out_dt.name)
        elif op == PpuOp.ARGMAX:
            # numpy's argmax takes the first of equal largest values, as TFLite's ArgMinMax does
            return np.argmax(x, axis=2)[:, :, None].astype(out_dt)
        elif op == PpuOp.RAW_BINARY:
            b = self.tile(c.src1_buf, c.src1_off, i).reshape(
                src1_tile_shape(c.ih, c.iw, c.ic, c.src1_bcast)).astype(np.int64)
            # int64 holds every sum and product of two int32 values; the cast wraps them as TFLite's int32 kernels
            y = _RAW_FUNCTIONS[c.param("fn")](x, b)
            return np.ascontiguousarray(np.broadcast_to(y, (c.oh, c.ow, c.oc))).astype(out_dt)
        elif op in (PpuOp.PRELU, PpuOp.SQUARED_DIFF):
            b = self.tile(c.src1_buf, c.src1_off, i).reshape(
                src1_tile_shape(c.ih, c.iw, c.ic, c.src1_bcast)).astype(np.int64)
            y = np.broadcast_to(_prelu(c, x, b) if op == PpuOp.PRELU else _squared_diff(c, x, b), (c.oh, c.ow, c.oc))
        elif op == PpuOp.TRANSPOSE:
            perm = (c.param("perm0"), c.param("perm1"), c.param("perm2"))
            return np.ascontiguousarray(x.transpose(perm)).astype(out_dt)
        elif op == PpuOp.RESIZE:
            y = resize_window(x[None].astype(_NP[c.in_dtype]), (c.param("in_h"), c.param("in_w")),
                              (c.param("out_h"), c.param("out_w")), "linear" if c.param("bilinear") else "nearest",
                              RESIZE_MODES[c.param("ctm")][0], RESIZE_MODES[c.param("ctm")][1],
                              (c.param("oy"), c.param("oy") + c.oh), (c.param("ox"), c.param("ox") + c.ow),
                              (c.param("y0"), c.param("x0")))
            return np.ascontiguousarray(y[0]).astype(out_dt)
        else:
            y = x
        lo, hi = _RANGE[c.out_dtype]
        lo = max(lo, c.param("act_min"))
        hi = min(hi, c.param("act_max"))
        y = np.asarray(y, np.int64)
        y = np.minimum(np.maximum(y, lo), hi)
        if op == PpuOp.GATE_ADD:   # the clamped int16 sum through the int16 activation, as the LUT op computes it
            from byoc.quant.int16_activation import interpolated_sigmoid16, interpolated_tanh16
            fn = interpolated_sigmoid16 if c.param("fn16") == 1 else interpolated_tanh16
            y = fn(y, c.param("in_mult"), c.param("in_shift"))
        return y.astype(out_dt)


def _interpolated16(c: Ppu, x: np.ndarray, words: np.ndarray, i: int) -> np.ndarray:
    """An interpolated int16 table: word 256 + (x >> 7) holds the base (low half) and the slope to the next
    sample (high half); base + ((slope·(x & 127) + 64) >> 7), wrapped to int16 (LiteRT's LUTLookup)."""
    if c.param("guard") and x.size and int(x.min()) < c.param("guard_min"):
        raise ExecutionError(f"command #{i}: lookup-table input {int(x.min())} is below {c.param('guard_min')}, "
                             f"where the op has no value (RSQRT of a negative value)",
                             hint="LiteRT and the CPU build fail on this input too")
    v = x.astype(np.int64)
    w = words[256 + (v >> 7)].astype(np.int64)
    base = ((w & 0xFFFF) ^ 0x8000) - 0x8000
    slope = (((w >> 16) & 0xFFFF) ^ 0x8000) - 0x8000
    y = base + ((slope * (v & 0x7F) + 64) >> 7)
    return (((y + 0x8000) & 0xFFFF) - 0x8000).astype(np.int16)


def _prelu(c: Ppu, x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """TFLite PRELU (reference_ops::BroadcastPrelu4DSlow): MBQM by the identity multiplier where x ≥ zp, else of
    the wrapped product with alpha; plus the output zero point (clamped by the caller)."""
    xv, av = x - c.param("zp_in"), alpha - c.param("zp_alpha")
    pos = mbqm(xv, c.param("m_id"), c.param("shift_id"))
    neg = mbqm(wrap32(xv * av), c.param("m_alpha"), c.param("shift_alpha"))
    return np.where(xv >= 0, pos, neg) + c.param("zp_out")


def _squared_diff(c: Ppu, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """LiteRT's int8 SQUARED_DIFFERENCE: each operand (q − zp)·2^7 rescaled, the wrapped difference squared and
    rescaled, plus the output zero point (clamped by the caller)."""
    ls = c.param("left_shift")
    sa = rdbpot(srdhm((a - c.param("zp_a")) << ls, c.param("m_a")), -c.param("shift_a"))
    sb = rdbpot(srdhm((b - c.param("zp_b")) << ls, c.param("m_b")), -c.param("shift_b"))
    d = wrap32(sa - sb)
    return rdbpot(srdhm(wrap32(d * d), c.param("m_out")), -c.param("shift_out")) + c.param("zp_out")


_RAW_FUNCTIONS = (np.add, np.subtract, lambda a, b: b - a, np.multiply, np.maximum, np.minimum)   # isa.RAW_FUNCTIONS


def _scaled(x: np.ndarray, m: int, e: int) -> np.ndarray:
    """rdbpot(srdhm(x, m), e) for one multiplier and shift, in place on ``x`` (a fresh int64 array): no
    saturation test unless m is INT32_MIN, RDBPOT as a nudge and a shift (as the requantize path)."""
    if m == _INT32_MIN or not 0 <= e <= 31:
        return rdbpot(srdhm(x, m), e)
    x *= m
    x += 1 << 30
    x >>= 31
    if e:
        neg = x < 0
        x += 1 << (e - 1)
        x -= neg
        x >>= e
    return x


_MAGNITUDE: dict[tuple, int] = {}


def _magnitude(dtype: np.dtype, zero_point: int) -> int:
    """The largest |v − zero_point| over the values of an integer dtype."""
    key = (dtype, zero_point)
    hit = _MAGNITUDE.get(key)
    if hit is None:
        info = np.iinfo(dtype)
        hit = _MAGNITUDE[key] = max(abs(int(info.min) - zero_point), abs(int(info.max) - zero_point))
    return hit


def _openblas():
    """numpy's bundled OpenBLAS (for its thread-count controls), or None."""
    import ctypes
    import glob
    import os
    libdir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libdir, "lib*openblas*.so*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                get, put = f"{prefix}_get_num_threads{suffix}", f"{prefix}_set_num_threads{suffix}"
                if hasattr(lib, get) and hasattr(lib, put):
                    return getattr(lib, get), getattr(lib, put)
    return None


_BLAS = None


@contextlib.contextmanager
def single_threaded_blas():
    """Per-tile GEMMs are small; OpenBLAS threading on them costs far more than it gains (30× on a busy
    2-core host), so the functional run pins BLAS to one thread and restores the setting afterwards."""
    global _BLAS
    if _BLAS is None:
        try:
            _BLAS = _openblas() or False
        except Exception:  # any loader problem: just run with the default threading
            _BLAS = False
    if not _BLAS:
        yield
        return
    get, put = _BLAS
    old = int(get())
    put(1)
    try:
        yield
    finally:
        put(old)


def run_functional(prog: Program, inputs: dict) -> list[np.ndarray]:
    m = Machine(prog)
    m.write_inputs(inputs)
    with single_threaded_blas():
        m.run()
    return m.read_outputs()


def _f32_param(c: Ppu, name: str) -> np.float32:
    return np.array(c.param(name), np.int64).astype(np.int32).view(np.float32)[()]


def _onnx_binary(c: Ppu, a: np.ndarray, b: np.ndarray, prod: np.ndarray) -> np.ndarray:
    """onnxruntime's QLinearAdd (MLAS AVX2: fma(a, r_a, fma(b, r_b, fixed))) and QLinearMul
    (rne(float32(prod) · ratio + zc)) on the float32 output stage; the ratios and the add's folded zero points
    arrive as float32 bits, same-shape operands only (the lowering refuses broadcasting)."""
    from byoc.quant.onnxrt import fma_f32
    if c.op == PpuOp.ADD:
        bf = np.broadcast_to(b, a.shape).astype(np.float32)
        v = fma_f32(a.astype(np.float32), _f32_param(c, "m_a"),
                    fma_f32(bf, _f32_param(c, "m_b"), _f32_param(c, "m_out")))
    else:
        v = (prod.astype(np.float32) * _f32_param(c, "m_out")).astype(np.float32) + np.float32(c.param("zp_out"))
    return np.rint(np.clip(v, np.float32(-2.0 ** 20), np.float32(2.0 ** 20))).astype(np.int64)
