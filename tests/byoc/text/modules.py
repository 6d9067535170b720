"""Modules that exercise every construct of the text format, built with the relay builders."""
from __future__ import annotations

import numpy as np

from byoc import relay
from byoc.ir.module import IRModule

_RNG_SEED = 20240611


def qnn_conv_chain() -> IRModule:
    """TFLite-import style: nn.pad -> qnn.conv2d -> nn.bias_add -> qnn.requantize -> clip, NHWC."""
    rng = np.random.default_rng(_RNG_SEED)
    x = relay.var("x", shape=(1, 9, 9, 3), dtype="int8")
    w = relay.const(rng.integers(-128, 128, (3, 3, 3, 8), dtype=np.int8))
    p = relay.nn.pad(x, ((0, 0), (0, 1), (0, 1), (0, 0)), pad_value=relay.const(-14, "int8"))
    c = relay.qnn.op.conv2d(p, w, relay.const(-14, "int32"), relay.const(0, "int32"), relay.const(0.5, "float32"),
                            relay.const(rng.random(8).astype(np.float32)), strides=(2, 2), kernel_size=(3, 3),
                            channels=8, data_layout="NHWC", kernel_layout="HWIO")
    b = relay.nn.bias_add(c, relay.const(rng.integers(-1000, 1000, 8, dtype=np.int32)), axis=3)
    scale = relay.const(rng.random(8) * 1e-3, "float64")  # float64 products, as the importer stores them
    r = relay.qnn.op.requantize(b, scale, relay.const(0), relay.const(0.0235, "float32"), relay.const(-3),
                                axis=3, rounding="TFLITE")
    y = relay.clip(r, -128.0, 100.0)
    return IRModule.from_expr(relay.Function([x], y))


def float_conv_batch_norm() -> IRModule:
    """Float conv2d + batch_norm (a 3-tuple result read with TupleGetItem) + relu."""
    rng = np.random.default_rng(_RNG_SEED + 1)
    x = relay.var("data", shape=(1, 3, 8, 8))
    w = relay.var("weight", shape=(4, 3, 3, 3))
    y = relay.nn.conv2d(x, w, padding=(1, 1), channels=4, kernel_size=(3, 3))
    vecs = [relay.const(rng.standard_normal(4).astype(np.float32)) for _ in range(3)]
    var = relay.const(rng.random(4).astype(np.float32) + 0.5)
    bn = relay.nn.batch_norm(y, vecs[0], vecs[1], vecs[2], var, epsilon=1e-3)
    out = relay.nn.relu(bn[0])
    return IRModule.from_expr(relay.Function([x, w], relay.Tuple([out, bn[1]])))


def lets_and_closures() -> IRModule:
    """A let-bound closure called through its variable, a let with an annotation, captured outer values."""
    x = relay.var("x", shape=(4,))
    outer = relay.nn.relu(x)
    a = relay.var("a", shape=(4,))
    f = relay.Function([a], relay.multiply(relay.add(a, outer), relay.const(2.0)))
    fv = relay.var("f")  # no annotation
    y = relay.var("y", shape=(4,))  # annotated let variable
    body = relay.Let(fv, f, relay.Let(y, relay.Call(fv, [x]), relay.subtract(y, outer)))
    return IRModule.from_expr(relay.Function([x], body))


def if_sharing() -> IRModule:
    """
    A value used by both branches and after the if (bound before it), a value used in one branch only
    (bound inside it), a nested if, and an if whose result feeds a later op::

        s = x + x ---------+-------------+
        c ? relu(s) * 3x : (c ? s - x : -x)   + s
    """
    x = relay.var("x", shape=(2, 3))
    c = relay.var("c", shape=(), dtype="bool")
    s = relay.add(x, x)
    only_true = relay.multiply(x, relay.const(3.0))
    inner = relay.If(c, relay.subtract(s, x), relay.negative(x))
    branch = relay.If(c, relay.multiply(relay.nn.relu(s), only_true), inner)
    return IRModule.from_expr(relay.Function([x, c], relay.add(branch, s)))


def tuples() -> IRModule:
    x = relay.var("x", shape=(3,))
    t = relay.Tuple([x, relay.Tuple([relay.negative(x), relay.Tuple([])]), relay.Tuple([x])])
    inner = relay.TupleGetItem(relay.TupleGetItem(t, 1), 0)
    return IRModule.from_expr(relay.Function([x], relay.Tuple([inner, relay.TupleGetItem(t, 2), t])))


def non_tail_lets() -> IRModule:
    """Lets used as an operand, as another let's value, and shared by two users."""
    x = relay.var("x", shape=(2,))
    v, w, u = relay.var("v", shape=(2,)), relay.var("w", shape=(2,)), relay.var("u", shape=(2,))
    as_operand = relay.Let(v, relay.add(x, x), relay.multiply(v, v))
    as_value = relay.Let(w, relay.Let(u, relay.negative(x), relay.abs(u)), relay.add(w, as_operand))
    shared = relay.add(as_value, as_value)
    return IRModule.from_expr(relay.Function([x], relay.add(shared, as_operand)))


def partitioned(target: str = "npu") -> IRModule:
    """A composite function inside a partitioned global function called from main (MergeComposite+Partition)."""
    rng = np.random.default_rng(_RNG_SEED + 2)
    name = f"tvmgen_default_{target}_main_0"
    a = relay.var("FunctionVar_0_0", shape=(1, 4, 4, 8), dtype="int8")
    conv = relay.qnn.op.conv2d(a, relay.const(rng.integers(-127, 128, (8, 1, 1, 8), dtype=np.int8)),
                               relay.const(0), relay.const(0), relay.const(0.05, "float32"),
                               relay.const(0.01, "float32"), data_layout="NHWC", kernel_layout="OHWI")
    bias = relay.nn.bias_add(conv, relay.const(rng.integers(-99, 99, 8, dtype=np.int32)), axis=3)
    req = relay.qnn.op.requantize(bias, relay.const(5e-4, "float64"), relay.const(0), relay.const(0.1, "float32"),
                                  relay.const(1), axis=3)
    comp = relay.Function([a], req)
    comp = comp.with_attr("Composite", f"{target}.qnn_conv2d")
    comp = comp.with_attr("PartitionedFromPattern", "qnn.conv2d_nn.bias_add_qnn.requantize_")
    i0 = relay.var(f"{target}_0_i0", shape=(1, 4, 4, 8), dtype="int8")
    glob = relay.Function([i0], relay.Call(comp, [i0]), ret_type=relay.TensorType((1, 4, 4, 8), "int8"))
    for k, v in (("Inline", 1), ("Compiler", target), ("global_symbol", name), ("Primitive", 1)):
        glob = glob.with_attr(k, v)
    gv = relay.GlobalVar(name)
    x = relay.var("x", shape=(1, 4, 4, 8), dtype="int8")
    mod = IRModule()
    mod[gv] = glob
    mod["main"] = relay.Function([x], relay.clip(relay.Call(gv, [x]), -100, 100))
    return mod


def multiple_globals() -> IRModule:
    """main calls @g twice and @f; @f calls @g; a global with a name that needs quoting."""
    mod = IRModule()
    gg, gf, gq = relay.GlobalVar("g"), relay.GlobalVar("f"), relay.GlobalVar("odd name-1")
    p = relay.var("p", shape=(2,))
    mod[gg] = relay.Function([p], relay.nn.relu(p))
    q = relay.var("q", shape=(2,))
    mod[gf] = relay.Function([q], relay.add(relay.Call(gg, [q]), q))
    r = relay.var("r", shape=(2,))
    mod[gq] = relay.Function([r], relay.negative(r))
    x = relay.var("x", shape=(2,))
    y = relay.Call(gg, [relay.Call(gg, [x])])
    mod["main"] = relay.Function([x], relay.Tuple([relay.Call(gf, [y]), relay.Call(gq, [x])]))
    return mod


SPECIAL_FLOAT32 = np.array([0.0, -0.0, 1.5, np.inf, -np.inf, np.float32(1e-45), np.finfo(np.float32).max,
                            np.finfo(np.float32).tiny, 0.1, -3.4e38], dtype=np.float32)


def constants_of_every_dtype() -> IRModule:
    """Meta tensors and inline scalars of every dtype, special float bit patterns, empty and 0-d tensors."""
    rng = np.random.default_rng(_RNG_SEED + 3)
    nan_payload = np.array([0x7FC00001, 0xFFC00123, 0x7F800001], dtype=np.uint32).view(np.float32)
    nan64 = np.array([0x7FF8000000000001, 0xFFF0000000000042], dtype=np.uint64).view(np.float64)
    tensors = [
        rng.integers(0, 2, (2, 3)).astype(np.bool_),
        rng.integers(-128, 128, (4,), dtype=np.int8),
        rng.integers(0, 256, (2, 2, 2), dtype=np.uint8),
        rng.integers(-2**15, 2**15, (5,), dtype=np.int16),
        rng.integers(-2**31, 2**31, (3, 1), dtype=np.int32),
        np.array([-2**63, 2**63 - 1, 0, -1], dtype=np.int64),
        np.concatenate([SPECIAL_FLOAT32, nan_payload]),
        np.concatenate([rng.standard_normal(3), [np.pi, -0.0, 5e-324], nan64]),
        np.array([1, 65535], dtype=np.uint16),
        np.array([4294967295], dtype=np.uint32),
        np.array([0.1, np.float16(6.1e-5), -0.0], dtype=np.float16),
        np.zeros((0, 3), dtype=np.int8),                 # empty
        np.array(np.nan, dtype=np.float32),              # 0-d with no exact literal -> metadata
        np.array(np.float32(0.1)),                       # 0-d single use -> inline literal
    ]
    scalars = [relay.const(v, dt) for v, dt in (
        (True, "bool"), (False, "bool"), (-14, "int8"), (255, "uint8"), (-32768, "int16"), (7, "int32"),
        (-(2**63), "int64"), (2**63 - 1, "int64"), (65535, "uint16"), (4294967295, "uint32"), (0.5, "float32"),
        (-0.0, "float32"), (np.float32(1e-45), "float32"), (1 / 3, "float64"), (1e308, "float64"),
        (np.float16(0.1), "float16"), (np.inf, "float32"), (-np.inf, "float64"))]
    x = relay.var("x", shape=(2,))
    return IRModule.from_expr(relay.Function([x], relay.Tuple([x] + [relay.const(t) for t in tensors] + scalars)))


def shared_constants() -> IRModule:
    """One scalar Constant object used twice vs two equal Constants: sharing must survive the round trip."""
    x = relay.var("x", shape=(2,))
    c = relay.const(1.5)
    shared = relay.add(relay.add(x, c), relay.multiply(c, x))
    copies = relay.add(relay.add(x, relay.const(1.5)), relay.multiply(relay.const(1.5), x))
    w = relay.const(np.arange(2, dtype=np.float32))
    return IRModule.from_expr(relay.Function([x], relay.Tuple([shared, copies, relay.add(w, w), relay.add(x, w)])))


def colliding_names() -> IRModule:
    """Distinct variables with one name, names that are numbers or hold punctuation, an untyped parameter."""
    xs = [relay.var("x", shape=(2,)) for _ in range(3)]
    odd = [relay.var("0", shape=(2,)), relay.var("conv/weights:0", shape=(2,)), relay.var("x_1", shape=(2,)),
           relay.var("let", shape=(2,)), relay.var("fn", shape=(2,)), relay.var("meta", shape=(2,))]
    untyped = relay.var("u")
    body = xs[0]
    for v in xs[1:] + odd:
        body = relay.add(body, v)
    return IRModule.from_expr(relay.Function(xs + odd + [untyped], relay.Tuple([body, untyped])))


def nested_functions(depth: int = 6) -> IRModule:
    """fn literals nested ``depth`` deep, each capturing the parameters of all enclosing ones."""
    x = relay.var("x", shape=(2,))
    params = [relay.var(f"p{i}", shape=(2,)) for i in range(depth)]
    body = params[-1]
    for p in params[:-1]:
        body = relay.add(body, p)
    for i in reversed(range(depth)):
        f = relay.Function([params[i]], body)
        arg = x if i == 0 else params[i - 1]
        body = relay.Call(f, [relay.nn.relu(arg)])
    return IRModule.from_expr(relay.Function([x], body))


def many_attrs() -> IRModule:
    """Attribute values of every kind: float bounds, negative and empty lists, None, strings, bools."""
    x = relay.var("x", shape=(1, 4, 6, 6))
    y = relay.clip(x, -0.5, 1e-30)
    y = relay.cast(y, "float64")
    y = relay.cast(y, "float32")
    w = relay.var("w", shape=(4, 2, 3, 3))
    y = relay.nn.conv2d(y, w, strides=(1, 2), padding=(1, 0, 2, 1), dilation=(2, 1), groups=2, channels=None,
                        kernel_size=(3, 3), out_dtype="float32")
    y = relay.nn.batch_norm(y, *[relay.const(np.ones(4, np.float32)) for _ in range(4)], axis=1, epsilon=2.5e-7,
                            center=False, scale=True)[0]
    y = relay.nn.pad(y, ((0, 0), (0, 0), (1, 2), (3, 4)), pad_value=relay.const(-1.25))
    return IRModule.from_expr(relay.Function([x, w], y))


ALL = {f.__name__: f for f in (qnn_conv_chain, float_conv_batch_norm, lets_and_closures, if_sharing, tuples,
                               non_tail_lets, partitioned, multiple_globals, constants_of_every_dtype,
                               shared_constants, colliding_names, nested_functions, many_attrs)}

# Modules whose types can be inferred (the others hold untyped variables on purpose).
TYPED = ("qnn_conv_chain", "float_conv_batch_norm", "if_sharing", "tuples", "non_tail_lets", "partitioned",
         "multiple_globals", "constants_of_every_dtype", "shared_constants", "nested_functions", "many_attrs")
