"""Passes (``relay.transform``)."""
from .pass_infra import (FunctionPass, ModulePass, Pass, PassContext, PassInfo, PassInstrument, PassTimingInstrument,
                         PrintAfter, PrintBefore, Sequential, function_pass, module_pass)
from .infer_type import InferType, InferTypeLocal
from .bind import bind, bind_params_by_name
from .fold_constant import FoldConstant
from .dead_code import DeadCodeElimination
from .eliminate_common_subexpr import EliminateCommonSubexpr
from .simplify_inference import SimplifyInference
from .normal_form import ToANormalForm, ToGraphNormalForm
from .merge_composite import MergeComposite
from .annotate_target import AnnotateTarget
from .merge_compiler_regions import MergeCompilerRegions
from .partition_graph import PartitionGraph
from .alter_op_layout import AlterOpLayout
from .inline import Inline
from .fuse_ops import FuseOps
from .defuse_ops import DefuseOps
from .print_ir import PrintIR
from .legalize import Legalize, QnnLegalize
from .canonicalize_ops import CanonicalizeOps
from .canonicalize_qnn import CanonicalizeQnnChains
from .convert_layout import ConvertLayout
from .forward_fold_scale_axis import ForwardFoldScaleAxis
from .backward_fold_scale_axis import BackwardFoldScaleAxis
from .fold_scale_axis import FoldScaleAxis
from .combine_parallel_conv2d import CombineParallelConv2D
from .combine_parallel_dense import CombineParallelDense
from .combine_parallel_batch_matmul import CombineParallelBatchMatmul
from .simplify_expr import SimplifyExpr, SimplifyExprPostAlterOp
from .canonicalize_cast import CanonicalizeCast

__all__ = ["FunctionPass", "ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument",
           "PassTimingInstrument", "PrintAfter", "PrintBefore", "Sequential", "function_pass", "module_pass",
           "InferType", "InferTypeLocal", "bind", "bind_params_by_name",
           "FoldConstant", "DeadCodeElimination", "EliminateCommonSubexpr", "SimplifyInference", "ToANormalForm",
           "ToGraphNormalForm",
           "MergeComposite", "AnnotateTarget", "MergeCompilerRegions", "PartitionGraph", "AlterOpLayout", "Inline",
           "FuseOps", "DefuseOps", "PrintIR",
           "Legalize", "QnnLegalize", "CanonicalizeOps", "ConvertLayout",
           "ForwardFoldScaleAxis", "BackwardFoldScaleAxis", "FoldScaleAxis",
           "CombineParallelConv2D", "CombineParallelDense", "CombineParallelBatchMatmul",
           "SimplifyExpr", "SimplifyExprPostAlterOp", "CanonicalizeCast", "CanonicalizeQnnChains"]
