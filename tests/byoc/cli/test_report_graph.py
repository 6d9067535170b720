"""The report's graph and tables on real MLPerf Tiny models (issue 15, item 5): partitions drawn as boxes around
their ops, each op drawn where it runs, op kinds as users name them, short names with the full name on hover,
one reason per CPU tensor, tables that fit the page; with Graphviz and with the built-in fallback layout."""
from __future__ import annotations

import html as htmllib
import re

import numpy as np
import pytest

from cli_helpers import REPO, run_json
from test_report import _chromium

TINY = REPO / "tests" / "data" / "mlcommons_tiny"


def tflite_ops(path) -> list[tuple[str, str, tuple[int, ...]]]:
    """(builtin op, output tensor name, weight shape) per operator, read with the ``tflite`` package."""
    import tflite
    m = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    g = m.Subgraphs(0)
    codes = {v: k for k, v in tflite.BuiltinOperator.__dict__.items() if not k.startswith("_")}
    out = []
    for i in range(g.OperatorsLength()):
        op = g.Operators(i)
        name = codes[m.OperatorCodes(op.OpcodeIndex()).BuiltinCode()]
        w = tuple(int(d) for d in g.Tensors(op.Inputs(1)).ShapeAsNumpy()) if op.InputsLength() > 1 and \
            op.Inputs(1) >= 0 and not isinstance(g.Tensors(op.Inputs(1)).ShapeAsNumpy(), int) else ()
        out.append((name, g.Tensors(op.Outputs(0)).Name().decode(), w))
    return out


def parse_graph(text: str):
    """Nodes (attributes, x, y) and partition boxes (name -> x0, y0, x1, y1) of the report's SVG."""
    svg = text[text.index('id="graph"'):text.index("</svg>", text.index('id="graph"'))]
    nodes = []
    for m in re.finditer(r'<g class="node" ([^>]*)transform="translate\(([\d.]+),([\d.]+)\)"><title>([^<]*)</title>'
                         r'<rect width="([\d.]+)" height="([\d.]+)"[^>]*/><text[^>]*>([^<]*)</text>', svg):
        attrs = {k: htmllib.unescape(v) for k, v in re.findall(r'data-(\w+)="([^"]*)"', m.group(1))}
        nodes.append(dict(attrs, x=float(m.group(2)), y=float(m.group(3)), title=htmllib.unescape(m.group(4)),
                          w=float(m.group(5)), h=float(m.group(6)), text=htmllib.unescape(m.group(7))))
    boxes = {htmllib.unescape(m.group(1)): tuple(float(m.group(i)) for i in range(2, 6))
             for m in re.finditer(r'<g class="cluster" data-partition="([^"]*)"><title>[^<]*</title><rect '
                                  r'x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', svg)}
    boxes = {k: (x, y, x + w, y + h) for k, (x, y, w, h) in boxes.items()}
    assert nodes and svg.count('class="node"') == len(nodes)
    return nodes, boxes


def _report(model, out, env=None) -> str:
    doc = run_json("report", model, "--target", "npu", "--no-compare", "-o", out, env=env)
    assert doc["bytes"] > 0
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module", params=["dot", "builtin"])
def kws(request, tmp_path_factory):
    if request.param == "dot" and not __import__("shutil").which("dot"):
        pytest.skip("graphviz is not installed (apt-get install graphviz)")
    env = {"BYOC_REPORT_LAYOUT": request.param}
    text = _report(TINY / "kws_ref_model.tflite", tmp_path_factory.mktemp("kws") / "kws.html", env)
    return request.param, text


@pytest.fixture(scope="module")
def vww(tmp_path_factory):
    return _report(TINY / "vww_96_int8.tflite", tmp_path_factory.mktemp("vww") / "vww.html")


def test_the_layout_engine_is_the_one_asked_for(kws):
    engine, text = kws
    used = re.search(r'data-layout="([^"]*)"', text).group(1)
    assert ("graphviz" in used) == (engine == "dot"), used


def test_partitions_are_boxes_around_their_ops(kws):
    _, text = kws
    nodes, boxes = parse_graph(text)
    placed = {n["placement"] for n in nodes} - {"cpu", "input"}
    assert placed and set(boxes) == placed
    for n in nodes:
        inside = [p for p, (x0, y0, x1, y1) in boxes.items()
                  if x0 <= n["x"] and n["x"] + n["w"] <= x1 and y0 <= n["y"] and n["y"] + n["h"] <= y1]
        assert inside == ([n["placement"]] if n["placement"] in boxes else []), (n["name"], inside)


def _first_conv_nodes(text):
    nodes, _ = parse_graph(text)
    ops = tflite_ops(TINY / "kws_ref_model.tflite")
    # kws's first CONV_2D has a 10x4 kernel, outside the npu table's kernel sizes (1, 2, 3, 5, 7, 9)
    first = next((name, w) for op, name, w in ops if op == "CONV_2D")
    assert first[1][1:3] == (10, 4)
    mine = [n for n in nodes if n["name"] == first[0]]
    conv = [n for n in mine if "qnn.conv2d" in n["ops"]]
    assert len(conv) == 1 and conv[0]["placement"] == "cpu" and conv[0]["kind"].startswith("conv 10×4")
    assert "kernel height and width" in conv[0]["reason"]
    return conv[0], [n for n in mine if n is not conv[0]]


def test_a_cpu_convolution_and_its_unprofitable_requantize_are_drawn_on_the_cpu(kws):
    """By default the requantize after the CPU convolution stays on the CPU too: pulling the int32 accumulator
    across to the NPU costs more than it saves (the boundary rule), and the node says so."""
    _, text = kws
    conv, rest = _first_conv_nodes(text)
    assert "qnn.requantize" in conv["ops"] and "does not pay for itself" in conv["reason"]
    assert not [n for n in rest if n["placement"] != "cpu"]


def test_with_keep_unprofitable_the_offloaded_requantize_is_drawn_on_the_npu(tmp_path):
    doc = run_json("report", TINY / "kws_ref_model.tflite", "--target", "npu", "--no-compare", "--keep-unprofitable",
                   "-o", tmp_path / "kws.html", env={"BYOC_REPORT_LAYOUT": "builtin"})
    assert doc["bytes"] > 0
    _, rest = _first_conv_nodes((tmp_path / "kws.html").read_text(encoding="utf-8"))
    offloaded = [n for n in rest if n["placement"] != "cpu"]
    assert offloaded and all("qnn.conv2d" not in n["ops"] for n in offloaded)


@pytest.mark.parametrize("model", ["kws_ref_model", "vww_96_int8"])
def test_op_kinds_are_named_as_users_know_them(model, tmp_path):
    text = _report(TINY / f"{model}.tflite", tmp_path / "r.html")
    nodes, _ = parse_graph(text)
    expected = {"DEPTHWISE_CONV_2D": "depthwise conv", "FULLY_CONNECTED": "fully connected", "CONV_2D": "conv",
                "AVERAGE_POOL_2D": "average pool", "SOFTMAX": "softmax", "RESHAPE": "reshape"}
    checked = 0
    for op, name, w in tflite_ops(TINY / f"{model}.tflite"):
        if op not in expected:
            continue
        mine = [n for n in nodes if n["name"] == name and n["kind"] not in ("requantize", "pad")]
        assert mine, name
        assert mine[0]["kind"].split(" ")[0:len(expected[op].split())] == expected[op].split(), (op, mine[0]["kind"])
        if op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            assert f"{w[1]}×{w[2]}" in mine[0]["kind"]
        checked += 1
    assert checked >= 5
    assert not any(n["kind"].startswith("qnn.") or n["kind"] == "conv2d" for n in nodes)


def test_names_are_short_with_the_full_name_on_hover(vww):
    nodes, _ = parse_graph(vww)
    long_names = [n for n in nodes if len(n["name"]) > 40]
    assert long_names                                   # vww's TFLite names are long ';'-joined lists
    for n in nodes:
        assert n["title"].split("\n")[0] == n["name"]   # the full name on hover
        assert len(n["text"]) <= 30 and not n["text"].startswith("…")
        assert "ReadVariableOp" not in n["text"] and "resource" not in n["text"]
    # distinct layers keep distinct labels
    convs = [n["text"] for n in nodes if "conv" in n["kind"]]
    assert len(set(convs)) == len(convs)


def test_one_row_and_each_reason_once_per_cpu_tensor(kws):
    _, text = kws
    table = text[text.index('id="cpu-reasons"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table)[1:]
    names = [re.search(r'title="([^"]*)"|<span class="name">([^<]*)', r) for r in rows]
    keys = [m.group(1) or m.group(2) for m in names]
    assert len(keys) == len(set(keys)) and len(rows) >= 4
    for r in rows:
        reasons = re.findall(r"<li>(.*?)</li>", r) or [re.findall(r"<td>(.*?)</td>", r)[-1]]
        assert len(reasons) == len(set(reasons))
        assert all(a == b or a not in b for a in reasons for b in reasons)
    nodes, _ = parse_graph(text)
    for n in nodes:
        parts = [p for p in n["reason"].split("; npu.") if p]
        assert len(parts) == len(set(parts)), n["reason"]


_MEASURE = """<script>
(function(){
  var bad=[], vw=document.documentElement.clientWidth;
  document.querySelectorAll('details').forEach(function(d){d.open=true;});
  document.querySelectorAll('table').forEach(function(t){
    var box=t.closest('section').getBoundingClientRect(), r=t.getBoundingClientRect();
    if(r.right>box.right+1){bad.push((t.id||'table')+':'+Math.round(r.right)+'>'+Math.round(box.right));}
  });
  if(document.documentElement.scrollWidth>vw+1){bad.push('page:'+document.documentElement.scrollWidth);}
  document.body.setAttribute('data-overflow', bad.join(',')||'none');
})();
</script></body>"""


def test_tables_fit_a_narrow_page_in_chromium(vww, tmp_path):
    page = tmp_path / "measure.html"
    page.write_text(vww.replace("</body>", _MEASURE), encoding="utf-8")
    d = _chromium("--window-size=900,800", "--dump-dom", page.as_uri(), tmp_path=tmp_path)
    m = re.search(r'data-overflow="([^"]*)"', d.stdout)
    assert m, d.stderr[-2000:]
    assert m.group(1) == "none"


def test_graphviz_lays_out_a_1000_node_graph_quickly():
    import time
    from byoc.report.layout import dot_layout
    from byoc.report.graph import GraphNode, ModelGraph
    if not __import__("shutil").which("dot"):
        pytest.skip("graphviz is not installed")
    n = 1000
    nodes = tuple(GraphNode(i, f"t{i}", f"t{i}", "conv", ("qnn.conv2d",), (1, 8), "int8",
                            "cpu" if (i // 40) % 3 == 2 else f"p{i // 120}") for i in range(n))
    edges = tuple(sorted({(i, i + 1) for i in range(n - 1)} | {(i, i + 3) for i in range(0, n - 3, 3)}))
    t = time.perf_counter()
    lay = dot_layout(ModelGraph(nodes, edges))
    assert lay is not None and time.perf_counter() - t < 30
    assert all(lay.y[b] > lay.y[a] for a, b in edges)
    assert np.isfinite(lay.width) and len(lay.clusters) == len({x.placement for x in nodes} - {"cpu"})


@pytest.mark.parametrize("model", sorted(p.name for p in TINY.glob("*.tflite")) + ["mobilenet_v2"])
def test_every_op_is_drawn_in_the_partition_that_runs_it(model, small_model):
    """Per partition (and the CPU), the ops the graph draws there are the op calls of that partition's function
    in the partitioned module (a composite's pad named apart from its conv included)."""
    import argparse
    from collections import Counter

    from byoc.cli.cmd_model import partition_model
    from byoc.cli.common import load_model
    from byoc.ir.expr import Call, Op
    from byoc.ir.traversal import post_order
    from byoc.report.graph import model_graph
    from byoc.transform.infer_type import InferType
    m = load_model(str(small_model if model == "mobilenet_v2" else TINY / model))
    pmod, report = partition_model(m, "npu", argparse.Namespace())
    expected = Counter()
    for gv, func in pmod.sorted_items():
        where = gv.name_hint if func.attrs.get("Compiler") else "cpu" if gv.name_hint == "main" else None
        if where:
            expected[where] += sum(1 for n in post_order(func.body) if isinstance(n, Call) and isinstance(n.op, Op))
    drawn = Counter()
    for n in model_graph(InferType()(m.mod), report).nodes:
        if n.placement != "input":
            drawn[n.placement] += len(n.ops)
    assert drawn == expected
