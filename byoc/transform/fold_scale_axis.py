"""FoldScaleAxis: TVM's Sequential of BackwardFoldScaleAxis, ForwardFoldScaleAxis and FoldConstant (the folded
weight products become constants when the weights are bound)."""
from __future__ import annotations

from .backward_fold_scale_axis import BackwardFoldScaleAxis
from .fold_constant import FoldConstant
from .forward_fold_scale_axis import ForwardFoldScaleAxis
from .pass_infra import Sequential

__all__ = ["FoldScaleAxis"]


class FoldScaleAxis(Sequential):
    """``relay.transform.FoldScaleAxis()``: its parts run under the context's opt_level like any Sequential's
    (both folds are level 3), and ``disabled_pass=["FoldScaleAxis"]`` skips it inside a Sequential."""

    def __init__(self):
        super().__init__([BackwardFoldScaleAxis(), ForwardFoldScaleAxis(), FoldConstant()], name="FoldScaleAxis")
