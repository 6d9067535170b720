"""Function return types, as in TVM Relay: InferType fills ``ret_type`` on every function (main, closures,
composite and partition functions) and the printer shows it; no pass leaves a return type that no longer
describes its function's body (the verifier reports such a stale one)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import byoc
from byoc import relay
from byoc.build import inline_composites
from byoc.errors import TypeInferenceError
from byoc.ir.expr import Function
from byoc.ir.traversal import ExprRewriter, post_order
from byoc.ir.verify import verify_problems
from byoc.relay.dataflow_pattern import DFPatternCallback, is_op, rewrite, wildcard
from byoc.transform import (DeadCodeElimination, EliminateCommonSubexpr, FoldConstant, InferType, SimplifyInference,
                            ToANormalForm, ToGraphNormalForm)
from byoc.transform.annotate_target import AnnotateTarget
from byoc.transform.bind import bind
from byoc.transform.merge_compiler_regions import MergeCompilerRegions
from byoc.transform.merge_composite import MergeComposite
from byoc.transform.partition_graph import AnnotateMergePartition, PartitionGraph
from byoc.transform.type_carry import type_function, typed_like
from pass_programs import random_program
from patterns import get_pattern_table, registered_targets
from tests.shared_models import shared_model_files, where_to_put

MODEL_FILES = shared_model_files()
T13 = relay.TensorType((1, 3), "float32")


def functions(mod) -> list[Function]:
    """Every function of ``mod``: the globals and every function literal inside them."""
    out = []
    for _, f in mod.sorted_items():
        out.extend(n for n in post_order(f) if isinstance(n, Function))
    return out


def assert_ret_types_right(mod, *, already_filled: bool) -> None:
    """No stale return type; after InferType every function has its body's type as ``ret_type``. With
    ``already_filled``, every function has one before any re-inference (the pass kept or set them)."""
    if already_filled:
        missing = [repr(f) for f in functions(mod) if f.ret_type is None]
        assert not missing, f"functions without ret_type: {missing[:5]}"
    assert verify_problems(mod) == []
    typed = InferType()(mod)
    for f in functions(typed):
        assert f.ret_type is not None and f.ret_type == f.body.checked_type, repr(f)


# -- InferType fills and checks ret_type ----------------------------------------------------------------------

def test_infer_type_fills_ret_type_of_main_and_closures_and_the_printer_shows_it():
    x = relay.var("x", shape=(1, 3))
    y = relay.var("y", shape=(1, 3))
    f = relay.var("f")
    closure = relay.Function([y], relay.nn.relu(y))
    body = relay.Let(f, closure, relay.sum(relay.Call(f, [x]), axis=[1]))
    mod = InferType()(byoc.IRModule.from_expr(relay.Function([x], body)))
    assert mod["main"].ret_type == relay.TensorType((1,), "float32")
    assert closure.ret_type == T13
    text = mod.astext(show_meta_data=False)
    assert text.splitlines()[1] == "def @main(%x: Tensor[(1, 3), float32]) -> Tensor[(1), float32] {"
    assert "fn (%y: Tensor[(1, 3), float32]) -> Tensor[(1, 3), float32] {" in text
    assert byoc.structural_equal(byoc.parse(mod.astext()), mod)


def test_declared_ret_type_is_kept_and_checked():
    x = relay.var("x", shape=(1, 3))
    declared = relay.TensorType((1, 3), "float32")
    mod = InferType()(byoc.IRModule.from_expr(relay.Function([x], relay.nn.relu(x), ret_type=declared)))
    assert mod["main"].ret_type is declared
    wrong = byoc.IRModule.from_expr(relay.Function([x], relay.nn.relu(x), ret_type=relay.TensorType((3,))))
    with pytest.raises(TypeInferenceError, match="declares return type"):
        InferType()(wrong)


def test_infer_type_fills_ret_type_of_a_function_typed_by_a_pass():
    """Passes carry type memos over without InferType; InferType still fills the missing ret_type."""
    x = relay.var("x", shape=(1, 3))
    body = relay.nn.relu(x)
    InferType()(byoc.IRModule.from_expr(relay.Function([x], body)))
    func = type_function(Function((x,), body))
    assert func._checked_type is not None and func.ret_type is None
    InferType()(byoc.IRModule({"main": func}))
    assert func.ret_type == T13


def test_verifier_reports_a_stale_ret_type():
    x = relay.var("x", shape=(1, 3))
    mod = InferType()(byoc.IRModule.from_expr(relay.Function([x], relay.nn.relu(x))))
    other = relay.sum(x, axis=[1])
    InferType()(byoc.IRModule.from_expr(relay.Function([x], other)))
    stale = typed_like(mod["main"].replace(body=other), mod["main"])  # keeps ret_type (1, 3) and the memo
    problems = verify_problems(byoc.IRModule({"main": stale}))
    assert len(problems) == 1 and "ret_type Tensor[(1, 3), float32]" in problems[0] \
        and "body has type Tensor[(1,), float32]" in problems[0]


# -- rewrites that change a body's type drop the old ret_type -------------------------------------------------

def _closure_program():
    x = relay.var("x", shape=(1, 3))
    y = relay.var("y", shape=(1, 3))
    closure = relay.Function([y], relay.nn.relu(y))
    mod = InferType()(byoc.IRModule.from_expr(relay.Function([x], relay.Call(closure, [x]))))
    assert closure.ret_type == T13
    return mod


def test_a_type_changing_rewriter_does_not_keep_a_stale_ret_type():
    class ReluToSum(ExprRewriter):
        def rewrite(self, original, rebuilt):
            if getattr(getattr(rebuilt, "op", None), "name", None) == "nn.relu":
                return relay.sum(rebuilt.args[0], axis=[1])
            return None

    mod = _closure_program()
    new_main = ReluToSum().visit(mod["main"])
    assert all(f.ret_type is None for f in post_order(new_main) if isinstance(f, Function))
    out = InferType()(byoc.IRModule({"main": new_main}))  # with a stale ret_type this raised
    assert out["main"].ret_type == relay.TensorType((1,), "float32")


def test_a_type_preserving_rewriter_keeps_ret_type():
    class ReluToClip(ExprRewriter):
        preserves_types = True

        def rewrite(self, original, rebuilt):
            if getattr(getattr(rebuilt, "op", None), "name", None) == "nn.relu":
                return relay.clip(rebuilt.args[0], 0.0, 3.0e38)
            return None

    mod = _closure_program()
    new_main = ReluToClip().visit(mod["main"])
    assert new_main is not mod["main"]
    assert [f.ret_type for f in post_order(new_main) if isinstance(f, Function)] == [T13, T13]
    assert_ret_types_right(byoc.IRModule({"main": new_main}), already_filled=True)


def test_pattern_rewrite_that_changes_a_closure_type_leaves_no_stale_ret_type():
    class ReluToSum(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = is_op("nn.relu")(wildcard())

        def callback(self, pre, post, node_map):
            return relay.sum(post.args[0], axis=[1])

    mod = _closure_program()
    out = byoc.IRModule({"main": rewrite(ReluToSum(), mod["main"])})
    assert_ret_types_right(out, already_filled=False)
    assert out["main"].ret_type == relay.TensorType((1,), "float32")


def test_bind_keeps_ret_type_only_when_the_types_stay():
    x = relay.var("x", shape=(1, 3))
    w = relay.var("w", shape=(1, 3))
    func = InferType()(byoc.IRModule.from_expr(relay.Function([x, w], relay.add(x, w))))["main"]
    same = bind(func, {w: relay.const(np.ones((1, 3), "float32"))})
    assert same.ret_type == T13
    wider = bind(func, {w: relay.const(np.ones((2, 3), "float32"))})  # broadcasting changes the body's type
    assert wider.ret_type is None
    assert InferType()(byoc.IRModule({"main": wider}))["main"].ret_type == relay.TensorType((2, 3), "float32")


# -- every pass and pipeline, on random programs and on the shared models -------------------------------------

GENERIC_PASSES = [FoldConstant(), FoldConstant(fold_qnn=True), DeadCodeElimination(),
                  DeadCodeElimination(inline_once=True), EliminateCommonSubexpr(), SimplifyInference(),
                  ToANormalForm(), ToGraphNormalForm()]


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(0, 10**6))
def test_generic_passes_keep_right_ret_types_on_random_programs(seed):
    mod = InferType()(byoc.IRModule.from_expr(random_program(seed)))
    for p in GENERIC_PASSES:
        assert_ret_types_right(p(mod), already_filled=True)


def _partition_passes(target):
    table = get_pattern_table(target)
    return [
        ("MergeComposite", lambda m: MergeComposite(table)(m)),
        ("AnnotateTarget+MergeCompilerRegions+PartitionGraph",
         lambda m: PartitionGraph()(MergeCompilerRegions()(AnnotateTarget(target)(MergeComposite(table)(m))))),
        ("AnnotateTarget+PartitionGraph", lambda m: PartitionGraph()(AnnotateTarget(target)(MergeComposite(table)(m)))),
        ("AnnotateMergePartition", lambda m: AnnotateMergePartition(target)(MergeComposite(table)(m))),
        ("partition_for", lambda m: byoc.partition_for(target, m)),
        ("partition_for, small partitions given back",
         lambda m: byoc.partition_for(target, m, min_partition_size=3, inline_non_mac=True)),
        ("inline_composites", lambda m: inline_composites(MergeComposite(table)(m))),
    ]


@pytest.mark.skipif(not MODEL_FILES, reason=where_to_put())
@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_every_pass_and_pipeline_leaves_right_ret_types_on_the_shared_models(path):
    mod, params = byoc.frontend.from_tflite(str(path))
    mod = InferType()(mod)
    assert mod["main"].ret_type == mod["main"].body.checked_type
    for p in GENERIC_PASSES:
        assert_ret_types_right(p(mod), already_filled=True)
    for target in registered_targets():
        for name, run in _partition_passes(target):
            out = run(mod)
            try:
                # Relay re-infers after MergeComposite's patterns and at the end of PartitionGraph.
                assert_ret_types_right(out, already_filled=True)
            except AssertionError as e:
                raise AssertionError(f"{target}: {name}: {e}") from e


@pytest.mark.skipif(not MODEL_FILES, reason=where_to_put())
def test_partitioned_text_shows_return_types_round_trips_and_is_deterministic():
    path = next(p for p in MODEL_FILES if p.stem == "person_detect")
    texts = []
    for _ in range(2):
        mod, _ = byoc.frontend.from_tflite(str(path))
        part = byoc.partition_for("npu", mod)
        texts.append(part.astext())
    assert texts[0] == texts[1]
    heads = [line for line in texts[0].splitlines() if line.startswith("def @")]
    assert heads[0] == "def @main(%input: Tensor[(1, 96, 96, 1), int8]) -> Tensor[(1, 2), int8] {"
    assert heads[1].startswith("def @tvmgen_default_npu_main_0(%npu_0_i0: Tensor[(1, 96, 96, 1), int8], ")
    assert heads[1].endswith(") -> Tensor[(1, 2), int8] {")
    assert 'Composite="npu.qnn_conv2d") -> Tensor[(1, 1, 1, 2), int8] {' in texts[0]
    assert byoc.structural_equal(byoc.parse(texts[0]), part)
