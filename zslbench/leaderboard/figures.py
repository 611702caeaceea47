"""Figures (PNG + SVG) drawn from the same aggregated records as the tables.

Each figure is first reduced to a :class:`FigureSpec`: the exact data it plots, rounded and in a
canonical order, plus a hash of that data (and of :data:`STYLE_VERSION`). Drawing is a pure
function of the spec. The hash is embedded in both files (a PNG ``tEXt`` chunk, the SVG's Dublin
Core description), which is what ``--check`` compares: a figure is stale when its *data* changed,
not when another matplotlib or FreeType version rasterises the same data to different bytes.

Byte-for-byte determinism with one matplotlib: no dates in the SVG (``Date: None``), a fixed
``svg.hashsalt``, no software/time chunks in the PNG, the Agg backend, fonts from matplotlib's own
DejaVu Sans, and a canvas cut tight around what is drawn (``savefig.bbox: tight``). Names are
drawn as plain text (``text.parse_math`` off: a ``$`` in a name is a dollar sign, not mathtext).

Every figure is laid out by matplotlib's constrained layout: no sizes are measured by hand, and
the pages give no image size (the browser takes it from the file). Every method has one colour
in every figure of the board (:func:`method_colors`); rows of one method (other configurations)
share it and differ by line style and marker. Legends sit below the axes, never over them: long
names wrap, the columns are as many as fit and the canvas grows downwards by the legend's height
(:func:`_legend_below`). A figure of a synthetic or custom dataset says so in a line of its own
above the title. File names are unique per dataset and sweep
(:func:`~zslbench.leaderboard.markup.unique_slugs`).
"""

from __future__ import annotations

import colorsys
import hashlib
import io
import json
import math
import re
import textwrap
from dataclasses import dataclass
from itertools import cycle
from typing import Any

import pandas as pd

from zslbench.leaderboard import collect
from zslbench.leaderboard.collect import SWEEP_METRICS, dataset_label, dataset_order, measured
from zslbench.leaderboard.markup import unique_slugs
from zslbench.records.rows import assignments, value_text

#: Bump when the drawing code changes the look, so ``--check`` asks for a re-render.
STYLE_VERSION = 8
HASH_KEY = "zslbench-data-sha256"
DPI = 100
#: Inches, without the legend: 720 px wide PNGs, two to a row of the report at 1400 px.
SIZE = (7.2, 4.5)
WIDE = (12.0, 3.7)  # one panel per metric (sweeps), the full width of the report
#: Legend and diagram labels wrap at this many characters; matplotlib measures the rest.
WRAP = 48
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
KEY_COLOR = "#444444"  # legend keys that stand for no one method (datasets, hollow markers)
BUSY = "hollow: busy machine only"
#: Error bars thinner than their line, and no line between the points of a scatter.
BARS = {"elinewidth": 0.8, "ls": "none"}
#: Drawn over matplotlib's own defaults (a user's matplotlibrc changes nothing): DejaVu Sans.
RC: dict[str, Any] = {
    "svg.hashsalt": "zslbench-leaderboard",
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.05,
    "font.size": 9.0,
    "figure.titlesize": 10.5,
    "axes.titlesize": 9.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "errorbar.capsize": 2.0,
    "lines.markersize": 5.0,
    "legend.fontsize": 8.0,
    "legend.frameon": False,
    "legend.columnspacing": 1.5,
    "path.simplify": False,
    "text.parse_math": False,
}
#: Each row's colour, line style and marker, by row key.
Styles = dict[Any, dict[str, str]]
#: A page's sweeps: (title, its runs) each, as ``tables.sweep_groups`` gives them.
Sweeps = list[tuple[str, pd.DataFrame]]
TAGS = {
    "synthetic": "SYNTHETIC DATA: generated stand-in, not the real benchmark",
    "custom": "CUSTOM DATASET: the user's own data, not a benchmark",
}


@dataclass(frozen=True)
class FigureSpec:
    name: str  # file stem under figures/
    kind: str  # "real" | "synthetic" | "custom"
    figure: str  # "curves" | "h_vs_time" | "per_class" | "sweep" | "cd"
    title: str
    data: dict[str, Any]

    @property
    def data_sha256(self) -> str:
        body = [STYLE_VERSION, self.figure, self.title, self.kind, self.data]
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    @property
    def files(self) -> tuple[str, str]:
        return (f"figures/{self.name}.png", f"figures/{self.name}.svg")

    @property
    def wide(self) -> bool:
        return self.figure in ("sweep", "cd")


def _r(value: Any, digits: int = 4) -> float | None:
    value = collect.finite(value)
    return None if value is None else round(value, digits)


def _mean_std(interval: Any, digits: int = 4) -> list[float | None]:
    return [_r(interval.mean, digits), _r(interval.std, digits)]


def method_colors(methods: list[str]) -> dict[str, str]:
    """One colour per method, in the given (board-wide) order; beyond :data:`PALETTE`,
    golden-ratio hues (never a repeat)."""
    extra = range(len(methods) - len(PALETTE))
    hues = (colorsys.hsv_to_rgb(i * 0.618033988749895 % 1.0, 0.75, 0.75) for i in extra)
    more = ["#" + "".join(f"{int(c * 255):02x}" for c in rgb) for rgb in hues]
    return dict(zip(methods, [*PALETTE, *more], strict=False))


def _look(i: int) -> dict[str, str]:
    """The ``i``-th line style and marker, for lines that share a colour."""
    return {"ls": LINESTYLES[i % len(LINESTYLES)], "marker": MARKERS[i % len(MARKERS)]}


def _styles(sub: pd.DataFrame, colors: dict[str, str]) -> Styles:
    """Colour (the method's), line style and marker (the row's place among its method's rows)."""
    rows = sub.drop_duplicates("row_key").sort_values(["method_rank", "label"])
    places = rows.groupby("method").cumcount()
    return {
        key: {"color": colors[method], **_look(i)}
        for key, method, i in zip(rows["row_key"], rows["method"], places, strict=True)
    }


def figure_specs(
    agg: pd.DataFrame, kind: str, sweeps: Sweeps, colors: dict[str, str], ranking: Any = None
) -> list[FigureSpec]:
    """Every figure of one kind, in a fixed order; empty when there are no measured runs.
    ``sweeps`` are the page's sweep groups (``tables.sweep_groups``), ``ranking`` its
    :class:`~zslbench.leaderboard.ranks.Ranking` (or None)."""
    sub = measured(agg, kind)
    rows = list(sub.itertuples(index=False))
    styles = _styles(sub, colors) if rows else {}
    specs = _dataset_specs(kind, rows, styles, "curves") + _time_specs(kind, rows, styles)
    specs += _dataset_specs(kind, rows, styles, "per_class")
    specs += _sweep_specs(kind, sweeps, colors)
    return specs + ([_cd_spec(kind, ranking, colors)] if ranking is not None else [])


def _curve_series(g: Any) -> dict[str, Any] | None:
    """A row's curves (one per seed) and its label with its AUSUC, as the legend shows it."""
    runs = [
        {
            "A_U": [_r(u) for u in c["curve"][0]],
            "A_S": [_r(s) for s in c["curve"][1]],
            "op": [_r(c["op"][0]), _r(c["op"][1])],
        }
        for c in g.curves
    ]
    (mean, std), label = _mean_std(g.AUSUC, 2), g.label
    if mean is not None:
        label += f"  (AUSUC {mean:.1f}" + (f" ± {std:.1f})" if std is not None else ")")
    return {"runs": runs, "label": label} if runs else None


def _per_class_series(g: Any) -> dict[str, Any] | None:
    pts = [
        {"name": e["name"], "share": _r(100 * e["share"]), "acc": _mean_std(e["interval"])}
        for e in g.per_class
    ]
    pts = [p for p in pts if p["share"] is not None and p["acc"][0] is not None]
    return {"points": pts} if pts else None


#: Per-dataset figures: the series of a row, the title after the dataset's name.
_PER_DATASET = {
    "curves": (_curve_series, "seen–unseen accuracy curves"),
    "per_class": (_per_class_series, "per-class unseen accuracy, classes by frequency"),
}


def _dataset_specs(kind: str, rows: list[Any], styles: Styles, figure: str) -> list[FigureSpec]:
    """One figure per dataset with a series per row that has something to plot."""
    series_of, about = _PER_DATASET[figure]
    names = sorted({g.dataset for g in rows}, key=dataset_order)
    slugs, specs = unique_slugs(names), []
    for name in names:
        ds = dataset_label(name, kind)
        bodies = [(g, series_of(g)) for g in rows if g.dataset == name]
        series = [{"label": g.label, **styles[g.row_key], **b} for g, b in bodies if b is not None]
        if series:
            stem, title = f"{kind}-{figure.replace('_', '-')}-{slugs[name]}", f"{ds}: {about}"
            specs.append(FigureSpec(stem, kind, figure, title, {"dataset": ds, "series": series}))
    return specs


def _time_specs(kind: str, rows: list[Any], styles: Styles) -> list[FigureSpec]:
    """H against training time, one figure per device."""
    devices = sorted({d for g in rows for d in g.times})
    slugs, specs = unique_slugs(devices), []
    for device in devices:
        points = [
            {
                "label": g.label,
                **styles[g.row_key],
                "dataset": dataset_label(g.dataset, kind),
                "train": [_r(t["median"]), _r(t["min"]), _r(t["max"])],
                "busy": t["busy_only"],
                "H": _mean_std(g.H),
            }
            for g in rows
            if (t := g.times.get(device)) is not None and _r(g.H.mean) is not None
        ]
        if points:
            order = sorted({p["dataset"] for p in points}, key=lambda d: dataset_order(d.lower()))
            stem = f"{kind}-h-vs-time" + ("" if len(devices) == 1 else f"-{slugs[device]}")
            title = f"harmonic mean H vs training time on {device}"
            data = {"datasets": order, "points": points, "device": device}
            specs.append(FigureSpec(stem, kind, "h_vs_time", title, data))
    return specs


def _sweep_specs(kind: str, sweeps: Sweeps, colors: dict[str, str]) -> list[FigureSpec]:
    """One figure per sweep and swept parameter, in the method's colour: each metric against the
    parameter, one line per dataset (and per value of the other swept parameters)."""
    keys = [(t, param, g) for t, g in sweeps for param in sorted(g["sweep_map"].iloc[0])]
    slugs = unique_slugs(f"{title} {param}" for title, param, _ in keys)
    specs = []
    for title, param, group in keys:
        lines: dict[str, list[dict[str, Any]]] = {}
        for e in group.itertuples(index=False):
            others = {k: v for k, v in e.sweep_map.items() if k != param}
            label = f"{dataset_label(e.dataset, kind)}, {assignments(others)}".removesuffix(", ")
            point = {m: _mean_std(getattr(e, m)) for m in SWEEP_METRICS}
            lines.setdefault(label, []).append({"x": e.sweep_map[param], **point})
        order = sorted(lines, key=lambda label: (dataset_order(label.split(",")[0].lower()), label))
        series: list[dict[str, Any]] = [
            {"label": k, "points": sorted(lines[k], key=lambda p: collect.value_sort_key(p["x"]))}
            for k in order
        ]
        data = {"param": param, "series": series, "color": colors[group["method"].iloc[0]]}
        name = f"{kind}-sweep-{slugs[f'{title} {param}']}"
        specs.append(FigureSpec(name, kind, "sweep", f"sweep of {title}: metrics vs {param}", data))
    return specs


def _cd_spec(kind: str, ranking: Any, colors: dict[str, str]) -> FigureSpec:
    title = f"average rank of {ranking.metric} across {len(ranking.datasets)} datasets (1 = best)"
    methods = [
        {"label": r.label, "color": colors[r.method], "rank": _r(x)}
        for r, x in zip(ranking.rows, ranking.ranks, strict=True)
    ]
    data = {"methods": methods, "cd": _r(ranking.cd), "alpha": ranking.alpha}
    data |= {"n": len(ranking.datasets), "cliques": [list(c) for c in ranking.cliques]}
    return FigureSpec(f"{kind}-critical-difference", kind, "cd", title, data)


# --- drawing ----------------------------------------------------------------------------------


def draw(spec: FigureSpec) -> Any:
    """The matplotlib ``Figure`` of a spec (drawn, not saved), in the style :data:`RC`."""
    import matplotlib.style
    from matplotlib.figure import Figure

    with matplotlib.style.context(["default", RC]):
        fig = Figure(figsize=WIDE if spec.wide else SIZE, dpi=DPI, layout="constrained")
        FIGURES[spec.figure](fig, spec)
        _legend_below(fig, fig.axes[-1])  # the last axes holds every labelled series
        tag = "" if spec.kind == "real" else f"{TAGS[spec.kind]}\n"
        fig.suptitle(tag + spec.title, x=0.01, ha="left", color="#b00020" if tag else "black")
    return fig


def render_figure(spec: FigureSpec) -> dict[str, bytes]:
    """``{"figures/x.png": bytes, "figures/x.svg": bytes}`` for one spec, deterministically."""
    import matplotlib.style

    fig, sha = draw(spec), spec.data_sha256
    png, svg = io.BytesIO(), io.BytesIO()
    with matplotlib.style.context(["default", RC]):
        fig.savefig(png, format="png", metadata={"Software": None, HASH_KEY: sha})
        fig.set_layout_engine("none")  # laid out by the first save: the SVG reuses it
        about = {"Date": None, "Creator": "zslbench leaderboard"}
        fig.savefig(svg, format="svg", metadata=about | {"Description": f"{HASH_KEY}={sha}"})
    return dict(zip(spec.files, (png.getvalue(), svg.getvalue()), strict=True))


def _legend_below(fig: Any, ax: Any) -> None:
    """The legend under the axes, outside them: it never covers a curve or a point. A label
    drawn twice (one per seed, per panel) is listed once; long names wrap (:data:`WRAP`), the
    columns are as many as fit the canvas, and the canvas grows by the legend's height, both as
    matplotlib measures the legend."""
    entries: dict[str, Any] = {}
    for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
        entries.setdefault(textwrap.fill(label, WRAP), handle)
    for ncols in range(min(6, len(entries)), 0, -1):
        legend = fig.legend(entries.values(), entries, loc="outside lower center", ncols=ncols)
        box = legend.get_window_extent()
        if box.width <= fig.bbox.width - 0.3 * DPI or ncols == 1:  # 0.3 in to spare
            fig.set_figheight(fig.get_figheight() + box.height / DPI + 0.15)
            return
        legend.remove()


def _plain_log(axis: Any, subs: tuple[float, ...]) -> None:
    """A log axis (its scale already set) ticked at ``subs`` × 10ⁿ, labelled 0.5, 1, 2, 5, ...
    rather than 2×10⁰, minor ticks unlabelled."""
    from matplotlib.ticker import LogLocator, NullFormatter

    axis.set(major_locator=LogLocator(subs=subs), minor_formatter=NullFormatter())
    axis.set_major_formatter("{x:g}")


def _draw_curves(fig: Any, spec: FigureSpec) -> None:
    """One thin line per seed, each with its calibrated operating point."""
    ax = fig.add_subplot()
    for s in spec.data["series"]:
        look = {"color": s["color"], "label": s["label"]}  # the legend lists the first: a line
        for run in s["runs"]:
            ax.plot(run["A_U"], run["A_S"], ls=s["ls"], lw=1.3, alpha=0.75, **look)
            (u, a) = run["op"]
            ax.plot([u], [a], marker=s["marker"], ms=6, mec="black", mew=0.7, **look)
    ax.plot([], [], "o", ms=6, color="white", mec="black", label="calibrated operating point")
    ax.set(xlabel="unseen-class accuracy A_U (%)", ylabel="seen-class accuracy A_S (%)")
    ax.set(xlim=(0, None), ylim=(0, None))


def _draw_h_vs_time(fig: Any, spec: FigureSpec) -> None:
    """One point per row and dataset; the marker's shape is the dataset, its colour the method;
    a hollow marker is a time from runs on a busy machine only. The time axis is logarithmic,
    labelled 0.5, 1, 2, 5, ... rather than 2×10⁰."""
    ax = fig.add_subplot(xscale="log", ylabel="harmonic mean H (%)")
    markers = dict(zip(spec.data["datasets"], cycle(MARKERS), strict=False))
    for p in spec.data["points"]:
        (t, t_lo, t_hi), (h, h_std) = p["train"], p["H"]
        look = {"marker": markers[p["dataset"]], "ms": 7, "mfc": "white" if p["busy"] else None}
        xerr = [[t - t_lo], [t_hi - t]]
        ax.errorbar(t, h, h_std or 0.0, xerr, color=p["color"], label=p["label"], **look, **BARS)
    for ds, marker in markers.items():
        ax.errorbar([], [], marker=marker, color=KEY_COLOR, ls="none", label=ds)
    if any(p["busy"] for p in spec.data["points"]):
        ax.errorbar([], [], marker="o", mfc="white", color=KEY_COLOR, ls="none", label=BUSY)
    ax.set_xlabel("median training time per run, train (s, log scale)")
    _plain_log(ax.xaxis, (1.0, 2.0, 5.0))


def _draw_per_class(fig: Any, spec: FigureSpec) -> None:
    """Classes side by side, most frequent first (evenly spaced whatever their frequencies: SUN's
    72 equally frequent classes do not collapse into one strip); their shares (as the first
    series that has each class says) in a bar panel above. Up to :data:`NAMED_CLASSES` classes
    are named, with error bars and the methods side by side in a class's column."""
    series = spec.data["series"]
    shares = {p["name"]: p["share"] for s in reversed(series) for p in s["points"]}  # the first's
    order = sorted(shares, key=lambda name: (-shares[name], name))
    top, ax = fig.subplots(2, 1, sharex=True, height_ratios=(1, 3))
    top.bar(range(len(order)), [shares[n] for n in order], color="#9aa5b8", width=0.8)
    top.set_ylabel("share of\nunseen (%)")
    if min(shares.values()) > 0 and max(shares.values()) > 10 * min(shares.values()):
        top.set_yscale("log")
        _plain_log(top.yaxis, (1.0,))  # a short panel: decades only
    named = len(order) <= NAMED_CLASSES
    spread = 0.7 / len(series) if named else 0.0
    for i, s in enumerate(series):
        xs = [order.index(p["name"]) + (i - (len(series) - 1) / 2) * spread for p in s["points"]]
        ys, errs = zip(*(p["acc"] for p in s["points"]), strict=True)
        look = {"marker": s["marker"], "color": s["color"], "label": s["label"], "alpha": 0.85}
        yerr = [e or 0.0 for e in errs] if named else None
        ax.errorbar(xs, ys, yerr, ms=5 if named else 3.5, **look, **BARS)
    if named:
        ax.set_xticks(range(len(order)), order, rotation=45, ha="right", fontsize=7.5)
    ax.set_xlabel(
        f"the {len(order)} unseen classes, most frequent first" + ("" if named else " (rank)")
    )
    ax.set(ylabel="per-class unseen accuracy (%)", xlim=(-0.7, len(order) - 0.3), ylim=(0, None))


def _draw_sweep(fig: Any, spec: FigureSpec) -> None:
    """The x axis is ticked at the swept values themselves (log-spaced when they span a decade);
    values that are not numbers are categories (matplotlib's), in the order of their text."""
    series = spec.data["series"]
    numeric, ticks, log, rotation = _sweep_axis([p["x"] for s in series for p in s["points"]])
    axes = fig.subplots(1, len(SWEEP_METRICS), sharex=True)
    axes[0].set_ylabel("%")
    axes[0].xaxis.update_units(ticks)  # text values: categories in this order (numbers: no-op)
    for ax, metric in zip(axes, SWEEP_METRICS, strict=True):
        for i, s in enumerate(series):
            pts = [p for p in s["points"] if p[metric][0] is not None]
            xs = [p["x"] if numeric else value_text(p["x"]) for p in pts]
            ys, errs = [p[metric][0] for p in pts], [p[metric][1] or 0.0 for p in pts]
            look = {**_look(i), "color": spec.data["color"], "label": s["label"]}
            ax.errorbar(xs, ys, errs, lw=1.2, elinewidth=0.8, **look)
        ax.set(title=metric, xlabel=spec.data["param"], xscale="log" if log else "linear")
        ax.margins(y=0.15)
        low, high = ax.get_ylim()
        if high - low < 2.0:  # a flat line: keep it mid-panel
            ax.set_ylim((low + high) / 2 - 1.0, (low + high) / 2 + 1.0)
        ax.set_xticks(ticks, [value_text(t) for t in ticks], rotation=rotation, fontsize=7.5)
        ax.minorticks_off()


def _sweep_axis(values: list[Any]) -> tuple[bool, list[Any], bool, int]:
    """(numeric, ticks, log scale, tick rotation) for a sweep's x values: log when positive
    numbers span a decade; text values (or more than six ticks) slanted to fit."""
    numeric = all(collect.is_number(v) for v in values)
    ticks = sorted(set(values)) if numeric else sorted({value_text(v) for v in values})
    log = numeric and min(values) > 0 and max(values) >= 10 * min(values)
    return numeric, ticks, log, 30 if not numeric or len(ticks) > 6 else 0


def _draw_cd(fig: Any, spec: FigureSpec) -> None:
    """Demšar's critical-difference diagram: the rank axis (1 = best, on the left), each method a
    line down to its average rank, labelled at the side in its colour (constrained layout leaves
    the labels the room they need); the Nemenyi CD as a bar above the axis; thick bars join the
    methods that are not significantly different."""
    methods, cliques, cd = spec.data["methods"], spec.data["cliques"], spec.data["cd"]
    k, half = len(methods), math.ceil(len(methods) / 2)
    hi, top = max(k, 2), 0.35 + 0.3 * len(cliques)  # the first label row below the clique bars
    fig.set_figheight(1.4 + 0.1 * len(cliques) + 0.3 * half)
    ends = (1 - 0.08 * (hi - 1), hi + 0.08 * (hi - 1))  # where the methods' lines turn to labels
    ax = fig.add_subplot(xlim=ends, ylim=(-(top + half), 1.7))
    ax.set_axis_off()
    ax.plot(range(1, hi + 1), [0] * hi, "k|-", lw=1.0, ms=6)
    for rank in range(1, hi + 1):
        ax.text(rank, 0.2, str(rank), ha="center", va="bottom", fontsize=8)
    ax.plot([1, 1 + cd], [1.05, 1.05], "k|-", lw=1.4, ms=8)
    what = f"CD = {cd:.2f} (Nemenyi, α = {spec.data['alpha']:g}, {spec.data['n']} datasets)"
    ax.text(1, 1.25, what, va="bottom", fontsize=8)
    for i, m in enumerate(methods):
        right, level = i >= half, -(top + min(i, k - 1 - i))
        ax.plot([m["rank"], m["rank"], ends[right]], [0, level, level], color=m["color"], lw=1.2)
        label = textwrap.fill(f"{m['label']} ({m['rank']:.2f})", WRAP)
        look = {"ha": "left" if right else "right", "va": "center", "color": m["color"]}
        ax.text(ends[right] + (0.01 if right else -0.01) * hi, level, label, **look)
    for j, (first, last) in enumerate(cliques):
        xs, y = [methods[first]["rank"] - 0.05, methods[last]["rank"] + 0.05], -0.25 - 0.3 * j
        ax.plot(xs, [y, y], "k-", lw=3.0, solid_capstyle="butt")


#: How each figure a board draws (:attr:`FigureSpec.figure`) is drawn: ``_draw_<figure>``.
_DRAWERS = (_draw_curves, _draw_h_vs_time, _draw_per_class, _draw_sweep, _draw_cd)
FIGURES = {f.__name__.removeprefix("_draw_"): f for f in _DRAWERS}


def embedded_hash(name: str, data: bytes) -> str | None:
    """The data hash a figure file carries, or None when it has none (or is not a figure): in a
    PNG, a ``tEXt`` chunk ``key\\0value``; in an SVG, the description ``key=value``."""
    sep = {"png": b"\0", "svg": b"="}.get(name.rpartition(".")[2])
    found = sep and re.search(re.escape(HASH_KEY.encode() + sep) + rb"([0-9a-f]{64})", data)
    return found.group(1).decode() if found else None
