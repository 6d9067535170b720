"""The per-operator conversion context and the converter registry of the TFLite importer.

A converter is ``fn(ctx: OpContext) -> list[Expr]`` (one expression per TFLite output tensor), registered with
``@converter("CONV_2D", quant=(IR ops it emits), float=(...))`` so the importer can report every op whose IR ops
are not registered (yet) in one ``UnsupportedOpsError`` before converting anything.

Every node a converter builds through the context is typed on construction (the op's type relation runs
immediately) and carries ``Span(<output tensor name>)``; weights carry the span of their own tensor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ByocError, ModelError
from ..ir.expr import Call, Constant, Expr, Op, Span, Tuple, TupleGetItem
from ..ir.types import TensorType, TupleType
from .tflite_quant import ACTIVATION_NAMES, activation_bounds, dtype_limits, float_activation_bounds
from .tflite_reader import OperatorInfo, TensorInfo, TFLiteModel

__all__ = ["ConverterSpec", "CONVERTERS", "converter", "OpContext", "QUANT_DTYPES", "tensor_name"]

QUANT_DTYPES = ("int8", "uint8", "int16")
_IR_DTYPES = ("float32", "float16", "int32", "uint8", "int64", "bool", "int16", "int8", "float64")


@dataclass(frozen=True)
class ConverterSpec:
    name: str
    fn: Callable
    quant_ops: tuple[str, ...]
    float_ops: tuple[str, ...]


CONVERTERS: dict[str, ConverterSpec] = {}


def converter(*names: str, quant: tuple[str, ...] = (), float: tuple[str, ...] = ()):  # noqa: A002
    """Register ``fn`` as the converter of the given TFLite builtin op names."""
    def register(fn):
        for n in names:
            CONVERTERS[n] = ConverterSpec(n, fn, tuple(quant), tuple(float))
        return fn
    return register


def tensor_name(t: TensorInfo) -> str:
    """The tensor's name, or a stable generated one (t<index>) for unnamed tensors."""
    return t.name if t.name else f"t{t.index}"


class OpContext:
    """What a converter sees: the operator, its tensors, and typed-node builders."""

    def __init__(self, importer, op: OperatorInfo):
        self.importer = importer
        self.model: TFLiteModel = importer.model
        self.op = op
        self.options = op.options
        self.semantics: str = importer.semantics
        out_name = tensor_name(self.model.tensors[op.outputs[0]]) if op.outputs else f"op{op.index}"
        self.span = Span(out_name)

    # ------------------------------------------------------------ errors
    def fail(self, problem: str, hint: str | None = None) -> ModelError:
        return ModelError(f"TFLite {self.op.label} at file offset {self.op.offset}: {problem}", hint=hint)

    # ------------------------------------------------------------ tensors
    def check_arity(self, min_inputs: int, max_inputs: int | None = None, outputs: int = 1) -> None:
        n = len(self.op.inputs)
        hi = min_inputs if max_inputs is None else max_inputs
        if not min_inputs <= n <= hi:
            want = str(min_inputs) if hi == min_inputs else f"{min_inputs} to {hi}"
            raise self.fail(f"expected {want} inputs, found {n}")
        if outputs >= 0 and len(self.op.outputs) != outputs:
            raise self.fail(f"expected {outputs} output(s), found {len(self.op.outputs)}")

    def has_input(self, i: int) -> bool:
        return i < len(self.op.inputs) and self.op.inputs[i] >= 0

    def tensor(self, i: int) -> TensorInfo:
        if not self.has_input(i):
            raise self.fail(f"input {i} is missing")
        return self.model.tensors[self.op.inputs[i]]

    def out_tensor(self, j: int = 0) -> TensorInfo:
        return self.model.tensors[self.op.outputs[j]]

    def input(self, i: int) -> Expr:
        """The expression of input ``i``: a graph input, an earlier op's output, or a constant."""
        return self.importer.expr_of(self.tensor(i), self)

    def const_value(self, i: int, what: str) -> np.ndarray:
        """The constant data of input ``i`` (e.g. a shape vector), which must be in the file."""
        t = self.tensor(i)
        value = self.model.constant(t)
        if value is None:
            value = self._folded(t)
        if value is None:
            raise self.fail(f"{what} ({t.label}) must be a constant tensor",
                            hint="dynamic shapes/axes are not supported")
        return value

    def _folded(self, t: TensorInfo) -> np.ndarray | None:
        """The value of a tensor an earlier operator computed from constants only (shape arithmetic: SHAPE of a
        static tensor, STRIDED_SLICE, PACK, MUL, ...), evaluated at import; None when it reads a graph input."""
        expr = self.importer.exprs.get(t.index)
        if expr is None or isinstance(expr, Constant):
            return None if expr is None else np.asarray(expr.data)
        from ..interpreter import evaluate
        from ..ir.analysis import free_vars
        from ..ir.expr import Function
        from ..ir.module import IRModule
        if free_vars(expr) or not isinstance(expr.checked_type, TensorType):
            return None
        return np.asarray(evaluate(IRModule.from_expr(Function((), expr)))[0])

    def int_vector(self, i: int, what: str, length: int | None = None) -> list[int]:
        t = self.tensor(i)
        if t.dtype not in ("int32", "int64"):
            raise self.fail(f"{what} ({t.label}) must be int32 or int64, found {t.dtype}")
        v = [int(x) for x in self.const_value(i, what).reshape(-1)]
        if length is not None and len(v) != length:
            raise self.fail(f"{what} ({t.label}) must have {length} values, found {len(v)}")
        return v

    def paddings(self, i: int, rank: int) -> np.ndarray:
        """The constant [rank, 2] int32/int64 paddings of PAD, PADV2 and MIRROR_PAD."""
        t = self.tensor(i)
        if t.dtype not in ("int32", "int64") or t.shape != (rank, 2):
            raise self.fail(f"paddings {t.label} must be an int32/int64 [{rank}, 2] tensor, found {t.dtype} "
                            f"{list(t.shape)}")
        return self.const_value(i, "paddings")

    def nhwc_input(self, i: int = 0) -> TensorInfo:
        """Input ``i``, which must be a non-empty 4-D (NHWC) tensor (resizes)."""
        t = self.tensor(i)
        if len(t.shape) != 4 or 0 in t.shape:
            raise self.fail(f"input {t.label} has shape {list(t.shape)}; expected a non-empty NHWC tensor")
        return t

    def resize_options(self) -> tuple[list[int], bool, bool]:
        """RESIZE_*'s positive (height, width) size input and its align_corners / half_pixel_centers flags."""
        size = self.int_vector(1, "size", 2)
        if min(size) <= 0:
            raise self.fail(f"size {size} must be positive")
        align, half = bool(self.options.get("align_corners", 0)), bool(self.options.get("half_pixel_centers", 0))
        if align and half:
            raise self.fail("align_corners and half_pixel_centers cannot both be set (TFLite rejects it)")
        return size, align, half

    def axis(self, value: int, rank: int, what: str = "axis") -> int:
        """``value`` normalised into [0, rank), or a ModelError naming the op."""
        if not -rank <= value < rank:
            raise self.fail(f"{what} {value} is out of range for rank {rank}")
        return value % rank

    def same_dtype(self, *tensors: TensorInfo) -> str:
        """The one dtype all ``tensors`` share (TFLite kernels require it), or a ModelError listing them."""
        if len({t.dtype for t in tensors}) != 1:
            raise self.fail("operands and result must share one dtype, found "
                            + ", ".join(f"{t.label}: {t.dtype}" for t in tensors))
        return tensors[0].dtype

    # ------------------------------------------------------------ quantization
    def quant(self, t: TensorInfo, what: str) -> tuple[float, int]:
        """(scale, zero point) of a per-tensor quantized activation, validated."""
        q = t.quant
        if q is None:
            raise self.fail(f"{what} {t.label} ({t.dtype}) has no quantization parameters",
                            hint="a quantized op needs scale and zero point on its activations")
        if q.scale.size != 1:
            raise self.fail(f"{what} {t.label} has {q.scale.size} scales; activations must be quantized per tensor")
        scale = float(q.scale[0])
        if not (np.isfinite(scale) and scale > 0):
            raise self.fail(f"{what} {t.label} has scale {scale}; scales must be positive and finite")
        zp = int(q.zero_point[0])
        lo, hi = dtype_limits(t.dtype) if t.dtype in QUANT_DTYPES else (-(2**31), 2**31 - 1)
        if not lo <= zp <= hi:
            raise self.fail(f"{what} {t.label} has zero point {zp}, outside the {t.dtype} range [{lo}, {hi}]")
        return scale, zp

    def expect_dtype(self, t: TensorInfo, allowed: tuple[str, ...], op: str) -> None:
        if t.dtype not in allowed:
            raise self.fail(f"{t.label} is {t.dtype}; {op} takes " + ", ".join(allowed), hint="LiteRT rejects it too")

    def zero_points_zero(self, *tensors: TensorInfo) -> None:
        """LiteRT's int16 kernels are symmetric: every int16 operand and result has zero point 0 (ENSUREd)."""
        for t in tensors:
            zp = int(t.quant.zero_point[0]) if t.quant is not None and t.quant.zero_point.size else 0
            if zp != 0:
                raise self.fail(f"int16 {self.op.opcode} needs zero point 0 on every tensor, found {zp} on {t.label}",
                                hint="LiteRT rejects this model too")

    def prepare(self, fn) -> None:
        """Run LiteRT's Prepare-time parameter derivation at import, so broken scales are refused here."""
        try:
            fn()
        except ByocError as e:
            raise self.fail(e.message, hint=e.hint) from None

    def quant_operands(self, *tensors_and_roles) -> list[Expr]:
        """(scale, zero point) constants for each (tensor, role), in that order."""
        out: list[Expr] = []
        for t, role in tensors_and_roles:
            s, zp = self.quant(t, role)
            out += [self.const(s, "float32"), self.const(zp, "int32")]
        return out

    def same_quant(self, a: TensorInfo, b: TensorInfo, why: str) -> None:
        """LiteRT's TF_LITE_ENSURE_EQ on (scale, zero point) of two quantized tensors."""
        if a.dtype not in QUANT_DTYPES:
            return
        sa, za = self.quant(a, "input")
        sb, zb = self.quant(b, "output")
        if np.float32(sa) != np.float32(sb) or za != zb:
            raise self.fail(f"{a.label} has (scale {sa}, zero point {za}) but {b.label} has ({sb}, {zb}); {why} "
                            "requires equal quantization", hint="LiteRT rejects this model too")

    def weight_quant(self, t: TensorInfo, axis: int, what: str) -> tuple[np.ndarray, np.ndarray]:
        """(scales, zero points) of a weight quantized per tensor or per channel along ``axis``."""
        q = t.quant
        if q is None:
            raise self.fail(f"{what} {t.label} has no quantization parameters")
        scales = np.asarray(q.scale, np.float32)
        if not (np.all(np.isfinite(scales)) and np.all(scales > 0)):
            raise self.fail(f"{what} {t.label} has a non-positive or non-finite scale")
        if scales.size != 1:
            if q.quantized_dimension != axis or t.shape[axis] != scales.size:
                raise self.fail(f"{what} {t.label} has {scales.size} scales on quantized_dimension "
                                f"{q.quantized_dimension}; expected one per channel of axis {axis} "
                                f"({t.shape[axis] if axis < len(t.shape) else '?'} channels)")
        zps = np.asarray(q.zero_point, np.int64)
        lo, hi = dtype_limits(t.dtype) if t.dtype in QUANT_DTYPES else (-(2**31), 2**31 - 1)
        if np.any(zps < lo) or np.any(zps > hi):
            raise self.fail(f"{what} {t.label} has a zero point outside the {t.dtype} range")
        return scales, zps

    def is_quantized(self, t: TensorInfo) -> bool:
        return t.dtype in QUANT_DTYPES

    def activation(self) -> int:
        act = int(self.options.get("fused_activation_function", 0))
        if act not in ACTIVATION_NAMES:
            raise self.fail(f"fused_activation_function {act} is not a TFLite ActivationFunctionType",
                            hint="valid values: " + ", ".join(f"{k}={v}" for k, v in ACTIVATION_NAMES.items()))
        return act

    def apply_activation(self, expr: Expr, out: TensorInfo, act: int | None = None) -> Expr:
        """The fused-activation clip (§2.2); nothing when it would be the full range."""
        act = self.activation() if act is None else act
        if out.dtype in QUANT_DTYPES:
            scale, zp = self.quant(out, "output")
            lo, hi = activation_bounds(act, scale, zp, out.dtype)
            if (lo, hi) == dtype_limits(out.dtype):
                return expr
            return self.call("clip", [expr], {"a_min": float(lo), "a_max": float(hi)})
        bounds = float_activation_bounds(act)
        if bounds is None:
            return expr
        return self.call("clip", [expr], {"a_min": bounds[0], "a_max": bounds[1]})

    # ------------------------------------------------------------ node builders
    def call(self, op_name: str, args, attrs: dict | None = None) -> Call:
        """A typed call with this op's span; type errors become ModelErrors naming the operator."""
        try:
            node = Call(Op.get(op_name), tuple(args), attrs, self.span)
            node._set_checked_type(node.op.op_def.type_rel([a.checked_type for a in node.args], node.attrs))
        except ModelError:
            raise
        except ByocError as e:
            raise self.fail(f"building {op_name}: {e.message}", hint=e.hint) from None
        return node

    def const(self, value, dtype: str) -> Constant:
        arr = np.array(value, dtype=dtype)
        arr.setflags(write=False)  # Constant keeps a read-only array as is (no second copy)
        c = Constant(arr, self.span)
        c._set_checked_type(TensorType(arr.shape, dtype))
        return c

    def tuple(self, fields) -> Tuple:
        t = Tuple(tuple(fields), self.span)
        t._set_checked_type(TupleType(tuple(f.checked_type for f in t.fields)))
        return t

    def item(self, tup: Expr, index: int, span: Span | None = None) -> TupleGetItem:
        node = TupleGetItem(tup, index, span or self.span)
        node._set_checked_type(tup.checked_type.fields[index])
        return node

    def weight(self, i: int, reshape: tuple[int, ...] | None = None,
               transpose: tuple[int, ...] | None = None) -> Constant:
        """Input ``i`` as a constant (zero-copy view of the file), optionally reshaped, then transposed (a copy)."""
        t = self.tensor(i)
        value = self.model.constant(t)
        if value is None:
            raise self.fail(f"weight {t.label} must be a constant tensor")
        return self.importer.constant_of(t, value, reshape, transpose)

    def type_of(self, t: TensorInfo) -> TensorType:
        if t.dtype not in _IR_DTYPES:
            raise self.fail(f"{t.label} has unsupported type {t.dtype}")
        return TensorType(t.shape, t.dtype)
