"""SinkLayoutTransform: move a permuting ``layout_transform`` below the per-channel ops that follow it.

``nn.bias_add``, ``qnn.requantize`` (both by their ``axis``) and ``clip`` (elementwise) give the same values on a
permuted tensor when their axis is permuted too, so ``op(layout_transform(x, S, D), axis=a)`` becomes
``layout_transform(op(x, axis=S.index(D[a])), S, D)``; a pair ``layout_transform(layout_transform(x, A, B), B, A)``
becomes ``x``. After ConvertLayout has put a quantized convolution in NHWC, this keeps ONNX's
conv → bias_add → requantize chain contiguous (one NHWC chain, one transform back), which is what NPU pattern
tables match.
"""
from __future__ import annotations

from ..ir.expr import Call, Expr, Op
from ..ir.module import IRModule
from ..ir.traversal import rewrite_post_order
from .pass_infra import ModulePass, PassContext

__all__ = ["SinkLayoutTransform"]

_AXIS_OPS = ("nn.bias_add", "qnn.requantize")


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
        out = mod.copy()
        for gv, func in mod.items():
            if any(k in func.attrs for k in ("Compiler", "Extern")):
                continue
            out[gv] = rewrite_post_order(func, lambda old, new: _sink(new))
        return infer_module(out)


def _sink(new: Expr) -> Expr | None:
    from ..relay.op import make_call
    if type(new) is not Call or type(new.op) is not Op or not new.args or not _permuting(new.args[0]):
        return None
    lt = new.args[0]
    x, src, dst = lt.args[0], lt.attrs.src_layout, lt.attrs.dst_layout
    name = new.op.name
    if name == "layout_transform" and _permuting(new) and (new.attrs.src_layout, new.attrs.dst_layout) == (dst, src):
        return x
    if name == "clip":
        inner = make_call(name, [x], dict(new.attrs.items()))
    elif name in _AXIS_OPS:
        axis = new.attrs.axis % len(dst)
        inner = make_call(name, [x, *new.args[1:]], {**dict(new.attrs.items()), "axis": src.index(dst[axis])})
    else:
        return None
    return make_call("layout_transform", [inner], {"src_layout": src, "dst_layout": dst})
