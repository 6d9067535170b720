"""Build valid ``.tflite`` flatbuffers op by op, for tests and model-zoo builders.

The writer uses the ``tflite`` package's generated builder functions over a ``flatbuffers.Builder``; it never
computes any quantized arithmetic (so tests that compare our executors with LiteRT stay independent of it).
Output shapes are derived with TFLite's own shape rules; pass ``out_shape=`` to override.

Example::

    w = TFLiteWriter()
    x = w.input("x", (1, 8, 8, 3), "int8", scale=0.05, zero_point=-3)
    y = w.conv2d(x, weights_ohwi_int8, bias_int32, weight_scale=per_channel_scales,
                 padding="SAME", strides=(2, 2), activation="RELU6", out_scale=0.1, out_zp=-128)
    w.output(y)
    data = w.finish()          # bytes: load with Interpreter(model_content=data)

Conventions:

* Every op method takes the input ``TensorRef``s and keyword options and returns the output ``TensorRef``
  (``split`` returns a list). ``out_scale``/``out_zp``/``out_dtype`` set the output's quantization; when omitted
  the output inherits the first input's dtype and quantization (right for data movement and pooling).
* Array arguments (weights, biases, shape vectors) become constant tensors with their own buffers. A weight may
  also be a ``TensorRef`` made with ``w.const(...)`` for full control (e.g. odd ``quantized_dimension``).
* Conv/FC biases given as arrays are int32 with scale ``float32(s_in·s_w[c])`` and zero point 0 (as converters
  write them), int64 for int16 activations (16x8 models; ``quantized_bias_type="int32"`` on CONV_2D /
  FULLY_CONNECTED writes an int32 bias and that option instead); float models use float32 biases.
* ``name=""`` writes a tensor without a name (as in TFLite Micro test models); ``name=None`` generates one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import flatbuffers
import numpy as np
import tflite

__all__ = ["TensorRef", "TFLiteWriter", "ACTIVATIONS", "TENSOR_TYPES", "same_or_valid_out"]

TENSOR_TYPES = {"float32": 0, "int32": 2, "uint8": 3, "int64": 4, "bool": 6, "int16": 7, "int8": 9}
ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4, "SIGN_BIT": 5}
_PADDINGS = {"SAME": 0, "VALID": 1}
_BUFFER_ALIGNMENT = 16


@dataclass(frozen=True)
class TensorRef:
    """A tensor already added to the model (what op methods take and return)."""
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    scale: tuple[float, ...] | None = None
    zero_point: tuple[int, ...] | None = None
    quantized_dimension: int = 0

    @property
    def quantized(self) -> bool:
        return self.scale is not None


@dataclass
class _Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    buffer: int
    scale: tuple[float, ...] | None
    zero_point: tuple[int, ...] | None
    quantized_dimension: int
    shape_signature: tuple[int, ...] | None = None
    is_variable: bool = False


@dataclass
class _Operator:
    opcode: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options_name: str | None
    options: dict = field(default_factory=dict)
    intermediates: tuple[int, ...] = ()
    custom_options: bytes | None = None


def _snake_to_camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def same_or_valid_out(size: int, k: int, stride: int, dilation: int, padding: str) -> int:
    """TFLite's output size (padding.h): SAME = ceil(in/stride), VALID = (in + stride − eff) // stride."""
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        return (size + stride - 1) // stride
    return (size + stride - eff) // stride


def _as_tuple(v, n: int | None = None) -> tuple:
    if isinstance(v, (list, tuple, np.ndarray)):
        return tuple(v)
    return (v,) * (n or 1)


class TFLiteWriter:
    """Accumulates tensors, buffers and operators of one subgraph; ``finish()`` serialises the model."""

    def __init__(self, description: str = "byoc.testing.tflite_writer"):
        self.description = description
        self._tensors: list[_Tensor] = []
        self._buffers: list[bytes] = [b""]  # buffer 0 is the conventional empty buffer
        self._opcodes: dict[tuple, int] = {}   # (builtin code, version[, custom code]) → index
        self._operators: list[_Operator] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        self._names: dict[str, int] = {}

    # ------------------------------------------------------------------ tensors
    def _name(self, name: str | None, stem: str) -> str:
        if name is not None:
            return name
        n = self._names.get(stem, 0)
        self._names[stem] = n + 1
        return f"{stem}_{n}"

    def tensor(self, name: str | None, shape: Sequence[int], dtype: str, scale=None, zero_point=0,
               quantized_dimension: int = 0, data: np.ndarray | bytes | None = None,
               shape_signature: Sequence[int] | None = None, is_variable: bool = False) -> TensorRef:
        """Low level: add a tensor (with a constant buffer when ``data`` is given; ``is_variable``: a stateful
        tensor such as SVDF's activation state or an LSTM's hidden/cell state)."""
        if dtype not in TENSOR_TYPES:
            raise ValueError(f"unsupported tensor dtype {dtype!r}; one of {sorted(TENSOR_TYPES)}")
        scales = zps = None
        if scale is not None:
            scales = tuple(float(np.float32(s)) for s in np.atleast_1d(np.asarray(scale, np.float64)))
            zp = np.atleast_1d(np.asarray(zero_point, np.int64))
            if zp.size == 1 and len(scales) > 1:
                zp = np.repeat(zp, len(scales))
            zps = tuple(int(z) for z in zp)
        buffer_index = 0
        if data is not None:
            raw = data if isinstance(data, bytes) else np.ascontiguousarray(data).astype(
                np.dtype(dtype).newbyteorder("<"), copy=False).tobytes()
            self._buffers.append(raw)
            buffer_index = len(self._buffers) - 1
        else:
            # Activation tensors get their own empty buffer, as converters write them.
            self._buffers.append(b"")
            buffer_index = len(self._buffers) - 1
        name = self._name(name, "t")
        t = _Tensor(name, tuple(int(d) for d in shape), dtype, buffer_index, scales, zps, int(quantized_dimension),
                    tuple(shape_signature) if shape_signature is not None else None, bool(is_variable))
        self._tensors.append(t)
        return TensorRef(len(self._tensors) - 1, name, t.shape, dtype, scales, zps, int(quantized_dimension))

    def input(self, name: str | None, shape: Sequence[int], dtype: str = "int8", scale=None, zero_point=0,
              quantized_dimension: int = 0, shape_signature: Sequence[int] | None = None) -> TensorRef:
        """A graph input. Quantized when ``scale`` is given."""
        ref = self.tensor(name if name is not None else self._name(None, "input"), shape, dtype, scale,
                          zero_point, quantized_dimension, shape_signature=shape_signature)
        self._inputs.append(ref.index)
        return ref

    def const(self, name: str | None, data, dtype: str | None = None, scale=None, zero_point=0,
              quantized_dimension: int = 0) -> TensorRef:
        """A constant tensor holding ``data`` (shape taken from the array)."""
        arr = np.asarray(data)
        dtype = dtype or arr.dtype.name
        return self.tensor(name if name is not None else self._name(None, "const"), arr.shape, dtype, scale,
                           zero_point, quantized_dimension, data=arr.astype(dtype))

    def output(self, *refs: TensorRef) -> None:
        """Mark tensors as graph outputs (in order)."""
        self._outputs.extend(r.index for r in refs)

    def _const_int32(self, values, stem: str) -> TensorRef:
        return self.const(self._name(None, stem), np.asarray(values, np.int32).reshape(-1), "int32")

    def _out(self, like: TensorRef, shape, name, stem, out_scale=None, out_zp=None, out_dtype=None,
             quantized_dimension: int = 0) -> TensorRef:
        dtype = out_dtype or like.dtype
        if out_scale is None and like.quantized and dtype == like.dtype:
            out_scale, out_zp = like.scale, like.zero_point
        if out_scale is not None and out_zp is None:
            out_zp = 0
        return self.tensor(self._name(name, stem), shape, dtype, out_scale, out_zp if out_zp is not None else 0,
                           quantized_dimension)

    # ------------------------------------------------------------------ operators
    def op(self, builtin: str, inputs: Sequence[TensorRef | None], outputs: Sequence[TensorRef],
           options_name: str | None = None, options: dict | None = None, version: int = 1,
           intermediates: Sequence[TensorRef] = ()) -> None:
        """Low level: add an operator. ``None`` inputs are written as -1 (optional, absent)."""
        code = getattr(tflite.BuiltinOperator, builtin)
        key = (code, int(version))
        if key not in self._opcodes:
            self._opcodes[key] = len(self._opcodes)
        self._operators.append(_Operator(self._opcodes[key], tuple(-1 if t is None else t.index for t in inputs),
                                         tuple(t.index for t in outputs), options_name, dict(options or {}),
                                         tuple(t.index for t in intermediates)))

    def custom(self, code: str, inputs: Sequence[TensorRef | None], outputs: Sequence[TensorRef],
               options: bytes = b"", version: int = 1) -> None:
        """Low level: add a CUSTOM operator named ``code`` with raw ``custom_options`` bytes (a flexbuffer)."""
        key = (tflite.BuiltinOperator.CUSTOM, int(version), code)
        if key not in self._opcodes:
            self._opcodes[key] = len(self._opcodes)
        self._operators.append(_Operator(self._opcodes[key], tuple(-1 if t is None else t.index for t in inputs),
                                         tuple(t.index for t in outputs), None, {}, custom_options=bytes(options)))

    def svdf(self, x: TensorRef, weights_feature, weights_time, bias=None, *, rank: int = 1, weights_feature_scale,
             weights_time_scale, state_scale, state_zp: int = 0, out_scale, out_zp: int = 0,
             activation: str = "RELU", name=None) -> TensorRef:
        """SVDF with int8 weights_feature and int16 or int8 weights_time (the variable state takes its dtype);
        a bias array is int32 with scale float32(state_scale·weights_time_scale), as TFLite Micro checks. The
        activation defaults to RELU, which LiteRT's integer kernel requires (and does not apply)."""
        wf = self._weight(weights_feature, "weights_feature", "int8", weights_feature_scale, 0, 0)
        wt = self._weight(weights_time, "weights_time", None, weights_time_scale, 0, 0)
        filters, memory = wt.shape
        b = None
        if bias is not None:
            b = bias if isinstance(bias, TensorRef) else self.const(
                self._name(None, "bias"), np.asarray(bias, np.int32), "int32",
                float(np.float32(state_scale) * np.float32(weights_time_scale)), 0)
        state = self.tensor(self._name(None, "svdf_state"), (x.shape[0], filters * memory), wt.dtype, state_scale,
                            state_zp, is_variable=True)
        out = self._out(x, (x.shape[0], filters // rank), name, "svdf", out_scale, out_zp, "int8")
        self.op("SVDF", [x, wf, wt, b, state], [out], "SVDFOptions",
                {"rank": rank, "fused_activation_function": ACTIVATIONS[activation]})
        return out

    def _weight(self, w, stem, dtype, scale, zp, qdim) -> TensorRef:
        if isinstance(w, TensorRef):
            return w
        arr = np.asarray(w)
        return self.const(self._name(None, stem), arr, dtype or arr.dtype.name, scale, zp, qdim)

    def _bias(self, b, x: TensorRef, wref: TensorRef, stem: str, dtype: str | None = None) -> TensorRef | None:
        if b is None or isinstance(b, TensorRef):
            return b
        arr = np.asarray(b)
        if x.quantized and wref.quantized:
            dtype = dtype or ("int64" if x.dtype == "int16" else "int32")
            s = (np.float32(x.scale[0]) * np.asarray(wref.scale, np.float32)).astype(np.float32)
            return self.const(self._name(None, stem), arr.astype(dtype), dtype, s, 0, 0)
        return self.const(self._name(None, stem), arr.astype(np.float32), "float32")

    @staticmethod
    def _bias_type_option(options: dict, quantized_bias_type: str | None) -> dict:
        """Conv2DOptions / FullyConnectedOptions ``quantized_bias_type`` (a TensorType; absent = not set)."""
        if quantized_bias_type is not None:
            options["quantized_bias_type"] = TENSOR_TYPES[quantized_bias_type]
        return options

    def conv2d(self, x: TensorRef, weight, bias=None, *, weight_scale=None, weight_zp=0, strides=(1, 1),
               padding: str = "SAME", dilation=(1, 1), activation: str = "NONE", out_scale=None, out_zp=None,
               out_dtype=None, name=None, out_shape=None, quantized_bias_type: str | None = None) -> TensorRef:
        """CONV_2D; ``weight`` is OHWI [Cout, KH, KW, Cin/groups] (per-channel scales on axis 0)."""
        wref = self._weight(weight, "conv_weight", None, weight_scale, weight_zp, 0)
        bref = self._bias(bias, x, wref, "conv_bias", quantized_bias_type)
        sh, sw = _as_tuple(strides, 2)
        dh, dw = _as_tuple(dilation, 2)
        co, kh, kw, _ = wref.shape
        n, h, wd, _ = x.shape
        shape = out_shape or (n, same_or_valid_out(h, kh, sh, dh, padding),
                              same_or_valid_out(wd, kw, sw, dw, padding), co)
        y = self._out(x, shape, name, "conv2d", out_scale, out_zp, out_dtype)
        self.op("CONV_2D", [x, wref, bref], [y], "Conv2DOptions", self._bias_type_option(dict(
            padding=_PADDINGS[padding], stride_w=sw, stride_h=sh, dilation_w_factor=dw, dilation_h_factor=dh,
            fused_activation_function=ACTIVATIONS[activation]), quantized_bias_type))
        return y

    def depthwise_conv2d(self, x: TensorRef, weight, bias=None, *, weight_scale=None, weight_zp=0,
                         strides=(1, 1), padding: str = "SAME", dilation=(1, 1), depth_multiplier=None,
                         activation: str = "NONE", out_scale=None, out_zp=None, out_dtype=None, name=None,
                         out_shape=None) -> TensorRef:
        """DEPTHWISE_CONV_2D; ``weight`` is [1, KH, KW, Cin·m] (per-channel scales on axis 3)."""
        wref = self._weight(weight, "dw_weight", None, weight_scale, weight_zp, 3)
        bref = self._bias(bias, x, wref, "dw_bias")
        sh, sw = _as_tuple(strides, 2)
        dh, dw = _as_tuple(dilation, 2)
        _, kh, kw, co = wref.shape
        n, h, wd, ci = x.shape
        dm = depth_multiplier if depth_multiplier is not None else max(co // max(ci, 1), 1)
        shape = out_shape or (n, same_or_valid_out(h, kh, sh, dh, padding),
                              same_or_valid_out(wd, kw, sw, dw, padding), co)
        y = self._out(x, shape, name, "depthwise_conv2d", out_scale, out_zp, out_dtype)
        self.op("DEPTHWISE_CONV_2D", [x, wref, bref], [y], "DepthwiseConv2DOptions", dict(
            padding=_PADDINGS[padding], stride_w=sw, stride_h=sh, depth_multiplier=dm, dilation_w_factor=dw,
            dilation_h_factor=dh, fused_activation_function=ACTIVATIONS[activation]), version=2)
        return y

    def fully_connected(self, x: TensorRef, weight, bias=None, *, weight_scale=None, weight_zp=0,
                        keep_num_dims: bool = False, activation: str = "NONE", out_scale=None, out_zp=None,
                        out_dtype=None, name=None, out_shape=None,
                        quantized_bias_type: str | None = None) -> TensorRef:
        """FULLY_CONNECTED; ``weight`` is [units, K]; the input is flattened to [-1, K]."""
        wref = self._weight(weight, "fc_weight", None, weight_scale, weight_zp, 0)
        bref = self._bias(bias, x, wref, "fc_bias", quantized_bias_type)
        units, k = wref.shape
        if keep_num_dims:
            shape = tuple(x.shape[:-1]) + (units,)
        else:
            shape = (int(np.prod(x.shape)) // k, units)
        y = self._out(x, out_shape or shape, name, "fully_connected", out_scale, out_zp, out_dtype)
        self.op("FULLY_CONNECTED", [x, wref, bref], [y], "FullyConnectedOptions", self._bias_type_option(dict(
            fused_activation_function=ACTIVATIONS[activation], keep_num_dims=bool(keep_num_dims)),
            quantized_bias_type), version=4 if keep_num_dims else 1)
        return y

    def transpose_conv(self, x: TensorRef, weight, output_shape: Sequence[int], bias=None, *, weight_scale=None,
                       weight_zp=0, strides=(1, 1), padding: str = "SAME", activation: str = "NONE",
                       out_scale=None, out_zp=None, out_dtype=None, name=None,
                       shape_as_input: bool = False) -> TensorRef:
        """TRANSPOSE_CONV; ``weight`` is [Cout, KH, KW, Cin]; inputs are (output_shape, weight, x[, bias]).
        ``shape_as_input``: output_shape is a graph input (fed at run time, as in tflite-micro's SEANet models)."""
        shape_ref = self.input(self._name(None, "tconv_shape"), (4,), "int32") if shape_as_input else \
            self._const_int32(output_shape, "tconv_shape")
        wref = self._weight(weight, "tconv_weight", None, weight_scale, weight_zp, 0)
        bref = self._bias(bias, x, wref, "tconv_bias")
        sh, sw = _as_tuple(strides, 2)
        y = self._out(x, tuple(output_shape), name, "transpose_conv", out_scale, out_zp, out_dtype)
        inputs = [shape_ref, wref, x] + ([bref] if bref is not None else [])
        opts = dict(padding=_PADDINGS[padding], stride_w=sw, stride_h=sh)
        if activation != "NONE":
            opts["fused_activation_function"] = ACTIVATIONS[activation]
        self.op("TRANSPOSE_CONV", inputs, [y], "TransposeConvOptions", opts, version=3 if bref is not None else 2)
        return y

    def _binary(self, builtin, opts_name, a, b, activation, out_scale, out_zp, out_dtype, name, stem,
                pot_scale_int16: bool | None = None):
        if not isinstance(b, TensorRef):
            arr = np.asarray(b)
            b = self.const(self._name(None, stem + "_rhs"), arr, a.dtype, a.scale, a.zero_point or 0)
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
        y = self._out(a, shape, name, stem, out_scale, out_zp, out_dtype)
        options = dict(fused_activation_function=ACTIVATIONS[activation])
        if pot_scale_int16 is not None:
            options["pot_scale_int16"] = bool(pot_scale_int16)
        self.op(builtin, [a, b], [y], opts_name, options, version=2 if a.quantized else 1)
        return y

    def add(self, a: TensorRef, b, *, activation: str = "NONE", out_scale=None, out_zp=None, out_dtype=None,
            name=None, pot_scale_int16: bool | None = None) -> TensorRef:
        """ADD with numpy broadcasting (``b`` may be an array: a constant with ``a``'s quantization).
        ``pot_scale_int16`` is written only when given (the schema default is true; converters write false for
        16x8 models, which selects LiteRT's general int16 path)."""
        return self._binary("ADD", "AddOptions", a, b, activation, out_scale, out_zp, out_dtype, name, "add",
                            pot_scale_int16)

    def sub(self, a: TensorRef, b, *, activation: str = "NONE", out_scale=None, out_zp=None, out_dtype=None,
            name=None, pot_scale_int16: bool | None = None) -> TensorRef:
        return self._binary("SUB", "SubOptions", a, b, activation, out_scale, out_zp, out_dtype, name, "sub",
                            pot_scale_int16)

    def mul(self, a: TensorRef, b, *, activation: str = "NONE", out_scale=None, out_zp=None, out_dtype=None,
            name=None) -> TensorRef:
        return self._binary("MUL", "MulOptions", a, b, activation, out_scale, out_zp, out_dtype, name, "mul")

    def _pool(self, builtin, x, filter_size, strides, padding, activation, out_scale, out_zp, name, stem):
        fh, fw = _as_tuple(filter_size, 2)
        sh, sw = _as_tuple(strides, 2)
        n, h, w, c = x.shape
        shape = (n, same_or_valid_out(h, fh, sh, 1, padding), same_or_valid_out(w, fw, sw, 1, padding), c)
        y = self._out(x, shape, name, stem, out_scale, out_zp)
        self.op(builtin, [x], [y], "Pool2DOptions", dict(
            padding=_PADDINGS[padding], stride_w=sw, stride_h=sh, filter_width=fw, filter_height=fh,
            fused_activation_function=ACTIVATIONS[activation]), version=2 if x.quantized else 1)
        return y

    def average_pool2d(self, x: TensorRef, filter_size, strides=(1, 1), padding: str = "VALID", *,
                       activation: str = "NONE", out_scale=None, out_zp=None, name=None) -> TensorRef:
        return self._pool("AVERAGE_POOL_2D", x, filter_size, strides, padding, activation, out_scale, out_zp,
                          name, "average_pool2d")

    def max_pool2d(self, x: TensorRef, filter_size, strides=(1, 1), padding: str = "VALID", *,
                   activation: str = "NONE", out_scale=None, out_zp=None, name=None) -> TensorRef:
        return self._pool("MAX_POOL_2D", x, filter_size, strides, padding, activation, out_scale, out_zp,
                          name, "max_pool2d")

    def mean(self, x: TensorRef, axes: Sequence[int], keep_dims: bool = True, *, out_scale=None, out_zp=None,
             name=None) -> TensorRef:
        axes_n = sorted({a % len(x.shape) for a in axes})
        shape = tuple((1 if i in axes_n else d) for i, d in enumerate(x.shape) if keep_dims or i not in axes_n)
        axes_ref = self._const_int32(list(axes), "mean_axes")
        y = self._out(x, shape, name, "mean", out_scale, out_zp)
        self.op("MEAN", [x, axes_ref], [y], "ReducerOptions", dict(keep_dims=bool(keep_dims)),
                version=2 if x.quantized else 1)
        return y

    def softmax(self, x: TensorRef, beta: float = 1.0, *, out_scale=None, out_zp=None, out_dtype=None,
                name=None) -> TensorRef:
        """SOFTMAX over the last axis; int8 output defaults to scale 1/256, zp −128 (what LiteRT requires)."""
        if x.quantized and out_scale is None:
            out_dtype = out_dtype or x.dtype
            out_scale, out_zp = ((1 / 256, -128) if out_dtype == "int8" else
                                 (1 / 256, 0) if out_dtype == "uint8" else (1 / 32768, 0))
        y = self._out(x, x.shape, name, "softmax", out_scale, out_zp, out_dtype)
        self.op("SOFTMAX", [x], [y], "SoftmaxOptions", dict(beta=float(beta)), version=2 if x.quantized else 1)
        return y

    def _unary(self, builtin, x, out_scale, out_zp, name, stem, options_name=None, options=None, version=1,
               out_dtype=None):
        y = self._out(x, x.shape, name, stem, out_scale, out_zp, out_dtype)
        self.op(builtin, [x], [y], options_name, options, version)
        return y

    def logistic(self, x: TensorRef, *, out_scale=None, out_zp=None, name=None) -> TensorRef:
        """LOGISTIC; int8 output defaults to scale 1/256, zp −128 (LiteRT requires exactly that)."""
        if x.quantized and out_scale is None:
            out_scale, out_zp = (1 / 256, -128) if x.dtype == "int8" else (1 / 256, 0)
        return self._unary("LOGISTIC", x, out_scale, out_zp, name, "logistic", version=2 if x.quantized else 1)

    def tanh(self, x: TensorRef, *, out_scale=None, out_zp=None, name=None) -> TensorRef:
        if x.quantized and out_scale is None:
            out_scale, out_zp = (1 / 128, 0) if x.dtype == "int8" else (1 / 128, 128)
        return self._unary("TANH", x, out_scale, out_zp, name, "tanh", version=2 if x.quantized else 1)

    def hard_swish(self, x: TensorRef, *, out_scale=None, out_zp=None, name=None) -> TensorRef:
        return self._unary("HARD_SWISH", x, out_scale, out_zp, name, "hard_swish")

    def relu(self, x: TensorRef, *, out_scale=None, out_zp=None, name=None) -> TensorRef:
        return self._unary("RELU", x, out_scale, out_zp, name, "relu", version=2 if x.quantized else 1)

    def relu6(self, x: TensorRef, *, out_scale=None, out_zp=None, name=None) -> TensorRef:
        return self._unary("RELU6", x, out_scale, out_zp, name, "relu6", version=2 if x.quantized else 1)

    def relu_n1_to_1(self, x: TensorRef, *, out_scale=None, out_zp=None, name=None) -> TensorRef:
        return self._unary("RELU_N1_TO_1", x, out_scale, out_zp, name, "relu_n1_to_1")

    def leaky_relu(self, x: TensorRef, alpha: float = 0.2, *, out_scale=None, out_zp=None,
                   name=None) -> TensorRef:
        return self._unary("LEAKY_RELU", x, out_scale, out_zp, name, "leaky_relu", "LeakyReluOptions",
                           dict(alpha=float(alpha)), version=2 if x.quantized else 1)

    def quantize(self, x: TensorRef, *, out_scale, out_zp=0, out_dtype: str = "int8", name=None) -> TensorRef:
        """QUANTIZE: float → int, or int → int (requantize)."""
        return self._unary("QUANTIZE", x, out_scale, out_zp, name, "quantize", version=2, out_dtype=out_dtype)

    def dequantize(self, x: TensorRef, *, name=None) -> TensorRef:
        y = self.tensor(self._name(name, "dequantize"), x.shape, "float32")
        self.op("DEQUANTIZE", [x], [y], version=2)
        return y

    def pad(self, x: TensorRef, paddings, *, name=None, out_scale=None, out_zp=None) -> TensorRef:
        """PAD with ``paddings`` [[before, after]] per dim (pads with the output zero point)."""
        p = np.asarray(paddings, np.int32).reshape(len(x.shape), 2)
        pref = self.const(self._name(None, "paddings"), p, "int32")
        shape = tuple(d + int(p[i, 0]) + int(p[i, 1]) for i, d in enumerate(x.shape))
        y = self._out(x, shape, name, "pad", out_scale, out_zp)
        self.op("PAD", [x, pref], [y], version=2 if x.quantized else 1)
        return y

    def padv2(self, x: TensorRef, paddings, constant_value, *, name=None) -> TensorRef:
        """PADV2: the pad value is a raw value of ``x``'s dtype (a constant tensor with x's quantization)."""
        p = np.asarray(paddings, np.int32).reshape(len(x.shape), 2)
        pref = self.const(self._name(None, "paddings"), p, "int32")
        cref = self.const(self._name(None, "pad_value"), np.asarray([constant_value]).astype(x.dtype), x.dtype,
                          x.scale, x.zero_point or 0)
        shape = tuple(d + int(p[i, 0]) + int(p[i, 1]) for i, d in enumerate(x.shape))
        y = self._out(x, shape, name, "padv2")
        self.op("PADV2", [x, pref, cref], [y], version=2 if x.quantized else 1)
        return y

    def reshape(self, x: TensorRef, new_shape: Sequence[int], *, shape_as_input: bool = True,
                name=None) -> TensorRef:
        """RESHAPE (one −1 allowed); the shape is an int32 input tensor and also in ReshapeOptions."""
        shape = list(int(d) for d in new_shape)
        if -1 in shape:
            known = int(np.prod([d for d in shape if d != -1])) or 1
            shape[shape.index(-1)] = int(np.prod(x.shape)) // known
        inputs = [x] + ([self._const_int32(list(new_shape), "reshape_shape")] if shape_as_input else [])
        y = self._out(x, tuple(shape), name, "reshape")
        self.op("RESHAPE", inputs, [y], "ReshapeOptions", dict(new_shape=[int(d) for d in new_shape]))
        return y

    def squeeze(self, x: TensorRef, axes: Sequence[int] = (), *, name=None) -> TensorRef:
        nd = len(x.shape)
        ax = {a % nd for a in axes} if axes else {i for i, d in enumerate(x.shape) if d == 1}
        shape = tuple(d for i, d in enumerate(x.shape) if i not in ax)
        y = self._out(x, shape, name, "squeeze")
        self.op("SQUEEZE", [x], [y], "SqueezeOptions", dict(squeeze_dims=[int(a) for a in axes]))
        return y

    def transpose(self, x: TensorRef, perm: Sequence[int], *, name=None) -> TensorRef:
        pref = self._const_int32(perm, "perm")
        y = self._out(x, tuple(x.shape[p] for p in perm), name, "transpose")
        self.op("TRANSPOSE", [x, pref], [y], version=2 if x.quantized else 1)
        return y

    def concatenation(self, xs: Sequence[TensorRef], axis: int, *, activation: str = "NONE", out_scale=None,
                      out_zp=None, name=None) -> TensorRef:
        nd = len(xs[0].shape)
        ax = axis % nd
        shape = list(xs[0].shape)
        shape[ax] = sum(t.shape[ax] for t in xs)
        y = self._out(xs[0], tuple(shape), name, "concatenation", out_scale, out_zp)
        self.op("CONCATENATION", list(xs), [y], "ConcatenationOptions", dict(
            axis=int(axis), fused_activation_function=ACTIVATIONS[activation]), version=2 if xs[0].quantized else 1)
        return y

    def split(self, x: TensorRef, num_splits: int, axis: int, *, names: Sequence[str | None] | None = None
              ) -> list[TensorRef]:
        """SPLIT into equal parts; TFLite's inputs are (axis, x)."""
        aref = self.const(self._name(None, "split_axis"), np.asarray(axis, np.int32), "int32")
        ax = axis % len(x.shape)
        shape = list(x.shape)
        shape[ax] = x.shape[ax] // num_splits
        outs = [self._out(x, tuple(shape), (names or [None] * num_splits)[i], "split") for i in range(num_splits)]
        self.op("SPLIT", [aref, x], outs, "SplitOptions", dict(num_splits=int(num_splits)),
                version=2 if x.quantized else 1)
        return outs

    def strided_slice(self, x: TensorRef, begin, end, strides=None, *, begin_mask: int = 0, end_mask: int = 0,
                      shrink_axis_mask: int = 0, name=None) -> TensorRef:
        strides = list(strides) if strides is not None else [1] * len(begin)
        slices = []
        for i, (b, e, s) in enumerate(zip(begin, end, strides)):
            if shrink_axis_mask >> i & 1:
                slices.append(int(b))
                continue
            slices.append(slice(None if begin_mask >> i & 1 else int(b), None if end_mask >> i & 1 else int(e),
                                int(s)))
        view = np.broadcast_to(np.zeros((), np.int8), x.shape)[tuple(slices)]
        refs = [self._const_int32(v, stem) for v, stem in ((begin, "begin"), (end, "end"), (strides, "strides"))]
        y = self._out(x, view.shape, name, "strided_slice")
        self.op("STRIDED_SLICE", [x] + refs, [y], "StridedSliceOptions", dict(
            begin_mask=begin_mask, end_mask=end_mask, shrink_axis_mask=shrink_axis_mask),
            version=2 if x.quantized else 1)
        return y

    def resize_nearest_neighbor(self, x: TensorRef, size: Sequence[int], *, align_corners: bool = False,
                                half_pixel_centers: bool = False, name=None) -> TensorRef:
        sref = self._const_int32(size, "resize_size")
        n, _, _, c = x.shape
        y = self._out(x, (n, int(size[0]), int(size[1]), c), name, "resize_nearest")
        self.op("RESIZE_NEAREST_NEIGHBOR", [x, sref], [y], "ResizeNearestNeighborOptions", dict(
            align_corners=bool(align_corners), half_pixel_centers=bool(half_pixel_centers)),
            version=3 if half_pixel_centers else (2 if x.quantized else 1))
        return y

    # ------------------------------------------------------------------ more data movement and reductions
    def slice(self, x: TensorRef, begin: Sequence[int], size: Sequence[int], *, name=None) -> TensorRef:
        """SLICE: ``size`` −1 takes the rest of the axis."""
        shape = tuple(d - int(b) if int(s) == -1 else int(s) for d, b, s in zip(x.shape, begin, size))
        refs = [self._const_int32(v, stem) for v, stem in ((begin, "slice_begin"), (size, "slice_size"))]
        y = self._out(x, shape, name, "slice")
        self.op("SLICE", [x] + refs, [y])
        return y

    def expand_dims(self, x: TensorRef, axis: int, *, name=None) -> TensorRef:
        a = axis % (len(x.shape) + 1)
        y = self._out(x, tuple(x.shape[:a]) + (1,) + tuple(x.shape[a:]), name, "expand_dims")
        self.op("EXPAND_DIMS", [x, self._const_int32([axis], "expand_axis")], [y])
        return y

    def split_v(self, x: TensorRef, size_splits: Sequence[int], axis: int) -> list[TensorRef]:
        """SPLIT_V; inputs are (x, size_splits, axis); one size may be −1."""
        ax = axis % len(x.shape)
        sizes = [int(s) for s in size_splits]
        if -1 in sizes:
            sizes[sizes.index(-1)] = x.shape[ax] - sum(s for s in sizes if s != -1)
        outs = [self._out(x, tuple(x.shape[:ax]) + (s,) + tuple(x.shape[ax + 1:]), None, "split_v") for s in sizes]
        aref = self.const(self._name(None, "split_v_axis"), np.asarray(axis, np.int32), "int32")
        self.op("SPLIT_V", [x, self._const_int32(size_splits, "size_splits"), aref], outs, "SplitVOptions",
                dict(num_splits=len(sizes)))
        return outs

    def pack(self, xs: Sequence[TensorRef], axis: int = 0, *, name=None) -> TensorRef:
        a = axis % (len(xs[0].shape) + 1)
        y = self._out(xs[0], tuple(xs[0].shape[:a]) + (len(xs),) + tuple(xs[0].shape[a:]), name, "pack")
        self.op("PACK", list(xs), [y], "PackOptions", dict(values_count=len(xs), axis=int(axis)))
        return y

    def unpack(self, x: TensorRef, axis: int = 0) -> list[TensorRef]:
        a = axis % len(x.shape)
        outs = [self._out(x, tuple(d for i, d in enumerate(x.shape) if i != a), None, "unpack")
                for _ in range(x.shape[a])]
        self.op("UNPACK", [x], outs, "UnpackOptions", dict(num=x.shape[a], axis=int(axis)))
        return outs

    def maximum(self, a: TensorRef, b, *, name=None) -> TensorRef:
        return self._minmax("MAXIMUM", a, b, name)

    def minimum(self, a: TensorRef, b, *, name=None) -> TensorRef:
        return self._minmax("MINIMUM", a, b, name)

    def _minmax(self, builtin, a, b, name):
        if not isinstance(b, TensorRef):
            b = self.const(self._name(None, builtin.lower() + "_rhs"), np.asarray(b), a.dtype, a.scale,
                           a.zero_point or 0)
        y = self._out(a, tuple(np.broadcast_shapes(a.shape, b.shape)), name, builtin.lower())
        self.op(builtin, [a, b], [y])
        return y

    def arg_max(self, x: TensorRef, axis: int, *, output_type: str = "int32", name=None) -> TensorRef:
        return self._arg("ARG_MAX", x, axis, output_type, name)

    def arg_min(self, x: TensorRef, axis: int, *, output_type: str = "int32", name=None) -> TensorRef:
        return self._arg("ARG_MIN", x, axis, output_type, name)

    def _arg(self, builtin, x, axis, output_type, name):
        a = axis % len(x.shape)
        y = self.tensor(self._name(name, builtin.lower()), tuple(d for i, d in enumerate(x.shape) if i != a),
                        output_type)
        opts = "ArgMaxOptions" if builtin == "ARG_MAX" else "ArgMinOptions"
        aref = self.const(self._name(None, "arg_axis"), np.asarray([axis], np.int32), "int32")
        self.op(builtin, [x, aref], [y], opts, dict(output_type=TENSOR_TYPES[output_type]))
        return y

    def reduce(self, builtin: str, x: TensorRef, axes: Sequence[int], keep_dims: bool = False, *, out_scale=None,
               out_zp=None, name=None) -> TensorRef:
        """SUM / REDUCE_MAX / REDUCE_MIN / REDUCE_PROD (and MEAN) over ``axes``."""
        axes_n = sorted({a % len(x.shape) for a in axes})
        shape = tuple((1 if i in axes_n else d) for i, d in enumerate(x.shape) if keep_dims or i not in axes_n)
        y = self._out(x, shape, name, builtin.lower(), out_scale, out_zp)
        self.op(builtin, [x, self._const_int32(list(axes), "reduce_axes")], [y], "ReducerOptions",
                dict(keep_dims=bool(keep_dims)))
        return y

    def resize_bilinear(self, x: TensorRef, size: Sequence[int], *, align_corners: bool = False,
                        half_pixel_centers: bool = False, name=None) -> TensorRef:
        n, _, _, c = x.shape
        y = self._out(x, (n, int(size[0]), int(size[1]), c), name, "resize_bilinear")
        self.op("RESIZE_BILINEAR", [x, self._const_int32(size, "resize_size")], [y], "ResizeBilinearOptions",
                dict(align_corners=bool(align_corners), half_pixel_centers=bool(half_pixel_centers)))
        return y

    def depth_to_space(self, x: TensorRef, block_size: int, *, name=None) -> TensorRef:
        n, h, w, c = x.shape
        bs = int(block_size)
        y = self._out(x, (n, h * bs, w * bs, c // (bs * bs)), name, "depth_to_space")
        self.op("DEPTH_TO_SPACE", [x], [y], "DepthToSpaceOptions", dict(block_size=bs))
        return y

    def space_to_depth(self, x: TensorRef, block_size: int, *, name=None) -> TensorRef:
        n, h, w, c = x.shape
        bs = int(block_size)
        y = self._out(x, (n, h // bs, w // bs, c * bs * bs), name, "space_to_depth")
        self.op("SPACE_TO_DEPTH", [x], [y], "SpaceToDepthOptions", dict(block_size=bs))
        return y

    def gather(self, x: TensorRef, indices, axis: int = 0, batch_dims: int = 0, *, name=None) -> TensorRef:
        """GATHER; ``indices`` is an int32 array (a constant) or a TensorRef."""
        iref = indices if isinstance(indices, TensorRef) else self.const(
            self._name(None, "gather_indices"), np.asarray(indices, np.int32), "int32")
        a = axis % len(x.shape)
        shape = tuple(x.shape[:a]) + tuple(iref.shape[batch_dims:]) + tuple(x.shape[a + 1:])
        y = self._out(x, shape, name, "gather")
        self.op("GATHER", [x, iref], [y], "GatherOptions", dict(axis=int(axis), batch_dims=int(batch_dims)))
        return y

    def prelu(self, x: TensorRef, alpha, *, alpha_scale=None, alpha_zp=0, out_scale=None, out_zp=None,
              name=None) -> TensorRef:
        """PRELU; ``alpha`` (broadcast against x) is an array written as a constant, or a TensorRef."""
        aref = self._weight(alpha, "prelu_alpha", x.dtype if x.quantized else "float32", alpha_scale, alpha_zp, 0)
        y = self._out(x, tuple(np.broadcast_shapes(x.shape, aref.shape)), name, "prelu", out_scale, out_zp)
        self.op("PRELU", [x, aref], [y])
        return y

    def batch_matmul(self, a: TensorRef, b, *, adj_x: bool = False, adj_y: bool = False, b_scale=None, b_zp=0,
                     out_scale=None, out_zp=None, name=None) -> TensorRef:
        """BATCH_MATMUL with broadcast batch dimensions; ``b`` is a TensorRef or an array (a constant)."""
        bref = self._weight(b, "bmm_rhs", a.dtype if a.quantized else "float32", b_scale, b_zp, 0)
        m = a.shape[-1] if adj_x else a.shape[-2]
        n = bref.shape[-2] if adj_y else bref.shape[-1]
        batch = tuple(np.broadcast_shapes(tuple(a.shape[:-2]), tuple(bref.shape[:-2])))
        y = self._out(a, batch + (m, n), name, "batch_matmul", out_scale, out_zp)
        self.op("BATCH_MATMUL", [a, bref], [y], "BatchMatMulOptions", dict(adj_x=bool(adj_x), adj_y=bool(adj_y)))
        return y

    def log_softmax(self, x: TensorRef, *, out_scale=None, out_zp=None, name=None) -> TensorRef:
        """LOG_SOFTMAX over the last axis; quantized output defaults to scale 16/256 with zp 127 (int8) or 255
        (uint8), what LiteRT requires."""
        if x.quantized and out_scale is None:
            out_scale, out_zp = 16 / 256, (127 if x.dtype == "int8" else 255)
        return self._unary("LOG_SOFTMAX", x, out_scale, out_zp, name, "log_softmax", "LogSoftmaxOptions", {})

    def squared_difference(self, a: TensorRef, b, *, out_scale=None, out_zp=None, name=None) -> TensorRef:
        """SQUARED_DIFFERENCE with broadcasting (``b`` may be an array: a constant with ``a``'s quantization)."""
        if not isinstance(b, TensorRef):
            b = self.const(self._name(None, "sqdiff_rhs"), np.asarray(b), a.dtype, a.scale, a.zero_point or 0)
        y = self._out(a, tuple(np.broadcast_shapes(a.shape, b.shape)), name, "squared_difference", out_scale, out_zp)
        self.op("SQUARED_DIFFERENCE", [a, b], [y], "SquaredDifferenceOptions", {}, version=2 if a.quantized else 1)
        return y

    def rsqrt(self, x: TensorRef, *, out_scale=None, out_zp=None, name=None) -> TensorRef:
        return self._unary("RSQRT", x, out_scale, out_zp, name, "rsqrt", version=2 if x.quantized else 1)

    def mirror_pad(self, x: TensorRef, paddings, mode: str = "REFLECT", *, name=None) -> TensorRef:
        """MIRROR_PAD; ``paddings`` is [rank, 2] (before, after); mode "REFLECT" or "SYMMETRIC"."""
        p = np.asarray(paddings, np.int32).reshape(len(x.shape), 2)
        y = self._out(x, tuple(d + int(a) + int(b) for d, (a, b) in zip(x.shape, p)), name, "mirror_pad")
        self.op("MIRROR_PAD", [x, self.const(self._name(None, "mirror_paddings"), p, "int32")], [y],
                "MirrorPadOptions", dict(mode=getattr(tflite.MirrorPadMode, mode)))
        return y

    def tile(self, x: TensorRef, multiples: Sequence[int], *, name=None) -> TensorRef:
        y = self._out(x, tuple(d * int(m) for d, m in zip(x.shape, multiples)), name, "tile")
        self.op("TILE", [x, self._const_int32(multiples, "tile_multiples")], [y], "TileOptions", {})
        return y

    def broadcast_to(self, x: TensorRef, shape: Sequence[int], *, name=None) -> TensorRef:
        """BROADCAST_TO (LiteRT registers versions 2 and 3 only, so it is written as version 2)."""
        y = self._out(x, tuple(int(d) for d in shape), name, "broadcast_to")
        self.op("BROADCAST_TO", [x, self._const_int32(shape, "broadcast_shape")], [y], "BroadcastToOptions", {},
                version=2)
        return y

    def cast(self, x: TensorRef, dtype: str, *, name=None) -> TensorRef:
        """CAST to ``dtype`` (no quantization on the result: CAST converts raw values)."""
        y = self.tensor(self._name(name, "cast"), x.shape, dtype)
        self.op("CAST", [x], [y], "CastOptions", dict(in_data_type=TENSOR_TYPES[x.dtype],
                                                      out_data_type=TENSOR_TYPES[dtype]))
        return y

    def abs(self, x: TensorRef, *, out_scale=None, out_zp=None, name=None) -> TensorRef:
        return self._unary("ABS", x, out_scale, out_zp, name, "abs", "AbsOptions", {},
                           version=2 if x.quantized else 1)

    def neg(self, x: TensorRef, *, name=None) -> TensorRef:
        return self._unary("NEG", x, None, None, name, "neg", "NegOptions", {})

    _COMPARISONS = {"EQUAL": "EqualOptions", "NOT_EQUAL": "NotEqualOptions", "LESS": "LessOptions",
                    "LESS_EQUAL": "LessEqualOptions", "GREATER": "GreaterOptions",
                    "GREATER_EQUAL": "GreaterEqualOptions"}

    def compare(self, builtin: str, a: TensorRef, b, *, name=None) -> TensorRef:
        """EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL (bool result); ``b`` may be an array (a
        constant with ``a``'s dtype and quantization)."""
        if not isinstance(b, TensorRef):
            b = self.const(self._name(None, "compare_rhs"), np.asarray(b), a.dtype, a.scale,
                           a.zero_point or 0)
        y = self.tensor(self._name(name, builtin.lower()), tuple(np.broadcast_shapes(a.shape, b.shape)), "bool")
        self.op(builtin, [a, b], [y], self._COMPARISONS[builtin], {}, version=2 if a.quantized else 1)
        return y

    def select_v2(self, cond: TensorRef, x: TensorRef, y: TensorRef, *, name=None) -> TensorRef:
        shape = tuple(np.broadcast_shapes(cond.shape, x.shape, y.shape))
        out = self._out(x, shape, name, "select_v2")
        self.op("SELECT_V2", [cond, x, y], [out], "SelectV2Options", {})
        return out

    def gather_nd(self, x: TensorRef, indices, *, name=None) -> TensorRef:
        """GATHER_ND; ``indices`` [..., M] (an int32 array written as a constant, or a TensorRef)."""
        iref = indices if isinstance(indices, TensorRef) else self.const(
            self._name(None, "gather_nd_indices"), np.asarray(indices, np.int32), "int32")
        m = iref.shape[-1]
        y = self._out(x, tuple(iref.shape[:-1]) + tuple(x.shape[m:]), name, "gather_nd")
        self.op("GATHER_ND", [x, iref], [y], "GatherNdOptions", {})
        return y

    def div(self, a: TensorRef, b, *, activation: str = "NONE", name=None) -> TensorRef:
        """DIV (float32 / int32) with broadcasting; ``b`` may be an array (a constant of ``a``'s dtype)."""
        if not isinstance(b, TensorRef):
            b = self.const(self._name(None, "div_rhs"), np.asarray(b), a.dtype)
        y = self._out(a, tuple(np.broadcast_shapes(a.shape, b.shape)), name, "div")
        self.op("DIV", [a, b], [y], "DivOptions", dict(fused_activation_function=ACTIVATIONS[activation]))
        return y

    def floor_div(self, a: TensorRef, b, *, name=None) -> TensorRef:
        """FLOOR_DIV (float32 / int32) with broadcasting; ``b`` may be an array (a constant of ``a``'s dtype)."""
        if not isinstance(b, TensorRef):
            b = self.const(self._name(None, "floor_div_rhs"), np.asarray(b), a.dtype)
        y = self._out(a, tuple(np.broadcast_shapes(a.shape, b.shape)), name, "floor_div")
        self.op("FLOOR_DIV", [a, b], [y], "FloorDivOptions", {})
        return y

    def sqrt(self, x: TensorRef, *, name=None) -> TensorRef:
        return self._unary("SQRT", x, None, None, name, "sqrt")

    # ------------------------------------------------------------------ serialisation
    def unidirectional_sequence_lstm(self, x: TensorRef, input_weights: Sequence, recurrent_weights: Sequence,
                                     biases: Sequence, *, weight_scales: Sequence[float],
                                     recurrent_scales: Sequence[float], hidden_scale: float, hidden_zp: int = 0,
                                     cell_scale: float = 2.0 ** -11, cell_clip: float = 0.0,
                                     time_major: bool = False, hidden_intermediate: tuple[float, int] | None = None,
                                     name=None) -> TensorRef:
        """Integer UNIDIRECTIONAL_SEQUENCE_LSTM as TFLite's converter writes it: gates in (input, forget, cell,
        output) order, int8 weights [n_cell, n_input] / [n_cell, n_cell] per tensor, int32 biases, an int8
        hidden-state and an int16 cell-state variable, five intermediates (the fifth carries the effective
        hidden scale; default: the hidden state's), TANH cell activation."""
        n_cell = np.asarray(input_weights[0]).shape[0]
        batch = x.shape[1] if time_major else x.shape[0]
        gate = ("input", "forget", "cell", "output")
        w_in = [self.const(self._name(None, f"{g}_w"), np.asarray(w, np.int8), "int8", s, 0)
                for g, w, s in zip(gate, input_weights, weight_scales)]
        w_rec = [self.const(self._name(None, f"{g}_r"), np.asarray(w, np.int8), "int8", s, 0)
                 for g, w, s in zip(gate, recurrent_weights, recurrent_scales)]
        b = [self.const(self._name(None, f"{g}_b"), np.asarray(v, np.int32), "int32",
                        float(np.float32(x.scale[0]) * np.float32(s)), 0)
             for g, v, s in zip(gate, biases, weight_scales)]
        h = self.tensor(self._name(None, "output_state"), (batch, n_cell), "int8", hidden_scale, hidden_zp,
                        is_variable=True)
        c = self.tensor(self._name(None, "cell_state"), (batch, n_cell), "int16", cell_scale, 0, is_variable=True)
        inter = [self.tensor(self._name(None, f"{g}_intermediate"), (0,), "float32") for g in gate]
        s4, z4 = hidden_intermediate if hidden_intermediate is not None else (hidden_scale, hidden_zp)
        inter.append(self.tensor(self._name(None, "effective_hidden_scale_intermediate"), (0,), "int8", s4, z4))
        y = self.tensor(self._name(name, "lstm"), tuple(x.shape[:2]) + (n_cell,), "int8", hidden_scale, hidden_zp)
        inputs = [x, *w_in, *w_rec, None, None, None, *b, None, None, h, c, None, None, None, None]
        self.op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [y], "UnidirectionalSequenceLSTMOptions",
                dict(fused_activation_function=ACTIVATIONS["TANH"], cell_clip=float(cell_clip), proj_clip=0.0,
                     time_major=bool(time_major)), intermediates=inter)
        return y

    def finish(self) -> bytes:
        """Serialise the model (schema version 3, one subgraph) to ``.tflite`` bytes."""
        b = flatbuffers.Builder(1024 + sum(len(d) for d in self._buffers))
        buffer_offsets = [self._write_buffer(b, d) for d in self._buffers]
        tensor_offsets = [self._write_tensor(b, t) for t in self._tensors]
        operator_offsets = [self._write_operator(b, op) for op in self._operators]
        subgraph = self._write_subgraph(b, tensor_offsets, operator_offsets)
        opcode_offsets = []
        names = {key: b.CreateString(key[2]) for key in self._opcodes if len(key) > 2}
        for key in self._opcodes:
            code, version = key[0], key[1]
            tflite.OperatorCodeStart(b)
            if key in names:
                tflite.OperatorCodeAddCustomCode(b, names[key])
            tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            tflite.OperatorCodeAddBuiltinCode(b, code)
            tflite.OperatorCodeAddVersion(b, version)
            opcode_offsets.append(tflite.OperatorCodeEnd(b))
        opcodes = _offset_vector(b, tflite.ModelStartOperatorCodesVector, opcode_offsets)
        subgraphs = _offset_vector(b, tflite.ModelStartSubgraphsVector, [subgraph])
        buffers = _offset_vector(b, tflite.ModelStartBuffersVector, buffer_offsets)
        desc = b.CreateString(self.description)
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, opcodes)
        tflite.ModelAddSubgraphs(b, subgraphs)
        tflite.ModelAddDescription(b, desc)
        tflite.ModelAddBuffers(b, buffers)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    @staticmethod
    def _write_buffer(b, data: bytes) -> int:
        vec = None
        if data:
            b.StartVector(1, len(data), _BUFFER_ALIGNMENT)
            b.head -= len(data)
            b.Bytes[b.head:b.head + len(data)] = data
            vec = b.EndVector()
        tflite.BufferStart(b)
        if vec is not None:
            tflite.BufferAddData(b, vec)
        return tflite.BufferEnd(b)

    @staticmethod
    def _write_tensor(b, t: _Tensor) -> int:
        name = b.CreateString(t.name) if t.name else None
        shape = b.CreateNumpyVector(np.asarray(t.shape, np.int32))
        sig = b.CreateNumpyVector(np.asarray(t.shape_signature, np.int32)) if t.shape_signature else None
        quant = None
        if t.scale is not None:
            scale = b.CreateNumpyVector(np.asarray(t.scale, np.float32))
            zp = b.CreateNumpyVector(np.asarray(t.zero_point, np.int64))
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, scale)
            tflite.QuantizationParametersAddZeroPoint(b, zp)
            tflite.QuantizationParametersAddQuantizedDimension(b, t.quantized_dimension)
            quant = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, TENSOR_TYPES[t.dtype])
        tflite.TensorAddBuffer(b, t.buffer)
        if name is not None:
            tflite.TensorAddName(b, name)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        if sig is not None:
            tflite.TensorAddShapeSignature(b, sig)
        if t.is_variable:
            tflite.TensorAddIsVariable(b, True)
        return tflite.TensorEnd(b)

    @staticmethod
    def _write_operator(b, op: _Operator) -> int:
        inputs = b.CreateNumpyVector(np.asarray(op.inputs, np.int32))
        outputs = b.CreateNumpyVector(np.asarray(op.outputs, np.int32))
        inter = b.CreateNumpyVector(np.asarray(op.intermediates, np.int32)) if op.intermediates else None
        options = custom = None
        if op.options_name is not None:
            options = _write_options(b, op.options_name, op.options)
        if op.custom_options:
            custom = b.CreateByteVector(op.custom_options)
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, op.opcode)
        tflite.OperatorAddInputs(b, inputs)
        tflite.OperatorAddOutputs(b, outputs)
        if options is not None:
            tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, op.options_name))
            tflite.OperatorAddBuiltinOptions(b, options)
        if inter is not None:
            tflite.OperatorAddIntermediates(b, inter)
        if custom is not None:
            tflite.OperatorAddCustomOptions(b, custom)
        return tflite.OperatorEnd(b)

    def _write_subgraph(self, b, tensor_offsets, operator_offsets) -> int:
        tensors = _offset_vector(b, tflite.SubGraphStartTensorsVector, tensor_offsets)
        operators = _offset_vector(b, tflite.SubGraphStartOperatorsVector, operator_offsets)
        inputs = b.CreateNumpyVector(np.asarray(self._inputs, np.int32))
        outputs = b.CreateNumpyVector(np.asarray(self._outputs, np.int32))
        name = b.CreateString("main")
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors)
        tflite.SubGraphAddInputs(b, inputs)
        tflite.SubGraphAddOutputs(b, outputs)
        tflite.SubGraphAddOperators(b, operators)
        tflite.SubGraphAddName(b, name)
        return tflite.SubGraphEnd(b)


def _offset_vector(b, start_fn, offsets: list[int]) -> int:
    start_fn(b, len(offsets))
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _write_options(b, options_name: str, options: dict) -> int:
    # Vectors must be created before the table starts.
    vectors = {k: b.CreateNumpyVector(np.asarray(v, np.int32)) for k, v in options.items()
               if isinstance(v, (list, tuple))}
    getattr(tflite, options_name + "Start")(b)
    for key, value in options.items():
        adder = getattr(tflite, f"{options_name}Add{_snake_to_camel(key)}")
        if key in vectors:
            adder(b, vectors[key])
        elif isinstance(value, float) and not math.isnan(value):
            adder(b, value)
        else:
            adder(b, int(value))
    return getattr(tflite, options_name + "End")(b)
