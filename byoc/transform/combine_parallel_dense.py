"""CombineParallelDense: ``min_num_branches`` or more ``nn.dense`` ops reading one input become one op (TVM's
``combine_parallel_dense.cc``, opt_level 4).

``to_batch=True`` (TVM's default): dense ops with equal weight shapes become one ``nn.batch_matmul`` of the
stacked inputs and weights; followers are stacked too and each branch takes ``squeeze(split(...)[i])``.
``to_batch=False``: dense ops with the same input width become one dense over the weights concatenated on the
units axis; followers' operands are concatenated on the last axis (a size-1 or scalar operand repeated to the
branch's width) and each branch takes its ``strided_slice``."""
from __future__ import annotations

from typing import ClassVar, Sequence

from ..ir.expr import Call, Expr, Function, Tuple, TupleGetItem
from .parallel_branches import Branch, Combiner, combine_parallel
from .pass_infra import FunctionPass
from .scale_axis import op_call, tensor_type

__all__ = ["CombineParallelDense"]


def _stack(exprs) -> Expr:
    return op_call("stack", (Tuple(tuple(exprs)),), axis=0)


class _DenseToBatch(Combiner):
    op_name = "nn.dense"

    def is_supported(self, call: Call) -> bool:
        t = tensor_type(call.args[0])
        return t is not None and len(t.shape) == 2  # batch_matmul takes [batch, M, K]

    def can_combine(self, a: Call, b: Call) -> bool:
        return a.attrs.out_dtype == b.attrs.out_dtype and \
            tensor_type(a.args[1]).shape == tensor_type(b.args[1]).shape  # type: ignore[union-attr]

    def make_combined(self, branches: Sequence[Branch]) -> Expr:
        data = _stack(b[0].args[0] for b in branches)
        weight = _stack(b[0].args[1] for b in branches)
        return op_call("nn.batch_matmul", (data, weight), out_dtype=branches[0][0].attrs.out_dtype,
                       transpose_a=False, transpose_b=True)

    def arg_compatible(self, a: Call, b: Call, index: int) -> bool:
        ta, tb = tensor_type(a.args[index]), tensor_type(b.args[index])
        # a scalar or a higher-rank operand would not line up with the stacked [branch, M, N] result
        return ta is not None and tb is not None and ta == tb and 1 <= len(ta.shape) <= 2

    def make_follower(self, data: Expr, branches: Sequence[Branch], depth: int, parent_index: int) -> Expr:
        call = branches[0][depth]
        args = []
        for i in range(len(call.args)):
            if i == parent_index:
                args.append(data)
                continue
            ops = []
            for b in branches:
                a = b[depth].args[i]
                ops.append(op_call("expand_dims", (a,), axis=0, num_newaxis=1)
                           if len(tensor_type(a).shape) == 1 else a)  # type: ignore[union-attr]
            args.append(_stack(ops))
        return Call(call.op, tuple(args), call.attrs)

    def outputs(self, data: Expr, branches: Sequence[Branch], depth: int) -> list[Expr]:
        parts = op_call("split", (data,), indices_or_sections=len(branches), axis=0)
        return [op_call("squeeze", (TupleGetItem(parts, i),), axis=(0,)) for i in range(len(branches))]


class _DenseToDense(Combiner):
    op_name = "nn.dense"

    def can_combine(self, a: Call, b: Call) -> bool:
        return a.attrs.out_dtype == b.attrs.out_dtype and \
            tensor_type(a.args[1]).shape[1] == tensor_type(b.args[1]).shape[1]  # type: ignore[union-attr]

    def make_combined(self, branches: Sequence[Branch]) -> Expr:
        root = branches[0][0]
        weight = op_call("concatenate", (Tuple(tuple(b[0].args[1] for b in branches)),), axis=0)
        units = sum(tensor_type(b[0].args[1]).shape[0] for b in branches)  # type: ignore[union-attr]
        return op_call("nn.dense", (root.args[0], weight), units=units, out_dtype=root.attrs.out_dtype)

    def arg_compatible(self, a: Call, b: Call, index: int) -> bool:
        ta, tb = tensor_type(a.args[index]), tensor_type(b.args[index])
        oa, ob = tensor_type(a), tensor_type(b)
        if None in (ta, tb, oa, ob) or ta.dtype != tb.dtype or len(ta.shape) != len(tb.shape):  # type: ignore
            return False
        if len(oa.shape) < len(ta.shape) or len(ob.shape) < len(tb.shape):  # type: ignore[union-attr]
            return False
        return ta.shape[:-1] == tb.shape[:-1]  # type: ignore[union-attr]

    def make_follower(self, data: Expr, branches: Sequence[Branch], depth: int, parent_index: int) -> Expr:
        call = branches[0][depth]
        args = []
        for i, first in enumerate(call.args):
            if i == parent_index:
                args.append(data)
                continue
            ndim = len(tensor_type(first).shape)  # type: ignore[union-attr]
            axis = max(ndim - 1, 0)
            ops = []
            for b in branches:
                width = tensor_type(b[depth].args[parent_index]).shape[-1]  # type: ignore[union-attr]
                a = b[depth].args[i]
                shape = tensor_type(a).shape  # type: ignore[union-attr]
                if ndim == 0:
                    a, shape = op_call("expand_dims", (a,), axis=-1, num_newaxis=1), (1,)
                if shape[-1] == 1 and width > 1:
                    # TVM repeats along the axis; broadcasting a size-1 axis gives the same values
                    a = op_call("broadcast_to", (a,), shape=tuple(shape[:-1]) + (width,))
                ops.append(a)
            args.append(op_call("concatenate", (Tuple(tuple(ops)),), axis=axis))
        return Call(call.op, tuple(args), call.attrs)

    def outputs(self, data: Expr, branches: Sequence[Branch], depth: int) -> list[Expr]:
        index, out = 0, []
        for b in branches:
            shape = tensor_type(b[depth]).shape  # type: ignore[union-attr]
            units = tensor_type(b[0]).shape[-1]  # type: ignore[union-attr]
            axis = max(i for i, d in enumerate(shape) if d == units)
            begin, end = [0] * len(shape), [-1] * len(shape)
            begin[axis], end[axis] = index, units
            out.append(op_call("strided_slice", (data,), begin=tuple(begin), end=tuple(end),
                               strides=(1,) * len(shape), slice_mode="size"))
            index += units
        return out


class CombineParallelDense(FunctionPass):
    """``relay.transform.CombineParallelDense(min_num_branches=3, to_batch=True)``."""

    name: ClassVar[str] = "CombineParallelDense"
    opt_level: ClassVar[int] = 4
    typed: ClassVar[bool] = True

    def __init__(self, min_num_branches: int = 3, to_batch: bool = True):
        self.min_num_branches = int(min_num_branches)
        self.to_batch = bool(to_batch)


    def transform_function(self, func: Function, mod, ctx) -> Function:
        c = _DenseToBatch() if self.to_batch else _DenseToDense()
        return combine_parallel(func, c, self.min_num_branches)
