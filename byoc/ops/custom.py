"""``tflite.custom``: a TFLite CUSTOM operator the project has no converter for, kept as an opaque op.

A vendor model often ends in a custom operator (google-coral's PoseNet and BodyPix: ``CUSTOM:PosenetDecoderOp``).
The importer keeps such an operator as one ``tflite.custom`` call instead of refusing the model, so it can be
partitioned, profiled and reported: the op records its custom code (``name``), its options bytes (hex, never
interpreted), where it sits in the file, and its outputs' shapes, dtypes and quantization as the file declares
them. Nothing in the file is executed.

Operands: one tuple of the operator's present inputs, in order. Result: a tuple with one tensor per output. An
output the file stores without a shape (a kernel's Prepare sizes it, as PosenetDecoderOp's) is typed with the
stored empty shape and ``out_shapes_known`` False for it.

Executing it needs a kernel. Without one, ``compute`` raises ``NoKernelError`` naming the op, the operator index
and the file offset (every executor reaches it: ``byoc.evaluate``, the CPU build's host step, the NPU build's CPU
part). A user may register a numpy kernel by custom code::

    @byoc.register_custom_kernel("PosenetDecoderOp")
    def posenet_decoder(inputs, op):         # inputs: list of numpy arrays; op: CustomOpAttrs
        ...
        return heatmaps, offsets             # one array per output, declared dtype (and shape where known)

The registry holds Python callables only (registered in code, e.g. in a ``--patterns FILE.py`` file the CLI
executes); a model file can never name code to run. Pattern tables never offload the op (``cpu_only_reason``:
AnnotateTarget leaves it on the CPU with the reason "no kernel for CUSTOM:<name>").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ExecutionError, IRError, NoKernelError
from ..ir.attrs import Attrs
from ..ir.types import TensorType, TupleType
from .registry import FusionKind, register_op, register_op_attr
from .rel import fail

__all__ = ["CustomOpAttrs", "CUSTOM_OP", "register_custom_kernel", "unregister_custom_kernel", "custom_kernel",
           "registered_custom_kernels", "custom_kernels", "custom_output_shapes", "is_custom_call", "no_kernel_error", "require_kernels", "custom_ops_in", "check_static_outputs"]

CUSTOM_OP = "tflite.custom"


@dataclass(frozen=True)
class CustomOpAttrs(Attrs):
    name: str = ""                 # the operator's custom code, e.g. "PosenetDecoderOp"
    options_hex: str = ""          # its custom_options bytes as hex (kept, never interpreted)
    out_shapes: tuple = ()         # per output, as stored in the file
    out_dtypes: tuple = ()
    out_shapes_known: tuple = ()   # per output: False when the file stores no shape (sized at run time)
    out_scales: tuple = ()         # per output: its quantization scales (empty when not quantized)
    out_zero_points: tuple = ()
    operator_index: int = -1       # the operator's index in the subgraph
    file_offset: int = -1          # file offset of the operator table
    input_names: tuple = ()        # the TFLite tensors the operator reads (what to run up to)

    @property
    def opcode(self) -> str:
        return f"CUSTOM:{self.name}"

    @property
    def custom_options(self) -> bytes:
        return bytes.fromhex(self.options_hex)

    @property
    def num_outputs(self) -> int:
        return len(self.out_dtypes)

    def where(self) -> str:
        """'TFLite operator 37 (CUSTOM:X) at file offset 1224'."""
        return f"TFLite operator {self.operator_index} ({self.opcode}) at file offset {self.file_offset}"


def _rel(types, attrs: CustomOpAttrs):
    n = attrs.num_outputs
    if n == 0:
        raise fail(CUSTOM_OP, "attrs", "at least one output type", "none")
    for k, v in (("out_shapes", attrs.out_shapes), ("out_shapes_known", attrs.out_shapes_known)):
        if len(v) != n:
            raise fail(CUSTOM_OP, k, f"{n} entries (one per output)", len(v))
    if not isinstance(types[0], TupleType):
        raise fail(CUSTOM_OP, "inputs", "a tuple of tensors", types[0])
    return TupleType(tuple(TensorType(tuple(s), d) for s, d in zip(attrs.out_shapes, attrs.out_dtypes)))


# ------------------------------------------------------------------------------------------- kernel registry

Kernel = Callable[[list, CustomOpAttrs], object]
ShapeFn = Callable[[list, CustomOpAttrs], object]
_KERNELS: dict[str, Kernel] = {}
_SHAPES: dict[str, ShapeFn] = {}


def register_custom_kernel(name: str, kernel: Kernel | None = None, *, output_shapes: ShapeFn | None = None,
                           override: bool = False):
    """Register ``kernel(inputs, op) -> array | sequence of arrays`` for TFLite custom code ``name`` (without
    the ``CUSTOM:`` prefix). Usable as a decorator. ``inputs`` are the operator's present inputs as numpy arrays
    (quantized values, as stored); ``op`` is the call's ``CustomOpAttrs`` (options bytes, output types and
    quantization). Every executor then runs it: ``byoc.evaluate``, the CPU build (a host step) and the CPU part of
    an NPU build. Registering a name twice needs ``override=True``.

    ``output_shapes(input_types, op) -> [shape, ...]`` sizes the outputs the file stores without a shape (what the
    kernel's Prepare does in TFLite); the importer calls it, so register it before importing the model. Without
    it such outputs keep an unknown shape: ``byoc.evaluate`` runs the kernel, the CPU and NPU builds (static
    buffers) refuse to."""
    if not isinstance(name, str) or not name or name.startswith("CUSTOM:"):
        raise IRError(f"register_custom_kernel: name must be the custom code without 'CUSTOM:', got {name!r}",
                      hint='e.g. register_custom_kernel("PosenetDecoderOp", fn)')

    def wrap(fn: Kernel) -> Kernel:
        if not callable(fn):
            raise IRError(f"register_custom_kernel({name!r}): the kernel must be callable, got {type(fn).__name__}")
        if name in _KERNELS and not override and _KERNELS[name] is not fn:
            raise IRError(f"a kernel for CUSTOM:{name} is already registered",
                          hint="pass override=True to replace it, or unregister_custom_kernel first")
        _KERNELS[name] = fn
        if output_shapes is not None:
            _SHAPES[name] = output_shapes
        else:
            _SHAPES.pop(name, None)
        return fn

    return wrap(kernel) if kernel is not None else wrap


def unregister_custom_kernel(name: str) -> None:
    """Remove the kernel registered for ``name`` (nothing when there is none)."""
    _KERNELS.pop(name, None)
    _SHAPES.pop(name, None)


def custom_output_shapes(name: str) -> ShapeFn | None:
    """The ``output_shapes`` function registered with ``name``'s kernel, or None."""
    return _SHAPES.get(name)


def custom_kernel(name: str) -> Kernel | None:
    return _KERNELS.get(name)


def registered_custom_kernels() -> list[str]:
    return sorted(_KERNELS)


def custom_kernels() -> dict[str, Kernel]:
    """The registered kernels by name (a copy)."""
    return dict(_KERNELS)


def is_custom_call(node) -> bool:
    from ..ir.expr import Call, Op
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == CUSTOM_OP


def no_kernel_error(a: CustomOpAttrs) -> NoKernelError:
    reads = ", ".join(a.input_names) or "its inputs"
    return NoKernelError(
        f"{a.where()} has no kernel: byoc imported it as an opaque op, so the model can be partitioned, profiled "
        f"and reported, but not executed", op_name=a.opcode, operator_index=a.operator_index,
        file_offset=a.file_offset,
        hint=f"register a numpy kernel with byoc.register_custom_kernel({a.name!r}, fn) (on the command line: in a "
             f"--patterns FILE.py), or run the model up to the op's inputs ({reads}) with "
             f"byoc.frontend.cut_before_custom_ops(mod)")


def check_static_outputs(a: CustomOpAttrs) -> None:
    """Builds allocate static buffers: every output of ``a`` needs a known shape."""
    unknown = [j for j, k in enumerate(a.out_shapes_known) if not k]
    if unknown:
        raise ExecutionError(f"{a.where()}: output(s) {', '.join(map(str, unknown))} are stored without a shape, "
                             f"and a build allocates static buffers",
                             hint=f"register the kernel with output_shapes= (byoc.register_custom_kernel({a.name!r}, "
                                  f"fn, output_shapes=shape_fn)) before importing the model, or run it with "
                                  f"byoc.evaluate")


def custom_ops_in(func) -> list[CustomOpAttrs]:
    """The ``tflite.custom`` calls of ``func`` (not entering nested functions), in execution order."""
    from ..ir.traversal import post_order
    return [n.attrs for n in post_order(func.body, enter_functions=False) if is_custom_call(n)]


def require_kernels(func) -> None:
    """Raise ``NoKernelError`` for the first ``tflite.custom`` call in ``func`` without a registered kernel
    (executors call it before running anything, so no partial work is done)."""
    for a in custom_ops_in(func):
        if a.name not in _KERNELS:
            raise no_kernel_error(a)


def _check_result(a: CustomOpAttrs, out) -> tuple:
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(outs) != a.num_outputs:
        raise ExecutionError(f"the kernel for {a.opcode} returned {len(outs)} output(s); {a.where()} has "
                             f"{a.num_outputs}", hint="return one array per output, in the file's order")
    checked = []
    for j, (v, shape, dtype, known) in enumerate(zip(outs, a.out_shapes, a.out_dtypes, a.out_shapes_known)):
        v = np.asarray(v)
        if v.dtype.name != dtype:
            raise ExecutionError(f"the kernel for {a.opcode} returned {v.dtype.name} for output {j}; the file "
                                 f"declares {dtype}", hint="cast the result in the kernel (no silent conversion)")
        if known and tuple(v.shape) != tuple(shape):
            raise ExecutionError(f"the kernel for {a.opcode} returned shape {list(v.shape)} for output {j}; the "
                                 f"file declares {list(shape)}")
        checked.append(v)
    return tuple(checked)


def _compute(args, attrs: CustomOpAttrs):
    kernel = _KERNELS.get(attrs.name)
    if kernel is None:
        raise no_kernel_error(attrs)
    inputs = [np.asarray(x) for x in args[0]]
    try:
        out = kernel(inputs, attrs)
    except (ExecutionError, NoKernelError):
        raise
    except Exception as e:  # noqa: BLE001 - the user's kernel
        raise ExecutionError(f"the kernel registered for {attrs.opcode} ({attrs.where()}) raised "
                             f"{type(e).__name__}: {e}", hint="fix the kernel") from e
    return _check_result(attrs, out)


def _cpu_only_reason(call) -> str:
    a = call.attrs
    if a.name in _KERNELS:
        return (f"no kernel for {a.opcode} on an accelerator (TFLite operator {a.operator_index}): an opaque custom "
                f"operator stays on the CPU, where its registered numpy kernel runs")
    return (f"no kernel for {a.opcode} (TFLite operator {a.operator_index}): an opaque custom operator stays on "
            f"the CPU, and without a registered kernel the model cannot be executed")


register_op(CUSTOM_OP, ("inputs",), attrs=CustomOpAttrs, rel=_rel, fusion=FusionKind.OPAQUE, compute=_compute,
            doc="A TFLite CUSTOM operator without a converter, kept opaque (custom code, options bytes, output "
                "types from the file); runs only with a kernel from byoc.register_custom_kernel.")
register_op_attr(CUSTOM_OP, "cpu_only_reason", _cpu_only_reason)
