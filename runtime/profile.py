"""``module.profile()``: per-node figures of one (or the best of several) runs, and the end-to-end estimate.

Every step of the graph executor is a node: a CPU kernel (its measured wall time) or a device partition (its
cycles from the device model, e.g. the NPU simulator's schedule, plus the bytes the host moves in and out of the
device's memory). The estimate of one inference on the real system is the sum, because the executor runs the
steps one after another:

    NPU time       Σ partition cycles / NPU clock
    CPU time       Σ measured wall time of the CPU kernels (and of partitions whose codegen has no device model)
    transfers      Σ bytes crossing the CPU↔NPU boundary / the NPU feature-map memory's bandwidth
                   (bytes per cycle × clock): the host copies each input in and each output out once

The simulator's own wall time is reported per node (``wall_seconds``) but never counted in the estimate.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LayerFigure", "DeviceSlice", "NodeProfile", "Estimate", "ProfileReport", "profile_module"]


@dataclass(frozen=True)
class LayerFigure:
    name: str
    kind: str
    cycles: int
    macs: int


@dataclass(frozen=True)
class DeviceSlice:
    """One device command of a partition's run: its engine, what it does, its layer, start and end cycle."""
    engine: str
    name: str
    layer: str
    start: int
    end: int


@dataclass(frozen=True)
class NodeProfile:
    index: int
    name: str
    device: str                   # "cpu" or the partition's compiler (e.g. "npu")
    ops: tuple[str, ...]          # ops of a CPU kernel; composites/ops of a partition
    wall_seconds: float           # host wall time of the step (for a simulated partition: simulation time)
    macs: int
    cycles: int | None = None     # device cycles (partitions with a device model)
    clock_hz: float | None = None
    bytes_in: int = 0             # host → device
    bytes_out: int = 0            # device → host
    transfer_seconds: float = 0.0
    layers: tuple[LayerFigure, ...] = ()
    device_model: str = ""                   # e.g. "npu (ethos-u55-256-like)"
    timeline: tuple[DeviceSlice, ...] = ()   # the device's commands (runners with ``device_timeline()``)

    @property
    def on_device(self) -> bool:
        return self.cycles is not None

    @property
    def device_seconds(self) -> float:
        """Time on the target system: cycles at the device clock, or the measured wall time on the CPU."""
        return self.cycles / self.clock_hz if self.cycles is not None and self.clock_hz else self.wall_seconds


@dataclass(frozen=True)
class Estimate:
    """One inference on the modelled system (NPU at its configured clock, CPU as measured on this host)."""
    npu_cycles: int
    npu_seconds: float
    cpu_seconds: float
    transfer_bytes: int
    transfer_seconds: float
    npu_macs: int
    total_macs: int

    @property
    def total_seconds(self) -> float:
        return self.npu_seconds + self.cpu_seconds + self.transfer_seconds

    @property
    def npu_mac_share(self) -> float:
        return self.npu_macs / self.total_macs if self.total_macs else 0.0

    def summary(self) -> str:
        return (f"estimate per inference {self.total_seconds * 1e3:.3f} ms = NPU {self.npu_seconds * 1e3:.3f} ms "
                f"({self.npu_cycles} cycles) + CPU {self.cpu_seconds * 1e3:.3f} ms + transfers "
                f"{self.transfer_seconds * 1e3:.3f} ms ({self.transfer_bytes} B); "
                f"{self.npu_mac_share * 100:.1f}% of {self.total_macs} MACs on the NPU")

    def to_json(self) -> dict:
        return {"total_seconds": self.total_seconds, "npu_seconds": self.npu_seconds, "npu_cycles": self.npu_cycles,
                "cpu_seconds": self.cpu_seconds, "transfer_seconds": self.transfer_seconds,
                "transfer_bytes": self.transfer_bytes, "npu_macs": self.npu_macs, "total_macs": self.total_macs,
                "npu_mac_share": self.npu_mac_share}


@dataclass(frozen=True)
class ProfileReport:
    nodes: tuple[NodeProfile, ...]
    runs: int
    estimate: Estimate

    @property
    def cpu_kernel_seconds(self) -> float:
        return sum(n.wall_seconds for n in self.nodes if n.device == "cpu")

    @property
    def host_seconds(self) -> float:
        return sum(n.wall_seconds for n in self.nodes)

    def table(self, layers: bool = True) -> str:
        """A plain-text table: one row per node (NPU layers indented beneath their partition), then totals."""
        headers = ["#", "node", "device", "wall ms", "cycles", "device ms", "bytes in", "bytes out", "MACs"]
        rows = []
        for n in self.nodes:
            rows.append([str(n.index), n.name, n.device, f"{n.wall_seconds * 1e3:.3f}",
                         "" if n.cycles is None else str(n.cycles), f"{n.device_seconds * 1e3:.3f}",
                         str(n.bytes_in) if n.on_device else "", str(n.bytes_out) if n.on_device else "",
                         str(n.macs)])
            if layers:
                for layer in n.layers:
                    ms = layer.cycles / n.clock_hz * 1e3 if n.clock_hz else 0.0
                    rows.append(["", "  " + layer.name, layer.kind, "", str(layer.cycles), f"{ms:.3f}", "", "",
                                 str(layer.macs)])
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
        left = {1, 2}

        def line(cells):
            return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

        out = [line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
        out.append(f"host wall time {self.host_seconds * 1e3:.3f} ms over {len(self.nodes)} nodes "
                   f"(best of {self.runs} run(s); simulation included)")
        out.append(self.estimate.summary())
        return "\n".join(out)

    def trace_json(self) -> str:
        """The modelled inference as a Chrome/Perfetto trace (``runtime/trace.py``): executor steps in order
        on the host track, each partition's device commands on one track per engine channel."""
        from .trace import trace_json
        return trace_json(self)

    def to_json(self) -> dict:
        return {"runs": self.runs, "host_seconds": self.host_seconds,
                "nodes": [{"index": n.index, "name": n.name, "device": n.device, "ops": list(n.ops),
                           "wall_seconds": n.wall_seconds, "cycles": n.cycles, "device_seconds": n.device_seconds,
                           "bytes_in": n.bytes_in, "bytes_out": n.bytes_out, "macs": n.macs,
                           "layers": [{"name": x.name, "kind": x.kind, "cycles": x.cycles, "macs": x.macs}
                                      for x in n.layers]} for n in self.nodes],
                "estimate": self.estimate.to_json()}


def _macs(calls) -> int:
    from byoc.ops.macs import macs_of
    return sum(macs_of(c) for c in calls)


def _partition_ops(func) -> tuple[tuple[str, ...], list]:
    from byoc.ir.expr import Call, Function, Op
    from byoc.ir.traversal import post_order
    names, calls = [], []
    for n in post_order(func.body):
        if isinstance(n, Call):
            if isinstance(n.op, Op):
                calls.append(n)
            elif isinstance(n.op, Function) and "Composite" in n.op.attrs:
                names.append(str(n.op.attrs["Composite"]))
    if not names:
        names = [c.op.name for c in calls]
    return tuple(names), calls


def profile_module(executable, inputs: dict | None = None, repeat: int = 1) -> ProfileReport:
    """Run ``executable`` (a CpuExecutable) ``repeat`` times timing each step; keep each step's best time."""
    from byoc.backend.llvm.executor import KernelStep
    repeat = max(1, int(repeat))
    best = None
    for i in range(repeat):
        _, times = executable.run_timed(inputs if i == 0 else None)
        best = times if best is None else [min(a, b) for a, b in zip(best, times)]
    nodes = []
    for i, (step, wall) in enumerate(zip(executable.steps, best or [])):
        if isinstance(step, KernelStep):
            calls = step.group.nodes if step.group is not None else ()
            nodes.append(NodeProfile(i, step.name, "cpu", tuple(c.op.name for c in calls), wall, _macs(calls)))
            continue
        ops, calls = _partition_ops(step.func)
        bytes_in = sum(int(a.nbytes) for a in _arrays(step.inputs))
        bytes_out = sum(int(a.nbytes) for a in step.outputs)
        prof = step.run.device_profile() if hasattr(step.run, "device_profile") else None
        if prof is None:
            nodes.append(NodeProfile(i, step.name, step.compiler, ops, wall, _macs(calls)))
            continue
        layers = tuple(LayerFigure(x.name, x.kind, x.cycles, x.macs) for x in prof.layers)
        timeline = tuple(DeviceSlice(*x) for x in step.run.device_timeline()) \
            if hasattr(step.run, "device_timeline") else ()
        moved = bytes_in + bytes_out
        nodes.append(NodeProfile(i, step.name, step.compiler, ops, wall, _macs(calls), int(prof.cycles),
                                 float(prof.clock_hz), bytes_in, bytes_out,
                                 moved / prof.transfer_bytes_per_second if prof.transfer_bytes_per_second else 0.0,
                                 layers, str(prof.device), timeline))
    return ProfileReport(tuple(nodes), repeat, _estimate(nodes))


def _arrays(values) -> list:
    out, stack = [], list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        else:
            out.append(v)
    return out


def _estimate(nodes: list[NodeProfile]) -> Estimate:
    dev = [n for n in nodes if n.on_device]
    return Estimate(npu_cycles=sum(n.cycles for n in dev),
                    npu_seconds=sum(n.device_seconds for n in dev),
                    cpu_seconds=sum(n.wall_seconds for n in nodes if not n.on_device),
                    transfer_bytes=sum(n.bytes_in + n.bytes_out for n in dev),
                    transfer_seconds=sum(n.transfer_seconds for n in dev),
                    npu_macs=sum(n.macs for n in dev), total_macs=sum(n.macs for n in nodes))
