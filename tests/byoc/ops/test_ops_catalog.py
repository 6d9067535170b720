"""The registry is complete: every op has a type relation, a compute and a fusion kind, and the catalog of
docs/architecture.md is registered with its documented operands."""
from __future__ import annotations

import dataclasses

import pytest

import byoc.ops as ops
from byoc.ops.registry import FusionKind, get_op_attr, get_op_def

CATALOG = {
    "qnn.conv2d": ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale"),
    "qnn.dense": ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale"),
    "qnn.conv2d_transpose": ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale",
                             "kernel_scale"),
    "qnn.requantize": ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point"),
    "qnn.quantize": ("data", "output_scale", "output_zero_point"),
    "qnn.dequantize": ("data", "input_scale", "input_zero_point"),
    "qnn.add": ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point", "output_scale",
                "output_zero_point"),
    "qnn.subtract": ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point", "output_scale",
                     "output_zero_point"),
    "qnn.mul": ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point", "output_scale",
                "output_zero_point"),
    "qnn.concatenate": ("data", "input_scales", "input_zero_points", "output_scale", "output_zero_point"),
    "qnn.softmax": ("data", "scale", "zero_point", "output_scale", "output_zero_point"),
    "qnn.sigmoid": ("data", "scale", "zero_point", "output_scale", "output_zero_point"),
    "qnn.tanh": ("data", "scale", "zero_point", "output_scale", "output_zero_point"),
    "qnn.hardswish": ("data", "scale", "zero_point", "output_scale", "output_zero_point"),
    "qnn.leaky_relu": ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point"),
    "qnn.mean": ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point"),
}

DATA_MOVEMENT = ["nn.dense", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d",
                 "nn.softmax", "nn.log_softmax", "nn.leaky_relu", "nn.conv2d_transpose", "nn.batch_flatten",
                 "reshape", "squeeze", "expand_dims", "transpose", "concatenate", "split", "strided_slice", "mean",
                 "sum", "max", "min", "image.resize2d", "nn.pad", "clip", "cast"]


@pytest.mark.parametrize("name", ops.list_ops())
def test_every_op_is_complete(name):
    d = get_op_def(name)
    assert callable(d.type_rel), f"{name} has no type relation"
    assert callable(d.compute), f"{name} has no compute"
    assert isinstance(d.fusion, FusionKind), f"{name} has no fusion kind"
    assert get_op_attr(name, "TOpPattern") == int(d.fusion)
    assert d.doc, f"{name} has no doc line"
    assert dataclasses.is_dataclass(d.attrs_type) and d.attrs_type.__dataclass_params__.frozen, \
        f"{name}: attributes must be a frozen dataclass"


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_quantized_catalog_operands(name):
    assert get_op_def(name).arg_names == CATALOG[name]


@pytest.mark.parametrize("name", DATA_MOVEMENT)
def test_plain_ops_registered(name):
    assert name in ops.list_ops()


def test_odd_attribute_values_are_diagnostics_not_tracebacks():
    from byoc import relay
    from byoc.errors import IRError, TypeInferenceError
    v = relay.var("x", shape=(2, 3), dtype="int8")
    with pytest.raises(IRError, match="nn.max_pool2d"):
        relay.nn.max_pool2d(v, pool_size="ab")
    mod = relay.IRModule.from_expr(relay.Function([v], relay.reshape(v, ("a",))))
    with pytest.raises(TypeInferenceError, match="reshape"):
        relay.transform.InferType()(mod)
