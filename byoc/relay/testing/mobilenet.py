"""``relay.testing.mobilenet``: TVM's relay.testing MobileNet v1 workload (conv-bn-relu stem, 13 depthwise-
separable blocks, global pool, dense, softmax), same parameter names."""
from __future__ import annotations

from ... import relay
from . import layers
from .init import create_workload

__all__ = ["conv_block", "separable_conv_block", "mobile_net", "get_workload"]


def conv_block(data, name, channels, kernel_size=(3, 3), strides=(1, 1), padding=(1, 1), epsilon=1e-5,
               layout="NCHW"):
    conv = layers.conv2d(data=data, channels=channels, kernel_size=kernel_size, strides=strides, padding=padding,
                         data_layout=layout, kernel_layout=layers.conv_kernel_layout(layout), name=name + "_conv")
    return relay.nn.relu(layers.batch_norm_infer(data=conv, epsilon=epsilon, name=name + "_bn"))


def separable_conv_block(data, name, depthwise_channels, pointwise_channels, kernel_size=(3, 3), downsample=False,
                         padding=(1, 1), epsilon=1e-5, layout="NCHW", dtype="float32"):
    strides = (2, 2) if downsample else (1, 1)
    if layout == "NCHW":
        wshape = (depthwise_channels, 1) + tuple(kernel_size)
    elif layout == "NHWC":
        wshape = tuple(kernel_size) + (depthwise_channels, 1)
    else:
        raise ValueError(f"layout must be NCHW or NHWC, not {layout!r}")
    bn_axis = layout.index("C")
    weight = relay.var(name + "_weight", shape=wshape, dtype=dtype)
    conv1 = layers.conv2d(data=data, weight=weight, channels=depthwise_channels, groups=depthwise_channels,
                          kernel_size=kernel_size, strides=strides, padding=padding, data_layout=layout,
                          kernel_layout=layers.conv_kernel_layout(layout, True), name=name + "_depthwise_conv1")
    act1 = relay.nn.relu(layers.batch_norm_infer(data=conv1, epsilon=epsilon, axis=bn_axis, name=name + "_bn1"))
    conv2 = layers.conv2d(data=act1, channels=pointwise_channels, kernel_size=(1, 1), strides=(1, 1),
                          padding=(0, 0), data_layout=layout, kernel_layout=layers.conv_kernel_layout(layout),
                          name=name + "_conv2")
    return relay.nn.relu(layers.batch_norm_infer(data=conv2, epsilon=epsilon, axis=bn_axis, name=name + "_bn2"))


def mobile_net(num_classes=1000, data_shape=(1, 3, 224, 224), dtype="float32", alpha=1.0, is_shallow=False,
               layout="NCHW"):
    def ch(n):
        return int(n * alpha)

    data = relay.var("data", shape=data_shape, dtype=dtype)
    body = conv_block(data, "conv_block_1", ch(32), strides=(2, 2), layout=layout)
    # (block index, depthwise channels, pointwise channels, downsample)
    plan = [(1, 32, 64, False), (2, 64, 128, True), (3, 128, 128, False), (4, 128, 256, True),
            (5, 256, 256, False), (6, 256, 512, True)]
    if is_shallow:
        plan += [(7, 512, 1024, True), (8, 1024, 1024, True)]
    else:
        plan += [(i, 512, 512, False) for i in range(7, 12)] + [(12, 512, 1024, True), (13, 1024, 1024, False)]
    for i, dw, pw, down in plan:
        body = separable_conv_block(body, f"separable_conv_block_{i}", ch(dw), ch(pw), downsample=down,
                                    layout=layout, dtype=dtype)
    flat = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(body, layout=layout))
    fc = relay.nn.dense(flat, relay.var("fc_weight"), units=num_classes)
    fc = relay.nn.bias_add(fc, relay.var("fc_bias"))
    out = relay.nn.softmax(fc)
    return relay.Function(relay.analysis.free_vars(out), out)


def get_workload(batch_size=1, num_classes=1000, image_shape=(3, 224, 224), dtype="float32", layout="NCHW"):
    """``(mod, params)`` of MobileNet v1 (alpha 1.0) with Xavier-initialised weights (seed 0)."""
    net = mobile_net(num_classes=num_classes, data_shape=(batch_size,) + tuple(image_shape), dtype=dtype,
                     alpha=1.0, is_shallow=False, layout=layout)
    return create_workload(net)
