"""CombineParallelConv2D: ``min_num_branches`` or more conv2d ops (groups 1, same strides / padding / dilation /
layouts / kernel size) reading one input become one conv2d whose weights are concatenated on O; the
element-wise ops that follow every branch alike are combined too (their per-branch operands concatenated on the
channel axis), and each branch reads its channels back with ``strided_slice`` (TVM's
``combine_parallel_conv2d.cc``; TVM registers it at opt_level 4, so ``relay.build`` at 3 does not run it)."""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Sequence

from ..ir.expr import Call, Expr, Function, Tuple
from .parallel_branches import Branch, Combiner, combine_parallel
from .pass_infra import FunctionPass
from .scale_axis import op_call, tensor_type

__all__ = ["CombineParallelConv2D"]


def _out_layout(call: Call) -> str:
    return call.attrs.out_layout or call.attrs.data_layout


def _channels(call: Call) -> int:
    return tensor_type(call).shape[_out_layout(call).index("C")]  # type: ignore[union-attr]


class _Conv2DCombiner(Combiner):
    op_name = "nn.conv2d"

    def is_supported(self, call: Call) -> bool:
        a = call.attrs
        layouts = a.data_layout + a.kernel_layout + a.out_layout
        return a.groups == 1 and not any(ch.islower() for ch in layouts) and tensor_type(call) is not None

    def can_combine(self, a: Call, b: Call) -> bool:
        x, y = a.attrs, b.attrs
        same = all(getattr(x, f) == getattr(y, f) for f in ("strides", "padding", "dilation", "groups", "data_layout",
                                                             "kernel_layout", "out_dtype", "out_layout"))
        if not same:
            return False
        ka = dict(zip(x.kernel_layout, tensor_type(a.args[1]).shape))  # type: ignore[union-attr]
        kb = dict(zip(y.kernel_layout, tensor_type(b.args[1]).shape))  # type: ignore[union-attr]
        return ka["H"] == kb["H"] and ka["W"] == kb["W"]

    def make_combined(self, branches: Sequence[Branch]) -> Expr:
        root = branches[0][0]
        weights = Tuple(tuple(b[0].args[1] for b in branches))
        weight = op_call("concatenate", (weights,), axis=root.attrs.kernel_layout.index("O"))
        attrs = dataclasses.replace(root.attrs, channels=sum(_channels(b[0]) for b in branches))
        return Call(root.op, (root.args[0], weight), attrs)

    def arg_compatible(self, a: Call, b: Call, index: int) -> bool:
        ta, tb = tensor_type(a.args[index]), tensor_type(b.args[index])
        oa, ob = tensor_type(a), tensor_type(b)
        if ta is None or tb is None or oa is None or ob is None:
            return False
        if ta.dtype != tb.dtype or len(ta.shape) != len(tb.shape):
            return False
        cp = self.channel_pos
        acp = cp - len(oa.shape) + len(ta.shape)
        if acp < 0 or ta.shape[acp] != oa.shape[cp] or tb.shape[acp] != ob.shape[cp]:
            return False  # the channel axis must be there, not broadcast
        return all(ta.shape[i] == tb.shape[i] for i in range(len(ta.shape)) if i != acp)

    def make_follower(self, data: Expr, branches: Sequence[Branch], depth: int, parent_index: int) -> Expr:
        call = branches[0][depth]
        ndim = len(tensor_type(call).shape)  # type: ignore[union-attr]
        args = []
        for i, a in enumerate(call.args):
            if i == parent_index:
                args.append(data)
                continue
            axis = self.channel_pos - ndim + len(tensor_type(a).shape)  # type: ignore[union-attr]
            args.append(op_call("concatenate", (Tuple(tuple(b[depth].args[i] for b in branches)),), axis=axis))
        return Call(call.op, tuple(args), call.attrs)

    def outputs(self, data: Expr, branches: Sequence[Branch], depth: int) -> list[Expr]:
        cp, index, out = self.channel_pos, 0, []
        for b in branches:
            n = _channels(b[0])
            out.append(op_call("strided_slice", (data,), begin=(0,) * cp + (index,), end=(-1,) * cp + (n,),
                               strides=(1,) * (cp + 1), slice_mode="size"))
            index += n
        return out

    @property
    def channel_pos(self) -> int:
        return self._channel_pos

    def prepare(self, branches: Sequence[Branch]) -> None:
        self._channel_pos = _out_layout(branches[0][0]).index("C")


class CombineParallelConv2D(FunctionPass):
    """``relay.transform.CombineParallelConv2D(min_num_branches=3)``."""

    name: ClassVar[str] = "CombineParallelConv2d"  # TVM's registered spelling
    opt_level: ClassVar[int] = 4
    typed: ClassVar[bool] = True

    def __init__(self, min_num_branches: int = 3):
        self.min_num_branches = int(min_num_branches)


    def transform_function(self, func: Function, mod, ctx) -> Function:
        return combine_parallel(func, _Conv2DCombiner(), self.min_num_branches)
