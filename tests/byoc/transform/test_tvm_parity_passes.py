"""TVM-spelled pass infrastructure and passes: type inference without annotations, class-decorated passes,
ExprVisitor/ExprMutator (also on a 100,000-deep graph), AnnotatedRegionSet, AnnotateTarget on an empty tuple,
PartitionGraph's region numbering, AlterOpLayout hooks and Inline."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import TypeInferenceError
from byoc.relay.op.annotation import compiler_begin, compiler_end
from byoc.relay.testing import create_workload, run_opt_pass

transform = relay.transform


def test_unannotated_params_of_a_called_function_take_the_argument_types():
    x = relay.var("x", shape=(1, 3, 4, 4))
    p = relay.var("p")
    inner = relay.Function([p], relay.nn.relu(p)).with_attr("Composite", "r")
    out = run_opt_pass(relay.Function([x], inner(x)), transform.InferType())
    called = out.body.op
    assert called.params[0].type_annotation == relay.TensorType((1, 3, 4, 4), "float32")
    assert out.ret_type == relay.TensorType((1, 3, 4, 4), "float32")


def test_ops_determine_the_types_of_unannotated_weights():
    data = relay.var("data", relay.TensorType((1, 3, 8, 8), "float32"))
    # names end as TVM's initialiser expects (weight, gamma, beta, mean, var): it fills parameters by suffix
    w, g, b, m, v = (relay.var(n) for n in ("w_weight", "g_gamma", "b_beta", "m_mean", "v_var"))
    conv = relay.nn.conv2d(data, w, kernel_size=(3, 3), channels=4, padding=(1, 1))
    bn = relay.nn.batch_norm(conv, g, b, m, v)[0]
    mod, params = create_workload(relay.Function(relay.analysis.free_vars(bn), bn))
    types = {p.name_hint: p.checked_type for p in mod["main"].params}
    assert types["w_weight"] == relay.TensorType((4, 3, 3, 3), "float32")
    assert all(types[n] == relay.TensorType((4,), "float32") for n in ("g_gamma", "b_beta", "m_mean", "v_var"))
    assert sorted(params) == ["b_beta", "g_gamma", "m_mean", "v_var", "w_weight"]
    assert params["w_weight"].shape == (4, 3, 3, 3)
    # a variable nothing determines is still reported
    z = relay.var("z")
    with pytest.raises(TypeInferenceError, match="%z has no type annotation"):
        run_opt_pass(relay.Function([data, z], relay.add(data, z)), transform.InferType())


def test_unannotated_arguments_take_a_typed_global_callee_parameter_types():
    mod = byoc.IRModule()
    a = relay.var("a", shape=(2, 2))
    gv = relay.GlobalVar("f")
    mod[gv] = relay.Function([a], relay.nn.relu(a))
    x = relay.var("x")
    mod["main"] = relay.Function([x], gv(x))
    mod = transform.InferType()(mod)
    assert mod["main"].params[0].checked_type == relay.TensorType((2, 2), "float32")


def test_class_decorated_function_and_module_passes():
    @transform.function_pass(opt_level=0)
    class Negate:
        def __init__(self, scale):
            self.scale = scale

        def transform_function(self, func, mod, ctx):
            return relay.Function(func.params, relay.multiply(func.body, relay.const(self.scale)))

    @byoc.transform.module_pass(opt_level=1)
    class Rename:
        def transform_module(self, mod, ctx):
            out = mod.copy()
            out["other"] = mod["main"]
            return out

    x = relay.var("x", shape=(2,))
    mod = byoc.IRModule.from_expr(relay.Function([x], x))
    p = Negate(-2.0)
    assert p.scale == -2.0 and p.info.opt_level == 0 and p.info.name == "Negate"
    out = byoc.transform.Sequential([p, Rename(), transform.InferType()])(mod)
    assert sorted(gv.name_hint for gv, _ in out.items()) == ["main", "other"]
    assert byoc.evaluate(out, {"x": np.array([1.0, 2.0], "float32")})[0].tolist() == [-2.0, -4.0]


def test_expr_mutator_and_visitor_are_memoised_and_handle_deep_graphs():
    class ReluToSigmoid(relay.ExprMutator):
        def visit_call(self, call):
            new = super().visit_call(call)
            return relay.sigmoid(new.args[0]) if call.op.name == "nn.relu" else new

    class CountCalls(relay.ExprVisitor):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def visit_call(self, call):
            self.calls += 1
            super().visit_call(call)

    x = relay.var("x", shape=(2,))
    shared = relay.nn.relu(x)
    out = ReluToSigmoid().visit(relay.add(shared, shared))
    assert out.args[0] is out.args[1] and out.args[0].op.name == "sigmoid"  # shared node mutated once
    deep = x
    for _ in range(100_000):
        deep = relay.nn.relu(deep)
    counter = CountCalls()
    counter.visit(deep)
    assert counter.calls == 100_000
    mutated = ReluToSigmoid().visit(deep)
    assert mutated.op.name == "sigmoid" and mutated.args[0].op.name == "sigmoid"


def test_annotated_region_set_of_a_diamond():
    data = relay.var("data", shape=(4,))
    b1 = compiler_begin(data, "t")
    o1 = relay.abs(b1)
    e1, e2 = compiler_end(o1, "t"), compiler_end(o1, "t")
    b2 = compiler_begin(e1, "t")
    o2 = relay.nn.relu(b2)
    e3 = compiler_end(o2, "t")
    bd = compiler_begin(e2, "default")
    od = relay.tanh(bd)
    ed = compiler_end(od, "default")
    b3, b4 = compiler_begin(e3, "t"), compiler_begin(ed, "t")
    o3 = relay.add(b3, b4)
    e4 = compiler_end(o3, "t")
    regions = relay.analysis.AnnotatedRegionSet(relay.Function([data], e4), relay.op.get("annotation.compiler_begin"),
                                                relay.op.get("annotation.compiler_end"))
    assert len(regions) == 4
    r = regions.get_region(o3)
    assert r.target == "t" and set(r.args) == {b3, b4} and set(r.nodes) == {b3, b4, o3, e4} and set(r.rets) == {e4}
    assert regions.get_region(od).target == "default" and regions.get_region(data) is None


def test_annotate_target_leaves_an_empty_tuple_alone():
    mod = byoc.IRModule.from_expr(relay.Function([], relay.Tuple([])))
    for non_call in (True, False):
        out = transform.AnnotateTarget("t", non_call)(mod)
        assert isinstance(out["main"].body, relay.Tuple) and not out["main"].body.fields


def _two_region_module():
    data = relay.var("data", relay.TensorType((1, 3, 8, 8), "float32"))
    w = relay.var("w", relay.TensorType((4, 3, 3, 3), "float32"))
    g, b, m, v = (relay.var(n, relay.TensorType((4,), "float32")) for n in "gbmv")
    conv = relay.nn.conv2d(compiler_begin(data, "acc"), compiler_begin(w, "acc"), kernel_size=(3, 3), channels=4,
                           padding=(1, 1))
    bn = relay.nn.batch_norm(compiler_begin(compiler_end(conv, "acc"), "acc"),
                             *(compiler_begin(p, "acc") for p in (g, b, m, v)))
    out = compiler_end(bn.astuple(), "acc")
    return byoc.IRModule.from_expr(relay.Function([data, w, g, b, m, v], out))


def test_partitions_are_numbered_by_relay_region_id():
    # conv2d's region opens with begin #0 (begins #0, #1 merge into it); batch_norm's first begin is #2
    out = transform.PartitionGraph()(transform.InferType()(_two_region_module()))
    names = sorted(gv.name_hint for gv, _ in out.items() if gv.name_hint != "main")
    assert names == ["tvmgen_default_acc_main_0", "tvmgen_default_acc_main_2"]
    conv_fn = out["tvmgen_default_acc_main_0"]
    assert conv_fn.body.op.name == "nn.conv2d" and conv_fn.params[0].name_hint == "acc_0_i0"
    assert out["tvmgen_default_acc_main_2"].params[0].name_hint == "acc_2_i0"


def test_inline_keeps_external_functions_as_literals_and_substitutes_others():
    mod = transform.PartitionGraph()(transform.InferType()(_two_region_module()))
    out = transform.Inline()(mod)
    assert [gv.name_hint for gv, _ in out.items()] == ["main"]
    callee = out["main"].body.op
    assert isinstance(callee, relay.Function) and callee.attrs["Compiler"] == "acc"
    # a plain function marked Inline is substituted
    m2 = byoc.IRModule()
    a = relay.var("a", shape=(2,))
    gv = relay.GlobalVar("f")
    m2[gv] = relay.Function([a], relay.nn.relu(a)).with_attr("Inline", 1)
    x = relay.var("x", shape=(2,))
    m2["main"] = relay.Function([x], gv(x))
    out2 = transform.Inline()(m2)
    assert [g.name_hint for g, _ in out2.items()] == ["main"]
    assert out2["main"].body.op.name == "nn.relu" and out2["main"].body.args[0] is out2["main"].params[0]


def test_alter_op_layout_applies_registered_hooks_only():
    x = relay.var("x", shape=(2,))
    mod = byoc.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    assert byoc.structural_equal(transform.AlterOpLayout()(mod), transform.InferType()(mod))
    byoc.ir.register_op_attr("nn.relu", "FTVMAlterOpLayout", lambda attrs, args, tinfos, out: relay.abs(args[0]))
    try:
        out = transform.AlterOpLayout()(mod)
    finally:
        from byoc.ops.registry import remove_op_attr
        remove_op_attr("nn.relu", "FTVMAlterOpLayout")
    assert out["main"].body.op.name == "abs"


def test_failed_inference_leaves_no_partial_types():
    x, b = relay.var("x"), relay.var("b")
    c = relay.const(1)
    out = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, c), b))
    with pytest.raises(TypeInferenceError):
        byoc.transform.infer_type.infer_expr(out)
    assert c._checked_type is None and x.type_annotation is None


def test_relay_parse_returns_a_typed_module():
    mod = relay.parse('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) { nn.relu(%x) }')
    assert mod["main"].ret_type == relay.TensorType((2,), "float32")


def test_partition_graph_runs_the_compilers_optimize_function_on_each_new_partition():
    """TVM's PartitionGraph hands each partition it makes to ``relay.ext.<compiler>.optimize`` before attaching
    the partition attributes, so a FoldConstant there folds a partition whose inputs are bound constants."""
    import numpy as np
    import byoc as tvm
    from byoc import relay
    from byoc.relay.build_module import bind_params_by_name
    calls = []

    def optimize(mod):
        calls.append(mod["main"].attrs.get("Compiler"))
        return relay.transform.FoldConstant()(mod)
    tvm.register_func("relay.ext.unit_opt.optimize", optimize, override=True)
    try:
        x, y0, y1 = (relay.var(n, shape=(2, 2)) for n in ("x", "y0", "y1"))
        begin = relay.annotation.compiler_begin
        end = relay.annotation.compiler_end(begin(y0, "unit_opt") + begin(y1, "unit_opt"), "unit_opt")
        f = relay.Function([x, y0, y1], end * x)
        ones = np.ones((2, 2), np.float32)
        f = bind_params_by_name(f, {"y0": ones, "y1": ones})
        mod = relay.transform.PartitionGraph()(relay.transform.InferType()(tvm.IRModule.from_expr(f)))
    finally:
        tvm._ffi.remove_global_func("relay.ext.unit_opt.optimize")
    (part,) = [fn for _, fn in mod.functions.items() if fn.attrs.get("Compiler") == "unit_opt"]
    assert calls == [None] and isinstance(part.body, relay.Constant)
    tvm.testing.assert_allclose(part.body.data.numpy(), np.full((2, 2), 2.0))
    assert part.attrs["Primitive"] == 1
