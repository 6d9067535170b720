"""Which op call of the imported model computes a tensor, wherever a build placed it.

A tensor is identified by its producer, not by its name: one TFLite operator becomes a chain of op calls that all
carry the operator's tensor name (``qnn.conv2d → nn.bias_add → qnn.requantize``), and a partition may leave the
int32 head of that chain on the CPU while the NPU computes its int8 end. The key of a producer is the identity of
its call's attributes object, which every pass shares between all rebuilt copies of a call (the invariant
``partition.verify_partitioned`` checks), with its op name; so the same key names the call in the imported
module, in the reference interpreter's tap, in the CPU build and inside NPU partitions.

Tensors inside NPU partitions are read from the simulator's memory: before the compare build, each layer call of
a partition gets a span naming its producer (``<name>{cmp#<n>}``), which the NPU compiler uses as the layer's
output region name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..ir.expr import Call, Function, GlobalVar, Op, Span, Tuple, TupleGetItem
from ..ir.module import IRModule
from ..ir.traversal import post_order, rewrite_post_order
from ..ir.types import TensorType

__all__ = ["Producer", "catalog", "key_of", "with_probes", "tag_npu_layers", "untag"]


@dataclass(frozen=True)
class Producer:
    key: Key            # (id of the call's attrs object, op name)
    order: int          # position in the imported main's post-order (topological)
    name: str           # the model tensor name the call carries ("" when none)
    op: str
    model_tensor: bool  # the last call carrying its name: computes the model's tensor of that name


Key = tuple  # (id of the call's attrs object, op name)


def key_of(call) -> Key | None:
    """The producer key of an op call: its attrs object's identity, and its op (a rewrite that turned the call
    into another op computes something else)."""
    if isinstance(call, Call) and isinstance(call.op, Op) and call.attrs is not None:
        return id(call.attrs), call.op.name
    return None


def _span_name(node) -> str:
    span = getattr(node, "span", None)
    return span.source if isinstance(span, Span) else ""


def catalog(main: Function) -> dict[Key, Producer]:
    """Every op call of ``main`` with an unambiguous key, by key (in topological order)."""
    calls = [n for n in post_order(main.body, enter_functions=False) if key_of(n) is not None]
    seen: dict[Key, int] = {}
    for n in calls:
        seen[key_of(n)] = seen.get(key_of(n), 0) + 1
    last: dict[str, int] = {}
    for i, n in enumerate(calls):
        name = _span_name(n)
        if name:
            last[name] = i
    out = {}
    for i, n in enumerate(calls):
        k = key_of(n)
        if seen[k] == 1:
            name = _span_name(n)
            out[k] = Producer(k, i, name, n.op.name, bool(name) and last[name] == i)
    return out


def with_probes(mod: IRModule, want) -> tuple[IRModule, list[Key], int]:
    """``mod`` whose main also returns the value of every op call of its own body for which ``want(call)`` gives a
    producer key; returns (module, the keys in probe order, the count of leaves main returned before)."""
    from ..transform.infer_type import InferType
    mod = InferType()(mod)
    main = mod["main"]
    keys, nodes, taken = [], [], set()
    for n in post_order(main.body, enter_functions=False):
        if isinstance(getattr(n, "_checked_type", None), TensorType):
            k = want(n)
            if k is not None and k not in taken:
                taken.add(k)
                keys.append(k)
                nodes.append(n)
    n_out = _leaf_count(main.body.checked_type)
    out = mod.copy()
    out["main"] = Function(main.params, Tuple((main.body,) + tuple(nodes)), None, main.attrs)
    return InferType()(out), keys, n_out


def _leaf_count(t) -> int:
    count, stack = 0, [t]
    while stack:
        x = stack.pop()
        if hasattr(x, "fields"):
            stack.extend(x.fields)
        else:
            count += 1
    return count


def layer_producer(call) -> Key | None:
    """The key of what a partition-level call computes: a bare op's own, a composite's root op's."""
    if isinstance(call, Call) and isinstance(call.op, Function) and "Composite" in call.op.attrs:
        return key_of(call.op.body)
    return key_of(call)


def partition_output_keys(pmod: IRModule, target: str) -> dict[str, list[Key | None]]:
    """For each ``target`` partition, the producer key of each of its outputs (None where unknown)."""
    out = {}
    for gv, func in pmod.sorted_items():
        if func.attrs.get("Compiler") == target:
            body = func.body
            fields = list(body.fields) if isinstance(body, Tuple) else [body]
            out[gv.name_hint] = [layer_producer(f) for f in fields]
    return out


def partition_output_probe(pmod: IRModule, target: str):
    """``want`` for ``with_probes``: main's view of a partition output (the call, or its TupleGetItem) → the key of
    the partition's layer computing it; and the partition it belongs to by key."""
    outs = partition_output_keys(pmod, target)
    where: dict[Key, str] = {}

    def want(n):
        if isinstance(n, Call) and isinstance(n.op, GlobalVar) and n.op.name_hint in outs:
            keys = outs[n.op.name_hint]
            k = keys[0] if len(keys) == 1 else None
        elif isinstance(n, TupleGetItem) and isinstance(n.tuple_value, Call) \
                and isinstance(n.tuple_value.op, GlobalVar) and n.tuple_value.op.name_hint in outs:
            keys = outs[n.tuple_value.op.name_hint]
            k = keys[n.index] if n.index < len(keys) else None
        else:
            return None
        if k is not None:
            where[k] = n.tuple_value.op.name_hint if isinstance(n, TupleGetItem) else n.op.name_hint
        return k
    return want, where


_TAG = re.compile(r"^(.*)\{cmp#(\d+)\}$", re.S)


@dataclass(frozen=True)
class LayerTag:
    key: Key
    partition: str
    dtype: str
    shape: tuple[int, ...]


def tag_npu_layers(pmod: IRModule, target: str,
                   known: dict[Key, Producer]) -> tuple[IRModule, dict[int, LayerTag]]:
    """``pmod`` whose ``target`` partitions' layer calls carry ``<name>{cmp#<n>}`` spans; returns it and n → tag."""
    from ..transform.infer_type import InferType
    pmod = InferType()(pmod)
    tags: dict[int, LayerTag] = {}
    out = pmod.copy()
    for gv, func in pmod.sorted_items():
        if func.attrs.get("Compiler") != target:
            continue
        layers = {id(n) for n in post_order(func.body, enter_functions=False)
                  if isinstance(n, Call) and not isinstance(n.op, GlobalVar)}

        def fn(orig, new, gv=gv, layers=layers):
            if id(orig) not in layers:
                return None
            k = layer_producer(orig)
            t = getattr(orig, "_checked_type", None)
            if k is None or k not in known or not isinstance(t, TensorType):
                return None
            n = len(tags)
            tags[n] = LayerTag(k, gv.name_hint, str(t.dtype), tuple(int(d) for d in t.shape))
            return new.replace(span=Span(f"{_span_name(orig)}{{cmp#{n}}}"))
        out[gv] = func.replace(body=rewrite_post_order(func.body, fn, enter_functions=False,
                                                        preserves_types=True))
    return out, tags


def untag(region_name: str) -> int | None:
    m = _TAG.match(region_name)
    return int(m.group(2)) if m else None


def decode(blob: bytes, tag: LayerTag) -> np.ndarray | None:
    dt = np.dtype(tag.dtype)
    size = int(np.prod(tag.shape, dtype=np.int64))
    if len(blob) != size * dt.itemsize:
        return None
    return np.frombuffer(blob, dtype=dt).reshape(tag.shape).copy()
