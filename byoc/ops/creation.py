"""Tensors made from a shape or another tensor's type: zeros, ones, zeros_like, ones_like."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType
from .registry import FusionKind, register_op
from .rel import fail, tensor_arg


@dataclass(frozen=True)
class InitOpAttrs(Attrs):
    shape: tuple = ()
    dtype: str = "float32"


def _init_rel(name):
    def rel(types, attrs):
        if any(int(d) < 0 for d in attrs.shape):
            raise fail(name, "shape", "non-negative dimensions", attrs.shape)
        return TensorType(tuple(int(d) for d in attrs.shape), attrs.dtype)
    return rel


def _like_rel(name):
    def rel(types, attrs):
        return tensor_arg(name, ("data",), types, 0)
    return rel


for _name, _value in (("zeros", 0), ("ones", 1)):
    register_op(_name, (), attrs=InitOpAttrs, rel=_init_rel(_name), fusion=FusionKind.ELEMWISE,
                compute=(lambda v: lambda args, attrs: np.full(attrs.shape, v, dtype=attrs.dtype))(_value),
                doc=f"A tensor of {_value}s of the given shape and dtype.")
    register_op(f"{_name}_like", ("data",), rel=_like_rel(f"{_name}_like"), fusion=FusionKind.ELEMWISE,
                compute=(lambda v: lambda args, attrs: np.full(args[0].shape, v, dtype=args[0].dtype))(_value),
                doc=f"A tensor of {_value}s shaped and typed like the argument.")
