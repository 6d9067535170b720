"""onnxruntime's ``WeightBiasQuantization`` graph transformer (level 1, on by default), redone on the model
before import so byoc sees the graph onnxruntime runs.

A float ``Conv``, ``ConvTranspose`` or ``Gemm`` that reads a DequantizeLinear (per-tensor scale) and whose
output reaches a QuantizeLinear (through Relu / Clip, or through the Reshape / Transpose / Squeeze /
Unsqueeze / MaxPool / Slice chain ``QDQPropagationTransformer`` moves a QuantizeLinear back over) gets
quantized parameters, which changes its result:

* a float32 weight initializer (an Identity of one counts: onnxruntime removes the Identity first) becomes
  ``DequantizeLinear(QuantizeLinear(w))`` with int8 per-tensor parameters from ``GetQuantizationParameter``:
  ``min = min(w, 0)``, ``max = max(w, 0)``, ``scale = (max − min) / 255`` (1 when equal), zero point
  ``rne(clamp(−128 − min / scale, −128, 127))``, all in float32;
* a 1-D float bias initializer becomes ``DequantizeLinear(int32(rne(b / (s_x · s_w))), s_x · s_w)`` (per
  channel when the weight's DequantizeLinear is, on the output-channel axis).

The node is then an ordinary QDQ group: onnxruntime's selectors fuse it (QGemm, QLinearConv) or run it in float
with those weights (ConvTranspose), and the importer follows whichever. Measured on the legacy-exported
transformer (its second attention projection shares weights through Identity) and the UNet's ConvTranspose in
the QOperator models: the float parameters gave 1–3 of 5 and 414–435 of 8192 outputs off; this rewrite makes them
bit-exact. A QuantizeLinear after the propagation chain gets a QuantizeLinear → DequantizeLinear pair right after
the node, as the propagation inserts one (exact: the pair is an identity on the quantized values).
"""
from __future__ import annotations

import numpy as np

from ...quant.onnxrt import quantize_linear
from .model import tensor_to_numpy

__all__ = ["apply_weight_bias_quantization", "weight_params"]

_TARGETS = ("Conv", "ConvTranspose", "Gemm")
_PROPAGATES = ("MaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Slice")
_DEFAULT = ("", "ai.onnx")


def weight_params(w: np.ndarray) -> tuple[np.float32, np.int8]:
    """onnxruntime's ``GetQuantizationParameter<int8_t>`` (core/util/qmath.h) in float32."""
    w = np.asarray(w, np.float32)
    lo = min(np.float32(w.min()) if w.size else np.float32(0), np.float32(0))
    hi = max(np.float32(w.max()) if w.size else np.float32(0), np.float32(0))
    scale = np.float32(1.0) if hi == lo else np.float32(np.float32(hi - lo) / np.float32(255.0))
    zp0 = np.float32(np.float32(-128.0) - np.float32(lo / scale))
    zp = np.rint(min(max(zp0, np.float32(-128.0)), np.float32(127.0)))
    return scale, np.int8(zp)


class _Graph:
    def __init__(self, model):
        g = model.graph
        self.g = g
        self.inits = {t.name: t for t in g.initializer}
        self.outputs = {o.name for o in g.output}
        self.producer = {o: n for n in g.node for o in n.output if o}
        self.consumers: dict[str, list] = {}
        for n in g.node:
            for i in n.input:
                if i:
                    self.consumers.setdefault(i, []).append(n)
        self._names = {o for n in g.node for o in n.output} | set(self.inits) | {i.name for i in g.input}

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._names.add(name)
        return name

    def initializer(self, name: str):
        """The initializer ``name`` is, directly or through Identity nodes (None otherwise)."""
        seen = 0
        while name not in self.inits:
            p = self.producer.get(name)
            if p is None or p.op_type != "Identity" or p.domain not in _DEFAULT or seen > 64:
                return None
            name, seen = p.input[0], seen + 1
        return name

    def value(self, name: str):
        init = self.initializer(name)
        return None if init is None else tensor_to_numpy(self.inits[init], f"initializer {init!r}")

    def sole_consumer(self, name: str):
        users = self.consumers.get(name, [])
        return users[0] if len(users) == 1 and name not in self.outputs else None

    def q_after(self, node):
        """The QuantizeLinear ``node``'s output reaches with no branch (Relu / Clip, or a propagation chain),
        and whether a Q/DQ pair must be inserted right after ``node`` (the propagation's)."""
        cur, seen_prop = node, False
        for _ in range(64):
            if len(cur.output) != 1:
                return None, False
            nxt = self.sole_consumer(cur.output[0])
            if nxt is None:
                return None, False
            if nxt.op_type == "QuantizeLinear":
                return nxt, seen_prop
            if nxt.op_type in ("Relu", "Clip") and not seen_prop and nxt.domain in _DEFAULT:
                cur = nxt
                continue
            if nxt.op_type in _PROPAGATES and nxt.domain in _DEFAULT and cur is node:
                seen_prop = True
                cur = nxt
                continue
            if nxt.op_type in _PROPAGATES and nxt.domain in _DEFAULT and seen_prop:
                cur = nxt
                continue
            return None, False
        return None, False


def _scalar(v) -> bool:
    return v is not None and np.asarray(v).size == 1 and np.asarray(v).ndim <= 1


def apply_weight_bias_quantization(model):
    """The model with onnxruntime's WeightBiasQuantization applied (the same object when nothing matches)."""
    from onnx import helper, numpy_helper
    if not any(n.op_type in _TARGETS for n in model.graph.node):
        return model
    out = type(model)()
    out.CopyFrom(model)
    gr = _Graph(out)
    nodes = list(gr.g.node)
    plans = []
    for idx, node in enumerate(nodes):
        if node.op_type not in _TARGETS or node.domain not in _DEFAULT or len(node.input) < 2:
            continue
        dq0 = gr.producer.get(node.input[0])
        if dq0 is None or dq0.op_type != "DequantizeLinear" or len(dq0.input) < 2 or \
                not _scalar(gr.value(dq0.input[1])):
            continue
        q, pair = gr.q_after(node)
        if q is None or pair and (len(q.input) < 2 or not all(_scalar(gr.value(i)) for i in q.input[1:3] if i)):
            continue  # the propagation moves only a QuantizeLinear with constant scalar parameters
        dq1 = gr.producer.get(node.input[1])
        dq1 = dq1 if dq1 is not None and dq1.op_type == "DequantizeLinear" else None
        w = None
        if dq1 is None:
            w = gr.value(node.input[1])
            if w is None or w.dtype != np.float32:
                continue
        b = None
        if len(node.input) > 2 and node.input[2]:
            b = gr.value(node.input[2])
            if b is None or b.ndim != 1 or b.dtype != np.float32:
                continue
        if dq1 is not None and b is None:
            continue
        w_scale = None
        per_channel = False
        if dq1 is not None:
            w_scale = gr.value(dq1.input[1])
            if w_scale is None:
                continue
            if not _scalar(w_scale):
                per_channel = True
                attrs = {a.name: helper.get_attribute_value(a) for a in dq1.attribute}
                wq = gr.value(dq1.input[0])
                if w_scale.ndim != 1 or w_scale.size != b.size or attrs.get("block_size", 0) or wq is None:
                    continue
                axis = int(attrs.get("axis", 1))
                axis = axis + wq.ndim if axis < 0 else axis
                want = 0
                if node.op_type == "Gemm":
                    tb = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "transB"), 0)
                    want = 1 if tb == 0 else 0
                if axis != want:
                    continue
        plans.append((idx, dq0, q, pair, w, w_scale, b, per_channel))
    if not plans:
        return model
    new_nodes: dict[int, list] = {}   # node index → nodes inserted before it
    after: dict[int, list] = {}       # node index → nodes inserted after it
    for idx, dq0, q, pair, w, w_scale, b, per_channel in plans:
        node = nodes[idx]
        base = node.name or node.output[0]
        before = new_nodes.setdefault(idx, [])
        if w is not None:
            scale, zp = weight_params(w)
            wq = quantize_linear(w, scale, zp, "int8")
            names = [gr.fresh(base + s) for s in ("_weight_q", "_weight_scale", "_weight_zp", "_weight_dq")]
            gr.g.initializer.extend([numpy_helper.from_array(wq, names[0]),
                                     numpy_helper.from_array(np.asarray(scale, np.float32), names[1]),
                                     numpy_helper.from_array(np.asarray(zp, np.int8), names[2])])
            before.append(helper.make_node("DequantizeLinear", names[:3], [names[3]], name=names[3]))
            node.input[1] = names[3]
            w_scale = np.asarray(scale, np.float32)
        if b is not None:
            s_x = np.asarray(gr.value(dq0.input[1]), np.float32).reshape(())
            bias_scale = (s_x * np.asarray(w_scale, np.float32).reshape(-1 if per_channel else ())).astype(np.float32)
            with np.errstate(all="ignore"):
                bq = np.rint((b / bias_scale).astype(np.float32)).astype(np.int64)
            bq = np.clip(bq, -2 ** 31, 2 ** 31 - 1).astype(np.int32)
            names = [gr.fresh(base + s) for s in ("_bias_int32", "_bias_scale", "_bias_dq")]
            gr.g.initializer.extend([numpy_helper.from_array(bq, names[0]),
                                     numpy_helper.from_array(bias_scale, names[1])])
            kw = {"axis": 0} if per_channel else {}
            before.append(helper.make_node("DequantizeLinear", names[:2], [names[2]], name=names[2], **kw))
            node.input[2] = names[2]
        if pair:  # QDQPropagation's pair right after the node, with the QuantizeLinear's parameters
            y = node.output[0]
            qo, do = gr.fresh(y + "_q_to_dq"), gr.fresh(y + "_post_dq")
            ins = list(q.input[1:3])
            after[idx] = [helper.make_node("QuantizeLinear", [y, *ins], [qo], name=qo),
                               helper.make_node("DequantizeLinear", [qo, *ins], [do], name=do)]
            for user in gr.consumers.get(y, []):
                for k, i in enumerate(user.input):
                    if i == y:
                        user.input[k] = do
    order = []
    for idx, n in enumerate(nodes):
        order.extend(new_nodes.get(idx, []))
        order.append(n)
        order.extend(after.get(idx, []))
    order = [type(n).FromString(n.SerializeToString()) for n in order]  # detached from the list cleared below
    del gr.g.node[:]
    gr.g.node.extend(order)
    return out
