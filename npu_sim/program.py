"""An NPU program: memory map, constant images, layer table and command stream; binary form and validator.

Binary layout (little-endian)::

    magic "NPUSIMP\\0" | version u16 | reserved u16 | meta_len u32 | const_len u32 | n_cmds u32 | cmd_len u32
    | meta (UTF-8 JSON: config, regions, tensors, layers) | constants | commands | CRC-32 of all before it

Decoding parses JSON and fixed structs only (nothing is executed or unpickled) and then validates everything.
"""
from __future__ import annotations

import dataclasses
import json
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from byoc.errors import ConfigError, NPUError

from .config import NPUConfig, config_from_dict
from .deps import HazardTracker, RegionIndex, check_tokens, command_accesses, mac_weight_bytes, ppu_src1_bytes, \
    ppu_table_bytes, tile_bytes
from .isa import (BCAST_ALL, BINARY_OPS, DTYPE_BYTES, LOAD_CONTINUE, LOAD_PAD, LOAD_PAD_BITS, LOAD_UPSCALE_H, LOAD_UPSCALE_W,
                  RAW_FUNCTIONS, DTYPES, Command, Load, Mac, MacOp, Ppu, PpuOp, Rounding, Store, TileKind,
                  decode_command, disassemble_command, encode_command)

__all__ = ["Region", "TensorBinding", "LayerInfo", "Program", "FORMAT_VERSION", "MAGIC"]

MAGIC = b"NPUSIMP\0"
FORMAT_VERSION = 7  # v2: 32-bit channel fields in LOAD/STORE; v3: IFM2 broadcast flags in PPU; v4: per-layer
# encoded weight ratio and the config's weight encoding and timing fields; v5: the config's per-block floor, step
# delay, pooling step cost and I/O placement (a v4 config would take them from a preset); v6: PPU rounding
# FLOAT32_HALF_EVEN (its table's mult field holds float32 bits) and the config's ppu.float_scale; v7: MAC IFM
# depth slices (ic0, w_ic)
_HEAD = struct.Struct("<8sHHIIII")


@dataclass(frozen=True)
class Region:
    """A tensor's bytes in a memory area (``area`` indexes config.memory_areas)."""
    id: int
    name: str
    area: int
    base: int
    size: int
    kind: str                         # "input" | "output" | "activation" | "linear" (an activation in NHWC) | "constant"


@dataclass(frozen=True)
class TensorBinding:
    name: str
    region: int
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class LayerInfo:
    name: str
    composite: str
    kind: str                         # conv | depthwise | dense | add | mul | max_pool | ... | copy
    macs: int
    bytes_by_area: tuple[tuple[str, int], ...]   # compulsory traffic: IFM once, OFM, encoded weights + tables
    ppu_elements: int = 0             # output elements the PPU must produce (roofline's third ceiling)
    tile: tuple[int, int, int] = (0, 0, 0)
    order: str = ""
    weight_ratio: float = 1.0         # encoded / raw bytes of the weight and table loads (timing only)
    access_floor: int = 0             # least cycles of the layer by Vela's access counts (vela_access.py; timing)


@dataclass(frozen=True, eq=False)
class Program:
    config: NPUConfig
    regions: tuple[Region, ...]
    constants: tuple[tuple[int, bytes], ...]     # (region id, initial bytes)
    inputs: tuple[TensorBinding, ...]
    outputs: tuple[TensorBinding, ...]
    layers: tuple[LayerInfo, ...]
    commands: tuple[Command, ...]
    name: str = "npu_func"

    # ------------------------------------------------------------------------------------------ text form
    def disassemble(self) -> str:
        lines = [f"; program {self.name} for {self.config.name} (format v{FORMAT_VERSION})"]
        for r in self.regions:
            area = self.config.memory_areas[r.area].name
            lines.append(f"; region {r.id} {r.kind:10s} {area}@{r.base:#x} +{r.size} {r.name}")
        for i, layer in enumerate(self.layers):
            lines.append(f"; layer {i} {layer.name} ({layer.composite}) kind={layer.kind} macs={layer.macs} "
                         f"tile={layer.tile} {layer.order}")
        for i, c in enumerate(self.commands):
            lines.append(f"{i:6d}  {disassemble_command(c)}")
        return "\n".join(lines) + "\n"

    # ---------------------------------------------------------------------------------------- binary form
    def to_bytes(self) -> bytes:
        meta = {
            "name": self.name,
            "config": _config_to_dict(self.config),
            "regions": [dataclasses.asdict(r) for r in self.regions],
            "constants": [[rid, len(data)] for rid, data in self.constants],
            "inputs": [dataclasses.asdict(t) for t in self.inputs],
            "outputs": [dataclasses.asdict(t) for t in self.outputs],
            "layers": [dataclasses.asdict(layer) for layer in self.layers],
        }
        meta_b = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode("utf-8")
        consts = [data for _, data in self.constants]
        cmd_b = b"".join([encode_command(c) for c in self.commands])
        head = _HEAD.pack(MAGIC, FORMAT_VERSION, 0, len(meta_b), sum(len(d) for d in consts), len(self.commands),
                          len(cmd_b))
        parts = [head, meta_b, *consts, cmd_b]
        crc = 0
        for part in parts:  # the checksum runs over the pieces, so the program is assembled only once
            crc = zlib.crc32(part, crc)
        parts.append(struct.pack("<I", crc))
        return b"".join(parts)

    @staticmethod
    def from_bytes(data: bytes) -> "Program":
        # A read-only view, not a copy: the program keeps only what it decodes (constants are copied out).
        data = memoryview(data if isinstance(data, (bytes, bytearray, memoryview)) else bytes(data))
        if data.format != "B" or data.ndim != 1:
            data = data.cast("B")
        data = data.toreadonly()
        if len(data) < _HEAD.size + 4:
            raise NPUError(f"NPU program is truncated: {len(data)} bytes, the header alone needs {_HEAD.size + 4}")
        magic, version, _, meta_len, const_len, n_cmds, cmd_len = _HEAD.unpack_from(data, 0)
        if magic != MAGIC:
            raise NPUError(f"not an NPU program: magic {magic!r} at byte 0, expected {MAGIC!r}")
        if version != FORMAT_VERSION:
            raise NPUError(f"NPU program format version {version} is not supported (this build reads "
                           f"v{FORMAT_VERSION})", hint="recompile the model with this version of npu_sim")
        want = _HEAD.size + meta_len + const_len + cmd_len + 4
        if len(data) != want:
            raise NPUError(f"NPU program size {len(data)} bytes does not match its header ({want} bytes)",
                           hint="the file is truncated or has trailing bytes")
        (crc,) = struct.unpack_from("<I", data, want - 4)
        if zlib.crc32(data[:want - 4]) != crc:
            raise NPUError(f"NPU program checksum mismatch (stored {crc:#010x}, computed "
                           f"{zlib.crc32(data[:want - 4]):#010x})", hint="the file is corrupted")
        pos = _HEAD.size
        try:
            meta = json.loads(str(data[pos:pos + meta_len], "utf-8"))
            config = config_from_dict(meta["config"], source="<program>")
            regions = tuple(_region(r) for r in meta["regions"])
            inputs = tuple(_binding(t) for t in meta["inputs"])
            outputs = tuple(_binding(t) for t in meta["outputs"])
            layers = tuple(_layer(x) for x in meta["layers"])
            const_spec = [(int(a), int(b)) for a, b in meta["constants"]]
            name = str(meta["name"])
        except ConfigError as e:
            raise NPUError(f"NPU program metadata holds an invalid config: {e.message}") from e
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            raise NPUError(f"NPU program metadata (bytes {pos}..{pos + meta_len}) is malformed: {e}") from e
        pos += meta_len
        constants = []
        for rid, size in const_spec:
            constants.append((rid, data[pos:pos + size].tobytes()))
            pos += size
        if sum(s for _, s in const_spec) != const_len:
            raise NPUError("NPU program constant table does not match the constant section length")
        cmds = []
        end = pos + cmd_len
        view = data[:end]
        shared: dict = {}
        for _ in range(n_cmds):
            c, pos = decode_command(view, pos, shared)
            cmds.append(c)
        if pos != end:
            raise NPUError(f"NPU program command section has {end - pos} unexplained trailing bytes")
        prog = Program(config, regions, tuple(constants), inputs, outputs, layers, tuple(cmds), name)
        prog.validate()
        return prog

    # ------------------------------------------------------------------------------------------ validator
    def validate(self, check_hazards: bool = True, check_deadlock: bool = True,
                 check_commands: bool = True) -> "Program":
        """Every field in range, tokens balanced and deadlock-free, and (optionally) every hazard ordered.
        ``check_deadlock=False`` (the compiler's own output: its tokens are assigned in stream order, each wait
        popping a token an earlier command pushed) checks the fields only; ``check_commands=False`` (the
        compiler's commands, sized by its own tile plans) checks the memory map, constants and bindings only.
        A decoded program (``from_bytes``) is always checked in full."""
        problems = _static_problems(self, check_commands)
        if problems:
            raise NPUError(f"invalid NPU program {self.name!r}: {len(problems)} problem(s)",
                           notes=tuple("  - " + p for p in problems[:20]) +
                           ((f"  ... and {len(problems) - 20} more",) if len(problems) > 20 else ()))
        if not (check_deadlock or check_hazards):
            return self
        engines = [int(c.ENGINE) for c in self.commands]
        deps = iter_dependencies(self) if check_hazards else None  # one command's list at a time
        check_tokens(list(self.commands), engines, deps)
        return self


def program_dependencies(prog: Program) -> list[list[int]]:
    return list(iter_dependencies(prog))


def iter_dependencies(prog: Program) -> Iterator[list[int]]:
    """Each command's dependencies (earlier command indices), in stream order."""
    index = RegionIndex(prog.regions)
    tracker = HazardTracker()
    for i, c in enumerate(prog.commands):
        reads, writes = command_accesses(c, index)
        yield tracker.access(i, int(c.ENGINE), reads, writes)


def _region(r) -> Region:
    return Region(int(r["id"]), str(r["name"]), int(r["area"]), int(r["base"]), int(r["size"]), str(r["kind"]))


def _binding(t) -> TensorBinding:
    return TensorBinding(str(t["name"]), int(t["region"]), tuple(int(v) for v in t["shape"]), str(t["dtype"]))


def _layer(x) -> LayerInfo:
    return LayerInfo(str(x["name"]), str(x["composite"]), str(x["kind"]), int(x["macs"]),
                     tuple((str(a), int(b)) for a, b in x["bytes_by_area"]), int(x["ppu_elements"]),
                     tuple(int(v) for v in x["tile"]), str(x["order"]), float(x["weight_ratio"]),
                     int(x.get("access_floor", 0)))


def _config_to_dict(cfg: NPUConfig) -> dict:
    d = dataclasses.asdict(cfg)
    d["ppu"]["cycles_per_element"] = dict(cfg.ppu.cycles_per_element)
    d["local_buffer"] = [dict(b, holds=list(b["holds"])) for b in d.pop("local_buffers")]
    d["memory_area"] = d.pop("memory_areas")
    base = {"name": d.pop("name")}
    # A full description (no "base"): every section present, so loading never depends on preset values.
    return {**base, **d}


_DTYPE_RANGE = [(int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in DTYPES]


def _static_problems(prog: Program, check_commands: bool = True) -> list[str]:
    cfg = prog.config
    out: list[str] = []
    n_areas = len(cfg.memory_areas)
    sizes = [b.size_bytes for b in cfg.local_buffers]
    holds = [b.holds for b in cfg.local_buffers]
    ids = [r.id for r in prog.regions]
    if ids != list(range(len(ids))):
        out.append("region ids must be 0..n-1 in order")
    for r in prog.regions:
        if r.base < 0 or r.size < 0 or r.base + r.size > 1 << 32:
            out.append(f"region {r.id} ({r.name}) spans {r.base}..{r.base + r.size}, outside the 32-bit address space")
        elif not 0 <= r.area < n_areas:
            out.append(f"region {r.id} ({r.name}) is in area {r.area}, config has {n_areas}")
        elif cfg.memory_areas[r.area].size_bytes and r.base + r.size > cfg.memory_areas[r.area].size_bytes:
            out.append(f"region {r.id} ({r.name}) ends at {r.base + r.size}, past area "
                       f"{cfg.memory_areas[r.area].name} ({cfg.memory_areas[r.area].size_bytes} B)")
    for rid, data in prog.constants:
        if not 0 <= rid < len(prog.regions) or len(data) != prog.regions[rid].size:
            out.append(f"constant image for region {rid} has {len(data)} bytes, region size differs or is missing")
    for t in list(prog.inputs) + list(prog.outputs):
        if not 0 <= t.region < len(prog.regions):
            out.append(f"tensor {t.name} refers to region {t.region}, which does not exist")
        elif t.dtype not in DTYPES or int(np.prod(t.shape)) * DTYPE_BYTES[DTYPES.index(t.dtype)] != \
                prog.regions[t.region].size:
            out.append(f"tensor {t.name} {t.shape} {t.dtype} does not fit region {t.region} exactly")
    if not check_commands:
        return out
    index = RegionIndex(prog.regions)
    n_layers = len(prog.layers)
    kind_name = ("ifm", "weight", "table", "acc", "ofm")

    def local(buf, off, nbytes, kind, what, i):
        if not 0 <= buf < len(sizes):
            out.append(f"#{i} {what}: local buffer {buf} does not exist ({len(sizes)} configured)")
            return
        if kind is not None and kind_name[kind] not in holds[buf]:
            out.append(f"#{i} {what}: buffer {cfg.local_buffers[buf].name} does not hold {kind_name[kind]} tiles")
        if off < 0 or off + nbytes > sizes[buf]:
            out.append(f"#{i} {what}: bytes {off}..{off + nbytes} outside buffer {cfg.local_buffers[buf].name} "
                       f"({sizes[buf]} B)")

    for i, c in enumerate(prog.commands):
        if len(out) > 40:
            break
        if c.layer >= n_layers:
            out.append(f"#{i}: layer {c.layer} does not exist ({n_layers} layers)")
        if c.wait > 15 or c.signal > 15:
            out.append(f"#{i}: token masks {c.wait:#x}/{c.signal:#x} name engines that do not exist")
        try:
            if isinstance(c, (Load, Store)):
                if not 0 <= c.dtype < len(DTYPES):
                    out.append(f"#{i}: dtype code {c.dtype} is unknown")
                    continue
                if not 0 <= c.area < n_areas:
                    out.append(f"#{i}: area {c.area} does not exist")
                    continue
                if min(c.h, c.w, c.c, c.img_h, c.img_w, c.img_c) <= 0 or c.c0 + c.c > c.img_c:
                    out.append(f"#{i}: empty or out-of-range window in {disassemble_command(c)}")
                    continue
                span = c.img_h * c.img_w * c.img_c * DTYPE_BYTES[c.dtype]
                if index.find(c.area, c.base, c.base + span) is None:
                    out.append(f"#{i}: memory {c.base:#x}..{c.base + span:#x} of area {c.area} is not one region")
                if isinstance(c, Load):
                    lo, hi = _DTYPE_RANGE[c.dtype]
                    if c.pad and not lo <= c.pad_value <= hi:
                        out.append(f"#{i}: pad value {c.pad_value} is outside {DTYPES[c.dtype]}")
                    if not 0 <= c.kind < len(TileKind):
                        out.append(f"#{i}: tile kind {c.kind} is unknown")
                        continue
                    if c.pad & ~LOAD_PAD_BITS:
                        out.append(f"#{i}: unknown pad flags {c.pad:#x}")
                    if c.pad & LOAD_CONTINUE and (c.img_h, c.img_w, c.h, c.w) != (1, 1, 1, 1):
                        out.append(f"#{i}: only a 1-D constant load continues a tile")
                    up_h, up_w = (c.img_h * (2 if c.pad & LOAD_UPSCALE_H else 1),
                                  c.img_w * (2 if c.pad & LOAD_UPSCALE_W else 1))   # the image the window is in
                    if not c.pad & LOAD_PAD and (c.y0 < 0 or c.x0 < 0 or c.y0 + c.h > up_h or c.x0 + c.w > up_w):
                        out.append(f"#{i}: window leaves the image but padding is off")
                    local(c.buf, c.off, tile_bytes(c.h, c.w, c.c, c.dtype), c.kind, "load", i)
                else:
                    if c.y0 + c.h > c.img_h or c.x0 + c.w > c.img_w:
                        out.append(f"#{i}: store window leaves the image")
                    local(c.buf, c.off, tile_bytes(c.h, c.w, c.c, c.dtype), TileKind.OFM, "store", i)
            elif isinstance(c, Mac):
                if c.op not in MacOp._value2member_map_ or not 0 <= c.in_dtype < 3 or not 0 <= c.w_dtype < 2:
                    out.append(f"#{i}: unknown MAC op or dtype in {disassemble_command(c)}")
                    continue
                if min(c.oh, c.ow, c.oc, c.kh, c.kw, c.sh, c.sw, c.dh, c.dw, c.dm) <= 0:
                    out.append(f"#{i}: zero-sized MAC field in {disassemble_command(c)}")
                    continue
                if c.ih < (c.oh - 1) * c.sh + (c.kh - 1) * c.dh + 1 or c.iw < (c.ow - 1) * c.sw + (c.kw - 1) * c.dw + 1:
                    out.append(f"#{i}: IFM tile {c.ih}x{c.iw} is too small for {c.oh}x{c.ow} outputs")
                if c.op == MacOp.DEPTHWISE and c.ic * c.dm != c.oc:
                    out.append(f"#{i}: depthwise tile has {c.ic} channels × dm {c.dm} ≠ {c.oc} outputs")
                if c.w_ic and (c.op == MacOp.DEPTHWISE or c.ic0 + c.ic > c.w_ic) or (c.ic0 and not c.w_ic):
                    out.append(f"#{i}: IFM depth slice {c.ic0}+{c.ic} does not lie in the weights' depth {c.w_ic}"
                               + (" (depthwise tiles are not sliced)" if c.op == MacOp.DEPTHWISE else ""))
                local(c.ifm_buf, c.ifm_off, tile_bytes(c.ih, c.iw, c.ic, c.in_dtype), TileKind.IFM, "mac ifm", i)
                local(c.w_buf, c.w_off, mac_weight_bytes(c), TileKind.WEIGHT, "mac weights", i)
                local(c.acc_buf, c.acc_off, c.oh * c.ow * c.oc * 4, TileKind.ACC, "mac acc", i)
            elif isinstance(c, Ppu):
                # data movement and int16x8 requantization also write int16
                wide_out = c.op in (PpuOp.TRANSPOSE, PpuOp.RESIZE) or c.rounding == Rounding.TFLITE_INT64 or \
                    (c.op == PpuOp.COPY and c.in_dtype == c.out_dtype) or \
                    (c.op in (PpuOp.ADD, PpuOp.MUL, PpuOp.GATE_ADD) and c.in_dtype == 2)
                # ARG_MAX writes int32 / int64 indices; raw integer arithmetic keeps its operands' type
                out_limit = {PpuOp.ARGMAX: len(DTYPES), PpuOp.RAW_BINARY: len(DTYPES) - 1}.get(
                    c.op, (4 if c.op == PpuOp.COPY else 3) if wide_out else 2)   # a copy of int32 (a reshape)
                if c.op not in PpuOp._value2member_map_ or not 0 <= c.in_dtype < len(DTYPES) or \
                        not 0 <= c.out_dtype < out_limit or c.rounding not in Rounding._value2member_map_:
                    out.append(f"#{i}: unknown PPU op, rounding or dtype in {disassemble_command(c)}")
                    continue
                if c.rounding == Rounding.FLOAT32_HALF_EVEN and not prog.config.ppu.float_scale:
                    out.append(f"#{i}: rounding FLOAT32_HALF_EVEN on {prog.config.name!r}, whose PPU has no "
                               "float32 scaling (ppu.float_scale = false)")
                if min(c.oh, c.ow, c.oc, c.ih, c.iw, c.ic) <= 0:
                    out.append(f"#{i}: zero-sized PPU tile")
                    continue
                local(c.src0_buf, c.src0_off, tile_bytes(c.ih, c.iw, c.ic, c.in_dtype), None, "ppu src", i)
                if c.op in BINARY_OPS:
                    if c.src1_bcast & ~BCAST_ALL:
                        out.append(f"#{i}: unknown src1 broadcast flags {c.src1_bcast:#x}")
                        continue
                    local(c.src1_buf, c.src1_off, ppu_src1_bytes(c), None, "ppu src1", i)
                elif c.src1_bcast:
                    out.append(f"#{i}: src1 broadcast flags on a PPU op without src1 ({disassemble_command(c)})")
                tb = ppu_table_bytes(c)
                if tb:
                    local(c.table_buf, c.table_off, tb, TileKind.TABLE, "ppu table", i)
                local(c.dst_buf, c.dst_off, tile_bytes(c.oh, c.ow, c.oc, c.out_dtype), TileKind.OFM, "ppu dst", i)
                if c.op == PpuOp.TRANSPOSE:
                    perm = tuple(c.param(k) for k in ("perm0", "perm1", "perm2"))
                    src = (c.ih, c.iw, c.ic)
                    if sorted(perm) != [0, 1, 2] or tuple(src[k] for k in perm) != (c.oh, c.ow, c.oc):
                        out.append(f"#{i}: transpose {perm} of a {c.ih}x{c.iw}x{c.ic} tile is not "
                                   f"{c.oh}x{c.ow}x{c.oc}")
                if c.op == PpuOp.RESIZE and (c.param("ctm") not in (0, 1, 2) or c.param("oy") + c.oh > c.param(
                        "out_h") or c.param("ox") + c.ow > c.param("out_w") or min(c.param("in_h"), c.param("in_w"))
                        <= 0 or c.ic != c.oc):
                    out.append(f"#{i}: resize parameters do not describe its tiles ({disassemble_command(c)})")
                if c.op == PpuOp.ARGMAX and ((c.ih, c.iw, 1) != (c.oh, c.ow, c.oc) or c.out_dtype < 3):
                    out.append(f"#{i}: argmax of a {c.ih}x{c.iw}x{c.ic} tile must write {c.ih}x{c.iw}x1 int32/int64 "
                               f"indices ({disassemble_command(c)})")
                if c.op == PpuOp.RAW_BINARY and not 0 <= c.param("fn") < len(RAW_FUNCTIONS):
                    out.append(f"#{i}: unknown raw binary function {c.param('fn')}")
                if c.op in (PpuOp.REQUANT, PpuOp.ADD, PpuOp.MUL, PpuOp.RAW_BINARY, PpuOp.PRELU, PpuOp.SQUARED_DIFF,
                            PpuOp.COPY, PpuOp.LUT, PpuOp.SOFTMAX, PpuOp.GATE_ADD) and \
                        (c.ih, c.iw, c.ic) != (c.oh, c.ow, c.oc):
                    out.append(f"#{i}: elementwise PPU op with input {c.ih}x{c.iw}x{c.ic} ≠ output "
                               f"{c.oh}x{c.ow}x{c.oc}")
                if c.op in (PpuOp.MAX_POOL, PpuOp.AVG_POOL):
                    kh, kw, sh, sw, dh, dw = (c.param(k) for k in ("kh", "kw", "sh", "sw", "dh", "dw"))
                    if min(kh, kw, sh, sw, dh, dw) <= 0 or c.ih < (c.oh - 1) * sh + (kh - 1) * dh + 1 or \
                            c.iw < (c.ow - 1) * sw + (kw - 1) * dw + 1:
                        out.append(f"#{i}: pooling window does not fit its input tile")
                    if c.op == PpuOp.AVG_POOL and min(c.param("img_h"), c.param("img_w")) <= 0:
                        out.append(f"#{i}: average pool needs a positive image size")
                if c.op == PpuOp.MEAN and (c.oh, c.ow) != (1, 1):
                    out.append(f"#{i}: mean must reduce to 1x1")
        except (IndexError, ValueError) as e:
            out.append(f"#{i}: malformed command ({e})")
    return out
