import byoc
from byoc import relay
from byoc.ops.registry import register_op_attr
from byoc.relay.transform import *
for op, t in [("add", "A"), ("multiply", "A"), ("tanh", "A"), ("add", "B"), ("subtract", "B")]:
    register_op_attr(op, f"target.{t}", lambda call: True)
x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
e = relay.tanh(relay.subtract(relay.add(x, y), y))
mod = byoc.IRModule.from_expr(relay.Function([x, y], e))
print(Sequential([InferType(), AnnotateTarget(["A","B"])])(mod))
print(Sequential([InferType(), AnnotateTarget("A"), AnnotateTarget("B")])(mod))
