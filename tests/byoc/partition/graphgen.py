"""Random small graphs for property tests: quantized NHWC int8 graphs (npu, vta) and float NCHW graphs
(example_accelerator). A graph is built deterministically from a list of (kind, operand choice, seed) steps;
each op gets a unique span so a test can follow it through partitioning."""
from __future__ import annotations

import numpy as np

import byoc
from byoc import relay

Q_SHAPE = (1, 4, 4, 4)
F_SHAPE = (1, 3, 5, 5)

Q_KINDS = ("conv", "conv_pad", "conv_k4", "dw", "add", "add_clip", "mul", "sub", "max", "maxpool", "avgpool",
           "rq_float", "clip", "reshape2", "tanh", "rq")
F_KINDS = ("conv", "conv_relu", "conv5", "add", "add_bcast", "sub", "mul", "relu", "tanh")


def _span(i: int) -> relay.Span:
    return relay.Span(f"op{i}")


def _spanned(call, i):
    return call.replace(span=_span(i))


def _qconst(rng, shape, lo=-6, hi=6, dtype="int8"):
    return relay.const(rng.integers(lo, hi, shape).astype(dtype))


def _qconv(x, rng, kernel=3, pad_op=False, groups=1, i=0):
    c = Q_SHAPE[3]
    if groups == 1:
        w = _qconst(rng, (c, kernel, kernel, c))
        layout = "OHWI"
    else:
        w = _qconst(rng, (kernel, kernel, 1, c))
        layout = "HWIO"
    lo, hi = (kernel - 1) // 2, kernel // 2
    src = x
    padding = (lo, lo, hi, hi)
    if pad_op:
        src = _spanned(relay.nn.pad(x, ((0, 0), (lo, hi), (lo, hi), (0, 0)), relay.const(-1, "int8")), i)
        padding = (0, 0, 0, 0)
    conv = _spanned(relay.qnn.op.conv2d(src, w, relay.const(-1), relay.const(0), relay.const(0.05),
                                        relay.const(0.02), padding=padding, groups=groups, data_layout="NHWC",
                                        kernel_layout=layout), i)
    b = _spanned(relay.nn.bias_add(conv, _qconst(rng, (c,), -50, 50, "int32"), axis=3), i)
    scale = relay.const(np.float64(0.05) * np.float64(0.02))
    return _spanned(relay.qnn.op.requantize(b, scale, relay.const(0), relay.const(0.04), relay.const(2), axis=3), i)


def _qbinary(fn, a, b, i):
    return _spanned(fn(a, b, relay.const(0.05), relay.const(-1), relay.const(0.04), relay.const(2),
                       relay.const(0.06), relay.const(1)), i)


def build_quantized(steps) -> byoc.IRModule:
    """``steps``: list of (kind index, operand choice, seed)."""
    x = relay.var("x", shape=Q_SHAPE, dtype="int8")
    y = relay.var("y", shape=Q_SHAPE, dtype="int8")
    pool = [x, y]
    used: set[int] = set()
    for i, (k, choice, seed) in enumerate(steps):
        kind = Q_KINDS[k % len(Q_KINDS)]
        rng = np.random.default_rng(seed)
        a = pool[len(pool) - 1 - choice % min(len(pool), 4)]
        b = pool[(choice // 4) % len(pool)]
        if kind == "conv":
            out = _qconv(a, rng, 3, i=i)
        elif kind == "conv_pad":
            out = _qconv(a, rng, 3, pad_op=True, i=i)
        elif kind == "conv_k4":
            out = _qconv(a, rng, 4, i=i)
        elif kind == "dw":
            out = _qconv(a, rng, 3, groups=Q_SHAPE[3], i=i)
        elif kind == "add":
            out = _qbinary(relay.qnn.op.add, a, b, i)
        elif kind == "add_clip":
            out = _spanned(relay.clip(_qbinary(relay.qnn.op.add, a, b, i), -20, 90), i)
        elif kind == "mul":
            out = _qbinary(relay.qnn.op.mul, a, b, i)
        elif kind == "sub":
            out = _qbinary(relay.qnn.op.subtract, a, b, i)
        elif kind == "max":
            out = _spanned(relay.maximum(a, b), i)
        elif kind == "maxpool":
            out = _spanned(relay.nn.max_pool2d(a, (3, 3), (1, 1), padding=(1, 1), layout="NHWC"), i)
        elif kind == "avgpool":
            c = _spanned(relay.cast(a, "int32"), i)
            p = _spanned(relay.nn.avg_pool2d(c, (3, 3), (1, 1), padding=(1, 1), layout="NHWC"), i)
            out = _spanned(relay.cast(p, "int8"), i)
        elif kind == "rq_float":
            out = _spanned(relay.qnn.op.requantize(a, relay.const(0.05), relay.const(0), relay.const(0.03),
                                                   relay.const(1), rounding="TFLITE_FLOAT"), i)
        elif kind == "rq":
            out = _spanned(relay.qnn.op.requantize(a, relay.const(0.05), relay.const(0), relay.const(0.03),
                                                   relay.const(1)), i)
        elif kind == "clip":
            out = _spanned(relay.clip(a, -100, 100), i)
        elif kind == "reshape2":
            r = _spanned(relay.reshape(a, (1, 16, 4)), i)
            out = _spanned(relay.reshape(r, Q_SHAPE), i)
        else:  # tanh
            out = _spanned(relay.qnn.op.tanh(a, relay.const(0.05), relay.const(-1), relay.const(1 / 128),
                                             relay.const(0)), i)
        used.update((id(a), id(b)) if kind in ("add", "add_clip", "mul", "sub", "max") else (id(a),))
        pool.append(out)
    return _finish([x, y], pool, used)


def _finish(params, pool, used):
    sinks = [e for e in pool[len(params):] if id(e) not in used] or [pool[-1]]
    body = sinks[0] if len(sinks) == 1 else relay.Tuple(sinks)
    return byoc.IRModule.from_expr(relay.Function(params, body))


def build_float(steps) -> byoc.IRModule:
    x = relay.var("x", shape=F_SHAPE)
    y = relay.var("y", shape=F_SHAPE)
    pool = [x, y]
    used: set[int] = set()
    for i, (k, choice, seed) in enumerate(steps):
        kind = F_KINDS[k % len(F_KINDS)]
        rng = np.random.default_rng(seed)
        a = pool[len(pool) - 1 - choice % min(len(pool), 4)]
        b = pool[(choice // 4) % len(pool)]
        c = F_SHAPE[1]
        if kind in ("conv", "conv_relu", "conv5"):
            ks = 5 if kind == "conv5" else 3
            w = relay.const(rng.standard_normal((c, c, ks, ks)).astype("float32"))
            out = _spanned(relay.nn.conv2d(a, w, padding=(ks // 2, ks // 2)), i)
            if kind == "conv_relu":
                out = _spanned(relay.nn.relu(out), i)
        elif kind == "add":
            out = _spanned(relay.add(a, b), i)
        elif kind == "add_bcast":
            out = _spanned(relay.add(a, relay.const(rng.standard_normal((c, 1, 1)).astype("float32"))), i)
        elif kind == "sub":
            out = _spanned(relay.subtract(a, b), i)
        elif kind == "mul":
            out = _spanned(relay.multiply(a, b), i)
        elif kind == "relu":
            out = _spanned(relay.nn.relu(a), i)
        else:
            out = _spanned(relay.tanh(a), i)
        used.update((id(a), id(b)) if kind in ("add", "sub", "mul") else (id(a),))
        pool.append(out)
    return _finish([x, y], pool, used)


def random_inputs(mod, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for p in mod["main"].params:
        t = p.type_annotation
        if t.dtype == "int8":
            out[p.name_hint] = rng.integers(-128, 128, t.shape).astype("int8")
        else:
            out[p.name_hint] = rng.standard_normal(t.shape).astype(t.dtype)
    return out
