"""The Relay optimization pipeline ``relay.build`` runs before code generation, in TVM's order (its
``GetPassPrefix`` + ``FuseOps``, then ``Inline``), filtered by the current ``PassContext``'s ``opt_level``,
``required_pass`` and ``disabled_pass`` like any ``Sequential``. Functions for an external compiler are left to
their codegen. TVM passes with no implementation here are left out of the list (``MISSING``), not faked.

Level 0: SimplifyInference, SimplifyExpr, SimplifyExprPostAlterOp, FuseOps(no fusion); 1: qnn Legalize, Legalize;
2: FoldConstant, fusion; 3: EliminateCommonSubexpr, FoldScaleAxis, CanonicalizeCast, CanonicalizeOps,
AlterOpLayout; 4: CombineParallelConv2D / Dense / BatchMatmul (as in TVM, so not at the usual level 3)."""
from __future__ import annotations

from ..transform.alter_op_layout import AlterOpLayout
from ..transform.canonicalize_cast import CanonicalizeCast
from ..transform.combine_parallel_batch_matmul import CombineParallelBatchMatmul
from ..transform.combine_parallel_conv2d import CombineParallelConv2D
from ..transform.combine_parallel_dense import CombineParallelDense
from ..transform.fold_scale_axis import FoldScaleAxis
from ..transform.simplify_expr import SimplifyExpr, SimplifyExprPostAlterOp
from ..transform.canonicalize_ops import CanonicalizeOps
from ..transform.eliminate_common_subexpr import EliminateCommonSubexpr
from ..transform.fold_constant import FoldConstant
from ..transform.fuse_ops import FuseOps
from ..transform.infer_type import InferType
from ..transform.inline import Inline
from ..transform.legalize import Legalize
from ..transform.pass_infra import Sequential
from ..transform.simplify_inference import SimplifyInference
from .qnn.transform import Legalize as QnnLegalize

__all__ = ["optimize_sequence", "MISSING"]

# TVM's list at 21095b98bb that has no pass here yet, in its place in the order.
MISSING = ("RemoveUnusedFunctions", "ToBasicBlockNormalForm", "FlattenAtrousConv", "FastMath", "PlanDevices")


def optimize_sequence(homogeneous: bool = True) -> Sequential:
    """The passes ``relay.build`` runs, as one Sequential (``homogeneous``: a single host target)."""
    passes = [QnnLegalize()]
    if homogeneous:
        passes.append(Legalize())
    passes += [SimplifyInference(), EliminateCommonSubexpr(), CombineParallelConv2D(3), CombineParallelDense(3),
               CombineParallelBatchMatmul(3), FoldConstant(), FoldScaleAxis(), SimplifyExpr(), CanonicalizeCast(),
               CanonicalizeOps()]
    if homogeneous:
        passes += [InferType(), AlterOpLayout(), SimplifyExprPostAlterOp()]
    passes += [FoldConstant(), FuseOps(), InferType(), Inline(), InferType()]
    return Sequential(passes, name="RelayBuildOptimize")
