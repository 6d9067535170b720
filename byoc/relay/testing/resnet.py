"""``relay.testing.resnet``: the ResNet workloads of TVM's relay.testing (pre-activation ResNet v2: batch norm
and ReLU before each convolution; basic blocks below 50 layers, bottlenecks from 50), same parameter names."""
from __future__ import annotations

from ... import relay
from . import layers
from .init import create_workload

__all__ = ["residual_unit", "resnet", "get_net", "get_workload"]

_IMAGENET_UNITS = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3],
                   152: [3, 8, 36, 3], 200: [3, 24, 36, 3], 269: [3, 30, 48, 8]}


def residual_unit(data, num_filter, stride, dim_match, name, bottle_neck=True, data_layout="NCHW",
                  kernel_layout="IOHW"):
    bn_axis = data_layout.index("C")
    conv_kw = dict(data_layout=data_layout, kernel_layout=kernel_layout)

    def bn_relu(x, suffix):
        return relay.nn.relu(layers.batch_norm_infer(data=x, epsilon=2e-5, axis=bn_axis, name=name + suffix))

    def conv(x, channels, k, s, suffix):
        return layers.conv2d(data=x, channels=channels, kernel_size=(k, k), strides=s,
                             padding=(k // 2, k // 2), name=name + suffix, **conv_kw)

    act1 = bn_relu(data, "_bn1")
    if bottle_neck:
        quarter = int(num_filter * 0.25)
        out = conv(act1, quarter, 1, stride, "_conv1")
        out = conv(bn_relu(out, "_bn2"), quarter, 3, (1, 1), "_conv2")
        out = conv(bn_relu(out, "_bn3"), num_filter, 1, (1, 1), "_conv3")
    else:
        out = conv(act1, num_filter, 3, stride, "_conv1")
        out = conv(bn_relu(out, "_bn2"), num_filter, 3, (1, 1), "_conv2")
    shortcut = data if dim_match else conv(act1, num_filter, 1, stride, "_sc")
    return relay.add(out, shortcut)


def resnet(units, num_stages, filter_list, num_classes, data_shape, bottle_neck=True, layout="NCHW",
           dtype="float32"):
    data_layout = layout
    kernel_layout = "OIHW" if layout == "NCHW" else "HWIO"
    bn_axis = data_layout.index("C")
    conv_kw = dict(data_layout=data_layout, kernel_layout=kernel_layout)
    data = relay.var("data", shape=data_shape, dtype=dtype)
    body = layers.batch_norm_infer(data=data, epsilon=2e-5, axis=bn_axis, scale=False, name="bn_data")
    height = data_shape[data_layout.index("H")]
    if height <= 32:       # CIFAR-sized input: a 3x3 stem, no pooling
        body = layers.conv2d(data=body, channels=filter_list[0], kernel_size=(3, 3), strides=(1, 1),
                             padding=(1, 1), name="conv0", **conv_kw)
    else:                  # ImageNet-sized input: 7x7/2 stem, batch norm, ReLU, 3x3/2 max pool
        body = layers.conv2d(data=body, channels=filter_list[0], kernel_size=(7, 7), strides=(2, 2),
                             padding=(3, 3), name="conv0", **conv_kw)
        body = relay.nn.relu(layers.batch_norm_infer(data=body, epsilon=2e-5, axis=bn_axis, name="bn0"))
        body = relay.nn.max_pool2d(body, pool_size=(3, 3), strides=(2, 2), padding=(1, 1), layout=data_layout)
    for i in range(num_stages):
        s = 1 if i == 0 else 2
        body = residual_unit(body, filter_list[i + 1], (s, s), False, name=f"stage{i + 1}_unit1",
                             bottle_neck=bottle_neck, **conv_kw)
        for j in range(units[i] - 1):
            body = residual_unit(body, filter_list[i + 1], (1, 1), True, name=f"stage{i + 1}_unit{j + 2}",
                                 bottle_neck=bottle_neck, **conv_kw)
    body = relay.nn.relu(layers.batch_norm_infer(data=body, epsilon=2e-5, axis=bn_axis, name="bn1"))
    body = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(body, layout=data_layout))
    net = relay.nn.softmax(layers.dense_add_bias(data=body, units=num_classes, name="fc1"))
    return relay.Function(relay.analysis.free_vars(net), net)


def get_net(batch_size, num_classes, num_layers=50, image_shape=(3, 224, 224), layout="NCHW",
            dtype="float32", **kwargs):
    data_shape = (batch_size,) + tuple(image_shape)
    height = image_shape[0] if layout == "NHWC" else image_shape[1]
    if height <= 28:
        num_stages = 3
        if (num_layers - 2) % 9 == 0 and num_layers >= 164:
            per_unit, filter_list, bottle_neck = [(num_layers - 2) // 9], [16, 64, 128, 256], True
        elif (num_layers - 2) % 6 == 0 and num_layers < 164:
            per_unit, filter_list, bottle_neck = [(num_layers - 2) // 6], [16, 16, 32, 64], False
        else:
            raise ValueError(f"no CIFAR ResNet with {num_layers} layers")
        units = per_unit * num_stages
    else:
        num_stages = 4
        bottle_neck = num_layers >= 50
        filter_list = [64, 256, 512, 1024, 2048] if bottle_neck else [64, 64, 128, 256, 512]
        if num_layers not in _IMAGENET_UNITS:
            raise ValueError(f"no ResNet with {num_layers} layers: one of {sorted(_IMAGENET_UNITS)}")
        units = _IMAGENET_UNITS[num_layers]
    return resnet(units=units, num_stages=num_stages, filter_list=filter_list, num_classes=num_classes,
                  data_shape=data_shape, bottle_neck=bottle_neck, layout=layout, dtype=dtype)


def get_workload(batch_size=1, num_classes=1000, num_layers=18, image_shape=(3, 224, 224), layout="NCHW",
                 dtype="float32", **kwargs):
    """``(mod, params)`` of a ResNet with Xavier-initialised weights (seed 0)."""
    net = get_net(batch_size=batch_size, num_classes=num_classes, num_layers=num_layers,
                  image_shape=image_shape, layout=layout, dtype=dtype, **kwargs)
    return create_workload(net)
