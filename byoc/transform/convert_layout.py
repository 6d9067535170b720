"""ConvertLayout: run the ops named in ``desired_layouts`` in the layouts asked for, values unchanged.

``ConvertLayout({"nn.conv2d": ["NHWC", "OHWI"], "qnn.conv2d": ["NHWC", "default"]})`` (TVM's spelling; "default"
keeps that layout). For each call of such an op whose data or kernel layout differs from the desired one, its
data and weight go through ``layout_transform`` into the desired layouts, the op is rebuilt with them — through
the op's registered ``FTVMConvertOpLayout(attrs, inputs, tinfos, desired_layouts)`` when there is one (TVM's
hook; TVM's ACL table registers one), else by changing ``data_layout`` / ``kernel_layout`` — and its result goes
through ``layout_transform`` back to the layout its consumers read. Constant weights are transposed by a later
FoldConstant. Unlike TVM, layouts are not propagated through neighbouring layout-agnostic ops, so back-to-back
converted ops keep a transform pair between them; the values are the same either way.
"""
from __future__ import annotations

from ..errors import PassError
from ..ir.expr import Call, Expr, Op
from ..ir.module import IRModule
from ..ir.traversal import rewrite_post_order
from ..ops.registry import get_op_attr
from .pass_infra import ModulePass, PassContext

__all__ = ["ConvertLayout", "to_layouts"]

_CONV_OPS = ("nn.conv2d", "qnn.conv2d", "nn.conv2d_transpose", "qnn.conv2d_transpose")


class ConvertLayout(ModulePass):
    name = "ConvertLayout"
    opt_level = 3

    def __init__(self, desired_layouts: dict):
        if not isinstance(desired_layouts, dict):
            raise PassError(f"ConvertLayout expects {{op name: [data layout, kernel layout]}}, got "
                            f"{type(desired_layouts).__name__}")
        self.desired = {k: [str(x) for x in v] for k, v in desired_layouts.items()}

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        from .infer_type import infer_module
        mod = infer_module(mod.copy())
        out = mod.copy()
        for gv, func in mod.items():
            if any(k in func.attrs for k in ("Compiler", "Extern")):
                continue
            out[gv] = rewrite_post_order(func, lambda old, new: self._convert(old, new))
        return infer_module(out)

    def _convert(self, old: Expr, new: Expr) -> Expr | None:
        if type(new) is not Call or type(new.op) is not Op or new.op.name not in self.desired:
            return None
        name = new.op.name
        if name not in _CONV_OPS:
            raise PassError(f"ConvertLayout: {name} is not a convolution; only {', '.join(_CONV_OPS)} convert here",
                            hint="drop it from desired_layouts")
        a = new.attrs
        want = self.desired[name] + ["default"] * (2 - len(self.desired[name]))
        data_l = a.data_layout if want[0] == "default" else want[0]
        kern_l = a.kernel_layout if want[1] == "default" else want[1]
        if data_l == a.data_layout and kern_l == a.kernel_layout:
            return None
        from ..relay.op import make_call
        x, w = new.args[0], new.args[1]
        if data_l != a.data_layout:
            x = make_call("layout_transform", [x], {"src_layout": a.data_layout, "dst_layout": data_l})
        if kern_l != a.kernel_layout:
            w = make_call("layout_transform", [w], {"src_layout": a.kernel_layout, "dst_layout": kern_l})
        inputs = [x, w] + list(new.args[2:])
        hook = get_op_attr(name, "FTVMConvertOpLayout")
        if hook is not None:
            tinfos = [arg._checked_type for arg in old.args]
            conv = hook(a, inputs, tinfos, [data_l, kern_l])
            if not isinstance(conv, Expr):
                raise PassError(f"ConvertLayout: the FTVMConvertOpLayout function of {name} returned "
                                f"{type(conv).__name__}, not an expression")
        else:
            conv = make_call(name, inputs, {**dict(a.items()), "data_layout": data_l, "kernel_layout": kern_l})
        out_now = getattr(conv.attrs, "out_layout", "") if isinstance(conv, Call) else ""
        out_now = out_now or (conv.attrs.data_layout if isinstance(conv, Call) else data_l)
        out_was = getattr(a, "out_layout", "") or a.data_layout
        if out_now == out_was:
            return conv
        return make_call("layout_transform", [conv], {"src_layout": out_now, "dst_layout": out_was})


def _other_layouts(mod: IRModule, layouts: dict) -> bool:
    """Whether any call of an op in ``layouts`` runs in another data layout than the one desired."""
    from ..ir.traversal import post_order
    for _, func in mod.sorted_items():
        for node in post_order(func.body):
            if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in layouts:
                have = getattr(node.attrs, "data_layout", None)
                if have is not None and have != layouts[node.op.name][0]:
                    return True
    return False


def to_layouts(mod: IRModule, layouts: dict, name: str = "to_layouts") -> IRModule:
    """``mod`` with the ops of ``layouts`` (ConvertLayout's ``desired_layouts``) in those layouts: ConvertLayout,
    then SinkLayoutTransform keeps conv → bias_add → requantize chains together. A module already in them (a
    TFLite model is NHWC) is returned as it is: no pass, no cost."""
    if not layouts or not _other_layouts(mod, layouts):
        return mod
    from .pass_infra import Sequential
    from .sink_layout_transform import SinkLayoutTransform
    outer = PassContext.current()
    with PassContext(opt_level=3, instruments=outer.instruments, config=outer.config):
        return Sequential([ConvertLayout(layouts), SinkLayoutTransform()], name=name)(mod)
