"""``from_tflite``: import a ``.tflite`` model as an IRModule whose evaluation is bit-exact with TFLite.

Usage::

    mod, params = byoc.frontend.from_tflite("model.tflite")               # LiteRT BUILTIN_REF semantics
    mod, params = byoc.frontend.from_tflite(data, semantics="tflm")       # TFLite Micro's kernels

* ``semantics="litert"`` reproduces ai-edge-litert's reference kernels (FULLY_CONNECTED requantizes in double,
  LOGISTIC/TANH use the float32 lookup table); ``"tflm"`` reproduces TFLite Micro (fixed-point FC multiplier from
  the float32 scale product, fixed-point LOGISTIC/TANH). Every other op is the same in both.
* ``main``'s parameters are the model's inputs, named after their tensors (sanitised to ``[A-Za-z_][\\w.]*``).
  Weights, biases, scales and zero points are bound as constants in the IR; the returned ``params`` is always an
  empty dict (kept for TVM's ``(mod, params)`` calling convention).
* Every node carries ``Span(<TFLite tensor name>)`` of the tensor it computes (a whole ``pad → conv → bias →
  requantize → clip`` chain carries its output tensor's name; weights carry their own tensor's name); unnamed
  tensors are called ``t<index>``. The last node of a chain is the one whose value equals the TFLite tensor.
* Shapes are the stored static shapes; a dynamic ``shape_signature`` (e.g. hello_world's batch of -1) is
  imported at its stored size (1).
* The file is validated defensively (``tflite_reader``): corrupt or inconsistent files raise ``ModelError``
  naming the tensor/operator and file offset; unsupported ops are reported together in one
  ``UnsupportedOpsError``. Nothing in the file is executed; constants are zero-copy views of the bytes.
"""
from __future__ import annotations

import os
import struct
from collections import OrderedDict

import numpy as np

from ..errors import ByocError, ModelError, UnsupportedOpsError
from ..ir.expr import Constant, Expr, Function, Span, Tuple, Var
from ..ir.module import IRModule
from ..ir.types import FuncType, TensorType, TupleType
from ..ops.registry import list_ops
from . import tflite_ops_conv, tflite_ops_elementwise, tflite_ops_shape  # noqa: F401  (register converters)
from . import tflite_ops_activation, tflite_ops_compare, tflite_ops_pool_reduce, tflite_ops_resize  # noqa: F401
from . import tflite_ops_lstm  # noqa: F401
from . import tflite_ops_detection, tflite_ops_svdf  # noqa: F401
from .tflite_context import CONVERTERS, QUANT_DTYPES, OpContext, tensor_name
from .tflite_quant import sanitize_name
from .tflite_reader import TensorInfo, TFLiteModel, read_model

__all__ = ["from_tflite", "supported_ops", "SEMANTICS"]

SEMANTICS = ("litert", "tflm")
_MAX_FILE_BYTES = 2**31  # flatbuffers address 32-bit offsets; larger inputs are not flatbuffer models


def supported_ops() -> list[str]:
    """TFLite builtin ops the importer converts (whether or not their IR ops are all registered)."""
    return sorted(CONVERTERS)


def from_tflite(model, shape_dict=None, dtype_dict=None, *, semantics: str = "litert"):
    """Import a TFLite model (path, bytes, or a ``tflite.Model``); returns ``(IRModule, params)``.

    ``shape_dict``/``dtype_dict`` (TVM's positional order) are keyed by input tensor name (as in the file, or as
    sanitised into the parameter name); if given they must agree with the file.
    """
    if semantics not in SEMANTICS:
        raise ModelError(f"from_tflite: unknown semantics {semantics!r}", hint="one of " + ", ".join(SEMANTICS))
    parsed = read_model(_model_bytes(model))
    importer = _Importer(parsed, semantics)
    mod = importer.convert()
    importer.check_user_shapes(shape_dict, dtype_dict)
    return mod, {}


def _model_bytes(model) -> bytes:
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
    elif isinstance(model, (str, os.PathLike)):
        try:
            size = os.path.getsize(model)
            if size > _MAX_FILE_BYTES:
                raise ModelError(f"{os.fspath(model)}: {size} bytes is too large for a TFLite flatbuffer")
            with open(model, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ModelError(f"cannot read TFLite model {os.fspath(model)!r}: {e.strerror or e}") from None
    elif hasattr(model, "_tab") and hasattr(model._tab, "Bytes"):  # a tflite.Model (TVM's calling convention)
        data = bytes(model._tab.Bytes)
    else:
        raise ModelError(f"from_tflite expects a path, bytes or a tflite.Model, got {type(model).__name__}")
    if len(data) > _MAX_FILE_BYTES:
        raise ModelError(f"{len(data)} bytes is too large for a TFLite flatbuffer")
    return data


class _Importer:
    def __init__(self, model: TFLiteModel, semantics: str):
        self.model = model
        self.semantics = semantics
        self.exprs: dict[int, Expr] = {}
        self.constants: dict[tuple, Constant] = {}
        self.producer: dict[int, int] = {}
        self.params: list[Var] = []

    # ------------------------------------------------------------------ checks before converting
    def _op_is_quantized(self, op) -> bool:
        tensors = [self.model.tensors[i] for i in op.inputs if i >= 0]
        data = [t for t in tensors if self.model.buffers[t.buffer][1] == 0] or tensors
        return bool(data) and data[0].dtype in QUANT_DTYPES

    def check_supported(self) -> None:
        registered = set(list_ops())
        missing: "OrderedDict[str, list[int]]" = OrderedDict()
        reasons: dict[str, str] = {}
        for op in self.model.operators:
            spec = CONVERTERS.get(op.opcode)
            if spec is None:
                missing.setdefault(op.opcode, []).append(op.index)
                continue
            needed = spec.quant_ops if self._op_is_quantized(op) else spec.float_ops
            absent = [n for n in needed if n not in registered]
            if absent:
                key = f"{op.opcode} ({'quantized' if self._op_is_quantized(op) else 'float'})"
                missing.setdefault(key, []).append(op.index)
                reasons[key] = "needs IR op(s) " + ", ".join(absent) + " not registered in byoc.ops"
        if not missing:
            return
        lines = []
        for name, idx in missing.items():
            shown = ", ".join(str(i) for i in idx[:20]) + (", ..." if len(idx) > 20 else "")
            extra = f" — {reasons[name]}" if name in reasons else ""
            lines.append(f"  {name} ×{len(idx)} (operator{'s' if len(idx) > 1 else ''} {shown}){extra}")
        total = sum(len(v) for v in missing.values())
        err = UnsupportedOpsError(
            f"TFLite model uses {total} unsupported operator(s) of {len(missing)} kind(s):\n" + "\n".join(lines),
            hint="supported builtin ops: " + ", ".join(supported_ops()))
        err.unsupported = {k: tuple(v) for k, v in missing.items()}
        raise err

    # ------------------------------------------------------------------ tensors → expressions
    def expr_of(self, t: TensorInfo, ctx: OpContext) -> Expr:
        e = self.exprs.get(t.index)
        if e is not None:
            return e
        value = self.model.constant(t)
        if value is not None:
            return self.constant_of(t, value, None)
        if t.is_variable:
            raise ctx.fail(f"{t.label} is a variable (stateful) tensor; variables are not supported")
        later = [op.index for op in self.model.operators if t.index in op.outputs]
        raise ctx.fail(f"reads {t.label}, which is not a graph input, has no data and "
                       + (f"is only produced later by operator {later[0]}" if later else "is produced by no operator"),
                       hint="operators must be stored in execution order" if later else None)

    def constant_of(self, t: TensorInfo, value: np.ndarray, reshape, transpose=None) -> Constant:
        key = (t.index, reshape, transpose)
        c = self.constants.get(key)
        if c is None:
            if reshape is not None:
                value = value.reshape(reshape)
            if transpose is not None:
                value = np.ascontiguousarray(value.transpose(transpose))
            c = Constant(value, Span(tensor_name(t)))
            c._set_checked_type(c.type)
            self.constants[key] = c
        return c

    def _make_inputs(self) -> None:
        used: dict[str, int] = {}
        for i in self.model.inputs:
            t = self.model.tensors[i]
            if i in self.exprs:
                raise ModelError(f"TFLite model: {t.label} is listed twice as a graph input")
            if t.dtype not in ("float32", "float16", "int32", "uint8", "int64", "bool", "int16", "int8"):
                raise ModelError(f"TFLite model: graph input {t.label} has unsupported type {t.dtype}")
            name = sanitize_name(tensor_name(t))
            if name in used:
                name = f"{name}_{i}"
            used[name] = i
            v = Var(name, TensorType(t.shape, t.dtype), Span(tensor_name(t)))
            v._set_checked_type(v.type_annotation)
            self.exprs[i] = v
            self.params.append(v)

    # ------------------------------------------------------------------ conversion
    def convert(self) -> IRModule:
        m = self.model
        if not m.outputs:
            raise ModelError("TFLite model: the subgraph has no outputs")
        self.check_supported()
        self._make_inputs()
        for op in m.operators:
            self._convert_op(op)
        outs = []
        for i in m.outputs:
            t = m.tensors[i]
            if i not in self.exprs:
                value = m.constant(t)
                if value is None:
                    raise ModelError(f"TFLite model: graph output {t.label} is computed by no operator")
                self.exprs[i] = self.constant_of(t, value, None)
            outs.append(self.exprs[i])
        if len(outs) == 1:
            body = outs[0]
        else:
            body = Tuple(tuple(outs), Span("outputs"))
            body._set_checked_type(TupleType(tuple(o.checked_type for o in outs)))
        func = Function(tuple(self.params), body)
        func._set_checked_type(FuncType(tuple(p.checked_type for p in self.params), body.checked_type))
        mod = IRModule()
        mod["main"] = func
        return mod

    def _convert_op(self, op) -> None:
        ctx = OpContext(self, op)
        if not op.outputs:
            raise ctx.fail("the operator has no outputs")
        for j in op.outputs:
            t = self.model.tensors[j]
            if j in self.exprs or j in self.producer or self.model.buffers[t.buffer][1]:
                raise ctx.fail(f"output {t.label} is already defined (a graph input, a constant or the output "
                               f"of operator {self.producer.get(j, '?')})")
        spec = CONVERTERS[op.opcode]
        try:
            outs = spec.fn(ctx)
        except ModelError:
            raise
        except ByocError as e:
            raise ctx.fail(e.message, hint=e.hint) from None
        except (ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, OverflowError, MemoryError,
                struct.error) as e:
            raise ctx.fail(f"malformed operator ({type(e).__name__}: {e})",
                           hint="the file is probably corrupt") from None
        for j, expr in zip(op.outputs, outs):
            t = self.model.tensors[j]
            declared = ctx.type_of(t)
            # a custom op's outputs may be stored shapeless (sized by the kernel's Prepare): take the computed type
            sized_by_prepare = op.opcode.startswith("CUSTOM:") and t.shape == () and \
                getattr(expr.checked_type, "dtype", None) == t.dtype
            if expr.checked_type != declared and not sized_by_prepare:
                raise ctx.fail(f"output {t.label} is declared {declared}, but the operator computes "
                               f"{expr.checked_type}", hint="the file's shapes are inconsistent")
            self.exprs[j] = expr
            self.producer[j] = op.index

    def check_user_shapes(self, shape_dict, dtype_dict) -> None:
        by_name = {}
        for p in self.params:
            by_name[p.name_hint] = p
            if p.span is not None:  # the tensor's name as written in the file
                by_name.setdefault(p.span.source, p)
        for what, given in (("shape_dict", shape_dict), ("dtype_dict", dtype_dict)):
            unknown = [k for k in (given or {}) if k not in by_name]
            if unknown:
                raise ModelError(f"{what} names {', '.join(map(repr, unknown))}, which the model does not have as "
                                 f"an input", hint="inputs: " + ", ".join(p.name_hint for p in self.params))
        for k, shape in (shape_dict or {}).items():
            t = by_name[k].type_annotation
            if tuple(int(d) for d in shape) != t.shape:
                raise ModelError(f"shape_dict gives input {k} shape {tuple(shape)}, the model has {t.shape}",
                                 hint="TFLite models have static input shapes")
        for k, dtype in (dtype_dict or {}).items():
            t = by_name[k].type_annotation
            if str(dtype) != t.dtype:
                raise ModelError(f"dtype_dict gives input {k} dtype {dtype}, the model has {t.dtype}")
