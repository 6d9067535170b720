"""Classic TVM program: a relay.testing workload (ResNet-18, MobileNet) drawn with relay_viz and run by the
reference interpreter and the CPU build, written as a TVM user wrote it with only the imports changed.

Expected values: the reference interpreter (checked against numpy elsewhere) for the outputs; numpy with
TVM's documented initialiser (Xavier uniform, fans from the weight shape, numpy's global seed 0) for the
parameters; hand-written text for the terminal plotter's tree."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import byoc as tvm
from byoc import relay
from byoc.contrib import graph_executor, relay_viz
from byoc.contrib.relay_viz.dot import DotPlotter, DotVizParser
from byoc.contrib.relay_viz.terminal import TermPlotter, TermVizParser
from byoc.relay import testing


def _run_both(mod, params, x):
    ref = relay.create_executor("debug", mod=mod, device=tvm.cpu(0), target="llvm").evaluate()(x, **params)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("data", x)
    m.run()
    return ref.numpy(), m.get_output(0).numpy()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_resnet18_workload_relay_viz_and_build(tmp_path):
    mod, params = testing.resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 224, 224))
    viz = relay_viz.RelayVisualizer(mod, relay_param=params, plotter=DotPlotter(), parser=DotVizParser())
    viz.render(str(tmp_path / "resnet18"))
    pdf = (tmp_path / "resnet18.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and not (tmp_path / "resnet18").exists()     # cleanup=True, as graphviz
    viz = relay_viz.RelayVisualizer(mod, relay_param=params, plotter=TermPlotter(), parser=TermVizParser())
    viz.render(str(tmp_path / "resnet18.txt"))
    text = (tmp_path / "resnet18.txt").read_text()
    assert text.startswith("@main([data, bn_data_gamma, ")
    lines = text.splitlines()
    assert lines[1:5] == ["`--Call ", "   |--nn.softmax ", "   `--Call ", "      |--nn.bias_add "]   # op first
    assert "      `--Var(Param) name_hint: fc1_bias, shape: (1000,), dtype: float32" in lines

    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 224, 224)).astype("float32")
    ref, out = _run_both(mod, params, x)
    assert out.shape == (1, 1000) and ref.std() > 1e-5          # not a uniform softmax: the check has teeth
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-7)
    assert out.argmax() == ref.argmax()


def test_resnet18_parameters_are_tvms():
    mod, params = testing.resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 224, 224))
    names = [p.name_hint for p in mod["main"].params]
    assert names[:6] == ["data", "bn_data_gamma", "bn_data_beta", "bn_data_moving_mean", "bn_data_moving_var",
                         "conv0_weight"]
    assert len(params) == len(names) - 1 and "data" not in params
    convs = [n for n in names if n.endswith("_weight") and n != "fc1_weight"]
    assert len(convs) == 21      # stem + 2 per basic block × 8 + a projection shortcut per stage (stage 1 too)
    assert params["conv0_weight"].shape == (64, 3, 7, 7) and params["fc1_weight"].shape == (1000, 512)
    assert params["stage4_unit1_sc_weight"].shape == (512, 256, 1, 1)
    np.testing.assert_array_equal(params["bn0_moving_var"].numpy(), np.ones(64, "float32"))
    np.testing.assert_array_equal(params["fc1_bias"].numpy(), np.zeros(1000, "float32"))
    # Xavier (avg fan, magnitude 3), numpy's global generator seeded 0, drawn in parameter order
    np.random.seed(0)
    expected = {}
    for n in names[1:]:
        shape = params[n].shape
        if n.endswith("weight"):
            field = np.prod(shape[2:]) if len(shape) > 2 else 1
            scale = np.sqrt(3.0 / ((shape[0] + shape[1]) * field / 2.0))
            expected[n] = np.random.uniform(-scale, scale, size=shape).astype("float32")
    for n, v in expected.items():
        np.testing.assert_array_equal(params[n].numpy(), v, err_msg=n)


def test_mobilenet_workload_builds_and_matches_reference():
    mod, params = testing.mobilenet.get_workload(batch_size=1)
    assert params["separable_conv_block_1_weight"].shape == (32, 1, 3, 3)      # depthwise, OIHW
    assert params["fc_weight"].shape == (1000, 1024)
    np.random.seed(0)       # fans (3·9 + 32·9) / 2
    first = np.random.uniform(-np.sqrt(3 / 157.5), np.sqrt(3 / 157.5), (32, 3, 3, 3)).astype("float32")
    np.testing.assert_array_equal(params["conv_block_1_conv_weight"].numpy(), first)
    # TVM's depthwise special case keys on "depthwise" in the parameter name, which this one lacks: avg fans
    dw = np.random.uniform(-np.sqrt(3 / 148.5), np.sqrt(3 / 148.5), (32, 1, 3, 3)).astype("float32")
    np.testing.assert_array_equal(params["separable_conv_block_1_weight"].numpy(), dw)
    # the softmax of this deep, freshly initialised net is uniform to 1e-10: compare the logits too
    main = mod["main"]
    logits = tvm.IRModule.from_expr(relay.Function(main.params, main.body.args[0]))
    x = np.random.default_rng(1).uniform(-1, 1, (1, 3, 224, 224)).astype("float32")
    ref, out = _run_both(logits, params, x)
    assert ref.std() > 0
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())


def test_create_workload_of_a_small_function():
    data = relay.var("data", shape=(1, 4), dtype="float32")
    weight, bias = relay.var("dense_weight"), relay.var("dense_bias")
    out = relay.nn.bias_add(relay.nn.dense(data, weight, units=3), bias)
    mod, params = testing.create_workload(relay.Function([data, weight, bias], out))
    np.random.seed(0)
    scale = np.sqrt(3.0 / ((3 + 4) / 2.0))
    np.testing.assert_array_equal(params["dense_weight"].numpy(),
                                  np.random.uniform(-scale, scale, (3, 4)).astype("float32"))
    np.testing.assert_array_equal(params["dense_bias"].numpy(), np.zeros(3, "float32"))
    with pytest.raises(ValueError, match="'w'"):          # TVM's initialiser refuses a name it cannot place
        w = relay.var("w")
        testing.create_workload(relay.Function([data, w], relay.nn.dense(data, w, units=3)))


def test_term_plotter_draws_the_tree_as_tvm(capsys):
    x = relay.var("x", shape=(1, 2), dtype="float32")
    y = relay.var("y", shape=(1, 2), dtype="float32")
    z = relay.add(relay.nn.relu(x), y)
    mod = tvm.IRModule.from_expr(relay.Function([x, y], z))
    relay_viz.RelayVisualizer(mod).render()       # the terminal plotter is the default
    assert capsys.readouterr().out == "\n".join([
        "@main([x, y])",
        "`--Call ",
        "   |--add ",
        "   |--Call ",
        "   |  |--nn.relu ",
        "   |  `--Var(Input) name_hint: x, shape: (1, 2), dtype: float32",
        "   `--Var(Input) name_hint: y, shape: (1, 2), dtype: float32",
    ]) + "\n"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_dot_plotter_render_kwargs_and_node_attrs(tmp_path):
    x = relay.var("x", shape=(1, 3, 8, 8), dtype="float32")
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))))

    def node_attr(node):
        return {"color": "red", "shape": "box"} if "nn.conv2d" in node.type_name else {"shape": "ellipse"}

    plotter = DotPlotter(get_node_attr=node_attr, render_kwargs={"format": "svg", "cleanup": False})
    relay_viz.RelayVisualizer(mod, relay_param={"w": np.zeros((4, 3, 3, 3), "float32")}, plotter=plotter,
                              parser=DotVizParser()).render(str(tmp_path / "g"))
    dot_text = (tmp_path / "g").read_text()            # kept: cleanup=False
    assert 'label="Call nn.conv2d\\nstrides: [1, 1]' in dot_text and 'color="red"' in dot_text
    assert 'label="Var(Param)\\nname_hint: w' in dot_text and 'label="Var(Input)\\nname_hint: x' in dot_text
    assert "<svg" in (tmp_path / "g.svg").read_text()
    with pytest.raises(tvm.errors.ByocError, match="render_kwargs"):
        DotPlotter(render_kwargs={"engine": "neato"}).render(str(tmp_path / "h"))
