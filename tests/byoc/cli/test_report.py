"""``byoc report``: a self-contained HTML file, checked as written and as rendered by headless Chromium."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from cli_helpers import run_json

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


@pytest.fixture(scope="module")
def report(small_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    doc = run_json("report", small_model, "--target", "npu", "-o", out)
    assert doc["ok"] is True and doc["bytes"] == out.stat().st_size
    return out


def test_report_is_self_contained(report):
    html = report.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    # no external resource of any kind: only the SVG namespace URI may appear
    urls = set(re.findall(r"(?:https?:)?//[^\s\"'<>)]+", html))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert not re.search(r"<(link|img|iframe)\b", html) and " src=" not in html
    assert html.count('class="node"') + html.count('class="cluster"') == \
        html.count("<title>", html.index('id="graph"'), html.index("</svg>"))
    assert 'data-placement="tvmgen_' in html and 'data-placement="cpu"' in html
    assert 'id="cycles-chart"' in html and 'class="roof"' in html and 'id="verdict"' in html


def _chromium(*args, tmp_path):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0", *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"chromium did not run: {e}")


def test_report_renders_in_headless_chromium(report, tmp_path):
    shot = tmp_path / "shot.png"
    p = _chromium("--window-size=1400,1000", f"--screenshot={shot}", report.as_uri(), tmp_path=tmp_path)
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    d = _chromium("--dump-dom", report.as_uri(), tmp_path=tmp_path)
    dom = d.stdout
    console = [line for line in (p.stderr + d.stderr).splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    assert 'data-ready="1"' in dom            # the inline script ran to its end
    assert dom.count('class="node"') >= 20 and 'id="cycles-chart"' in dom and "MATCH" in dom
    assert 'id="offload"' in dom and 'id="cpu-reasons"' in dom


def test_layout_of_a_100k_node_chain_with_skips():
    from byoc.report.graph import GraphNode, ModelGraph
    from byoc.report.layout import layered_layout
    n = 100_000
    nodes = tuple(GraphNode(i, f"t{i}", f"t{i}", "add", ("add",), (1, 4), "int8", "cpu") for i in range(n))
    edges = tuple((i, i + 1) for i in range(n - 1)) + tuple((i, i + 3) for i in range(0, n - 3, 10))
    lay = layered_layout(ModelGraph(nodes, edges), sweeps=2)
    assert lay.layer[n - 1] == n - 1 and lay.y[n - 1] > lay.y[0]
    assert all(lay.layer[b] > lay.layer[a] for a, b in edges[:1000])


def test_layout_separates_parallel_branches():
    from byoc.report.graph import GraphNode, ModelGraph
    from byoc.report.layout import layered_layout
    nodes = tuple(GraphNode(i, f"t{i}", f"t{i}", "op", ("op",), (), "", "cpu") for i in range(4))
    lay = layered_layout(ModelGraph(nodes, ((0, 1), (0, 2), (1, 3), (2, 3))))
    assert lay.layer == (0, 1, 1, 2) and lay.y[1] == lay.y[2] and lay.x[1] != lay.x[2]
