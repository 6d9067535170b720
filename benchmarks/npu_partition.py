"""Build an NPU partition by hand from an imported model (used until the pattern partitioner is wired in).

Walks ``main`` once (post-order, no recursion) and groups the op chains of docs/architecture.md into composite
function literals (``Composite="npu.<name>"``) inside one global function with ``Compiler="npu"``. Everything
from the first supported op to the output goes to the NPU; ops before it (e.g. MobileNetV2's NCHW→NHWC
transpose) stay in ``main``.
"""
from __future__ import annotations

from byoc import relay
from byoc.ir.expr import Call, Function, Op, Var
from byoc.ir.traversal import post_order, users_map

__all__ = ["npu_partition"]

_CHAINS = {
    "qnn.conv2d": ("nn.bias_add", "qnn.requantize", "clip"),
    "qnn.dense": ("nn.bias_add", "qnn.requantize", "clip"),
    "qnn.add": ("clip",),
    "qnn.mul": ("clip",),
    "qnn.mean": ("clip",),
}


def _name(op: str, call: Call) -> str:
    if op == "qnn.conv2d":
        return "npu.qnn_depthwise_conv2d" if call.attrs.groups > 1 else "npu.qnn_conv2d"
    return {"qnn.dense": "npu.qnn_dense", "qnn.add": "npu.qnn_add", "qnn.mul": "npu.qnn_mul",
            "qnn.mean": "npu.qnn_mean"}[op]


def npu_partition(mod) -> tuple[Function, Var, Call]:
    """(the Compiler="npu" function, main's value feeding it, that value's call) for a single-input chain model."""
    from byoc.transform.infer_type import infer_expr
    main = mod["main"]
    infer_expr(main)
    users = users_map(main.body)
    order = post_order(main.body, enter_functions=False)
    new: dict[int, object] = {}
    outer_input = None
    boundary = None
    consumed: set[int] = set()
    for node in order:
        if not isinstance(node, Call) or not isinstance(node.op, Op):
            continue
        name = node.op.name
        if name == "reshape" and id(node.args[0]) in new:
            new[id(node)] = node.replace(args=(new[id(node.args[0])],))
            continue
        if name not in _CHAINS or id(node) in consumed:
            continue
        chain = [node]
        # Extend downward through single-user successors that the pattern allows.
        for nxt_op in _CHAINS[name]:
            u = users.get(id(chain[-1]), [])
            if len(u) == 1 and isinstance(u[0], Call) and isinstance(u[0].op, Op) and u[0].op.name == nxt_op:
                chain.append(u[0])
        pad = None
        data = node.args[0]
        if name == "qnn.conv2d" and isinstance(data, Call) and isinstance(data.op, Op) and data.op.name == "nn.pad":
            pad, data = data, data.args[0]
        inputs = [data] if name not in ("qnn.add", "qnn.mul") else [node.args[0], node.args[1]]
        params = [relay.var(f"in{i}", x.checked_type) for i, x in enumerate(inputs)]
        # Rebuild the chain over the composite's parameters.
        first_args = list(node.args)
        if pad is not None:
            inner = pad.replace(args=(params[0],) + pad.args[1:])
            first_args[0] = inner
        else:
            for k, p in enumerate(params):
                first_args[k] = p
        cur = node.replace(args=tuple(first_args))
        for c in chain[1:]:
            cur = c.replace(args=(cur,) + c.args[1:])
        fn = relay.Function(params, cur).with_attr("Composite", _name(name, node))
        outer_args = []
        for x in inputs:
            if id(x) in new:
                outer_args.append(new[id(x)])
            else:
                if outer_input is None:
                    outer_input = relay.var("npu_input", x.checked_type)
                    boundary = x
                if x is not boundary:
                    raise ValueError("npu_partition handles models with one NPU input")
                outer_args.append(outer_input)
        call = Call(fn, tuple(outer_args), span=chain[-1].span)
        for c in chain:
            consumed.add(id(c))
            new[id(c)] = call
    body = new.get(id(main.body))
    if body is None:
        raise ValueError("the model's output is not produced by an NPU composite")
    fn = relay.Function([outer_input], body)
    for k, v in (("Compiler", "npu"), ("global_symbol", "tvmgen_default_npu_main_0"), ("Primitive", 1),
                 ("Inline", 1)):
        fn = fn.with_attr(k, v)
    return fn, outer_input, boundary
