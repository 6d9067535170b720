"""``tvm.relay.op.strategy.generic``: the conv2d layout helpers pattern tables call.

Layouts are strings of axis letters (``"NHWC"``, ``"OIHW"``, ``"HWIO"``, ``"HWOI"``); channel counts are read
at the letter's position."""
from __future__ import annotations

from ....errors import IRError

__all__ = ["get_conv2d_in_channels", "get_conv2d_out_channels", "is_depthwise_conv2d"]


def _axis(layout, letter: str, what: str) -> int:
    layout = str(layout)
    if letter not in layout:
        raise IRError(f"{what} layout {layout!r} has no {letter!r} axis", hint="a layout like NHWC / OIHW / HWIO")
    return layout.index(letter)


def get_conv2d_in_channels(data_shape, data_layout) -> int:
    """Input channels of a conv2d's data: the ``C`` axis of ``data_layout``."""
    return int(data_shape[_axis(data_layout, "C", "data")])


def get_conv2d_out_channels(kernel_shape, kernel_layout) -> int:
    """Output channels of a conv2d's kernel: the ``O`` axis of ``kernel_layout``."""
    return int(kernel_shape[_axis(kernel_layout, "O", "kernel")])


def is_depthwise_conv2d(data_shape, data_layout, kernel_shape, kernel_layout, groups) -> bool:
    """True when input channels, output channels and groups are all equal (one filter per channel)."""
    ic = get_conv2d_in_channels(data_shape, data_layout)
    oc = get_conv2d_out_channels(kernel_shape, kernel_layout)
    return ic == oc == int(groups)
