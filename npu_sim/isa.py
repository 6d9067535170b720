"""The NPU instruction set: VTA-style decoupled engines linked by dependency tokens (npu-model.md §1.2-1.3, §5.1).

Four engines run their own in-order command queues: DMA-in, the MAC array, the post-processing unit (PPU) and
DMA-out. A program is ONE command stream (like VTA's instruction fetch) whose order is the sequential meaning;
each command goes to its engine's queue. A command pops one token from every engine in its ``wait`` mask and
pushes one token to every engine in its ``signal`` mask. Tokens on an edge (src → dst) are matched by ordinal:
the k-th pop on the edge waits for the k-th push, so a DMA engine with several transfers in flight may complete
out of order without confusing its consumers.

Every command is a frozen dataclass; ``encode``/``decode`` use fixed little-endian struct layouts.
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, fields
from typing import ClassVar

from byoc.errors import NPUError

__all__ = ["Engine", "TileKind", "MacOp", "PpuOp", "Rounding", "DTYPES", "dtype_code", "Load", "Store", "Mac",
           "Ppu", "Command", "COMMAND_TYPES", "encode_command", "decode_command", "disassemble_command",
           "PPU_PARAM_NAMES", "N_PPU_PARAMS", "RAW_FUNCTIONS", "BINARY_OPS", "LUT16_INTERP", "lut_table_bytes",
           "LOAD_PAD", "LOAD_UPSCALE_H", "LOAD_UPSCALE_W", "LOAD_CONTINUE", "LOAD_PAD_BITS", "load_source_window", "BCAST_H", "BCAST_W", "BCAST_C", "BCAST_ALL", "src1_tile_shape"]


class Engine(enum.IntEnum):
    DMA_IN = 0
    MAC = 1
    PPU = 2
    DMA_OUT = 3


ENGINE_NAMES = ("dma_in", "mac", "ppu", "dma_out")


class TileKind(enum.IntEnum):
    IFM = 0
    WEIGHT = 1
    TABLE = 2
    ACC = 3
    OFM = 4


KIND_NAMES = ("ifm", "weight", "table", "acc", "ofm")


class MacOp(enum.IntEnum):
    CONV = 0
    DEPTHWISE = 1
    # A convolution of a layer whose whole OFM is one row of even width under a one-row kernel: the same
    # arithmetic as CONV; Ethos-U then works in 1x4 micro-blocks instead of 2x2 (Vela's GetOfmMicroBlock).
    CONV_ROW = 2


class PpuOp(enum.IntEnum):
    REQUANT = 0      # int32 accumulator (+bias) or integer tile → per-channel MBQM → zp → clamp
    ADD = 1          # TFLite ADD (left-shift-20 scheme)
    MUL = 2          # TFLite MUL
    MAX_POOL = 3
    AVG_POOL = 4
    MEAN = 5         # reduce over the whole tile's H×W
    LUT = 6          # 256-entry table lookup; fn16 = 1 / 2: the int16 sigmoid / tanh activation, no table;
                     # fn16 = 3: an interpolated int16 table (LUT16_INTERP)
    COPY = 7         # copy with clamp (clip, concatenate)
    SOFTMAX = 8      # TFLite's integer softmax along the tile's channels (the tile holds whole rows)
    TRANSPOSE = 9    # the src tile's axes permuted (perm = which src axis each dst axis is)
    RESIZE = 10      # nearest / bilinear resize of a src window to a dst tile (origins in params)
    ARGMAX = 11      # index of the first largest value along the tile's channels (a tile holds whole rows)
    RAW_BINARY = 12  # add / subtract / multiply / maximum / minimum of the raw integers (src1 as ADD's), wrapped
    #                  to the output type: TFLite's unquantized int32 ADD/SUB/MUL and MAXIMUM/MINIMUM
    PRELU = 13       # TFLite PRELU: src1 the alpha tile (broadcast as ADD's), two multipliers by the input's sign
    SQUARED_DIFF = 14  # TFLite int8 SQUARED_DIFFERENCE: left-shift-7 rescales, the difference squared, rescaled
    GATE_ADD = 15    # int16 ADD, then the int16 sigmoid / tanh (fn16, as LUT's) of its clamped sum: an LSTM gate,
    #                  as regor fuses the activation into the gate's Add


class Rounding(enum.IntEnum):
    TFLITE = 0       # double rounding (SRDHM + RDBPOT)
    UPWARD = 1       # single rounding, ties up (TVM)
    TONEAREST = 2    # single rounding, ties away from zero (TVM)
    # float32 output stage (ppu.float_scale): float32(acc − zp) × float32 scale, round half to even — ONNX's
    # requantization as onnxruntime's MLAS computes it; the table's mult field holds the scale's float32 bits
    FLOAT32_HALF_EVEN = 3
    # int16x8 convolutions (LiteRT's int64 MultiplyByQuantizedMultiplier, quant-semantics §1.6): int64
    # accumulator + 40-bit bias (the table's spare byte holds bias bits 32..39, as Ethos-U's 40-bit bias), the
    # table's multiplier cut to Q15 and one rounding, ties up (npu_sim/int16_layers.py)
    TFLITE_INT64 = 4


# IFM2 broadcast flags of an elementwise PPU command (Ethos-U's IFM2_BROADCAST register): each set bit makes
# src1 one element deep along that axis, repeated over the whole tile, so a per-channel vector or a scalar is
# read once per tile instead of once per output element.
BCAST_H = 1
BCAST_W = 2
BCAST_C = 4
BCAST_ALL = BCAST_H | BCAST_W | BCAST_C


def src1_tile_shape(ih: int, iw: int, ic: int, bcast: int) -> tuple[int, int, int]:
    """The (h, w, c) of an elementwise command's src1 tile under its broadcast flags."""
    return (1 if bcast & BCAST_H else ih, 1 if bcast & BCAST_W else iw, 1 if bcast & BCAST_C else ic)


# Load.pad bits: LOAD_PAD, the window may leave the image (pad_value fills it); LOAD_UPSCALE_H / _W, the window is
# in the coordinates of the image upscaled 2x along height / width with pad_value after every source row / column
# (Ethos-U's zero-inserting IFM upscaling, which runs a TRANSPOSE_CONV as a stride-1 convolution); LOAD_CONTINUE,
# a 1-D constant load (weights, tables) whose bytes continue the constant tile ending where it lands (a weight tile
# streamed in pieces)
LOAD_PAD, LOAD_UPSCALE_H, LOAD_UPSCALE_W, LOAD_CONTINUE = 1, 2, 4, 8
LOAD_PAD_BITS = LOAD_PAD | LOAD_UPSCALE_H | LOAD_UPSCALE_W | LOAD_CONTINUE


def load_source_window(cmd) -> tuple[int, int, int, int]:
    """(y0, x0, h, w) of the source image a Load reads: its window itself, or for an upscaled load the source rows
    and columns its in-image even positions hold (h or w may be 0)."""
    y0, x0, h, w = cmd.y0, cmd.x0, cmd.h, cmd.w
    out = []
    for a, n, size, bit in ((y0, h, cmd.img_h, LOAD_UPSCALE_H), (x0, w, cmd.img_w, LOAD_UPSCALE_W)):
        if not cmd.pad & bit:
            out.append((a, n))
            continue
        lo, hi = max(a, 0), min(a + n, 2 * size)
        first, end = -(-lo // 2), -(-hi // 2)
        out.append((first, max(end - first, 0)))
    (sy, sh), (sx, sw) = out
    return sy, sx, sh, sw


DTYPES = ("int8", "uint8", "int16", "int32", "int64")   # int64: ARG_MAX's output only (Vela's exception)
DTYPE_BYTES = (1, 1, 2, 4, 8)


def dtype_code(name: str) -> int:
    if name not in DTYPES:
        raise NPUError(f"dtype {name!r} is not supported by the NPU", hint="supported: " + ", ".join(DTYPES))
    return DTYPES.index(name)


# PPU parameter slots; their meaning per op is given by PPU_PARAM_NAMES (unused slots are 0).
N_PPU_PARAMS = 16
PPU_PARAM_NAMES: dict[PpuOp, tuple[str, ...]] = {
    PpuOp.REQUANT: ("zp_in", "zp_out", "act_min", "act_max", "channel0"),
    # sub: 0 = a + b, 1 = src0 − src1, 2 = src1 − src0 (SUB with its first operand broadcast as src1)
    # in2_area, in2_burst, nhwc (timing, cost.binary_timing): src1's memory area + 1 when Vela charges it once
    # per output element (a broadcast operand of more than one element), its burst bytes; nhwc bit 0: src0 is
    # NHWC, bit 1: the OFM is
    PpuOp.ADD: ("zp_a", "zp_b", "zp_out", "act_min", "act_max", "left_shift", "m_a", "e_a", "m_b", "e_b", "m_out",
                "e_out", "sub", "in2_area", "in2_burst", "nhwc"),
    PpuOp.MUL: ("zp_a", "zp_b", "zp_out", "act_min", "act_max", "m_out", "e_out", "in2_area", "in2_burst", "nhwc"),
    PpuOp.MAX_POOL: ("act_min", "act_max", "kh", "kw", "sh", "sw", "dh", "dw"),
    PpuOp.AVG_POOL: ("act_min", "act_max", "kh", "kw", "sh", "sw", "dh", "dw", "y0", "x0", "img_h", "img_w",
                     "count_include_pad"),
    PpuOp.MEAN: ("zp_in", "zp_out", "act_min", "act_max", "m", "e", "count"),
    # fn16: 0 = an 8-bit table; 1 / 2 = the PPU's int16 sigmoid / tanh (TFLite's interpolated kernel: the input
    # times in_mult, rounded right by in_shift; Vela's LSTM gates) with no table
    # guard: 1 when inputs below guard_min have no reference value (int8 RSQRT of a negative value: LiteRT fails);
    # the simulator refuses them as the CPU build does (the hardware would read the table's entry)
    PpuOp.LUT: ("qmin", "fn16", "in_mult", "in_shift", "guard", "guard_min"),
    PpuOp.COPY: ("act_min", "act_max"),
    # rows, width: of the whole tensor (timing: Vela's sequence and its blocks)
    PpuOp.SOFTMAX: ("multiplier", "left_shift", "diff_min", "rows", "width"),
    PpuOp.TRANSPOSE: ("perm0", "perm1", "perm2"),
    # bilinear: 0 nearest, 1 bilinear; ctm: 0 asymmetric, 1 align_corners, 2 half_pixel; (y0, x0) the src window's
    # origin and (oy, ox) the dst tile's, in image coordinates; channels: the OFM's depth (timing)
    PpuOp.RESIZE: ("bilinear", "ctm", "in_h", "in_w", "out_h", "out_w", "y0", "x0", "oy", "ox", "channels"),
    PpuOp.ARGMAX: ("rows",),   # rows: of the whole tensor (timing)
    # fn: RAW_FUNCTIONS index (sub: src0 − src1, rsub: src1 − src0, the first operand broadcast as src1)
    # in2_area, in2_burst, nhwc as ADD's; in0_area, in0_burst (timing): a constant src0 (the OFM-sized zero
    # of a materialised broadcast, regor ReplaceBroadcastWithAdd) read from its area in its bursts
    PpuOp.RAW_BINARY: ("fn", "in2_area", "in2_burst", "nhwc", "in0_area", "in0_burst"),
    # above_one: some alpha exceeds 1 (timing only: Vela's four-pass sequence instead of MAXIMUM(x, alpha·x))
    PpuOp.PRELU: ("zp_in", "zp_alpha", "zp_out", "act_min", "act_max", "m_id", "shift_id", "m_alpha", "shift_alpha",
                  "above_one"),
    # shifts as QuantizeMultiplier returns them (negative: right)
    PpuOp.SQUARED_DIFF: ("zp_a", "zp_b", "zp_out", "act_min", "act_max", "left_shift", "m_a", "shift_a", "m_b",
                         "shift_b", "m_out", "shift_out"),
    PpuOp.GATE_ADD: ("zp_a", "zp_b", "zp_out", "act_min", "act_max", "left_shift", "m_a", "e_a", "m_b", "e_b",
                     "m_out", "e_out", "fn16", "in_mult", "in_shift"),
}

RAW_FUNCTIONS = ("add", "sub", "rsub", "mul", "max", "min")

# An int16 LUT's fn16: Ethos-U's 16-bit table of 512 32-bit words (base in the low half, slope to the next entry
# in the high half), read by linear interpolation over 128 input steps per word (LiteRT's int16 tables)
LUT16_INTERP = 3


def lut_table_bytes(fn16: int) -> int:
    """Bytes of a LUT command's table: 256 one-byte entries, or 512 words for an interpolated int16 table."""
    return 2048 if fn16 == LUT16_INTERP else 256


# the PPU ops with a second operand (src1)
BINARY_OPS = (PpuOp.ADD, PpuOp.MUL, PpuOp.RAW_BINARY, PpuOp.PRELU, PpuOp.SQUARED_DIFF, PpuOp.GATE_ADD)


PPU_PARAM_INDEX: dict[int, dict[str, int]] = {int(op): {n: i for i, n in enumerate(names)}
                                              for op, names in PPU_PARAM_NAMES.items()}


_PAYLOAD_NAMES: dict[type, tuple[str, ...]] = {}


def _payload(cmd) -> tuple:
    """The command's fields after the header (wait, signal, layer) in declaration order, as the struct FORMAT
    lays them out; a tuple field (PPU parameters) is flattened."""
    names = _PAYLOAD_NAMES.get(type(cmd))
    if names is None:
        names = _PAYLOAD_NAMES[type(cmd)] = tuple(f.name for f in fields(cmd))[3:]
    out: list[int] = []
    for name in names:
        v = getattr(cmd, name)
        if isinstance(v, tuple):
            out.extend(v)
        else:
            out.append(v)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Load:
    """DMA-in: copy an (h, w, c) window at (y0, x0, c0) of an HWC tensor into local SRAM.

    Out-of-image rows/columns (y0 or x0 negative, or past the edge) are filled with ``pad_value``: that is how
    convolution padding is fused into the load. 1-D data (weights, tables) use img_h = img_w = 1.
    """
    OPCODE: ClassVar[int] = 1
    ENGINE: ClassVar[Engine] = Engine.DMA_IN
    FORMAT: ClassVar[str] = "<BBBIHHIhhIHHIBiBI"  # img_c, c0, c are 32-bit: 1-D weights can be long
    wait: int
    signal: int
    layer: int
    kind: int
    area: int
    dtype: int
    base: int
    img_h: int
    img_w: int
    img_c: int
    y0: int
    x0: int
    c0: int
    h: int
    w: int
    c: int
    pad: int          # LOAD_PAD if the window may leave the image (then pad_value fills it); LOAD_UPSCALE_* bits
    pad_value: int
    buf: int
    off: int

    payload = _payload


@dataclass(frozen=True, slots=True)
class Store:
    """DMA-out: copy an (h, w, c) tile from local SRAM to (y0, x0, c0) of an HWC tensor."""
    OPCODE: ClassVar[int] = 2
    ENGINE: ClassVar[Engine] = Engine.DMA_OUT
    FORMAT: ClassVar[str] = "<BBIHHIHHIHHIBI"
    wait: int
    signal: int
    layer: int
    area: int
    dtype: int
    base: int
    img_h: int
    img_w: int
    img_c: int
    y0: int
    x0: int
    c0: int
    h: int
    w: int
    c: int
    buf: int
    off: int

    payload = _payload


@dataclass(frozen=True, slots=True)
class Mac:
    """MAC array: int32 accumulators of a conv/depthwise tile, Σ (x − zp_in)(w − zp_w) over the kernel.

    Weights are packed output-channel-major: conv [oc, kh, kw, ic], depthwise [oc, kh, kw]. For depthwise,
    output channel j of the tile reads IFM tile channel j // dm.

    A convolution may stream its IFM depth in slices (as Ethos-U's SHRAM holds one IFM block depth at a time):
    its weight tile is then ``w_ic`` channels deep per tap ([oc, kh, kw, w_ic]; 0 = ``ic``, no slicing), the
    command's IFM tile holds channels ``ic0 .. ic0 + ic`` of them, and a command with ``ic0 > 0`` adds its sum
    to the accumulator tile already in its acc slot (the slices of one tile run in order, ``ic0 = 0`` first).
    """
    OPCODE: ClassVar[int] = 3
    ENGINE: ClassVar[Engine] = Engine.MAC
    FORMAT: ClassVar[str] = "<BBBBIHHHBIBIHHHBBBBBBiiHHH"
    wait: int
    signal: int
    layer: int
    op: int
    in_dtype: int
    w_dtype: int
    ifm_buf: int
    ifm_off: int
    ih: int
    iw: int
    ic: int
    w_buf: int
    w_off: int
    acc_buf: int
    acc_off: int
    oh: int
    ow: int
    oc: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    zp_in: int
    zp_w: int
    dm: int
    ic0: int = 0
    w_ic: int = 0

    payload = _payload


@dataclass(frozen=True, slots=True)
class Ppu:
    """Post-processing of one tile: src0 (and src1) + table → dst, parameters per ``PPU_PARAM_NAMES``.

    ADD and MUL read src1 as an ``src1_tile_shape(ih, iw, ic, src1_bcast)`` tile broadcast over src0's
    ih×iw×ic (``BCAST_*`` flags; 0 = same shape)."""
    OPCODE: ClassVar[int] = 4
    ENGINE: ClassVar[Engine] = Engine.PPU
    FORMAT: ClassVar[str] = "<BBBBBIBIBBIBIHHHHHH" + "i" * N_PPU_PARAMS
    wait: int
    signal: int
    layer: int
    op: int
    rounding: int
    in_dtype: int
    out_dtype: int
    src0_buf: int
    src0_off: int
    src1_buf: int
    src1_off: int
    src1_bcast: int
    table_buf: int
    table_off: int
    dst_buf: int
    dst_off: int
    ih: int
    iw: int
    ic: int
    oh: int
    ow: int
    oc: int
    params: tuple[int, ...]

    payload = _payload

    def param(self, name: str) -> int:
        return self.params[PPU_PARAM_INDEX[self.op][name]]


# Ppu's scalar fields after the header (the PPU parameters follow them in the encoding)
PPU_SCALAR_FIELDS = len(fields(Ppu)) - 4

Command = Load | Store | Mac | Ppu
COMMAND_TYPES: dict[int, type] = {t.OPCODE: t for t in (Load, Store, Mac, Ppu)}
_HEADER = struct.Struct("<BBBH")  # opcode, wait, signal, layer
_STRUCTS = {op: struct.Struct(t.FORMAT) for op, t in COMMAND_TYPES.items()}


def encode_command(cmd: Command) -> bytes:
    try:
        return _HEADER.pack(cmd.OPCODE, cmd.wait, cmd.signal, cmd.layer) + _STRUCTS[cmd.OPCODE].pack(*cmd.payload())
    except struct.error as e:
        raise NPUError(f"cannot encode {disassemble_command(cmd)}: a field is out of range ({e})",
                       hint="the layer is too large for the command format; tile it smaller") from e


def decode_command(data: bytes | memoryview, pos: int, shared: dict | None = None) -> tuple[Command, int]:
    """Decode the command at byte ``pos``; returns (command, next position). With ``shared`` (a dict kept across
    calls), equal field values and PPU parameter tuples are one object each: a decoded program is mostly
    repeated offsets and sizes, and a fresh int per field would cost a third of its memory."""
    if pos + _HEADER.size > len(data):
        raise NPUError(f"program truncated: command header at byte {pos} needs {_HEADER.size} bytes, "
                       f"{len(data) - pos} left")
    opcode, wait, signal, layer = _HEADER.unpack_from(data, pos)
    cls = COMMAND_TYPES.get(opcode)
    if cls is None:
        raise NPUError(f"unknown opcode {opcode} at byte {pos}",
                       hint="known opcodes: " + ", ".join(f"{k}={t.__name__}" for k, t in COMMAND_TYPES.items()))
    s = _STRUCTS[opcode]
    body = pos + _HEADER.size
    if body + s.size > len(data):
        raise NPUError(f"program truncated: {cls.__name__} at byte {pos} needs {s.size} payload bytes, "
                       f"{len(data) - body} left")
    vals = s.unpack_from(data, body)
    if shared is not None:
        vals = tuple(map(shared.setdefault, vals, vals))
    if cls is Ppu:
        params = vals[PPU_SCALAR_FIELDS:]
        if shared is not None:
            params = shared.setdefault(params, params)
        cmd = Ppu(wait, signal, layer, *vals[:PPU_SCALAR_FIELDS], params=params)
    else:
        cmd = cls(wait, signal, layer, *vals)
    return cmd, body + s.size


def _mask(m: int) -> str:
    return "|".join(ENGINE_NAMES[e] for e in range(4) if m >> e & 1) or "-"


def disassemble_command(cmd: Command) -> str:
    head = f"L{cmd.layer:<3d} {type(cmd).__name__.upper():5s} wait={_mask(cmd.wait)} signal={_mask(cmd.signal)}"
    if isinstance(cmd, Load):
        kind = KIND_NAMES[cmd.kind] if cmd.kind < len(KIND_NAMES) else f"?{cmd.kind}"
        return (f"{head} {kind} area{cmd.area}@{cmd.base:#x} img={cmd.img_h}x{cmd.img_w}x{cmd.img_c} "
                f"win=({cmd.y0},{cmd.x0},{cmd.c0})+{cmd.h}x{cmd.w}x{cmd.c} {_dt(cmd.dtype)}"
                + (f" pad={cmd.pad_value}" if cmd.pad & ~LOAD_CONTINUE else "")
                + "".join(f" up2{a}" for a, bit in (("h", LOAD_UPSCALE_H), ("w", LOAD_UPSCALE_W)) if cmd.pad & bit)
                + (" cont" if cmd.pad & LOAD_CONTINUE else "")
                + f" -> buf{cmd.buf}+{cmd.off:#x}")
    if isinstance(cmd, Store):
        return (f"{head} buf{cmd.buf}+{cmd.off:#x} -> area{cmd.area}@{cmd.base:#x} img={cmd.img_h}x{cmd.img_w}x"
                f"{cmd.img_c} win=({cmd.y0},{cmd.x0},{cmd.c0})+{cmd.h}x{cmd.w}x{cmd.c} {_dt(cmd.dtype)}")
    if isinstance(cmd, Mac):
        op = MacOp(cmd.op).name.lower() if cmd.op in MacOp._value2member_map_ else f"?{cmd.op}"
        return (f"{head} {op} ifm=buf{cmd.ifm_buf}+{cmd.ifm_off:#x}[{cmd.ih}x{cmd.iw}x{cmd.ic}] "
                f"w=buf{cmd.w_buf}+{cmd.w_off:#x} acc=buf{cmd.acc_buf}+{cmd.acc_off:#x}[{cmd.oh}x{cmd.ow}x{cmd.oc}] "
                f"k={cmd.kh}x{cmd.kw} s={cmd.sh}x{cmd.sw} d={cmd.dh}x{cmd.dw} zp_in={cmd.zp_in} zp_w={cmd.zp_w}"
                + (f" dm={cmd.dm}" if cmd.dm != 1 else "")
                + (f" slice={cmd.ic0}+{cmd.ic}/{cmd.w_ic}" if cmd.w_ic else ""))
    op = PpuOp(cmd.op) if cmd.op in PpuOp._value2member_map_ else None
    names = PPU_PARAM_NAMES.get(op, ()) if op is not None else ()
    ps = " ".join(f"{n}={v}" for n, v in zip(names, cmd.params))
    return (f"{head} {op.name.lower() if op is not None else f'?{cmd.op}'} "
            f"src=buf{cmd.src0_buf}+{cmd.src0_off:#x}[{cmd.ih}x{cmd.iw}x{cmd.ic} {_dt(cmd.in_dtype)}]"
            + (f",buf{cmd.src1_buf}+{cmd.src1_off:#x}" + _bcast(cmd) if op in BINARY_OPS else "")
            + (f" table=buf{cmd.table_buf}+{cmd.table_off:#x}" if op in (PpuOp.REQUANT, PpuOp.LUT) else "")
            + f" dst=buf{cmd.dst_buf}+{cmd.dst_off:#x}[{cmd.oh}x{cmd.ow}x{cmd.oc} {_dt(cmd.out_dtype)}]"
            + (f" rounding={Rounding(cmd.rounding).name}" if op is PpuOp.REQUANT and
               cmd.rounding in Rounding._value2member_map_ else "") + (f" {ps}" if ps else ""))


def _bcast(cmd: Ppu) -> str:
    """src1's tile shape and its broadcast axes, when it is broadcast."""
    if not cmd.src1_bcast:
        return ""
    h, w, c = src1_tile_shape(cmd.ih, cmd.iw, cmd.ic, cmd.src1_bcast)
    axes = "".join(a for a, bit in (("h", BCAST_H), ("w", BCAST_W), ("c", BCAST_C)) if cmd.src1_bcast & bit)
    rest = cmd.src1_bcast & ~BCAST_ALL
    return f"[{h}x{w}x{c} bcast={axes}{f'+?{rest:#x}' if rest else ''}]"


def _dt(code: int) -> str:
    return DTYPES[code] if 0 <= code < len(DTYPES) else f"?dtype{code}"


def command_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))
