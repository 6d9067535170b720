"""int16x8 layers on the simulator: int16 activations (zero point 0), int8 weights, an int64 accumulator and bias.

Arithmetic (quant-semantics §1.6, §3.18; LiteRT ``integer_ops/conv.h`` 16x8 and TFLite Micro alike):
acc = Σ x·w (int64, never wraps at these sizes) + bias (int64); y = MultiplyByQuantizedMultiplier(int64) =
int32((acc·M16 + 2^(t−1)) >> t) with M16 the table's Q31 multiplier cut to Q15 and t = 15 − shift; then the
output zero point and the clamp to int16 / the fused activation.

The hardware view: Ethos-U keeps 16-bit layers' accumulators wider than 32 bits and reads a 40-bit bias from its
10-byte scale/bias entry; the simulator's table entry has the same size and keeps bias bits 32..39 in its spare
byte (``compiler._pack_table``), so an int16x8 layer needs no other table format.
"""
from __future__ import annotations

import numpy as np

from byoc.quant.fixedpoint import mbqm64, reduce_multiplier_int64

__all__ = ["BIAS_BITS", "INT64_SHIFT_MAX", "requant_int64", "decode_table_int64", "check_int16x8", "int16x8_rounding"]

BIAS_BITS = 40          # Vela: an int16 layer's bias values fit in 40 bits
INT64_SHIFT_MAX = 14    # t = 15 − shift ≥ 1 (LiteRT asserts shift ≤ 7; the formula holds up to 14)

_TABLE = np.dtype([("bias", "<u4"), ("mult", "<i4"), ("shift", "i1"), ("spare", "i1")])


def decode_table_int64(raw: np.ndarray, oc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(40-bit bias, Q15 multiplier, total right shift) per channel from ``oc`` 10-byte table entries."""
    t = raw[:oc * _TABLE.itemsize].view(_TABLE)
    bias = (t["spare"].astype(np.int64) << 32) | t["bias"].astype(np.int64)
    m16 = reduce_multiplier_int64(t["mult"].astype(np.int64))
    return bias, m16, 15 - t["shift"].astype(np.int64)


def requant_int64(acc: np.ndarray, raw_table: np.ndarray, oc: int, zp_in: int) -> np.ndarray:
    """The REQUANT stage of an int16x8 layer on an int64 accumulator tile [h, w, oc] (before zp_out and clamp)."""
    bias, m16, total = decode_table_int64(raw_table, oc)
    x = acc.astype(np.int64) + bias
    if zp_in:
        x = x - zp_in
    return mbqm64(x, m16, total).astype(np.int64)


def check_int16x8(body, x_dtype: str, out_dtype: str, acc_dtype: str, zp_in: int, zp_w: int) -> bool:
    """Whether a conv/dense composite is an int16x8 layer; raises the body's error for a half-int16 one."""
    if x_dtype != "int16" and out_dtype != "int16":
        return False
    if (x_dtype, out_dtype, acc_dtype) == ("int8", "int16", "int32"):
        return False   # an 8-bit layer writing int16 (Vela's LSTM gate FC): the int32 pipeline, an int16 OFM
    if (x_dtype, out_dtype, acc_dtype) != ("int16", "int16", "int64"):
        raise body.fail(f"an int16 layer needs int16 input and output and an int64 accumulator, found "
                        f"{x_dtype} → {acc_dtype} → {out_dtype}",
                        hint="int16x8: int16 activations, int8 weights, int64 bias (TFLite's 16x8 scheme)")
    if zp_in or zp_w:
        raise body.fail(f"an int16x8 layer has zero points 0, found input {zp_in}, weights {zp_w}")
    return True


def int16x8_rounding(body, rounding: str, bias: np.ndarray, shift: np.ndarray) -> str:
    """The PPU rounding of an int16x8 layer, after checking its bias and multipliers fit the hardware's."""
    if rounding != "TFLITE":
        raise body.fail(f"int16x8 requantization rounding {rounding!r} is not implemented by the PPU",
                        hint="TFLITE (LiteRT's / TFLite Micro's int64 MultiplyByQuantizedMultiplier)")
    lim = 1 << (BIAS_BITS - 1)
    if bias.size and (int(bias.min()) < -lim or int(bias.max()) >= lim):
        raise body.fail(f"an int16x8 bias value does not fit in {BIAS_BITS} bits (range {int(bias.min())}.."
                        f"{int(bias.max())})", hint="keep this layer on the CPU")
    if shift.size and int(shift.max()) > INT64_SHIFT_MAX:
        raise body.fail(f"an int16x8 rescale of 2^{int(shift.max())} or more", hint="keep this layer on the CPU")
    return "TFLITE_INT64"
