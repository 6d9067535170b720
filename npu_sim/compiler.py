"""``npu_sim.compile(func, config) -> Program``: placement, weight packing, tiling and command generation.

Pipeline: ``lower_function`` (IR → layers) → memory plan (feature maps in the config's feature-map area, packed
weights and per-channel tables in the weight area) → per layer a tile plan (``tiling.plan_layer``) and its
commands (double-buffered slots) → dependencies from the hazard tracker → tokens → ``Program`` (validated).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from byoc.errors import NPUError

from .config import NPUConfig, preset
from .cost import binary_timing, constant_operand_timing, mac_op, window_traffic
from .execute import RESIZE_MODES
from .deps import HazardTracker, RegionIndex, assign_tokens, command_accesses
from .isa import (BCAST_C, BCAST_H, BCAST_W, LOAD_CONTINUE, LOAD_UPSCALE_H, LOAD_UPSCALE_W, LUT16_INTERP,
                  N_PPU_PARAMS, PPU_PARAM_NAMES, Load, Mac, Ppu, PpuOp, Rounding, Store, TileKind, dtype_code,
                  lut_table_bytes, src1_tile_shape)
from .lower import ConvLayer, Graph, PpuLayer, lower_function
from .program import LayerInfo, Program, Region, TensorBinding
from .vela_access import access_floor
from . import tuning
from .tiling import ALIGN, Geometry, TilePlan, plan_layer
from .weight_encoding import encoded_weight_bytes

__all__ = ["compile"]

_PPU_OPS = {"add": PpuOp.ADD, "mul": PpuOp.MUL, "max_pool": PpuOp.MAX_POOL, "avg_pool": PpuOp.AVG_POOL,
            "mean": PpuOp.MEAN, "lut": PpuOp.LUT, "requant": PpuOp.REQUANT, "copy": PpuOp.COPY,
            "softmax": PpuOp.SOFTMAX, "transpose": PpuOp.TRANSPOSE, "resize": PpuOp.RESIZE,
            "argmax": PpuOp.ARGMAX, "raw_binary": PpuOp.RAW_BINARY, "prelu": PpuOp.PRELU,
            "squared_diff": PpuOp.SQUARED_DIFF}
_TABLE_DTYPE = np.dtype([("bias", "<i4"), ("mult", "<i4"), ("shift", "i1"), ("spare", "u1")])


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _pack_table(bias: np.ndarray, mult: np.ndarray, shift: np.ndarray) -> bytes:
    t = np.zeros(len(bias), _TABLE_DTYPE)
    t["bias"] = bias.astype(np.int64).astype(np.int32)
    t["spare"] = (bias.astype(np.int64) >> 32) & 0xFF   # bias bits 32..39 (read by int16x8 requantization only)
    t["mult"] = mult
    t["shift"] = shift
    return t.tobytes()


class _MemoryPlan:
    def __init__(self, cfg: NPUConfig):
        self.cfg = cfg
        self.regions: list[Region] = []
        self.constants: list[tuple[int, bytes]] = []
        self.top = [0] * len(cfg.memory_areas)

    def add(self, name: str, area: int, size: int, kind: str, data: bytes | None = None) -> Region:
        base = self.top[area]
        r = Region(len(self.regions), name, area, base, size, kind)
        self.top[area] = base + _cdiv(max(size, 1), ALIGN) * ALIGN
        limit = self.cfg.memory_areas[area].size_bytes
        if limit and self.top[area] > limit:
            raise NPUError(f"memory area {self.cfg.memory_areas[area].name!r} ({limit} B) is too small: placing "
                           f"{name!r} needs {self.top[area]} B", hint="use a larger area or a smaller model")
        self.regions.append(r)
        if data is not None:
            self.constants.append((r.id, data))
        return r


class _Emitter:
    """Collects commands, derives their dependencies as they are emitted, and assigns tokens at the end."""

    def __init__(self, regions: list[Region]):
        self.cmds: list = []
        self.deps: list[list[int]] = []
        self.engines: list[int] = []
        self.tracker = HazardTracker()
        self.index = RegionIndex(regions)
        self.last_compute = -1   # the last MAC or PPU command emitted

    def emit(self, cmd, after: int = -1) -> None:
        """Append ``cmd``; ``after``: a command it must also follow (an ordering no data hazard implies)."""
        reads, writes = command_accesses(cmd, self.index)
        e = _ENGINE[type(cmd)]
        deps = self.tracker.access(len(self.cmds), e, reads, writes)
        if after >= 0:
            deps.append(after)
        if e in (1, 2):
            self.last_compute = len(self.cmds)
        self.deps.append(deps)
        self.cmds.append(cmd)
        self.engines.append(e)

    def finish(self) -> list:
        wait, signal = assign_tokens(self.engines, self.deps)
        return [_with_tokens(c, w, s) if (w or s) else c for c, w, s in zip(self.cmds, wait, signal)]


_ENGINE = {t: int(t.ENGINE) for t in (Load, Store, Mac, Ppu)}


def _with_tokens(c, wait: int, signal: int):
    # The emitter built this command and nothing else holds it yet: setting its tokens in place (the fields are
    # frozen for every later user) spares rebuilding tens of thousands of commands.
    object.__setattr__(c, "wait", wait)
    object.__setattr__(c, "signal", signal)
    return c


class _Slots:
    """Alternating slots per tile kind, laid out per local buffer.

    Every kind gets two slots (double buffering); weights and tables get a third when it fits, so the in-order
    DMA-in queue never stalls on a weight slot still read by the MAC array or PPU. A buffer holding weights
    starts this layer's layout just past the previous layer's last weight slot when there is room, so the first
    weights of a layer stream in while the previous layer still computes.
    """

    KINDS = ("ifm", "weight", "table", "acc", "ofm")

    def __init__(self, cfg: NPUConfig, plan: TilePlan, busy: dict[int, int]):
        holder = {k: next(i for i, buf in enumerate(cfg.local_buffers) if k in buf.holds) for k in self.KINDS}
        sizes = [b.size_bytes for b in cfg.local_buffers]
        count = {k: 2 for k in self.KINDS}

        def totals():
            t = [0] * len(sizes)
            for k in self.KINDS:
                t[holder[k]] += count[k] * plan.slot(k)
            return t

        for k in ("weight", "table"):
            count[k] = 3
            if any(t > s for t, s in zip(totals(), sizes)):
                count[k] = 2
        total = totals()
        offsets = [end if end + total[b] <= sizes[b] else 0 for b, end in
                   ((b, busy.get(b, 0)) for b in range(len(sizes)))]
        self.where: dict[str, tuple[int, int, int, int]] = {}  # kind → (buffer, offset of slot 0, size, count)
        self.weight_end: dict[int, int] = {}
        for k in self.KINDS:
            size = plan.slot(k)
            if not size:
                continue
            b = holder[k]
            self.where[k] = (b, offsets[b], size, count[k])
            offsets[b] += count[k] * size
            if k in ("weight", "table"):
                self.weight_end[b] = offsets[b]
        self.next = {k: 0 for k in self.where}

    def take(self, kind: str) -> tuple[int, int]:
        b, off, size, n = self.where[kind]
        k = self.next[kind]
        self.next[kind] = (k + 1) % n
        return b, off + k * size


def _ppu_op(layer: PpuLayer) -> PpuOp:
    """The PPU op of a layer; an add carrying an int16 activation (``fn16``, lower.fuse_gate_activations) is the
    fused GATE_ADD."""
    if layer.op == "add" and layer.params.get("fn16"):
        return PpuOp.GATE_ADD
    return _PPU_OPS[layer.op]


def _has_lut_table(layer) -> bool:
    """A LUT layer reading a table (the int16 sigmoid / tanh functions, ``fn16`` 1 and 2, read none)."""
    return getattr(layer, "op", None) == "lut" and layer.params.get("fn16", 0) in (0, LUT16_INTERP)


def _lut_image(layer) -> bytes:
    """A LUT layer's table as the NPU reads it: 256 bytes, or for an interpolated int16 table (513 int16 samples)
    512 words of the sample (low half) and the int16 difference to the next (high half)."""
    tab = np.asarray(layer.table)
    if layer.params.get("fn16", 0) != LUT16_INTERP:
        return tab.astype(np.int8 if tab.dtype == np.int8 else np.uint8).tobytes()
    t = tab.astype(np.int64)
    slope = ((t[1:] - t[:-1] + (1 << 15)) & 0xFFFF) - (1 << 15)
    return ((t[:-1] & 0xFFFF) | ((slope & 0xFFFF) << 16)).astype(np.uint32).tobytes()


def _ppu_params(op: PpuOp, values: dict) -> tuple[int, ...]:
    names = PPU_PARAM_NAMES[op]
    p = [int(values.get(n, 0)) for n in names]
    return tuple(p + [0] * (N_PPU_PARAMS - len(p)))


def compile(func, config: NPUConfig | str | None = None, name: str | None = None,  # noqa: A001
            composites: dict[str, str] | None = None) -> Program:
    """Compile a partitioned ``Compiler="npu"`` function for ``config`` (a preset name or an NPUConfig).
    ``composites`` lowers another target's partition: ``{its composite name: layer kind}`` (``layer_kinds``)."""
    cfg = preset(config) if isinstance(config, str) else (config or preset("ethos-u55-256-like"))
    cfg.validate()
    graph = lower_function(func, name or "npu_func", composites)
    return _Codegen(cfg, graph).run()


class _Codegen:
    def __init__(self, cfg: NPUConfig, graph: Graph):
        self.cfg = cfg
        self.graph = graph
        names = [a.name for a in cfg.memory_areas]
        self.fm_area = names.index(cfg.placement.feature_maps)
        self.io_area = names.index(cfg.placement.io_area)
        self.w_area = names.index(cfg.placement.weights)
        self.mem = _MemoryPlan(cfg)
        self.tensor_region: dict[int, Region] = {}
        self.weight_busy: dict[int, int] = {}   # buffer → end of the previous layer's weight/table slots
        self.plans: list[TilePlan] = []
        self.consts: list[dict] = []
        self.prefetched: dict[int, tuple] = {}   # layer → (its slots, its first (weight, table) slots)
        self.prefetch_queue: list[Load] = []     # pieces of the next layer's first weights still to queue
        self.ratios: dict[tuple[int, int], float] = {}   # (layer, slice depth) → encoded / raw weight bytes
        self.search_memo: dict = {}   # the tile search's work per workload, shared by this compile's layers

    def slots(self, plan: TilePlan, li: int | None = None) -> _Slots:
        if li is not None and li in self.prefetched:
            return self.prefetched[li][0]
        s = _Slots(self.cfg, plan, self.weight_busy)
        self.weight_busy = {b: end for b, end in s.weight_end.items()}
        return s

    def prefetch_next(self, em: "_Emitter", li: int, cur: _Slots, parts: int = 1) -> None:
        """Queue the next layer's first weights now, so their transfer overlaps this layer's compute (as Vela
        buffers layer N+1's weights during layer N). Only when the next layer is a convolution whose weight and
        table slots sit in buffers holding nothing else and do not overlap this layer's slots. A fully connected
        layer streams its weights while it runs, never ahead (Vela never buffers FULLY_CONNECTED weights).
        ``parts``: how many of this layer's channel slices are left to hide the transfer under. Vela counts the
        first weight DMA hidden under the whole previous operation (regor's slackBufferingCycles), however
        that operation uses the weight port; here the load is cut into that many pieces by output channel, one
        queued per slice (``prefetch_step``), so it fills the port's idle time between this layer's own
        weight loads instead of holding them back."""
        nxt = li + 1
        if nxt >= len(self.graph.layers) or not isinstance(self.graph.layers[nxt], ConvLayer) \
                or self.graph.layers[nxt].kind == "dense":
            return
        plan = self.plans[nxt]
        busy = dict(self.weight_busy)
        s = _Slots(self.cfg, plan, busy)
        bufs = self.cfg.local_buffers
        for k in ("weight", "table"):
            if k not in s.where:
                continue
            b, off, size, n = s.where[k]
            if any(h not in ("weight", "table") for h in bufs[b].holds):
                return
            for kk in ("weight", "table"):
                if kk in cur.where and cur.where[kk][0] == b:
                    _, o2, z2, n2 = cur.where[kk]
                    if off < o2 + z2 * n2 and o2 < off + size * n:
                        return
        self.weight_busy = {b: end for b, end in s.weight_end.items()}
        L = self.graph.layers[nxt]
        tc = min(plan.bc, self.graph.tensors[L.ofm].hwc[2])
        w_per_oc = int(np.prod(L.weights.shape[1:]))
        ws, ts = s.take("weight"), s.take("table")
        w_const = self.consts[nxt]["weights"]
        per = _cdiv(tc, max(1, min(parts, tc)))
        self.prefetch_queue = [self.load_const(nxt, TileKind.WEIGHT, w_const, c * w_per_oc,
                                               min(per, tc - c) * w_per_oc, (ws[0], ws[1] + c * w_per_oc),
                                               LOAD_CONTINUE if c else 0)
                               for c in range(0, tc, per)]
        self.prefetch_queue.insert(1, self.load_const(nxt, TileKind.TABLE, self.consts[nxt]["table"], 0, tc * 10,
                                                      ts))
        self.prefetch_step(em)
        self.prefetched[nxt] = (s, (ws, ts))

    def prefetch_slices(self, li: int, L: ConvLayer, plan: TilePlan, n: int) -> int:
        """Over how many of layer ``li``'s last channel slices (of ``n``) the next layer's first weights stream
        in: as many as the weight port's idle time under them (a slice's estimated cycles less its own weight
        and scale transfer) needs to hide the transfer; one (the last slice) when even all ``n`` cannot."""
        nxt = li + 1
        if n <= 1 or nxt >= len(self.graph.layers) or not isinstance(self.graph.layers[nxt], ConvLayer):
            return 1
        N = self.graph.layers[nxt]
        area = self.cfg.memory_areas[self.w_area]
        lat = 2 * (area.read_latency + self.cfg.overheads.cmd_issue)

        def transfer(layer, tc):
            nbytes = tc * (int(np.prod(layer.weights.shape[1:])) + 10)
            return nbytes * self.weight_ratio(layer, len(layer.bias)) / area.bytes_per_cycle + lat   # full depth

        tc = min(plan.bc, self.graph.tensors[L.ofm].hwc[2])
        idle = plan.estimate / n - transfer(L, tc)
        nplan = self.plans[nxt]
        need = transfer(N, min(nplan.bc, self.graph.tensors[N.ofm].hwc[2]))
        if idle <= 0 or need > idle * n:
            return 1
        return min(n, max(1, math.ceil(need / idle)))

    def prefetch_step(self, em: "_Emitter", flush: bool = False) -> None:
        """Queue the next piece of the next layer's first weights (with the first piece, its scales too); every
        piece left with ``flush`` (this layer's last command is emitted)."""
        q = self.prefetch_queue
        while q:
            em.emit(q.pop(0))
            if q and q[0].kind == TileKind.TABLE:
                em.emit(q.pop(0))
            if not flush:
                break

    def region_of(self, tid: int) -> Region:
        t = self.graph.tensors[tid]
        return self.tensor_region[t.alias_of if t.alias_of is not None else tid]

    def place_tensors(self) -> None:
        g = self.graph
        outputs = set(g.outputs)
        inputs = set(g.inputs)
        # A transpose writes its OFM in linear NHWC (its strided writes need it; Vela's force_linear_format).
        linear = {g.tensors[x.ofm].alias_of if g.tensors[x.ofm].alias_of is not None else x.ofm
                  for x in g.layers if isinstance(x, PpuLayer) and x.op == "transpose"}
        # A map read through a window of other width or depth (a strided slice / split piece) is kept NHWC, as
        # regor keeps a tensor whose readers' width×channels differ from its writers' (its brick format needs
        # them equal; scheduler UpdateSchedulerTensor)
        linear.update(t.alias_of for t in g.tensors if t.c_offset is not None)   # read through channel windows
        for x in g.layers:
            if isinstance(x, PpuLayer) and x.op == "copy" and x.in_origin is not None and x.block is not None \
                    and x.out_origin is None:
                src = g.tensors[x.inputs[0]]
                if tuple(x.block[1:]) != tuple(src.hwc[1:]) and min(x.in_origin) >= 0:
                    linear.add(src.alias_of if src.alias_of is not None else src.id)
        for t in g.tensors:
            if t.alias_of is not None:
                continue
            size = int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize
            if t.data is not None:
                r = self.mem.add(t.name, self.w_area, size, "constant", np.ascontiguousarray(t.data).tobytes())
            else:
                kind = "input" if t.id in inputs else ("output" if t.id in outputs else
                                                       "linear" if t.id in linear else "activation")
                r = self.mem.add(t.name, self.io_area if kind in ("input", "output") else self.fm_area, size, kind)
            self.tensor_region[t.id] = r
        for tid in g.outputs:
            if self.graph.tensors[tid].alias_of is not None and self.region_of(tid).kind == "input":
                raise NPUError(f"output {self.graph.tensors[tid].name!r} is a view of an input; nothing to compute")

    def run(self) -> Program:
        self.place_tensors()
        plans = self.plans = [self.plan(layer) for layer in self.graph.layers]
        # Constants of every layer are placed before any command is emitted (the tracker needs all regions).
        consts = self.consts = [self.place_layer_constants(li, layer) for li, layer in enumerate(self.graph.layers)]
        em = _Emitter(self.mem.regions)
        infos = []
        for li, (layer, plan, const) in enumerate(zip(self.graph.layers, plans, consts)):
            if isinstance(layer, ConvLayer):
                self.emit_conv(em, li, layer, plan, const)
            else:
                self.emit_ppu(em, li, layer, plan, const)
            infos.append(self.layer_info(layer, plan, const))
        cmds = em.finish()
        g = self.graph
        inputs = tuple(TensorBinding(g.tensors[t].name, self.region_of(t).id, g.tensors[t].shape,
                                     g.tensors[t].dtype) for t in g.inputs)
        outputs = tuple(TensorBinding(g.tensors[t].name, self.region_of(t).id, g.tensors[t].shape,
                                      g.tensors[t].dtype) for t in g.outputs)
        prog = Program(self.cfg, tuple(self.mem.regions), tuple(self.mem.constants), inputs, outputs, tuple(infos),
                       tuple(cmds), g.name)
        # Its commands are correct by construction (each tile fits the slot its plan sized, each window lies in
        # its tensor); Program.validate() and from_bytes check them, and the tests validate compiled programs.
        return prog.validate(check_hazards=False, check_deadlock=False, check_commands=False)

    # ------------------------------------------------------------------------------------------ planning
    def geometry(self, layer) -> Geometry:
        T = self.graph.tensors
        if isinstance(layer, ConvLayer):
            ih, iw, ic = T[layer.ifm].hwc
            in_hwc = (ih * layer.upscale[0], iw * layer.upscale[1], ic)   # a TRANSPOSE_CONV reads its IFM upscaled
            return Geometry("depthwise" if layer.kind == "depthwise" else "conv", PpuOp.REQUANT, T[layer.ofm].hwc,
                            in_hwc, layer.kernel, layer.stride, layer.dilation, layer.dm, 1,
                            np.dtype(T[layer.ifm].dtype).itemsize, np.dtype(layer.out_dtype).itemsize,
                            True, True, channel_step=layer.dm)
        p = layer.params
        op = _ppu_op(layer)
        src = T[layer.inputs[0]]
        kernel = (p["kh"], p["kw"]) if layer.op in ("max_pool", "avg_pool") else (1, 1)
        stride = (p["sh"], p["sw"]) if layer.op in ("max_pool", "avg_pool") else (1, 1)
        dil = (p["dh"], p["dw"]) if layer.op in ("max_pool", "avg_pool") else (1, 1)
        # A concatenate piece computes an input-shaped block of its OFM.
        out_hwc = layer.block or (T[layer.ofm].hwc if layer.out_origin is None else src.hwc)
        in2 = {}
        if len(layer.inputs) > 1:
            in2 = dict(in2_bcast=int(p.get("bcast", 0)),
                       in2_in_weights=self.region_of(layer.inputs[1]).area != self.fm_area)
            if layer.op in ("add", "mul") or (layer.op == "raw_binary" and p.get("bcast")):
                r0, r1 = self.region_of(layer.inputs[0]), self.region_of(layer.inputs[1])
                nhwc = ("input", "output", "linear", "constant")
                in2["binary"] = binary_timing(self.cfg, out_hwc, T[layer.inputs[1]].hwc, r1.area, r1.kind in nhwc,
                                              r0.kind in nhwc, self.region_of(layer.ofm).kind in nhwc,
                                              np.dtype(src.dtype).itemsize)
                if layer.op == "raw_binary" and r0.kind == "constant":
                    in2["in0"] = constant_operand_timing(self.cfg, out_hwc, r0.area, np.dtype(src.dtype).itemsize)
        if layer.op == "softmax":
            in2.update(whole_channels=True, whole=(out_hwc[0] * out_hwc[1], out_hwc[1]))
        elif layer.op == "transpose":
            in2["perm"] = tuple(p["perm"])
        elif layer.op == "argmax":
            in2.update(all_in_channels=True, whole=(p["rows"],))
        elif layer.op == "resize":
            in2.update(resize=True, bilinear=bool(p["bilinear"]), half_pixel=p["ctm"] == 2,
                       whole=(src.hwc[0], src.hwc[1], out_hwc[0], out_hwc[1], out_hwc[2]))
        return Geometry("ppu", op, out_hwc, src.hwc, kernel, stride, dil, 1, len(layer.inputs),
                        np.dtype(src.dtype).itemsize, np.dtype(T[layer.ofm].dtype).itemsize, False,
                        layer.op == "requant", _has_lut_table(layer), layer.op == "mean",
                        lut_bytes=lut_table_bytes(layer.params.get("fn16", 0)), **in2)

    def plan(self, layer) -> TilePlan:
        g = self.geometry(layer)
        src = layer.ifm if isinstance(layer, ConvLayer) else layer.inputs[0]
        g = dataclasses.replace(g, in_linear=self.region_of(src).kind in ("input", "linear"),
                                out_linear=self.region_of(layer.ofm).kind in ("output", "linear"),
                                in_area=self.region_of(src).area, out_area=self.region_of(layer.ofm).area)
        if isinstance(layer, ConvLayer):
            # Vela (regor) encodes a layer's weights as one full-depth stream (its reported encoded totals match
            # that within 0.5%): the search and the simulator charge that stream's ratio.
            g = dataclasses.replace(g, weight_ratio=self.weight_ratio(layer, len(layer.bias)))
        chooser = tuning.current()   # tuning records (npu_sim/tuning.py); None: the default heuristic alone
        if chooser is not None:
            out_dtype = layer.out_dtype if isinstance(layer, ConvLayer) else self.graph.tensors[layer.ofm].dtype
            return chooser.plan(self.cfg, g, self.graph.tensors[src].dtype, out_dtype, layer.name, self.fm_area,
                                self.w_area)
        return plan_layer(self.cfg, g, layer.name, self.fm_area, self.w_area, memo=self.search_memo)

    def weight_ratio(self, layer: ConvLayer, slice_depth: int) -> float:
        """Encoded / raw bytes of the layer's weights and tables, encoded per OFM slice of ``slice_depth``."""
        raw = layer.weights.nbytes + 10 * len(layer.bias)
        if self.cfg.weight_encoding != "mlw":
            return float(self.cfg.weight_compression)
        key = (id(layer), slice_depth)
        if key not in self.ratios:
            m = self.cfg.mac
            ifm_bits = 8 * np.dtype(self.graph.tensors[layer.ifm].dtype).itemsize   # sets the IFM block depth
            enc = encoded_weight_bytes(layer.weights, layer.zp_w, layer.kind, slice_depth, m.ublock_c, m.dot_depth,
                                       ifm_bits)
            self.ratios[key] = enc / raw
        return self.ratios[key]

    def place_layer_constants(self, li: int, layer) -> dict:
        if isinstance(layer, ConvLayer):
            w = self.mem.add(f"{layer.name}.weights", self.w_area, layer.weights.nbytes, "constant",
                             layer.weights.tobytes())
            t = self.mem.add(f"{layer.name}.table", self.w_area, 10 * len(layer.bias), "constant",
                             _pack_table(layer.bias, layer.multiplier, layer.shift))
            return {"weights": w, "table": t}
        if _has_lut_table(layer):
            image = _lut_image(layer)
            return {"table": self.mem.add(f"{layer.name}.lut", self.w_area, len(image), "constant", image)}
        if layer.op == "requant":
            bias, m, s = layer.table
            return {"table": self.mem.add(f"{layer.name}.table", self.w_area, 10 * len(bias), "constant",
                                          _pack_table(bias, m, s))}
        return {}

    def layer_info(self, layer, plan: TilePlan, const: dict) -> LayerInfo:
        T = self.graph.tensors
        area_names = [a.name for a in self.cfg.memory_areas]
        traffic = [0] * len(area_names)
        if isinstance(layer, PpuLayer) and layer.in_origin is not None:
            # a window copy reads only its window's in-image part
            src = T[layer.inputs[0]]
            nbytes, _ = window_traffic(*src.hwc, *layer.in_origin[:2], *layer.block,  # type: ignore[misc]
                                       np.dtype(src.dtype).itemsize)
            traffic[self.region_of(layer.inputs[0]).area] += nbytes
        else:
            for tid in (layer.inputs if isinstance(layer, PpuLayer) else (layer.ifm,)):
                traffic[self.region_of(tid).area] += self.region_of(tid).size
        out = T[layer.ofm]
        out_elems = int(np.prod(self.geometry(layer).out_hwc))
        traffic[self.region_of(layer.ofm).area] += out_elems * np.dtype(out.dtype).itemsize
        ratio = self.weight_ratio(layer, len(layer.bias)) if isinstance(layer, ConvLayer) else 1.0   # full depth
        for key, r in const.items():
            traffic[r.area] += int(round(r.size * ratio))
        kind = layer.kind if isinstance(layer, ConvLayer) else layer.op
        return LayerInfo(layer.name, layer.composite, kind, int(layer.macs),
                         tuple((n, b) for n, b in zip(area_names, traffic) if b), out_elems,
                         (plan.bh, plan.bw, plan.bc), plan.order, ratio, self.vela_floor(layer, ratio))

    def vela_floor(self, layer, ratio: float) -> int:
        """Vela's access-count bound of an 8-bit (depthwise) convolution between bricked maps
        (vela_access.access_floor); 0 for other layers."""
        T = self.graph.tensors
        if not isinstance(layer, ConvLayer) or layer.kind not in ("conv", "depthwise") or layer.dm != 1:
            return 0
        ifm, ofm = T[layer.ifm], T[layer.ofm]
        # a shallow IFM (fewer than 16 channels) may be NHWC in Vela's schedule: its brick count is unknown
        if (np.dtype(ifm.dtype).itemsize != 1 or np.dtype(layer.out_dtype).itemsize != 1 or ifm.hwc[2] < 16
                or self.region_of(layer.ifm).kind != "activation"
                or self.region_of(layer.ofm).kind not in ("activation", "output", "linear")):
            return 0
        return access_floor(self.cfg, layer.kind == "depthwise", ofm.hwc, ifm.hwc, layer.kernel, layer.stride,
                            layer.dilation, int(round(layer.weights.nbytes * ratio)), 10 * ofm.hwc[2],
                            self.fm_area, self.w_area, self.region_of(layer.ofm).kind != "activation")

    # ------------------------------------------------------------------------------------------ commands
    def load(self, li, kind, tid, y0, x0, c0, h, w, c, pad_value, slot, upscale=(1, 1)) -> Load:
        t = self.graph.tensors[tid]
        r = self.region_of(tid)
        H, W, C = t.hwc
        if t.c_offset is not None:   # a channel window: the root's image, from its channel
            c0 += t.c_offset
            C = self.graph.tensors[t.alias_of].hwc[2]
        assert t.origin is None, f"{t.name}: a block written into a concatenation is write-only"
        uh, uw = H * upscale[0], W * upscale[1]   # the window's image: upscaled for a TRANSPOSE_CONV's IFM
        pad = int(y0 < 0 or x0 < 0 or y0 + h > uh or x0 + w > uw)
        if t.window is not None:   # a slice read in place (lower.read_slices_in_place): its window of the source
            src, (oy, ox, oc) = t.window
            H, W, C = self.graph.tensors[src].hwc
            y0, x0, c0 = y0 + oy, x0 + ox, c0 + oc
        up = (LOAD_UPSCALE_H if upscale[0] == 2 else 0) | (LOAD_UPSCALE_W if upscale[1] == 2 else 0)
        return Load(0, 0, li, int(kind), r.area, dtype_code(t.dtype), r.base, H, W, C, y0, x0, c0, h, w, c, pad | up,
                    int(pad_value) if pad or up else 0, slot[0], slot[1])

    def load_const(self, li, kind, region: Region, start: int, count: int, slot, flags: int = 0) -> Load:
        return Load(0, 0, li, int(kind), region.area, 1, region.base, 1, 1, region.size, 0, 0, start, 1, 1, count,
                    flags, 0, slot[0], slot[1])

    def store(self, li, tid, y0, x0, c0, h, w, c, slot) -> Store:
        t = self.graph.tensors[tid]
        assert t.c_offset is None, f"{t.name}: a channel window is read-only"
        if t.origin is not None:   # a concatenation input written straight into its block of the output
            y0, x0, c0 = y0 + t.origin[0], x0 + t.origin[1], c0 + t.origin[2]
            t = self.graph.tensors[t.alias_of]
        r = self.region_of(tid)
        H, W, C = t.hwc
        return Store(0, 0, li, r.area, dtype_code(t.dtype), r.base, H, W, C, y0, x0, c0, h, w, c, slot[0], slot[1])

    def emit_conv(self, em: _Emitter, li: int, L: ConvLayer, plan: TilePlan, const: dict) -> None:
        T = self.graph.tensors
        ifm, ofm = T[L.ifm], T[L.ofm]
        OH, OW, OC = ofm.hwc
        slots = self.slots(plan, li)
        first = self.prefetched.pop(li, (None, None))[1]
        sh, sw = L.stride
        dh, dw = L.dilation
        kh, kw = L.kernel
        pt, pl = L.padding[0], L.padding[1]
        dw_op = L.kind == "depthwise"
        # A fully connected layer reads its weights while it runs (Vela never buffers them ahead): after a layer
        # computing a feature map, its first weight load follows that layer's last compute command, not just the
        # free DMA queue. (After another fully connected layer the two weight streams already follow each other
        # on the port; the wait would only expose the load's latency, which Vela does not charge per op.)
        prev = self.graph.layers[li - 1] if li else None
        after = em.last_compute if L.kind == "dense" and not (isinstance(prev, ConvLayer) and prev.kind == "dense") \
            else -1
        w_per_oc = kh * kw * (1 if dw_op else ifm.hwc[2])
        in_dt, w_dt, out_dt = dtype_code(ifm.dtype), dtype_code(str(L.weights.dtype)), dtype_code(L.out_dtype)
        rounding = int(Rounding[L.rounding])
        if rounding == Rounding.FLOAT32_HALF_EVEN and not self.cfg.ppu.float_scale:
            raise NPUError(f"layer {L.name!r}: ONNX's float32 requantization needs a float32 output stage; "
                           f"{self.cfg.name!r} has ppu.float_scale = false",
                           hint="use a configuration whose PPU scales in float32 (ethos-n78-like, "
                                "ethos-u55-256-like) or keep this layer on the CPU")
        ppu_params = _ppu_params(PpuOp.REQUANT, dict(zp_in=L.zp_rq, zp_out=L.zp_out, act_min=L.act_min,
                                                     act_max=L.act_max))
        spatial = [(y, x, min(plan.bh, OH - y), min(plan.bw, OW - x))
                   for y in range(0, OH, plan.bh) for x in range(0, OW, plan.bw)]
        chans = [(c, min(plan.bc, OC - c)) for c in range(0, OC, plan.bc)]

        def ifm_window(y, x, th, tw):
            return (y * sh - pt, x * sw - pl, (th - 1) * sh + (kh - 1) * dh + 1, (tw - 1) * sw + (kw - 1) * dw + 1)

        def weights(c0, tc):
            nonlocal first
            if first is not None and c0 == 0:
                got, first = first, None
                return got
            nonlocal after
            ws = slots.take("weight")
            ts = slots.take("table")
            em.emit(self.load_const(li, TileKind.WEIGHT, const["weights"], c0 * w_per_oc, tc * w_per_oc, ws), after)
            after = -1
            em.emit(self.load_const(li, TileKind.TABLE, const["table"], c0 * 10, tc * 10, ts))
            return ws, ts

        def mac(y, x, th, tw, tc, ifm_slot, ic, ws, acc, ic0=0, w_ic=0):
            ih, iw = ifm_window(y, x, th, tw)[2:]
            em.emit(Mac(0, 0, li, int(mac_op(L.kind, (OH, OW, OC), L.kernel)), in_dt, w_dt, ifm_slot[0],
                        ifm_slot[1], ih, iw, ic, ws[0], ws[1], acc[0], acc[1], th, tw, tc, kh, kw, sh, sw, dh, dw,
                        L.zp_in, L.zp_w, L.dm, ic0, w_ic))

        def compute(y, x, th, tw, c0, tc, ifm_slot, ic, ws, ts):
            acc = slots.take("acc")
            mac(y, x, th, tw, tc, ifm_slot, ic, ws, acc)
            finish(y, x, th, tw, c0, tc, acc, ts)

        def finish(y, x, th, tw, c0, tc, acc, ts):
            out = slots.take("ofm")
            em.emit(Ppu(0, 0, li, int(PpuOp.REQUANT), rounding, 3, out_dt, acc[0], acc[1], 0, 0, 0, ts[0], ts[1],
                        out[0], out[1], th, tw, tc, th, tw, tc, ppu_params))
            em.emit(self.store(li, L.ofm, y, x, c0, th, tw, tc, out))

        spread = self.prefetch_slices(li, L, plan, len(chans))

        def next_weights(k):
            # the next layer's first weights stream in under this layer's last ``spread`` channel slices, a
            # piece per slice
            if k == len(chans) - spread:
                self.prefetch_next(em, li, slots, spread)
            elif k > len(chans) - spread:
                self.prefetch_step(em)

        if plan.order == "depth_outer" or dw_op:
            # Weights of the next channel slice are queued right after the first IFM tile of this slice, so
            # their (slow) transfer overlaps this slice's compute: double-buffered weights.
            pending = weights(*chans[0])
            for k, (c0, tc) in enumerate(chans):
                ws, ts = pending
                ic = tc // L.dm if dw_op else ifm.hwc[2]
                ic0 = c0 // L.dm if dw_op else 0
                for j, (y, x, th, tw) in enumerate(spatial):
                    y0, x0, ih, iw = ifm_window(y, x, th, tw)
                    if plan.ic_slice and not dw_op:
                        # the IFM window streams through the local buffer in depth slices; the tile's
                        # accumulators stay while the slices' partial sums add up
                        acc = slots.take("acc")
                        for d0 in range(0, ic, plan.ic_slice):
                            dc = min(plan.ic_slice, ic - d0)
                            s = slots.take("ifm")
                            em.emit(self.load(li, TileKind.IFM, L.ifm, y0, x0, d0, ih, iw, dc, L.pad_value, s))
                            if j == 0 and d0 == 0:
                                if k + 1 < len(chans):
                                    pending = weights(*chans[k + 1])
                                next_weights(k)
                            mac(y, x, th, tw, tc, s, dc, ws, acc, d0, ic)
                        finish(y, x, th, tw, c0, tc, acc, ts)
                        continue
                    s = slots.take("ifm")
                    em.emit(self.load(li, TileKind.IFM, L.ifm, y0, x0, ic0, ih, iw, ic, L.pad_value, s, L.upscale))
                    if j == 0:
                        if k + 1 < len(chans):
                            pending = weights(*chans[k + 1])
                        next_weights(k)
                    compute(y, x, th, tw, c0, tc, s, ic, ws, ts)
        else:
            resident = None
            for y, x, th, tw in spatial:
                y0, x0, ih, iw = ifm_window(y, x, th, tw)
                s = slots.take("ifm")
                em.emit(self.load(li, TileKind.IFM, L.ifm, y0, x0, 0, ih, iw, ifm.hwc[2], L.pad_value, s, L.upscale))
                for c0, tc in chans:
                    if resident is None or len(chans) > 1:
                        resident = weights(c0, tc)
                    compute(y, x, th, tw, c0, tc, s, ifm.hwc[2], *resident)
                if y == 0 and x == 0:
                    self.prefetch_next(em, li, slots)
        self.prefetch_step(em, flush=True)

    def emit_window_op(self, em: _Emitter, li: int, L: PpuLayer, op: PpuOp, slots: _Slots,
                       at: tuple[int, int, int], size: tuple[int, int, int]) -> None:
        """One OFM tile of a TRANSPOSE (its IFM box has the tile's axes permuted) or a RESIZE (its IFM window
        holds every tap the tile reads: image.source_span)."""
        T = self.graph.tensors
        src, ofm = T[L.inputs[0]], T[L.ofm]
        p = dict(L.params)
        (y, x, c0), (th, tw, tc) = at, size
        if op == PpuOp.TRANSPOSE:
            perm = tuple(p["perm"])
            start, ext = [0, 0, 0], [0, 0, 0]
            for i, a in enumerate(perm):
                start[a], ext[a] = at[i], size[i]
            values = dict(perm0=perm[0], perm1=perm[1], perm2=perm[2])
        else:
            from byoc.ops.image import source_span
            mode, rounding = RESIZE_MODES[p["ctm"]]
            method = "linear" if p["bilinear"] else "nearest"
            H, W, _ = src.hwc
            OH, OW, _ = ofm.hwc
            ya, yb = source_span(y, y + th, OH, H, method, mode, rounding)
            xa, xb = source_span(x, x + tw, OW, W, method, mode, rounding)
            start, ext = [ya, xa, c0], [yb - ya, xb - xa, tc]
            values = dict(bilinear=p["bilinear"], ctm=p["ctm"], in_h=H, in_w=W, out_h=OH, out_w=OW, y0=ya, x0=xa,
                          oy=y, ox=x, channels=ofm.hwc[2])
        s = slots.take("ifm")
        em.emit(self.load(li, TileKind.IFM, L.inputs[0], *start, *ext, 0, s))
        out = slots.take("ofm")
        em.emit(Ppu(0, 0, li, int(op), 0, dtype_code(src.dtype), dtype_code(ofm.dtype), s[0], s[1], 0, 0, 0, 0, 0,
                    out[0], out[1], *ext, th, tw, tc, _ppu_params(op, values)))
        em.emit(self.store(li, L.ofm, y, x, c0, th, tw, tc, out))

    def emit_argmax_tile(self, em: _Emitter, li: int, L: PpuLayer, slots: _Slots, at: tuple[int, int],
                         size: tuple[int, int]) -> None:
        """One OFM tile of an ARG_MAX: its rows' every channel in, one index per row out."""
        T = self.graph.tensors
        src, ofm = T[L.inputs[0]], T[L.ofm]
        (y, x), (th, tw) = at, size
        s = slots.take("ifm")
        em.emit(self.load(li, TileKind.IFM, L.inputs[0], y, x, 0, th, tw, src.hwc[2], 0, s))
        out = slots.take("ofm")
        em.emit(Ppu(0, 0, li, int(PpuOp.ARGMAX), 0, dtype_code(src.dtype), dtype_code(ofm.dtype), s[0], s[1], 0, 0,
                    0, 0, 0, out[0], out[1], th, tw, src.hwc[2], th, tw, 1,
                    _ppu_params(PpuOp.ARGMAX, dict(rows=L.params["rows"]))))
        em.emit(self.store(li, L.ofm, y, x, 0, th, tw, 1, out))

    def emit_ppu(self, em: _Emitter, li: int, L: PpuLayer, plan: TilePlan, const: dict) -> None:
        T = self.graph.tensors
        g = self.geometry(L)
        op = _ppu_op(L)
        src = T[L.inputs[0]]
        ofm = T[L.ofm]
        OH, OW, OC = g.out_hwc
        H, W, _ = src.hwc
        slots = self.slots(plan)
        in_dt, out_dt = dtype_code(src.dtype), dtype_code(ofm.dtype)
        p = dict(L.params)
        kh, kw = g.kernel
        sh, sw = g.stride
        dh, dw = g.dilation
        pt, pl = p.get("padding", (0, 0, 0, 0))[:2]
        if op == PpuOp.MAX_POOL:
            pad_value = int(np.iinfo(src.dtype).min)
        else:
            pad_value = int(p.get("pad_value", 0))
        rounding = int(Rounding[p.get("rounding", "TFLITE")])
        if rounding == Rounding.FLOAT32_HALF_EVEN and not self.cfg.ppu.float_scale:
            raise NPUError(f"layer {L.name!r}: ONNX's float32 requantization needs a float32 output stage; "
                           f"{self.cfg.name!r} has ppu.float_scale = false",
                           hint="use a configuration whose PPU scales in float32 (ethos-n78-like, "
                                "ethos-u55-256-like) or keep this layer on the CPU")
        bcast = int(p.get("bcast", 0)) if len(L.inputs) > 1 else 0
        oy, ox, oc = L.out_origin or (0, 0, 0)
        iy, ix, ic0 = L.in_origin or (0, 0, 0)   # a window copy's start in its input
        lut_slot = None
        if op == PpuOp.LUT and _has_lut_table(L):
            lut_slot = slots.take("table")
            em.emit(self.load_const(li, TileKind.TABLE, const["table"], 0, lut_table_bytes(p.get("fn16", 0)),
                                    lut_slot))
        for c0 in range(0, OC, plan.bc):
            tc = min(plan.bc, OC - c0)
            table_slot = lut_slot
            if op == PpuOp.REQUANT:
                table_slot = slots.take("table")
                em.emit(self.load_const(li, TileKind.TABLE, const["table"], c0 * 10, tc * 10, table_slot))
            for y in range(0, OH, plan.bh):
                for x in range(0, OW, plan.bw):
                    th, tw = min(plan.bh, OH - y), min(plan.bw, OW - x)
                    if op in (PpuOp.TRANSPOSE, PpuOp.RESIZE):
                        self.emit_window_op(em, li, L, op, slots, (y, x, c0), (th, tw, tc))
                        continue
                    if op == PpuOp.ARGMAX:
                        self.emit_argmax_tile(em, li, L, slots, (y, x), (th, tw))
                        continue
                    if op == PpuOp.MEAN:
                        y0, x0, ih, iw = 0, 0, H, W
                    else:
                        y0, x0 = y * sh - pt + iy, x * sw - pl + ix
                        ih, iw = (th - 1) * sh + (kh - 1) * dh + 1, (tw - 1) * sw + (kw - 1) * dw + 1
                    b, off = slots.take("ifm")
                    tile_bytes = ih * iw * tc * np.dtype(src.dtype).itemsize
                    srcs = []
                    for k, tid in enumerate(L.inputs):
                        s = (b, off + k * tile_bytes)
                        if k == 1 and bcast:
                            # IFM2 broadcast: only the one-deep window is read, once per tile.
                            h2, w2, c2 = src1_tile_shape(ih, iw, tc, bcast)
                            em.emit(self.load(li, TileKind.IFM, tid, 0 if bcast & BCAST_H else y0,
                                              0 if bcast & BCAST_W else x0, 0 if bcast & BCAST_C else c0, h2, w2,
                                              c2, pad_value, s))
                        else:
                            em.emit(self.load(li, TileKind.IFM, tid, y0, x0, c0 + ic0, ih, iw, tc, pad_value, s))
                        srcs.append(s)
                    values = dict(p, y0=y0, x0=x0, img_h=H, img_w=W)
                    values.update(zip(("in2_area", "in2_burst", "nhwc"), g.binary))
                    values.update(zip(("in0_area", "in0_burst"), g.in0))
                    out = slots.take("ofm")
                    s1 = srcs[1] if len(srcs) > 1 else (0, 0)
                    ts = table_slot or (0, 0)
                    em.emit(Ppu(0, 0, li, int(op), rounding, in_dt, out_dt, srcs[0][0], srcs[0][1], s1[0], s1[1],
                                bcast, ts[0], ts[1], out[0], out[1], ih, iw, tc, th, tw, tc,
                                _ppu_params(op, values)))
                    em.emit(self.store(li, L.ofm, y + oy, x + ox, c0 + oc, th, tw, tc, out))
