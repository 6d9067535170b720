"""Hazards and dependency tokens.

The sequential meaning of a program is its command stream order. ``HazardTracker`` finds, for each command,
the earlier commands it must follow (read-after-write, write-after-read, write-after-write) on local SRAM byte
ranges and on main-memory regions (tensor granularity). The compiler turns those dependencies into tokens
(``assign_tokens``); the validator re-derives them from a decoded program and checks that the tokens order every
one of them (``check_tokens``), using vector clocks over the token graph. Both also detect deadlock.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable

from byoc.errors import NPUError

from .isa import BINARY_OPS, DTYPE_BYTES, lut_table_bytes, ENGINE_NAMES, Command, Load, Mac, Ppu, PpuOp, Store, disassemble_command, \
    src1_tile_shape

__all__ = ["Access", "command_accesses", "HazardTracker", "assign_tokens", "check_tokens", "RegionIndex"]

# (is_local, buffer index or region id, lo, hi); main-memory accesses use lo = hi = 0.
Access = tuple[bool, int, int, int]


class RegionIndex:
    """Maps (area, address) to the memory region (tensor) containing it."""

    def __init__(self, regions):
        self.by_area: dict[int, tuple[list[int], list]] = {}
        for r in sorted(regions, key=lambda r: (r.area, r.base)):
            starts, regs = self.by_area.setdefault(r.area, ([], []))
            starts.append(r.base)
            regs.append(r)
        self.found: dict[tuple[int, int, int], object] = {}   # a program names few distinct spans

    def find(self, area: int, lo: int, hi: int):
        key = (area, lo, hi)
        try:
            return self.found[key]
        except KeyError:
            r = self.found[key] = self._find(area, lo, hi)
            return r

    def _find(self, area: int, lo: int, hi: int):
        starts, regs = self.by_area.get(area, ([], []))
        i = bisect.bisect_right(starts, lo) - 1
        if i >= 0:
            r = regs[i]
            if lo >= r.base and hi <= r.base + r.size:
                return r
        return None


def tile_bytes(h: int, w: int, c: int, dtype: int) -> int:
    return h * w * c * DTYPE_BYTES[dtype]


def mac_weight_bytes(cmd: Mac) -> int:
    # MacOp.DEPTHWISE reads kh*kw per channel; an IFM depth slice reads its weight tile's whole depth
    per = cmd.kh * cmd.kw * ((cmd.w_ic or cmd.ic) if cmd.op != 1 else 1)
    return cmd.oc * per * DTYPE_BYTES[cmd.w_dtype]


def ppu_src1_bytes(cmd: Ppu) -> int:
    """Bytes of an ADD/MUL command's src1 tile (one element deep along each broadcast axis)."""
    return tile_bytes(*src1_tile_shape(cmd.ih, cmd.iw, cmd.ic, cmd.src1_bcast), cmd.in_dtype)


def ppu_table_bytes(cmd: Ppu) -> int:
    if cmd.op == PpuOp.REQUANT:
        return cmd.oc * 10
    if cmd.op == PpuOp.LUT:
        return lut_table_bytes(cmd.param("fn16"))
    return 0


def _load_accesses(cmd: Load, regions: RegionIndex) -> tuple[list[Access], list[Access]]:
    r = regions.find(cmd.area, cmd.base, cmd.base + max(1, cmd.img_h * cmd.img_w * cmd.img_c * DTYPE_BYTES[cmd.dtype]))
    reads = [(False, r.id, 0, 0)] if r is not None else []
    return reads, [(True, cmd.buf, cmd.off, cmd.off + cmd.h * cmd.w * cmd.c * DTYPE_BYTES[cmd.dtype])]


def _store_accesses(cmd: Store, regions: RegionIndex) -> tuple[list[Access], list[Access]]:
    r = regions.find(cmd.area, cmd.base, cmd.base + cmd.img_h * cmd.img_w * cmd.img_c * DTYPE_BYTES[cmd.dtype])
    writes = [(False, r.id, 0, 0)] if r is not None else []
    return [(True, cmd.buf, cmd.off, cmd.off + cmd.h * cmd.w * cmd.c * DTYPE_BYTES[cmd.dtype])], writes


def _mac_accesses(cmd: Mac, regions: RegionIndex) -> tuple[list[Access], list[Access]]:
    reads = [(True, cmd.ifm_buf, cmd.ifm_off, cmd.ifm_off + tile_bytes(cmd.ih, cmd.iw, cmd.ic, cmd.in_dtype)),
             (True, cmd.w_buf, cmd.w_off, cmd.w_off + mac_weight_bytes(cmd))]
    if cmd.ic0:   # a later IFM depth slice adds to the accumulator tile
        reads.append((True, cmd.acc_buf, cmd.acc_off, cmd.acc_off + cmd.oh * cmd.ow * cmd.oc * 4))
    return reads, [(True, cmd.acc_buf, cmd.acc_off, cmd.acc_off + cmd.oh * cmd.ow * cmd.oc * 4)]


def _ppu_accesses(cmd: Ppu, regions: RegionIndex) -> tuple[list[Access], list[Access]]:
    reads = [(True, cmd.src0_buf, cmd.src0_off, cmd.src0_off + tile_bytes(cmd.ih, cmd.iw, cmd.ic, cmd.in_dtype))]
    if cmd.op in BINARY_OPS:
        reads.append((True, cmd.src1_buf, cmd.src1_off, cmd.src1_off + ppu_src1_bytes(cmd)))
    tb = ppu_table_bytes(cmd)
    if tb:
        reads.append((True, cmd.table_buf, cmd.table_off, cmd.table_off + tb))
    return reads, [(True, cmd.dst_buf, cmd.dst_off, cmd.dst_off + tile_bytes(cmd.oh, cmd.ow, cmd.oc, cmd.out_dtype))]


_ACCESSES = {Load: _load_accesses, Store: _store_accesses, Mac: _mac_accesses, Ppu: _ppu_accesses}


def command_accesses(cmd: Command, regions: RegionIndex) -> tuple[list[Access], list[Access]]:
    """(reads, writes) of a command. Main-memory windows are attributed to the region holding the tensor."""
    return _ACCESSES[type(cmd)](cmd, regions)


class _Record:
    __slots__ = ("lo", "hi", "writer", "readers")

    def __init__(self, lo, hi, writer):
        self.lo, self.hi, self.writer = lo, hi, writer
        self.readers: dict[int, int] = {}


class HazardTracker:
    """Tracks the last writer and the readers since of every local byte range and memory region.

    Each local buffer's records are disjoint byte ranges kept sorted by start (with their starts in a parallel
    list), so an access finds the records it overlaps by bisection instead of scanning the buffer."""

    def __init__(self):
        self.local: dict[int, tuple[list[int], list[_Record]]] = {}
        self.mem: dict[int, _Record] = {}

    def _split(self, key: int, lo: int, hi: int) -> tuple[list[int], list[_Record], int, int]:
        """Cut the records overlapping [lo, hi) at lo and hi; (starts, records, a, b) with records[a:b] exactly
        the records inside [lo, hi)."""
        los, recs = self.local.setdefault(key, ([], []))
        i = bisect.bisect_right(los, lo) - 1
        if i < 0 or recs[i].hi <= lo:
            i += 1
        j = i
        n = len(recs)
        while j < n and recs[j].lo < hi:
            j += 1
        if i == j:
            return los, recs, i, i
        if recs[i].lo < lo or recs[j - 1].hi > hi:
            new = []
            for rec in recs[i:j]:
                if rec.lo < lo or rec.hi > hi:
                    for a, b in ((rec.lo, max(rec.lo, lo)), (max(rec.lo, lo), min(rec.hi, hi)),
                                 (min(rec.hi, hi), rec.hi)):
                        if a < b:
                            part = _Record(a, b, rec.writer)
                            part.readers = dict(rec.readers)
                            new.append(part)
                else:
                    new.append(rec)
            recs[i:j] = new
            los[i:j] = [r.lo for r in new]
            j = i + len(new)
            if recs[i].lo < lo:
                i += 1
            if recs[j - 1].hi > hi:
                j -= 1
        return los, recs, i, j

    def _same_slot(self, key: int, lo: int, hi: int) -> _Record | None:
        """The record of exactly [lo, hi) in buffer ``key``, if there is one (a slot used again: the common
        case, which needs no split)."""
        hit = self.local.get(key)
        if hit is None or lo >= hi:
            return None
        los, recs = hit
        i = bisect.bisect_right(los, lo) - 1
        if i >= 0 and los[i] == lo and recs[i].hi == hi:
            return recs[i]
        return None

    def access(self, idx: int, engine: int, reads: list[Access], writes: list[Access]) -> list[int]:
        deps: list[int] = []
        for is_local, key, lo, hi in reads:
            if is_local:
                rec = self._same_slot(key, lo, hi)
                if rec is not None:
                    if rec.writer is not None:
                        deps.append(rec.writer)
                    rec.readers[engine] = idx
                    continue
                _, recs, a, b = self._split(key, lo, hi)
                for rec in recs[a:b]:
                    if rec.writer is not None:
                        deps.append(rec.writer)
                    rec.readers[engine] = idx
            else:
                rec = self.mem.get(key)
                if rec is None:
                    rec = self.mem[key] = _Record(0, 0, None)
                if rec.writer is not None:
                    deps.append(rec.writer)
                rec.readers[engine] = idx
        for is_local, key, lo, hi in writes:
            if is_local:
                rec = self._same_slot(key, lo, hi)
                if rec is not None:   # overwritten in place: its readers and writer go first
                    if rec.writer is not None:
                        deps.append(rec.writer)
                    deps.extend(rec.readers.values())
                    rec.writer = idx
                    rec.readers = {}
                    continue
                los, recs, a, b = self._split(key, lo, hi)
                for rec in recs[a:b]:
                    if rec.writer is not None:
                        deps.append(rec.writer)
                    deps.extend(rec.readers.values())
                recs[a:b] = [_Record(lo, hi, idx)]
                los[a:b] = [lo]
            else:
                rec = self.mem.get(key)
                if rec is not None:
                    if rec.writer is not None:
                        deps.append(rec.writer)
                    deps.extend(rec.readers.values())
                self.mem[key] = _Record(0, 0, idx)
        return deps


def assign_tokens(engines: list[int], deps: list[list[int]]) -> tuple[list[int], list[int]]:
    """Wait/signal masks that order every cross-engine dependency, with as few tokens as possible.

    For each consumer only the latest producer per engine matters (engines are in order), and a producer
    already ordered by an earlier consumer on the same engine needs no new token. Pushes and pops on each edge
    are then matched in order.
    """
    n = len(engines)
    wait = [0] * n
    signal = [0] * n
    last = [[-1] * 4 for _ in range(4)]  # last[src][dst] = producer index of the latest token on that edge
    for i in range(n):
        e = engines[i]
        latest = [-1, -1, -1, -1]
        for d in deps[i]:
            f = engines[d]
            if f != e and d > latest[f]:
                latest[f] = d
        for f in range(4):
            p = latest[f]
            if p > last[f][e]:
                wait[i] |= 1 << f
                signal[p] |= 1 << e
                last[f][e] = p
    return wait, signal


def check_tokens(cmds: list[Command], engines: list[int], deps: Iterable[list[int]] | None) -> None:
    """Tokens balance, the program cannot deadlock, and (with ``deps``) every dependency is token-ordered.

    ``deps`` holds each command's dependencies in stream order; it may be a generator (read once, after the
    token checks), so a validator need not hold every command's list at once."""
    n = len(cmds)
    pushes = [[0] * 4 for _ in range(4)]
    pops = [[0] * 4 for _ in range(4)]
    for c, e in zip(cmds, engines):
        for f in range(4):
            if c.signal >> f & 1:
                if f == e:
                    raise NPUError(f"command {disassemble_command(c)} signals its own engine")
                pushes[e][f] += 1
            if c.wait >> f & 1:
                if f == e:
                    raise NPUError(f"command {disassemble_command(c)} waits on its own engine")
                pops[f][e] += 1
    bad = [f"{ENGINE_NAMES[a]}→{ENGINE_NAMES[b]}: {pushes[a][b]} pushed, {pops[a][b]} popped"
           for a in range(4) for b in range(4) if pushes[a][b] != pops[a][b]]
    if bad:
        raise NPUError("dependency tokens do not balance: " + "; ".join(bad),
                       hint="every token pushed must be popped exactly once")
    queues = [[i for i in range(n) if engines[i] == e] for e in range(4)]
    pos = [0] * n
    for e in range(4):
        for k, i in enumerate(queues[e]):
            pos[i] = k
    edge_push: list[list[list[int]]] = [[[] for _ in range(4)] for _ in range(4)]  # producer indices per edge
    for i in range(n):
        for f in range(4):
            if cmds[i].signal >> f & 1:
                edge_push[engines[i]][f].append(i)
    popped = [[0] * 4 for _ in range(4)]
    done = [False] * n
    vc: list[tuple[int, int, int, int] | None] = [None] * n
    heads = [0, 0, 0, 0]
    remaining = n
    while remaining:
        progressed = False
        for e in range(4):
            q = queues[e]
            while heads[e] < len(q):
                i = q[heads[e]]
                c = cmds[i]
                srcs = []
                ok = True
                for f in range(4):
                    if c.wait >> f & 1:
                        k = popped[f][e]
                        p = edge_push[f][e][k]
                        if not done[p]:
                            ok = False
                            break
                        srcs.append(p)
                if not ok:
                    break
                clock = list(vc[q[heads[e] - 1]]) if heads[e] else [-1, -1, -1, -1]  # type: ignore[arg-type]
                for f in range(4):
                    if c.wait >> f & 1:
                        popped[f][e] += 1
                for p in srcs:
                    pv = vc[p]
                    for k in range(4):
                        if pv[k] > clock[k]:  # type: ignore[index]
                            clock[k] = pv[k]  # type: ignore[index]
                clock[e] = pos[i]
                vc[i] = tuple(clock)  # type: ignore[assignment]
                done[i] = True
                heads[e] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            stuck = []
            for e in range(4):
                if heads[e] < len(queues[e]):
                    stuck.append(f"{ENGINE_NAMES[e]} at #{queues[e][heads[e]]}: "
                                 f"{disassemble_command(cmds[queues[e][heads[e]]])}")
            raise NPUError("program deadlocks: every engine waits for a token that is never pushed",
                           notes=tuple("  - " + s for s in stuck))
    if deps is None:
        return
    for i, deps_i in enumerate(deps):
        clock = vc[i]
        for d in deps_i:
            f = engines[d]
            if f != engines[i] and clock[f] < pos[d]:  # type: ignore[index]
                raise NPUError(f"hazard: command #{i} ({disassemble_command(cmds[i])}) may run before command #{d} "
                               f"({disassemble_command(cmds[d])}) that it depends on",
                               hint="a dependency token is missing between these engines")
