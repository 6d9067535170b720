"""Lowering a partitioned ``Compiler="npu"`` function to NPU layer descriptions.

The function body is a dataflow graph of calls to composite function literals (``Composite="npu.<name>"``, bodies
as in docs/architecture.md) and a few cheap bare ops (reshape/squeeze/expand_dims become aliases; clip and
qnn.requantize become PPU layers; strided_slice/split/nn.pad/nn.depth_to_space become copies, lower_move.py;
transpose and image.resize2d, and the softmax layer kind, lower_vela_ops.py). Every unsupported construct is collected and reported at once as an
``NPUError``: never a silent wrong result.

Integer parameters come from the shared functions in ``byoc.quant.params`` (the same ones the interpreter uses).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from byoc.errors import ByocError, NPUError
from byoc.ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from byoc.ir.traversal import post_order
from byoc.ir.types import TensorType
from byoc.ops.kernels import kernel_to_hwio
from byoc.ops.qnn_elemwise import add_left_shift
from byoc.quant import params as qp

from .cost import deepened_shape
from .int16_layers import check_int16x8, int16x8_rounding
from .isa import BCAST_ALL, BCAST_C, BCAST_H, BCAST_W, Rounding

__all__ = ["TensorInfo", "ConvLayer", "PpuLayer", "Graph", "lower_function", "concat_origins"]


@dataclass(frozen=True, eq=False)
class TensorInfo:
    """A tensor in NPU memory, viewed as HWC (batch 1; 2-D [B, K] is viewed as B×1×K)."""
    id: int
    name: str
    shape: tuple[int, ...]            # the IR shape
    hwc: tuple[int, int, int]
    dtype: str
    data: np.ndarray | None = None    # constants only
    alias_of: int | None = None       # reshape views share their source's memory
    # a window of another tensor, read in place: (that tensor, origin (y, x, c) in its height×width×channels view)
    window: tuple[int, tuple[int, int, int]] | None = None
    # a channel window of ``alias_of`` (its whole height and width) from this channel on: a strided slice or split
    # piece its readers load in place, as regor reads a slice through its IFM's offset (no copy)
    c_offset: int | None = None
    # the block of ``alias_of`` at this (y, x, c) that a concatenation input's producer writes straight into
    # (regor MoveConcatSliceToProducer): written only, by that one layer
    origin: tuple[int, int, int] | None = None


@dataclass(frozen=True, eq=False)
class ConvLayer:
    """conv / depthwise / dense: MAC array then PPU requantization."""
    name: str
    composite: str
    kind: str                         # "conv" | "depthwise" | "dense"
    ifm: int
    ofm: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right
    pad_value: int
    zp_in: int
    zp_w: int
    dm: int                           # depth multiplier (depthwise)
    weights: np.ndarray               # packed output-channel-major: [oc, kh, kw, ic] or [oc, kh, kw]
    bias: np.ndarray                  # int32 [oc]
    multiplier: np.ndarray            # int32 [oc]
    shift: np.ndarray                 # [oc]
    zp_rq: int                        # requantize input zero point
    zp_out: int
    act_min: int
    act_max: int
    rounding: str
    out_dtype: str
    macs: int = 0
    # TRANSPOSE_CONV: the IFM is read upscaled (2, 2) / (2, 1) / (1, 2) with the input zero point inserted after
    # every source row / column (Ethos-U's IFM upscaling), and convolved with stride 1 (lower_vela_ops.py)
    upscale: tuple[int, int] = (1, 1)


@dataclass(frozen=True, eq=False)
class PpuLayer:
    """A layer that runs on the PPU only: add, mul, pools, mean, LUT, requantize, clip/copy (concat pieces)."""
    name: str
    composite: str
    op: str                           # "add" | "mul" | "max_pool" | "avg_pool" | "mean" | "lut" | "requant" | "copy"
    inputs: tuple[int, ...]
    ofm: int
    params: dict[str, Any] = field(default_factory=dict)
    table: np.ndarray | None = None   # LUT (256 entries) or per-channel requant tables
    # (y, x, c) where this layer's input-shaped block lands in a larger OFM (a concatenate piece); None: the
    # layer writes its whole OFM
    out_origin: tuple[int, int, int] | None = None
    # a copy of a window: where it starts in the input (negative: padding) and its (h, w, c) (lower_move)
    in_origin: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    macs: int = 0


@dataclass(frozen=True, eq=False)
class Graph:
    name: str
    tensors: tuple[TensorInfo, ...]
    layers: tuple[Any, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


def _vec(c: np.ndarray) -> np.ndarray:
    return np.asarray(c).reshape(-1)


def _scalar_int(c: np.ndarray, what: str, where: str) -> int:
    v = _vec(c)
    if v.size == 0 or np.any(v != v[0]):
        raise NPUError(f"{where}: {what} must be a single value, found {v.size} different values",
                       hint="the NPU supports per-tensor zero points only")
    return int(v[0])


def _hwc(shape: tuple[int, ...], where: str) -> tuple[int, int, int]:
    if len(shape) == 4:
        # Batches stack along the rows: exact for elementwise layers; spatial layers require batch 1.
        return (shape[0] * shape[1], shape[2], shape[3])
    if len(shape) == 3:
        return (shape[0], shape[1], shape[2])
    if len(shape) == 2:
        return (shape[0], 1, shape[1])
    if len(shape) == 1:
        return (1, 1, shape[0])
    if len(shape) == 0:
        return (1, 1, 1)
    raise NPUError(f"{where}: rank-{len(shape)} tensors are not supported (shape {shape})")


def _tensor_type(e: Expr) -> TensorType:
    t = e.checked_type
    if not isinstance(t, TensorType):
        raise NPUError(f"expected a tensor, found {t}")
    return t


class _Lowerer:
    def __init__(self, func: Function, name: str, kinds: dict[str, str] | None = None):
        self.func = func
        self.name = name
        self.kinds = kinds                 # composite name → layer kind (another target's lowering map)
        self.tensors: list[TensorInfo] = []
        self.layers: list[Any] = []
        self.value: dict[int, int] = {}    # id(expr) → tensor id
        self.tuple_values: dict[int, list[int]] = {}  # id(tuple-valued call, e.g. split) → field tensor ids
        self.problems: list[str] = []
        self.window_copies: dict[int, int] = {}   # channel window → its copy (``contiguous``)
        self.uses: dict[int, int] = {}            # id(expr) → how many calls / tuples / outputs read it

    # -------------------------------------------------------------------------------------------- tensors
    def new_tensor(self, name: str, t: TensorType, data: np.ndarray | None = None,
                   alias_of: int | None = None) -> int:
        tid = len(self.tensors)
        self.tensors.append(TensorInfo(tid, name, tuple(t.shape), _hwc(tuple(t.shape), name), t.dtype, data,
                                       alias_of))
        return tid

    def tensor_of(self, e: Expr, where: str) -> int:
        if id(e) in self.value:
            return self.value[id(e)]
        if isinstance(e, Constant):
            tid = self.new_tensor(f"const{len(self.tensors)}", e.type, np.ascontiguousarray(e.data))
            self.value[id(e)] = tid
            return tid
        raise NPUError(f"{where}: operand {type(e).__name__} is not an NPU tensor")

    # ------------------------------------------------------------------------------------------- driver
    def run(self) -> Graph:
        inputs = []
        for p in self.func.params:
            if not isinstance(p.checked_type, TensorType):
                self.problems.append(f"parameter %{p.name_hint}: tuple-typed parameters are not supported")
                continue
            try:
                tid = self.new_tensor(p.name_hint, p.checked_type)
            except NPUError as e:
                self.problems.append(e.message)
                continue
            self.value[id(p)] = tid
            inputs.append(tid)
        order = post_order(self.func.body, enter_functions=False)
        for node in order:
            reads = node.args if isinstance(node, Call) else node.fields if isinstance(node, Tuple) else \
                (node.tuple_value,) if isinstance(node, TupleGetItem) else ()
            for a in reads:
                self.uses[id(a)] = self.uses.get(id(a), 0) + 1
        for o in (self.func.body.fields if isinstance(self.func.body, Tuple) else (self.func.body,)):
            self.uses[id(o)] = self.uses.get(id(o), 0) + 1
        for node in order:
            if isinstance(node, Call):
                try:
                    self.lower_call(node)
                except NPUError as e:
                    self.problems.append(e.message)
                except ByocError as e:
                    self.problems.append(f"{_describe(node)}: {e.message}")
            elif isinstance(node, TupleGetItem) and id(node.tuple_value) in self.tuple_values:
                self.value[id(node)] = self.tuple_values[id(node.tuple_value)][node.index]
            elif not isinstance(node, (Var, Constant, Function, Tuple, Op)):
                self.problems.append(f"{type(node).__name__} nodes are not supported in an NPU function")
        body = self.func.body
        outs = list(body.fields) if isinstance(body, Tuple) else [body]
        outputs = []
        for o in outs:
            if id(o) in self.tuple_values:  # a split's tuple returned as it is
                outputs.extend(self.tuple_values[id(o)])
            elif id(o) in self.value:
                outputs.append(self.value[id(o)])
            elif isinstance(o, (Var, Constant)):
                self.problems.append("an NPU function output must be computed by a layer, found a "
                                     f"{type(o).__name__}")
            elif not self.problems:
                self.problems.append(f"output {_describe(o)} is not produced by a supported layer")
        outputs = [self.copy_if_input_view(self.contiguous(tid), inputs) for tid in outputs]
        self.read_slices_in_place(outputs)
        self.fuse_gate_activations(outputs)
        if self.problems:
            raise NPUError(f"NPU compiler cannot build {self.name!r}: {len(self.problems)} unsupported "
                           f"construct(s)", notes=tuple("  - " + p for p in self.problems),
                           hint="leave these ops to the CPU (see patterns/npu.py) or rewrite them")
        return Graph(self.name, tuple(self.tensors), tuple(self.layers), tuple(inputs), tuple(outputs))

    def lower_call(self, call: Call) -> None:
        if isinstance(call.op, Function):
            comp = call.op.attrs.get("Composite")
            if self.kinds is not None:
                self.lower_mapped(call, comp)
                return
            if not isinstance(comp, str) or not comp.startswith("npu."):
                raise NPUError(f"call to a function literal without an npu Composite attribute ({comp!r})",
                               hint="the NPU compiler takes composites named npu.<pattern>")
            handler = _COMPOSITES.get(comp)
            if handler is None:
                raise NPUError(f"composite {comp!r} is not supported by the NPU compiler",
                               hint="supported: " + ", ".join(sorted(_COMPOSITES)))
            body = _Body(call, self)
            handler(self, body, comp)
            return
        if isinstance(call.op, Op):
            handler = _BARE_OPS.get(call.op.name)
            if handler is None:
                raise NPUError(f"bare op {call.op.name} is not supported on the NPU",
                               hint="supported bare ops: " + ", ".join(sorted(_BARE_OPS)))
            handler(self, call)
            return
        raise NPUError(f"{_describe(call)}: calls to {type(call.op).__name__} are not supported")

    def lower_mapped(self, call: Call, comp) -> None:
        """A composite of another target: lowered as the layer kind its lowering map gives it; the layers keep
        the target's composite name (profiles and traces show it)."""
        from .layer_kinds import LAYER_KINDS
        kind = self.kinds.get(comp) if isinstance(comp, str) else None  # type: ignore[union-attr]
        if kind is None:
            raise NPUError(f"composite {comp!r} has no layer kind in the target's lowering map",
                           hint="map it to one of: " + ", ".join(LAYER_KINDS))
        lowering = LAYER_KINDS[kind].lowering
        first = len(self.layers)
        try:
            (_COMPOSITES.get(lowering) or _KIND_ONLY[lowering])(self, _Body(call, self), lowering)
        except NPUError as e:
            raise NPUError(f"{e.message} (lowered as layer kind {kind!r}, whose body is {LAYER_KINDS[kind].body})",
                           hint=e.hint) from None
        self.layers[first:] = [dataclasses.replace(x, composite=comp) for x in self.layers[first:]]

    def copy_if_input_view(self, tid: int, inputs: list[int]) -> int:
        """An output that is only a view (reshape/squeeze) of an input has no memory of its own: the partition
        would alias its caller's buffer. Give it one with a PPU copy layer, like Vela's memcpy for a
        reshape-only subgraph."""
        t = self.tensors[tid]
        root = t.alias_of if t.alias_of is not None else tid
        if root not in inputs:
            return tid
        if t.dtype not in ("int8", "uint8", "int16", "int32"):
            self.problems.append(f"output {t.name!r} is a view of an input of type {t.dtype}; the NPU copies "
                                 f"8/16/32-bit integer tensors only")
            return tid
        info = np.iinfo(t.dtype)
        out = self.new_tensor(f"{t.name}.copy", TensorType(t.shape, t.dtype))
        self.layers.append(PpuLayer(f"{t.name}.copy", "copy", "copy", (tid,), out,
                                    dict(act_min=int(info.min), act_max=int(info.max))))
        return out

    def readers_and_views(self) -> tuple[dict[int, list], set[int]]:
        """The layers reading each tensor (in order), and the tensors some view aliases: what a pass that removes
        or merges layers must check (taken afresh, since each such pass changes the layers)."""
        readers: dict[int, list] = {}
        for x in self.layers:
            for tid in ((x.ifm,) if isinstance(x, ConvLayer) else x.inputs):
                readers.setdefault(tid, []).append(x)
        return readers, {t.alias_of for t in self.tensors if t.alias_of is not None}

    def read_slices_in_place(self, outputs: list[int]) -> None:
        """A slice read only by fully connected layers is no copy: they read its window of the sliced tensor in
        place (regor ``MoveSplitSliceToConsumer`` gives the consumer the slice's read offset; an unrolled LSTM's
        per-step feature rows). A fully connected layer never pads, so its reads stay inside the window."""
        readers, viewed = self.readers_and_views()
        keep = []
        for x in self.layers:
            if (isinstance(x, PpuLayer) and x.composite == "strided_slice" and x.op == "copy"
                    and x.in_origin is not None and x.out_origin is None and x.ofm not in outputs
                    and x.ofm not in viewed and readers.get(x.ofm)
                    and all(isinstance(r, ConvLayer) and r.kind == "dense" for r in readers[x.ofm])):
                src = self.tensors[x.inputs[0]]
                if src.c_offset is not None or src.origin is not None:   # a window of a window: keep the copy
                    keep.append(x)
                    continue
                root = src.alias_of if src.alias_of is not None else src.id
                self.tensors[x.ofm] = dataclasses.replace(self.tensors[x.ofm], alias_of=root,
                                                          window=(src.id, x.in_origin))
                continue
            keep.append(x)
        self.layers = keep

    def fuse_gate_activations(self, outputs: list[int]) -> None:
        """An LSTM gate, the int16 add of two fully connected layers' outputs whose sum only an int16 sigmoid /
        tanh reads, is one layer, the activation fused into the add (the PPU's GATE_ADD), as regor's LSTM lowering
        fuses the gate activation into the gate's Add (not the cell state's tanh: that Add writes the state)."""
        readers, viewed = self.readers_and_views()
        fc_out = {x.ofm for x in self.layers if isinstance(x, ConvLayer) and x.kind == "dense"}
        fused: dict[int, PpuLayer] = {}   # id(activation layer) → its fused add
        dropped: set[int] = set()
        for a in self.layers:
            if not (isinstance(a, PpuLayer) and a.op == "add" and len(a.inputs) == 2 and set(a.inputs) <= fc_out
                    and a.out_origin is None
                    and a.in_origin is None and not a.params.get("bcast") and not a.params.get("sub")
                    and a.params.get("rounding", "TFLITE") == "TFLITE" and self.tensors[a.ofm].dtype == "int16"
                    and a.ofm not in outputs and a.ofm not in viewed and len(readers.get(a.ofm, ())) == 1):
                continue
            b = readers[a.ofm][0]
            if not (isinstance(b, PpuLayer) and b.op == "lut" and b.params.get("fn16") in (1, 2) and b.inputs == (a.ofm,)
                    and b.out_origin is None and b.in_origin is None):
                continue
            params = dict(a.params, **{k: b.params[k] for k in ("fn16", "in_mult", "in_shift")})
            fused[id(b)] = dataclasses.replace(a, ofm=b.ofm, params=params)
            dropped.add(id(a))
        self.layers = [fused.get(id(x), x) for x in self.layers if id(x) not in dropped]

    def window(self, src: int, name: str, t: TensorType, c0: int) -> int:
        """A channel window of ``src`` (its whole height and width, ``t``'s channels from ``c0``): no layer."""
        base = self.tensors[src]
        if base.c_offset is not None:
            c0 += base.c_offset
        root = base.alias_of if base.alias_of is not None else src
        tid = len(self.tensors)
        self.tensors.append(TensorInfo(tid, name, tuple(t.shape), _hwc(tuple(t.shape), name), t.dtype, None, root,
                                       c_offset=c0))
        return tid

    def contiguous(self, tid: int) -> int:
        """``tid`` itself, or for a channel window its copy (one COPY layer, made once): what aliases, outputs and
        other whole-memory uses need."""
        t = self.tensors[tid]
        if t.c_offset is None:
            return tid
        if tid in self.window_copies:
            return self.window_copies[tid]
        info = np.iinfo(t.dtype)
        out = self.new_tensor(f"{t.name}.copy", TensorType(t.shape, t.dtype))
        self.layers.append(PpuLayer(t.name, "copy", "copy", (t.alias_of,), out,
                                    dict(act_min=int(info.min), act_max=int(info.max)),
                                    in_origin=(0, 0, t.c_offset), block=t.hwc))
        self.window_copies[tid] = out
        return out

    def view_as(self, tid: int, shape: tuple[int, ...]) -> int:
        """``tid`` seen with another shape of the same size (a memory alias, like reshape)."""
        base = self.tensors[tid]
        if tuple(base.shape) == tuple(shape):
            return tid
        tid = self.contiguous(tid)
        base = self.tensors[tid]
        root = base.alias_of if base.alias_of is not None else tid
        return self.new_tensor(f"{base.name}.view", TensorType(tuple(shape), base.dtype), base.data, alias_of=root)

    def out_tensor(self, call: Call, name: str) -> int:
        tid = self.new_tensor(name, _tensor_type(call))
        self.value[id(call)] = tid
        return tid


def _describe(node: Expr) -> str:
    if isinstance(node, Call):
        if isinstance(node.op, Op):
            return node.op.name
        if isinstance(node.op, Function):
            return str(node.op.attrs.get("Composite", "fn"))
    return type(node).__name__


class _Body:
    """A composite body seen as a chain of op calls, with operands resolved through the call site."""

    def __init__(self, call: Call, low: _Lowerer):
        self.call = call
        self.low = low
        fn: Function = call.op  # type: ignore[assignment]
        self.fn = fn
        self.binding = {id(p): a for p, a in zip(fn.params, call.args)}
        self.comp = str(fn.attrs.get("Composite"))
        span = getattr(call, "span", None)
        self.name = span.source if span is not None else f"{self.comp}_{len(low.layers)}"

    def chain(self) -> list[Call]:
        """Op calls from the innermost (reading composite parameters) to the root, following argument 0."""
        out = []
        e = self.fn.body
        while isinstance(e, Call) and isinstance(e.op, Op):
            out.append(e)
            if not e.args:
                break
            e = e.args[0]
        out.reverse()
        return out

    def const(self, e: Expr, what: str) -> np.ndarray:
        if isinstance(e, Var) and id(e) in self.binding:
            e = self.binding[id(e)]
        if isinstance(e, Constant):
            return e.data
        raise NPUError(f"{self.comp} {self.name!r}: {what} must be a constant, found {_describe(e)}",
                       hint="bind weights and quantization parameters as constants before NPU compilation")

    def tensor(self, e: Expr, what: str) -> int:
        if isinstance(e, Var) and id(e) in self.binding:
            return self.low.tensor_of(self.binding[id(e)], f"{self.comp} {self.name!r} {what}")
        if isinstance(e, Constant):
            return self.low.tensor_of(e, f"{self.comp} {self.name!r} {what}")
        raise NPUError(f"{self.comp} {self.name!r}: {what} must be a composite input, found {_describe(e)}")

    def fail(self, msg: str, hint: str | None = None) -> NPUError:
        return NPUError(f"{self.comp} {self.name!r}: {msg}", hint=hint)

    def expect(self, chain: list[Call], spec: list[tuple[str, bool]]) -> dict[str, Call]:
        """Match the chain against [(op, optional)], returning op name → call."""
        got = [c.op.name for c in chain]  # type: ignore[union-attr]
        out: dict[str, Call] = {}
        i = 0
        for op, optional in spec:
            if i < len(chain) and got[i] == op:
                out[op] = chain[i]
                i += 1
            elif not optional:
                break
        if i != len(chain) or any(op not in out for op, opt in spec if not opt):
            want = " → ".join(f"[{op}]" if opt else op for op, opt in spec)
            raise self.fail(f"body {' → '.join(got) or '(empty)'} does not match {want}",
                            hint="composite bodies must follow docs/architecture.md")
        return out


def _clamp(body: _Body, ops: dict[str, Call], dtype: str) -> tuple[int, int]:
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    clip = ops.get("clip")
    if clip is not None:
        a_min, a_max = clip.attrs.a_min, clip.attrs.a_max
        if a_min != float("-inf"):
            lo = max(lo, int(np.ceil(a_min)))
        if a_max != float("inf"):
            hi = min(hi, int(np.floor(a_max)))
        if lo > hi:
            raise body.fail(f"clip range [{a_min}, {a_max}] is empty for {dtype}")
    return lo, hi


def _check_batch_one(body: _Body, t: TensorType, what: str) -> None:
    if len(t.shape) == 4 and t.shape[0] != 1:
        raise body.fail(f"{what} has batch {t.shape[0]} (shape {tuple(t.shape)})",
                        hint="convolutions, pooling and mean run with batch 1 on the NPU")


def _check_nhwc(body: _Body, attrs, key: str = "data_layout") -> None:
    layout = attrs.get(key) if hasattr(attrs, "get") else getattr(attrs, key, "NHWC")
    if layout != "NHWC":
        raise body.fail(f"{key} {layout!r} is not supported", hint="the NPU works on NHWC tensors")


def _requant_tables(body: _Body, rq: Call, channels: int) -> tuple[np.ndarray, np.ndarray, int, int, str]:
    rounding = rq.attrs.rounding
    if rounding == "TFLITE_FLOAT":
        raise body.fail("qnn.requantize rounding 'TFLITE_FLOAT' (double-precision float rescale) is not "
                        "fixed-point; the NPU's PPU cannot reproduce it",
                        hint="import with TFLite-Micro fixed-point FC requantization (rounding 'TFLITE') or keep "
                             "this layer on the CPU")
    if rounding == "ONNX":
        rounding = Rounding.FLOAT32_HALF_EVEN.name   # the float32 output stage (compiler checks ppu.float_scale)
    elif rounding not in Rounding.__members__ or rounding == Rounding.FLOAT32_HALF_EVEN.name:
        raise body.fail(f"qnn.requantize rounding {rounding!r} is not implemented by the NPU's PPU",
                        hint="supported: TFLITE, UPWARD, TONEAREST, and ONNX on a float32 output stage; keep "
                             "this layer on the CPU")
    s_in = np.asarray(body.const(rq.args[1], "requantize input_scale"), np.float64).reshape(-1)
    zp_rq = _scalar_int(body.const(rq.args[2], "requantize input_zero_point"), "requantize input zero point",
                        body.name)
    s_out = body.const(rq.args[3], "requantize output_scale")
    zp_out = _scalar_int(body.const(rq.args[4], "requantize output_zero_point"), "output zero point", body.name)
    if s_in.size not in (1, channels):
        raise body.fail(f"requantize input_scale has {s_in.size} values for {channels} channels")
    if rounding == Rounding.FLOAT32_HALF_EVEN.name:
        # onnxruntime's scale: float32(float32(s_in) / float32(s_out)), carried as its float32 bits
        real = (s_in.astype(np.float32) / np.float32(np.asarray(s_out).reshape(-1)[0])).astype(np.float32)
        m, s = real.view(np.int32).astype(np.int64), np.zeros(real.size, np.int64)
    else:
        m, s = qp.requant_params(s_in, s_out)
    if m.size == 1:
        m, s = np.repeat(m, channels), np.repeat(s, channels)
    return m.astype(np.int64), s.astype(np.int64), zp_rq, zp_out, rounding


def _conv_composite(low: _Lowerer, body: _Body, comp: str) -> None:
    chain = body.chain()
    if comp == "npu.qnn_dense":
        ops = body.expect(chain, [("qnn.dense", False), ("nn.bias_add", True), ("qnn.requantize", False),
                                  ("clip", True)])
        core = ops["qnn.dense"]
    else:
        ops = body.expect(chain, [("nn.pad", True), ("qnn.conv2d", False), ("nn.bias_add", True),
                                  ("qnn.requantize", False), ("clip", True)])
        core = ops["qnn.conv2d"]
    first = chain[0]
    ifm = body.tensor(first.args[0], "data")
    x_t = _tensor_type(first.args[0])
    w = np.asarray(body.const(core.args[1], "weight"))
    zp_in = _scalar_int(body.const(core.args[2], "input_zero_point"), "input zero point", body.name)
    zp_w = _scalar_int(body.const(core.args[3], "kernel_zero_point"), "kernel zero point", body.name)
    out_t = _tensor_type(body.call)
    int16x8 = check_int16x8(body, x_t.dtype, out_t.dtype, _tensor_type(ops["qnn.requantize"].args[0]).dtype, zp_in,
                            zp_w)
    if not int16x8 and out_t.dtype not in ("int8", "uint8") and (x_t.dtype, out_t.dtype) != ("int8", "int16"):
        raise body.fail(f"output dtype {out_t.dtype} is not supported",
                        hint="int8 or uint8 (int16 for int16x8, or from an int8 input: the LSTM gate FC)")
    if not int16x8 and x_t.dtype not in ("int8", "uint8"):
        raise body.fail(f"input dtype {x_t.dtype} is not supported", hint="int8 or uint8 (int16 for int16x8)")
    padding = (0, 0, 0, 0)
    pad_value = zp_in
    if comp == "npu.qnn_dense":
        if len(x_t.shape) != 2:
            raise body.fail(f"qnn.dense input must be 2-D, found {x_t.shape}")
        kind, kernel, stride, dilation, dm = "dense", (1, 1), (1, 1), (1, 1), 1
        oc = w.shape[0]
        packed = np.ascontiguousarray(w.reshape(oc, 1, 1, w.shape[1]))
        macs = x_t.shape[0] * w.shape[0] * w.shape[1]
    else:
        a = core.attrs
        _check_nhwc(body, a)
        _check_batch_one(body, x_t, "the input")
        groups = a.groups
        cin = x_t.shape[3] if "nn.pad" not in ops else _tensor_type(ops["nn.pad"]).shape[3]
        if "nn.pad" in ops:
            pad = ops["nn.pad"]
            pw = pad.attrs.pad_width
            if tuple(pw[0]) != (0, 0) or tuple(pw[3]) != (0, 0):
                raise body.fail(f"nn.pad pads batch or channels {pw}", hint="only spatial padding fuses")
            pv = int(np.asarray(body.const(pad.args[1], "pad_value")).reshape(-1)[0])
            if any(a.padding) and pv != zp_in:
                raise body.fail(f"nn.pad value {pv} differs from the input zero point {zp_in} while qnn.conv2d "
                                "also pads")
            padding = (pw[1][0], pw[2][0], pw[1][1], pw[2][1])
            pad_value = pv
        padding = tuple(p + q for p, q in zip(padding, a.padding))  # type: ignore[assignment]
        stride, dilation = tuple(a.strides), tuple(a.dilation)
        if a.kernel_layout not in ("OHWI", "HWIO", "OIHW", "HWOI"):
            raise body.fail(f"kernel_layout {a.kernel_layout!r} is not supported", hint="HWIO (TVM's TFLite form)")
        # Grouped HWIO [KH, KW, Cin/groups, Cout], TVM's depthwise HWOI [KH, KW, Cin, M] included.
        hwio = kernel_to_hwio(w, a.kernel_layout, groups, cin)
        if groups == 1:
            packed = np.ascontiguousarray(hwio.transpose(3, 0, 1, 2))  # the NPU's OHWI weight stream
            kind, dm = "conv", 1
        elif groups == cin:
            if hwio.shape[2] != 1:
                raise body.fail(f"depthwise kernel {a.kernel_layout} {list(w.shape)} does not have one input "
                                f"channel per group for {cin} channels")
            oc = hwio.shape[3]
            dm = oc // cin
            packed = np.ascontiguousarray(hwio[:, :, 0, :].transpose(2, 0, 1))
            kind = "depthwise"
        else:
            raise body.fail(f"grouped convolution (groups={groups}, {cin} channels) is not supported",
                            hint="regular (groups=1) and depthwise (groups=Cin) convolutions are")
        kernel = (packed.shape[1], packed.shape[2])
        oh, ow, oc = out_t.shape[1], out_t.shape[2], out_t.shape[3]
        macs = oh * ow * oc * kernel[0] * kernel[1] * (packed.shape[3] if kind == "conv" else 1)
    oc = packed.shape[0]
    if "nn.bias_add" in ops:
        bias = np.asarray(body.const(ops["nn.bias_add"].args[1], "bias")).reshape(-1).astype(np.int64)
    else:
        bias = np.zeros(oc, np.int64)
    m, s, zp_rq, zp_out, rounding = _requant_tables(body, ops["qnn.requantize"], oc)
    if int16x8:
        rounding = int16x8_rounding(body, rounding, bias, s)
    lo, hi = _clamp(body, ops, out_t.dtype)
    ofm = low.out_tensor(body.call, body.name)
    layer = ConvLayer(body.name, comp, kind, ifm, ofm, kernel, stride, dilation, padding, pad_value, zp_in,  # type: ignore[arg-type]
                      zp_w, dm, packed, bias, m, s, zp_rq, zp_out, lo, hi, rounding, out_t.dtype, macs)
    low.layers.append(layer)


def _f32_bits(v) -> int:
    return int(np.asarray(v, np.float32).reshape(()).view(np.int32))


def _onnx_binary_params(opname: str, sa, sb, sc, za: int, zb: int, zc: int) -> dict[str, Any]:
    """MLAS's float32 constants of QLinearAdd (r_a, r_b, zc − fma(r_a, za, r_b·zb)) or QLinearMul (s_a·s_b / s_c)."""
    from byoc.quant.onnxrt import fma_f32
    f32 = np.float32
    if opname == "qnn.add":
        ra, rb = f32(sa / sc), f32(sb / sc)
        fixed = f32(f32(zc) - fma_f32(ra, f32(za), f32(rb * f32(zb))))
        return dict(m_a=_f32_bits(ra), m_b=_f32_bits(rb), m_out=_f32_bits(fixed), rounding="FLOAT32_HALF_EVEN")
    return dict(m_out=_f32_bits(f32(f32(sa * sb) / sc)), rounding="FLOAT32_HALF_EVEN")


def _binary_composite(low: _Lowerer, body: _Body, comp: str) -> None:
    opname = {"npu.qnn_add": "qnn.add", "npu.qnn_subtract": "qnn.subtract"}.get(comp, "qnn.mul")
    chain = body.chain()
    ops = body.expect(chain, [(opname, False), ("clip", True)])
    core = ops[opname]
    onnx = core.attrs.rounding == "ONNX"
    if core.attrs.rounding != "TFLITE" and not onnx:
        raise body.fail(f"{opname} rounding {core.attrs.rounding!r} is not implemented by the NPU's PPU",
                        hint="TFLite's fixed-point arithmetic ('TFLITE') or ONNX's float32 one ('ONNX') runs on "
                             "the NPU")
    a_t, b_t, out_t = _tensor_type(core.args[0]), _tensor_type(core.args[1]), _tensor_type(body.call)
    if "int16" in (a_t.dtype, b_t.dtype, out_t.dtype) and (onnx or {a_t.dtype, b_t.dtype, out_t.dtype} != {"int16"}):
        raise body.fail(f"{opname} on {a_t.dtype}, {b_t.dtype} → {out_t.dtype}",
                        hint="int16 elementwise ops run with all three tensors int16 (TFLite's general path)")
    if onnx and tuple(a_t.shape) != tuple(b_t.shape):
        raise body.fail(f"{opname} rounding 'ONNX' with operands {tuple(a_t.shape)} and {tuple(b_t.shape)}",
                        hint="onnxruntime's broadcasting kernels order their float32 steps differently; only "
                             "same-shape operands run on the NPU")
    out_shape = tuple(out_t.shape)
    a = body.tensor(core.args[0], "lhs")
    b = body.tensor(core.args[1], "rhs")
    # Both operands are viewed at the output's rank (leading 1s), so their HWC views line up with the OFM's.
    a = low.view_as(a, (1,) * (len(out_shape) - len(a_t.shape)) + tuple(a_t.shape))
    b = low.view_as(b, (1,) * (len(out_shape) - len(b_t.shape)) + tuple(b_t.shape))
    both = (both_broadcast_flags(tuple(a_t.shape), tuple(b_t.shape), out_shape)
            if body.comp.startswith("ethos-u.") else None)
    if isinstance(both, tuple):   # ethos-u: Vela materialises the first operand, then broadcasts the second
        a = materialise_broadcast(low, body, a, both[0], out_shape)
        a_t = TensorType(out_shape, a_t.dtype)
    order, bcast = _broadcast_operands(body, a_t, b_t, out_t)
    c = [body.const(core.args[i], n) for i, n in ((2, "lhs_scale"), (3, "lhs_zero_point"), (4, "rhs_scale"),
                                                   (5, "rhs_zero_point"), (6, "output_scale"),
                                                   (7, "output_zero_point"))]
    zp_a = _scalar_int(c[1], "lhs zero point", body.name)
    zp_b = _scalar_int(c[3], "rhs zero point", body.name)
    zp_o = _scalar_int(c[5], "output zero point", body.name)
    for i, what in ((0, "lhs scale"), (2, "rhs scale"), (4, "output scale")):
        if _vec(c[i]).size != 1:
            raise body.fail(f"{what} must be per-tensor")
    lo, hi = _clamp(body, ops, out_t.dtype)
    params: dict[str, Any] = dict(zp_a=zp_a, zp_b=zp_b, zp_out=zp_o, act_min=lo, act_max=hi)
    if onnx:
        params.update(_onnx_binary_params(opname, *(np.float32(_vec(c[i])[0]) for i in (0, 2, 4)), zp_a, zp_b, zp_o))
        if opname == "qnn.subtract":
            raise body.fail("qnn.subtract rounding 'ONNX' is not implemented by the NPU's PPU",
                            hint="TFLite's fixed-point SUB runs on the NPU")
        op = "add" if opname == "qnn.add" else "mul"
    elif opname in ("qnn.add", "qnn.subtract"):
        p = qp.add_params(c[0], c[2], c[4], add_left_shift(out_t.dtype))   # 15 on the int16 path
        params.update(left_shift=p.left_shift, m_a=int(p.lhs_multiplier[0]), e_a=int(p.lhs_shift[0]),
                      m_b=int(p.rhs_multiplier[0]), e_b=int(p.rhs_shift[0]), m_out=int(p.output_multiplier[0]),
                      e_out=int(p.output_shift[0]), sub=int(opname == "qnn.subtract"))
        op = "add"
    else:
        m, e = qp.mul_params(c[0], c[2], c[4])
        params.update(m_out=int(m[0]), e_out=int(e[0]))
        op = "mul"
    if order == (1, 0):
        # The broadcast operand must be the PPU's src1. ADD and MUL are symmetric in their two operands (each is
        # rescaled with its own parameters, then summed or multiplied), so swapping operands and parameters is
        # exact.
        a, b = b, a
        for x, y in (("zp_a", "zp_b"), ("m_a", "m_b"), ("e_a", "e_b")):
            if x in params:
                params[x], params[y] = params[y], params[x]
        if params.get("sub"):
            params["sub"] = 2   # src1 − src0: the first operand is now src1
    params["bcast"] = bcast
    ofm = low.out_tensor(body.call, body.name)
    if not bcast:
        (a, b), ofm = _deepened(low, (a, b), ofm)
    elif bcast == BCAST_ALL and int(np.prod(low.tensors[b].shape, dtype=np.int64)) == 1:
        # a scalar operand: Vela reshapes the op all the same (its scalar stays a register value)
        (a,), deep = _deepened(low, (a,), ofm)
        if deep != ofm:
            b = low.view_as(b, (1,) * len(low.tensors[deep].shape))
            ofm = deep
    low.layers.append(PpuLayer(body.name, comp, op, (a, b), ofm, params))


def _broadcast_operands(body: _Body, a_t: TensorType, b_t: TensorType,
                        out_t: TensorType) -> tuple[tuple[int, int], int]:
    """((src0 operand, src1 operand), src1 broadcast flags) of an elementwise op.

    The NPU broadcasts its second operand only (Ethos-U's IFM2 broadcast): one operand must have the output's
    shape, and the other, in the NPU's HWC view, must match it or be 1 along each of height, width and channels
    (a per-channel vector (1,1,1,C), a scalar, a row, ...). A 1 in the HWC rows axis means 1 in every axis
    folded into it, so broadcasting there is exact."""
    out = tuple(out_t.shape)
    padded = [(1,) * (len(out) - len(t.shape)) + tuple(t.shape) for t in (a_t, b_t)]
    if padded[0] == out:
        order = (0, 1)
    elif padded[1] == out:
        order = (1, 0)
    else:
        raise body.fail(f"broadcasting {tuple(a_t.shape)} with {tuple(b_t.shape)} to {out}: neither operand has "
                        f"the output's shape",
                        hint="the NPU's elementwise unit broadcasts only one operand over the other")
    full = _hwc(out, body.name)
    small = _hwc(padded[order[1]], body.name)
    bcast = 0
    for k, bit in enumerate((BCAST_H, BCAST_W, BCAST_C)):
        if small[k] != full[k]:
            if small[k] != 1:
                raise body.fail(f"broadcasting {tuple(a_t.shape)} with {tuple(b_t.shape)} is not supported: seen "
                                f"as height×width×channels, {small} does not broadcast to {full}",
                                hint="the NPU broadcasts an operand along height, width and/or channels")
            bcast |= bit
    return order, bcast


def _pool_composite(low: _Lowerer, body: _Body, comp: str) -> None:
    chain = body.chain()
    if comp == "npu.qnn_avg_pool2d":
        ops = body.expect(chain, [("cast", False), ("nn.avg_pool2d", False), ("cast", False), ("clip", True)])
        pool = ops["nn.avg_pool2d"]
        names = [c.op.name for c in chain]  # type: ignore[union-attr]
        if names.count("cast") != 2 or chain[0].attrs.dtype != "int32":
            raise body.fail("avg pool must be cast(int32) → nn.avg_pool2d → cast")
        op = "avg_pool"
    else:
        ops = body.expect(chain, [("nn.max_pool2d", False), ("clip", True)])
        pool = ops["nn.max_pool2d"]
        op = "max_pool"
    a = pool.attrs
    _check_nhwc(body, a, "layout")
    if a.ceil_mode:
        raise body.fail("ceil_mode pooling is not supported", hint="use ceil_mode=False")
    ifm = body.tensor(chain[0].args[0], "data")
    in_t, out_t = _tensor_type(chain[0].args[0]), _tensor_type(body.call)
    _check_batch_one(body, in_t, "the input")
    if out_t.dtype != in_t.dtype or in_t.dtype not in ("int8", "uint8", "int16"):
        raise body.fail(f"pooling {in_t.dtype} → {out_t.dtype} is not supported",
                        hint="int8, uint8 or int16 in and out")
    lo, hi = _clamp(body, ops, out_t.dtype)
    params = dict(act_min=lo, act_max=hi, kh=a.pool_size[0], kw=a.pool_size[1], sh=a.strides[0], sw=a.strides[1],
                  dh=a.dilation[0], dw=a.dilation[1], padding=tuple(a.padding),
                  count_include_pad=int(bool(getattr(a, "count_include_pad", False))))
    ofm = low.out_tensor(body.call, body.name)
    low.layers.append(PpuLayer(body.name, comp, op, (ifm,), ofm, params))


def _mean_composite(low: _Lowerer, body: _Body, comp: str) -> None:
    ops = body.expect(body.chain(), [("qnn.mean", False), ("clip", True)])
    core = ops["qnn.mean"]
    in_t, out_t = _tensor_type(core.args[0]), _tensor_type(body.call)
    if core.attrs.get("exclude"):
        raise body.fail("qnn.mean with exclude=True is not supported", hint="list the reduced axes explicitly")
    axes = core.attrs.get("axis")
    if axes is None:
        raise body.fail("qnn.mean over all axes is not supported", hint="the NPU reduces H and W")
    axes = tuple(sorted(int(x) % len(in_t.shape) for x in (axes if isinstance(axes, (tuple, list)) else (axes,))))
    if len(in_t.shape) != 4 or axes != (1, 2):
        raise body.fail(f"qnn.mean over axes {axes} of a {in_t.shape} tensor is not supported",
                        hint="the NPU reduces H and W of NHWC tensors")
    _check_batch_one(body, in_t, "the input")
    ifm = body.tensor(core.args[0], "data")
    s_in, zp_in, s_out, zp_out = (body.const(core.args[i], n) for i, n in
                                  ((1, "input_scale"), (2, "input_zero_point"), (3, "output_scale"),
                                   (4, "output_zero_point")))
    n = in_t.shape[1] * in_t.shape[2]
    m, e = qp.mean_params(s_in, s_out, n)
    lo, hi = _clamp(body, ops, out_t.dtype)
    params = dict(zp_in=_scalar_int(zp_in, "input zero point", body.name),
                  zp_out=_scalar_int(zp_out, "output zero point", body.name), act_min=lo, act_max=hi, m=int(m),
                  e=int(e), count=n)
    ofm = low.out_tensor(body.call, body.name)
    low.layers.append(PpuLayer(body.name, comp, "mean", (ifm,), ofm, params))


def _lut_composite(low: _Lowerer, body: _Body, comp: str) -> None:
    opname = "qnn.sigmoid" if comp == "npu.qnn_sigmoid" else "qnn.tanh"
    ops = body.expect(body.chain(), [(opname, False), ("clip", True)])
    core = ops[opname]
    in_t, out_t = _tensor_type(core.args[0]), _tensor_type(body.call)
    if in_t.dtype == out_t.dtype == "int16":
        _int16_activation(low, body, comp, ops, core, opname)
        return
    if in_t.dtype not in ("int8", "uint8") or out_t.dtype != in_t.dtype:
        raise body.fail(f"LUT ops need int8/uint8 in and out, found {in_t.dtype} → {out_t.dtype}")
    ifm = body.tensor(core.args[0], "data")
    table = _unary_table(body, ops, core, in_t.dtype, opname)
    ofm = low.out_tensor(body.call, body.name)
    (ifm,), ofm = _deepened(low, (ifm,), ofm)
    low.layers.append(PpuLayer(body.name, comp, "lut", (ifm,), ofm, dict(qmin=int(np.iinfo(in_t.dtype).min)),
                               table=table))


def _int16_activation(low: _Lowerer, body: _Body, comp: str, ops: dict[str, Call], core: Call, opname: str) -> None:
    """int16 sigmoid / tanh (TFLite Micro's interpolated kernel, Q0.15 out): the PPU's int16 activation function,
    as Vela's LSTM fuses it after the gate ADD (here a layer of its own)."""
    from byoc.ops.qnn_activation import int16_gate_scale_log2
    from byoc.quant.int16_activation import lut16_input_params
    if core.attrs.rounding != "TFLM" or "clip" in ops:
        raise body.fail(f"int16 {opname} runs on the PPU with rounding TFLM and no clip, found rounding "
                        f"{core.attrs.rounding!r}{' and a clip' if 'clip' in ops else ''}")
    kind = "sigmoid" if opname == "qnn.sigmoid" else "tanh"
    consts = [body.const(core.args[i], f"{opname} operand {i}") for i in range(1, 5)]
    try:
        e = int16_gate_scale_log2(kind, "TFLM", *consts)
    except ByocError as err:
        raise body.fail(err.message) from err
    mult, shift = lut16_input_params(e)
    ifm = body.tensor(core.args[0], "data")
    ofm = low.out_tensor(body.call, body.name)
    (ifm,), ofm = _deepened(low, (ifm,), ofm)
    low.layers.append(PpuLayer(body.name, comp, "lut", (ifm,), ofm,
                               dict(qmin=-32768, fn16=1 if kind == "sigmoid" else 2, in_mult=mult, in_shift=shift)))


def _unary_table(body: _Body, ops: dict[str, Call], core: Call, dtype: str, opname: str) -> np.ndarray:
    """The op (and its clip) evaluated on every input value: exact by construction, for any rounding mode."""
    info = np.iinfo(dtype)
    q = np.arange(int(info.min), int(info.max) + 1).astype(dtype).reshape(1, 1, 1, -1)
    args = [q] + [body.const(a, f"{opname} operand {i}") for i, a in enumerate(core.args[1:], 1)]
    try:
        y = core.op.op_def.compute(args, core.attrs)  # type: ignore[union-attr]
    except ByocError as e:
        raise body.fail(f"cannot evaluate {opname} for its lookup table: {e.message}") from e
    y = np.asarray(y).reshape(-1)
    lo, hi = _clamp(body, ops, dtype)
    return np.clip(y, lo, hi).astype(dtype)


def _elementwise_lut_composite(low: _Lowerer, body: _Body, comp: str) -> None:
    """The ``lut`` layer kind: a chain of elementwise ops on one int8/uint8 input whose other operands are single
    constants. Each output value depends only on its input value, so the chain evaluated by the ops' own compute
    on all 256 input values is the table: exact by construction."""
    from byoc.ops.registry import FusionKind
    chain = body.chain()
    if not chain:
        raise body.fail("empty body", hint="a chain of elementwise ops")
    not_elementwise = [c.op.name for c in chain if c.op.op_def.fusion != FusionKind.ELEMWISE]  # type: ignore[union-attr]
    if not_elementwise:
        raise body.fail(f"{', '.join(not_elementwise)} is not elementwise",
                        hint="a lookup table holds ops whose outputs depend only on their own input value")
    in_t, out_t = _tensor_type(chain[0].args[0]), _tensor_type(body.call)
    if in_t.dtype not in ("int8", "uint8") or out_t.dtype != in_t.dtype or tuple(in_t.shape) != tuple(out_t.shape):
        raise body.fail(f"a lookup table maps int8/uint8 to the same type and shape, found {in_t.dtype}"
                        f"{list(in_t.shape)} → {out_t.dtype}{list(out_t.shape)}")
    ifm = body.tensor(chain[0].args[0], "data")
    info = np.iinfo(in_t.dtype)
    v: Any = np.arange(int(info.min), int(info.max) + 1).astype(in_t.dtype).reshape(
        (1,) * max(len(in_t.shape) - 1, 0) + (-1,))
    for c in chain:
        consts = [np.asarray(body.const(a, f"{c.op.name} operand {i}")) for i, a in enumerate(c.args[1:], 1)]  # type: ignore[union-attr]
        wide = [i for i, k in enumerate(consts, 1) if k.size != 1]
        if wide:
            raise body.fail(f"{c.op.name} operand {wide[0]} has {consts[wide[0] - 1].size} values",  # type: ignore[union-attr]
                            hint="per-channel operands make the op depend on the position, not only the value")
        try:
            v = c.op.op_def.compute([v] + consts, c.attrs)  # type: ignore[union-attr]
        except ByocError as e:
            raise body.fail(f"cannot evaluate {c.op.name} on every input value for its lookup table: "  # type: ignore[union-attr]
                            f"{e.message}") from e
    table = np.asarray(v).reshape(-1)
    if table.size != 256 or table.dtype != np.dtype(out_t.dtype):
        raise body.fail(f"the chain gave {table.size} {table.dtype} values for 256 {in_t.dtype} inputs")
    ofm = low.out_tensor(body.call, body.name)
    (ifm,), ofm = _deepened(low, (ifm,), ofm)
    low.layers.append(PpuLayer(body.name, comp, "lut", (ifm,), ofm, dict(qmin=int(info.min)), table=table))


def _requant_composite(low: _Lowerer, body: _Body, comp: str) -> None:
    ops = body.expect(body.chain(), [("qnn.requantize", False), ("clip", True)])
    _requant_layer(low, body, ops, ops["qnn.requantize"], body.call, body.name, comp)


def _deepened(low: _Lowerer, ins: tuple[int, ...], ofm: int) -> tuple[tuple[int, ...], int]:
    """Inputs and output of a same-shape elementwise layer viewed as Vela reshapes a shallow one (fewer than 8
    channels: a deeper HWC view of the same bytes, ``cost.deepened_shape``), so its tiles, transfers and cycles
    are those of the reshaped map. Exact: every element keeps its place in memory and its own computation."""
    t = low.tensors[ofm]
    if len(t.shape) == 0 or any(tuple(low.tensors[i].shape) != tuple(t.shape) for i in ins):
        return ins, ofm
    h, w, c = _hwc(tuple(t.shape), t.name)
    shape = (1,) + deepened_shape(h, w, c)
    if shape[1:] == (h, w, c):
        return ins, ofm
    return tuple(low.view_as(i, shape) for i in ins), low.view_as(ofm, shape)


def _requant_layer(low, body, ops, rq: Call, out_call: Call, name: str, comp: str) -> None:
    in_t, out_t = _tensor_type(rq.args[0]), _tensor_type(out_call)
    if in_t.dtype not in ("int8", "uint8", "int16", "int32") or (
            out_t.dtype not in ("int8", "uint8") and (in_t.dtype, out_t.dtype) != ("int16", "int16")):
        raise body.fail(f"requantize {in_t.dtype} → {out_t.dtype} is not supported",
                        hint="8-bit outputs, or int16 → int16 (TFLite's 16-bit QUANTIZE)")
    axis = rq.attrs.axis % max(len(in_t.shape), 1)
    channels = in_t.shape[axis] if in_t.shape else 1
    m, s, zp_rq, zp_out, rounding = _requant_tables(body, rq, channels)
    if len(set(m.tolist())) > 1 or len(set(s.tolist())) > 1:
        if axis != len(in_t.shape) - 1:
            raise body.fail(f"per-channel requantize along axis {rq.attrs.axis} is not supported",
                            hint="the PPU's tables run along the innermost (channel) axis")
    c = _hwc(tuple(in_t.shape), name)[2]
    ifm = body.tensor(rq.args[0], "data")
    lo, hi = _clamp(body, ops, out_t.dtype)
    ofm = low.out_tensor(out_call, name)
    if len(set(m.tolist())) == 1 and len(set(s.tolist())) == 1:   # per-tensor: Vela reshapes a shallow map
        (ifm,), ofm = _deepened(low, (ifm,), ofm)
        c = low.tensors[ofm].shape[-1] if low.tensors[ofm].shape else 1
    if m.size != c:
        m, s = np.repeat(m[:1], c), np.repeat(s[:1], c)
    table = np.stack([np.zeros(c, np.int64), m, s])
    low.layers.append(PpuLayer(name, comp, "requant", (ifm,), ofm,
                               dict(zp_in=zp_rq, zp_out=zp_out, act_min=lo, act_max=hi, rounding=rounding),
                               table=table))


def _clip_composite(low: _Lowerer, body: _Body, comp: str) -> None:
    """clip, or nn.relu (a clamp at 0 on the raw integers, as the op computes it) with an optional clip."""
    chain = body.chain()
    ops = body.expect(chain, [("nn.relu", True), ("clip", True)])
    if not ops:
        raise body.fail("empty body", hint="clip, or nn.relu → [clip]")
    first = chain[0]
    in_t = _tensor_type(first.args[0])
    if in_t.dtype not in ("int8", "uint8"):
        raise body.fail(f"{first.op.name} of {in_t.dtype} is not supported", hint="int8 or uint8")  # type: ignore[union-attr]
    ifm = body.tensor(first.args[0], "data")
    lo, hi = _clamp(body, ops, in_t.dtype)
    if "nn.relu" in ops:
        lo = max(lo, 0)
    ofm = low.out_tensor(body.call, body.name)
    (ifm,), ofm = _deepened(low, (ifm,), ofm)
    low.layers.append(PpuLayer(body.name, comp, "copy", (ifm,), ofm, dict(act_min=lo, act_max=hi)))


def concat_origins(shapes: list[tuple[int, ...]], axis: int) -> list[tuple[int, int, int]] | str:
    """Where each input of a concatenation lands in the output's HWC view, as (y, x, c); or why it cannot.

    An axis maps to one HWC dimension (4-D: batch and height fold into the rows, 2-D: [B, K] is B×1×K). The
    inputs are contiguous blocks there unless a non-unit axis outside it folds into the same dimension: 4-D
    height with batch > 1, whose output rows interleave the inputs batch by batch."""
    rank = len(shapes[0])
    if rank == 0 or rank > 4:
        return f"rank-{rank} tensors have no concatenation axis on the NPU"
    axis %= rank
    dim = {4: (0, 0, 1, 2), 3: (0, 1, 2), 2: (0, 2), 1: (2,)}[rank][axis]
    if rank == 4 and axis == 1 and any(s[0] != 1 for s in shapes):
        return (f"concatenating along height with batch {max(s[0] for s in shapes)} interleaves the inputs in "
                f"the NPU's rows (batch × height)")
    origins, at = [], 0
    for s in shapes:
        o = [0, 0, 0]
        o[dim] = at
        origins.append((o[0], o[1], o[2]))
        at += _hwc(tuple(s), "concatenate")[dim]
    return origins


def _concat_composite(low: _Lowerer, body: _Body, comp: str) -> None:
    """Each input becomes one PPU layer writing its block of the output: a COPY (with the clip's clamp) when the
    op passes it through unchanged, else a LUT. The table of input i is qnn.concatenate's own compute applied
    to that input alone on all 256 values (then the clip), so it is exact for whatever rescale the op's
    semantics define: per-input and elementwise on 8-bit values."""
    ops = body.expect(body.chain(), [("qnn.concatenate", False), ("clip", True)])
    core = ops["qnn.concatenate"]
    out_t = _tensor_type(body.call)
    data, scales, zps = core.args[0], core.args[1], core.args[2]
    if not isinstance(data, Tuple) or not isinstance(scales, Tuple) or not isinstance(zps, Tuple):
        raise body.fail("concatenate operands must be tuples")
    types = [_tensor_type(d) for d in data.fields]
    origins = concat_origins([tuple(t.shape) for t in types], core.attrs.axis)
    if isinstance(origins, str):
        raise body.fail(f"concatenate along axis {core.attrs.axis} of {tuple(out_t.shape)}: {origins}",
                        hint="the NPU writes each input as one block of its height×width×channels view")
    s_out, zp_out = body.const(core.args[3], "output_scale"), body.const(core.args[4], "output_zero_point")
    lo, hi = _clamp(body, ops, out_t.dtype)
    layers = []
    ofm = low.out_tensor(body.call, body.name)
    full = (lo, hi) == (int(np.iinfo(out_t.dtype).min), int(np.iinfo(out_t.dtype).max))
    for i, (d, s, z) in enumerate(zip(data.fields, scales.fields, zps.fields)):
        if types[i].dtype == "int16":   # TFLite copies int16 values whatever the quantization
            layers.append(PpuLayer(f"{body.name}/{i}", comp, "copy", (body.tensor(d, f"input {i}"),), -1,
                                   dict(act_min=lo, act_max=hi), out_origin=origins[i]))
            continue
        q, table = _concat_table(body, core, i, types[i], (body.const(s, f"input_scale {i}"),
                                                             body.const(z, f"input_zero_point {i}"), s_out, zp_out))
        name = f"{body.name}/{i}"
        src = body.tensor(d, f"input {i}")
        if full and np.array_equal(table, q) and _write_into(low, body.binding.get(id(d)), src, ofm, origins[i]):
            continue
        if np.array_equal(table, q):
            layers.append(PpuLayer(name, comp, "copy", (src,), -1, dict(act_min=lo, act_max=hi),
                                   out_origin=origins[i]))
        else:
            layers.append(PpuLayer(name, comp, "lut", (src,), -1, dict(qmin=int(q[0])),
                                   table=np.clip(table, lo, hi).astype(out_t.dtype), out_origin=origins[i]))
    low.layers.extend(dataclasses.replace(layer, ofm=ofm) for layer in layers)


# The layers whose OFM a concatenation input's producer may write straight into its block of the output (regor
# MoveConcatSliceToProducer: not a reshape, data-layout op (TRANSPOSE) or copy, nor a write that is one already).
_DIRECT_WRITERS = ("add", "mul", "max_pool", "avg_pool", "lut", "requant", "resize", "raw_binary", "mean")


def _write_into(low: _Lowerer, outer: Expr | None, src: int, ofm: int, origin: tuple[int, int, int]) -> bool:
    """Let ``src``'s producer write its block of the concatenation's output ``ofm`` at ``origin`` instead of
    a copy layer doing it, when the concatenation is ``src``'s only reader (not a partition output either), the
    input passes through unchanged, and one layer of a kind that can writes ``src``."""
    t = low.tensors[src]
    if outer is None or low.uses.get(id(outer), 0) != 1 or t.alias_of is not None or t.data is not None:
        return False
    writers = [k for k, x in enumerate(low.layers) if x.ofm == src]
    if len(writers) != 1:
        return False
    layer = low.layers[writers[0]]
    if isinstance(layer, ConvLayer):
        ok = layer.kind in ("conv", "depthwise")
    else:
        ok = (layer.op in _DIRECT_WRITERS and layer.out_origin is None and layer.block is None
              and layer.in_origin is None)
    if not ok or any(src in (x.inputs if isinstance(x, PpuLayer) else (x.ifm,)) for x in low.layers):
        return False
    base = low.tensors[ofm]
    tid = len(low.tensors)
    low.tensors.append(TensorInfo(tid, f"{t.name}@{base.name}", t.shape, t.hwc, t.dtype, None, ofm, origin=origin))
    low.layers[writers[0]] = dataclasses.replace(layer, ofm=tid)
    return True


def _concat_table(body: _Body, core: Call, i: int, t: TensorType, quant: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(all values of the input dtype, qnn.concatenate of input ``i`` alone on them)."""
    if t.dtype not in ("int8", "uint8"):
        raise body.fail(f"input {i} is {t.dtype}", hint="the NPU concatenates int8 and uint8 tensors")
    info = np.iinfo(t.dtype)
    q = np.arange(int(info.min), int(info.max) + 1).astype(t.dtype)
    x = q.reshape((1,) * (len(t.shape) - 1) + (-1,))
    s, z, s_out, zp_out = quant
    try:
        y = core.op.op_def.compute([(x,), (s,), (z,), s_out, zp_out], core.attrs)  # type: ignore[union-attr]
    except ByocError as e:
        raise body.fail(f"cannot evaluate input {i}'s rescale for its lookup table: {e.message}") from e
    y = np.asarray(y)
    if y.size != q.size or y.dtype != q.dtype:
        raise body.fail(f"input {i}'s rescale gave {y.size} {y.dtype} values for {q.size} {q.dtype} inputs")
    return q, y.reshape(-1)


_COMPOSITES = {
    "npu.qnn_conv2d": _conv_composite, "npu.qnn_depthwise_conv2d": _conv_composite, "npu.qnn_dense": _conv_composite,
    "npu.qnn_add": _binary_composite, "npu.qnn_subtract": _binary_composite, "npu.qnn_mul": _binary_composite, "npu.qnn_avg_pool2d": _pool_composite,
    "npu.qnn_max_pool2d": _pool_composite, "npu.qnn_mean": _mean_composite, "npu.qnn_sigmoid": _lut_composite,
    "npu.qnn_tanh": _lut_composite, "npu.qnn_requantize": _requant_composite, "npu.qnn_clip": _clip_composite,
    "npu.qnn_concatenate": _concat_composite,
}


def _int16_mul_composite(low: _Lowerer, body: _Body, comp: str) -> None:
    """The ``int16_mul`` kind: ``qnn.requantize(multiply(cast(a), cast(b)))`` of two int16 tensors with zero points
    0 (an LSTM's gate products): the PPU's MUL with the requantize's own (multiplier, shift) as explicit scaling,
    as Vela lowers them; int16 or int8 out. MBQM(a·b) + zp is what qnn.requantize computes on the exact int32
    product."""
    root = body.fn.body
    ops: dict[str, Call] = {}
    if isinstance(root, Call) and isinstance(root.op, Op) and root.op.name == "clip":
        ops["clip"], root = root, root.args[0]
    rq = root
    mul = rq.args[0] if isinstance(rq, Call) and isinstance(rq.op, Op) and rq.op.name == "qnn.requantize" else None
    casts = mul.args if isinstance(mul, Call) and isinstance(mul.op, Op) and mul.op.name == "multiply" else ()
    if len(casts) != 2 or not all(isinstance(c, Call) and isinstance(c.op, Op) and c.op.name == "cast"
                                  for c in casts):
        raise body.fail("expected qnn.requantize(multiply(cast(a), cast(b))) [→ clip]")
    a_t, b_t, out_t = (_tensor_type(casts[0].args[0]), _tensor_type(casts[1].args[0]), _tensor_type(body.call))
    if (a_t.dtype, b_t.dtype) != ("int16", "int16") or out_t.dtype not in ("int8", "int16"):
        raise body.fail(f"an int16 product takes two int16 tensors to int8/int16, found {a_t.dtype}, {b_t.dtype} → "
                        f"{out_t.dtype}")
    if tuple(a_t.shape) != tuple(b_t.shape) or tuple(a_t.shape) != tuple(out_t.shape):
        raise body.fail(f"an int16 product of shapes {tuple(a_t.shape)} and {tuple(b_t.shape)} does not broadcast")
    if rq.attrs.rounding != "TFLITE":
        raise body.fail(f"requantize rounding {rq.attrs.rounding!r} is not the PPU's", hint="TFLITE")
    s_in, zp_in, s_out, zp_out = (body.const(rq.args[i], n) for i, n in
                                  ((1, "input_scale"), (2, "input_zero_point"), (3, "output_scale"),
                                   (4, "output_zero_point")))
    if _scalar_int(zp_in, "input zero point", body.name) != 0 or _vec(s_in).size != 1:
        raise body.fail("an int16 product's requantize has one input scale and zero point 0")
    m, e = qp.requant_params(s_in, s_out)
    lo, hi = _clamp(body, ops, out_t.dtype)
    params = dict(zp_a=0, zp_b=0, zp_out=_scalar_int(zp_out, "output zero point", body.name), act_min=lo,
                  act_max=hi, m_out=int(m[0]), e_out=int(e[0]), bcast=0)
    a = body.tensor(casts[0].args[0], "lhs")
    b = body.tensor(casts[1].args[0], "rhs")
    ofm = low.out_tensor(body.call, body.name)
    (a, b), ofm = _deepened(low, (a, b), ofm)
    low.layers.append(PpuLayer(body.name, comp, "mul", (a, b), ofm, params))


# layer kinds other targets can map onto that no npu composite uses (npu_sim/layer_kinds.py)
_KIND_ONLY = {"elementwise_lut": _elementwise_lut_composite, "int16_mul": _int16_mul_composite}


class _BareBody(_Body):
    """A bare op call treated like a one-op composite (its operands are already outer expressions)."""

    def __init__(self, call: Call, low: _Lowerer):
        self.call = call
        self.low = low
        self.binding = {}
        self.comp = call.op.name  # type: ignore[union-attr]
        span = getattr(call, "span", None)
        self.name = span.source if span is not None else f"{self.comp}_{len(low.layers)}"

    def const(self, e: Expr, what: str) -> np.ndarray:
        if isinstance(e, Constant):
            return e.data
        raise self.fail(f"{what} must be a constant, found {_describe(e)}")

    def tensor(self, e: Expr, what: str) -> int:
        return self.low.tensor_of(e, f"{self.comp} {self.name!r} {what}")


def _bare_alias(low: _Lowerer, call: Call) -> None:
    src = low.contiguous(low.tensor_of(call.args[0], call.op.name))  # type: ignore[union-attr]
    t = _tensor_type(call)
    base = low.tensors[src]
    root = base.alias_of if base.alias_of is not None else src
    tid = low.new_tensor(f"{base.name}.{call.op.name}", t, base.data, alias_of=root)  # type: ignore[union-attr]
    low.value[id(call)] = tid


def _bare_clip(low: _Lowerer, call: Call) -> None:
    body = _BareBody(call, low)
    t = _tensor_type(call)
    ifm = body.tensor(call.args[0], "data")
    lo, hi = _clamp(body, {"clip": call}, t.dtype)
    ofm = low.out_tensor(call, body.name)
    low.layers.append(PpuLayer(body.name, "clip", "copy", (ifm,), ofm, dict(act_min=lo, act_max=hi)))


def _bare_requantize(low: _Lowerer, call: Call) -> None:
    body = _BareBody(call, low)
    _requant_layer(low, body, {}, call, call, body.name, "qnn.requantize")


def _bare_zeros(low: _Lowerer, call: Call) -> None:
    """A zero-filled tensor (an unrolled LSTM's initial state): a copy of a constant zero tensor, as regor
    copies the variable state tensor into the step-0 state."""
    body = _BareBody(call, low)
    t = _tensor_type(call)
    info = np.iinfo(t.dtype)
    src = low.new_tensor(f"{body.name}.zero", t, np.zeros(t.shape, t.dtype))
    ofm = low.out_tensor(call, body.name)
    low.layers.append(PpuLayer(body.name, "zeros", "copy", (src,), ofm, dict(act_min=int(info.min),
                                                                               act_max=int(info.max))))


_BARE_OPS = {"reshape": _bare_alias, "squeeze": _bare_alias, "expand_dims": _bare_alias, "clip": _bare_clip,
             "qnn.requantize": _bare_requantize, "zeros": _bare_zeros}

from .lower_move import MOVE_OPS  # noqa: E402 - the data-movement handlers build on the classes above

_BARE_OPS.update(MOVE_OPS)

from .lower_vela_ops import KIND_LOWERINGS, VELA_OPS  # noqa: E402 - SOFTMAX, TRANSPOSE, RESIZE (Vela's sequences)
from .lower_vela_ops import both_broadcast_flags, materialise_broadcast  # noqa: E402 - ethos-u both-broadcast ops

_BARE_OPS.update(VELA_OPS)
_KIND_ONLY.update(KIND_LOWERINGS)


def lower_function(func: Function, name: str = "npu_func", composites: dict[str, str] | None = None) -> Graph:
    """Check the function is an NPU partition and lower it; raises one NPUError listing every problem.

    ``composites`` (another target's lowering map, ``{composite name: layer kind}``, ``npu_sim.layer_kinds``)
    lowers a partition whose composites carry that target's names; without it the composites must be ``npu.*``."""
    if not isinstance(func, Function):
        raise NPUError(f"npu_sim.compile takes a relay Function, got {type(func).__name__}")
    compiler = func.attrs.get("Compiler")
    if composites is None and compiler not in (None, "npu"):
        raise NPUError(f"function {name!r} is for compiler {compiler!r}, not 'npu'",
                       hint="pass a function partitioned with Compiler='npu', or give the NPU compiler that "
                            "target's lowering map (byoc.targets.register_simulator_codegen)")
    from byoc.transform.canonicalize_qnn import canonicalize_function
    from byoc.transform.infer_type import infer_expr
    # Composites hold TVM-form chains (dequantize → sigmoid → quantize, cast → mean → requantize, ...); the layer
    # lowerings read the exact integer op each intact chain stands for.
    func = canonicalize_function(func)
    try:
        infer_expr(func)
    except ByocError as e:
        raise NPUError(f"type inference of {name!r} failed before NPU compilation: {e.message}") from e
    return _Lowerer(func, str(func.attrs.get("global_symbol", name)), composites).run()

from .lower_qdq import QDQ_COMPOSITES  # noqa: E402 - ONNX's quantized groups as onnxruntime computes them

_COMPOSITES.update(QDQ_COMPOSITES)
