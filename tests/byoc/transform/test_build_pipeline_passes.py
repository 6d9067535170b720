"""relay.build's optimization pipeline in TVM's order under PassContext (opt_level, required/disabled passes),
pass instruments (tvm.instrument), Legalize / qnn Legalize hooks and CanonicalizeOps."""
from __future__ import annotations

import numpy as np
import pytest

import byoc as tvm
from byoc import relay
from byoc.errors import PassError
from byoc.ops.registry import remove_op_attr

transform = relay.transform


def _conv_bn_module():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.const(np.linspace(-1, 1, 4 * 3 * 9, dtype="float32").reshape(4, 3, 3, 3))
    b = relay.const(np.array([0.5, -0.25, 1.0, 0.0], dtype="float32"))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    return tvm.IRModule.from_expr(relay.Function([x], y))


@tvm.instrument.pass_instrument
class _Recorder:
    def __init__(self):
        self.before, self.after = [], []

    def run_before_pass(self, mod, info):
        self.before.append(info.name)

    def run_after_pass(self, mod, info):
        self.after.append(info.name)


def _build_passes(**ctx):
    rec = _Recorder()
    with tvm.transform.PassContext(instruments=[rec], **ctx):
        lib = relay.build(_conv_bn_module(), target="llvm")
    return rec, lib


def test_opt_level_3_runs_tvms_list_in_order():
    rec, _ = _build_passes(opt_level=3)
    ran = [n for n in rec.after if n not in ("InferType", "RelayBuildOptimize", "sequential")]
    # TVM's GetPassPrefix order (RemoveUnusedFunctions ... FoldConstant) then FuseOps, Inline
    expected = ["QnnLegalize", "Legalize", "SimplifyInference", "EliminateCommonSubexpr", "FoldConstant",
                "BackwardFoldScaleAxis", "ForwardFoldScaleAxis", "FoldConstant", "FoldScaleAxis", "SimplifyExpr",
                "CanonicalizeCast", "CanonicalizeOps", "AlterOpLayout", "SimplifyExprPostAlterOp", "FoldConstant",
                "FuseOps", "Inline"]
    assert [n for n in ran if n in expected] == expected
    # TVM registers the CombineParallel passes at level 4
    assert not any(n.startswith("CombineParallel") for n in ran)
    rec, _ = _build_passes(opt_level=4)
    assert [n for n in rec.after if n.startswith("CombineParallel")] == [
        "CombineParallelConv2d", "CombineParallelDense", "CombineParallelBatchMatmul"]


def test_opt_level_2_skips_level_3_passes_and_disabled_pass_wins():
    rec, _ = _build_passes(opt_level=2)
    assert "CanonicalizeOps" not in rec.after and "FoldConstant" in rec.after and "FuseOps" in rec.after
    rec, _ = _build_passes(opt_level=3, disabled_pass=["FoldConstant", "FuseOps"])
    assert "FoldConstant" not in rec.after and "FuseOps" not in rec.after and "CanonicalizeOps" in rec.after
    rec, _ = _build_passes(opt_level=1, required_pass=["CanonicalizeOps"])
    assert "CanonicalizeOps" in rec.after and "FoldConstant" not in rec.after


def test_build_results_do_not_depend_on_opt_level():
    from byoc.contrib import graph_executor
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype("float32")
    ref = tvm.evaluate(_conv_bn_module(), {"x": x})[0]
    for level in (0, 2, 3):
        _, lib = _build_passes(opt_level=level)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(x=x)
        np.testing.assert_array_equal(m.get_output(0).numpy(), ref)


def test_print_after_all_prints_the_ir_after_every_pass():
    lines = []
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.bias_add(x, relay.const(np.ones(2, "float32")),
                                                                       axis=0)))
    with tvm.transform.PassContext(opt_level=3, instruments=[tvm.instrument.PrintAfterAll(out=lines.append)]):
        transform.CanonicalizeOps()(mod)
    assert len(lines) == 1 and lines[0].startswith("After Running Pass: CanonicalizeOps")
    assert "add(%x" in lines[0] and "bias_add" not in lines[0]
    lines.clear()
    printer = tvm.ir.instrument.PassPrintingInstrument(["InferType"], ["CanonicalizeOps"], out=lines.append)
    with tvm.transform.PassContext(opt_level=3, instruments=[printer]):
        tvm.transform.Sequential([transform.InferType(), transform.CanonicalizeOps()])(mod)
    assert [ln.split("\n")[0] for ln in lines] == ["Print IR before: InferType", "Print IR after: CanonicalizeOps"]


def test_pass_instrument_decorator_and_should_run():
    @tvm.instrument.pass_instrument
    class SkipFold:
        def should_run(self, mod, info):
            return info.name != "FoldConstant"

    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, relay.add(relay.const(1.0), relay.const(2.0)))))
    with tvm.transform.PassContext(opt_level=3, instruments=[SkipFold()]):
        out = tvm.transform.Sequential([transform.InferType(), transform.FoldConstant()])(mod)
    assert out["main"].body.args[1].op.name == "add"  # not folded
    with pytest.raises(PassError, match="decorates a class"):
        tvm.instrument.pass_instrument(lambda: None)


def test_canonicalize_ops_rewrites_bias_add_bit_identically():
    for shape, axis, dtype in (((1, 4, 3, 3), 1, "float32"), ((2, 5), -1, "int32"), ((1, 3, 3, 4), 3, "float32")):
        x = relay.var("x", shape=shape, dtype=dtype)
        b = relay.var("b", shape=(shape[axis],), dtype=dtype)
        mod = tvm.IRModule.from_expr(relay.Function([x, b], relay.nn.bias_add(x, b, axis=axis)))
        out = transform.CanonicalizeOps()(mod)
        ops = [n.op.name for n in tvm.ir.post_order(out["main"].body) if isinstance(n, relay.Call)]
        assert "nn.bias_add" not in ops and ops[-1] == "add"
        rng = np.random.default_rng(1)
        inputs = {"x": (rng.standard_normal(shape) * 100).astype(dtype),
                  "b": (rng.standard_normal(shape[axis]) * 100).astype(dtype)}
        np.testing.assert_array_equal(tvm.evaluate(mod, inputs)[0], tvm.evaluate(out, inputs)[0])
        expected = inputs["x"] + inputs["b"].reshape([-1] + [1] * (len(shape) - (axis % len(shape)) - 1))
        np.testing.assert_array_equal(tvm.evaluate(out, inputs)[0], expected)


def test_legalize_applies_registered_hooks_only():
    x = relay.var("x", shape=(4,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    assert tvm.ir.structural_equal(transform.Legalize()(mod), transform.InferType()(mod))
    seen = []

    def legal(attrs, inputs, types):
        seen.append([str(t) for t in types])
        return relay.maximum(inputs[0], relay.const(0.0))

    relay.op.register_legalize("nn.relu", legal)
    try:
        out = transform.Legalize()(mod)
        assert out["main"].body.op.name == "maximum" and len(seen) == 1 and len(seen[0]) == 2
        assert relay.qnn.transform.Legalize()(mod)["main"].body.op.name == "nn.relu"  # other attr name
        data = {"x": np.array([-1.5, 0.0, 2.0, -0.0], "float32")}
        np.testing.assert_array_equal(tvm.evaluate(out, data)[0], np.maximum(data["x"], 0))
    finally:
        remove_op_attr("nn.relu", "FTVMLegalize")


def test_qnn_legalize_hook_and_bad_return():
    x = relay.var("x", shape=(4,), dtype="int8")
    y = relay.qnn.op.requantize(x, relay.const(0.5), relay.const(0), relay.const(0.25), relay.const(0),
                                out_dtype="int8")
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    relay.op.register_qnn_legalize("qnn.requantize", lambda attrs, inputs, types: relay.const(1))
    try:
        with pytest.raises(PassError, match="FTVMQnnLegalize function of qnn.requantize returned Constant"):
            relay.qnn.transform.Legalize()(mod)
    finally:
        remove_op_attr("qnn.requantize", "FTVMQnnLegalize")


def test_build_folds_a_scale_and_honours_disabled_pass():
    """relay.build at opt_level 3 runs FoldScaleAxis (a per-channel scale goes into the conv weights) unless the
    PassContext disables it; both builds compute the reference's values."""
    from byoc.contrib import graph_executor
    rng = np.random.default_rng(3)
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.const(rng.standard_normal((4, 3, 3, 3)).astype("float32"))
    scale = relay.const(rng.uniform(0.5, 2, (4, 1, 1)).astype("float32"))
    y = relay.nn.relu(relay.multiply(relay.nn.conv2d(x, w, padding=(1, 1)), scale))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    data = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    ref = tvm.evaluate(mod, {"x": data})[0]
    for disabled in ([], ["FoldScaleAxis"]):
        rec = _Recorder()
        with tvm.transform.PassContext(opt_level=3, disabled_pass=disabled, instruments=[rec]):
            lib = relay.build(mod, target="llvm")
        assert ("BackwardFoldScaleAxis" in rec.after) is not bool(disabled)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(x=data)
        np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-5, atol=1e-5)
    with tvm.transform.PassContext(opt_level=3):
        opt = transform.Sequential([transform.FoldScaleAxis()])(mod)
    assert "multiply(" not in opt.astext(show_meta_data=False)
