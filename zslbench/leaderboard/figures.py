"""Figures (PNG + SVG) drawn from the same aggregated records as the tables.

Each figure is first reduced to a :class:`FigureSpec`: the exact data it plots, rounded and in a
canonical order, plus a hash of that data (and of :data:`STYLE_VERSION`). Drawing is a pure
function of the spec. The hash is embedded in both files (a PNG ``tEXt`` chunk, the SVG's Dublin
Core description), which is what ``--check`` compares: a figure is stale when its *data* changed,
not when another matplotlib or FreeType version rasterises the same data to different bytes.

Byte-for-byte determinism with one matplotlib: no dates in the SVG (``Date: None``), a fixed
``svg.hashsalt``, no software/time chunks in the PNG, the Agg backend, fonts from matplotlib's own
DejaVu Sans, and a fixed canvas size (no ``bbox_inches="tight"``).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import pandas as pd

from zslbench.leaderboard.collect import dataset_label, dataset_order, method_order, per_class

#: Bump when the drawing code changes the look, so ``--check`` asks for a re-render.
STYLE_VERSION = 1
HASH_KEY = "zslbench-data-sha256"
DPI = 100
SIZE = (7.2, 4.8)  # inches: 720 x 480 px PNGs
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
RC = {
    "svg.hashsalt": "zslbench-leaderboard",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.titlesize": 10.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8.0,
    "legend.frameon": False,
    "path.simplify": False,
}


@dataclass(frozen=True)
class FigureSpec:
    name: str  # file stem under figures/
    kind: str  # "real" | "synthetic"
    figure: str  # "curves" | "h_vs_time" | "per_class"
    title: str
    caption: str
    data: dict[str, Any]

    @property
    def data_sha256(self) -> str:
        body = json.dumps({"style": STYLE_VERSION, "figure": self.figure, "title": self.title,
                           "data": self.data}, sort_keys=True, allow_nan=True)
        return hashlib.sha256(body.encode()).hexdigest()

    @property
    def files(self) -> tuple[str, str]:
        return (f"figures/{self.name}.png", f"figures/{self.name}.svg")


def _r(value: Any, digits: int = 4) -> float | None:
    if value is None:
        return None
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _title(kind: str, text: str) -> str:
    return f"SYNTHETIC stand-in · {text}" if kind == "synthetic" else text


def figure_specs(agg: pd.DataFrame, kind: str) -> list[FigureSpec]:
    """Every figure of one kind, in a fixed order; empty when there are no measured runs."""
    sub = agg[agg["kind"] == kind] if not agg.empty else agg
    if sub.empty:
        return []
    colors = _colors(sub)
    specs: list[FigureSpec] = []
    datasets = sorted(set(sub["dataset"]), key=dataset_order)
    for name in datasets:
        groups = sorted((g for g in sub.itertuples(index=False) if g.dataset == name),
                        key=lambda g: (method_order(g.method), g.label))
        ds = dataset_label(name, kind)
        series = []
        for g in groups:
            runs = []
            for record in sorted(g.records, key=lambda r: r.seed):
                curve = record.curve or {}
                op = record.operating_point or {}
                if not curve.get("A_U"):
                    continue
                # Keep the record's order (γ ascending): sorting by A_U would hide a non-monotone curve.
                pairs = list(zip(curve["A_U"], curve["A_S"], strict=True))
                runs.append({"seed": record.seed,
                             "A_U": [_r(u) for u, _ in pairs], "A_S": [_r(s) for _, s in pairs],
                             "op": [_r(op.get("A_U")), _r(op.get("A_S"))]})
            if runs:
                series.append({"label": g.label, "color": colors[g.row_key], "runs": runs,
                               "ausuc": [_r(g.AUSUC_mean, 2), _r(g.AUSUC_std, 2)], "n": int(g.n)})
        if series:
            specs.append(FigureSpec(
                name=f"{kind}-curves-{_slug(name)}", kind=kind, figure="curves",
                title=_title(kind, f"{ds}: seen–unseen accuracy curves"),
                caption=(f"Seen–unseen accuracy curves on {ds} as the seen-class penalty γ varies (one thin "
                         "line per seed); the area under each is AUSUC. Markers: the calibrated operating "
                         "point (γ chosen on validation classes) of each seed."),
                data={"dataset": ds, "series": series}))
    points = []
    for g in sub.itertuples(index=False):
        if _r(g.train_mean) is None or _r(g.H_mean) is None:
            continue
        points.append({"label": g.label, "method": g.method, "color": colors[g.row_key],
                       "dataset": dataset_label(g.dataset, kind),
                       "train": [_r(g.train_mean), _r(g.train_std)], "H": [_r(g.H_mean), _r(g.H_std)]})
    points.sort(key=lambda p: (method_order(p["method"]), p["label"], dataset_order(p["dataset"])))
    if points:
        order = sorted({p["dataset"] for p in points}, key=dataset_order)
        specs.append(FigureSpec(
            name=f"{kind}-h-vs-time", kind=kind, figure="h_vs_time",
            title=_title(kind, "harmonic mean H vs training time"),
            caption=("One point per method per dataset: mean H against mean `train` time (log scale), "
                     "error bars ± std over seeds. Up and to the left is better."),
            data={"datasets": order, "points": points}))
    for name in datasets:
        ds = dataset_label(name, kind)
        series = []
        for g in sorted((g for g in sub.itertuples(index=False) if g.dataset == name),
                        key=lambda g: (method_order(g.method), g.label)):
            entries = per_class(g.records)
            pts = [{"name": str(e["name"]), "share": _r(100 * e["share"]),
                    "acc": [_r(e["mean"]), _r(e["std"])]} for e in entries]
            pts = [p for p in pts if p["share"] is not None and p["acc"][0] is not None]
            if pts:
                series.append({"label": g.label, "color": colors[g.row_key], "points": pts})
        if series:
            specs.append(FigureSpec(
                name=f"{kind}-per-class-{_slug(name)}", kind=kind, figure="per_class",
                title=_title(kind, f"{ds}: per-class unseen accuracy vs class frequency"),
                caption=(f"Each point is one unseen class of {ds}: its share of the unseen images (log scale) "
                         "against its GZSL accuracy, mean over seeds. A method that ignores class imbalance "
                         "does well only on the frequent classes on the right."),
                data={"dataset": ds, "series": series}))
    return specs


def _colors(sub: pd.DataFrame) -> dict[Any, str]:
    keys = sorted(set(sub["row_key"]), key=lambda rk: (method_order(rk[1]), str(rk)))
    return {rk: PALETTE[i % len(PALETTE)] for i, rk in enumerate(keys)}


# --- drawing ----------------------------------------------------------------------------------

def render_figure(spec: FigureSpec) -> dict[str, bytes]:
    """``{"figures/x.png": bytes, "figures/x.svg": bytes}`` for one spec, deterministically."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
        ax = fig.add_subplot()
        {"curves": _draw_curves, "h_vs_time": _draw_h_vs_time, "per_class": _draw_per_class}[spec.figure](ax, spec)
        ax.set_title(spec.title, color="#b00020" if spec.kind == "synthetic" else "black", loc="left")
        if spec.kind == "synthetic":
            fig.text(0.995, 0.995, "synthetic data: not the real benchmark", ha="right", va="top",
                     fontsize=7, color="#b00020", alpha=0.8)
        png, svg = io.BytesIO(), io.BytesIO()
        fig.savefig(png, format="png", dpi=DPI, metadata={"Software": None, HASH_KEY: spec.data_sha256})
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": "zslbench leaderboard",
                                                 "Description": f"{HASH_KEY}={spec.data_sha256}"})
    png_name, svg_name = spec.files
    return {png_name: png.getvalue(), svg_name: svg.getvalue()}


def _draw_curves(ax: Any, spec: FigureSpec) -> None:
    for s in spec.data["series"]:
        mean, std = s["ausuc"]
        label = s["label"] + (f"  (AUSUC {mean:.1f}" + (f" ± {std:.1f}" if std is not None else "") + ")"
                              if mean is not None else "")
        for i, run in enumerate(s["runs"]):
            ax.plot(run["A_U"], run["A_S"], color=s["color"], lw=1.3, alpha=0.75,
                    label=label if i == 0 else None)
            if None not in run["op"]:
                ax.plot([run["op"][0]], [run["op"][1]], marker="o", ms=6, color=s["color"],
                        markeredgecolor="black", markeredgewidth=0.7, ls="none")
    ax.plot([], [], marker="o", ms=6, color="white", markeredgecolor="black", ls="none",
            label="calibrated operating point")
    ax.set_xlabel("unseen-class accuracy A_U (%)")
    ax.set_ylabel("seen-class accuracy A_S (%)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right")


def _draw_h_vs_time(ax: Any, spec: FigureSpec) -> None:
    markers = {ds: MARKERS[i % len(MARKERS)] for i, ds in enumerate(spec.data["datasets"])}
    labelled: set[str] = set()
    for p in spec.data["points"]:
        (t, t_std), (h, h_std) = p["train"], p["H"]
        ax.errorbar([t], [h], xerr=[[t_std or 0.0], [t_std or 0.0]], yerr=[[h_std or 0.0], [h_std or 0.0]],
                    marker=markers[p["dataset"]], ms=7, color=p["color"], ecolor=p["color"], elinewidth=0.8,
                    capsize=2, ls="none", label=p["label"] if p["label"] not in labelled else None)
        labelled.add(p["label"])
    for ds, marker in markers.items():
        ax.plot([], [], marker=marker, color="#444444", ls="none", label=ds)
    _plain_log_axis(ax)
    ax.set_xlabel("training time per run, `train` (s, log scale)")
    ax.set_ylabel("harmonic mean H (%)")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))


def _plain_log_axis(ax: Any) -> None:
    """Log x axis labelled 0.5, 1, 2, 5, ... rather than 2×10⁰."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _draw_per_class(ax: Any, spec: FigureSpec) -> None:
    series = spec.data["series"]
    for s in series:
        pts = sorted(s["points"], key=lambda p: (p["share"], p["name"]))
        ax.errorbar([p["share"] for p in pts], [p["acc"][0] for p in pts],
                    yerr=[p["acc"][1] or 0.0 for p in pts], marker="o", ms=5, color=s["color"],
                    elinewidth=0.8, capsize=2, ls="none", alpha=0.85, label=s["label"])
    # Few classes (APY has 12): name them, once, at the best accuracy any method reaches.
    names: dict[str, tuple[float, float]] = {}
    for s in series:
        for p in s["points"]:
            x, y = p["share"], p["acc"][0]
            if p["name"] not in names or y > names[p["name"]][1]:
                names[p["name"]] = (x, y)
    if len(names) <= 15:
        for name, (x, y) in sorted(names.items()):
            ax.annotate(name, (x, y), xytext=(4, 4), textcoords="offset points", fontsize=7, color="#555555")
    _plain_log_axis(ax)
    ax.set_xlabel("class share of the unseen test images (%, log scale)")
    ax.set_ylabel("per-class unseen accuracy (%)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="best")


# --- reading the hash back (for --check) ------------------------------------------------------

def embedded_hash(name: str, data: bytes) -> str | None:
    """The data hash a figure file carries, or None when it has none (or is not a figure)."""
    if name.endswith(".png"):
        return _png_text(data).get(HASH_KEY)
    if name.endswith(".svg"):
        match = re.search(rf"{HASH_KEY}=([0-9a-f]{{64}})", data.decode("utf-8", "replace"))
        return match.group(1) if match else None
    return None


def _png_text(data: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return out
    pos = 8
    while pos + 8 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if ctype == b"tEXt" and b"\0" in body:
            key, value = body.split(b"\0", 1)
            out[key.decode("latin-1")] = value.decode("latin-1")
        elif ctype == b"zTXt" and b"\0" in body:
            key, rest = body.split(b"\0", 1)
            out[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
        elif ctype == b"iTXt" and b"\0" in body:
            key, rest = body.split(b"\0", 1)
            flag, _method = rest[0], rest[1]
            text = rest[2:].split(b"\0", 2)[-1]
            out[key.decode("latin-1")] = (zlib.decompress(text) if flag else text).decode("utf-8")
        pos += 12 + length
    return out
