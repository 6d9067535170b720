"""``from_onnx``: ONNX graph → IRModule.

The importer walks the (topologically sorted) node list once, keeping for every ONNX tensor name a value:

* a numpy array (initializers and ``Constant`` outputs, so shapes and weights stay inspectable),
* an ``Expr`` (a float or integer tensor),
* a ``QTensor`` (an integer tensor with its scale and zero point: a ``QuantizeLinear`` or ``QLinear*`` output),
* a ``Dequantized`` (a ``DequantizeLinear`` output, materialised as ``qnn.dequantize`` only if a float consumer
  needs it).

QDQ folding follows onnxruntime's graph optimizer: a node whose data inputs are ``DequantizeLinear`` outputs and
whose only consumer is a ``QuantizeLinear`` becomes the integer op chain onnxruntime runs for it (``QLinearConv``
→ ``qnn.conv2d → nn.bias_add → qnn.requantize``, ...; see ``qdq.py``), and the ``QuantizeLinear`` node is
absorbed. Everything else runs in float between ``qnn.dequantize`` and ``qnn.quantize``, as onnxruntime does.

Layout: ONNX is NCHW and the IR keeps it (``data_layout="NCHW"``, ``kernel_layout="OIHW"``); a layout
conversion pass can move to NHWC later without the importer guessing.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ...errors import ByocError, ModelError, UnsupportedOpsError
from ...ir.expr import Constant, Expr, Function, Span, Tuple, Var
from ...ir.module import IRModule
from ...ir.types import TensorType
from ...relay.op import make_call
from .model import (check_output_size, input_types, load_model, node_attrs, node_label, size_attr_problems,
                    tensor_to_numpy)

__all__ = ["from_onnx", "QTensor", "Dequantized", "Importer", "QDQ_DOMAINS"]

# onnxruntime's QDQ matching takes com.microsoft Quantize/DequantizeLinear (what onnxruntime.quantization writes for
# 4-bit types below opset 21) as it takes the default-domain ones
QDQ_DOMAINS = ("", "ai.onnx", "com.microsoft")


@dataclass(frozen=True)
class QTensor:
    """An integer tensor and its quantization: real = scale · (q − zero_point), per channel along ``axis``."""
    expr: Expr
    scale: np.ndarray
    zero_point: np.ndarray
    axis: int
    dtype: str

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1


@dataclass(frozen=True)
class Dequantized:
    """The float output of ``DequantizeLinear(q)``."""
    q: QTensor


def from_onnx(model_or_path, shape: dict | None = None, dtype="float32", opset=None, freeze_params=True):
    """Import an ONNX model (path, bytes or ``onnx.ModelProto``). Returns ``(IRModule, params)``.

    ``shape`` gives static shapes for inputs with symbolic dimensions. Weights are embedded as constants
    (what the pattern tables match, as TVM's ``freeze_params=True``), so ``params`` is empty; it is returned for
    TVM's signature. ``dtype`` (TVM's input dtype: one string, or a dict by input name) must agree with the
    model's declared input types where it names an input; ``opset`` overrides the model's default-domain opset.
    """
    model = load_model(model_or_path)
    from .ort_weight_bias import apply_weight_bias_quantization  # onnxruntime's level-1 rewrite
    model = apply_weight_bias_quantization(model)
    importer = Importer(model, shape)
    if opset is not None:
        importer.opset = int(opset)
    mod = importer.run()
    _check_dtypes(mod, dtype)
    return mod, {}


def _check_dtypes(mod, dtype) -> None:
    """A dtype dict must agree with the declared input types (a single string is TVM's default for untyped
    inputs, and every ONNX input here is typed)."""
    if isinstance(dtype, str) or dtype is None:
        return
    if not isinstance(dtype, dict):
        raise ModelError(f"from_onnx: dtype must be a string or a dict of input name -> dtype, got "
                         f"{type(dtype).__name__}")
    params = {p.name_hint: p for p in mod["main"].params}
    for p in mod["main"].params:
        if p.span is not None:
            params.setdefault(p.span.source, p)
    for name, want in dtype.items():
        p = params.get(name)
        if p is None:
            raise ModelError(f"from_onnx: dtype names {name!r}, which the model does not have as an input",
                             hint="inputs: " + ", ".join(q.name_hint for q in mod["main"].params))
        have = p.type_annotation.dtype
        if str(want) != have:
            raise ModelError(f"from_onnx: dtype gives input {name} dtype {want}, the model declares {have}")


def _sanitize(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.]", "_", str(name))  # protobuf returns bytes for names that are not UTF-8
    return s if s and not s[0].isdigit() else "v" + s


class Importer:
    def __init__(self, model, shape: dict | None):
        self.model = model
        self.graph = model.graph
        self.shape_override = shape
        from .preflight import check_opset
        self.opset = check_opset(model)
        self.values: dict[str, object] = {}
        self.consumers: dict[str, list[int]] = {}
        self.absorbed: set[int] = set()  # node indices folded into an earlier node (membership only)
        self.graph_outputs = {o.name for o in self.graph.output}
        inits = {t.name for t in self.graph.initializer}
        self.graph_input_names = {i.name for i in self.graph.input if i.name not in inits}
        self._dequant_memo: dict[int, tuple[QTensor, Expr]] = {}
        self.producer: dict[str, int] = {}
        self.ort_u8: set[int] = set()  # QuantizeLinear nodes onnxruntime rewrites from int8 to uint8
        self.group_output = ""  # the QuantizeLinear output of the QDQ group being fused
        self.ort_runtime: set[str] = set()  # tensors onnxruntime computes at run time (not constant-folded)
        self.matmul_nbits: set[int] = set()  # nodes onnxruntime runs as MatMulNBits (ort_refusals)
        self.four_bit: dict[str, str] = {}  # INT4 / UINT4 initializers (held unpacked as int8 / uint8) → type

    # ---------------------------------------------------------------------------------------------- driver
    def run(self) -> IRModule:
        from .float_ops import FLOAT_CONVERTERS
        from .qdq import QOPERATOR_CONVERTERS, QUANT_CONVERTERS
        from .qlinear_ops import QLINEAR_CONVERTERS, UNSUPPORTED_REASONS
        qop_conv = {**QOPERATOR_CONVERTERS, **QLINEAR_CONVERTERS}
        self._check_supported(FLOAT_CONVERTERS, qop_conv, UNSUPPORTED_REASONS)
        from .model import FOUR_BIT
        for t in self.graph.initializer:
            self.values[t.name] = tensor_to_numpy(t, f"initializer {t.name!r}")
            if t.data_type in FOUR_BIT:
                self.four_bit[t.name] = FOUR_BIT[t.data_type][0]
        params = []
        for name, shp, dtype in input_types(self.graph, set(self.values), self.shape_override):
            v = Var(_sanitize(name), TensorType(shp, dtype), Span(name))
            self.values[name] = v
            params.append(v)
        nodes = list(self.graph.node)
        for i, n in enumerate(nodes):
            for inp in n.input:
                if inp:
                    self.consumers.setdefault(inp, []).append(i)
            for o in n.output:
                if o:
                    self.producer[o] = i
        self.ort_runtime = set(self.graph_input_names)
        for n in nodes:  # topological order: DequantizeLinear outputs and whatever reads a run-time tensor
            if n.op_type == "DequantizeLinear" or any(i in self.ort_runtime for i in n.input if i):
                self.ort_runtime.update(o for o in n.output if o)
        from .ort_fusion import s8_to_u8_quantize_nodes
        self.ort_u8 = {i for i in s8_to_u8_quantize_nodes(nodes, self.consumers, self.graph_outputs, self.values)
                       if not self.four_bit_params(nodes[i])}  # onnxruntime's rule is for int8, not int4
        from .ort_refusals import refuse_float16_dq_into_float_ops, refuse_matmul_nbits
        self.matmul_nbits = refuse_matmul_nbits(self, nodes)  # MatMul/Gemm → nn.matmul_nbits (as onnxruntime)
        refuse_float16_dq_into_float_ops(self, nodes)
        for i, node in enumerate(nodes):
            if i in self.absorbed:
                continue
            for inp in node.input:
                if inp and inp not in self.values:
                    raise ModelError(f"{node_label(node)} reads tensor {inp!r}, which no earlier node, input or "
                                     "initializer defines", hint="the graph is not topologically sorted or is "
                                     "missing a producer")
            self._check_schema_types(node)
            try:
                self._convert(i, node, nodes, FLOAT_CONVERTERS, QUANT_CONVERTERS, qop_conv)
            except ModelError as e:
                if node_label(node) not in e.message:
                    e.with_note(f"while converting {node_label(node)}")
                raise
            except ByocError as e:
                raise ModelError(f"{node_label(node)}: {e.message}", hint=e.hint, notes=e.notes) from e
            except (ValueError, TypeError, IndexError, KeyError, ArithmeticError) as e:
                raise ModelError(f"{node_label(node)}: malformed node ({type(e).__name__}: {e})",
                                 hint="check the node's inputs, attributes and shapes") from e
        outs = []
        for o in self.graph.output:
            if o.name not in self.values:
                raise ModelError(f"graph output {o.name!r} is not produced by any node")
            v = self.values[o.name]
            # a constant graph output (a folded Shape) keeps its declared type: no int64 → int32 narrowing
            outs.append(Constant(v) if isinstance(v, np.ndarray) else self.expr(o.name, integer_ok=True))
        body = outs[0] if len(outs) == 1 else Tuple(tuple(outs))
        mod = IRModule()
        mod["main"] = Function(tuple(params), body)
        from ...transform.infer_type import infer_module
        try:
            infer_module(mod)
        except ByocError as e:
            raise ModelError(f"the imported graph does not type-check: {e.message}", hint=e.hint,
                             notes=e.notes) from e
        return mod

    def _check_supported(self, float_conv, qop_conv, reasons: dict[str, str]) -> None:
        """Every unsupported op type and every out-of-limit size attribute of the graph, in one error."""
        missing: Counter = Counter()
        names: dict[str, list[str]] = {}
        from .preflight import attribute_problems
        from .shape_arith_ops import fold_only
        fold_only = fold_only(float_conv)  # shape arithmetic folded at import (legacy attention exports)
        size_problems = [msg for n in self.graph.node for msg in size_attr_problems(n)]
        attr_problems = [msg for n in self.graph.node
                         if n.domain in ("", "ai.onnx") and n.op_type in float_conv for msg in attribute_problems(n)]
        for n in self.graph.node:
            key = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
            if n.domain in ("", "ai.onnx") and (n.op_type in float_conv or n.op_type in fold_only):
                continue
            if n.domain in ("", "ai.onnx", "com.microsoft") and n.op_type in qop_conv:
                continue
            key = str(key)  # protobuf hands back bytes for strings that are not valid UTF-8
            missing[key] += 1
            names.setdefault(key, []).append(str(n.name or (n.output[0] if n.output else "?")))
        if missing:
            lines = [f"{op} ×{cnt}: {', '.join(names[op][:5])}{', ...' if cnt > 5 else ''}"
                     + (f" ({reasons[op.split('.')[-1]]})" if op.split('.')[-1] in reasons else "")
                     for op, cnt in sorted(missing.items())]
            notes = ("also, size attributes over the import limit:\n  " + "\n  ".join(size_problems),) \
                if size_problems else ()
            attrs_txt = ("\nand {} unsupported attribute-level feature(s):\n  ".format(len(attr_problems))
                         + "\n  ".join(attr_problems)) if attr_problems else ""
            raise UnsupportedOpsError(
                f"the model uses {len(missing)} unsupported ONNX op type(s):\n  " + "\n  ".join(lines) + attrs_txt,
                hint="supported: " + ", ".join(sorted(set(float_conv) | set(qop_conv))), notes=notes)
        if attr_problems:
            raise UnsupportedOpsError(f"the model uses {len(attr_problems)} unsupported attribute-level "
                                      "feature(s):\n  " + "\n  ".join(attr_problems),
                                      hint="each line names the node and the feature")
        if size_problems:
            raise ModelError(f"{len(size_problems)} size attribute(s) over the import limit:\n  "
                             + "\n  ".join(size_problems),
                             hint="the model is corrupt or its sizes are not meant for this compiler")

    def _convert(self, i, node, nodes, float_conv, quant_conv, qop_conv) -> None:
        attrs = node_attrs(node)
        from .shape_ops import fold_constant_node
        folded = fold_constant_node(self, node)
        if folded is not None:
            for name, v in zip(node.output, folded):
                if name:
                    self.values[name] = v
            return
        if i in self.matmul_nbits:
            from .matmul_nbits_ops import convert_matmul_nbits
            outs = convert_matmul_nbits(self, node, nodes, i)
        elif node.op_type in qop_conv:
            outs = qop_conv[node.op_type](self, node, attrs)
        else:
            outs = None
            if node.op_type in quant_conv:
                q_indices = self._quantize_consumers(node, nodes)
                if q_indices:
                    out_q = self.quant_params_of(nodes[q_indices[0]])
                    if out_q is not None and all(_same_qparams(out_q, self.quant_params_of(nodes[j]))
                                                 for j in q_indices[1:]) and self._ort_fuses(node, nodes, q_indices[0], out_q):
                        self.group_output = nodes[q_indices[0]].output[0]  # ort_u8_view reads it
                        res = quant_conv[node.op_type](self, node, attrs, out_q)
                        if res is not None:
                            self._type_check(res, node)
                            for j in q_indices:
                                self.absorbed.add(j)
                                self.values[nodes[j].output[0]] = res
                            return
            if node.op_type not in float_conv:
                from .shape_arith_ops import refuse_unfolded
                refuse_unfolded(self, node)
            outs = float_conv[node.op_type](self, node, attrs)
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        for name, v in zip(node.output, outs):
            if name:
                self.values[name] = v
                self._type_check(v, node)

    def _check_schema_types(self, node) -> None:
        from .preflight import schema_type_problem
        dts = []
        for n in node.input:
            v = self.values.get(n) if n else None
            if isinstance(v, np.ndarray):
                dts.append(v.dtype.name)
            elif isinstance(v, Dequantized):
                dts.append("float32")
            elif isinstance(v, QTensor):
                dts.append(v.dtype)
            elif isinstance(v, Expr):
                t = _infer_new(v)
                dts.append(t.dtype if isinstance(t, TensorType) else None)
            else:
                dts.append(None)
        msg = schema_type_problem(node, self.opset, dts)
        if msg:
            raise ModelError(msg, hint="the model is not valid ONNX (onnx.checker.check_model would say so)")

    def ort_type(self, name: str, dtype: str) -> str:
        """The element type onnxruntime sees for a DequantizeLinear output (or a QuantizeLinear node's output,
        ``name`` being that node's output) after its S8→U8 rewrite."""
        nodes = self.graph.node
        i = self.producer.get(name)
        if i is not None and nodes[i].op_type == "DequantizeLinear":
            i = self.producer.get(nodes[i].input[0])
        return "uint8" if i is not None and i in self.ort_u8 and dtype == "int8" else dtype

    def four_bit_params(self, qnode) -> str | None:
        """"int4" / "uint4" when a Quantize/DequantizeLinear node's data or zero point is a 4-bit initializer."""
        for name in (qnode.input[0], qnode.input[2] if len(qnode.input) > 2 else ""):
            if name in self.four_bit:
                return self.four_bit[name]
        return None

    def _ort_fuses(self, node, nodes, q_index: int, out_q) -> bool:
        from .ort_fusion import conv_bias_scale_fuses, group_fuses, inputs_from_dq
        if not inputs_from_dq(node, self.producer, nodes):
            return False
        if node.op_type == "Conv" and len(node.input) > 2 and node.input[2]:
            x, w, b = (self.values.get(n) for n in node.input[:3])
            if all(isinstance(v, Dequantized) for v in (x, w, b)) and \
                    not conv_bias_scale_fuses(x.q.scale, w.q.scale, b.q.scale):
                return False
        # onnxruntime's CPU QDQ selectors take no 4-bit tensor (weights included): such groups run in float
        dqs = [nodes[self.producer[n]] for n in node.input if n and isinstance(self.values.get(n), Dequantized)
               and n in self.producer]
        if self.four_bit_params(nodes[q_index]) or any(self.four_bit_params(d) for d in dqs):
            return False
        in_types = [self.ort_type(n, self.values[n].q.dtype) for n in node.input
                    if n and isinstance(self.values.get(n), Dequantized)]
        return group_fuses(node.op_type, in_types, self.ort_type(nodes[q_index].output[0], out_q[3]))

    def _type_check(self, v, node) -> None:
        # Type each new value now, so a shape/attribute error is reported against the node that made it.
        e = v.expr if isinstance(v, QTensor) else v.q.expr if isinstance(v, Dequantized) else v
        if isinstance(e, Expr):
            t = _infer_new(e)
            if isinstance(t, TensorType):
                check_output_size(node, t.shape)

    def _quantize_consumers(self, node, nodes) -> list[int]:
        """The QuantizeLinear nodes reading this node's single output, when they are its only consumers."""
        if len(node.output) != 1 or node.output[0] in self.graph_outputs:
            return []
        users = self.consumers.get(node.output[0], [])
        for j in users:
            q = nodes[j]
            if q.op_type != "QuantizeLinear" or q.domain not in QDQ_DOMAINS or q.input[0] != node.output[0]:
                return []
        return users

    # ---------------------------------------------------------------------------------------------- values
    def quant_params_of(self, qnode) -> tuple[np.ndarray, np.ndarray, int, str] | None:
        """(scale, zero_point, axis, dtype) of a Quantize/DequantizeLinear node with constant parameters."""
        scale = self.values.get(qnode.input[1]) if len(qnode.input) > 1 else None
        if not isinstance(scale, np.ndarray):
            return None
        zp = self.values.get(qnode.input[2]) if len(qnode.input) > 2 and qnode.input[2] else None
        if zp is None:
            zp_arr, dtype = np.zeros(scale.shape, np.int64), "uint8"
            if len(qnode.input) > 2 and qnode.input[2]:
                return None
        elif isinstance(zp, np.ndarray):
            zp_arr, dtype = zp.astype(np.int64), zp.dtype.name
        else:
            return None
        attrs = node_attrs(qnode)
        if "output_dtype" in attrs and attrs["output_dtype"]:
            raise ModelError(f"{node_label(qnode)}: output_dtype attribute is not supported",
                             hint="give the zero point tensor instead")
        if attrs.get("block_size", 0):
            raise ModelError(f"{node_label(qnode)}: blocked quantization is not supported")
        if dtype not in ("int8", "uint8", "int16", "uint16", "int32"):
            raise ModelError(f"{node_label(qnode)}: zero point type {dtype} is not supported",
                             hint="int8, uint8, int16, uint16 (int32 for biases)")
        if scale.dtype != np.float32:
            raise ModelError(f"{node_label(qnode)}: scale must be float32, found {scale.dtype}")
        if scale.size == 1 and zp_arr.size == 1:
            scale, zp_arr = scale.reshape(()), zp_arr.reshape(())
        elif zp_arr.size == 1 and scale.ndim == 1:
            zp_arr = np.full(scale.shape, int(zp_arr.reshape(-1)[0]), np.int64)
        if scale.ndim > 1 or zp_arr.shape != scale.shape:
            raise ModelError(f"{node_label(qnode)}: scale {scale.shape} and zero point {zp_arr.shape} must be "
                             "matching scalars or 1-D vectors")
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise ModelError(f"{node_label(qnode)}: scales must be positive and finite, found {scale.reshape(-1)[:4]}")
        return scale, zp_arr, int(attrs.get("axis", 1)), dtype

    def expr(self, name: str, integer_ok: bool = True) -> Expr:
        """The value of a tensor as an expression (constants embedded, DequantizeLinear outputs materialised)."""
        v = self.values[name]
        if isinstance(v, Expr):
            return v
        if isinstance(v, np.ndarray):
            return Constant(_ir_array(v, name))
        if isinstance(v, QTensor):
            return v.expr
        if isinstance(v, Dequantized):
            return self.dequantize(v.q, name)
        raise ModelError(f"tensor {name!r} has no expression value")

    def dequantize(self, q: QTensor, name: str = "") -> Expr:
        key = id(q)
        if key not in self._dequant_memo and isinstance(q.expr, Constant) and q.expr.data.dtype.itemsize >= 4:
            # a constant int32 (a bias): onnxruntime rounds q − zp to float32 before the multiply, which
            # qnn.dequantize's single rounding does not reproduce above 2^24 (UNet int16: 1444 of 8192 conv
            # outputs 1 ulp off)
            self._dequant_memo[key] = (q, Constant(_ort_dequantize(q)))
        if key not in self._dequant_memo:
            axis = q.axis if q.per_channel else -1
            e = make_call("qnn.dequantize", (q.expr, Constant(q.scale.astype(np.float32)),
                                             Constant(q.zero_point.astype(np.int32))), {"axis": axis},
                          span=Span(name) if name else None)
            # The memo keeps q alive: a freed QTensor's id could otherwise be reused by a later one.
            self._dequant_memo[key] = (q, e)
        return self._dequant_memo[key][1]

    def constant_value(self, name: str):
        """The tensor as a numpy array when it is a constant (an initializer, or DequantizeLinear of one, computed
        as onnxruntime does: float32(q − zp) · scale in float32), else its stored value."""
        v = self.values[name]
        if isinstance(v, Dequantized) and isinstance(v.q.expr, Constant):
            return _ort_dequantize(v.q)
        return v

    def const(self, name: str, node, what: str) -> np.ndarray:
        v = self.values.get(name)
        if not isinstance(v, np.ndarray):
            raise ModelError(f"{node_label(node)}: {what} ({name!r}) must be a constant initializer",
                             hint="computed shapes/parameters are not supported; constant-fold the model first")
        return v

    def shape_of(self, e: Expr) -> tuple[int, ...]:
        t = _infer_new(e)
        if not isinstance(t, TensorType):
            raise ModelError(f"expected a tensor, found {t}")
        return t.shape

    def dtype_of(self, e: Expr) -> str:
        t = _infer_new(e)
        if not isinstance(t, TensorType):
            raise ModelError(f"expected a tensor, found {t}")
        return t.dtype


def _infer_new(e: Expr):
    """Type the not-yet-typed part of ``e`` only (everything the importer built earlier is typed already), so
    importing stays linear in the graph size."""
    from ...ir.traversal import post_order
    from ...transform.infer_type import _infer_node, _type_children
    if e._checked_type is None:  # type: ignore[attr-defined]
        untyped = lambda n: tuple(c for c in _type_children(n) if c._checked_type is None)  # noqa: E731
        for n in post_order(e, child_fn=untyped):
            if n._checked_type is None:  # type: ignore[attr-defined]
                n._set_checked_type(_infer_node(n, {}, {}))
    return e.checked_type


def _ort_dequantize(q) -> np.ndarray:
    """DequantizeLinear of a constant as onnxruntime computes it: float32(q − zp) · scale in float32."""
    data = q.expr.data
    shape = [1] * data.ndim
    if q.per_channel:
        shape[q.axis] = q.scale.size
    s = q.scale.astype(np.float32).reshape(shape if q.per_channel else ())
    z = q.zero_point.reshape(shape if q.per_channel else ()).astype(np.int32)
    wide = np.int64 if data.dtype.itemsize >= 4 else np.int32  # q − zp is exact in int32 below 32 bits
    return ((data.astype(wide) - z).astype(np.float32) * s).astype(np.float32)


def _same_qparams(a, b) -> bool:
    return b is not None and a[3] == b[3] and a[0].shape == b[0].shape and np.array_equal(a[0], b[0]) and \
        np.array_equal(a[1], b[1]) and (a[0].size == 1 or a[2] == b[2])


def _ir_array(v: np.ndarray, name: str) -> np.ndarray:
    if v.dtype == np.int64:
        # Shapes and indices: the IR computes in int32 where it needs integers at all.
        if v.size and (v.min() < -(1 << 31) or v.max() >= (1 << 31)):
            raise ModelError(f"int64 tensor {name!r} has values outside int32")
        return v.astype(np.int32)
    return v
