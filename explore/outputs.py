"""A sweep's outputs from its database: the results table (CSV, Parquet), the Pareto front, plots and one HTML page.

End-to-end time = NPU cycles / clock + CPU↔NPU transfers + the model's CPU part, whose time is *measured* once per
model on this host (``models.cpu_seconds``; not simulated). The Pareto front minimises end-to-end latency, the
MAC array's size (MACs per cycle) and local SRAM bytes, per model and target.
"""
from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

import numpy as np

from .store import Store

__all__ = ["results_frame", "pareto_mask", "write_outputs", "PARETO_AXES"]

PARETO_AXES = ("end_to_end_seconds", "macs_per_cycle", "sram_bytes")


def results_frame(db):
    """One row per point in sweep order: coordinates (``x.<axis>``), metrics, measured CPU time, end-to-end."""
    import pandas as pd
    with Store(db) as store:
        rows = store.rows()
        models = {(r[0], r[1]): (r[3], r[4]) for r in store.db.execute("SELECT * FROM models")}
    recs = []
    for pid, seq, model, sha, target, cname, coords, _cfg, status, error, metrics in rows:
        rec = {"seq": seq, "point_id": pid, "model": model, "target": target, "preset": cname, "status": status,
               "error": error}
        rec.update({f"x.{k}": v for k, v in json.loads(coords).items() if k not in ("preset", "target")})
        rec.update(json.loads(metrics))
        cpu, source = models.get((sha, target), (None, "not measured"))
        rec["cpu_seconds"] = cpu
        rec["cpu_source"] = source
        recs.append(rec)
    df = pd.DataFrame.from_records(recs)
    if df.empty:
        return df
    if "npu_seconds" in df:
        df["end_to_end_seconds"] = df["npu_seconds"] + df["transfer_seconds"] + df["cpu_seconds"].fillna(0.0)
        df["pareto"] = pareto_mask(df)
    return df


def pareto_mask(df) -> np.ndarray:
    """True where no other ok point of the same model and target is at least as good on every ``PARETO_AXES``
    and better on one."""
    mask = np.zeros(len(df), dtype=bool)
    ok = (df["status"] == "ok").to_numpy()
    for _, idx in df[ok].groupby(["model", "target"], sort=True).groups.items():
        pos = df.index.get_indexer(idx)
        v = df.loc[idx, list(PARETO_AXES)].to_numpy(dtype=float)
        le = (v[None, :, :] <= v[:, None, :]).all(axis=2)   # le[i, j]: j at least as good as i everywhere
        lt = (v[None, :, :] < v[:, None, :]).any(axis=2)
        dominated = (le & lt).any(axis=1)
        mask[pos[~dominated]] = True
    return mask


def _layers_frame(db, ids):
    import pandas as pd
    with Store(db) as store:
        q = ",".join("?" * len(ids))
        rows = list(store.db.execute(f"SELECT * FROM layers WHERE point_id IN ({q}) ORDER BY point_id, idx",
                                     list(ids))) if ids else []
    return pd.DataFrame(rows, columns=["point_id", "idx", "partition", "layer", "kind", "exclusive_cycles", "macs",
                                       "bytes", "roofline_cycles", "bound"])


def _figures(df, db):
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams["svg.hashsalt"] = "byoc-sweep"   # stable SVG ids: the same sweep gives the same files
    ok = df[df["status"] == "ok"]
    figs = {}
    # Pareto scatter: latency vs MAC array size, coloured by SRAM, the front circled.
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sc = ax.scatter(ok["macs_per_cycle"], ok["end_to_end_seconds"] * 1e3, c=ok["sram_bytes"] / 1024, s=14,
                    cmap="viridis", alpha=0.8)
    front = ok[ok["pareto"]]
    ax.scatter(front["macs_per_cycle"], front["end_to_end_seconds"] * 1e3, s=60, facecolors="none",
               edgecolors="red", label=f"Pareto front ({len(front)})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("MAC array size (MACs / cycle)")
    ax.set_ylabel("end-to-end latency (ms)")
    ax.set_title("latency vs MAC count vs SRAM")
    fig.colorbar(sc, ax=ax, label="local SRAM (KiB)")
    ax.legend(loc="upper right")
    figs["pareto"] = fig
    # Per-layer stacked bars: the Pareto points (fastest first, at most 12), one segment per layer.
    top = front.sort_values(["end_to_end_seconds", "seq"]).head(12)
    lay = _layers_frame(db, list(top["point_id"]))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if not lay.empty:
        names = list(dict.fromkeys(lay.sort_values("idx")["layer"]))
        cmap = plt.get_cmap("tab20")
        bottoms = np.zeros(len(top))
        for li, name in enumerate(names):
            vals = np.array([lay[(lay.point_id == p) & (lay.layer == name)]["exclusive_cycles"].sum()
                             for p in top["point_id"]], dtype=float)
            ax.bar(range(len(top)), vals, bottom=bottoms, color=cmap(li % 20), width=0.8,
                   label=name if li < 12 else None)
            bottoms += vals
        ax.set_xticks(range(len(top)), [f"#{s}" for s in top["seq"]], rotation=45)
        ax.legend(fontsize=6, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_xlabel("Pareto point (sweep #)")
    ax.set_ylabel("NPU cycles (per layer, exclusive)")
    ax.set_title("per-layer cycles of the Pareto points")
    figs["layers"] = fig
    # Roofline of the fastest point: MACs/cycle reached per layer against its MACs per byte moved.
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if len(top):
        best = top.iloc[0]
        lb = _layers_frame(db, [best["point_id"]])
        lb = lb[(lb.macs > 0) & (lb.bytes > 0) & (lb.exclusive_cycles > 0)]
        peak = float(best["macs_per_cycle"])
        bw = float(best["fm_bytes_per_cycle"])
        if len(lb):
            inten = lb.macs / lb.bytes
            ax.scatter(inten, lb.macs / lb.exclusive_cycles, s=16, label="layers")
            xs = np.logspace(np.log10(inten.min() / 2), np.log10(inten.max() * 2), 64)
            ax.plot(xs, np.full_like(xs, peak), "k--", label=f"peak {peak:g} MACs/cycle")
            if bw:
                ax.plot(xs, np.minimum(peak, xs * bw), "k:", label="memory roof")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.legend()
        ax.set_title(f"roofline of the fastest point (#{best['seq']}, {best['preset']})")
    ax.set_xlabel("arithmetic intensity (MACs / byte moved)")
    ax.set_ylabel("achieved MACs / cycle")
    fig.tight_layout()
    figs["roofline"] = fig
    return figs


def write_outputs(db, out_dir) -> list[str]:
    """results.csv, results.parquet, pareto.csv, {pareto,layers,roofline}.{png,svg} and sweep.html."""
    import matplotlib.pyplot as plt
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    df = results_frame(db)
    written = []
    df.to_csv(out / "results.csv", index=False)
    df.to_parquet(out / "results.parquet", index=False)
    written += [str(out / "results.csv"), str(out / "results.parquet")]
    if df.empty or "npu_seconds" not in df:
        return written
    front = df[df["pareto"]].sort_values(["model", "end_to_end_seconds", "seq"])
    front.to_csv(out / "pareto.csv", index=False)
    written.append(str(out / "pareto.csv"))
    figs = _figures(df, db)
    svgs, pngs = {}, {}
    for name, fig in figs.items():
        fig.savefig(out / f"{name}.png", dpi=110, metadata={"Software": None}, bbox_inches="tight")
        fig.savefig(out / f"{name}.svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
        b = io.BytesIO()
        fig.savefig(b, format="png", dpi=110, metadata={"Software": None}, bbox_inches="tight")
        pngs[name] = base64.b64encode(b.getvalue()).decode()
        svgs[name] = (out / f"{name}.svg").read_text(encoding="utf-8")
        plt.close(fig)
        written += [str(out / f"{name}.png"), str(out / f"{name}.svg")]
    (out / "sweep.html").write_text(_html(df, front, svgs, pngs), encoding="utf-8")
    written.append(str(out / "sweep.html"))
    return written


def _html(df, front, svgs, pngs) -> str:
    cols = [c for c in ("seq", "model", "preset", *[c for c in df.columns if c.startswith("x.")],
                        "end_to_end_seconds", "npu_seconds", "cpu_seconds", "cycles", "macs_per_cycle", "sram_bytes",
                        "sram_high_water", "offload_mac_share", "util_mac") if c in front.columns]
    ok = int((df["status"] == "ok").sum())
    svg_blocks = "\n".join(f'<figure id="fig-{k}">{v[v.find("<svg"):]}</figure>' for k, v in svgs.items()
                           if k != "pareto")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>byoc sweep</title>
<style>body{{font-family:sans-serif;margin:1.5em}} table{{border-collapse:collapse;font-size:12px}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}} figure{{margin:1em 0}}</style></head><body>
<h1>NPU design-space sweep</h1>
<p>{len(df)} point(s): {ok} ok, {len(df) - ok} error(s). End-to-end = simulated NPU time + transfers + the CPU
part's time <b>measured</b> on the host (not simulated).</p>
<h2>Pareto front (latency vs MAC count vs SRAM)</h2>
<img id="pareto-png" alt="Pareto scatter" src="data:image/png;base64,{pngs['pareto']}">
{front[cols].to_html(index=False, float_format=lambda v: f"{v:.6g}", border=0)}
<h2>Per-layer cycles and roofline</h2>
{svg_blocks}
<h2>Errors</h2>
{html.escape(str(int((df["status"] != "ok").sum())))} point(s) failed;
see the <code>error</code> column of results.csv.
<script>/* lets a headless browser test see that the embedded plot decoded */
window.addEventListener("load", () => {{ const i = document.getElementById("pareto-png");
  document.body.dataset.paretoWidth = String(i.complete ? i.naturalWidth : 0); }});</script>
</body></html>
"""
