"""Figures (PNG + SVG) drawn from the same aggregated records as the tables.

Each figure is first reduced to a :class:`FigureSpec`: the exact data it plots, rounded and in a
canonical order, plus a hash of that data (and of :data:`STYLE_VERSION`). Drawing is a pure
function of the spec. The hash is embedded in both files (a PNG ``tEXt`` chunk, the SVG's Dublin
Core description), which is what ``--check`` compares: a figure is stale when its *data* changed,
not when another matplotlib or FreeType version rasterises the same data to different bytes.

Byte-for-byte determinism with one matplotlib: no dates in the SVG (``Date: None``), a fixed
``svg.hashsalt``, no software/time chunks in the PNG, the Agg backend, fonts from matplotlib's own
DejaVu Sans, and a fixed canvas size (no ``bbox_inches="tight"``).

Legends sit outside the axes (they never cover a curve or a point), and a figure of a synthetic
or custom dataset says so in a line of its own above the title.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from zslbench.leaderboard.collect import (
    SWEEP_METRICS,
    dataset_label,
    dataset_order,
    measured,
    per_class,
    value_sort_key,
)

#: Bump when the drawing code changes the look, so ``--check`` asks for a re-render.
STYLE_VERSION = 2
HASH_KEY = "zslbench-data-sha256"
DPI = 100
SIZE = (7.2, 5.0)  # inches: 720 x 500 px PNGs, two to a row of the HTML report at 1400 px
SWEEP_SIZE = (12.0, 4.2)  # one panel per metric, the full width of the report
#: Up to this many classes, the per-class figure names each class on its axis.
NAMED_CLASSES = 24
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
           "#7f7f7f", "#bcbd22", "#393b79", "#ad494a", "#637939", "#7b4173", "#3182bd", "#e6550d")
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
TAGS = {"synthetic": "SYNTHETIC DATA: generated stand-in, not the real benchmark",
        "custom": "CUSTOM DATASET: the user's own data, not a benchmark"}
TAG_COLOR = "#b00020"


@dataclass(frozen=True)
class FigureSpec:
    name: str  # file stem under figures/
    kind: str  # "real" | "synthetic" | "custom"
    figure: str  # "curves" | "h_vs_time" | "per_class" | "sweep"
    title: str
    caption: str
    data: dict[str, Any]

    @property
    def data_sha256(self) -> str:
        body = json.dumps({"style": STYLE_VERSION, "figure": self.figure, "title": self.title,
                           "kind": self.kind, "data": self.data}, sort_keys=True, allow_nan=True)
        return hashlib.sha256(body.encode()).hexdigest()

    @property
    def files(self) -> tuple[str, str]:
        return (f"figures/{self.name}.png", f"figures/{self.name}.svg")

    @property
    def size(self) -> tuple[int, int]:
        w, h = SWEEP_SIZE if self.figure == "sweep" else SIZE
        return int(w * DPI), int(h * DPI)


def _r(value: Any, digits: int = 4) -> float | None:
    if value is None:
        return None
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def figure_specs(agg: pd.DataFrame, kind: str, sweeps: list[tuple[str, pd.DataFrame]]) -> list[FigureSpec]:
    """Every figure of one kind, in a fixed order; empty when there are no measured runs.
    ``sweeps`` are the page's sweep groups (``tables.sweep_groups``)."""
    sub = measured(agg, kind)
    specs: list[FigureSpec] = []
    colors = _colors(agg[agg["kind"] == kind] if not agg.empty else agg)
    datasets = sorted(set(sub["dataset"]) if not sub.empty else set(), key=dataset_order)
    for name in datasets:
        ds = dataset_label(name, kind)
        series = []
        for g in (g for g in sub.itertuples(index=False) if g.dataset == name):
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
                title=f"{ds}: seen–unseen accuracy curves",
                caption=(f"Seen–unseen accuracy curves on {ds} as the seen-class penalty γ varies (one thin "
                         "line per seed); the area under each is AUSUC. Markers: the calibrated operating "
                         "point (γ chosen on validation classes) of each seed."),
                data={"dataset": ds, "series": series}))
    points = []
    for g in sub.itertuples(index=False):
        if _r(g.train_median) is None or _r(g.H_mean) is None:
            continue  # no run left that was not on an oversubscribed machine
        points.append({"label": g.label, "color": colors[g.row_key], "dataset": dataset_label(g.dataset, kind),
                       "train": [_r(g.train_median), _r(g.train_min), _r(g.train_max)],
                       "H": [_r(g.H_mean), _r(g.H_std)]})
    if points:
        order = sorted({p["dataset"] for p in points}, key=lambda d: dataset_order(d.lower()))
        specs.append(FigureSpec(
            name=f"{kind}-h-vs-time", kind=kind, figure="h_vs_time",
            title="harmonic mean H vs training time",
            caption=("One point per method per dataset: mean H (error bar ± std over seeds) against the "
                     "MEDIAN `train` time (log scale; bar: fastest to slowest run). Runs taken on an "
                     "oversubscribed machine are left out. Up and to the left is better."),
            data={"datasets": order, "points": points}))
    for name in datasets:
        ds = dataset_label(name, kind)
        series = []
        for g in (g for g in sub.itertuples(index=False) if g.dataset == name):
            pts = [{"name": str(e["name"]), "share": _r(100 * e["share"]), "acc": [_r(e["mean"]), _r(e["std"])]}
                   for e in per_class(g.records)]
            pts = [p for p in pts if p["share"] is not None and p["acc"][0] is not None]
            if pts:
                series.append({"label": g.label, "color": colors[g.row_key], "points": pts})
        if series:
            specs.append(FigureSpec(
                name=f"{kind}-per-class-{_slug(name)}", kind=kind, figure="per_class",
                title=f"{ds}: per-class unseen accuracy, classes by frequency",
                caption=(f"Each column is one unseen class of {ds}, the most frequent on the left; top: its "
                         "share of the unseen test images, bottom: each method's GZSL accuracy on it (mean "
                         "over seeds). A method that ignores class imbalance does well only on the left."),
                data={"dataset": ds, "series": series}))
    for title, group in sweeps:
        specs += _sweep_specs(kind, title, group)
    return specs


def _sweep_specs(kind: str, title: str, group: pd.DataFrame) -> list[FigureSpec]:
    """One figure per swept parameter: each metric against the parameter, one line per dataset
    (and per value of the other swept parameters), mean ± std over seeds."""
    params = sorted(group["sweep_map"].iloc[0])
    specs = []
    for param in params:
        lines: dict[str, list[dict[str, Any]]] = {}
        for e in group.itertuples(index=False):
            others = {k: v for k, v in e.sweep_map.items() if k != param}
            label = dataset_label(e.dataset, kind) + "".join(f", {k}={v}" for k, v in sorted(others.items()))
            lines.setdefault(label, []).append(
                {"x": e.sweep_map[param], **{m: [_r(getattr(e, f"{m}_mean")), _r(getattr(e, f"{m}_std"))]
                                            for m in SWEEP_METRICS}})
        series = [{"label": label, "points": sorted(pts, key=lambda p: value_sort_key(p["x"]))}
                  for label, pts in sorted(lines.items(), key=lambda kv: (dataset_order(kv[0].split(",")[0].lower()),
                                                                          kv[0]))]
        specs.append(FigureSpec(
            name=f"{kind}-sweep-{_slug(title)}-{_slug(param)}", kind=kind, figure="sweep",
            title=f"sweep of {title}: metrics vs {param}",
            caption=(f"The sweep {title}: each metric (%) against {param}, one line per dataset; markers: mean "
                     "over seeds, error bars ± sample std."),
            data={"param": param, "series": series}))
    return specs


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _colors(sub: pd.DataFrame) -> dict[Any, str]:
    if sub.empty:
        return {}
    keys = sorted(set(zip(sub["method_rank"], sub["label"], sub["row_key"], strict=True)))
    return {rk: PALETTE[i % len(PALETTE)] for i, (_, _, rk) in enumerate(keys)}


# --- drawing ----------------------------------------------------------------------------------

def render_figure(spec: FigureSpec) -> dict[str, bytes]:
    """``{"figures/x.png": bytes, "figures/x.svg": bytes}`` for one spec, deterministically."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        w, h = spec.size
        fig = Figure(figsize=(w / DPI, h / DPI), dpi=DPI, layout="constrained")
        draw = {"curves": _draw_curves, "h_vs_time": _draw_h_vs_time, "per_class": _draw_per_class,
                "sweep": _draw_sweep}[spec.figure]
        draw(fig, spec)
        title = spec.title if spec.kind == "real" else f"{TAGS[spec.kind]}\n{spec.title}"
        fig.suptitle(title, x=0.01, ha="left", fontsize=10.5, color="black" if spec.kind == "real" else TAG_COLOR)
        png, svg = io.BytesIO(), io.BytesIO()
        fig.savefig(png, format="png", dpi=DPI, metadata={"Software": None, HASH_KEY: spec.data_sha256})
        fig.set_layout_engine("none")  # laid out by the first save: the SVG reuses it
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": "zslbench leaderboard",
                                                 "Description": f"{HASH_KEY}={spec.data_sha256}"})
    png_name, svg_name = spec.files
    return {png_name: png.getvalue(), svg_name: svg.getvalue()}


def _legend_below(fig: Any, ax: Any, columns: int = 3) -> None:
    """The legend under the axes, outside them: it never covers a curve or a point."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(columns, len(labels)))


def _draw_curves(fig: Any, spec: FigureSpec) -> None:
    ax = fig.add_subplot()
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
    _legend_below(fig, ax)


def _draw_h_vs_time(fig: Any, spec: FigureSpec) -> None:
    ax = fig.add_subplot()
    markers = {ds: MARKERS[i % len(MARKERS)] for i, ds in enumerate(spec.data["datasets"])}
    labelled: set[str] = set()
    for p in spec.data["points"]:
        (t, t_lo, t_hi), (h, h_std) = p["train"], p["H"]
        ax.errorbar([t], [h], xerr=[[t - t_lo], [t_hi - t]], yerr=[[h_std or 0.0], [h_std or 0.0]],
                    marker=markers[p["dataset"]], ms=7, color=p["color"], ecolor=p["color"], elinewidth=0.8,
                    capsize=2, ls="none", label=p["label"] if p["label"] not in labelled else None)
        labelled.add(p["label"])
    for ds, marker in markers.items():
        ax.plot([], [], marker=marker, color="#444444", ls="none", label=ds)
    _plain_log_axis(ax)
    ax.set_xlabel("median training time per run, `train` (s, log scale)")
    ax.set_ylabel("harmonic mean H (%)")
    _legend_below(fig, ax, columns=5)


def _plain_log_axis(ax: Any, which: str = "x", subs: tuple[float, ...] = (1.0, 2.0, 5.0)) -> None:
    """Log axis labelled 0.5, 1, 2, 5, ... rather than 2×10⁰."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _draw_per_class(fig: Any, spec: FigureSpec) -> None:
    """Classes side by side, most frequent first (evenly spaced whatever their frequencies: SUN's
    72 equally frequent classes do not collapse into one strip); their shares in a bar panel above."""
    series = spec.data["series"]
    shares: dict[str, float] = {}
    for s in series:
        for p in s["points"]:
            shares.setdefault(p["name"], p["share"])
    order = sorted(shares, key=lambda name: (-shares[name], name))
    x_of = {name: i for i, name in enumerate(order)}
    top, ax = fig.subplots(2, 1, sharex=True, height_ratios=(1, 3))
    top.bar(range(len(order)), [shares[n] for n in order], color="#9aa5b8", width=0.8)
    top.set_ylabel("share of\nunseen (%)")
    if shares and max(shares.values()) > 10 * min(shares.values()):
        _plain_log_axis(top, "y", subs=(1.0,))  # a short panel: decades only
    named = len(order) <= NAMED_CLASSES
    width = 0.7 / max(len(series), 1) if named else 0.0  # spread the methods within a class's column
    for i, s in enumerate(series):
        pts = [p for p in s["points"] if p["name"] in x_of]
        xs = [x_of[p["name"]] + (i - (len(series) - 1) / 2) * width for p in pts]
        ax.errorbar(xs, [p["acc"][0] for p in pts], yerr=[p["acc"][1] or 0.0 for p in pts] if named else None,
                    marker="o", ms=5 if named else 3.5, color=s["color"], elinewidth=0.8, capsize=2 if named else 0,
                    ls="none", alpha=0.85, label=s["label"])
    if named:
        ax.set_xticks(range(len(order)), order, rotation=45, ha="right", fontsize=7.5)
        ax.set_xlabel("unseen classes, most frequent first")
    else:
        ax.set_xlabel(f"the {len(order)} unseen classes, most frequent first (rank)")
    ax.set_xlim(-0.7, len(order) - 0.3)
    ax.set_ylabel("per-class unseen accuracy (%)")
    ax.set_ylim(bottom=0)
    _legend_below(fig, ax, columns=5)


def _draw_sweep(fig: Any, spec: FigureSpec) -> None:
    series = spec.data["series"]
    xs_all = [p["x"] for s in series for p in s["points"]]
    numeric = all(_numeric(x) for x in xs_all)
    categories = sorted({json.dumps(x) for x in xs_all}) if not numeric else []
    axes = fig.subplots(1, len(SWEEP_METRICS), sharex=True)
    for ax, metric in zip(axes, SWEEP_METRICS, strict=True):
        for i, s in enumerate(series):
            pts = [p for p in s["points"] if p[metric][0] is not None]
            xs = [p["x"] if numeric else categories.index(json.dumps(p["x"])) for p in pts]
            ax.errorbar(xs, [p[metric][0] for p in pts], yerr=[p[metric][1] or 0.0 for p in pts],
                        marker=MARKERS[i % len(MARKERS)], ms=5, color=PALETTE[i % len(PALETTE)], capsize=2,
                        elinewidth=0.8, lw=1.2, label=s["label"])
        ax.set_title(metric, fontsize=9.5)
        ax.margins(y=0.15)
        low, high = ax.get_ylim()
        if high - low < 2.0:  # a flat line: keep it mid-panel
            ax.set_ylim((low + high) / 2 - 1.0, (low + high) / 2 + 1.0)
        ax.set_xlabel(spec.data["param"], fontsize=8)
        if numeric and min(xs_all) > 0 and max(xs_all) >= 10 * min(xs_all):
            _plain_log_axis(ax)
        elif not numeric:
            ax.set_xticks(range(len(categories)), [json.loads(c) for c in categories], rotation=30)
    axes[0].set_ylabel("%")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6))


# --- reading the hash back (for --check) ------------------------------------------------------

def embedded_hash(name: str, data: bytes) -> str | None:
    """The data hash a figure file carries, or None when it has none (or is not a figure)."""
    if name.endswith(".png"):
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(data)) as image:
                return getattr(image, "text", {}).get(HASH_KEY)
        except (UnidentifiedImageError, OSError, ValueError):
            return None
    if name.endswith(".svg"):
        match = re.search(rf"{HASH_KEY}=([0-9a-f]{{64}})", data.decode("utf-8", "replace"))
        return match.group(1) if match else None
    return None
