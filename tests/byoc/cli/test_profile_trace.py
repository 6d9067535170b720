"""``byoc profile --trace``: one inference's timeline that Perfetto can draw (issue 15, item 4).

Every (pid, tid) track must hold complete events that nest or are disjoint; the CPU kernels are on the host
track with their measured times, in execution order; an all-CPU model still gives a trace."""
from __future__ import annotations

import json
import random

import pytest

from cli_helpers import REPO, run_cli, run_json

VWW = REPO / "tests" / "data" / "mlcommons_tiny" / "vww_96_int8.tflite"


def partial_overlaps(events: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of complete events on one (pid, tid) that overlap without one containing the other, in integer
    nanoseconds as Perfetto reads them (llround(ts × 1000))."""
    tracks: dict[tuple, list[tuple[int, int, dict]]] = {}
    for e in events:
        if e.get("ph") == "X":
            s = round(e["ts"] * 1000)
            tracks.setdefault((e["pid"], e["tid"]), []).append((s, s + round(e["dur"] * 1000), e))
    bad = []
    for spans in tracks.values():
        spans.sort(key=lambda x: (x[0], -x[1]))
        stack: list[tuple[int, int, dict]] = []
        for s, t, e in spans:
            while stack and stack[-1][1] <= s:
                stack.pop()
            if stack and t > stack[-1][1]:
                bad.append((stack[-1][2], e))
            stack.append((s, t, e))
    return bad


def test_the_checker_finds_partial_overlaps():
    x = {"ph": "X", "pid": 0, "tid": 0}
    assert partial_overlaps([dict(x, ts=0, dur=2), dict(x, ts=1, dur=2)])
    assert not partial_overlaps([dict(x, ts=0, dur=3), dict(x, ts=1, dur=1), dict(x, ts=3, dur=1)])
    assert not partial_overlaps([dict(x, ts=0, dur=2), dict(x, ts=1, dur=2, tid=1)])


def test_channel_lanes_keep_each_lane_disjoint_with_as_few_lanes_as_spans_in_flight():
    from runtime.trace import channel_lanes
    rng = random.Random(7)
    for _ in range(50):
        spans = []
        for _ in range(rng.randrange(1, 60)):
            s = rng.randrange(0, 200)
            spans.append((s, s + rng.randrange(1, 30)))
        lanes = channel_lanes(spans)
        for k in set(lanes):
            mine = sorted(sp for sp, lane in zip(spans, lanes) if lane == k)
            assert all(a[1] <= b[0] for a, b in zip(mine, mine[1:])), mine
        # most spans in flight at once, by a sweep over the span ends (a touching end frees the lane first)
        points = sorted([(s, 1) for s, t in spans] + [(t, -1) for s, t in spans])
        depth = peak = 0
        for _, d in points:
            depth += d
            peak = max(peak, depth)
        assert max(lanes) + 1 == peak


@pytest.fixture(scope="module")
def vww_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "vww.json"
    doc = run_json("profile", VWW, "--target", "npu", "--trace", path)
    return doc, json.loads(path.read_text())


def test_vww_trace_has_no_partially_overlapping_events(vww_trace):
    _, trace = vww_trace
    assert partial_overlaps(trace["traceEvents"]) == []


def test_vww_trace_puts_dma_transfers_in_flight_on_one_track_per_channel(vww_trace):
    import npu_sim
    doc, trace = vww_trace
    ev = trace["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    dma_in = {k for k, v in threads.items() if v.startswith("dma_in")}
    channels = npu_sim.preset(doc["npu_config"]).overheads.dma_in_channels
    assert 1 < len(dma_in) <= channels          # the preset keeps several transfers in flight, and they are used
    commands = [e for e in ev if e["ph"] == "X" and threads.get((e["pid"], e["tid"]), "").split(" ")[0]
                in ("dma_in", "mac", "ppu", "dma_out")]
    assert len(commands) == sum(p["commands"] for p in doc["partitions"])


def test_vww_trace_holds_the_cpu_ops_in_execution_order(vww_trace):
    _, trace = vww_trace
    host = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 1 and "step" in e.get("args", {})]
    assert [e["args"]["step"] for e in host] == list(range(len(host)))
    starts = [round(e["ts"] * 1000) for e in host]
    ends = [s + round(e["dur"] * 1000) for s, e in zip(starts, host)]
    assert starts[0] == 0 and all(b == a for a, b in zip(ends, starts[1:]))   # one after another, left to right
    cpu = [e for e in host if e["args"]["device"] == "cpu"]
    ops = " ".join(e["args"]["ops"] for e in cpu)
    # the model's head stays on the CPU (qnn.softmax has no NPU rule); each kernel lasts its measured time
    assert "qnn.softmax" in ops and all(e["dur"] > 0 and e["args"]["measured_wall_ms"] > 0 for e in cpu)
    npu = [e for e in host if e["args"]["device"] == "npu"]
    assert npu and all(e["args"]["cycles"] > 0 for e in npu)


def test_an_all_cpu_model_gives_a_non_empty_trace(small_model, tmp_path):
    path = tmp_path / "cpu.json"
    p = run_cli("profile", small_model, "--min-partition-size", "100000", "--trace", path)
    assert p.returncode == 0, p.stderr
    assert "nothing is offloaded" in p.stdout
    ev = json.loads(path.read_text())["traceEvents"]
    spans = [e for e in ev if e["ph"] == "X"]
    assert spans and all(e["pid"] == 1 and e["args"]["device"] == "cpu" for e in spans)
    assert "qnn.conv2d" in " ".join(e["args"]["ops"] for e in spans)
    assert partial_overlaps(ev) == []


def test_the_host_track_adds_up_to_the_estimate_and_layers_tile_each_partition():
    import byoc
    from byoc.cli.common import load_model, make_inputs
    from byoc.partition import partition_for
    m = load_model(str(REPO / "tests" / "data" / "mlcommons_tiny" / "kws_ref_model.tflite"))
    pmod = partition_for("npu", m.mod, m.params)
    exe = byoc.build(pmod, target="npu,llvm", npu_config="ethos-u55-256-like")
    report = exe.profile(make_inputs(m.mod["main"]))
    ev = json.loads(report.trace_json())["traceEvents"]
    assert partial_overlaps(ev) == []
    steps = [e for e in ev if e["ph"] == "X" and e["pid"] == 1 and "step" in e.get("args", {})]
    assert len(steps) == len(exe.steps)
    total_ns = sum(round(e["dur"] * 1000) for e in steps)
    assert abs(total_ns - report.estimate.total_seconds * 1e9) <= 2 * len(steps)
    for n in report.nodes:
        if not n.on_device:
            continue
        part = next(e for e in ev if e["ph"] == "X" and e["pid"] > 1 and e["tid"] == 0 and e["name"] == f"@{n.name}")
        start, end = round(part["ts"] * 1000), round((part["ts"] + part["dur"]) * 1000)
        assert end - start == round(n.cycles / n.clock_hz * 1e9)
        layers = sorted((round(e["ts"] * 1000), round(e["dur"] * 1000)) for e in ev
                        if e["ph"] == "X" and e["pid"] == part["pid"] and e["tid"] == 1 and start <= e["ts"] * 1000 < end)
        assert layers[0][0] == start and all(a[0] + a[1] == b[0] for a, b in zip(layers, layers[1:]))
        assert layers[-1][0] + layers[-1][1] == end
