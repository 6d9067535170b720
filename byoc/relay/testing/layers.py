"""``relay.testing.layers``: layer helpers that create their own named parameter variables (``<name>_weight``,
``<name>_gamma``, ...), which ``create_workload`` fills by suffix."""
from __future__ import annotations

from ... import relay

__all__ = ["batch_norm_infer", "conv2d", "conv2d_transpose", "dense_add_bias", "conv_kernel_layout"]


def batch_norm_infer(data, gamma=None, beta=None, moving_mean=None, moving_var=None, **kwargs):
    """The normalised output of ``nn.batch_norm`` (element 0)."""
    name = kwargs.pop("name")
    gamma = gamma if gamma is not None else relay.var(name + "_gamma")
    beta = beta if beta is not None else relay.var(name + "_beta")
    moving_mean = moving_mean if moving_mean is not None else relay.var(name + "_moving_mean")
    moving_var = moving_var if moving_var is not None else relay.var(name + "_moving_var")
    return relay.nn.batch_norm(data, gamma, beta, moving_mean, moving_var, **kwargs)[0]


def conv2d(data, weight=None, **kwargs):
    name = kwargs.pop("name")
    weight = weight if weight is not None else relay.var(name + "_weight")
    return relay.nn.conv2d(data, weight, **kwargs)


def conv2d_transpose(data, weight=None, **kwargs):
    name = kwargs.pop("name")
    weight = weight if weight is not None else relay.var(name + "_weight")
    return relay.nn.conv2d_transpose(data, weight, **kwargs)


def dense_add_bias(data, weight=None, bias=None, units=None, **kwargs):
    name = kwargs.pop("name")
    weight = weight if weight is not None else relay.var(name + "_weight")
    bias = bias if bias is not None else relay.var(name + "_bias")
    out = relay.nn.dense(data, weight, units, **kwargs)
    return relay.nn.bias_add(out, bias, axis=-1)


def conv_kernel_layout(data_layout: str, is_depthwise: bool = False) -> str:
    """The kernel layout TVM's workloads pair with a data layout."""
    table = {("NCHW", False): "OIHW", ("NCHW", True): "OIHW",
             ("NHWC", False): "HWIO", ("NHWC", True): "HWOI"}
    if (data_layout, is_depthwise) not in table:
        raise ValueError(f"no kernel layout for data layout {data_layout!r} (NCHW or NHWC)")
    return table[(data_layout, is_depthwise)]
