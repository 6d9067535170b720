"""``tvm.relay.op.contrib.dnnl``: TVM's DNNL (oneDNN) pattern table and per-op ``target.dnnl`` support checks,
for the ops byoc has — the partitioning side only (byoc has no DNNL runtime: a module partitioned for ``dnnl``
partitions, but does not build). The per-op checks live in ``dnnl_op_checks.py``, registered with ``relay``.

As in TVM (``python/tvm/relay/op/contrib/dnnl.py`` at 21095b98bb): conv2d / conv2d_transpose / dense, each with
an optional bias ``add`` and an optional element-wise tail (relu, tanh, sigmoid, clip, gelu, swish, mish), named
``dnnl.conv2d_bias_relu``, ``dnnl.deconv2d_sigmoid``, ``dnnl.dense_bias``, ...; conv2d + bias + sum (+ relu);
dense + bias + sum; and the int8 ``dnnl.qnn.conv2d`` / ``dnnl.qnn.dense`` chains. TVM's entries for conv1d,
conv3d and conv3d_transpose are absent (byoc has no such ops). The table loads when TVM's spelling asks for it
(``relay.op.contrib.get_pattern_table("dnnl")``) or when this module is imported."""
from __future__ import annotations

import math

from ...dataflow_pattern import is_constant, is_expr, is_op, wildcard
from ...expr import const
from .dnnl_op_checks import SUPPORTED_OPS  # noqa: F401 - registered when relay is imported, as in TVM
from .register import register_pattern_table

__all__ = ["pattern_table", "make_dnnl_pattern", "make_conv_bias_sum_relu_pattern", "make_dense_bias_sum_pattern",
           "make_qnn_conv2d_pattern", "make_qnn_dense_pattern", "add_checker"]

SUPPORTED_POST_ELTS = ("nn.relu", "tanh", "sigmoid", "clip", "gelu", "swish", "mish", None)

def _eltwise_tail(out, eltwise):
    if eltwise == "gelu":  # x * (erf(x / c1) + c2) * c3
        out = is_op("multiply")(is_op("multiply")(out, is_op("add")(is_op("erf")(is_op("divide")(out, wildcard())),
                                                                     wildcard())), wildcard())
    elif eltwise == "swish":
        out = is_op("multiply")(out, is_op("sigmoid")(out))
    elif eltwise == "mish":  # x * tanh(log(exp(x) + c))
        out = is_op("multiply")(out, is_op("tanh")(is_op("log")(is_op("add")(is_op("exp")(out), wildcard()))))
    elif eltwise:
        out = is_op(eltwise)(out)
    return out


def _shape(expr) -> tuple:
    return tuple(expr.checked_type.shape)


def add_checker(attrs, args, op_name) -> bool:
    """TVM's check that an ``add`` is an element-wise sum of two same-shaped tensors (``"sum"``) or a conv2d's
    per-channel bias (``"bias_add"``: a bias with as many elements as the conv2d's ``channels``)."""
    first = args[0]
    if op_name == "sum":
        return getattr(getattr(first, "op", None), "name", None) == "add" and _shape(first) == _shape(args[1])
    if op_name == "bias_add":
        if attrs is None or getattr(getattr(first, "op", None), "name", None) != "nn.conv2d":
            return False
        return getattr(attrs, "channels", None) == math.prod(_shape(args[1]))
    return True


def _bias_predicate(expr) -> bool:
    if _name(expr) == "nn.relu":
        expr = expr.args[0]
    if _name(expr) == "add":
        return add_checker(getattr(expr.args[0], "attrs", None), expr.args, "bias_add")
    return True


def _sum_predicate(expr) -> bool:
    if _name(expr) == "nn.relu":
        expr = expr.args[0]
    for e, kind in ((expr, "sum"), (expr.args[0], "bias_add")):
        if not add_checker(getattr(e.args[0], "attrs", None), e.args, kind):
            return False
    return True


def _name(expr) -> str:
    op = getattr(expr, "op", None)
    return getattr(op, "name", "") or ""


def make_dnnl_pattern(op_name: str, with_bias: bool, with_eltwise):
    """``(name, pattern[, check])`` for conv2d / conv2d_transpose / dense with optional bias and tail."""
    if with_eltwise not in SUPPORTED_POST_ELTS:
        raise ValueError(f"Unsupported eltwise post-op: {with_eltwise}")
    if "_transpose" in op_name:
        name = "dnnl.deconv" + op_name.split("_")[0][-2:]
    else:
        name = op_name.replace("nn", "dnnl")
    name += "_bias" if with_bias else ""
    name += ("_" + with_eltwise.split(".")[-1]) if with_eltwise else ""
    out = is_op(op_name)(wildcard(), wildcard())
    if with_bias:
        out = is_op("add")(out, wildcard())
    out = _eltwise_tail(out, with_eltwise)
    return (name, out, _bias_predicate) if "conv" in op_name else (name, out)


def make_conv_bias_sum_relu_pattern(conv_type: str = "nn.conv2d", has_relu: bool = True):
    out = is_op("add")(is_op("add")(is_op(conv_type)(wildcard(), wildcard()), wildcard()), wildcard())
    return is_op("nn.relu")(out) if has_relu else out


def make_dense_bias_sum_pattern():
    out = is_op("add")(is_op("add")(is_op("nn.dense")(wildcard(), wildcard()), wildcard()), wildcard())
    return "dnnl.dense_bias_sum", out


def _qnn_tail(pat):
    """The requantize-as-float-arithmetic chain DNNL's int8 kernels fuse: optional bias, output scale, clip,
    optional activation scale, optional sum, optional destination zero point, cast."""
    pat = is_op("cast")(pat)
    pat = is_op("add")(pat, is_constant()) | pat
    pat = is_op("multiply")(pat, is_constant())
    pat = is_op("clip")(pat)
    pat = is_op("multiply")(pat, is_constant()) | pat
    pat = is_op("add")(pat, is_op("multiply")(is_constant(), is_op("cast")(wildcard()))) | pat
    pat = is_op("add")(pat, is_constant()) | pat
    return is_op("cast")(pat)


def make_qnn_conv2d_pattern():
    zero = is_expr(const(0, dtype="int32"))
    pat = is_op("qnn.conv2d")(wildcard(), is_constant(), zero, zero, is_constant(), is_constant())
    return "dnnl.qnn.conv2d", _qnn_tail(pat)


def make_qnn_dense_pattern():
    zero = is_expr(const(0, dtype="int32"))
    pat = is_op("qnn.dense")(wildcard(), is_constant(), zero, zero, is_constant(), is_constant())
    return "dnnl.qnn.dense", _qnn_tail(pat)


@register_pattern_table("dnnl")
def pattern_table():
    """TVM's DNNL table, in TVM's priority order."""
    table = [make_qnn_conv2d_pattern(), make_qnn_dense_pattern(), make_dense_bias_sum_pattern(),
             ("dnnl.conv2d_bias_sum_relu", make_conv_bias_sum_relu_pattern("nn.conv2d"), _sum_predicate),
             ("dnnl.conv2d_bias_sum", make_conv_bias_sum_relu_pattern("nn.conv2d", False), _sum_predicate)]
    for with_bias in (True, False):
        for elt in SUPPORTED_POST_ELTS:
            if not with_bias and not elt:
                continue
            for conv in ("nn.conv2d", "nn.conv2d_transpose"):
                table.append(make_dnnl_pattern(conv, with_bias, elt))
            table.append(make_dnnl_pattern("nn.dense", with_bias, elt))
    return table
