"""How to add an accelerator: a complete, working example in a few lines.

1. Register a pattern table under the target name. Entries are ``CompositePattern(name, pattern, check)`` (or
   TVM's ``(name, pattern[, check])`` tuples); names start with ``<target>.``; list order is priority.
2. Checks return ``True``/``False`` (TVM style), a ``Support(ok, reason)``, or are a ``Check`` of ``Rule``s,
   which also gives the CLI its rule text and the partition report its reasons.
3. Single ops can be accepted without a pattern through an op predicate (``target.<name>`` op attribute).
4. ``byoc.partition_for("example_accelerator", mod)`` then runs the whole flow.

This accelerator runs float32 conv2d (+ optional ReLU) and elementwise add on NCHW tensors.
"""
from __future__ import annotations

from byoc.relay.dataflow_pattern import is_op, wildcard
from byoc.relay.dataflow_pattern.check import Check, Support, rule

from .registry import CompositePattern, register_op_predicate, register_pattern_table

TARGET = "example_accelerator"


@rule("the convolution is float32 with a 3x3 or 1x1 kernel and groups 1")
def _conv_ok(ctx):
    conv = ctx["conv"]
    t = conv.args[1].checked_type
    if t.dtype != "float32" or t.shape[2:] not in ((3, 3), (1, 1)) or conv.attrs.groups != 1:
        return f"found {t.dtype} kernel {t.shape} with groups {conv.attrs.groups}"
    return None


@register_pattern_table(TARGET)
def pattern_table():
    conv = is_op("nn.conv2d")(wildcard(), wildcard()).named("conv")
    return [CompositePattern(f"{TARGET}.conv2d_relu", conv.optional(is_op("nn.relu")), Check((_conv_ok,)))]


def _add_supported(call) -> Support:
    """elementwise add of two float32 tensors of the same shape"""
    a, b = call.args[0].checked_type, call.args[1].checked_type
    if a != b or a.dtype != "float32":
        return Support.no(f"add of {a} and {b}: only same-shape float32 additions")
    return Support.yes()


register_op_predicate(TARGET, "add", _add_supported)
