"""TFLite CUSTOM operators without a converter → one opaque ``tflite.custom`` call (byoc/ops/custom.py).

``from_tflite(..., strict=False)`` (the default) keeps such an operator: its custom code, options bytes, position
in the file and its outputs' declared shapes, dtypes and quantization; ``strict=True`` refuses the model as before
(``UnsupportedOpsError``). Builtin operators without a converter are refused either way.

``cut_before_custom_ops(mod)`` is what a user without a kernel can execute: the model up to the custom operators'
inputs.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..ir.expr import Expr, Function, Span, Tuple
from ..ir.module import IRModule
from ..ir.traversal import children, post_order
from ..ir.types import TupleType
from ..ops.custom import CUSTOM_OP, is_custom_call
from .tflite_context import ConverterSpec, OpContext, tensor_name

__all__ = ["OPAQUE_CUSTOM", "convert_opaque_custom", "cut_before_custom_ops"]


def convert_opaque_custom(ctx: OpContext) -> list[Expr]:
    op = ctx.op
    ins = [ctx.input(i) for i in range(len(op.inputs)) if ctx.has_input(i)]
    outs = [ctx.out_tensor(j) for j in range(len(op.outputs))]
    shapes, dtypes, known, scales, zps = [], [], [], [], []
    for t in outs:
        ctx.type_of(t)   # an output dtype the IR has no type for is refused, naming the tensor
        shapes.append(tuple(t.shape))
        dtypes.append(t.dtype)
        known.append(len(t.shape) > 0)   # TFLite stores a kernel-sized output with an empty shape
        q = t.quant
        scales.append(tuple(float(s) for s in np.asarray(q.scale, np.float32)) if q is not None else ())
        zps.append(tuple(int(z) for z in np.asarray(q.zero_point)) if q is not None else ())
    name = op.opcode[len("CUSTOM:"):]
    if not all(known):
        shapes, known = _prepared_shapes(ctx, name, ins, shapes, known, dtypes)
    attrs = {"name": name, "options_hex": bytes(op.custom_options).hex(),
             "out_shapes": tuple(shapes), "out_dtypes": tuple(dtypes), "out_shapes_known": tuple(known),
             "out_scales": tuple(scales), "out_zero_points": tuple(zps), "operator_index": int(op.index),
             "file_offset": int(op.offset),
             "input_names": tuple(tensor_name(ctx.tensor(i)) for i in range(len(op.inputs)) if ctx.has_input(i))}
    call = ctx.call(CUSTOM_OP, [ctx.tuple(ins)], attrs)
    return [ctx.item(call, j, Span(tensor_name(t))) for j, t in enumerate(outs)]


def _prepared_shapes(ctx: OpContext, name: str, ins, shapes, known, dtypes):
    """Shapeless outputs sized by the ``output_shapes`` function registered with the op's kernel (LiteRT sizes
    them in the kernel's Prepare); unchanged when none is registered."""
    from ..ops.custom import CustomOpAttrs, custom_output_shapes
    fn = custom_output_shapes(name)
    if fn is None:
        return shapes, known
    probe = CustomOpAttrs(name=name, options_hex=bytes(ctx.op.custom_options).hex(), out_shapes=tuple(shapes),
                          out_dtypes=tuple(dtypes), out_shapes_known=tuple(known), operator_index=int(ctx.op.index),
                          file_offset=int(ctx.op.offset))
    try:
        got = [tuple(int(d) for d in s) for s in fn([i.checked_type for i in ins], probe)]
    except Exception as e:  # noqa: BLE001 - the user's function
        raise ctx.fail(f"output_shapes registered for CUSTOM:{name} raised {type(e).__name__}: {e}") from None
    if len(got) != len(shapes) or any(k and g != s for g, s, k in zip(got, shapes, known)) or \
            any(d < 0 for g in got for d in g):
        raise ctx.fail(f"output_shapes registered for CUSTOM:{name} gave {got}; the file declares {list(shapes)} "
                       f"(empty: sized at run time)", hint="one non-negative shape per output, agreeing with the file")
    return got, [True] * len(got)


OPAQUE_CUSTOM = ConverterSpec("CUSTOM:*", convert_opaque_custom, (CUSTOM_OP,), (CUSTOM_OP,))


def cut_before_custom_ops(mod: IRModule) -> IRModule:
    """A module whose ``main`` returns what the model computes without its ``tflite.custom`` ops: each custom
    op's inputs (first use order, once each) after the model's outputs that need no custom op. It runs on every
    executor; feed its results to your own implementation of the custom operators."""
    main = mod["main"]
    tainted: set[int] = set()
    order = post_order(main.body, enter_functions=False)
    wanted: list[Expr] = []
    seen: set[int] = set()
    for n in order:
        if is_custom_call(n):
            tainted.add(id(n))
            for a in n.args[0].fields if isinstance(n.args[0], Tuple) else n.args:
                if id(a) not in seen and id(a) not in tainted:
                    seen.add(id(a))
                    wanted.append(a)
        elif any(id(c) in tainted for c in children(n)):
            tainted.add(id(n))
    if not any(is_custom_call(n) for n in order):
        raise ModelError("cut_before_custom_ops: the module has no tflite.custom op", hint="nothing to cut")
    fields = list(main.body.fields) if isinstance(main.body, Tuple) else [main.body]
    keep = [f for f in fields if id(f) not in tainted and id(f) not in seen]
    outs = keep + wanted
    body = outs[0] if len(outs) == 1 else Tuple(tuple(outs), Span("outputs"))
    if len(outs) > 1:
        body._set_checked_type(TupleType(tuple(o.checked_type for o in outs)))
    func = Function(main.params, body)
    out = IRModule()
    out["main"] = func
    from ..transform.infer_type import InferType
    return InferType()(out)

