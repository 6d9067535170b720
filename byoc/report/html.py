"""The HTML page: one file, inline CSS, inline SVG and a few lines of inline script, no external resource."""
from __future__ import annotations

from html import escape

__all__ = ["page", "table_html", "Raw", "name_cell"]


class Raw(str):
    """A table cell that is already HTML (not escaped again)."""


def name_cell(full: str, short: str) -> Raw:
    """A shortened name with the full one on hover."""
    if full == short:
        return Raw(f'<span class="name">{escape(full)}</span>')
    return Raw(f'<span class="name" title="{escape(full)}">{escape(short)}</span>')

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#212121;background:#fafafa}
header{background:#263238;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#cfd8dc}main{padding:8px 24px 40px}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;margin:16px 0;padding:12px 16px}
h2{font-size:16px;margin:4px 0 10px}table{border-collapse:collapse;font-size:13px;max-width:100%}
th,td{border-bottom:1px solid #eee;padding:3px 10px;text-align:left;vertical-align:top;overflow-wrap:break-word}
section{overflow-x:auto}header p{overflow-wrap:anywhere}span.name{font-family:ui-monospace,monospace;font-size:12px}
ul.why{margin:0;padding-left:1.1em}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{font-weight:600;padding:8px 12px;border-radius:4px;overflow-wrap:anywhere}.ok{background:#e8f5e9;color:#1b5e20}
.bad{background:#ffebee;color:#b71c1c}.warn{background:#fff8e1;color:#6d4c00}.muted{color:#757575}
.graphbox{display:flex;gap:16px;align-items:flex-start}
.scroll{overflow:auto;max-height:75vh;border:1px solid #eee;flex:1}
#details{width:320px;min-height:120px;font-size:13px;border-left:3px solid #90a4ae;padding:4px 10px;
 word-break:break-word}
svg text{font:11px system-ui,sans-serif;text-anchor:middle}svg text.sub{font-size:10px}
svg text.clabel{text-anchor:start;font-weight:600;font-size:12px}
svg .edge{fill:none;stroke:#9e9e9e;stroke-width:1.2}svg .edge.skip{stroke:#78909c;stroke-dasharray:4 2}svg .node{cursor:pointer}
svg .node.sel rect{stroke:#ff1744;stroke-width:3}svg.chart text{text-anchor:start}
svg.chart text.lbl{text-anchor:end;font-size:11px}svg.chart text.axis{font-size:11px;fill:#555}
svg.chart text.val{font-size:10px;fill:#444}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;height:12px;
 border:1px solid #333;vertical-align:-2px;margin-right:4px}
"""

# Hovering or clicking a node shows its details beside the graph (the SVG <title> is the tooltip fallback).
_SCRIPT = """
(function(){
  var panel=document.getElementById('details');
  if(!panel){return;}
  var sel=null;
  function show(g){
    var d=g.dataset, rows=[['tensor',d.name],['kind',d.kind],['ops',d.ops],['output',d.shape],['placement',d.where]];
    if(d.macs&&d.macs!=='0'){rows.push(['MACs',Number(d.macs).toLocaleString()]);}
    if(d.reason){rows.push(['why on the CPU',d.reason]);}
    panel.textContent='';
    rows.forEach(function(r){
      var p=document.createElement('div'), b=document.createElement('b');
      b.textContent=r[0]+': '; p.appendChild(b); p.appendChild(document.createTextNode(r[1])); panel.appendChild(p);
    });
  }
  document.querySelectorAll('#graph .node').forEach(function(g){
    g.addEventListener('mouseenter',function(){show(g);});
    g.addEventListener('click',function(){ if(sel){sel.classList.remove('sel');} sel=g; g.classList.add('sel'); show(g);});
  });
  document.body.setAttribute('data-ready','1');
})();
"""


def _cell(v) -> str:
    return v if isinstance(v, Raw) else escape(str(v))


def table_html(headers, rows, num_cols=(), css_id: str = "") -> str:
    idattr = f' id="{css_id}"' if css_id else ""
    head = "".join(f'<th class="num">{escape(str(h))}</th>' if i in num_cols else f"<th>{escape(str(h))}</th>"
                   for i, h in enumerate(headers))
    body = []
    for r in rows:
        cells = "".join(f'<td class="num">{_cell(v)}</td>' if i in num_cols else f"<td>{_cell(v)}</td>"
                        for i, v in enumerate(r))
        body.append(f"<tr>{cells}</tr>")
    return f"<table{idattr}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def page(title: str, subtitle: str, sections: list[tuple[str, str, str]]) -> str:
    """``sections``: (element id, heading, inner HTML)."""
    body = "".join(f'<section id="{sid}"><h2>{escape(h)}</h2>{inner}</section>' for sid, h, inner in sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
            f"<header><h1>{escape(title)}</h1><p>{escape(subtitle)}</p></header><main>{body}</main>"
            f"<script>{_SCRIPT}</script></body></html>\n")
