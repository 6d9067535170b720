"""Every standard pass, alone and in a pipeline, preserves evaluation on random programs and leaves IR that
verifies. The oracle is the interpreter on the unoptimised program."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import byoc
from byoc.ir.analysis import count_ops
from byoc.ir.verify import verify
from byoc.transform import (DeadCodeElimination, EliminateCommonSubexpr, FoldConstant, InferType, PassContext,
                            Sequential, SimplifyInference, ToANormalForm, ToGraphNormalForm)
from pass_programs import INPUTS, random_program

PASSES = [FoldConstant(), FoldConstant(fold_qnn=True), DeadCodeElimination(), DeadCodeElimination(inline_once=True),
          EliminateCommonSubexpr(), SimplifyInference(), ToANormalForm(), ToGraphNormalForm()]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.integers(0, 10**6), st.booleans())
def test_each_pass_and_the_pipeline_preserve_evaluation(seed, cond):
    mod = InferType()(byoc.IRModule.from_expr(random_program(seed)))
    inputs = dict(INPUTS, c=np.array(cond))
    expected = byoc.evaluate(mod, inputs)
    for p in PASSES:
        out = p(mod)
        verify(out)
        _same(byoc.evaluate(out, inputs), expected)
    pipeline = Sequential([SimplifyInference(), FoldConstant(), ToANormalForm(), DeadCodeElimination(),
                           ToGraphNormalForm(), EliminateCommonSubexpr(), FoldConstant()])
    with PassContext(opt_level=3):
        out = pipeline(mod)
    verify(out)
    assert "nn.batch_norm" not in count_ops(out["main"])
    _same(byoc.evaluate(out, inputs), expected)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.integers(0, 10**6), st.booleans())
def test_tvm_optimisation_passes_preserve_evaluation(seed, cond):
    """FoldScaleAxis, CombineParallel*, SimplifyExpr and CanonicalizeCast may reassociate float arithmetic
    (e.g. (x + c1) * c2 -> x * c2 + c1 * c2), so their results are compared with a tolerance."""
    from byoc.transform import (BackwardFoldScaleAxis, CanonicalizeCast, CombineParallelBatchMatmul,
                                CombineParallelConv2D, CombineParallelDense, FoldScaleAxis, ForwardFoldScaleAxis,
                                SimplifyExpr, SimplifyExprPostAlterOp)
    mod = InferType()(byoc.IRModule.from_expr(random_program(seed)))
    inputs = dict(INPUTS, c=np.array(cond))
    expected = byoc.evaluate(mod, inputs)
    for p in (ForwardFoldScaleAxis(), BackwardFoldScaleAxis(), FoldScaleAxis(), CombineParallelConv2D(2),
              CombineParallelDense(2), CombineParallelBatchMatmul(2), SimplifyExpr(), SimplifyExprPostAlterOp(),
              CanonicalizeCast()):
        out = p(mod)
        verify(out)
        for g, w in zip(byoc.evaluate(out, inputs), expected):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
