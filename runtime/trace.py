"""One modelled inference as a Chrome/Perfetto trace (``ProfileReport.trace_json()``; ``byoc profile --trace``).

The timeline is the estimate's (``runtime/profile.py``): the executor runs its steps one after another, so each
step starts where the previous one ended. A CPU kernel lasts its measured wall time; a device partition lasts the
copy of its inputs into the device's memory, its device time (cycles at the device clock) and the copy back.

Tracks (one Perfetto thread each) never hold partially overlapping slices, which Perfetto cannot draw:

* ``host`` process, ``executor`` thread: every step in execution order; a partition's slice holds its
  ``copy in``, ``run`` and ``copy out`` children.
* one process per device model (e.g. ``npu (ethos-u55-256-like)``): ``partitions``, ``layers`` (each layer's
  exclusive span, which tile the partition) and one thread per engine channel. An engine that keeps several
  commands in flight (DMA channels) gets as many threads as it ever has commands in flight ("dma_in ch0",
  "dma_in ch1", ...), each command on the lowest free channel.

Times are whole nanoseconds written as microseconds with three decimals, so a reader that rounds ``ts × 1000``
gets them back exactly and nesting survives the conversion.
"""
from __future__ import annotations

import heapq
import json

__all__ = ["trace_json", "trace_events", "channel_lanes"]

_HOST_PID = 1


def channel_lanes(spans: list[tuple[int, int]]) -> list[int]:
    """A lane per (start, end) span, spans of one lane disjoint (touching allowed): each span, taken by start,
    goes to the lowest lane free by then, so no more lanes are used than spans are ever in flight at once."""
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1], i))
    lane = [0] * len(spans)
    busy: list[tuple[int, int]] = []      # (end, lane) of the lanes in use
    free: list[int] = []
    used = 0
    for i in order:
        start, end = spans[i]
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            k = heapq.heappop(free)
        else:
            k, used = used, used + 1
        lane[i] = k
        heapq.heappush(busy, (end, k))
    return lane


def _us(ns: int) -> float:
    return ns / 1000


def _slice(name: str, pid: int, tid: int, start_ns: int, end_ns: int, cat: str = "", args: dict | None = None):
    e = {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": _us(start_ns), "dur": _us(max(end_ns - start_ns, 0))}
    if cat:
        e["cat"] = cat
    if args:
        e["args"] = args
    return e


def _meta(kind: str, pid: int, value, tid: int | None = None) -> dict:
    e = {"name": kind, "ph": "M", "pid": pid, "args": {"name" if kind.endswith("name") else "sort_index": value}}
    if tid is not None:
        e["tid"] = tid
    return e


def trace_events(report) -> list[dict]:
    """The trace's events (``report``: a ``runtime.profile.ProfileReport``)."""
    events = [_meta("process_name", _HOST_PID, "host"), _meta("process_sort_index", _HOST_PID, 0),
              _meta("thread_name", _HOST_PID, "executor", 0)]
    devices: dict[str, int] = {}            # device model -> pid
    device_runs: dict[str, list] = {}       # device model -> [(node, run start ns, clock)]
    t = 0
    for n in report.nodes:
        args = {"step": n.index, "device": n.device, "ops": " → ".join(n.ops), "macs": n.macs,
                "measured_wall_ms": round(n.wall_seconds * 1e3, 6)}
        if not n.on_device:
            end = t + max(1, round(n.wall_seconds * 1e9))
            label = n.name if n.device == "cpu" else f"@{n.name} ({n.device}, measured)"
            events.append(_slice(label, _HOST_PID, 0, t, end, "cpu" if n.device == "cpu" else n.device, args))
            t = end
            continue
        moved = n.bytes_in + n.bytes_out
        copy_in = round(n.transfer_seconds * 1e9 * n.bytes_in / moved) if moved else 0
        copy_out = round(n.transfer_seconds * 1e9) - copy_in
        run = round(n.cycles / n.clock_hz * 1e9)
        end = t + copy_in + run + copy_out
        events.append(_slice(f"@{n.name}", _HOST_PID, 0, t, end, n.device,
                             dict(args, cycles=n.cycles, bytes_in=n.bytes_in, bytes_out=n.bytes_out)))
        events.append(_slice("copy in", _HOST_PID, 0, t, t + copy_in, "transfer", {"bytes": n.bytes_in}))
        events.append(_slice(f"{n.device} run", _HOST_PID, 0, t + copy_in, t + copy_in + run, n.device,
                             {"cycles": n.cycles}))
        events.append(_slice("copy out", _HOST_PID, 0, t + copy_in + run, end, "transfer", {"bytes": n.bytes_out}))
        model = n.device_model or n.device
        devices.setdefault(model, len(devices) + _HOST_PID + 1)
        device_runs.setdefault(model, []).append((n, t + copy_in))
        t = end
    for model, pid in devices.items():
        events.extend(_device_events(model, pid, device_runs[model]))
    return events


def _device_events(model: str, pid: int, runs: list) -> list[dict]:
    events = [_meta("process_name", pid, model), _meta("process_sort_index", pid, pid),
              _meta("thread_name", pid, "partitions", 0), _meta("thread_sort_index", pid, 0, 0),
              _meta("thread_name", pid, "layers", 1), _meta("thread_sort_index", pid, 1, 1)]
    commands = []                               # (engine, start ns, end ns, slice)
    for n, t0 in runs:
        ns = 1e9 / n.clock_hz
        events.append(_slice(f"@{n.name}", pid, 0, t0, t0 + round(n.cycles * ns), n.device, {"cycles": n.cycles}))
        at = 0
        for layer in n.layers:                  # exclusive cycles: they tile the partition's run
            events.append(_slice(layer.name, pid, 1, t0 + round(at * ns), t0 + round((at + layer.cycles) * ns),
                                 layer.kind, {"kind": layer.kind, "exclusive_cycles": layer.cycles,
                                              "macs": layer.macs}))
            at += layer.cycles
        for c in n.timeline:
            commands.append((c.engine, t0 + round(c.start * ns), t0 + round(c.end * ns),
                             (c.name, c.layer, {"partition": n.name, "layer": c.layer, "start_cycle": c.start,
                                                "end_cycle": c.end})))
    engines: list[str] = []
    for c in commands:
        if c[0] not in engines:
            engines.append(c[0])
    tid = 2
    for engine in engines:
        mine = [c for c in commands if c[0] == engine]
        lanes = channel_lanes([(c[1], c[2]) for c in mine])
        count = max(lanes) + 1
        for k in range(count):
            name = engine if count == 1 else f"{engine} ch{k}"
            events += [_meta("thread_name", pid, name, tid + k), _meta("thread_sort_index", pid, tid + k, tid + k)]
        for c, k in zip(mine, lanes):
            label, layer, args = c[3]
            events.append(_slice(label, pid, tid + k, c[1], c[2], layer, args))
        tid += count
    return events


def trace_json(report) -> str:
    return json.dumps({"traceEvents": trace_events(report), "displayTimeUnit": "ns"}, separators=(",", ":"))
