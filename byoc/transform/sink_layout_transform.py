"""SinkLayoutTransform: move a permuting ``layout_transform`` below the ops that follow it when they give the same
values on a permuted tensor.

* ``nn.bias_add``, ``qnn.requantize``, ``qnn.dequantize`` and ``qnn.quantize`` (by their ``axis``):
  ``op(layout_transform(x, S, D), axis=a)`` becomes ``layout_transform(op(x, axis=S.index(D[a])), S, D)``;
* elementwise ops (``clip``, ``cast``, ``multiply``, ``qnn.add``, ...) whose other operands are single constant
  values or come through the same transform;
* an integer ``sum`` with ``keepdims`` (its axes permuted; integer sums do not depend on the order, float ones
  do, so those stay put), ``image.resize2d``, ``nn.max_pool2d`` and an integer ``nn.avg_pool2d`` (run in the
  source layout: each output value is computed the same way in either layout);
* a pair ``layout_transform(layout_transform(x, A, B), B, A)`` becomes ``x``.

After ConvertLayout has put a quantized convolution in NHWC, this keeps ONNX's conv → bias_add → requantize chain
contiguous (one NHWC chain, one transform back) and carries the NHWC layout on through the quantized groups that
follow (dequantize → HardSwish / Resize → quantize, QLinearGlobalAveragePool's sum), which is what NPU pattern
tables match; the transform back meets the next convolution's and both cancel.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call, Constant, Expr, Op
from ..ir.module import IRModule
from ..ir.traversal import rewrite_post_order
from .pass_infra import ModulePass, PassContext

__all__ = ["SinkLayoutTransform"]

_AXIS_OPS = ("nn.bias_add", "qnn.requantize", "qnn.dequantize", "qnn.quantize")
_POOLS = ("nn.max_pool2d", "nn.avg_pool2d")


def _permuting(e: Expr) -> bool:
    if type(e) is not Call or type(e.op) is not Op or e.op.name != "layout_transform":
        return False
    s, d = e.attrs.src_layout, e.attrs.dst_layout
    return s.isalpha() and s.isupper() and len(s) == len(d) and sorted(s) == sorted(d) and s != d


class SinkLayoutTransform(ModulePass):
    name = "SinkLayoutTransform"
    opt_level = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        from .infer_type import infer_module
        mod = infer_module(mod.copy())   # the integer-sum test reads operand types
        out = mod.copy()
        for gv, func in mod.items():
            if any(k in func.attrs for k in ("Compiler", "Extern")):
                continue
            out[gv] = rewrite_post_order(func, lambda old, new: _sink(old, new))
        return infer_module(out)


def _elementwise(op: Op) -> bool:
    from ..ops.registry import FusionKind
    op_def = getattr(op, "op_def", None)
    return op_def is not None and op_def.fusion in (FusionKind.ELEMWISE, FusionKind.BROADCAST)


def _scalar_const(e: Expr) -> bool:
    return type(e) is Constant and np.asarray(e.data).size == 1


def _integer(e: Expr) -> bool:
    t = getattr(e, "_checked_type", None)
    return t is not None and str(getattr(t, "dtype", "")).startswith(("int", "uint"))


def _sink(old: Expr, new: Expr) -> Expr | None:
    from ..relay.op import make_call
    if type(new) is not Call or type(new.op) is not Op or not new.args or not _permuting(new.args[0]):
        return None
    lt = new.args[0]
    x, src, dst = lt.args[0], lt.attrs.src_layout, lt.attrs.dst_layout
    name = new.op.name
    attrs = dict(new.attrs.items()) if new.attrs is not None else {}
    if name == "layout_transform" and _permuting(new) and (new.attrs.src_layout, new.attrs.dst_layout) == (dst, src):
        return x
    if name in _AXIS_OPS:
        axis = new.attrs.axis % len(dst)
        inner = make_call(name, [x, *new.args[1:]], {**attrs, "axis": src.index(dst[axis])})
    elif name == "sum" and new.attrs.keepdims and not new.attrs.exclude and new.attrs.axis is not None \
            and _integer(old.args[0]):
        axes = [src.index(dst[int(a) % len(dst)]) for a in new.attrs.axis]
        inner = make_call(name, [x], {**attrs, "axis": sorted(axes)})
    elif name == "image.resize2d" and new.attrs.layout == dst:
        inner = make_call(name, [x], {**attrs, "layout": src})
    elif name in _POOLS and new.attrs.layout == dst and not new.attrs.out_layout \
            and (name == "nn.max_pool2d" or _integer(old.args[0])):
        inner = make_call(name, [x], {**attrs, "layout": src})
    elif _elementwise(new.op) and name != "layout_transform":
        rest = []
        for a in new.args[1:]:
            if _permuting(a) and (a.attrs.src_layout, a.attrs.dst_layout) == (src, dst):
                rest.append(a.args[0])
            elif _scalar_const(a):
                rest.append(a)
            else:
                return None
        inner = make_call(name, [x, *rest], attrs)
    else:
        return None
    return make_call("layout_transform", [inner], {"src_layout": src, "dst_layout": dst})
