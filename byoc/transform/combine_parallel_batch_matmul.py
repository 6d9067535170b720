"""CombineParallelBatchMatmul: ``min_num_branches`` or more ``nn.batch_matmul(x, w_i)`` (transpose_b form, 3-D
weights with one batch size) reading one ``x`` become one batch_matmul over the weights concatenated on axis 1;
followers' operands are concatenated on the last axis and each branch takes its ``strided_slice`` (TVM's
``combine_parallel_batch_matmul.cc``, opt_level 4)."""
from __future__ import annotations

from typing import ClassVar, Sequence

from ..ir.expr import Call, Expr, Function, Tuple
from .parallel_branches import Branch, Combiner, combine_parallel
from .pass_infra import FunctionPass
from .scale_axis import op_call, tensor_type

__all__ = ["CombineParallelBatchMatmul"]


class _BatchMatmulCombiner(Combiner):
    op_name = "nn.batch_matmul"

    def can_combine(self, a: Call, b: Call) -> bool:
        x, y = a.attrs, b.attrs
        if (x.transpose_a, x.transpose_b, y.transpose_a, y.transpose_b) != (False, True, False, True):
            return False  # TVM supports only this form
        ra, rb = tensor_type(a.args[1]), tensor_type(b.args[1])
        oa, ob = tensor_type(a), tensor_type(b)
        return None not in (ra, rb, oa, ob) and ra.dtype == rb.dtype and oa.dtype == ob.dtype and \
            len(ra.shape) == 3 == len(rb.shape) and ra.shape[0] == rb.shape[0] and x.out_dtype == y.out_dtype

    def make_combined(self, branches: Sequence[Branch]) -> Expr:
        root = branches[0][0]
        weight = op_call("concatenate", (Tuple(tuple(b[0].args[1] for b in branches)),), axis=1)
        return Call(root.op, (root.args[0], weight), root.attrs)

    def arg_compatible(self, a: Call, b: Call, index: int) -> bool:
        # TVM accepts any operand; one concatenated on the last axis must have that axis at full width
        ta, tb, oa, ob = tensor_type(a.args[index]), tensor_type(b.args[index]), tensor_type(a), tensor_type(b)
        return None not in (ta, tb, oa, ob) and len(ta.shape) == len(tb.shape) >= 1 and \
            ta.dtype == tb.dtype and ta.shape[-1] == oa.shape[-1] and tb.shape[-1] == ob.shape[-1] and \
            ta.shape[:-1] == tb.shape[:-1]

    def make_follower(self, data: Expr, branches: Sequence[Branch], depth: int, parent_index: int) -> Expr:
        call = branches[0][depth]
        args = [data if i == parent_index else
                op_call("concatenate", (Tuple(tuple(b[depth].args[i] for b in branches)),), axis=-1)
                for i in range(len(call.args))]
        return Call(call.op, tuple(args), call.attrs)

    def outputs(self, data: Expr, branches: Sequence[Branch], depth: int) -> list[Expr]:
        index, out = 0, []
        for b in branches:
            n = tensor_type(b[0].args[1]).shape[1]  # type: ignore[union-attr]
            out.append(op_call("strided_slice", (data,), begin=(0, 0, index), end=(-1, -1, n), strides=(1, 1, 1),
                               slice_mode="size"))
            index += n
        return out


class CombineParallelBatchMatmul(FunctionPass):
    """``relay.transform.CombineParallelBatchMatmul(min_num_branches=3)``."""

    name: ClassVar[str] = "CombineParallelBatchMatmul"
    opt_level: ClassVar[int] = 4
    typed: ClassVar[bool] = True

    def __init__(self, min_num_branches: int = 3):
        self.min_num_branches = int(min_num_branches)


    def transform_function(self, func: Function, mod, ctx) -> Function:
        return combine_parallel(func, _BatchMatmulCombiner(), self.min_num_branches)
