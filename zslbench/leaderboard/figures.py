"""Figures (PNG + SVG) drawn from the same aggregated records as the tables.

Each figure is first reduced to a :class:`FigureSpec`: the exact data it plots, rounded and in a
canonical order, plus a hash of that data (and of :data:`STYLE_VERSION`). Drawing is a pure
function of the spec. The hash is embedded in both files (a PNG ``tEXt`` chunk, the SVG's Dublin
Core description), which is what ``--check`` compares: a figure is stale when its *data* changed,
not when another matplotlib or FreeType version rasterises the same data to different bytes.

Byte-for-byte determinism with one matplotlib: no dates in the SVG (``Date: None``), a fixed
``svg.hashsalt``, no software/time chunks in the PNG, the Agg backend, fonts from matplotlib's own
DejaVu Sans, and a canvas cut tight around what is drawn (``bbox_inches="tight"``). Names are drawn as plain text
(``text.parse_math`` off: a ``$`` in a name is a dollar sign, not mathtext).

Every method has one colour in every figure of the board (:func:`method_colors`); rows of one
method (other configurations) share it and differ by line style and marker. Legends sit below
the axes, never clipped: long names wrap, the columns are as many as fit and the canvas grows
downwards by the legend's height, as matplotlib measures it (:func:`_legend_below`; no table of
character widths), and the saved image is cut tight around what is drawn; the pages give no image size (the
browser takes it from the file). A figure of a synthetic or custom dataset says so in a line of its own above the
title. File names are unique per dataset and sweep (:func:`~zslbench.leaderboard.markup.unique_slugs`).
"""

from __future__ import annotations

import colorsys
import hashlib
import io
import json
import math
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from zslbench.leaderboard.collect import (
    SWEEP_METRICS,
    dataset_label,
    dataset_order,
    finite,
    is_number,
    measured,
    value_sort_key,
)
from zslbench.leaderboard.markup import unique_slugs
from zslbench.records.rows import value_text

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

#: Bump when the drawing code changes the look, so ``--check`` asks for a re-render.
STYLE_VERSION = 7
HASH_KEY = "zslbench-data-sha256"
DPI = 100
#: Inches, without the legend: 720 px wide PNGs, two to a row of the report at 1400 px.
SIZE = (7.2, 4.5)
WIDE = (12.0, 3.7)  # one panel per metric (sweeps), the full width of the report
#: Legend and diagram labels wrap at this many characters; matplotlib measures the rest.
WRAP = 48
MAX_COLUMNS = 6
CD_FONT = 8.5  # points, the critical-difference diagram's labels
#: Up to this many classes, the per-class figure names each class on its axis.
NAMED_CLASSES = 24
#: Distinct colours, one per method in the board's method order; more methods than this get
#: evenly spaced hues beyond it (still one colour each).
PALETTE = tuple(
    "#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e #8c564b #e377c2 #17becf #7f7f7f #bcbd22 "
    "#000080 #800000 #008080 #c51b7d #b15928 #66a61e #6a3d9a #e6ab02 #1b9e77 #fb9a99".split()
)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINESTYLES = ("-", "--", ":", "-.")
RC: dict[RcKeyType, Any] = {
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
    "text.parse_math": False,
}
TAGS = {
    "synthetic": "SYNTHETIC DATA: generated stand-in, not the real benchmark",
    "custom": "CUSTOM DATASET: the user's own data, not a benchmark",
}
TAG_COLOR = "#b00020"


@dataclass(frozen=True)
class FigureSpec:
    name: str  # file stem under figures/
    kind: str  # "real" | "synthetic" | "custom"
    figure: str  # "curves" | "h_vs_time" | "per_class" | "sweep" | "cd"
    title: str
    data: dict[str, Any]

    @property
    def data_sha256(self) -> str:
        about = {"style": STYLE_VERSION, "figure": self.figure, "title": self.title}
        body = json.dumps({**about, "kind": self.kind, "data": self.data}, sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()

    @property
    def files(self) -> tuple[str, str]:
        return (f"figures/{self.name}.png", f"figures/{self.name}.svg")

    @property
    def canvas(self) -> tuple[float, float]:
        """The canvas drawn on, in inches, before a legend grows it (the saved image is then cut
        tight around what is drawn)."""
        if self.figure == "cd":
            k = len(self.data["methods"])
            return WIDE[0], 1.4 + 0.1 * len(self.data["cliques"]) + 0.3 * math.ceil(k / 2)
        return WIDE if self.figure == "sweep" else SIZE

    @property
    def wide(self) -> bool:
        return self.figure in ("sweep", "cd")


def _r(value: Any, digits: int = 4) -> float | None:
    value = finite(value)
    return None if value is None else round(value, digits)


def method_colors(methods: list[str]) -> dict[str, str]:
    """One colour per method, in the given (board-wide) order."""
    out = {}
    for i, method in enumerate(methods):
        if i < len(PALETTE):
            out[method] = PALETTE[i]
        else:  # golden-ratio hues: never a repeat
            hue = ((i - len(PALETTE)) * 0.618033988749895) % 1.0
            r, g, b = colorsys.hsv_to_rgb(hue, 0.75, 0.75)
            out[method] = f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"
    return out


def _styles(sub: pd.DataFrame, colors: dict[str, str]) -> dict[Any, dict[str, str]]:
    """Colour (the method's), line style and marker (the row's place among its method's rows)."""
    out: dict[Any, dict[str, str]] = {}
    seen: dict[str, int] = {}
    for _, _, rk, method in sorted(
        set(zip(sub["method_rank"], sub["label"], sub["row_key"], sub["method"], strict=True)),
        key=lambda t: (t[0], t[1]),
    ):
        i = seen.get(method, 0)
        seen[method] = i + 1
        look = {"ls": LINESTYLES[i % len(LINESTYLES)], "marker": MARKERS[i % len(MARKERS)]}
        out[rk] = {"color": colors[method], **look}
    return out


def figure_specs(
    agg: pd.DataFrame,
    kind: str,
    sweeps: list[tuple[str, pd.DataFrame]],
    colors: dict[str, str],
    ranking: Any = None,
) -> list[FigureSpec]:
    """Every figure of one kind, in a fixed order; empty when there are no measured runs.
    ``sweeps`` are the page's sweep groups (``tables.sweep_groups``), ``ranking`` its
    :class:`~zslbench.leaderboard.ranks.Ranking` (or None)."""
    sub = measured(agg, kind)
    styles = _styles(agg[agg["kind"] == kind], colors) if not agg.empty else {}
    rows = list(sub.itertuples(index=False))
    names = sorted({g.dataset for g in rows}, key=dataset_order)
    specs = _dataset_specs(kind, rows, names, styles, "curves") + _time_specs(kind, rows, styles)
    specs += _dataset_specs(kind, rows, names, styles, "per_class")
    specs += _sweep_specs(kind, sweeps, colors)
    if ranking is not None:
        specs.append(_cd_spec(kind, ranking, colors))
    return specs


def _curve_series(g: Any) -> dict[str, Any] | None:
    runs = [
        {
            "seed": c["seed"],
            "A_U": [_r(u) for u in c["curve"][0]],
            "A_S": [_r(s) for s in c["curve"][1]],
            "op": [_r(c["op"][0]), _r(c["op"][1])],
        }
        for c in g.curves
    ]
    ausuc = [_r(g.AUSUC.mean, 2), _r(g.AUSUC.std, 2)]
    return {"runs": runs, "ausuc": ausuc, "n": int(g.n)} if runs else None


def _per_class_series(g: Any) -> dict[str, Any] | None:
    pts = []
    for e in g.per_class:
        share, acc = _r(100 * e["share"]), [_r(e["interval"].mean), _r(e["interval"].std)]
        if share is not None and acc[0] is not None:
            pts.append({"name": e["name"], "share": share, "acc": acc})
    return {"points": pts} if pts else None


def _dataset_specs(
    kind: str, rows: list[Any], names: list[str], styles: dict[Any, dict[str, str]], figure: str
) -> list[FigureSpec]:
    """One figure per dataset with a series per row that has something to plot."""
    stem, what, series_of = _PER_DATASET[figure]
    slugs = unique_slugs(names)
    specs = []
    for name in names:
        ds = dataset_label(name, kind)
        bodies = [(g, series_of(g)) for g in rows if g.dataset == name]
        series = [{"label": g.label, **styles[g.row_key], **b} for g, b in bodies if b is not None]
        if series:
            data, title = {"dataset": ds, "series": series}, f"{ds}: {what}"
            specs.append(FigureSpec(f"{kind}-{stem}-{slugs[name]}", kind, figure, title, data))
    return specs


#: Per-dataset figures: (file stem part, title after the dataset's name, the series of a row).
_PER_DATASET: dict[str, tuple[str, str, Callable[[Any], dict[str, Any] | None]]] = {
    "curves": ("curves", "seen–unseen accuracy curves", _curve_series),
    "per_class": (
        "per-class",
        "per-class unseen accuracy, classes by frequency",
        _per_class_series,
    ),
}


def _time_specs(kind: str, rows: list[Any], styles: dict[Any, dict[str, str]]) -> list[FigureSpec]:
    """H against training time, one figure per device."""
    devices = sorted({d for g in rows for d in g.times})
    device_slugs = unique_slugs(devices)
    specs = []
    for device in devices:
        points = [
            {
                "label": g.label,
                **styles[g.row_key],
                "dataset": dataset_label(g.dataset, kind),
                "train": [_r(t["median"]), _r(t["min"]), _r(t["max"])],
                "busy": t["busy_only"],
                "H": [_r(g.H.mean), _r(g.H.std)],
                "excluded": not (g.standard and g.compared),
            }
            for g in rows
            if (t := g.times.get(device)) is not None and _r(g.H.mean) is not None
        ]
        if points:
            order = sorted({p["dataset"] for p in points}, key=lambda d: dataset_order(d.lower()))
            suffix = "" if len(devices) == 1 else f"-{device_slugs[device]}"
            title = f"harmonic mean H vs training time on {device}"
            data = {"datasets": order, "points": points, "device": device}
            specs.append(FigureSpec(f"{kind}-h-vs-time{suffix}", kind, "h_vs_time", title, data))
    return specs


def _sweep_specs(
    kind: str, sweeps: list[tuple[str, pd.DataFrame]], colors: dict[str, str]
) -> list[FigureSpec]:
    """One figure per sweep and swept parameter, in the method's colour."""
    keys = [(t, param, g) for t, g in sweeps for param in sorted(g["sweep_map"].iloc[0])]
    slugs = unique_slugs(f"{title} {param}" for title, param, _ in keys)
    specs = []
    for title, param, group in keys:
        series = _sweep_series(kind, param, group)
        data = {"param": param, "series": series, "color": colors[group["method"].iloc[0]]}
        what = f"sweep of {title}: metrics vs {param}"
        specs.append(
            FigureSpec(f"{kind}-sweep-{slugs[f'{title} {param}']}", kind, "sweep", what, data)
        )
    return specs


def _cd_spec(kind: str, ranking: Any, colors: dict[str, str]) -> FigureSpec:
    title = f"average rank of {ranking.metric} across {len(ranking.datasets)} datasets (1 = best)"
    methods = [
        {"label": r.label, "color": colors[r.method], "rank": _r(x, 4)}
        for r, x in zip(ranking.rows, ranking.ranks, strict=True)
    ]
    cliques, n = [list(c) for c in ranking.cliques], len(ranking.datasets)
    data = {"methods": methods, "cd": _r(ranking.cd, 4), "alpha": ranking.alpha, "n": n}
    data["cliques"] = cliques
    return FigureSpec(f"{kind}-critical-difference", kind, "cd", title, data)


def _sweep_series(kind: str, param: str, group: pd.DataFrame) -> list[dict[str, Any]]:
    """Each metric against ``param``, one line per dataset (and per value of the other swept
    parameters), mean ± std over seeds."""
    lines: dict[str, list[dict[str, Any]]] = {}
    for e in group.itertuples(index=False):
        others = {k: v for k, v in e.sweep_map.items() if k != param}
        label = dataset_label(e.dataset, kind) + "".join(
            f", {k}={value_text(v)}" for k, v in sorted(others.items())
        )
        lines.setdefault(label, []).append(
            {
                "x": e.sweep_map[param],
                **{m: [_r(getattr(e, m).mean), _r(getattr(e, m).std)] for m in SWEEP_METRICS},
            }
        )
    return [
        {"label": label, "points": sorted(pts, key=lambda p: value_sort_key(p["x"]))}
        for label, pts in sorted(
            lines.items(), key=lambda kv: (dataset_order(kv[0].split(",")[0].lower()), kv[0])
        )
    ]


# --- legends -----------------------------------------------------------------------------------

BUSY_LABEL = "hollow: busy machine only"
OPERATING_POINT_LABEL = "calibrated operating point"


def _curve_label(s: dict[str, Any]) -> str:
    mean, std = s["ausuc"]
    if mean is None:
        return s["label"]
    return f"{s['label']}  (AUSUC {mean:.1f}" + (f" ± {std:.1f}" if std is not None else "") + ")"


def _width(renderer: Any, text: str, size: float) -> float:
    """The width of ``text`` (its widest line) in points, as matplotlib draws it now."""
    from matplotlib.font_manager import FontProperties

    font = FontProperties(size=size)
    lines = text.split("\n")
    return max(renderer.get_text_width_height_descent(x, font, False)[0] for x in lines) * 72 / DPI


def _legend_below(fig: Any, ax: Any) -> None:
    """The legend under the axes, outside them: it never covers a curve or a point. Long names
    wrap (:data:`WRAP`), the columns are as many as fit the canvas and the canvas grows by the
    legend's height, both as matplotlib measures the legend; the saved image is cut tight."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.container import ErrorbarContainer

    pairs = list(zip(*ax.get_legend_handles_labels(), strict=True))
    if not pairs:
        return
    # Methods (error bars) before the keys of markers (plain lines), as they were drawn.
    pairs.sort(key=lambda pair: not isinstance(pair[0], ErrorbarContainer))
    handles, labels = [h for h, _ in pairs], [textwrap.fill(label, WRAP) for _, label in pairs]
    renderer, (width, height) = FigureCanvasAgg(fig).get_renderer(), fig.get_size_inches()
    for ncols in range(min(MAX_COLUMNS, len(pairs)), 0, -1):
        legend = fig.legend(
            handles, labels, loc="outside lower center", ncols=ncols, columnspacing=1.5
        )
        box = legend.get_window_extent(renderer)
        if box.width <= (width - 0.3) * DPI or ncols == 1:
            break
        legend.remove()
    fig.set_size_inches(width, height + box.height / DPI + 0.15)


# --- drawing ----------------------------------------------------------------------------------


def draw(spec: FigureSpec) -> Any:
    """The matplotlib ``Figure`` of a spec (drawn, not saved), under :data:`RC`."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        # The critical-difference diagram places its one axes itself.
        fig = Figure(
            figsize=spec.canvas, dpi=DPI, layout=None if spec.figure == "cd" else "constrained"
        )
        FIGURES[spec.figure](fig, spec)
        title = spec.title if spec.kind == "real" else f"{TAGS[spec.kind]}\n{spec.title}"
        color = "black" if spec.kind == "real" else TAG_COLOR
        fig.suptitle(title, x=0.01, ha="left", fontsize=10.5, color=color)
    return fig


def render_figure(spec: FigureSpec) -> dict[str, bytes]:
    """``{"figures/x.png": bytes, "figures/x.svg": bytes}`` for one spec, deterministically."""
    import matplotlib

    fig = draw(spec)
    with matplotlib.rc_context(RC):
        png, svg = io.BytesIO(), io.BytesIO()
        sha = spec.data_sha256
        tight = {"bbox_inches": "tight", "pad_inches": 0.05}
        fig.savefig(png, format="png", dpi=DPI, metadata={"Software": None, HASH_KEY: sha}, **tight)
        if spec.figure != "cd":
            fig.set_layout_engine("none")  # laid out by the first save: the SVG reuses it
        about = {"Date": None, "Creator": "zslbench leaderboard"}
        about["Description"] = f"{HASH_KEY}={sha}"
        fig.savefig(svg, format="svg", metadata=about, **tight)
    png_name, svg_name = spec.files
    return {png_name: png.getvalue(), svg_name: svg.getvalue()}


def _draw_curves(fig: Any, spec: FigureSpec) -> None:
    ax = fig.add_subplot()
    for s in spec.data["series"]:
        label = _curve_label(s)
        for i, run in enumerate(s["runs"]):
            line = {"color": s["color"], "ls": s["ls"], "lw": 1.3, "alpha": 0.75}
            ax.plot(run["A_U"], run["A_S"], **line, label=label if i == 0 else None)
            if None not in run["op"]:
                point = {"marker": s["marker"], "ms": 6, "color": s["color"]}
                (u, a) = run["op"]
                ax.plot([u], [a], **point, markeredgecolor="black", markeredgewidth=0.7, ls="none")
    point = {"marker": "o", "ms": 6, "color": "white", "markeredgecolor": "black", "ls": "none"}
    ax.plot([], [], **point, label=OPERATING_POINT_LABEL)
    ax.set_xlabel("unseen-class accuracy A_U (%)")
    ax.set_ylabel("seen-class accuracy A_S (%)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    _legend_below(fig, ax)


def _draw_h_vs_time(fig: Any, spec: FigureSpec) -> None:
    """One point per row and dataset; the marker's shape is the dataset, its colour the method;
    a hollow marker is a time from runs on a busy machine only."""
    ax = fig.add_subplot()
    markers = {ds: MARKERS[i % len(MARKERS)] for i, ds in enumerate(spec.data["datasets"])}
    labelled: set[str] = set()
    for p in spec.data["points"]:
        (t, t_lo, t_hi), (h, h_std) = p["train"], p["H"]
        xerr, yerr = [[t - t_lo], [t_hi - t]], [[h_std or 0.0], [h_std or 0.0]]
        look = {"marker": markers[p["dataset"]], "ms": 7, "color": p["color"], "ecolor": p["color"]}
        look["markerfacecolor"] = "white" if p["busy"] else p["color"]
        label = p["label"] if p["label"] not in labelled else None
        bars = {"elinewidth": 0.8, "capsize": 2, "ls": "none", "label": label}
        ax.errorbar([t], [h], xerr=xerr, yerr=yerr, **look, **bars)
        labelled.add(p["label"])
    for ds, marker in markers.items():
        ax.plot([], [], marker=marker, color="#444444", ls="none", label=ds)
    if any(p["busy"] for p in spec.data["points"]):
        hollow = {"marker": "o", "color": "#444444", "markerfacecolor": "white", "ls": "none"}
        ax.plot([], [], **hollow, label=BUSY_LABEL)
    _plain_log_axis(ax)
    ax.set_xlabel("median training time per run, train (s, log scale)")
    ax.set_ylabel("harmonic mean H (%)")
    _legend_below(fig, ax)


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
    shares = _first_shares(series)
    order = sorted(shares, key=lambda name: (-shares[name], name))
    x_of = {name: i for i, name in enumerate(order)}
    top, ax = fig.subplots(2, 1, sharex=True, height_ratios=(1, 3))
    _share_panel(top, [shares[n] for n in order])
    named = len(order) <= NAMED_CLASSES
    look = {"ms": 5, "capsize": 2} if named else {"ms": 3.5, "capsize": 0}
    width = 0.7 / max(len(series), 1) if named else 0.0  # the methods spread in a class's column
    for i, s in enumerate(series):
        pts = [p for p in s["points"] if p["name"] in x_of]
        xs = [x_of[p["name"]] + (i - (len(series) - 1) / 2) * width for p in pts]
        yerr = [p["acc"][1] or 0.0 for p in pts] if named else None
        style = {"marker": s["marker"], "color": s["color"], "elinewidth": 0.8, "ls": "none"}
        ys = [p["acc"][0] for p in pts]
        ax.errorbar(xs, ys, yerr=yerr, **style, alpha=0.85, label=s["label"], **look)
    _class_axis(ax, order, named)
    _legend_below(fig, ax)


def _first_shares(series: list[dict[str, Any]]) -> dict[str, float]:
    """Each class's share of the unseen test set, as the first series that has it says."""
    shares: dict[str, float] = {}
    for s in series:
        for p in s["points"]:
            shares.setdefault(p["name"], p["share"])
    return shares


def _share_panel(ax: Any, shares: list[float]) -> None:
    ax.bar(range(len(shares)), shares, color="#9aa5b8", width=0.8)
    ax.set_ylabel("share of\nunseen (%)")
    if shares and min(shares) > 0 and max(shares) > 10 * min(shares):
        _plain_log_axis(ax, "y", subs=(1.0,))  # a short panel: decades only


def _class_axis(ax: Any, order: list[str], named: bool) -> None:
    if named:
        ax.set_xticks(range(len(order)), order, rotation=45, ha="right", fontsize=7.5)
        ax.set_xlabel("unseen classes, most frequent first")
    else:
        ax.set_xlabel(f"the {len(order)} unseen classes, most frequent first (rank)")
    ax.set_xlim(-0.7, len(order) - 0.3)
    ax.set_ylabel("per-class unseen accuracy (%)")
    ax.set_ylim(bottom=0)


@dataclass(frozen=True)
class _SweepAxis:
    """The x axis of a sweep: the swept values (numbers) or their categories (anything else)."""

    numeric: bool
    categories: list[str]
    ticks: list[Any]
    labels: list[str]
    log: bool

    @classmethod
    def of(cls, xs: list[Any]) -> _SweepAxis:
        if all(is_number(x) for x in xs):
            ticks = sorted(set(xs), key=value_sort_key)
            log = min(xs) > 0 and max(xs) >= 10 * min(xs)
            return cls(True, [], ticks, [value_text(x) for x in ticks], log)
        categories = sorted({json.dumps(x, sort_keys=True) for x in xs})
        labels = [value_text(json.loads(c)) for c in categories]
        return cls(False, categories, list(range(len(categories))), labels, False)

    def x(self, value: Any) -> Any:
        return value if self.numeric else self.categories.index(json.dumps(value, sort_keys=True))


def _draw_sweep(fig: Any, spec: FigureSpec) -> None:
    """The x axis is ticked at the swept values themselves (log-spaced when they span a decade)."""
    series = spec.data["series"]
    axis = _SweepAxis.of([p["x"] for s in series for p in s["points"]])
    axes = fig.subplots(1, len(SWEEP_METRICS), sharex=True)
    bars = {"ms": 5, "color": spec.data["color"], "capsize": 2, "elinewidth": 0.8, "lw": 1.2}
    for ax, metric in zip(axes, SWEEP_METRICS, strict=True):
        for i, s in enumerate(series):
            pts = [p for p in s["points"] if p[metric][0] is not None]
            xs, ys = [axis.x(p["x"]) for p in pts], [p[metric][0] for p in pts]
            yerr = [p[metric][1] or 0.0 for p in pts]
            style = {"marker": MARKERS[i % len(MARKERS)], "ls": LINESTYLES[i % len(LINESTYLES)]}
            ax.errorbar(xs, ys, yerr=yerr, **style, **bars, label=s["label"])
        _sweep_panel(ax, metric, spec.data["param"], axis)
    axes[0].set_ylabel("%")
    _legend_below(fig, axes[0])


def _sweep_panel(ax: Any, metric: str, param: str, axis: _SweepAxis) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator

    ax.set_title(metric, fontsize=9.5)
    ax.margins(y=0.15)
    low, high = ax.get_ylim()
    if high - low < 2.0:  # a flat line: keep it mid-panel
        ax.set_ylim((low + high) / 2 - 1.0, (low + high) / 2 + 1.0)
    ax.set_xlabel(param, fontsize=8)
    if axis.log:
        ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(axis.ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    rotation = 30 if not axis.numeric or len(axis.ticks) > 6 else 0
    ax.set_xticks(axis.ticks, axis.labels, rotation=rotation, fontsize=7.5)


def _draw_cd(fig: Any, spec: FigureSpec) -> None:
    """Demšar's critical-difference diagram: the rank axis (1 = best, on the left), each method a
    line down to its average rank, labelled at the side in its colour; the Nemenyi CD as a bar
    above the axis; thick bars join the methods that are not significantly different."""
    methods = spec.data["methods"]
    k = len(methods)
    cliques = spec.data["cliques"]
    ax = fig.add_axes((0.0, 0.0, 1.0, 0.8))
    ax.set_axis_off()
    lo, hi = 1.0, float(max(k, 2))
    # The rank axis takes the middle; the labels the sides, as wide as the widest label needs
    # (at most 45% of the canvas each, labels wrapped to 40%), so that no name leaves the canvas.
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer, width = FigureCanvasAgg(fig).get_renderer(), fig.get_figwidth() * 72.0
    labels = [textwrap.fill(f"{m['label']} ({m['rank']:.2f})", WRAP) for m in methods]
    widest = max((_width(renderer, label, CD_FONT) for label in labels), default=0.0)
    side = max(0.25, min(0.45, (widest + 16) / width + 0.04))
    span = (hi - lo) / (1.0 - 2 * side)
    ax.set_xlim(lo - side * span, hi + side * span)
    half = math.ceil(k / 2)
    top = 0.35 + 0.3 * len(cliques)  # the first label row sits below the clique bars
    rows = max(half, k - half)
    ax.set_ylim(-(top + rows), 1.7)
    ax.plot([lo, hi], [0, 0], color="black", lw=1.0)
    for tick in range(1, k + 1):
        ax.plot([tick, tick], [0, 0.12], color="black", lw=0.8)
        ax.text(tick, 0.22, str(tick), ha="center", va="bottom", fontsize=8)
    cd = spec.data["cd"]
    ax.plot([lo, lo + cd], [1.05, 1.05], color="black", lw=1.4)
    for x in (lo, lo + cd):
        ax.plot([x, x], [0.95, 1.15], color="black", lw=1.0)
    what = f"CD = {cd:.2f} (Nemenyi, α = {spec.data['alpha']:g}, {spec.data['n']} datasets)"
    ax.text(lo, 1.25, what, ha="left", va="bottom", fontsize=8)
    left_x, right_x = lo - 0.04 * span, hi + 0.04 * span
    for i, m in enumerate(methods):
        left = i < half
        level = -(top + (i if left else k - 1 - i))
        x = m["rank"]
        ax.plot([x, x, left_x if left else right_x], [0, level, level], color=m["color"], lw=1.2)
        at = left_x - 0.01 * span if left else right_x + 0.01 * span
        align = {"ha": "right" if left else "left", "va": "center", "fontsize": CD_FONT}
        ax.text(at, level, labels[i], color=m["color"], **align)
    for j, (first, last) in enumerate(cliques):
        y = -0.25 - 0.3 * j
        xs = [methods[first]["rank"] - 0.05, methods[last]["rank"] + 0.05]
        ax.plot(xs, [y, y], color="black", lw=3.0, solid_capstyle="butt")


#: How each figure a board draws (:attr:`FigureSpec.figure`) is drawn.
FIGURES: dict[str, Callable[[Any, FigureSpec], None]] = {
    "curves": _draw_curves,
    "h_vs_time": _draw_h_vs_time,
    "per_class": _draw_per_class,
    "sweep": _draw_sweep,
    "cd": _draw_cd,
}


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
