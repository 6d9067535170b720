"""TFLite converter for UNIDIRECTIONAL_SEQUENCE_LSTM, integer (int8 activations and weights, int16 cell state).

The op is unrolled at import into byoc's existing integer ops, one LSTM step per time step (Vela decomposes it
the same way, ``ethosu/vela/lstm.py``), so every executor and the NPU tables see ordinary layers:

* gate g ∈ (input, forget, cell, output): ``qnn.dense(x_t, W_g) → nn.bias_add(b_g) → qnn.requantize`` to int16
  at 2^-12 (multiplier float32(s_x·s_w)/2^-12, both runtimes), the same for the hidden state with ``R_g`` (no
  bias), their saturating int16 sum, then ``qnn.sigmoid`` (``qnn.tanh`` for the cell gate) int16 Q3.12 → Q0.15;
* cell: c = clip(f·c + i·g) with each product ``cast(int32) → multiply → qnn.requantize`` to the int16 cell scale;
* hidden: h = tanh(c)·o, ``cast → multiply → qnn.requantize`` to the int8 hidden state; the output is the h_t
  concatenated (equal quantization: a copy). The input FCs of all steps are one FC per gate over every step's rows
  (they do not depend on the recurrence; row for row the same arithmetic), sliced per step.

The two runtimes differ (they disagree on one unit in some outputs), so the arithmetic follows ``semantics``:

| step | ``"tflm"`` (TFLite Micro ``lstm_eval``) | ``"litert"`` (LiteRT ``lstm_eval.cc`` 8x8_16) |
|---|---|---|
| gate sum | each FC clamped to int16, saturating add (``qnn.add``) | input FC clamped, recurrent FC added unclamped, then clamped |
| sigmoid / tanh | the interpolated 256-entry table (``rounding="TFLM"``) | gemmlowp int16 fixed point (``rounding="GEMMLOWP"``) |
| f·c, i·g | MultiplyByQuantizedMultiplier(2^-15, 2^-30/s_c) (``TFLITE``) | RoundingDivideByPOT by 15, 30 + log2 s_c (``TFLITE_FLOAT``, exact) |
| tanh(c)·o | MBQM(double 2^-30 / s_h), zero point of the hidden state | MBQM(float32(2^-30 / s_i4)), intermediate 4's zero point |

State: the variable tensors (hidden state, cell state) are the kernels' initial state, zero (the hidden state at
its zero point), so the imported graph is ONE inference from a reset interpreter: step 0's recurrent products
and f·c are zero and omitted. Calling the interpreter again without a reset continues from the previous state;
that is not modelled. Refused (with the reason): float / hybrid LSTMs, CIFG, peephole, projection and layer
normalisation (TFLite Micro refuses all four), a cell activation other than TANH, per-channel weights, weight
zero points, non-power-of-two cell scales.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Expr, Span
from ..quant.params import checked_log2
from .tflite_context import OpContext, converter, tensor_name

_GATES = (("input", 1, 5, 12, "sigmoid"), ("forget", 2, 6, 13, "sigmoid"), ("cell", 3, 7, 14, "tanh"),
          ("output", 4, 8, 15, "sigmoid"))
_ABSENT = {"CIFG (no input gate)": (1, 5), "peephole": (9, 10, 11), "projection": (16, 17),
           "layer normalisation": (20, 21, 22, 23)}
_GATE_SCALE = 2.0 ** -12   # Q3.12: every gate's pre-activation (both runtimes, without layer norm)
_Q15 = 2.0 ** -15
_TANH = 4                  # ActivationFunctionType.TANH


class _Lstm:
    """The validated parameters of one integer LSTM operator."""

    def __init__(self, ctx: OpContext):
        self.ctx = ctx
        ctx.check_arity(20, 24)
        x_t, out_t = ctx.tensor(0), ctx.out_tensor()
        if x_t.dtype != "int8" or out_t.dtype != "int8":
            why = ("float and hybrid LSTMs are not supported" if x_t.dtype == "float32"
                   else "only the integer LSTM with int8 activations is supported")
            raise ctx.fail(f"input {x_t.label} is {x_t.dtype} and output {out_t.label} is {out_t.dtype}; {why}")
        for what, idx in _ABSENT.items():
            wanted = what.startswith("CIFG")
            present = [i for i in idx if ctx.has_input(i)]
            if (not present) if wanted else present:
                raise ctx.fail(f"{what} LSTM variants are not supported (TFLite Micro refuses them too)",
                               hint="inputs 1-8 (all four gates' weights) and 12-15 (biases) only")
        if int(ctx.options.get("fused_activation_function", 0)) != _TANH:
            raise ctx.fail("the cell activation must be TANH (LiteRT's integer kernel always uses tanh)")
        if float(ctx.options.get("proj_clip", 0.0)) not in (0.0,):
            raise ctx.fail("proj_clip without a projection is not supported")
        if len(x_t.shape) != 3:
            raise ctx.fail(f"input {x_t.label} has shape {list(x_t.shape)}; expected 3-D")
        self.time_major = bool(ctx.options.get("time_major", 0))
        t_ax, b_ax = (0, 1) if self.time_major else (1, 0)
        self.steps, self.batch, self.n_input = x_t.shape[t_ax], x_t.shape[b_ax], x_t.shape[2]
        self.s_x, self.zp_x = ctx.quant(x_t, "input")
        h_t, c_t = ctx.tensor(18), ctx.tensor(19)
        w_t = ctx.tensor(2)
        self.n_cell = w_t.shape[0] if len(w_t.shape) == 2 else -1
        n = self.n_cell
        for t, dtype, what in ((h_t, "int8", "hidden (output) state"), (c_t, "int16", "cell state")):
            if t.dtype != dtype or not t.is_variable:
                raise ctx.fail(f"{what} {t.label} is {t.dtype}{'' if t.is_variable else ', not a variable'}; "
                               f"expected a {dtype} variable tensor")
            if int(np.prod(t.shape, dtype=np.int64)) != self.batch * n:
                raise ctx.fail(f"{what} {t.label} has shape {list(t.shape)}; expected {self.batch}·{n} elements")
        self.s_h, self.zp_h = ctx.quant(h_t, "hidden state")
        self.s_c, zp_c = ctx.quant(c_t, "cell state")
        self.c_log2, exact = checked_log2(self.s_c)
        if zp_c != 0 or not exact or self.c_log2 > -9:
            raise ctx.fail(f"cell state {c_t.label} has scale {self.s_c!r} and zero point {zp_c}; the integer "
                           "LSTM needs a power-of-two scale of at most 2^-9 and zero point 0",
                           hint="LiteRT and TFLite Micro reject this model too")
        if tuple(out_t.shape) != tuple(x_t.shape[:2]) + (n,):
            raise ctx.fail(f"output {out_t.label} has shape {list(out_t.shape)}; expected "
                           f"{list(x_t.shape[:2]) + [n]}")
        self.weights = {}
        for gate, wi, ri, bi, _ in _GATES:
            for i, cols, what in ((wi, self.n_input, "input weights"), (ri, n, "recurrent weights")):
                self.weights[i] = self._weight(i, (n, cols), f"{gate} gate {what}")
            b_t = ctx.tensor(bi)
            if b_t.dtype != "int32" or tuple(b_t.shape) != (n,) or ctx.model.constant(b_t) is None:
                raise ctx.fail(f"{gate} gate bias {b_t.label} is {b_t.dtype} {list(b_t.shape)}; expected a constant "
                               f"int32 [{n}]")
        cell_clip = float(ctx.options.get("cell_clip", 0.0))
        self.cell_clip = None
        if cell_clip > 0:
            # static_cast<int16_t>(clamp(clip / s_c)): float in LiteRT, double in TFLM; s_c is a power of two.
            self.cell_clip = int(np.trunc(np.clip(np.float64(np.float32(cell_clip)) / self.s_c, -32768, 32767)))
        self.s_hidden_out, self.zp_hidden_out = self.s_h, self.zp_h
        if ctx.semantics == "litert":
            inter = ctx.op.intermediates
            if len(inter) < 5 or inter[4] < 0:
                raise ctx.fail("LiteRT's integer LSTM reads the effective hidden scale from intermediate 4, which "
                               "this operator lacks", hint="semantics='tflm' does not need it")
            self.s_hidden_out, self.zp_hidden_out = ctx.quant(ctx.model.tensors[inter[4]], "intermediate 4")

    def _weight(self, i: int, shape: tuple, what: str):
        ctx = self.ctx
        t = ctx.tensor(i)
        if t.dtype != "int8" or tuple(t.shape) != shape or ctx.model.constant(t) is None:
            raise ctx.fail(f"{what} {t.label} is {t.dtype} {list(t.shape)}; expected a constant int8 {list(shape)}")
        scales, zps = ctx.weight_quant(t, 0, what)
        if scales.size != 1 or np.any(zps != 0):
            raise ctx.fail(f"{what} {t.label} must be quantized per tensor with zero point 0",
                           hint="the integer LSTM kernels read one weight scale per matrix")
        return float(scales[0])


def _c(ctx: OpContext, v, dtype: str) -> Expr:
    return ctx.const(v, dtype)


def _gate_fc(ctx: OpContext, x: Expr, w_index: int, s_in: float, zp_in: int, s_w: float, bias_index: int | None,
             out_dtype: str) -> Expr:
    """FC to the gate scale 2^-12: dense → [bias] → requantize (multiplier float32(s_in·s_w) / 2^-12)."""
    w = ctx.weight(w_index)
    y = ctx.call("qnn.dense", [x, w, _c(ctx, zp_in, "int32"), _c(ctx, 0, "int32"), _c(ctx, s_in, "float32"),
                               _c(ctx, s_w, "float32")], {"units": w.data.shape[0], "out_dtype": "int32"})
    if bias_index is not None:
        y = ctx.call("nn.bias_add", [y, ctx.weight(bias_index)], {"axis": 1})
    product = np.float64(np.float32(np.float32(s_in) * np.float32(s_w)))
    return _requantize(ctx, y, product, _GATE_SCALE, 0, "TFLITE", out_dtype)


def _requantize(ctx: OpContext, y: Expr, s_in: float, s_out: float, zp_out: int, rounding: str, out_dtype: str,
                s_in_dtype: str = "float64") -> Expr:
    return ctx.call("qnn.requantize", [y, _c(ctx, s_in, s_in_dtype), _c(ctx, 0, "int32"), _c(ctx, s_out, "float32"),
                                       _c(ctx, zp_out, "int32")],
                    {"axis": -1, "rounding": rounding, "out_dtype": out_dtype})


def _product(ctx: OpContext, a: Expr, b: Expr) -> Expr:
    """The exact int32 product of two int16 tensors (|a·b| ≤ 2^30)."""
    return ctx.call("multiply", [ctx.call("cast", [a], {"dtype": "int32"}), ctx.call("cast", [b], {"dtype": "int32"})])


def _activation(ctx: OpContext, kind: str, x: Expr, s_in: float) -> Expr:
    rounding = "TFLM" if ctx.semantics == "tflm" else "GEMMLOWP"
    return ctx.call(f"qnn.{kind}", [x, _c(ctx, s_in, "float32"), _c(ctx, 0, "int32"), _c(ctx, _Q15, "float32"),
                                    _c(ctx, 0, "int32")], {"rounding": rounding})


def _gate_sum(ctx: OpContext, a: Expr, r: Expr) -> Expr:
    if ctx.semantics == "tflm":
        q = [_c(ctx, _GATE_SCALE, "float32"), _c(ctx, 0, "int32")]
        return ctx.call("qnn.add", [a, r] + q * 3)
    # LiteRT accumulates the recurrent product into the clamped input product, clamping once more.
    s = ctx.call("add", [ctx.call("cast", [a], {"dtype": "int32"}), r])
    return ctx.call("cast", [ctx.call("clip", [s], {"a_min": -32768.0, "a_max": 32767.0})], {"dtype": "int16"})


class _Names:
    """Regor's names for one step's operations (``compiler/lstm.cpp``), so the layers carry the OFM names Vela
    reports: per gate ``<gate>_gate_b<batch>.t<time>_feature_fc_ofm`` / ``…_recurrent_fc_ofm`` and the gate sum
    with its activation ``…_feature_fc_ofm/Add``; the cell and hidden states are named after their variable
    tensors (``<cell>/Mul``, ``<cell>``, ``<cell>_tanh_b<batch>.t<time>``, ``<hidden>``)."""

    def __init__(self, ctx: OpContext, batch: int, time: int):
        self.suffix = f"b{batch}.t{time}"
        self.cell = tensor_name(ctx.tensor(19))
        self.hidden = tensor_name(ctx.tensor(18))

    def fc(self, gate: str, which: str) -> str:
        return f"{gate}_gate_{self.suffix}_{which}_fc_ofm"


def _named(ctx: OpContext, name: str) -> None:
    ctx.span = Span(name)


def _step(ctx: OpContext, p: _Lstm, x: Expr, names: _Names, h: Expr, zp_h: int, c: Expr) -> tuple[Expr, Expr]:
    """One time step of the rows ``x`` (one batch, or every batch when time-major) from the hidden state ``h``
    (zero point ``zp_h``) and the cell state ``c``."""
    tflm = ctx.semantics == "tflm"
    gates = {}
    for gate, wi, ri, bi, kind in _GATES:
        _named(ctx, names.fc(gate, "feature"))
        a = _gate_fc(ctx, x, wi, p.s_x, p.zp_x, p.weights[wi], bi, "int16")
        _named(ctx, names.fc(gate, "recurrent"))
        r = _gate_fc(ctx, h, ri, p.s_h, zp_h, p.weights[ri], None, "int16" if tflm else "int32")
        _named(ctx, names.fc(gate, "feature") + "/Add")
        gates[gate] = _activation(ctx, kind, _gate_sum(ctx, a, r), _GATE_SCALE)
    rounding = "TFLITE" if tflm else "TFLITE_FLOAT"
    _named(ctx, names.fc("cell", "feature") + "/Add/Mul")
    ig = _requantize(ctx, _product(ctx, gates["input"], gates["cell"]), _Q15 * _Q15, p.s_c, 0, rounding, "int16")
    _named(ctx, names.cell + "/Mul")
    fc = _requantize(ctx, _product(ctx, gates["forget"], c), _Q15, 1.0, 0, rounding, "int16")
    _named(ctx, names.cell)
    q = [_c(ctx, p.s_c, "float32"), _c(ctx, 0, "int32")]
    c_new = ctx.call("qnn.add", [fc, ig] + q * 3)
    if p.cell_clip is not None:
        c_new = ctx.call("clip", [c_new], {"a_min": float(-p.cell_clip), "a_max": float(p.cell_clip)})
    _named(ctx, f"{names.cell}_tanh_{names.suffix}")
    t = _activation(ctx, "tanh", c_new, p.s_c)
    _named(ctx, names.hidden)
    if tflm:
        h_new = _requantize(ctx, _product(ctx, t, gates["output"]), _Q15 * _Q15, p.s_h, p.zp_h, "TFLITE", "int8")
    else:
        eff = np.float64(np.float32(_Q15 / np.float64(np.float32(p.s_hidden_out)) * _Q15))
        h_new = _requantize(ctx, _product(ctx, gates["output"], t), eff, 1.0, p.zp_hidden_out, "TFLITE", "int8")
    return h_new, c_new


def _initial_state(ctx: OpContext, name: str, rows: int, n_cell: int, dtype: str) -> Expr:
    """A state's value before step 0: zeros (the hidden state read with zero point 0, so its real value is 0, as
    the reset variable tensor at its zero point is). A ``zeros`` call, not a constant: constant folding would
    drop step 0's recurrent FCs and f·c, which the kernels and regor run (it copies each batch's state)."""
    _named(ctx, name)
    return ctx.call("zeros", [], {"shape": (rows, n_cell), "dtype": dtype})


def _sequences(p: _Lstm) -> list[tuple[int, list[tuple[int, int]]]]:
    """Regor's order of work: (batch, [(time, first row)]) per recurrence, rows of the input seen as
    [steps·batch, n_input]. Batch-major inputs run one batch at a time (one row per step), time-major ones every
    batch together (``batch`` rows per step)."""
    if p.time_major:
        return [(0, [(t, t * p.batch) for t in range(p.steps)])]
    return [(b, [(t, b * p.steps + t) for t in range(p.steps)]) for b in range(p.batch)]


@converter("UNIDIRECTIONAL_SEQUENCE_LSTM",
           quant=("zeros", "strided_slice", "reshape", "qnn.dense", "nn.bias_add", "qnn.requantize", "qnn.add", "qnn.sigmoid",
                  "qnn.tanh", "cast", "multiply", "add", "clip", "qnn.concatenate"))
def convert_unidirectional_sequence_lstm(ctx: OpContext) -> list[Expr]:
    p = _Lstm(ctx)
    out_t = ctx.out_tensor()
    out_span = ctx.span
    rows = p.batch if p.time_major else 1
    outs = []
    x_all = ctx.call("reshape", [ctx.input(0)], {"newshape": (p.steps * p.batch, p.n_input)})
    for batch, steps in _sequences(p):
        names = _Names(ctx, batch, 0)
        h, zp_h, c = _initial_state(ctx, names.hidden, rows, p.n_cell, "int8"), 0, \
            _initial_state(ctx, names.cell, rows, p.n_cell, "int16")
        for time, row in steps:
            names = _Names(ctx, batch, time)
            x = x_all
            if p.steps * p.batch > rows:   # the step's rows: a slice the NPU reads in place, as regor does
                _named(ctx, f"{tensor_name(ctx.tensor(0))}_feauture_{names.suffix}")  # regor's spelling
                x = ctx.call("strided_slice", [x_all], {"begin": (row, 0), "end": (row + rows, p.n_input),
                                                        "strides": (1, 1)})
            h, c = _step(ctx, p, x, names, h, zp_h, c)
            zp_h = p.zp_h
            outs.append(h)
    ctx.span = out_span
    if len(outs) == 1:
        return [ctx.call("reshape", [outs[0]], {"newshape": tuple(out_t.shape)})]
    # The output is every step's hidden state in order (batch-major: batch by batch; time-major: step by step):
    # a concatenation of the [rows, n_cell] pieces with equal quantization (a copy; regor's per-step MemoryCopy
    # into the output), the same on every executor.
    q = [_c(ctx, p.s_h, "float32"), _c(ctx, p.zp_h, "int32")]
    cat = ctx.call("qnn.concatenate", [ctx.tuple(outs), ctx.tuple([q[0]] * len(outs)),
                                       ctx.tuple([q[1]] * len(outs))] + q, {"axis": 0})
    return [ctx.call("reshape", [cat], {"newshape": tuple(out_t.shape)})]
