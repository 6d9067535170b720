"""ConvertLayout runs the named convolutions in the desired layouts with values unchanged (reference interpreter
before and after), through TVM's FTVMConvertOpLayout hook when one is registered."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import PassError
from byoc.ir.expr import Call, Op
from byoc.ir.traversal import post_order


def _nchw_conv_relu():
    x = relay.var("x", shape=(1, 3, 8, 8), dtype="float32")
    w = relay.const(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype("float32"))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1), channels=4, kernel_size=(3, 3)))
    return byoc.IRModule.from_expr(relay.Function([x], y))


def _convs(mod):
    return [n for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)
            and n.op.name == "nn.conv2d"]


def test_nchw_conv_runs_in_nhwc_with_the_same_values():
    mod = _nchw_conv_relu()
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype("float32")
    before = byoc.evaluate(mod, {"x": x})[0]
    seq = byoc.transform.Sequential([relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "OHWI"]}),
                                     relay.transform.FoldConstant()])
    with byoc.transform.PassContext(opt_level=3):   # ConvertLayout is an opt_level 3 pass, as in TVM
        out = seq(mod)
    (conv,) = _convs(out)
    assert (conv.attrs.data_layout, conv.attrs.kernel_layout) == ("NHWC", "OHWI")
    np.testing.assert_array_equal(byoc.evaluate(out, {"x": x})[0], before)   # same sums, same order per output


def test_registered_convert_hook_builds_the_converted_op():
    mod = _nchw_conv_relu()
    seen = []

    def hook(attrs, inputs, tinfos, desired):
        seen.append((tuple(desired), tuple(t.shape for t in tinfos)))
        new = dict(attrs.items())
        new["data_layout"], new["kernel_layout"] = map(str, desired)
        return relay.nn.conv2d(*inputs, **new)
    op = Op.get("nn.conv2d")
    op.set_attr("FTVMConvertOpLayout", hook)
    try:
        out = relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "HWIO"]})(mod)
    finally:
        op.reset_attr("FTVMConvertOpLayout")
    assert seen == [(("NHWC", "HWIO"), ((1, 3, 8, 8), (4, 3, 3, 3)))]
    x = np.ones((1, 3, 8, 8), "float32")
    np.testing.assert_array_equal(byoc.evaluate(out, {"x": x})[0], byoc.evaluate(mod, {"x": x})[0])


def test_already_in_the_desired_layout_is_left_alone_and_non_convs_are_refused():
    mod = _nchw_conv_relu()
    assert relay.transform.ConvertLayout({"nn.conv2d": ["NCHW", "default"]})(mod)["main"].body.op.name == "nn.relu"
    assert not any(n.op.name == "layout_transform" for n in post_order(
        relay.transform.ConvertLayout({"nn.conv2d": ["NCHW", "OIHW"]})(mod)["main"].body)
        if isinstance(n, Call) and isinstance(n.op, Op))
    with pytest.raises(PassError, match="not a convolution"):
        relay.transform.ConvertLayout({"nn.relu": ["NHWC"]})(mod)
