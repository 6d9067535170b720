"""A defensive reader for ``.tflite`` flatbuffers, over the raw bytes.

The generated ``tflite`` classes trust every offset in the file; a corrupt file makes them raise IndexError or
struct.error, or return garbage. This reader checks every offset, vtable and vector length against the file
before touching it, and turns the model into plain frozen values (``TFLiteModel``). Every failure is a
``ModelError`` naming the table (e.g. "tensor 12") and the file offset.

Costs are linear in the file's tables; constant buffers are zero-copy ``np.frombuffer`` views of the input bytes.
Schema slots follow tensorflow/lite/schema/schema.fbs (the ``tflite`` package is generated from it).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import tflite

from ..errors import ModelError

__all__ = ["TFLiteModel", "TensorInfo", "OperatorInfo", "QuantInfo", "read_model", "BUILTIN_NAMES", "DTYPES",
           "OPTIONS_SPECS", "MAX_RANK", "FILE_IDENTIFIER"]

_HINT = "the file is truncated or corrupt; re-export it from the converter"
MAX_RANK = 16
FILE_IDENTIFIER = b"TFL3"  # schema.fbs: file_identifier "TFL3"
MAX_ELEMENTS = 2**31 - 1  # TFLite sizes tensors with int32 byte counts
# Enum TensorType → dtype names (unsupported ones keep a descriptive name and fail only when used).
DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: "string", 6: "bool", 7: "int16",
          8: "complex64", 9: "int8", 10: "float64", 11: "complex128", 12: "uint64", 13: "resource",
          14: "variant", 15: "uint32", 16: "uint16", 17: "int4", 18: "bfloat16"}
BUILTIN_NAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}

# Builtin options we read: union type name → ((field, kind, default), ...) in schema slot order.
# kinds: b = int8, B = uint8/bool, i = int32, f = float32, v = int32 vector.
OPTIONS_SPECS: dict[str, tuple[tuple[str, str, object], ...]] = {
    "Conv2DOptions": (("padding", "b", 0), ("stride_w", "i", 0), ("stride_h", "i", 0),
                      ("fused_activation_function", "b", 0), ("dilation_w_factor", "i", 1),
                      ("dilation_h_factor", "i", 1), ("quantized_bias_type", "b", 0)),
    "DepthwiseConv2DOptions": (("padding", "b", 0), ("stride_w", "i", 0), ("stride_h", "i", 0),
                               ("depth_multiplier", "i", 0), ("fused_activation_function", "b", 0),
                               ("dilation_w_factor", "i", 1), ("dilation_h_factor", "i", 1)),
    "FullyConnectedOptions": (("fused_activation_function", "b", 0), ("weights_format", "b", 0),
                              ("keep_num_dims", "B", 0), ("asymmetric_quantize_inputs", "B", 0),
                              ("quantized_bias_type", "b", 0)),
    "AddOptions": (("fused_activation_function", "b", 0), ("pot_scale_int16", "B", 1)),
    "SubOptions": (("fused_activation_function", "b", 0), ("pot_scale_int16", "B", 1)),
    "MulOptions": (("fused_activation_function", "b", 0),),
    "Pool2DOptions": (("padding", "b", 0), ("stride_w", "i", 0), ("stride_h", "i", 0), ("filter_width", "i", 0),
                      ("filter_height", "i", 0), ("fused_activation_function", "b", 0)),
    "ReducerOptions": (("keep_dims", "B", 0),),
    "SoftmaxOptions": (("beta", "f", 0.0),),
    "LeakyReluOptions": (("alpha", "f", 0.0),),
    "ReshapeOptions": (("new_shape", "v", None),),
    "SqueezeOptions": (("squeeze_dims", "v", None),),
    "ConcatenationOptions": (("axis", "i", 0), ("fused_activation_function", "b", 0)),
    "SplitOptions": (("num_splits", "i", 0),),
    "StridedSliceOptions": (("begin_mask", "i", 0), ("end_mask", "i", 0), ("ellipsis_mask", "i", 0),
                            ("new_axis_mask", "i", 0), ("shrink_axis_mask", "i", 0), ("offset", "B", 0)),
    "ResizeNearestNeighborOptions": (("align_corners", "B", 0), ("half_pixel_centers", "B", 0)),
    "TransposeConvOptions": (("padding", "b", 0), ("stride_w", "i", 0), ("stride_h", "i", 0),
                             ("fused_activation_function", "b", 0)),
    "SplitVOptions": (("num_splits", "i", 0),),
    "PackOptions": (("values_count", "i", 0), ("axis", "i", 0)),
    "UnpackOptions": (("num", "i", 0), ("axis", "i", 0)),
    "ArgMaxOptions": (("output_type", "b", 0),),
    "ArgMinOptions": (("output_type", "b", 0),),
    "ResizeBilinearOptions": (("new_height", "i", 0), ("new_width", "i", 0), ("align_corners", "B", 0),
                              ("half_pixel_centers", "B", 0)),
    "DepthToSpaceOptions": (("block_size", "i", 0),),
    "SpaceToDepthOptions": (("block_size", "i", 0),),
    "GatherOptions": (("axis", "i", 0), ("batch_dims", "i", 0)),
    "BatchMatMulOptions": (("adj_x", "B", 0), ("adj_y", "B", 0), ("asymmetric_quantize_inputs", "B", 0)),
    "SVDFOptions": (("rank", "i", 0), ("fused_activation_function", "b", 0), ("asymmetric_quantize_inputs", "B", 0)),
    "ShapeOptions": (("out_type", "b", 0),),
}
_OPTION_NAMES = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}
_SCALAR = {"b": ("<b", 1), "B": ("<B", 1), "i": ("<i", 4), "f": ("<f", 4), "I": ("<I", 4), "q": ("<q", 8),
           "Q": ("<Q", 8), "H": ("<H", 2)}


@dataclass(frozen=True)
class QuantInfo:
    """A tensor's quantization table as stored (scales float32, zero points int64)."""
    scale: np.ndarray
    zero_point: np.ndarray
    quantized_dimension: int

    @property
    def per_tensor(self) -> bool:
        return self.scale.size == 1


@dataclass(frozen=True)
class TensorInfo:
    index: int
    name: str | None
    shape: tuple[int, ...]
    dtype: str
    buffer: int
    quant: QuantInfo | None
    is_variable: bool
    has_sparsity: bool
    offset: int  # file offset of the tensor table

    @property
    def label(self) -> str:
        return f"tensor {self.index}" + (f" '{self.name}'" if self.name else "")


@dataclass(frozen=True)
class OperatorInfo:
    index: int
    opcode: str  # builtin name ("CONV_2D"), or "CUSTOM:<code>"
    version: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: dict
    offset: int
    intermediates: tuple[int, ...] = ()  # Operator.intermediates (the integer LSTM's effective scales)
    custom_options: bytes = b""   # a CUSTOM operator's raw options (usually a flexbuffer)

    @property
    def label(self) -> str:
        return f"operator {self.index} ({self.opcode})"


@dataclass(frozen=True)
class TFLiteModel:
    version: int
    tensors: tuple[TensorInfo, ...]
    operators: tuple[OperatorInfo, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    buffers: tuple[tuple[int, int], ...]  # (file offset, byte length) of each buffer's data
    data: bytes
    description: str | None
    num_subgraphs: int

    def buffer_bytes(self, tensor: TensorInfo) -> tuple[int, int]:
        return self.buffers[tensor.buffer]

    def constant(self, tensor: TensorInfo) -> np.ndarray | None:
        """The constant value of ``tensor`` (a read-only view of the file), or None if it has no data."""
        off, length = self.buffers[tensor.buffer]
        if length == 0:
            return None
        return np.frombuffer(self.data, np.dtype(tensor.dtype).newbyteorder("<"), count=_count(tensor.shape),
                             offset=off).reshape(tensor.shape)


def _count(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


class _Reader:
    """Bounds-checked primitive reads over the file bytes."""

    def __init__(self, data: bytes):
        self.data = data
        self.n = len(data)

    def fail(self, what: str, problem: str, offset: int | None) -> ModelError:
        where = f" at file offset {offset}" if offset is not None else ""
        return ModelError(f"TFLite model: {what}: {problem}{where}", hint=_HINT)

    def scalar(self, kind: str, pos: int, what: str):
        fmt, size = _SCALAR[kind]
        if pos < 0 or pos + size > self.n:
            raise self.fail(what, f"{size}-byte value out of the file ({self.n} bytes)", pos)
        return struct.unpack_from(fmt, self.data, pos)[0]


class _Table:
    __slots__ = ("r", "pos", "vt", "vt_len", "tbl_len", "what")

    def __init__(self, r: _Reader, pos: int, what: str):
        self.r, self.pos, self.what = r, pos, what
        soff = r.scalar("i", pos, what)
        vt = pos - soff
        if vt < 0 or vt + 4 > r.n:
            raise r.fail(what, f"vtable offset {vt} out of range", pos)
        self.vt = vt
        self.vt_len = r.scalar("H", vt, what)
        self.tbl_len = r.scalar("H", vt + 2, what)
        if self.vt_len < 4 or self.vt_len % 2 or vt + self.vt_len > r.n:
            raise r.fail(what, f"bad vtable size {self.vt_len}", vt)
        if self.tbl_len < 4 or pos + self.tbl_len > r.n:
            raise r.fail(what, f"table size {self.tbl_len} runs past the end of the file", pos)

    def _field(self, slot: int, size: int) -> int | None:
        o = 4 + 2 * slot
        if o + 2 > self.vt_len:
            return None
        off = self.r.scalar("H", self.vt + o, self.what)
        if off == 0:
            return None
        if off + size > self.tbl_len:
            raise self.r.fail(self.what, f"field {slot} lies outside its table", self.pos + off)
        return self.pos + off

    def scalar(self, slot: int, kind: str, default):
        p = self._field(slot, _SCALAR[kind][1])
        return default if p is None else self.r.scalar(kind, p, self.what)

    def _target(self, slot: int) -> int | None:
        p = self._field(slot, 4)
        if p is None:
            return None
        t = p + self.r.scalar("I", p, self.what)
        if t + 4 > self.r.n:
            raise self.r.fail(self.what, f"field {slot} points outside the file", p)
        return t

    def table(self, slot: int, what: str) -> "_Table | None":
        t = self._target(slot)
        return None if t is None else _Table(self.r, t, what)

    def vector_span(self, slot: int, elem_size: int, what: str) -> tuple[int, int] | None:
        """(data offset, element count) of a vector field, checked against the file length."""
        t = self._target(slot)
        if t is None:
            return None
        count = self.r.scalar("I", t, what)
        if count * elem_size > self.r.n - t - 4:
            raise self.r.fail(what, f"vector of {count} elements runs past the end of the file", t)
        return t + 4, count

    def vector(self, slot: int, dtype: str, what: str) -> np.ndarray | None:
        dt = np.dtype(dtype).newbyteorder("<")
        span = self.vector_span(slot, dt.itemsize, what)
        if span is None:
            return None
        return np.frombuffer(self.r.data, dt, count=span[1], offset=span[0])

    def tables(self, slot: int, what: str) -> list["_Table"]:
        span = self.vector_span(slot, 4, what)
        if span is None:
            return []
        start, count = span
        rel = np.frombuffer(self.r.data, "<u4", count=count, offset=start).astype(np.int64)
        return [_Table(self.r, start + 4 * i + int(rel[i]), f"{what} {i}") for i in range(count)]

    def string(self, slot: int, what: str) -> str | None:
        span = self.vector_span(slot, 1, what)
        if span is None:
            return None
        start, count = span
        return self.r.data[start:start + count].decode("utf-8", errors="replace")


def read_model(data: bytes) -> TFLiteModel:
    """Parse and validate the structure of a ``.tflite`` file (first subgraph)."""
    if not isinstance(data, bytes):
        data = bytes(data)
    r = _Reader(data)
    if r.n < 8:
        raise ModelError(f"TFLite model: file of {r.n} bytes is too short to be a flatbuffer", hint=_HINT)
    if data[4:8] != FILE_IDENTIFIER:  # LiteRT's verifier refuses such files too
        raise ModelError(f"TFLite model: file identifier {bytes(data[4:8])!r} at offset 4, expected "
                         f"{FILE_IDENTIFIER!r}", hint="is this really a .tflite file? " + _HINT)
    root = r.scalar("I", 0, "model root")
    if root + 4 > r.n:
        raise ModelError(f"TFLite model: root table offset {root} is outside the file ({r.n} bytes)",
                         hint="is this really a .tflite file? " + _HINT)
    model = _Table(r, root, "model")
    version = model.scalar(0, "I", 0)
    if version != 3:
        raise ModelError(f"TFLite model: schema version {version}, expected 3",
                         hint="only schema version 3 files (every converter since TF 1.x) are supported")
    opcodes = [_read_opcode(t, i) for i, t in enumerate(model.tables(1, "operator code"))]
    subgraphs = model.tables(2, "subgraph")
    if not subgraphs:
        raise ModelError("TFLite model: the file has no subgraph", hint=_HINT)
    buffers = []
    for i, bt in enumerate(model.tables(4, "buffer")):
        buffers.append(_read_buffer(r, bt, i))
    description = model.string(3, "model description")
    sg = subgraphs[0]
    tensors = tuple(_read_tensor(t, i, len(buffers)) for i, t in enumerate(sg.tables(0, "tensor")))
    nt = len(tensors)
    inputs = _index_vector(sg, 1, "subgraph inputs", nt)
    outputs = _index_vector(sg, 2, "subgraph outputs", nt)
    operators = tuple(_read_operator(t, i, opcodes, nt) for i, t in enumerate(sg.tables(3, "operator")))
    for t in tensors:
        _check_buffer_size(t, buffers[t.buffer])
    return TFLiteModel(version, tensors, operators, inputs, outputs, tuple(buffers), data, description,
                       len(subgraphs))


def _index_vector(table: _Table, slot: int, what: str, num_tensors: int, allow_optional: bool = False
                  ) -> tuple[int, ...]:
    vec = table.vector(slot, "int32", what)
    if vec is None:
        return ()
    bad = (vec >= num_tensors) | (vec < (-1 if allow_optional else 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise ModelError(f"TFLite model: {table.what}: {what} entry {i} is tensor index {int(vec[i])}, but the "
                         f"subgraph has {num_tensors} tensors (file offset {table.pos})", hint=_HINT)
    return tuple(int(v) for v in vec)


def _read_opcode(t: _Table, i: int) -> tuple[str, int]:
    deprecated = t.scalar(0, "b", 0)
    code = max(t.scalar(3, "i", 0), deprecated)  # TFLite's GetBuiltinCode
    version = t.scalar(2, "i", 1)
    if code == tflite.BuiltinOperator.CUSTOM:
        return "CUSTOM:" + (t.string(1, f"operator code {i} custom name") or "?"), version
    name = BUILTIN_NAMES.get(code)
    if name is None:
        name = f"UNKNOWN_BUILTIN_{code}"
    return name, version


def _read_buffer(r: _Reader, t: _Table, i: int) -> tuple[int, int]:
    span = t.vector_span(0, 1, f"buffer {i} data")
    if span is not None and span[1]:
        return span
    offset = t.scalar(1, "Q", 0)
    size = t.scalar(2, "Q", 0)
    if offset > 1:  # external buffer data stored after the flatbuffer (large models)
        if offset + size > r.n:
            raise r.fail(f"buffer {i}", f"external data [{offset}, {offset + size}) lies outside the file", t.pos)
        return int(offset), int(size)
    return (0, 0)


def _read_tensor(t: _Table, i: int, num_buffers: int) -> TensorInfo:
    what = f"tensor {i}"
    shape_vec = t.vector(0, "int32", what + " shape")
    shape = () if shape_vec is None else tuple(int(d) for d in shape_vec)
    name = t.string(3, what + " name")
    label = what + (f" '{name}'" if name else "")
    if len(shape) > MAX_RANK:
        raise ModelError(f"TFLite model: {label} has rank {len(shape)}; at most {MAX_RANK} is supported "
                         f"(file offset {t.pos})", hint=_HINT)
    if any(d < 0 for d in shape):
        raise ModelError(f"TFLite model: {label} has a negative dimension in shape {list(shape)} "
                         f"(file offset {t.pos})", hint="dynamic shapes are stored in shape_signature; the shape "
                         "itself must be static")
    if _count(shape) > MAX_ELEMENTS:
        raise ModelError(f"TFLite model: {label} has shape {list(shape)}: {_count(shape)} elements is more than "
                         f"the {MAX_ELEMENTS} a TFLite tensor can hold (file offset {t.pos})", hint=_HINT)
    type_code = t.scalar(1, "b", 0)
    dtype = DTYPES.get(type_code, f"unknown_type_{type_code}")
    buffer = t.scalar(2, "I", 0)
    if buffer >= max(num_buffers, 1) and not (buffer == 0 and num_buffers == 0):
        raise ModelError(f"TFLite model: {label} uses buffer {buffer}, but the model has {num_buffers} buffers "
                         f"(file offset {t.pos})", hint=_HINT)
    quant = None
    qt = t.table(4, what + " quantization")
    if qt is not None:
        scale = qt.vector(2, "float32", what + " scales")
        zp = qt.vector(3, "int64", what + " zero points")
        if scale is not None and scale.size:
            if zp is None or zp.size == 0:
                zp = np.zeros(scale.size, np.int64)
            if zp.size != scale.size:
                raise ModelError(f"TFLite model: {label} has {scale.size} scales but {zp.size} zero points "
                                 f"(file offset {qt.pos})", hint=_HINT)
            quant = QuantInfo(scale, zp, int(qt.scalar(6, "i", 0)))
    has_sparsity = t.table(6, what + " sparsity") is not None
    return TensorInfo(i, name, shape, dtype, buffer, quant, bool(t.scalar(5, "B", 0)), has_sparsity, t.pos)


def _check_buffer_size(t: TensorInfo, buf: tuple[int, int]) -> None:
    length = buf[1]
    if length == 0:
        return
    if t.dtype not in ("float32", "float16", "int32", "uint8", "int64", "bool", "int16", "int8", "float64"):
        raise ModelError(f"TFLite model: {t.label} is a constant of unsupported type {t.dtype} "
                         f"(file offset {t.offset})")
    expected = _count(t.shape) * np.dtype(t.dtype).itemsize
    if expected != length:
        raise ModelError(f"TFLite model: {t.label} has shape {list(t.shape)} ({t.dtype}, {expected} bytes) but "
                         f"its buffer {t.buffer} holds {length} bytes (file offset {buf[0]})", hint=_HINT)


def _read_operator(t: _Table, i: int, opcodes: list[tuple[str, int]], num_tensors: int) -> OperatorInfo:
    what = f"operator {i}"
    idx = t.scalar(0, "I", 0)
    if idx >= len(opcodes):
        raise ModelError(f"TFLite model: {what} uses operator code {idx}, but the model has {len(opcodes)} "
                         f"(file offset {t.pos})", hint=_HINT)
    opcode, version = opcodes[idx]
    inputs = _index_vector(t, 1, "inputs", num_tensors, allow_optional=True)
    outputs = _index_vector(t, 2, "outputs", num_tensors)
    options = _read_options(t, what + f" ({opcode})")
    intermediates = _index_vector(t, 8, "intermediates", num_tensors)
    custom = b""
    span = t.vector_span(5, 1, what + " custom_options") if opcode.startswith("CUSTOM:") else None
    if span is not None:
        custom = bytes(t.r.data[span[0]:span[0] + span[1]])
    return OperatorInfo(i, opcode, version, inputs, outputs, options, t.pos, intermediates, custom)


def _read_options(t: _Table, what: str) -> dict:
    type_code = t.scalar(3, "B", 0)
    if type_code == 0:
        return {}
    name = _OPTION_NAMES.get(type_code, f"options type {type_code}")
    spec = OPTIONS_SPECS.get(name)
    if spec is None:
        return {"__type__": name}
    ot = t.table(4, what + " " + name)
    out: dict = {"__type__": name}
    for slot, (field, kind, default) in enumerate(spec):
        if ot is None:
            out[field] = default
        elif kind == "v":
            vec = ot.vector(slot, "int32", f"{what} {name}.{field}")
            out[field] = None if vec is None else tuple(int(v) for v in vec)
        else:
            out[field] = ot.scalar(slot, kind, default)
    return out
OPTIONS_SPECS.update({"LogSoftmaxOptions": (), "SquaredDifferenceOptions": ()})  # empty tables: no fields
OPTIONS_SPECS.update({"MirrorPadOptions": (("mode", "b", 0),), "TileOptions": (), "BroadcastToOptions": (),
                      "CastOptions": (("in_data_type", "b", 0), ("out_data_type", "b", 0)), "AbsOptions": (),
                      "NegOptions": (), "EqualOptions": (), "NotEqualOptions": (), "LessOptions": (),
                      "LessEqualOptions": (), "GreaterOptions": (), "GreaterEqualOptions": (), "SelectV2Options": (),
                      "GatherNdOptions": ()})  # MIRROR_PAD .. GATHER_ND
OPTIONS_SPECS.update({"DivOptions": (("fused_activation_function", "b", 0),)})
OPTIONS_SPECS.update({"UnidirectionalSequenceLSTMOptions": (
    ("fused_activation_function", "b", 0), ("cell_clip", "f", 0.0), ("proj_clip", "f", 0.0), ("time_major", "B", 0),
    ("asymmetric_quantize_inputs", "B", 0), ("diagonal_recurrent_tensors", "B", 0))})
