"""The lowering registry: one small function per op (or per kind of call of an op), in one of two shapes.

* element lowerings (ELEMWISE / BROADCAST / INJECTIVE ops) compute one output element:
  ``compute(ctx, builder, node, args) -> ir.Value`` where ``args[i]`` is the operand's element (an
  ``ir.Value``) or, for ``const_args``, the operand's numpy value known at compile time. An optional
  ``index_map(ctx, builder, node, out_index)`` says which element of each operand the output element reads
  (default: numpy broadcasting). Chains of these fuse into one loop nest.
* kernel lowerings emit a whole loop nest: ``emit(ctx, builder, node, args) -> None`` where ``args[i]`` is a
  ``Buffer`` (a list of them for tuple operands) or a numpy constant; results go through
  ``ctx.emit_output(builder, index, value)``, which applies any fused elementwise epilogue.

An op may have more than one lowering, chosen per call: ``lower_element(op, when=pred)`` /
``lower_kernel(op, when=pred)`` registers a variant used for the calls where ``pred(call)`` holds (variants are
tried in registration order); the registration without ``when`` is the op's default. ``get_lowering`` and
``effective_kind`` take the call (or, for the op-level default, its name), so fusion follows the chosen shape:
``image.resize2d`` keeps its nearest-neighbour element lowering (it fuses into consumers' loop nests, one load
per output element) while bilinear calls get a kernel lowering that reads four input elements.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...ir.expr import Call
from ...ops.registry import FusionKind, get_op_def

__all__ = ["ElementLowering", "KernelLowering", "lower_element", "lower_kernel", "get_lowering",
           "registered_lowerings", "effective_kind", "INJECTIVE_KINDS"]

INJECTIVE_KINDS = (FusionKind.ELEMWISE, FusionKind.BROADCAST, FusionKind.INJECTIVE)


@dataclass(frozen=True)
class ElementLowering:
    op: str
    compute: Callable
    const_args: tuple[int, ...] = ()
    index_map: Callable | None = None


@dataclass(frozen=True)
class KernelLowering:
    op: str
    emit: Callable
    const_args: tuple[int, ...] = ()
    epilogue: bool = True  # fused elementwise ops may follow it
    # absorbs_pad(node, pad_call) -> bool: the lowering reads its data operand (argument 0) through pad_call's
    # padding itself, so the nn.pad producing it need not be materialised (see fuse_ops).
    absorbs_pad: Callable | None = None


Lowering = ElementLowering | KernelLowering
_LOWERINGS: dict[str, Lowering] = {}                                   # op -> default lowering
_VARIANTS: dict[str, list[tuple[Callable[[Call], bool], Lowering]]] = {}  # op -> [(when, lowering)]


def _register(op: str, low: Lowering, when: Callable[[Call], bool] | None) -> None:
    if when is None:
        _LOWERINGS[op] = low
    else:
        _VARIANTS.setdefault(op, []).append((when, low))


def lower_element(op: str, const_args: tuple[int, ...] = (), index_map: Callable | None = None,
                  when: Callable[[Call], bool] | None = None):
    def register(fn):
        _register(op, ElementLowering(op, fn, tuple(const_args), index_map), when)
        return fn
    return register


def lower_kernel(op: str, const_args: tuple[int, ...] = (), epilogue: bool = True, absorbs_pad: Callable | None = None,
                 when: Callable[[Call], bool] | None = None):
    def register(fn):
        _register(op, KernelLowering(op, fn, tuple(const_args), epilogue, absorbs_pad), when)
        return fn
    return register


_LOADED = False


def _ensure_loaded() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from . import lower_elemwise, lower_injective, lower_nn, lower_qnn, lower_reduce, lower_tuple  # noqa: F401
    from . import lower_resize  # noqa: F401
    from . import lower_qnn_math  # noqa: F401
    from . import lower_compare, lower_index_maps  # noqa: F401
    from . import lower_tvm_compat  # noqa: F401
    from . import lower_svdf  # noqa: F401
    from . import lower_mlas_math  # noqa: F401
    from . import lower_matmul_nbits  # noqa: F401


def get_lowering(op: str | Call) -> Lowering | None:
    """The lowering of a call (its first matching variant, else the op's default), or an op name's default."""
    _ensure_loaded()
    if isinstance(op, Call):
        name = op.op.name
        for when, low in _VARIANTS.get(name, ()):
            if when(op):
                return low
        return _LOWERINGS.get(name)
    return _LOWERINGS.get(op)


def registered_lowerings() -> list[str]:
    _ensure_loaded()
    return sorted(_LOWERINGS)


def effective_kind(op: str | Call) -> FusionKind:
    """The registry's fusion kind, demoted when the CPU lowering (of this call, when a call is given) is a whole
    kernel (it cannot be pulled element by element, so it anchors a group instead)."""
    kind = get_op_def(op.op.name if isinstance(op, Call) else op).fusion
    low = get_lowering(op)
    if isinstance(low, KernelLowering):
        if not low.epilogue:
            return FusionKind.OPAQUE
        return kind if kind in (FusionKind.OUT_ELEMWISE_FUSABLE, FusionKind.COMM_REDUCE) else \
            FusionKind.OUT_ELEMWISE_FUSABLE
    if kind not in INJECTIVE_KINDS:
        return FusionKind.INJECTIVE
    return kind
