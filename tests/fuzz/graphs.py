"""Hypothesis strategies for random quantized TFLite graphs, written with ``byoc.testing.TFLiteWriter``.

``graph_cases(max_ops=...)`` draws a ``GraphCase``: the ``.tflite`` bytes, random inputs and a readable op log.
Every structural choice (op kind, which live tensor feeds it, kernel sizes, paddings, activations, scales and zero
points) is a hypothesis draw, so failures shrink to small graphs; weights and input values come from a numpy
generator seeded by one draw (they need no shrinking to explain a bug).

Topologies: chains, branches (any live tensor may feed the next op), residual adds (ADD/SUB/MUL of two live
tensors of one shape), shared inputs (an op reading the same tensor twice), concatenations of tensors with equal
quantization, SPLIT's multiple outputs, a second graph input, and several graph outputs (every unconsumed tensor
plus some intermediate ones). Nothing here computes expected values: the oracle is LiteRT.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from hypothesis import strategies as st

from byoc.testing.tflite_writer import TensorRef, TFLiteWriter

__all__ = ["GraphCase", "graph_cases", "OP_KINDS", "random_inputs"]

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
MAX_ELEMENTS = 4096  # keeps every tensor (and so every executor) small


@dataclass(frozen=True)
class GraphCase:
    """One drawn graph: the model, its inputs (in graph-input order) and the op log that built it."""
    model: bytes
    inputs: tuple[np.ndarray, ...]
    log: tuple[str, ...]

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        lines = "\n  ".join(self.log)
        shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in self.inputs)
        return f"GraphCase({len(self.model)} bytes, inputs [{shapes}]):\n  {lines}"

    def _repr_pretty_(self, p, cycle) -> None:  # hypothesis prints the op log, not the model bytes
        p.text(repr(self))


def random_inputs(refs: list[TensorRef], rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    out = []
    for r in refs:
        if r.dtype == "float32":
            out.append((rng.standard_normal(r.shape) * 2).astype(np.float32))
        else:
            info = np.iinfo(r.dtype)
            out.append(rng.integers(info.min, info.max + 1, r.shape).astype(r.dtype))
    return tuple(out)


def _elements(shape) -> int:
    return int(np.prod(shape)) if len(shape) else 1


class _Builder:
    """Draws ops onto a writer; ``live`` holds the tensors later ops may read."""

    def __init__(self, draw, rng: np.random.Generator, max_elements: int = MAX_ELEMENTS):
        self.draw = draw
        self.max_elements = max_elements
        self.rng = rng
        self.w = TFLiteWriter(description="tests.fuzz")
        self.live: list[TensorRef] = []
        self.consumed: set[int] = set()
        self.inputs: list[TensorRef] = []
        self.floats: list[TensorRef] = []   # DEQUANTIZE results (graph outputs, or QUANTIZE'd back)
        self.log: list[str] = []

    # ----------------------------------------------------------------- draws
    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def choice(self, options):
        return self.draw(st.sampled_from(list(options)))

    def flag(self, p_true: float = 0.5) -> bool:
        # a boolean that shrinks to False; p_true is approximate via an integer draw
        return self.draw(st.integers(0, 99)) < int(p_true * 100)

    def scale(self, lo: float = -9.0, hi: float = 0.0) -> float:
        """A positive scale, log-uniform in [2^lo, 2^hi] (shrinks towards 2^hi)."""
        e = self.draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False))
        return float(np.float32(2.0 ** e))

    def zero_point(self, dtype: str = "int8") -> int:
        info = np.iinfo(dtype)
        return self.draw(st.integers(int(info.min), int(info.max)))

    def out_params(self, x: TensorRef, gain: float = 1.0) -> tuple[float, int]:
        """Output (scale, zp) near ``x``'s scale times ``gain`` (so results are not all saturated), off by a
        drawn factor in [1/16, 16]."""
        base = (x.scale[0] if x.quantized else 0.05) * gain
        f = self.draw(st.floats(-4.0, 4.0, allow_nan=False, allow_infinity=False))
        s = float(np.float32(min(max(base * 2.0 ** f, 1e-6), 1e4)))
        return s, self.zero_point(x.dtype)

    def pick(self, pred: Callable[[TensorRef], bool] = lambda t: True) -> TensorRef | None:
        """A live tensor satisfying ``pred``; shrinks towards the most recent one (chains)."""
        cands = [t for t in self.live if pred(t)]
        if not cands:
            return None
        return cands[-1 - self.integer(0, len(cands) - 1)]

    def use(self, *refs: TensorRef) -> None:
        for r in refs:
            self.consumed.add(r.index)

    def add_live(self, *refs: TensorRef) -> None:
        for r in refs:
            if _elements(r.shape) <= self.max_elements and all(d > 0 for d in r.shape):
                self.live.append(r)

    def emit(self, text: str, y: TensorRef | list[TensorRef], *reads: TensorRef) -> bool:
        """Record an added op: ``reads`` are consumed, the log gets ``text``, the result(s) become live."""
        self.use(*reads)
        self.note(text, y)
        self.add_live(*(y if isinstance(y, list) else [y]))
        return True

    def note(self, text: str, y: TensorRef | list[TensorRef]) -> None:
        ys = y if isinstance(y, list) else [y]
        q = "; ".join(f"{t.name}{list(t.shape)} s={t.scale[0]:.6g} zp={t.zero_point[0]}" if t.quantized else
                      f"{t.name}{list(t.shape)} {t.dtype}" for t in ys)
        self.log.append(f"{text} -> {q}")

    # ----------------------------------------------------------------- weights
    def weights(self, x: TensorRef, shape, per_channel_axis: int | None):
        """(quantized weights, scale(s), zero point): int8 symmetric, per-channel or per-tensor, for int8 data;
        uint8 per-tensor with a drawn zero point for uint8 data (LiteRT's uint8 kernels have no per-channel)."""
        if x.dtype == "uint8":
            return (self.rng.integers(0, 256, shape).astype(np.uint8), np.float32(self.scale(-10, -4)),
                    self.zero_point("uint8"))
        q = self.rng.integers(-127, 128, shape).astype(np.int8)
        if per_channel_axis is not None and self.flag(0.7):
            n = shape[per_channel_axis]
            lo = self.draw(st.floats(-10.0, -4.0, allow_nan=False, allow_infinity=False))
            scales = (2.0 ** (lo + self.rng.uniform(0, 3, n))).astype(np.float32)
        else:
            scales = np.float32(self.scale(-10, -4))
        return q, scales, 0

    def bias(self, n: int, optional: bool = False):
        """int32 bias; LiteRT's int8 CONV_2D / DEPTHWISE_CONV_2D require one, FC and TRANSPOSE_CONV do not."""
        if optional and self.flag(0.15):
            return None
        mag = self.choice([0, 100, 10_000, 1_000_000])
        return self.rng.integers(-mag, mag + 1, n).astype(np.int32)


def _conv_out_gain(w_scale, fan_in: int) -> float:
    return float(np.max(w_scale)) * 127.0 * np.sqrt(max(fan_in, 1)) / 4


# --------------------------------------------------------------------------------------------------- ops
# Each op function takes the builder and returns True when it added something (False: preconditions unmet).
def _is4d(t: TensorRef) -> bool:
    return len(t.shape) == 4 and t.dtype != "float32"


def _quant(t: TensorRef) -> bool:
    return t.dtype != "float32"


def op_conv2d(b: _Builder) -> bool:
    x = b.pick(_is4d)
    if x is None:
        return False
    _, h, w, cin = x.shape
    kh, kw = b.integer(1, 3), b.integer(1, 3)
    sh, sw = b.integer(1, 2), b.integer(1, 2)
    dil = (2, 2) if b.flag(0.1) else (1, 1)
    padding = b.choice(["SAME", "VALID"])
    if padding == "VALID" and ((kh - 1) * dil[0] + 1 > h or (kw - 1) * dil[1] + 1 > w):
        padding = "SAME"
    cout = b.integer(1, 8)
    wq, ws, wz = b.weights(x, (cout, kh, kw, cin), 0)
    act = b.choice(ACTIVATIONS)
    s, zp = b.out_params(x, _conv_out_gain(ws, kh * kw * cin))
    y = b.w.conv2d(x, wq, b.bias(cout), weight_scale=ws, weight_zp=wz, strides=(sh, sw), dilation=dil,
                   padding=padding, activation=act, out_scale=s, out_zp=zp)
    return b.emit(f"CONV_2D({x.name}, k={kh}x{kw}, s={sh}x{sw}, d={dil[0]}, {padding}, {act}, "
                  f"{'per-channel' if np.ndim(ws) else 'per-tensor'})", y, x)


def op_depthwise(b: _Builder) -> bool:
    x = b.pick(_is4d)
    if x is None:
        return False
    _, h, w, cin = x.shape
    m = b.integer(1, 2)
    kh, kw = b.integer(1, 3), b.integer(1, 3)
    sh, sw = b.integer(1, 2), b.integer(1, 2)
    dil = (2, 2) if b.flag(0.1) else (1, 1)
    padding = b.choice(["SAME", "VALID"])
    if padding == "VALID" and ((kh - 1) * dil[0] + 1 > h or (kw - 1) * dil[1] + 1 > w):
        padding = "SAME"
    wq, ws, wz = b.weights(x, (1, kh, kw, cin * m), 3)
    act = b.choice(ACTIVATIONS)
    s, zp = b.out_params(x, _conv_out_gain(ws, kh * kw))
    y = b.w.depthwise_conv2d(x, wq, b.bias(cin * m), weight_scale=ws, weight_zp=wz, strides=(sh, sw),
                             dilation=dil, padding=padding, depth_multiplier=m, activation=act, out_scale=s,
                             out_zp=zp)
    return b.emit(f"DEPTHWISE_CONV_2D({x.name}, m={m}, k={kh}x{kw}, s={sh}x{sw}, d={dil[0]}, {padding}, {act})", y, x)


def op_fully_connected(b: _Builder) -> bool:
    x = b.pick(_quant)
    if x is None or len(x.shape) < 1:
        return False
    mode = b.choice(["flatten", "last", "keep"])
    k = _elements(x.shape[1:]) if mode == "flatten" and len(x.shape) > 1 else x.shape[-1]
    if k > 512:
        return False
    units = b.integer(1, 10)
    wq, ws, wz = b.weights(x, (units, k), 0)
    act = b.choice(ACTIVATIONS)
    s, zp = b.out_params(x, _conv_out_gain(ws, k))
    y = b.w.fully_connected(x, wq, b.bias(units, optional=True), weight_scale=ws, weight_zp=wz,
                            keep_num_dims=(mode == "keep"), activation=act, out_scale=s, out_zp=zp)
    return b.emit(f"FULLY_CONNECTED({x.name}, units={units}, K={k}, {mode}, {act})", y, x)


def op_transpose_conv(b: _Builder) -> bool:
    x = b.pick(_is4d)
    if x is None:
        return False
    n, h, w, cin = x.shape
    kh, kw = b.integer(1, 3), b.integer(1, 3)
    sh, sw = b.integer(1, 2), b.integer(1, 2)
    padding = b.choice(["SAME", "VALID"])
    if padding == "SAME":
        oh, ow = h * sh, w * sw
    else:
        oh, ow = (h - 1) * sh + kh, (w - 1) * sw + kw
    cout = b.integer(1, 6)
    wq, ws, wz = b.weights(x, (cout, kh, kw, cin), 0)
    s, zp = b.out_params(x, _conv_out_gain(ws, kh * kw * cin))
    bias = b.bias(cout, optional=True)
    y = b.w.transpose_conv(x, wq, (n, oh, ow, cout), bias, weight_scale=ws, weight_zp=wz, strides=(sh, sw),
                           padding=padding, out_scale=s, out_zp=zp)
    return b.emit(f"TRANSPOSE_CONV({x.name}, k={kh}x{kw}, s={sh}x{sw}, {padding}, bias={bias is not None})", y, x)


def op_binary(b: _Builder) -> bool:
    a = b.pick(_quant)
    if a is None:
        return False
    kind = b.choice(["ADD", "SUB", "MUL"])
    how = b.choice(["const", "same", "live"])
    rhs: TensorRef | np.ndarray
    if how == "live":
        other = b.pick(lambda t: t.shape == a.shape and t.dtype == a.dtype and t.index != a.index)
        how = "same" if other is None else "live"
        rhs = other if other is not None else a
    elif how == "same":
        rhs = a
    else:
        shapes = [a.shape, (a.shape[-1],) if a.shape else (), (1,) * max(len(a.shape) - 1, 0) + a.shape[-1:], (1,)]
        cshape = b.choice(shapes[: 4 if a.shape else 1])
        rhs = b.rng.integers(np.iinfo(a.dtype).min, np.iinfo(a.dtype).max + 1, cshape).astype(a.dtype)
    act = b.choice(ACTIVATIONS)
    gain = 2.0 if kind != "MUL" else float(a.scale[0]) * 64
    s, zp = b.out_params(a, gain)
    fn = {"ADD": b.w.add, "SUB": b.w.sub, "MUL": b.w.mul}[kind]
    y = fn(a, rhs, activation=act, out_scale=s, out_zp=zp)
    if isinstance(rhs, TensorRef):
        return b.emit(f"{kind}({a.name}, {rhs.name}, {act})", y, a, rhs)
    return b.emit(f"{kind}({a.name}, const{list(np.shape(rhs))}, {act})", y, a)


def op_pool(b: _Builder) -> bool:
    x = b.pick(_is4d)
    if x is None:
        return False
    _, h, w, _ = x.shape
    kind = b.choice(["AVERAGE_POOL_2D", "MAX_POOL_2D"])
    fh, fw = b.integer(1, 3), b.integer(1, 3)
    sh, sw = b.integer(1, 2), b.integer(1, 2)
    padding = b.choice(["VALID", "SAME"])
    if padding == "VALID" and (fh > h or fw > w):
        padding = "SAME"
    act = b.choice(ACTIVATIONS)
    fn = b.w.average_pool2d if kind == "AVERAGE_POOL_2D" else b.w.max_pool2d
    y = fn(x, (fh, fw), (sh, sw), padding, activation=act)
    return b.emit(f"{kind}({x.name}, f={fh}x{fw}, s={sh}x{sw}, {padding}, {act})", y, x)


def op_mean(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and len(t.shape) >= 2)
    if x is None:
        return False
    r = len(x.shape)
    axes = b.choice([[1, 2], [1], [2], [r - 1], [-1], [1, 2, 3]] if r == 4 else [[r - 1], [1], [-1]])
    axes = [a for a in axes if -r <= a < r]
    if not axes:
        return False
    keep = b.flag(0.6)
    same = b.flag(0.3)
    s, zp = (x.scale[0], x.zero_point[0]) if same else b.out_params(x)
    y = b.w.mean(x, axes, keep_dims=keep, out_scale=s, out_zp=zp)
    return b.emit(f"MEAN({x.name}, axes={axes}, keep_dims={keep})", y, x)


def op_activation(b: _Builder) -> bool:
    x = b.pick(_quant)
    if x is None:
        return False
    kind = b.choice(["RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU", "HARD_SWISH", "LOGISTIC", "TANH", "SOFTMAX"])
    if kind in ("LOGISTIC", "TANH"):
        y = (b.w.logistic if kind == "LOGISTIC" else b.w.tanh)(x)
        detail = ""
    elif kind == "SOFTMAX":
        beta = float(np.float32(b.draw(st.floats(0.1, 2.0, allow_nan=False))))
        y = b.w.softmax(x, beta)
        detail = f", beta={beta:.4g}"
    else:
        same = kind != "HARD_SWISH" and b.flag(0.3)
        s, zp = (x.scale[0], x.zero_point[0]) if same else b.out_params(x)
        if kind == "LEAKY_RELU":
            alpha = float(np.float32(b.draw(st.floats(-1.0, 1.0, allow_nan=False))))
            y = b.w.leaky_relu(x, alpha, out_scale=s, out_zp=zp)
            detail = f", alpha={alpha:.4g}"
        else:
            fn = {"RELU": b.w.relu, "RELU6": b.w.relu6, "RELU_N1_TO_1": b.w.relu_n1_to_1,
                  "HARD_SWISH": b.w.hard_swish}[kind]
            y = fn(x, out_scale=s, out_zp=zp)
            detail = ""
    return b.emit(f"{kind}({x.name}{detail})", y, x)


def op_requantize(b: _Builder) -> bool:
    x = b.pick(_quant)
    if x is None:
        return False
    if b.flag(0.3):
        f = b.w.dequantize(x)
        b.use(x)
        b.note(f"DEQUANTIZE({x.name})", f)
        if b.flag(0.5):
            s, zp = b.out_params(x)
            y = b.w.quantize(f, out_scale=s, out_zp=zp, out_dtype=x.dtype)
            b.consumed.add(f.index)
            b.note(f"QUANTIZE({f.name})", y)
            b.add_live(y)
        else:
            b.floats.append(f)
        return True
    dtype = b.choice([x.dtype, "uint8" if x.dtype == "int8" else "int8"])
    s, _ = b.out_params(x)
    zp = b.zero_point(dtype)
    y = b.w.quantize(x, out_scale=s, out_zp=zp, out_dtype=dtype)
    return b.emit(f"QUANTIZE({x.name}) requantize to {dtype}", y, x)


def op_pad(b: _Builder) -> bool:
    x = b.pick(_quant)
    if x is None or not x.shape:
        return False
    r = len(x.shape)
    pads = [[0, 0] if (i == 0 and r == 4) else [b.integer(0, 2), b.integer(0, 2)] for i in range(r)]
    if b.flag(0.3):
        value = b.zero_point(x.dtype)
        y = b.w.padv2(x, pads, value)
        text = f"PADV2({x.name}, {pads}, value={value})"
    else:
        y = b.w.pad(x, pads)
        text = f"PAD({x.name}, {pads})"
    return b.emit(text, y, x)


def op_reshape(b: _Builder) -> bool:
    x = b.pick(_quant)
    if x is None:
        return False
    n = _elements(x.shape)
    options = [(1, n), (n,), (1, 1, 1, n), (1, 1, n, 1), (1, -1)]
    if len(x.shape) == 4:
        nb, h, w, c = x.shape
        options += [(nb, w, h, c), (nb, h * w, 1, c), (nb, 1, h * w, c), (nb, h, w * c, 1)]
    shape = b.choice(options)
    y = b.w.reshape(x, shape, shape_as_input=b.flag(0.8))
    return b.emit(f"RESHAPE({x.name}, {list(shape)})", y, x)


def op_squeeze(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and any(d == 1 for d in t.shape) and len(t.shape) > 1)
    if x is None:
        return False
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    axes = [] if b.flag(0.3) else sorted(set(b.choice(ones) for _ in range(b.integer(1, len(ones)))))
    if not axes and len(ones) == len(x.shape):
        axes = ones[:1]
    y = b.w.squeeze(x, axes)
    return b.emit(f"SQUEEZE({x.name}, {axes})", y, x)


def op_transpose(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and 2 <= len(t.shape) <= 5)
    if x is None:
        return False
    perm = list(b.draw(st.permutations(list(range(len(x.shape))))))
    y = b.w.transpose(x, perm)
    return b.emit(f"TRANSPOSE({x.name}, {perm})", y, x)


def _same_params_branch(b: _Builder, a: TensorRef, axis: int) -> TensorRef:
    """A new tensor with ``a``'s quantization and shape (channels may differ when concatenating on them)."""
    kind = b.choice(["add_const", "leaky", "conv"] if len(a.shape) == 4 else ["add_const", "leaky"])
    s, zp = a.scale[0], a.zero_point[0]
    if kind == "conv":
        cout = a.shape[3] if axis != 3 else b.integer(1, 6)
        k = b.integer(1, 3)
        wq, ws, wz = b.weights(a, (cout, k, k, a.shape[3]), 0)
        y = b.w.conv2d(a, wq, b.bias(cout), weight_scale=ws, weight_zp=wz, padding="SAME", out_scale=s, out_zp=zp)
        b.note(f"CONV_2D({a.name}, k={k}x{k}, SAME) with the same output params", y)
    elif kind == "leaky":
        y = b.w.leaky_relu(a, 0.5, out_scale=s, out_zp=zp)
        b.note(f"LEAKY_RELU({a.name}, alpha=0.5) with the same output params", y)
    else:
        y = b.w.add(a, b.rng.integers(-20, 20, a.shape[-1:]).astype(a.dtype), out_scale=s, out_zp=zp)
        b.note(f"ADD({a.name}, const) with the same output params", y)
    b.use(a)
    return y


def op_concatenation(b: _Builder) -> bool:
    a = b.pick(lambda t: _quant(t) and len(t.shape) >= 1)
    if a is None:
        return False
    r = len(a.shape)
    axis = b.integer(-r, r - 1)
    ax = axis % r
    # inputs and output with different parameters (LiteRT re-quantizes uint8 in float32; it refuses int8 ones)
    rescale = b.flag(0.3) and a.dtype == "uint8"

    def fits(t: TensorRef) -> bool:
        same_q = rescale or (t.scale == a.scale and t.zero_point == a.zero_point)
        return (len(t.shape) == r and t.dtype == a.dtype and same_q
                and all(t.shape[i] == a.shape[i] for i in range(r) if i != ax))

    parts = [a]
    for _ in range(b.integer(1, 2)):
        how = b.choice(["same", "live", "branch"])
        other = b.pick(fits) if how == "live" else None
        if how == "branch":
            other = _same_params_branch(b, a, ax)
        parts.append(other if other is not None else a)
    s, zp = b.out_params(a) if rescale else (None, None)
    y = b.w.concatenation(parts, axis, out_scale=s, out_zp=zp)  # LiteRT refuses fused activations here
    return b.emit(f"CONCATENATION({', '.join(p.name for p in parts)}, axis={axis}"
                  f"{', rescaled' if rescale else ''})", y, *parts)


def op_split(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and any(d % 2 == 0 or d % 3 == 0 for d in t.shape))
    if x is None:
        return False
    axes = [i for i, d in enumerate(x.shape) if d > 1 and (d % 2 == 0 or d % 3 == 0)]
    if not axes:
        return False
    axis = b.choice(axes)
    k = b.choice([n for n in (2, 3) if x.shape[axis] % n == 0])
    if b.flag(0.3):
        axis -= len(x.shape)
    ys = b.w.split(x, k, axis)
    return b.emit(f"SPLIT({x.name}, num_splits={k}, axis={axis})", ys, x)


def _slice_shape(shape, begin, end, strides, begin_mask, end_mask, shrink) -> tuple[int, ...]:
    """The output shape (numpy slicing, as the writer derives it) — checked before an op is written."""
    idx = []
    for i, (lo, hi, s) in enumerate(zip(begin, end, strides)):
        if shrink >> i & 1:
            idx.append(int(lo))
        else:
            idx.append(slice(None if begin_mask >> i & 1 else lo, None if end_mask >> i & 1 else hi, s))
    return np.broadcast_to(np.zeros((), np.int8), shape)[tuple(idx)].shape


def op_strided_slice(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and 1 <= len(t.shape) <= 5)
    if x is None:
        return False
    begin, end, strides = [], [], []
    for d in x.shape:
        if d > 1 and b.flag(0.15):  # a negative stride walks backwards
            hi = b.integer(1, d - 1)
            begin.append(hi)
            end.append(b.integer(-d - 1, hi - 1) if b.flag(0.3) else b.integer(0, hi - 1))
            strides.append(-b.integer(1, 2))
        else:
            lo = b.integer(0, d - 1)
            begin.append(lo)
            end.append(b.integer(lo + 1, d))
            strides.append(b.integer(1, 2))
    r = len(x.shape)
    begin_mask = b.integer(0, (1 << r) - 1) if b.flag(0.3) else 0
    end_mask = b.integer(0, (1 << r) - 1) if b.flag(0.3) else 0
    shrink = 0
    if b.flag(0.2):
        i = b.integer(0, r - 1)
        if strides[i] > 0:
            shrink = 1 << i
            end[i] = begin[i] + 1
    if 0 in _slice_shape(x.shape, begin, end, strides, begin_mask, end_mask, shrink):
        return False
    y = b.w.strided_slice(x, begin, end, strides, begin_mask=begin_mask, end_mask=end_mask,
                          shrink_axis_mask=shrink)
    return b.emit(f"STRIDED_SLICE({x.name}, begin={begin}, end={end}, strides={strides}, masks="
                  f"{begin_mask}/{end_mask}/{shrink})", y, x)


def op_resize(b: _Builder) -> bool:
    x = b.pick(_is4d)
    if x is None:
        return False
    size = (b.integer(1, 10), b.integer(1, 10))
    mode = b.choice(["plain", "align_corners", "half_pixel"])
    y = b.w.resize_nearest_neighbor(x, size, align_corners=mode == "align_corners",
                                    half_pixel_centers=mode == "half_pixel")
    return b.emit(f"RESIZE_NEAREST_NEIGHBOR({x.name}, {list(size)}, {mode})", y, x)


def op_slice(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and 1 <= len(t.shape) <= 4)
    if x is None:
        return False
    begin = [b.integer(0, d - 1) for d in x.shape]
    size = [-1 if b.flag(0.3) else b.integer(1, d - lo) for lo, d in zip(begin, x.shape)]
    y = b.w.slice(x, begin, size)
    return b.emit(f"SLICE({x.name}, begin={begin}, size={size})", y, x)


def op_expand_dims(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and len(t.shape) <= 4)  # rank-5 results stay on the CPU (NPU tensors are 4-D)
    if x is None:
        return False
    axis = b.integer(-len(x.shape) - 1, len(x.shape))
    y = b.w.expand_dims(x, axis)
    return b.emit(f"EXPAND_DIMS({x.name}, axis={axis})", y, x)


def op_split_v(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and any(d > 1 for d in t.shape))
    if x is None:
        return False
    axis = b.choice([i for i, d in enumerate(x.shape) if d > 1])
    dim = x.shape[axis]
    first = b.integer(1, dim - 1)
    sizes = [first, dim - first] if dim - first < 2 or b.flag(0.5) else [first, 1, dim - first - 1]
    if b.flag(0.3):
        sizes[b.integer(0, len(sizes) - 1)] = -1
    ys = b.w.split_v(x, sizes, axis - len(x.shape) if b.flag(0.3) else axis)
    return b.emit(f"SPLIT_V({x.name}, sizes={sizes}, axis={axis})", ys, x)


def op_pack_unpack(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and len(t.shape) <= 4)
    if x is None:
        return False
    if len(x.shape) == 4:  # PACK would make a rank-5 tensor: unpack only
        unpack_axes = [i for i, d in enumerate(x.shape) if 1 < d <= 4]
        if not unpack_axes:
            return False
        axis = b.choice(unpack_axes)
        ys = b.w.unpack(x, axis)
        return b.emit(f"UNPACK({x.name}, axis={axis})", ys, x)
    if x is None:
        return False
    unpack_axes = [i for i, d in enumerate(x.shape) if 1 < d <= 4]
    if unpack_axes and len(x.shape) >= 2 and b.flag(0.5):
        axis = b.choice(unpack_axes)
        ys = b.w.unpack(x, axis)
        return b.emit(f"UNPACK({x.name}, axis={axis})", ys, x)
    others = [b.pick(lambda t: t.shape == x.shape and t.dtype == x.dtype and t.scale == x.scale
                     and t.zero_point == x.zero_point) or x for _ in range(b.integer(1, 2))]
    parts = [x] + others
    axis = b.integer(-len(x.shape) - 1, len(x.shape))
    y = b.w.pack(parts, axis)
    return b.emit(f"PACK({', '.join(p.name for p in parts)}, axis={axis})", y, *parts)


def op_min_max(b: _Builder) -> bool:
    a = b.pick(_quant)
    if a is None:
        return False
    kind = b.choice(["MAXIMUM", "MINIMUM"])
    other = b.pick(lambda t: t.shape == a.shape and t.dtype == a.dtype) if b.flag(0.5) else None
    rhs = other if other is not None else \
        b.rng.integers(np.iinfo(a.dtype).min, np.iinfo(a.dtype).max + 1, a.shape[-1:]).astype(a.dtype)
    y = (b.w.maximum if kind == "MAXIMUM" else b.w.minimum)(a, rhs)
    if isinstance(rhs, TensorRef):
        return b.emit(f"{kind}({a.name}, {rhs.name})", y, a, rhs)
    return b.emit(f"{kind}({a.name}, const{list(rhs.shape)})", y, a)


def op_arg_min_max(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and len(t.shape) >= 1)
    if x is None:
        return False
    kind = b.choice(["ARG_MAX", "ARG_MIN"])
    axis = b.integer(-len(x.shape), len(x.shape) - 1)
    out = b.choice(["int32", "int64"])
    y = (b.w.arg_max if kind == "ARG_MAX" else b.w.arg_min)(x, axis, output_type=out)
    b.use(x)
    b.note(f"{kind}({x.name}, axis={axis}, {out})", y)
    b.floats.append(y)  # an index tensor: a graph output, never an operand of the quantized ops
    return True


def op_reduce(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and len(t.shape) >= 1)
    if x is None:
        return False
    r = len(x.shape)
    kind = b.choice(["REDUCE_MAX", "REDUCE_MIN", "SUM"])
    axes = sorted({b.integer(-r, r - 1) for _ in range(b.integer(1, min(r, 3)))})
    keep = b.flag(0.5)
    s, zp = b.out_params(x, 4.0) if kind == "SUM" else (None, None)
    y = b.w.reduce(kind, x, axes, keep, out_scale=s, out_zp=zp)
    return b.emit(f"{kind}({x.name}, axes={axes}, keep_dims={keep})", y, x)


def op_depth_space(b: _Builder) -> bool:
    x = b.pick(_is4d)
    if x is None:
        return False
    _, h, w, c = x.shape
    can_d2s = [k for k in (2, 3) if c % (k * k) == 0]
    can_s2d = [k for k in (2, 3) if h % k == 0 and w % k == 0]
    if not can_d2s and not can_s2d:
        return False
    if can_s2d and (not can_d2s or b.flag(0.5)):
        k = b.choice(can_s2d)
        y = b.w.space_to_depth(x, k)
        return b.emit(f"SPACE_TO_DEPTH({x.name}, {k})", y, x)
    k = b.choice(can_d2s)
    y = b.w.depth_to_space(x, k)
    return b.emit(f"DEPTH_TO_SPACE({x.name}, {k})", y, x)


def op_gather(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and 1 <= len(t.shape) <= 4)
    if x is None:
        return False
    axis = b.integer(0, len(x.shape) - 1)
    ishape = tuple(b.integer(1, 3) for _ in range(b.integer(1, 2)))
    indices = b.rng.integers(0, x.shape[axis], ishape).astype(np.int32)
    y = b.w.gather(x, indices, axis)
    return b.emit(f"GATHER({x.name}, indices{list(ishape)}, axis={axis})", y, x)


def op_prelu(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and len(t.shape) >= 1)
    if x is None:
        return False
    ashape = b.choice([x.shape[-1:], (1,) * (len(x.shape) - 1) + x.shape[-1:], x.shape])
    info = np.iinfo(x.dtype)
    alpha = b.rng.integers(info.min, info.max + 1, ashape).astype(x.dtype)
    s, zp = b.out_params(x)
    y = b.w.prelu(x, alpha, alpha_scale=b.scale(-9, -2), alpha_zp=b.zero_point(x.dtype), out_scale=s, out_zp=zp)
    return b.emit(f"PRELU({x.name}, alpha{list(ashape)})", y, x)


def op_resize_bilinear(b: _Builder) -> bool:
    x = b.pick(_is4d)
    if x is None:
        return False
    size = (b.integer(1, 10), b.integer(1, 10))
    mode = b.choice(["plain", "align_corners", "half_pixel"])
    y = b.w.resize_bilinear(x, size, align_corners=mode == "align_corners", half_pixel_centers=mode == "half_pixel")
    return b.emit(f"RESIZE_BILINEAR({x.name}, {list(size)}, {mode})", y, x)


def op_batch_matmul(b: _Builder) -> bool:
    """int8 only (LiteRT refuses uint8 BATCH_MATMUL); the rhs is a constant whose batch dimensions are the lhs's
    (some set to 1, some dropped) so they broadcast."""
    x = b.pick(lambda t: t.dtype == "int8" and 2 <= len(t.shape) <= 4)
    if x is None:
        return False
    adj_x, adj_y = b.flag(0.3), b.flag(0.3)
    k = x.shape[-2] if adj_x else x.shape[-1]
    if k > 256:
        return False
    n = b.integer(1, 8)
    batch = tuple(1 if b.flag(0.3) else d for d in x.shape[:-2])[b.integer(0, len(x.shape) - 2):]
    shape = batch + ((n, k) if adj_y else (k, n))
    wq, ws, _ = b.weights(x, shape, None)
    zp = b.zero_point("int8") if b.flag(0.3) else 0
    s, ozp = b.out_params(x, _conv_out_gain(ws, k))
    y = b.w.batch_matmul(x, wq, adj_x=adj_x, adj_y=adj_y, b_scale=float(ws), b_zp=zp, out_scale=s, out_zp=ozp)
    return b.emit(f"BATCH_MATMUL({x.name}, const{list(shape)}, adj_x={adj_x}, adj_y={adj_y})", y, x)


def op_log_softmax(b: _Builder) -> bool:
    """Quantized LOG_SOFTMAX; the output parameters are the ones LiteRT requires (16/256, zp = type maximum)."""
    x = b.pick(lambda t: _quant(t) and len(t.shape) >= 1)
    if x is None:
        return False
    y = b.w.log_softmax(x)
    return b.emit(f"LOG_SOFTMAX({x.name})", y, x)


def op_squared_difference(b: _Builder) -> bool:
    """int8 only (LiteRT refuses uint8); the output scale respects LiteRT's (2·max s)² < 2^14·s_out."""
    a = b.pick(lambda t: t.dtype == "int8" and 1 <= len(t.shape) <= 4)
    if a is None:
        return False
    other = b.pick(lambda t: t.shape == a.shape and t.dtype == "int8") if b.flag(0.5) else None
    rhs = other if other is not None else b.rng.integers(-128, 128, a.shape[-1:]).astype(np.int8)
    s_max = max(a.scale[0], other.scale[0] if other is not None else a.scale[0])
    s, zp = b.out_params(a, 64.0 * s_max)
    s = float(np.float32(max(s, 4.0 * s_max * s_max / 16384.0 * 1.5)))
    y = b.w.squared_difference(a, rhs, out_scale=s, out_zp=zp)
    if isinstance(rhs, TensorRef):
        return b.emit(f"SQUARED_DIFFERENCE({a.name}, {rhs.name})", y, a, rhs)
    return b.emit(f"SQUARED_DIFFERENCE({a.name}, const{list(rhs.shape)})", y, a)


def op_rsqrt(b: _Builder) -> bool:
    """int8 RSQRT of a RELU (LiteRT fails on inputs below the zero point, so they are clamped first)."""
    x = b.pick(lambda t: t.dtype == "int8")
    if x is None:
        return False
    r = b.w.relu(x)
    b.note(f"RELU({x.name})", r)
    s, zp = b.out_params(x, 1.0 / max(float(x.scale[0]), 1e-6))
    y = b.w.rsqrt(r, out_scale=s, out_zp=zp)
    return b.emit(f"RSQRT({r.name})", y, x)



def op_mirror_pad(b: _Builder) -> bool:
    """MIRROR_PAD with pads within TensorFlow's limits (REFLECT < size, SYMMETRIC ≤ size)."""
    x = b.pick(lambda t: _quant(t) and 1 <= len(t.shape) <= 4)
    if x is None:
        return False
    mode = b.choice(["REFLECT", "SYMMETRIC"])
    extra = 1 if mode == "REFLECT" else 0
    pads = [[b.integer(0, min(d - extra, 3)), b.integer(0, min(d - extra, 3))] for d in x.shape]
    y = b.w.mirror_pad(x, pads, mode)
    return b.emit(f"MIRROR_PAD({x.name}, {pads}, {mode})", y, x)


def op_tile_broadcast(b: _Builder) -> bool:
    """TILE, or BROADCAST_TO of a tensor with a size-1 axis (raw copies in LiteRT)."""
    if b.flag(0.5):
        x = b.pick(lambda t: _quant(t) and 1 <= len(t.shape) <= 4)
        if x is None:
            return False
        reps = [b.integer(1, 3) for _ in x.shape]
        y = b.w.tile(x, reps)
        return b.emit(f"TILE({x.name}, {reps})", y, x)
    x = b.pick(lambda t: _quant(t) and 1 in t.shape and len(t.shape) <= 4)
    if x is None:
        return False
    shape = [b.integer(1, 4) if d == 1 else d for d in x.shape]
    if b.flag(0.3) and len(shape) < 4:
        shape = [b.integer(1, 3)] + shape
    y = b.w.broadcast_to(x, shape)
    return b.emit(f"BROADCAST_TO({x.name}, {shape})", y, x)


def op_abs_neg(b: _Builder) -> bool:
    """int8 ABS with drawn output parameters (a rescale unless the scales match), or NEG (raw, wrapping)."""
    x = b.pick(lambda t: t.dtype == "int8")
    if x is None:
        return False
    if b.flag(0.3):
        y = b.w.neg(x)
        return b.emit(f"NEG({x.name})", y, x)
    s, zp = (x.scale[0], b.zero_point("int8")) if b.flag(0.3) else b.out_params(x)
    y = b.w.abs(x, out_scale=s, out_zp=zp)
    return b.emit(f"ABS({x.name})", y, x)


def op_compare_select(b: _Builder) -> bool:
    """A quantized comparison (LiteRT rescales both operands; scales must be below 1) feeding SELECT_V2."""
    a = b.pick(lambda t: _quant(t) and len(t.shape) >= 1 and t.scale[0] < 1.0)
    if a is None:
        return False
    other = b.pick(lambda t: t.shape == a.shape and t.dtype == a.dtype and t.scale[0] < 1.0)
    info = np.iinfo(a.dtype)
    rhs = other if other is not None and b.flag(0.6) else \
        b.rng.integers(int(info.min), int(info.max) + 1, a.shape[-1:]).astype(a.dtype)
    op = b.choice(["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"])
    cond = b.w.compare(op, a, rhs)
    rhs_text = rhs.name if isinstance(rhs, TensorRef) else f"const{list(rhs.shape)}"
    b.note(f"{op}({a.name}, {rhs_text})", cond)
    y_other = other if other is not None else a
    y = b.w.select_v2(cond, a, y_other)
    reads = (a, other) if other is not None else (a,)
    return b.emit(f"SELECT_V2({cond.name}, {a.name}, {y_other.name})", y, *reads)


def op_gather_nd(b: _Builder) -> bool:
    x = b.pick(lambda t: _quant(t) and 1 <= len(t.shape) <= 4)
    if x is None:
        return False
    depth = b.integer(1, len(x.shape))
    lead = tuple(b.integer(1, 3) for _ in range(b.integer(1, 2)))
    idx = np.stack([b.rng.integers(0, d, lead) for d in x.shape[:depth]], -1).astype(np.int32)
    y = b.w.gather_nd(x, idx)
    return b.emit(f"GATHER_ND({x.name}, indices{list(idx.shape)})", y, x)



def op_float_div(b: _Builder) -> bool:
    """DEQUANTIZE → float32 DIV by a constant without zeros (a fused activation drawn) → a float graph output."""
    x = b.pick(_quant)
    if x is None:
        return False
    f = b.w.dequantize(x)
    b.use(x)
    b.note(f"DEQUANTIZE({x.name})", f)
    divisor = (b.rng.uniform(0.25, 4.0, x.shape[-1:]) * b.rng.choice([-1.0, 1.0], x.shape[-1:])).astype(np.float32)
    act = b.choice(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
    y = b.w.div(f, divisor, activation=act)
    b.consumed.add(f.index)
    b.note(f"DIV({f.name}, const{list(divisor.shape)}, {act})", y)
    b.floats.append(y)
    return True


OPS: dict[str, Callable[[_Builder], bool]] = {
    "conv2d": op_conv2d, "binary": op_binary, "pool": op_pool, "activation": op_activation,
    "depthwise": op_depthwise, "fully_connected": op_fully_connected, "concatenation": op_concatenation,
    "pad": op_pad, "reshape": op_reshape, "mean": op_mean, "requantize": op_requantize, "split": op_split,
    "strided_slice": op_strided_slice, "transpose": op_transpose, "squeeze": op_squeeze, "resize": op_resize,
    "transpose_conv": op_transpose_conv,
    # appended (wider TFLite coverage); new entries go last so earlier draws keep their meaning
    "slice": op_slice, "expand_dims": op_expand_dims, "split_v": op_split_v, "pack_unpack": op_pack_unpack,
    "min_max": op_min_max, "arg_min_max": op_arg_min_max, "reduce": op_reduce, "depth_space": op_depth_space,
    "gather": op_gather, "prelu": op_prelu,
    "resize_bilinear": op_resize_bilinear, "batch_matmul": op_batch_matmul,
    "log_softmax": op_log_softmax, "squared_difference": op_squared_difference, "rsqrt": op_rsqrt,
    "mirror_pad": op_mirror_pad, "tile_broadcast": op_tile_broadcast, "abs_neg": op_abs_neg,
    "compare_select": op_compare_select, "gather_nd": op_gather_nd, "float_div": op_float_div,
}
OP_KINDS = tuple(OPS)


@st.composite
def graph_cases(draw, max_ops: int = 6, max_side: int = 8, max_channels: int = 8,
                op_kinds: tuple[str, ...] = OP_KINDS, uint8_share: float = 0.2,
                max_elements: int = MAX_ELEMENTS) -> GraphCase:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    b = _Builder(draw, rng, max_elements)
    n_inputs = 2 if b.flag(0.2) else 1
    dtype = "uint8" if b.flag(uint8_share) else "int8"
    shape = (1, b.integer(1, max_side), b.integer(1, max_side), b.integer(1, max_channels))
    for i in range(n_inputs):
        s = b.scale(-9, 0)
        zp = b.zero_point(dtype)
        # a second input either matches the first (residual partner) or has its own shape
        shp = shape if i == 0 or b.flag(0.6) else (1, b.integer(1, max_side), b.integer(1, max_side),
                                                   b.integer(1, max_channels))
        x = b.w.input(f"in{i}", shp, dtype, scale=s, zero_point=zp)
        b.inputs.append(x)
        b.live.append(x)
        b.log.append(f"input {x.name}{list(shp)} {dtype} s={x.scale[0]:.6g} zp={zp}")
    n_ops = b.integer(1, max_ops)
    added = 0
    for _ in range(n_ops * 3):
        if added >= n_ops:
            break
        if OPS[b.choice(op_kinds)](b):
            added += 1
    outputs = [t for t in b.live if t.index not in b.consumed and t not in b.inputs] + b.floats
    extra = [t for t in b.live if t.index in b.consumed and t not in b.inputs]
    for t in extra:
        if b.flag(0.15):
            outputs.append(t)
    if not outputs:  # every op result was consumed or nothing was added: output the last op result
        last = [t for t in b.live if t not in b.inputs]
        if not last:
            y = b.w.relu(b.inputs[0])
            b.note(f"RELU({b.inputs[0].name})", y)
            last = [y]
        outputs = [last[-1]]
    outputs = list(dict.fromkeys(outputs))  # a tensor listed once
    b.w.output(*outputs)
    b.log.append("outputs " + ", ".join(t.name for t in outputs))
    return GraphCase(b.w.finish(), random_inputs(b.inputs, rng), tuple(b.log))
