"""Building one kernel function per fused group.

ABI of every kernel: ``i32 kernel(ptr args, i64 begin, i64 end)``. ``args`` is an array of buffer pointers
(the group's outputs, then its inputs, then host tables made at build time); ``[begin, end)`` is a slice of the
kernel's parallel loop, so a caller may split the work across threads. The result is 0, or an error code.

The IR depends only on shapes, dtypes, attributes and scalar constants, never on tensor names or on the content
of large constants (those are passed as buffers), so structurally identical kernels share one compiled symbol.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llvmlite import ir

from ...errors import CodegenError
from ...ir.expr import Call, Constant, Expr, Tuple
from ...ir.types import TensorType, TupleType
from .cgutils import I32, I64, PTR, const_int, const_of, for_range, llvm_type, loop_nest, vector_const
from .fuse_ops import FusedGroup
from .lowering import KernelLowering, get_lowering
from .vec_epilogue import LaneIndex, splat, vector_epilogue_ok

__all__ = ["Buffer", "KernelBuilder", "ElementContext", "KernelContext", "CompiledKernelSpec", "emit_group",
           "ERROR_DIVIDE_BY_ZERO", "ERROR_MESSAGES"]

ERROR_DIVIDE_BY_ZERO = 1
ERROR_MESSAGES = {ERROR_DIVIDE_BY_ZERO: "integer division by zero (or an empty pooling window)",
                  2: "qnn.softmax: the sum of exponentials is out of the kernel's range"}


@dataclass(frozen=True)
class Buffer:
    """A dense C-order tensor in memory: base pointer, shape and dtype."""
    ptr: ir.Value
    shape: tuple[int, ...]
    dtype: str

    @property
    def strides(self) -> tuple[int, ...]:
        out, acc = [], 1
        for d in reversed(self.shape):
            out.append(acc)
            acc *= d
        return tuple(reversed(out))

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def offset(self, builder: ir.IRBuilder, index) -> ir.Value:
        off = None
        for i, (ix, st, d) in enumerate(zip(index, self.strides, self.shape)):
            if d == 1 and not isinstance(ix, LaneIndex):
                continue  # its index is 0 by construction; a lane index still carries the vector's lanes
            term = ix if st == 1 else builder.mul(ix, ir.Constant(I64, st), flags=("nsw",))
            off = term if off is None else builder.add(off, term, flags=("nsw",))
        return off if off is not None else ir.Constant(I64, 0)

    def gep(self, builder: ir.IRBuilder, offset) -> ir.Value:
        if isinstance(offset, (int, np.integer)):
            offset = ir.Constant(I64, int(offset))
        return builder.gep(self.ptr, [offset], inbounds=True, source_etype=llvm_type(self.dtype))

    def load_at(self, builder: ir.IRBuilder, offset) -> ir.Value:
        ty = llvm_type(self.dtype)
        v = builder.load(self.gep(builder, offset), typ=ty)
        v.align = _align(self.dtype)
        return v

    def store_at(self, builder: ir.IRBuilder, offset, value: ir.Value) -> None:
        st = builder.store(value, self.gep(builder, offset))
        if st is not None:  # a partial vector block is stored lane by lane (cgutils.store_lanes)
            st.align = _align(self.dtype)

    def load(self, builder: ir.IRBuilder, index) -> ir.Value:
        return self.load_at(builder, self.offset(builder, index))

    def store(self, builder: ir.IRBuilder, index, value: ir.Value) -> None:
        self.store_at(builder, self.offset(builder, index), value)


def _align(dtype: str) -> int:
    return np.dtype(dtype if dtype != "bool" else "uint8").itemsize


@dataclass(frozen=True)
class Slot:
    """What one entry of the kernel's ``args`` array points at."""
    kind: str            # "out" (group output k), "in" (an external operand expr), "data" (a host array)
    ref: Any             # int | Expr | np.ndarray


class KernelBuilder:
    """One kernel function under construction plus the list of buffers its ``args`` array must hold."""

    def __init__(self, codegen, name: str = "kernel"):
        self.codegen = codegen
        self.module = codegen.new_module(name)
        fnty = ir.FunctionType(I32, [PTR, I64, I64])
        self.function = ir.Function(self.module, fnty, "byoc_kernel")
        self.function.attributes.add("nounwind")
        self.args_ptr, self.begin, self.end = self.function.args
        for a in (self.args_ptr,):
            a.add_attribute("noalias")
        self.builder = ir.IRBuilder(self.function.append_basic_block("entry"))
        self.slots: list[Slot] = []
        self._slot_ptr: dict[tuple, ir.Value] = {}
        self._keepalive: list = []   # arrays keyed by id in data(): alive as long as their keys
        self.parallel_extent = 1
        self._error_blocks: dict[int, ir.Block] = {}
        self.value_bounds: dict[int, int] = {}  # id(node) -> bound on |value| (see KernelContext.set_result_bound)

    def _slot_pointer(self, key: tuple, slot: Slot) -> ir.Value:
        if key in self._slot_ptr:
            return self._slot_ptr[key]
        i = len(self.slots)
        self.slots.append(slot)
        b = self.builder
        with b.goto_entry_block():
            p = b.gep(self.args_ptr, [ir.Constant(I64, i)], inbounds=True, source_etype=PTR)
            ptr = b.load(p, typ=PTR)
            ptr.align = 8
        self._slot_ptr[key] = ptr
        return ptr

    def output(self, k: int, ttype: TensorType) -> Buffer:
        return Buffer(self._slot_pointer(("out", k), Slot("out", k)), ttype.shape, ttype.dtype)

    def input(self, expr: Expr, ttype: TensorType) -> Buffer:
        return Buffer(self._slot_pointer(("in", id(expr)), Slot("in", expr)), ttype.shape, ttype.dtype)

    def data(self, array: np.ndarray, key: str | None = None) -> Buffer:
        """A host array computed at build time (weights, tables), passed by pointer so it stays out of the IR."""
        arr = np.ascontiguousarray(array)
        k = ("data", key if key is not None else id(array))
        if key is None:
            # An id names an object only while it lives: a temporary (``w.astype(...)`` of a non-contiguous w,
            # copied just above) would free its id for the next array, which would then get this slot's data.
            self._keepalive.append(array)
        return Buffer(self._slot_pointer(k, Slot("data", arr)), arr.shape, arr.dtype.name)

    @contextmanager
    def parallel(self, builder: ir.IRBuilder, extent: int, name: str = "p"):
        """The kernel's outer loop over ``[begin, end)`` ⊆ ``[0, extent)`` (the unit of thread splitting)."""
        self.parallel_extent = max(int(extent), 1)
        with for_range(builder, self.begin, self.end, name=name) as loop:
            yield loop.index

    def fail_if(self, builder: ir.IRBuilder, cond: ir.Value, code: int) -> None:
        """Return ``code`` from the kernel when ``cond`` holds."""
        if code not in self._error_blocks:
            blk = self.function.append_basic_block(f"error{code}")
            ir.IRBuilder(blk).ret(const_int(I32, code))
            self._error_blocks[code] = blk
        cont = builder.append_basic_block("ok")
        builder.cbranch(cond, self._error_blocks[code], cont)
        builder.position_at_end(cont)

    def finish(self) -> None:
        self.builder.ret(const_int(I32, 0))


@dataclass
class ElementContext:
    """What an element lowering sees: the kernel being built and the output element's index."""
    kernel: KernelBuilder
    index: list
    out_type: TensorType
    arg_types: list = field(default_factory=list)


@dataclass
class KernelContext:
    """What a kernel lowering sees; ``emit_output`` runs the fused epilogue and stores the result."""
    kernel: KernelBuilder
    node: Call
    out_type: Any
    _epilogue: Any
    _outputs: list

    _vector_epilogue: Any = None
    _group: Any = None
    _folded: list = field(default_factory=list)

    def take_bias(self) -> np.ndarray | None:
        """When the epilogue starts with ``nn.bias_add`` of a constant int32 vector on the innermost axis of this
        int32 anchor, return the bias (int32, one per channel) and drop the op from the epilogue: the lowering
        adds it into its accumulators (the same wrapping int32 sum). Call it before emitting any output."""
        g = self._group
        if g is None or not g.element_nodes or not isinstance(self.out_type, TensorType):
            return None
        first = g.element_nodes[0]
        if first.op.name != "nn.bias_add" or first.args[0] is not self.node or self.out_type.dtype != "int32":
            return None
        bias = first.args[1]
        nd = len(self.out_type.shape)
        if not isinstance(bias, Constant) or bias.data.dtype != np.int32 or nd == 0 or \
                first.attrs.axis % nd != nd - 1 or bias.data.size != self.out_type.shape[-1]:
            return None
        self._folded.append(id(first))
        return np.asarray(bias.data).reshape(-1)

    def set_result_bound(self, bound: int) -> None:
        """Declare ``|anchor result| ≤ bound`` (exact values, before int32 wrapping; including a taken bias), so
        epilogue ops may use cheaper arithmetic that is exact within that range."""
        for k in [id(self.node)] + self._folded:
            self.kernel.value_bounds[k] = int(bound)

    def emit_output(self, builder: ir.IRBuilder, index, value: ir.Value, k: int = 0) -> None:
        if self._epilogue is not None and k == 0:
            value = self._epilogue(builder, list(index), value)
        self._outputs[k].store(builder, index, value)

    @property
    def vector_output_ok(self) -> bool:
        """Whether ``emit_output_vector`` may be used (single tensor output, vectorisable epilogue)."""
        return self._vector_epilogue is not None

    def emit_output_vector(self, builder: ir.IRBuilder, index, value: ir.Value, out_dtype: str,
                           valid_lanes: ir.Value | None = None) -> None:
        """Outputs ``index[:-1] + [c0 + l]`` for every lane ``l`` of ``value`` (``index[-1]`` is ``c0``, the
        innermost axis): the anchor's result cast to ``out_dtype``, then the epilogue, in vector code. Every
        lane must be in bounds, or only the first ``valid_lanes`` (i64) lanes are read and written."""
        from .lower_elemwise import emit_cast
        from .vec_epilogue import LaneIndex, VectorBuilder
        lanes = value.type.count
        mask = None
        if valid_lanes is not None:
            iota = vector_const(ir.VectorType(I64, lanes), list(range(lanes)))
            mask = builder.icmp_signed("<", iota, splat(builder, valid_lanes, lanes))
        vb = VectorBuilder(builder, lanes, mask)
        lane_index = list(index[:-1]) + [LaneIndex(index[-1])]
        value = emit_cast(vb, value, "int32", out_dtype)
        if self._epilogue is not None:
            value = self._vector_epilogue(vb, lane_index, value)
        self._outputs[0].store(vb, lane_index, value)

    def output_buffer(self, k: int = 0) -> Buffer:
        return self._outputs[k]

    @property
    def has_epilogue(self) -> bool:
        return self._epilogue is not None

    def parallel(self, builder, extent, name="p"):
        return self.kernel.parallel(builder, extent, name)

    def data(self, array, key=None) -> Buffer:
        return self.kernel.data(array, key)


@dataclass(frozen=True)
class CompiledKernelSpec:
    """The result of code generation for a group: the IR module and what its ``args`` must point at."""
    module: ir.Module
    slots: tuple[Slot, ...]
    parallel_extent: int


def _tensor_type(expr: Expr) -> TensorType:
    t = expr.checked_type
    if not isinstance(t, TensorType):
        raise CodegenError(f"expected a tensor value, found {t}")
    return t


def _const_value(group_node: Call, i: int) -> np.ndarray:
    arg = group_node.args[i]
    if not isinstance(arg, Constant):
        raise CodegenError(f"{group_node.op.name}: argument {i} ({group_node.op.op_def.arg_names[i]}) must be a "
                           f"constant for the CPU backend, found {type(arg).__name__}",
                           hint="bind parameters with params=... and fold constants before building")
    return arg.data


def broadcast_index(builder: ir.IRBuilder, out_index: list, out_shape, in_shape) -> list:
    """numpy broadcasting: the input element an output element reads."""
    r = len(in_shape)
    lead = len(out_shape) - r
    zero = ir.Constant(I64, 0)
    return [zero if in_shape[d] == 1 else out_index[lead + d] for d in range(r)]


class _TreeEmitter:
    """Emits the value of a group's element-lowered nodes at one index, iteratively (no recursion)."""

    def __init__(self, kb: KernelBuilder, group: FusedGroup, leaf_values: dict[int, ir.Value] | None = None):
        self.kb = kb
        self.group = group
        self.member = {id(n) for n in group.element_nodes}
        self.leaf_values = leaf_values or {}

    def emit(self, builder: ir.IRBuilder, root_index: list, leaf_values: dict[int, ir.Value]) -> ir.Value:
        nodes = self.group.element_nodes
        index_of: dict[int, list] = {id(nodes[-1]): root_index}
        arg_index: dict[tuple[int, int], list] = {}
        # Top-down: which element of each operand every node reads.
        for node in reversed(nodes):
            low = get_lowering(node)
            out_t = _tensor_type(node)
            ctx = ElementContext(self.kb, index_of[id(node)], out_t)
            if low.index_map is not None:
                maps = low.index_map(ctx, builder, node, index_of[id(node)])
            else:
                maps = [None if i in low.const_args or not isinstance(a.checked_type, TensorType) else
                        broadcast_index(builder, index_of[id(node)], out_t.shape, a.checked_type.shape)
                        for i, a in enumerate(node.args)]
            for i, a in enumerate(node.args):
                if i in low.const_args:
                    continue
                if id(a) in self.member:
                    index_of[id(a)] = maps[i]
                else:
                    arg_index[(id(node), i)] = maps[i]
        # Bottom-up: the values (a member whose value is given, e.g. a bias folded into the anchor, is skipped).
        values: dict[int, ir.Value] = {}
        for node in nodes:
            if id(node) in leaf_values:
                values[id(node)] = leaf_values[id(node)]
                continue
            low = get_lowering(node)
            args = []
            for i, a in enumerate(node.args):
                if i in low.const_args:
                    args.append(_const_value(node, i))
                elif id(a) in self.member:
                    args.append(values[id(a)])
                elif id(a) in leaf_values:
                    args.append(leaf_values[id(a)])
                else:
                    args.append(self._load_leaf(builder, a, arg_index[(id(node), i)]))
            ctx = ElementContext(self.kb, index_of[id(node)], _tensor_type(node),
                                 [a.checked_type for a in node.args])
            values[id(node)] = low.compute(ctx, builder, node, args)
        return values[id(nodes[-1])]

    def _load_leaf(self, builder: ir.IRBuilder, expr: Expr, index: list) -> ir.Value:
        t = _tensor_type(expr)
        if isinstance(expr, Constant) and expr.data.size == 1:
            return const_of(t.dtype, expr.data.reshape(-1)[0])
        if isinstance(expr, Constant):
            buf = self.kb.data(expr.data, key=f"const{id(expr)}")
        else:
            buf = self.kb.input(expr, t)
        return buf.load(builder, index)


def _parallel_axis(shape) -> int:
    for d, n in enumerate(shape):
        if n > 1:
            return d
    return 0


def emit_group(codegen, group: FusedGroup) -> CompiledKernelSpec:
    kb = KernelBuilder(codegen)
    b = kb.builder
    if group.anchor is None:
        _emit_injective(kb, b, group)
    else:
        _emit_anchor(kb, b, group)
    kb.finish()
    return CompiledKernelSpec(kb.module, tuple(kb.slots), kb.parallel_extent)


def _emit_injective(kb: KernelBuilder, b: ir.IRBuilder, group: FusedGroup) -> None:
    out_t = _tensor_type(group.root)
    out = kb.output(0, out_t)
    tree = _TreeEmitter(kb, group)
    shape = out_t.shape
    if len(shape) == 0 or out_t.size == 0:
        if out_t.size == 0:
            return
        with kb.parallel(b, 1):
            out.store(b, [], tree.emit(b, [], {}))
        return
    ax = _parallel_axis(shape)
    zero = ir.Constant(I64, 0)
    with kb.parallel(b, shape[ax]) as p:
        with loop_nest(b, shape[ax + 1:]) as inner:
            index = [zero] * ax + [p] + inner
            out.store(b, index, tree.emit(b, index, {}))


def _emit_anchor(kb: KernelBuilder, b: ir.IRBuilder, group: FusedGroup) -> None:
    node = group.anchor
    low = get_lowering(node)
    assert isinstance(low, KernelLowering)
    if isinstance(node.checked_type, TupleType):
        outs = [kb.output(k, t) for k, t in enumerate(node.checked_type.fields)]
        out_type = node.checked_type
    else:
        final_t = _tensor_type(group.root)
        outs = [kb.output(0, final_t)]
        out_type = _tensor_type(node)
    epilogue = None
    vector_epilogue = None
    folded: list[int] = []  # epilogue members the lowering computed itself (see KernelContext.take_bias)
    if group.element_nodes:
        tree = _TreeEmitter(kb, group)

        def epilogue(builder, index, value):
            return tree.emit(builder, index, {k: value for k in [id(node)] + folded})

    if isinstance(out_type, TensorType) and len(outs) == 1 and vector_epilogue_ok(group):
        vector_epilogue = epilogue or (lambda builder, index, value: value)
    ctx = KernelContext(kb, node, out_type, epilogue, outs, vector_epilogue, group, folded)
    args: list[Any] = []
    for i, a in enumerate(node.args):
        if i in low.const_args:
            args.append(_const_value(node, i))
        elif i == 0 and group.data_pad is not None:
            args.append(PaddedInput(_operand_buffer(kb, group.data_pad.args[0]), group.data_pad.attrs.pad_width))
        elif isinstance(a, Tuple):
            args.append([_operand_buffer(kb, f) for f in a.fields])
        else:
            args.append(_operand_buffer(kb, a))
    low.emit(ctx, b, node, args)


def _operand_buffer(kb: KernelBuilder, expr: Expr):
    t = _tensor_type(expr)
    if isinstance(expr, Constant):
        return ConstBuffer(kb.data(expr.data, key=f"const{id(expr)}"), expr.data)
    return kb.input(expr, t)


class ConstBuffer(Buffer):
    """A constant operand: usable as a buffer, and its value is known at compile time (``.value``)."""

    def __init__(self, buf: Buffer, value: np.ndarray):
        object.__setattr__(self, "ptr", buf.ptr)
        object.__setattr__(self, "shape", buf.shape)
        object.__setattr__(self, "dtype", buf.dtype)
        object.__setattr__(self, "value", value)


class PaddedInput(Buffer):
    """An operand read through an absorbed ``nn.pad`` (``FusedGroup.data_pad``): the buffer is the unpadded
    tensor and ``pad_width`` says how the lowering must pad it (with the value its absorbs_pad check accepted)."""

    def __init__(self, buf: Buffer, pad_width):
        object.__setattr__(self, "ptr", buf.ptr)
        object.__setattr__(self, "shape", buf.shape)
        object.__setattr__(self, "dtype", buf.dtype)
        object.__setattr__(self, "pad_width", tuple(tuple(int(v) for v in p) for p in pad_width))
