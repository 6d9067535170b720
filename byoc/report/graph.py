"""The model as a tensor-level DAG for drawing.

Nodes are named tensors: the calls the TFLite frontend tagged with one ``Span`` (a ``pad → conv → bias →
requantize → clip`` chain) form one node, split where the placement changes inside the chain (a convolution left
on the CPU whose requantize went to the NPU is two nodes, each drawn where it runs). Untagged calls are nodes of
their own; ``main``'s parameters are input nodes. Placement and reasons come from the partitioner's report, one
decision per op or composite, matched to the calls by tensor name and op.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..ir.expr import Call, Op, Span, Tuple, TupleGetItem, Var
from ..ir.traversal import post_order
from ..ir.types import TensorType

__all__ = ["GraphNode", "ModelGraph", "model_graph", "op_kind", "short_name", "distinct_reasons"]


@dataclass(frozen=True)
class GraphNode:
    id: int
    name: str             # the full tensor name
    label: str            # the short name drawn in the box
    kind: str             # what a user calls it: "depthwise conv 3×3", "fully connected", "softmax", ...
    ops: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: str
    placement: str        # "input", "cpu" or a partition name
    reason: str = ""
    macs: int = 0


@dataclass(frozen=True)
class ModelGraph:
    nodes: tuple[GraphNode, ...]
    edges: tuple[tuple[int, int], ...]

    @property
    def partitions(self) -> tuple[str, ...]:
        """Partition names in order of first appearance."""
        seen: dict[str, None] = {}
        for n in self.nodes:
            if n.placement not in ("cpu", "input"):
                seen.setdefault(n.placement, None)
        return tuple(seen)


def _type_of(node) -> tuple[tuple[int, ...], str]:
    t = getattr(node, "_checked_type", None) or getattr(node, "type_annotation", None)
    if isinstance(t, TensorType):
        return tuple(int(d) for d in t.shape), str(t.dtype)
    return (), ""


# ----------------------------------------------------------------------------------------- names and kinds

_PLUMBING = frozenset({"nn.pad", "cast", "nn.bias_add", "qnn.requantize", "clip", "reshape", "squeeze",
                       "expand_dims"})
_KINDS = {"qnn.dense": "fully connected", "nn.dense": "fully connected", "nn.avg_pool2d": "average pool",
          "nn.max_pool2d": "max pool", "nn.global_avg_pool2d": "global average pool", "qnn.mean": "mean",
          "qnn.add": "add", "qnn.subtract": "subtract", "qnn.mul": "multiply", "qnn.concatenate": "concatenate",
          "qnn.softmax": "softmax", "nn.softmax": "softmax", "qnn.requantize": "requantize", "nn.pad": "pad",
          "qnn.quantize": "quantize", "qnn.dequantize": "dequantize", "qnn.sigmoid": "sigmoid",
          "qnn.tanh": "tanh", "qnn.hardswish": "hard swish", "qnn.leaky_relu": "leaky ReLU",
          "qnn.batch_matmul": "batch matmul", "nn.batch_matmul": "batch matmul", "image.resize2d": "resize",
          "qnn.conv2d_transpose": "transposed conv", "nn.conv2d_transpose": "transposed conv",
          "strided_slice": "slice", "clip": "clip (ReLU)", "nn.bias_add": "bias add"}


def _conv_kind(call: Call) -> str:
    a = call.attrs
    shape, _ = _type_of(call.args[1])
    layout = str(getattr(a, "kernel_layout", "OIHW"))
    if getattr(a, "kernel_size", None):
        ks = tuple(a.kernel_size)
    elif len(shape) == len(layout) and "H" in layout and "W" in layout:
        ks = (shape[layout.index("H")], shape[layout.index("W")])
    else:
        ks = ()
    data, _ = _type_of(call.args[0])
    dlayout = str(getattr(a, "data_layout", "NCHW"))
    cin = data[dlayout.index("C")] if data and "C" in dlayout else 0
    groups = int(getattr(a, "groups", 1))
    name = "depthwise conv" if groups > 1 and groups == cin else "grouped conv" if groups > 1 else "conv"
    size = "×".join(str(int(k)) for k in ks)
    stride = tuple(int(s) for s in getattr(a, "strides", (1, 1)))
    return " ".join(x for x in (name, size, f"/{stride[0]}" if max(stride) > 1 else "") if x)


def op_kind(ops: list[Call]) -> str:
    """What users call a chain of calls: named after its main op (``pad → conv(groups = C) → bias →
    requantize`` is a "depthwise conv 3×3"), plumbing only when nothing else is there. TVM's form of a quantized
    activation (``dequantize → sigmoid → quantize(kernel="qnn.sigmoid")``) is named after the kernel it stands for."""
    from ..transform.canonicalize_qnn import chain_kernel
    kernel = next((k for k in map(chain_kernel, ops) if k), "")
    if kernel:
        return _KINDS[kernel]
    core = next((c for c in ops if c.op.name not in _PLUMBING), None) or \
        next((c for c in ops if c.op.name not in ("nn.bias_add", "clip", "cast")), ops[-1])
    name = core.op.name
    if name in ("qnn.conv2d", "nn.conv2d"):
        return _conv_kind(core)
    if name == "tflite.custom":   # an opaque custom operator: named by its custom code
        return core.attrs.opcode
    if name in _KINDS:
        return _KINDS[name]
    return name.split(".", 1)[-1].replace("_", " ")


_WEIGHTS = re.compile(r"(ReadVariableOp|/resource\d*$|/weights?$|/kernel$|/bias$)", re.IGNORECASE)


def short_name(name: str, limit: int = 28) -> str:
    """A label for a (TFLite) tensor name: of the ';'-joined names the converter fused, the first that does
    not name a weight; without its leading scope when there are more; the middle elided when still too long.
    The full name stays in the node's tooltip."""
    parts = [p for p in name.split(";") if p] or [name]
    part = next((p for p in parts if not _WEIGHTS.search(p)), parts[0])
    comps = part.split("/")
    if len(comps) > 2:
        comps = comps[1:]
    text = "/".join(comps)
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[-(limit - 1 - head):]


# ----------------------------------------------------------------------------------------------- graph

def _call_placements(calls: list[Call], report) -> dict[int, tuple[str, str]]:
    """Call id → (placement, reason): each call takes the report's decision for its tensor name that holds its
    op (a composite's decision holds all its inner ops, each once). A composite's op from another tensor (a
    ``pad`` named apart from the ``conv`` it feeds) then joins the decision of the call it feeds."""
    pending: dict[str, list[list]] = {}       # name -> [[remaining ops], placement, reason]
    for d in getattr(report, "nodes", ()):
        where = "cpu" if d.on_cpu else (d.partition or d.target)
        ops = list(d.inner_ops) if d.inner_ops else [d.op]
        pending.setdefault(d.name, []).append([ops, where, d.reason if d.on_cpu else ""])
    entry_of: dict[int, list] = {}
    for c in calls:
        key = c.span.source if isinstance(c.span, Span) else ""
        for entry in pending.get(key, ()):
            if c.op.name in entry[0]:
                entry[0].remove(c.op.name)
                entry_of[id(c)] = entry
                break
    for c in reversed(calls):                 # consumers before producers
        entry = entry_of.get(id(c))
        if entry is None:
            continue
        for a in c.args:
            if isinstance(a, Call) and isinstance(a.op, Op) and id(a) not in entry_of and a.op.name in entry[0]:
                entry[0].remove(a.op.name)
                entry_of[id(a)] = entry
    return {k: (e[1], e[2]) for k, e in entry_of.items()}


def distinct_reasons(reasons) -> list[str]:
    """Each reason once, and none that another one already says (a single op's refusal repeats the refusal of
    the composite it belonged to)."""
    out: list[str] = []
    for r in dict.fromkeys(r for r in reasons if r):
        if any(r in o for o in out):
            continue
        out = [o for o in out if o not in r] + [r]
    return out


def model_graph(mod, report) -> ModelGraph:
    """``mod``: the imported (type-inferred) module; ``report``: ``partition_for``'s PartitionReport."""
    from ..ops.macs import macs_of
    main = mod["main"]
    calls = [n for n in post_order(main.body, enter_functions=False) if isinstance(n, Call) and isinstance(n.op, Op)]
    placed = _call_placements(calls, report)
    # a span's calls, in order; an untagged call is its own group
    spans: dict[str, list[Call]] = {}
    for i, c in enumerate(calls):
        spans.setdefault(c.span.source if isinstance(c.span, Span) else f"#{i}", []).append(c)
    groups: list[tuple[str, str, list]] = []     # (tensor name, placement, [placement, calls...])
    for key, members in spans.items():
        known = [placed[id(c)][0] for c in members if id(c) in placed]
        default = known[-1] if known else "cpu"        # a call folded away by the partitioner: its neighbours'
        name = key if not key.startswith("#") else members[-1].op.name
        run: list[Call] = []
        for c in members:
            where = placed.get(id(c), (default, ""))[0]
            if not run or run[0] != where:
                run = [where]
                groups.append((name, where, run))
            run.append(c)
    nodes: list[GraphNode] = []
    inputs: dict[int, int] = {}
    for p in main.params:
        shape, dtype = _type_of(p)
        inputs[id(p)] = len(nodes)
        nodes.append(GraphNode(len(nodes), p.name_hint, short_name(p.name_hint), "input", ("input",), shape, dtype,
                               "input"))
    node_of: dict[int, int] = {}
    for name, where, run in groups:
        members = run[1:]
        shape, dtype = _type_of(members[-1])
        reasons = [placed.get(id(c), ("", ""))[1] for c in members]
        nid = len(nodes)
        for c in members:
            node_of[id(c)] = nid
        nodes.append(GraphNode(nid, name, short_name(name), op_kind(members), tuple(c.op.name for c in members),
                               shape, dtype, where, "; ".join(distinct_reasons(reasons)),
                               sum(macs_of(c) for c in members)))
    edges: dict[tuple[int, int], None] = {}
    for c in calls:
        dst = node_of[id(c)]
        stack = list(c.args)
        while stack:
            a = stack.pop()
            if isinstance(a, Tuple):
                stack.extend(a.fields)
            elif isinstance(a, TupleGetItem):
                stack.append(a.tuple_value)
            elif isinstance(a, Var) and id(a) in inputs:
                edges[(inputs[id(a)], dst)] = None
            elif isinstance(a, Call) and id(a) in node_of and node_of[id(a)] != dst:
                edges[(node_of[id(a)], dst)] = None
    return ModelGraph(tuple(nodes), tuple(sorted(edges)))
