"""Boundaries that pay for themselves: a layer without multiply-accumulate work at a partition's entry (it reads
only what crosses from the CPU, e.g. an int32 accumulator tensor into a lone requantize) is offloaded only when
its device cycles plus the extra traffic it pulls across the boundary cost less than the host time it saves.

Used by ``partition_for(boundary_rule=True)`` (the CLI's default) for every target whose codegen has a device
model (the NPU simulator: ``runtime.npu_codegen.SimulatorCodegen``). The device side is the simulator's own
schedule of the layer compiled alone on the codegen's default configuration; transfers are charged as the
runtime's profile charges them (bytes / the feature-map memory's bandwidth, ``runtime/profile.py``): keeping
the layer on the CPU moves its result across instead of its inputs. The host side is a stated model,
``HostModel``, and every reason names it and its numbers. Memory-only ops (reshape, squeeze, expand_dims) are
aliases on both sides and never judged.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.expr import Call, Function, Op
from ..ir.traversal import post_order
from ..ir.types import TensorType, TupleType

__all__ = ["HostModel", "DEFAULT_HOST", "EdgeCost", "edge_costs", "MEMORY_ONLY_OPS"]


@dataclass(frozen=True)
class HostModel:
    """The CPU a partition would otherwise run on. Defaults: a Cortex-M55-class host with Helium, clocked like
    the NPU (an Ethos-U system's usual setup): 4 int8 MACs per cycle in convolutions and matrix products
    (CMSIS-NN), and 1 output element per cycle for every other unit (requantize, add, pool, copies)."""
    name: str = "Cortex-M55-class host"
    macs_per_cycle: float = 4.0
    elements_per_cycle: float = 1.0
    clock_hz: float | None = None      # None: the device's clock

    def cycles(self, units: list[Call]) -> float:
        """Host cycles of placed units (composite calls or op calls): a unit with multiply-accumulates costs its
        MACs, any other unit its output elements once (the host fuses a composite's elementwise tail)."""
        from ..ops.macs import macs_of
        total = 0.0
        for u in units:
            inner = op_calls(u.op) if isinstance(u.op, Function) else [u]
            m = sum(macs_of(c) for c in inner)
            if m:
                total += m / self.macs_per_cycle
            else:
                total += _elements(getattr(u, "_checked_type", None)) / self.elements_per_cycle
        return total


DEFAULT_HOST = HostModel()


def _elements(t) -> int:
    if isinstance(t, TensorType):
        return int(np.prod(t.shape, dtype=np.int64))
    if isinstance(t, TupleType):
        return sum(_elements(f) for f in t.fields)
    return 0


def _nbytes(t) -> int:
    if isinstance(t, TensorType):
        return int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize
    if isinstance(t, TupleType):
        return sum(_nbytes(f) for f in t.fields)
    return 0


def op_calls(func: Function) -> list[Call]:
    """The op calls of a partition, composite bodies included (each once)."""
    out, stack, seen = [], [func.body], set()
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        for m in post_order(e, enter_functions=False):
            if isinstance(m, Call):
                if isinstance(m.op, Op):
                    out.append(m)
                elif isinstance(m.op, Function):
                    stack.append(m.op.body)
    return out


@dataclass(frozen=True)
class EdgeCost:
    """One unit (composite or op) at a partition's entry: reading only partition inputs and constants."""
    unit: Call
    label: str
    device_cycles: int
    device_clock_hz: float
    bytes_in: int          # inputs only this unit reads: they stop crossing when the unit stays on the CPU
    bytes_out: int         # its result: it crosses instead
    int32_bytes_in: int
    bandwidth: float       # bytes per second
    host_cycles: float
    host_clock_hz: float

    @property
    def offload_seconds(self) -> float:
        return self.device_cycles / self.device_clock_hz + (self.bytes_in - self.bytes_out) / self.bandwidth

    @property
    def host_seconds(self) -> float:
        return self.host_cycles / self.host_clock_hz

    @property
    def pays(self) -> bool:
        return self.offload_seconds < self.host_seconds

    def reason(self, host: HostModel) -> str:
        wide = f" ({self.int32_bytes_in:,} B of it int32)" if self.int32_bytes_in else ""
        return (f"{self.label} at the partition's entry stays on the CPU: its boundary does not pay for itself: "
                f"{self.device_cycles:,} NPU cycles + moving {self.bytes_in:,} B in{wide} instead of its "
                f"{self.bytes_out:,} B result = {self.offload_seconds * 1e6:.1f} us, more than the "
                f"{self.host_seconds * 1e6:.1f} us it takes on the host ({host.name}: {host.macs_per_cycle:g} MACs "
                f"or {host.elements_per_cycle:g} element(s) per cycle, {self.host_clock_hz / 1e6:g} MHz)")


# Ops that only reinterpret a tensor's shape: free on the host, removed by Vela, never moved by the rule.
MEMORY_ONLY_OPS = frozenset({"reshape", "squeeze", "expand_dims"})


def _units(func: Function) -> list[Call]:
    """The placed units of a partition: composite calls and bare op calls, composite bodies not entered."""
    def kids(n):
        from ..ir.traversal import children
        return () if isinstance(n, Function) and "Composite" in n.attrs else children(n)
    return [n for n in post_order(func.body, child_fn=kids)
            if isinstance(n, Call) and (isinstance(n.op, Op) or isinstance(n.op, Function))]


def edge_costs(func: Function, symbol: str, codegen, host: HostModel = DEFAULT_HOST) -> list[EdgeCost]:
    """Cost figures of every unit without multiply-accumulate work that reads only the partition's inputs (and
    constants): each compiled on its own on the simulator."""
    from ..errors import ByocError
    from ..ir.expr import Constant, Var
    from ..ops.macs import macs_of
    from npu_sim.simulator import collect_stats, schedule
    params = set(func.params)
    units = _units(func)
    uses: dict[Var, int] = {}
    for u in units:
        for a in u.args:
            if a in params:
                uses[a] = uses.get(a, 0) + 1
    try:
        cfg = codegen.config(None)
    except ByocError:
        return []
    fm = cfg.area(cfg.placement.feature_maps)
    bandwidth = float(fm.bytes_per_cycle) * float(cfg.clock_hz)
    clock = float(host.clock_hz or cfg.clock_hz)
    out = []
    for u in units:
        if not u.args or not all(a in params or isinstance(a, Constant) for a in u.args):
            continue
        if not any(a in params for a in u.args):
            continue
        inner = op_calls(u.op) if isinstance(u.op, Function) else [u]
        if any(macs_of(c) for c in inner) or all(c.op.name in MEMORY_ONLY_OPS for c in inner):
            continue
        new_params = [Var(f"edge_in{i}", getattr(a, "_checked_type", None) or a.type_annotation)
                      for i, a in enumerate(u.args) if a in params]
        it = iter(new_params)
        args = [next(it) if a in params else a for a in u.args]
        call = Call(u.op, args, u.attrs, u.span)
        if u._checked_type is not None:  # type: ignore[attr-defined]
            call._set_checked_type(u._checked_type)  # type: ignore[attr-defined]
        mini = Function(new_params, call, None, func.attrs)
        try:
            prog = codegen.program(mini, f"{symbol}_edge", cfg)
        except ByocError:
            continue
        cycles = int(collect_stats(prog, schedule(prog)).total_cycles)
        sole = [a for a in u.args if a in params and uses.get(a, 0) == 1]
        types = [getattr(a, "_checked_type", None) or a.type_annotation for a in sole]
        label = str(u.op.attrs["Composite"]) if isinstance(u.op, Function) else u.op.name
        out.append(EdgeCost(u, label, cycles, float(cfg.clock_hz), sum(_nbytes(t) for t in types),
                            _nbytes(getattr(u, "_checked_type", None)),
                            sum(_nbytes(t) for t in types if isinstance(t, TensorType) and t.dtype == "int32"),
                            bandwidth, host.cycles([u]), clock))
    return out
