"""``npu_sim.simulate(program, inputs) -> (outputs, Stats)``: exact outputs, approximate time.

Timing is event-driven over the four in-order engine queues: a command starts when its engine is free and every
token it waits for has been pushed (the k-th pop on an edge waits for the k-th push); it finishes after its
closed-form cost (``cost.py``) and then pushes its tokens. DMA engines keep up to ``dma_*_channels`` transfers in
flight; each memory area is a bandwidth resource (one port, "busy until"). When the PPU shares the MAC engine
(VTA), both queues contend for one unit. The heads are scheduled earliest-start first, ties by engine index,
so the schedule (and every cycle count) is deterministic.
"""
from __future__ import annotations

import heapq
import json
import operator
from dataclasses import dataclass, field

import numpy as np

from byoc.errors import NPUError

from .cost import dma_command_cost, mac_command_cycles, ppu_command_cycles
from .deps import mac_weight_bytes, ppu_table_bytes, tile_bytes
from .execute import run_functional
from .isa import ENGINE_NAMES, Load, Mac, Ppu, Store, disassemble_command
from .program import Program

__all__ = ["simulate", "schedule", "Stats", "LayerStats", "Schedule"]


@dataclass(frozen=True)
class LayerStats:
    name: str
    composite: str
    kind: str
    cycles: int                   # first command start → last command end
    exclusive_cycles: int         # this layer's last end − the previous layer's last end (sums to the total)
    macs: int
    bytes_by_area: dict[str, int]  # bytes actually moved per memory area (re-reads included)
    engine_busy: dict[str, int]
    area_busy: dict[str, int]
    roofline_cycles: int
    utilisation: float            # roofline / cycles
    bound: str                    # busiest resource over the layer's span
    tile: tuple[int, int, int]


@dataclass(frozen=True, eq=False)
class Schedule:
    start: np.ndarray
    end: np.ndarray
    engine: np.ndarray
    layer: np.ndarray
    area_cycles: np.ndarray       # port-busy cycles of each DMA command (0 for others)
    nbytes: np.ndarray
    area: np.ndarray              # memory area of each DMA command (−1 for others)


@dataclass(frozen=True, eq=False)
class Stats:
    config_name: str
    clock_hz: float
    total_cycles: int
    engine_busy: dict[str, int]
    per_layer: list[LayerStats]
    sram_high_water: dict[str, int]   # bytes of each local buffer ever used
    memory_high_water: dict[str, int]  # bytes allocated in each memory area
    command_count: int
    _schedule: Schedule = field(repr=False, default=None)  # type: ignore[assignment]
    _labels: tuple[str, ...] = field(repr=False, default=())

    @property
    def total_macs(self) -> int:
        return sum(s.macs for s in self.per_layer)

    @property
    def sram_high_water_total(self) -> int:
        return sum(self.sram_high_water.values())

    def to_trace_json(self) -> str:
        """Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev): one track per engine, time in µs."""
        us = 1e6 / self.clock_hz
        events: list[dict] = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": self.config_name}}]
        for e, n in enumerate(ENGINE_NAMES):
            events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": e, "args": {"name": n}})
        s = self._schedule
        for i in range(len(s.start)):
            li = int(s.layer[i])
            events.append({"name": self._labels[i], "cat": self.per_layer[li].name if li < len(self.per_layer) else "",
                           "ph": "X", "pid": 0, "tid": int(s.engine[i]), "ts": round(float(s.start[i]) * us, 4),
                           "dur": round(float(s.end[i] - s.start[i]) * us, 4),
                           "args": {"command": i, "layer": li, "start_cycle": int(s.start[i]),
                                    "end_cycle": int(s.end[i])}})
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}, separators=(",", ":"))

    def table(self) -> str:
        rows = [f"{'layer':40s} {'kind':10s} {'cycles':>10s} {'roofline':>10s} {'util':>6s} bound"]
        for s in self.per_layer:
            rows.append(f"{s.name[:40]:40s} {s.kind:10s} {s.cycles:10d} {s.roofline_cycles:10d} "
                        f"{s.utilisation:6.2f} {s.bound}")
        rows.append(f"total {self.total_cycles} cycles ({self.total_cycles / self.clock_hz * 1e3:.3f} ms at "
                    f"{self.clock_hz / 1e6:g} MHz), {self.command_count} commands")
        return "\n".join(rows)


# The fields a command's cost depends on (cost.py), per command type: equal tuples, equal costs.
_COST_FIELDS = {
    Load: operator.attrgetter("kind", "area", "dtype", "img_h", "img_w", "img_c", "y0", "x0", "h", "w", "c", "pad"),
    Store: operator.attrgetter("area", "dtype", "img_h", "img_w", "img_c", "y0", "x0", "h", "w", "c", "ENGINE"),
    Mac: operator.attrgetter("op", "oh", "ow", "oc", "ic", "kh", "kw", "ih", "iw", "ic0", "w_ic", "in_dtype",
                          "ENGINE"),
    Ppu: operator.attrgetter("op", "oh", "ow", "oc", "ih", "iw", "ic", "in_dtype", "out_dtype", "params", "ENGINE"),
}


def schedule(prog: Program) -> Schedule:
    """Start/end cycle of every command (pure timing; no data)."""
    cfg = prog.config
    cmds = prog.commands
    n = len(cmds)
    issue = cfg.overheads.cmd_issue
    channels = (cfg.overheads.dma_in_channels, 0, 0, cfg.overheads.dma_out_channels)
    shared = cfg.ppu.shares_mac_engine
    ratios = [layer.weight_ratio for layer in prog.layers]
    # a MAC layer's table load is its bias/scale stream (charged like its weights); a PPU layer's is a table
    streams = [layer.kind in ("conv", "depthwise", "dense") for layer in prog.layers]
    floors = [layer.access_floor for layer in prog.layers]
    # a layer with a Vela access-count bound (vela_access.py) holds its last MAC command until that many cycles
    # after its first one started
    first_mac = [-1] * len(prog.layers)
    last_mac = [-1] * len(prog.layers)
    mac_t0 = [0] * len(prog.layers)
    # NHWC for the host, or an activation kept linear (a transpose's OFM)
    linear = {(r.area, r.base) for r in prog.regions if r.kind in ("input", "output", "linear")}
    queues: list[list[int]] = [[], [], [], []]
    engine_of = {t: int(t.ENGINE) for t in (Load, Store, Mac, Ppu)}
    engines = [engine_of[type(c)] for c in cmds]
    engine = np.array(engines, np.int8)
    # Each command's cost depends only on its own fields: compute it once per distinct shape, before the events.
    cost: list = [None] * n
    memo: dict = {}
    for i, c in enumerate(cmds):
        e = engines[i]
        queues[e].append(i)
        if e in (0, 3):
            lin = (c.area, c.base) in linear
            key = (_COST_FIELDS[type(c)](c), ratios[c.layer], lin, e, streams[c.layer])
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = dma_command_cost(cfg, c, ratios[c.layer], lin,  # type: ignore[arg-type]
                                                   streams[c.layer])
        else:
            key = _COST_FIELDS[type(c)](c)
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = mac_command_cycles(cfg, c) if e == 1 else ppu_command_cycles(cfg, c)  # type: ignore[arg-type]
            if e == 1 and floors[c.layer]:
                if first_mac[c.layer] < 0:
                    first_mac[c.layer] = i
                last_mac[c.layer] = i
        cost[i] = hit
    start = [0] * n
    end = [0] * n
    area_cyc = [0] * n
    nbytes = [0] * n
    area_of = [-1] * n
    # each command's token sources and destinations, as engine tuples (a mask has 16 values)
    engines_of = [tuple(f for f in range(4) if m >> f & 1) for m in range(16)]
    waits = [engines_of[c.wait & 15] for c in cmds]
    signals = [engines_of[c.signal & 15] for c in cmds]
    pushed: list[list[list[int]]] = [[[] for _ in range(4)] for _ in range(4)]  # completion times per edge
    popped = [[0] * 4 for _ in range(4)]
    heads = [0, 0, 0, 0]
    lengths = [len(q) for q in queues]
    free = [0, 0, 0, 0]
    unit_free = 0                          # the shared MAC/PPU unit (VTA)
    inflight: list[list[int]] = [[], [], [], []]   # completion-time heaps of the DMA engines
    area_free = [0] * len(cfg.memory_areas)
    for _ in range(n):
        best_t = best_e = best_i = -1
        for e in range(4):
            h = heads[e]
            if h >= lengths[e]:
                continue
            i = queues[e][h]
            t = free[e]
            ready = True
            for f in waits[i]:
                lst = pushed[f][e]
                k = popped[f][e]
                if k >= len(lst):
                    ready = False
                    break
                if lst[k] > t:
                    t = lst[k]
            if not ready:
                continue
            if e == 0 or e == 3:
                q = inflight[e]
                if len(q) >= channels[e] and q[0] > t:
                    t = q[0]
            elif shared and unit_free > t:
                t = unit_free
            if best_e < 0 or t < best_t:   # earliest start; ties go to the lower engine index
                best_t, best_e, best_i = t, e, i
        if best_e < 0:
            stuck = [f"{ENGINE_NAMES[e]}: {disassemble_command(cmds[queues[e][heads[e]]])}"
                     for e in range(4) if heads[e] < len(queues[e])]
            raise NPUError("program deadlocks: every engine waits for a token that is never pushed",
                           notes=tuple("  - " + s for s in stuck))
        t, e, i = best_t, best_e, best_i
        for f in waits[i]:
            popped[f][e] += 1
        if e == 0 or e == 3:
            nb, xfer, lat = cost[i]
            a = cmds[i].area  # type: ignore[union-attr]
            t0 = t + issue
            if area_free[a] > t0:
                t0 = area_free[a]
            area_free[a] = t0 + xfer
            fin = t0 + xfer + lat
            q = inflight[e]
            while q and q[0] <= t:
                heapq.heappop(q)
            heapq.heappush(q, fin)
            free[e] = t + issue
            area_cyc[i], nbytes[i], area_of[i] = xfer, nb, a
        else:
            fin = t + cost[i]
            if e == 1 and floors[cmds[i].layer]:
                li = cmds[i].layer
                if i == first_mac[li]:
                    mac_t0[li] = t
                if i == last_mac[li] and fin < mac_t0[li] + floors[li]:
                    fin = mac_t0[li] + floors[li]
            free[e] = fin
            if shared:
                unit_free = fin
        start[i], end[i] = t, fin
        for f in signals[i]:
            pushed[e][f].append(fin)
        heads[e] += 1
    layer = np.fromiter((c.layer for c in cmds), np.int32, n)
    return Schedule(np.array(start, np.int64), np.array(end, np.int64), engine, layer,
                    np.array(area_cyc, np.int64), np.array(nbytes, np.int64), np.array(area_of, np.int16))


def _busy(starts: np.ndarray, ends: np.ndarray) -> int:
    """Length of the union of [start, end) intervals."""
    if len(starts) == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    gaps = np.maximum(s[1:] - run_end[:-1], 0).sum()
    return int(run_end[-1] - s[0] - gaps)


def _roofline(prog: Program, info) -> int:
    cfg = prog.config
    m = cfg.mac
    rate = m.dw_macs_per_cycle if info.kind == "depthwise" else m.macs_per_cycle
    terms = [info.macs / rate]
    for area, b in info.bytes_by_area:
        terms.append(b / cfg.area(area).bytes_per_cycle)
    return int(np.ceil(max(terms)))


def collect_stats(prog: Program, s: Schedule) -> Stats:
    cfg = prog.config
    area_names = [a.name for a in cfg.memory_areas]
    total = int(s.end.max()) if len(s.end) else 0
    engine_busy = {ENGINE_NAMES[e]: _busy(s.start[s.engine == e], s.end[s.engine == e]) for e in range(4)}
    per_layer = []
    prev_end = 0
    order = np.argsort(s.layer, kind="stable")
    bounds = np.searchsorted(s.layer[order], np.arange(len(prog.layers) + 1))
    for li, info in enumerate(prog.layers):
        idx = order[bounds[li]:bounds[li + 1]]
        if len(idx) == 0:
            per_layer.append(LayerStats(info.name, info.composite, info.kind, 0, 0, info.macs, {}, {}, {},
                                        _roofline(prog, info), 0.0, "none", info.tile))
            continue
        st, en, eng = s.start[idx], s.end[idx], s.engine[idx]
        span = int(en.max() - st.min())
        last = int(en.max())
        excl = max(last - prev_end, 0)
        prev_end = max(prev_end, last)
        ebusy = {ENGINE_NAMES[e]: _busy(st[eng == e], en[eng == e]) for e in range(4)}
        abusy, abytes = {}, {}
        for a, name in enumerate(area_names):
            sel = s.area[idx] == a
            if sel.any():
                abusy[name] = int(s.area_cycles[idx][sel].sum())
                abytes[name] = int(s.nbytes[idx][sel].sum())
        roof = _roofline(prog, info)
        cands = {"mac": ebusy["mac"], "ppu": ebusy["ppu"]}
        cands.update({f"{k}": v for k, v in abusy.items()})
        bound = max(cands, key=lambda k: (cands[k], k))
        per_layer.append(LayerStats(info.name, info.composite, info.kind, span, excl, info.macs, abytes, ebusy,
                                    abusy, roof, roof / span if span else 0.0, bound, info.tile))
    labels = tuple(_label(c) for c in prog.commands)
    return Stats(cfg.name, cfg.clock_hz, total, engine_busy, per_layer, _local_high_water(prog),
                 _memory_high_water(prog), len(prog.commands), s, labels)


def _label(c) -> str:
    if isinstance(c, Load):
        return ("load_ifm", "load_weights", "load_table", "load_acc", "load_ofm")[c.kind] if c.kind < 5 else "load"
    if isinstance(c, Store):
        return "store"
    if isinstance(c, Mac):
        return "depthwise" if c.op == 1 else "conv"
    return ("requant", "add", "mul", "max_pool", "avg_pool", "mean", "lut", "copy")[c.op] if c.op < 8 else "ppu"


def _local_high_water(prog: Program) -> dict[str, int]:
    top = [0] * len(prog.config.local_buffers)
    for c in prog.commands:
        if isinstance(c, (Load, Store)):
            top[c.buf] = max(top[c.buf], c.off + tile_bytes(c.h, c.w, c.c, c.dtype))
        elif isinstance(c, Mac):
            top[c.acc_buf] = max(top[c.acc_buf], c.acc_off + c.oh * c.ow * c.oc * 4)
            top[c.w_buf] = max(top[c.w_buf], c.w_off + mac_weight_bytes(c))
        elif isinstance(c, Ppu):
            top[c.dst_buf] = max(top[c.dst_buf], c.dst_off + tile_bytes(c.oh, c.ow, c.oc, c.out_dtype))
            tb = ppu_table_bytes(c)
            if tb:
                top[c.table_buf] = max(top[c.table_buf], c.table_off + tb)
    return {b.name: t for b, t in zip(prog.config.local_buffers, top)}


def _memory_high_water(prog: Program) -> dict[str, int]:
    top = [0] * len(prog.config.memory_areas)
    for r in prog.regions:
        top[r.area] = max(top[r.area], r.base + r.size)
    return {a.name: t for a, t in zip(prog.config.memory_areas, top)}


def simulate(prog: Program, inputs: dict | None = None) -> tuple[list[np.ndarray], Stats]:
    """Run ``prog`` on ``inputs`` (by tensor name): bit-exact outputs and the timing statistics."""
    if not isinstance(prog, Program):
        raise NPUError(f"simulate takes an npu_sim Program, got {type(prog).__name__}",
                       hint="compile with npu_sim.compile(func, config) or load with Program.from_bytes")
    outputs = run_functional(prog, dict(inputs or {}))
    return outputs, collect_stats(prog, schedule(prog))
