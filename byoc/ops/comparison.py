"""Comparisons and selection as IR ops (Relay spelling), plain and quantized.

* ``equal``, ``not_equal``, ``less``, ``less_equal``, ``greater``, ``greater_equal``: broadcast, bool result.
* ``qnn.equal`` ... ``qnn.greater_equal`` (our extension; TVM has no quantized comparisons): LiteRT's int8/uint8
  ComparisonWithScaling — each operand (q − zp)·2^8 rescaled by its own scale as a multiplier below 1
  (``comparison_params``), then the integer comparison. Two different values can compare equal after the
  rescale, so this is not the raw comparison even for equal parameters.
* ``where`` (condition, x, y): numpy ``where`` with broadcasting (TFLite SELECT_V2).
"""
from __future__ import annotations


import numpy as np

from ..ir.types import TensorType
from ..quant.fixedpoint import mbqm_smaller_than_one_exp
from ..quant.params import COMPARISON_LEFT_SHIFT, comparison_params
from .registry import FusionKind, register_op
from .rel import broadcast_shapes, expect_dtype, expect_scalar_or_vector, fail, tensor_arg


def _scalar_int(v) -> int:
    return int(np.asarray(v).reshape(-1)[0])



# ----------------------------------------------------------------------------------------------- comparisons
COMPARISONS = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
               "greater": np.greater, "greater_equal": np.greater_equal}


def _compare_rel(name):
    def rel(types, attrs):
        a = tensor_arg(name, ("lhs", "rhs"), types, 0)
        b = tensor_arg(name, ("lhs", "rhs"), types, 1)
        if a.dtype != b.dtype:
            raise fail(name, "rhs", f"dtype {a.dtype} (same as lhs)", b.dtype)
        return TensorType(broadcast_shapes(name, a.shape, b.shape), "bool")
    return rel


def _compare_compute(fn):
    return lambda args, attrs: np.asarray(fn(args[0], args[1]), dtype=bool)


_QCMP_ARGS = ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point")


def _qnn_compare_rel(name):
    def rel(types, attrs):
        a = tensor_arg(name, _QCMP_ARGS, types, 0)
        b = tensor_arg(name, _QCMP_ARGS, types, 1)
        expect_dtype(name, "lhs", a, ("int8", "uint8"))
        if b.dtype != a.dtype:
            raise fail(name, "rhs", f"dtype {a.dtype} (same as lhs)", b.dtype)
        for i in range(2, 6):
            expect_scalar_or_vector(name, _QCMP_ARGS[i], types[i], 1)
        return TensorType(broadcast_shapes(name, a.shape, b.shape), "bool")
    return rel


def qnn_compare_scaled(q, scale, zero_point: int, op: str = "qnn.equal"):
    """One operand as LiteRT's ComparisonWithScaling sees it: ((q − zp)·2^8) rescaled by its scale."""
    m, shift = comparison_params(scale, op)
    v = (np.asarray(q, np.int64) - zero_point) << COMPARISON_LEFT_SHIFT
    return mbqm_smaller_than_one_exp(v, m, shift)


def _qnn_compare_compute(name, fn):
    def compute(args, attrs):
        a, b, sa, za, sb, zb = args
        return np.asarray(fn(qnn_compare_scaled(a, sa, _scalar_int(za), name),
                             qnn_compare_scaled(b, sb, _scalar_int(zb), name)), dtype=bool)
    return compute


for _name, _fn in COMPARISONS.items():
    register_op(_name, ("lhs", "rhs"), rel=_compare_rel(_name), fusion=FusionKind.BROADCAST,
                compute=_compare_compute(_fn), doc=f"Elementwise {_name} with numpy broadcasting (bool result).")
    register_op("qnn." + _name, _QCMP_ARGS, rel=_qnn_compare_rel("qnn." + _name), fusion=FusionKind.BROADCAST,
                compute=_qnn_compare_compute("qnn." + _name, _fn),
                doc=f"TFLite quantized {_name.upper()} (int8/uint8): both operands rescaled by their own scales "
                    "after a left shift of 8, then compared (bool result).")


# ------------------------------------------------------------------------------------------------------ where
def _where_rel(types, attrs):
    names = ("condition", "x", "y")
    c, x, y = (tensor_arg("where", names, types, i) for i in range(3))
    expect_dtype("where", "condition", c, "bool")
    if x.dtype != y.dtype:
        raise fail("where", "y", f"dtype {x.dtype} (same as x)", y.dtype)
    return TensorType(broadcast_shapes("where", broadcast_shapes("where", c.shape, x.shape), y.shape), x.dtype)


register_op("where", ("condition", "x", "y"), rel=_where_rel, fusion=FusionKind.BROADCAST,
            compute=lambda args, attrs: np.where(args[0], args[1], args[2]).astype(args[1].dtype),
            doc="Select x where condition holds, else y (numpy broadcasting of all three).")
