"""FuseOps for the CPU backend, driven by the registry's fusion kinds (TVM's TOpPattern).

Rules, applied in one post-order sweep (deterministic, no recursion):

* an OUT_ELEMWISE_FUSABLE or COMM_REDUCE op (conv, dense, pooling, reductions) anchors a group; ELEMWISE and
  BROADCAST consumers of the same shape join it as an epilogue, so ``qnn.conv2d → nn.bias_add →
  qnn.requantize → clip`` is one kernel;
* ELEMWISE / BROADCAST / INJECTIVE ops fuse with injective producers into one loop nest (each element is
  pulled through the chain);
* OPAQUE ops stand alone.

A producer joins its consumer's group only when the consumer is its single user and it is not an output of the
function, so every group is a tree whose only externally visible value is its root (hence no cycles). Groups are
capped at ``MAX_GROUP_SIZE`` ops to keep each kernel's compile time bounded.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import CodegenError
from ...ir.expr import Call, Constant, Expr, Function, GlobalVar, Op, Tuple, TupleGetItem, Var
from ...ir.traversal import children, post_order
from ...ir.types import TensorType
from ...ops.registry import FusionKind
from .lowering import INJECTIVE_KINDS, ElementLowering, effective_kind, get_lowering

__all__ = ["FusedGroup", "fuse_groups", "MAX_GROUP_SIZE", "check_supported"]

MAX_GROUP_SIZE = 64


@dataclass(frozen=True, eq=False)
class FusedGroup:
    """One kernel's worth of ops."""
    root: Call                          # the value the group produces
    anchor: Call | None                 # the op with a whole-kernel lowering, if any
    element_nodes: tuple[Call, ...]     # element-lowered members in post-order (root last when no anchor)
    inputs: tuple[Expr, ...]            # external operands in first-use order
    data_pad: Call | None = None        # an nn.pad the anchor reads its argument 0 through (never materialised)

    @property
    def nodes(self) -> tuple[Call, ...]:
        return ((self.anchor,) if self.anchor is not None else ()) + self.element_nodes

    @property
    def name(self) -> str:
        return "_".join(n.op.name.replace(".", "_") for n in self.nodes[:4]) + ("_etc" if len(self.nodes) > 4 else "")


class _Builder:
    __slots__ = ("anchor", "members", "epilogue_ok", "absorbed", "data_pad")

    def __init__(self, anchor: Call | None, epilogue_ok: bool):
        self.absorbed = False
        self.anchor = anchor
        self.members: list[Call] = []
        self.epilogue_ok = epilogue_ok
        self.data_pad: Call | None = None

    def size(self) -> int:
        return len(self.members) + (1 if self.anchor is not None else 0)


def check_supported(func: Function, allow=None) -> None:
    """Raise one CodegenError listing every op without a CPU lowering and every unsupported construct.

    ``allow(node)`` accepts calls handled elsewhere (functions owned by another codegen)."""
    missing: dict[str, int] = {}
    other: list[str] = []
    from .host_ops import is_host_call
    for node in post_order(func.body, enter_functions=False):
        if isinstance(node, Call):
            if (allow is not None and allow(node)) or is_host_call(node):
                continue
            if isinstance(node.op, Op):
                if get_lowering(node.op.name) is None:
                    missing[node.op.name] = missing.get(node.op.name, 0) + 1
            else:
                other.append(f"call to {type(node.op).__name__} (inline or partition it first)")
        elif not isinstance(node, (Var, Constant, Tuple, TupleGetItem, Op, GlobalVar, Function)):
            other.append(f"{type(node).__name__} node")
    problems = [f"{op} ({n}x)" for op, n in missing.items()] + list(dict.fromkeys(other))
    if problems:
        refs = [p for p in problems if p.startswith("Ref")]
        hint = ("references (RefCreate/RefRead/RefWrite) run only in the reference interpreter: byoc.evaluate or "
                "relay.create_executor('debug')" if refs else "ops need a lowering in byoc/backend/llvm/lower_*.py")
        raise CodegenError("the CPU backend cannot lower: " + ", ".join(problems), hint=hint)


def _output_ids(body: Expr) -> set[int]:
    out: set[int] = set()
    stack = [body]
    while stack:
        e = stack.pop()
        out.add(id(e))
        if isinstance(e, Tuple):
            stack.extend(e.fields)
    return out


def fuse_groups(func: Function) -> list[FusedGroup]:
    """Partition ``func``'s op calls into fused groups, in a valid execution order."""
    order = post_order(func.body, enter_functions=False)
    users: dict[int, int] = {}
    for node in order:
        for c in dict.fromkeys(children(node)):  # a call using x twice is one user
            users[id(c)] = users.get(id(c), 0) + 1
    outputs = _output_ids(func.body)
    group_of: dict[int, _Builder] = {}
    roots: list[tuple[Call, _Builder]] = []  # (root call, group) in creation order
    root_of: dict[int, Call] = {}            # group id -> current root

    def fusable_producer(arg: Expr) -> _Builder | None:
        if not (isinstance(arg, Call) and isinstance(arg.op, Op)):
            return None
        if users.get(id(arg), 0) != 1 or id(arg) in outputs:
            return None
        g = group_of.get(id(arg))
        if g is None or root_of.get(id(g)) is not arg:
            return None
        return g

    from .host_ops import is_host_call
    for node in order:
        if not (isinstance(node, Call) and isinstance(node.op, Op)) or is_host_call(node):
            continue   # host ops run as their own executor steps (host_ops.py)
        kind = effective_kind(node)
        low = get_lowering(node)
        if kind not in INJECTIVE_KINDS:
            g = _Builder(node, epilogue_ok=kind in (FusionKind.OUT_ELEMWISE_FUSABLE, FusionKind.COMM_REDUCE))
            if getattr(low, "absorbs_pad", None) is not None and node.args:
                g.data_pad = _take_pad(node, low, fusable_producer, root_of)
        else:
            assert isinstance(low, ElementLowering)
            g = _join(node, kind, low, fusable_producer, group_of)
            g.members.append(node)
        group_of[id(node)] = g
        root_of[id(g)] = node
        roots.append((node, g))

    groups: list[FusedGroup] = []
    for root, g in roots:
        if g.absorbed or root_of[id(g)] is not root:
            continue  # absorbed into a later group
        groups.append(_finish(root, g))
    return groups


def _take_pad(node: Call, low, fusable_producer, root_of) -> Call | None:
    """Detach the nn.pad producing ``node``'s argument 0 from its group when the anchor can read through it:
    a pad alone in its group disappears; a pad at the end of an injective chain leaves the chain rooted at the
    pad's input (which is then materialised instead of the larger padded tensor)."""
    pad = node.args[0]
    if not (isinstance(pad, Call) and isinstance(pad.op, Op) and pad.op.name == "nn.pad"):
        return None
    g = fusable_producer(pad)
    if g is None or g.anchor is not None or not g.members or g.members[-1] is not pad:
        return None
    if not low.absorbs_pad(node, pad):
        return None
    g.members.pop()
    if not g.members:
        g.absorbed = True
    elif g.members[-1] is pad.args[0]:
        root_of[id(g)] = g.members[-1]
    else:
        g.members.append(pad)  # the pad's input is not the chain's last value: keep the group as it was
        return None
    return pad


def _join(node: Call, kind: FusionKind, low: ElementLowering, fusable_producer, group_of) -> _Builder:
    """The group ``node`` joins: an anchor's epilogue, a merge of injective producers, or a new group."""
    cands = []
    for i, a in enumerate(node.args):
        if i in low.const_args:
            continue
        g = fusable_producer(a)
        if g is not None and all(g is not c for _, c in cands):
            cands.append((i, g))
    out_t = node.checked_type
    if kind in (FusionKind.ELEMWISE, FusionKind.BROADCAST):
        for i, g in cands:
            if g.anchor is not None and g.epilogue_ok and g.size() + 1 <= MAX_GROUP_SIZE and \
                    isinstance(out_t, TensorType) and node.args[i].checked_type.shape == out_t.shape:
                return g
    injective = [g for _, g in cands if g.anchor is None]
    if not injective:
        return _Builder(None, False)
    base = injective[0]  # grow the first producer's group in place (a chain costs O(1) per op)
    if base.size() + 1 > MAX_GROUP_SIZE:
        return _Builder(None, False)
    for g in injective[1:]:
        if base.size() + g.size() + 1 <= MAX_GROUP_SIZE:
            base.members.extend(g.members)
            g.absorbed = True
            for m in g.members:
                group_of[id(m)] = base
    return base


def _finish(root: Call, g: _Builder) -> FusedGroup:
    member_ids = {id(m) for m in g.members}
    if g.anchor is not None:
        member_ids.add(id(g.anchor))
    # Members in post-order (their relative order in the sweep is already topological).
    inputs: dict[int, Expr] = {}
    for n in ((g.anchor,) if g.anchor is not None else ()) + tuple(g.members):
        for i, a in enumerate(n.args):
            if n is g.anchor and i == 0 and g.data_pad is not None:
                a = g.data_pad.args[0]
            if id(a) not in member_ids:
                if isinstance(a, Tuple):
                    for f in a.fields:
                        inputs.setdefault(id(f), f)
                else:
                    inputs.setdefault(id(a), a)
    return FusedGroup(root, g.anchor, tuple(g.members), tuple(inputs.values()), g.data_pad)
