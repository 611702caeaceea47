"""Leaderboard tables as plain data, built once and written as Markdown, CSV and HTML.

Keeping the table model independent of the output format is what makes the formats agree: the
same rows, the same order, the same marks. The prose around a table (its caption) is written by
the templates from the table's ``kind`` and ``params``.

Rules the builders follow:

* Measured rows come from aggregated records (:mod:`zslbench.leaderboard.collect`); reported rows
  from the curated file (:mod:`zslbench.leaderboard.reported`). A row is one or the other, never a
  blend, and carries its :class:`Provenance`.
* **Bold** is a statistical claim (:func:`mark`): in a column of H, A_T or AUSUC, the measured
  row with the best mean and every measured row *not significantly worse* than it
  (:func:`zslbench.stats.not_worse_than_best`: a t-test over seeds, paired by seed where the runs
  share seeds, Holm-corrected over the column). No bold in a column with one method, none on A_U
  or A_S (a method trades one for the other), and never on a reported row (a quoted number has no
  spread to test).
* Only *comparable* rows take part: a standard split and the compared data version of the
  dataset; a row on a reduced schedule competes only when the column has no full-schedule row.
  The others stay in the table, marked, never bold.
* Training times are compared only on one device model (one table each); bold marks the fastest
  median there, never a time taken on a busy machine.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from itertools import groupby
from typing import Any

import pandas as pd

from zslbench import stats
from zslbench.leaderboard import collect
from zslbench.leaderboard.collect import dataset_label, dataset_order, finite, measured
from zslbench.leaderboard.markup import unique_slugs
from zslbench.leaderboard.reported import EMPTY, Reported, ReportedRow
from zslbench.records.rows import assignments

MISSING = "–"
SIGNIFICANCE = "significance"
FASTEST = "fastest"


def date_range(first: str, last: str, none: str = "–") -> str:
    """``first to last``, one day once, ``none`` without a date."""
    return (first or none) if first == last else f"{first} to {last}"


@dataclass
class Cell:
    """One value: ``mean ± std`` over ``n`` seeds with a 95% interval ``[low, high]`` (measured,
    with its values by seed in ``samples``), or a single quoted number (reported)."""

    mean: float | None = None
    std: float | None = None
    n: int | None = None
    low: float | None = None
    high: float | None = None
    decimals: int = 1
    unit: str = ""
    #: Free text instead of a number (a device name, "5 min" as the paper prints it).
    text_override: str | None = None
    #: Value used for sorting, in the column's common unit (defaults to ``mean``).
    sort_value: float | None = None
    #: Values by seed, for the tests; None for a number that cannot be tested (reported).
    samples: dict[int, float] | None = None
    #: The test's verdict against the column's best (``stats.Verdict.status``), if tested.
    status: str = ""
    p: float | None = None
    test: str = ""
    #: "busy": a time from runs on an oversubscribed machine only.
    flag: str = ""
    best: bool = False

    def __post_init__(self) -> None:
        self.mean, self.std = finite(self.mean), finite(self.std)
        self.low, self.high = finite(self.low), finite(self.high)
        self.sort_value = self.mean if self.sort_value is None else self.sort_value

    @classmethod
    def of(cls, i: stats.Interval, samples: dict[int, float] | None = None, **kw: Any) -> Cell:
        return cls(i.mean, i.std, i.n, i.low, i.high, samples=samples, **kw)

    @property
    def missing(self) -> bool:
        return self.text_override is None and self.mean is None

    def value_text(self) -> str:
        if self.text_override is not None:
            return self.text_override
        return MISSING if self.mean is None else f"{self.mean:.{self.decimals}f}{self.unit}"

    def std_text(self) -> str:
        return "" if self.std is None else f"± {self.std:.{self.decimals}f}"

    def ci_text(self) -> str:
        if self.low is None or self.high is None:
            return ""
        return f"{self.low:.{self.decimals}f}–{self.high:.{self.decimals}f}".replace("-", "−")

    def text(self) -> str:
        """``mean ± std`` as one string (mean only without a spread)."""
        std = self.std_text()
        return self.value_text() + (f" {std}" if std and self.text_override is None else "")


@dataclass
class Provenance:
    """Where a row's numbers come from; every row has one."""

    source: str  # "measured" | "reported"
    #: A measured row's runs in one line: versions, commits, dates, devices, split.
    about: str = ""
    split_reason: str = ""
    devices: list[str] = field(default_factory=list)
    #: (dataset label, [record links]) for measured rows, and the seed of each record.
    records: list[tuple[str, list[str]]] = field(default_factory=list)
    seed_of: dict[str, int] = field(default_factory=dict)
    #: (dataset label, data fingerprint) of each dataset the row ran on.
    data: list[tuple[str, str]] = field(default_factory=list)
    anchor: str = ""
    #: The configuration's full label (a sweep row shows only its values).
    label: str = ""
    citation: str = ""
    refs: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line: :attr:`about` (measured) or the citation (reported)."""
        return self.citation if self.source == "reported" else self.about


@dataclass
class Column:
    key: str
    title: str
    group: str = ""
    higher_better: bool = True
    #: How the column is marked: SIGNIFICANCE, FASTEST, or "" (never bold).
    mark: str = ""
    #: Text columns (a device name) read better left-aligned.
    align: str = "right"
    #: Descriptive columns (share, test images) show no seed count.
    descriptive: bool = False


@dataclass
class Row:
    label: str
    name: str
    source: str
    cells: dict[str, Cell]
    prov: Provenance | None = None
    method: str = ""
    #: Why the row is never compared, one phrase each ("non-standard split", "other data version").
    excluded: list[str] = field(default_factory=list)
    #: "reduced" when its records ran a reduced schedule.
    schedule: str = ""
    #: A warning shown with the row (runs on a busy machine).
    note: str = ""

    @property
    def comparable(self) -> bool:
        return self.source == "measured" and not self.excluded


@dataclass
class Table:
    id: str
    #: What the table is, for its caption: "h", "au-as", "zsl", "ablation-h", "ablation-au-as",
    #: "time", "reported-time", "sweep", "perclass", "reported-perclass", "audit".
    kind: str
    title: str
    columns: list[Column]
    rows: list[Row]
    row_header: str = "Method"
    #: "column": marks per column; "row": per row (per-class tables: the best method per class).
    best_axis: str = "column"
    show_source: bool = True
    #: The dataset label of a single-dataset table (per-class and sweep tables).
    dataset: str = ""
    #: Facts the caption states (a sweep's title, the device, the rules of a selection audit).
    params: dict[str, Any] = field(default_factory=dict)

    def cell(self, row: Row, column: Column) -> Cell:
        return row.cells.get(column.key) or Cell()

    def groups(self) -> list[tuple[str, int]]:
        """Consecutive column groups as (title, span), for a two-level header."""
        return [(group, len(list(run))) for group, run in groupby(c.group for c in self.columns)]

    @property
    def has_groups(self) -> bool:
        return any(title for title, _ in self.groups())

    def common_n(self) -> int | None:
        """The number of seeds most measured cells have: said once, per cell only where it differs."""
        cells = [c for r in self.rows for c in r.cells.values() if not c.missing]
        counts = Counter(c.n for c in cells if c.n is not None)
        return max(sorted(counts), key=lambda n: counts[n]) if counts else None


# --- marks ------------------------------------------------------------------------------------


def mark(table: Table) -> Table:
    """Set each cell's bold (``best``) and verdict, per the module's rules."""
    if table.best_axis == "row":
        columns = [c for c in table.columns if c.mark == SIGNIFICANCE]
        for row in (r for r in table.rows if r.source == "measured"):
            _mark_significance([(table.cell(row, c), "") for c in columns], True)
    for column in (c for c in table.columns if c.mark and table.best_axis == "column"):
        entries = [(table.cell(r, column), r.schedule) for r in table.rows if r.comparable]
        if column.mark == SIGNIFICANCE:
            _mark_significance(entries, column.higher_better)
        else:
            _mark_fastest([cell for cell, _ in entries])
    return table


def _mark_significance(entries: list[tuple[Cell, str]], higher_better: bool) -> None:
    """Full-schedule cells compete; reduced ones only in a column without a full one."""
    cells = [(c, s) for c, s in entries if c.samples]
    if any(s != "reduced" for _, s in cells):
        cells = [(c, s) for c, s in cells if s != "reduced"]
    samples = [c.samples or {} for c, _ in cells]
    verdicts = stats.not_worse_than_best(samples, higher_better=higher_better)
    for (cell, _), verdict in zip(cells, verdicts, strict=True):
        cell.status, cell.best, cell.test = verdict.status, verdict.bold, verdict.test
        cell.p = finite(verdict.p)


def _mark_fastest(cells: list[Cell]) -> None:
    """The fastest median of quiet runs (ties at display precision all marked); only with two or
    more timed rows."""
    timed = [c for c in cells if c.sort_value is not None and not c.flag]
    shown = [round(c.sort_value or 0.0, c.decimals) for c in timed]
    for cell, value in zip(timed, shown, strict=True) if len(timed) > 1 else ():
        cell.best = value == min(shown)


# --- building rows ----------------------------------------------------------------------------

#: Fills a measured row from one aggregated entry of it, on one dataset (its label).
Fill = Callable[[Row, Any, str], None]
#: The provenance of each row key (:func:`provenances`).
Provs = dict[Any, Provenance]


def _excluded(entry: Any) -> list[str]:
    """Why a row is never compared, one phrase each."""
    why = {"non-standard split": not entry.standard, "other data version": not entry.compared}
    return [reason for reason, applies in why.items() if applies]


def measured_rows(
    agg: pd.DataFrame, kind: str, provs: Provs, fill: Fill, swept: Iterable[Any] | None = None
) -> list[Row]:
    """One row per row key of the page's plain configurations (or, of the aggregated entries
    ``swept``, per swept value, which is also its label), in their order, each with the
    provenance of its row key and filled by ``fill`` from each of its entries; a row left without
    cells is left out."""
    rows: dict[Any, Row] = {}
    for e in measured(agg, kind).itertuples(index=False) if swept is None else swept:
        if (key := e.row_key if swept is None else e.sweep) not in rows:
            name, label = e.paper_name or e.method, e.label if swept is None else key
            rows[key] = Row(label, name, "measured", {}, provs[e.row_key], e.method, _excluded(e))
            rows[key].schedule = e.schedule
        fill(rows[key], e, dataset_label(e.dataset, kind))
    return [row for row in rows.values() if row.cells]


def _metrics(metrics: tuple[str, ...], key: str = "{ds}:{m}") -> Fill:
    """A fill of each metric's cell under ``key``, its interval clipped to :data:`PERCENT`."""

    def fill(row: Row, entry: Any, ds: str) -> None:
        for m in metrics:
            cell = Cell.of(getattr(entry, m), dict(getattr(entry, f"{m}_samples")))
            row.cells[key.format(ds=ds, m=m)] = _clipped(cell)

    return fill


def provenances(agg: pd.DataFrame) -> dict[Any, Provenance]:
    """One provenance per row key, shared by every table that shows the row: all of its runs, on
    every dataset. Its HTML anchor comes from its label (labels are unique per kind, and
    :func:`unique_slugs` parts any two that slug alike)."""
    out: dict[Any, Provenance] = {}
    for kind, sub in agg.groupby("kind", sort=True) if not agg.empty else ():
        anchors = unique_slugs(sub["label"], prefix="prov-")
        for key, g in sub.groupby("row_key", sort=False):
            label, datasets = g["label"].iloc[0], [dataset_label(d, kind) for d in g["dataset"]]
            reasons = dict.fromkeys(r for x in g["split_reason"] for r in x.split("; ") if r)
            union = {c: sorted(set().union(*g[c])) for c in ("versions", "commits", "devices")}
            out[key] = Provenance(
                "measured",
                _about(g, union),
                "; ".join(reasons),
                union["devices"],
                list(zip(datasets, map(list, g["links"]), strict=True)),
                {link: seed for seeds in g["seed_of"] for link, seed in seeds.items()},
                list(zip(datasets, g["data_fp"], strict=True)),
                anchors[label],
                label,
            )
    return out


def _about(g: pd.DataFrame, union: dict[str, list[str]]) -> str:
    """:attr:`Provenance.about` of a row's aggregated entries (``union``: their versions, commits
    and devices)."""
    versions, devices = ", ".join(union["versions"]), ", ".join(union["devices"])
    commit = ", ".join(c[:10] if c != "unknown" else c for c in union["commits"])
    commit += " (dirty tree)" if g["dirty"].any() else ""
    days = [d for d in (*g["date_first"], *g["date_last"]) if d]
    dates = date_range(min(days, default=""), max(days, default=""), "unknown date")
    split = "standard split" if g["standard"].iloc[0] else "NON-STANDARD split (not comparable)"
    return f"zslbench {versions} · commit {commit} · {dates} · {devices} · {split}"


#: Every metric is a percentage: a page shows its intervals clipped to this range (the CSV keeps
#: the raw *t* interval, which can run below 0 with few seeds).
PERCENT = (0.0, 100.0)


def _clipped(cell: Cell) -> Cell:
    cell.low, cell.high = (
        None if x is None else min(max(x, PERCENT[0]), PERCENT[1]) for x in (cell.low, cell.high)
    )
    return cell


def _reported_row(rep: ReportedRow, cells: dict[str, Cell]) -> Row:
    """A row of the paper's numbers, named as the paper names the method, with its citation."""
    devices = [rep.device] if rep.device else []
    prov = Provenance("reported", citation=rep.citation, refs=list(rep.refs), devices=devices)
    return Row(rep.method, rep.method, "reported", cells, prov, rep.zslbench_method or "")


def paired(reported: list[Row], measured_rows: list[Row]) -> list[Row]:
    """The paper's rows in its order, each followed by the measured rows of the same zslbench
    method; measured rows of methods the paper's table lacks come last. Never merged."""
    out: list[Row] = []
    for rep in reported:
        ours = [r for r in measured_rows if rep.method and r.method == rep.method]
        out += [rep, *(r for r in ours if all(r is not o for o in out))]  # each row once
    return out + [row for row in measured_rows if all(row is not r for r in out)]


def datasets_for(agg: pd.DataFrame, kind: str, reported: Reported = EMPTY) -> list[str]:
    """Dataset labels, in the paper's order: measured ones plus the ``reported`` ones."""
    names = {ds: ds for row in reported.rows for ds in row.values}
    names |= {dataset_label(name, kind): name for name in agg.loc[agg["kind"] == kind, "dataset"]}
    return sorted(names, key=lambda label: dataset_order(names[label]))


# --- the tables -------------------------------------------------------------------------------

#: The methods × datasets tables of every page: (part of the reported file, kind, title, metrics);
#: a table's id is ``{page kind}-{kind}``. GZSL's headline metrics and its operating point are
#: apart so that bold (H, AUSUC) never sits beside A_U / A_S, and so that each table, with its
#: intervals, reads at 1400 px. The paper's model-structure ablation is shown in the same form
#: (real page only, when the reported file has one).
SETTING_TABLES = (
    ("main", "h", "Generalized ZSL: H and AUSUC", "H AUSUC"),
    ("main", "zsl", "Zero-shot learning: A_T", "A_T"),
    ("main", "au-as", "Generalized ZSL: A_U and A_S (the operating point behind H)", "A_U A_S"),
    ("ablation", "ablation-h", "Ablation: H and A_T", "H A_T"),
    ("ablation", "ablation-au-as", "Ablation: A_U and A_S", "A_U A_S"),
)


def _metric_column(key: str, metric: str, group: str = "") -> Column:
    return Column(key, metric, group, mark=SIGNIFICANCE if metric in collect.TESTED_METRICS else "")


def setting_tables(
    agg: pd.DataFrame, kind: str, reported: Reported | None, provs: Provs
) -> list[Table]:
    """The methods × datasets tables (:data:`SETTING_TABLES`). On the real page each of the
    paper's rows is followed by the measured rows of the same method (in the ablation, only
    those)."""
    paper = reported if reported and kind == "real" else EMPTY
    datasets = datasets_for(agg, kind, paper)
    sweeps = not measured(agg, kind, sweeps=True).empty
    tables = []
    for part, tkind, title, names in SETTING_TABLES:
        metrics = tuple(names.split())
        reps = paper.rows_for(part)
        if part == "ablation" and not reps:
            continue
        ours = measured_rows(agg, kind, provs, _metrics(metrics))
        methods = {rep.zslbench_method for rep in reps}
        cells = [
            {f"{d}:{m}": Cell(v.get(m)) for d, v in r.values.items() for m in metrics} for r in reps
        ]
        theirs = [_reported_row(rep, c) for rep, c in zip(reps, cells, strict=True)]
        rows = paired(theirs, [r for r in ours if part == "main" or r.method in methods])
        columns = [_metric_column(f"{ds}:{m}", m, ds) for ds in datasets for m in metrics]
        paper_table = paper.table_info(part).get("paper_table", "")
        params = {"paper_table": paper_table, "source": paper.source, "reported": bool(reps)}
        params["sweeps"] = sweeps
        tables.append(mark(Table(f"{kind}-{tkind}", tkind, title, columns, rows, params=params)))
    return tables


#: The metrics of the "cite this" table.
CITE_METRICS = ("H", "A_T", "AUSUC")


def cite_table(agg: pd.DataFrame, kind: str, provs: Provs) -> Table | None:
    """One row per compared measured configuration: its mean H, A_T and AUSUC over the page's
    datasets (:func:`zslbench.stats.mean_of_means`), the interval clipped to [0, 100]; a row that
    misses a dataset has no mean (a mean over other datasets would not compare). Never marked:
    whether one method beats another across datasets is the ranking's question."""
    datasets = datasets_for(agg, kind)
    rows = [r for r in measured_rows(agg, kind, provs, _metrics(CITE_METRICS)) if r.comparable]
    for row in rows:
        parts = {m: [row.cells.get(f"{ds}:{m}") or Cell() for ds in datasets] for m in CITE_METRICS}
        row.cells = {m: _mean_of_means(cells) for m, cells in parts.items()}
    columns, params = [Column(m, m) for m in CITE_METRICS], {"datasets": datasets}
    title = "Cite this: mean over datasets"
    return Table(f"{kind}-cite", "cite", title, columns, rows, params=params) if rows else None


def _mean_of_means(parts: list[Cell]) -> Cell:
    """The mean of the parts' means, with its interval; none where a part has none (NaN)."""
    nan = math.nan
    means = [
        stats.Interval(
            nan if c.mean is None else c.mean, nan if c.std is None else c.std, nan, nan, c.n or 0
        )
        for c in parts
    ]
    return _clipped(Cell.of(stats.mean_of_means(means)))


def time_tables(agg: pd.DataFrame, kind: str, provs: Provs) -> list[Table]:
    """Median ``train`` seconds per method × dataset, one table per device model."""
    devices = sorted({d for e in measured(agg, kind).itertuples(index=False) for d in e.times})
    ids = unique_slugs(devices, prefix=f"{kind}-time-")
    columns = [Column(ds, ds, higher_better=False, mark=FASTEST) for ds in datasets_for(agg, kind)]
    tables = []
    for d in devices:
        rows = measured_rows(agg, kind, provs, _timed(d))
        title = f"Training time (median) on {d}"
        tables.append(mark(Table(ids[d], "time", title, columns, rows, params={"device": d})))
    return tables


def _timed(device: str) -> Fill:
    """A fill of the median time on ``device``. A row's note names the busy runs left out of a
    median; a cell of busy runs only needs none: its ‡ says it, and the caption says once what ‡
    means."""

    def fill(row: Row, entry: Any, ds: str) -> None:
        if (t := entry.times.get(device)) is None:
            return
        flag, median = "busy" if t["busy_only"] else "", t["median"]
        # enough digits to tell runs apart without pretending sub-millisecond precision
        decimals = 2 if median < 10 else (1 if median < 1000 else 0)
        row.cells[ds] = Cell(median, None, t["n"], decimals=decimals, unit=" s", flag=flag)
        if t["busy"] and not flag:
            part = f"{ds}: {t['busy']} of {t['runs']} busy runs left out"
            row.note = f"{row.note}; {part}" if row.note else f"† {part}"

    return fill


def reported_time_table(reported: Reported) -> Table | None:
    """The paper's training times in minutes, as printed, on its device."""
    reps = reported.rows_for("train_time")
    rows = []
    for rep in reps:
        cells = {"device": Cell(text_override=rep.device or "")}
        for ds, m in ((ds, values.get("train_min")) for ds, values in rep.values.items()):
            cells[ds] = (
                Cell() if m is None else Cell(m, text_override=f"{m:g} min", sort_value=m * 60)
            )
        rows.append(_reported_row(rep, cells))
    datasets = sorted({ds for rep in reps for ds in rep.values}, key=dataset_order)
    columns = [Column(ds, ds, higher_better=False) for ds in datasets]
    columns.append(Column("device", "Device", align="left", descriptive=True))
    title = "Training time as reported (minutes)"
    params = {"paper_table": reported.table_info("train_time").get("paper_table", "")}
    table = Table("real-time-reported", "reported-time", title, columns, rows, params=params)
    return table if rows else None


#: What a sweep shares besides its swept parameters: one table (per dataset) each.
SWEEP_KEYS = "method overrides standard device_type schedule compared".split()


def sweep_groups(agg: pd.DataFrame, kind: str) -> list[tuple[str, pd.DataFrame]]:
    """The sweeps of a page: one group per (method, swept parameters, other overrides, split,
    device, schedule, data version), as ``(title, its aggregated rows)``."""
    sub = measured(agg, kind, sweeps=True)
    if sub.empty:
        return []
    sub = pd.concat([sub, *_default_points(measured(agg, kind), sub)], ignore_index=True)
    keys = ["method_rank", "method", "sweep_params", *SWEEP_KEYS[1:]]
    out = []
    for key, group in sub.groupby(keys, sort=True):
        _, method, params, overrides, standard, device, schedule, compared = key
        parts = [
            f"{method} over {params}" + (f" [{overrides}]" if overrides else ""),
            "" if standard else "non-standard split",
            schedule,
            "" if compared else "other data version",
            device if sub["device_type"].nunique() > 1 else "",
        ]
        out.append((" · ".join(p for p in parts if p), group))
    return out


def _default_points(plain: pd.DataFrame, sweeps: pd.DataFrame) -> list[pd.DataFrame]:
    """The plain configurations that are a point of a sweep (:func:`collect.default_point`): one
    row per (sweep, default), with the sweep's columns filled in from its hyperparameters."""
    keys, out = SWEEP_KEYS, []
    for key, group in sweeps.groupby([*keys, "sweep_params"], sort=True):
        params = sorted(group["sweep_map"].iloc[0])
        same = plain[(plain[keys] == pd.Series(key[:-1], index=keys)).all(axis=1)]
        for _, entry in same.iterrows():
            point = collect.default_point(entry["config"], params)
            taken = set(group["sweep"][group["dataset"] == entry["dataset"]])
            # only where the sweep ran: a default on another dataset is no sweep of one point
            if point is not None and taken and assignments(point) not in taken:
                swept = {"sweep": assignments(point), "sweep_params": key[-1], "sweep_map": point}
                out.append(pd.Series({**entry, **swept}).to_frame().T)
    return out


def sweep_tables(agg: pd.DataFrame, kind: str, provs: Provs) -> list[Table]:
    """One table per sweep and dataset: rows are the swept values, columns the metrics."""
    groups = sweep_groups(agg, kind)
    columns = [_metric_column(m, m) for m in collect.SWEEP_METRICS]
    fill = _metrics(collect.SWEEP_METRICS, "{m}")
    keys = {f"{title}\0{d}" for title, g in groups for d in g["dataset"]}
    ids = unique_slugs(keys, prefix=f"{kind}-sweep-")
    tables = []
    for title, group in groups:
        for name in sorted(set(group["dataset"]), key=dataset_order):
            ds = dataset_label(name, kind)
            entries = sorted(group[group["dataset"] == name].itertuples(index=False), key=_by_value)
            rows = measured_rows(agg, kind, provs, fill, entries)
            head = (ids[f"{title}\0{name}"], "sweep", f"Sweep: {title} on {ds}", columns, rows)
            table = Table(*head, "Value", show_source=False, dataset=ds, params={"sweep": title})
            tables.append(mark(table))
    return tables


def _by_value(entry: Any) -> list[tuple[str, tuple[int, float, str]]]:
    return [(p, collect.value_sort_key(v)) for p, v in sorted(entry.sweep_map.items())]


#: A per-class table's cells: (class key, name, share of the unseen images in %, cells) each.
ClassCells = list[tuple[Any, str, float | None, dict[str, Cell]]]


def _class_table(
    head: tuple[str, ...], columns: list[Column], cells: ClassCells, row: Row, **table: Any
) -> Table:
    """A per-class table (``head``: its id, kind, title and dataset) of ``cells``: one row per
    class, made from ``row`` (its source and provenance), the most frequent first, its share in a
    column of its own. A class's first entry gives its name, share and any descriptive cell."""
    tid, kind, title, ds = head
    rows: dict[Any, Row] = {}
    for key, name, share, more in cells:
        share_cell = Cell(share, unit=" %", decimals=2)
        new = rows.setdefault(key, replace(row, label=name, name=name, cells={"share": share_cell}))
        new.cells = more | new.cells

    def order(key: Any) -> tuple[float, str, Any]:
        share = rows[key].cells["share"].mean
        return (-(share if share is not None else -1.0), rows[key].label, key)

    columns = [Column("share", "share of unseen images", descriptive=True), *columns]
    ordered = [rows[key] for key in sorted(rows, key=order)]
    return Table(tid, kind, title, columns, ordered, "Class", "row", False, ds, **table)


def per_class_tables(agg: pd.DataFrame, kind: str) -> list[Table]:
    """Per dataset: unseen classes (most frequent first) × methods, accuracy mean ± std."""
    sub = measured(agg, kind)
    names = sorted(set(sub["dataset"]), key=dataset_order)
    ids = unique_slugs(names, prefix=f"{kind}-perclass-")
    tables = []
    for name in names:
        columns = [Column("n_test", "test images", descriptive=True)]
        cells = []
        for g in sub[(sub["dataset"] == name) & sub["per_class"].map(bool)].itertuples(index=False):
            key = f"m:{g.label}"  # in method order
            # a method's column on a non-standard split or another data version is never marked
            columns.append(Column(key, g.label, mark="" if _excluded(g) else SIGNIFICANCE))
            for e in g.per_class:
                n, share = e["n_test"], finite(e["share"])
                n_test = Cell(text_override=MISSING if n is None else str(n), sort_value=finite(n))
                accuracy = Cell.of(e["interval"], dict(e["samples"]))
                pct = None if share is None else 100 * share
                cells.append((e["class"], e["name"], pct, {"n_test": n_test, key: accuracy}))
        if cells:
            ds = dataset_label(name, kind)
            head = (ids[name], "perclass", f"Per-class unseen accuracy: {ds}", ds)
            row = Row("", "", "measured", {})
            tables.append(mark(_class_table(head, columns, cells, row)))
    return tables


def reported_per_class_tables(reported: Reported) -> list[Table]:
    """The paper's per-class table, transposed like ours (classes as rows); never marked."""
    by_dataset: dict[str, list[ReportedRow]] = {}
    for rep in reported.rows_for("per_class"):
        by_dataset.setdefault(rep.dataset or "?", []).append(rep)
    ids = unique_slugs(by_dataset, prefix="real-perclass-reported-")
    tables = []
    for ds, reps in sorted(by_dataset.items(), key=lambda kv: dataset_order(kv[0])):
        columns = [Column(f"m:{rep.method}", rep.method) for rep in reps]
        cells = []
        for rep in reps:
            for c in rep.classes:
                accuracy = {f"m:{rep.method}": Cell(c["accuracy"])}
                cells.append((c["name"], c["name"], c["share_of_unseen_pct"], accuracy))
        head = (ids[ds], "reported-perclass", f"Per-class unseen accuracy: {ds} (reported)", ds)
        row, params = _reported_row(reps[0], {}), {"citation": reps[0].citation}
        tables.append(_class_table(head, columns, cells, row, params=params))
    return tables


def audit_table(agg: pd.DataFrame, kind: str, provs: Provs) -> Table | None:
    """Test-set selection inflation: per method and dataset, how much higher H would read had the
    model been selected on the test set (``test_selected_H - clean_H``), over the seeds whose
    records carry a selection audit. Never ranked, never marked: it is not a result."""
    rules: set[str] = set()

    def fill(row: Row, entry: Any, ds: str) -> None:
        if entry.audits:
            gaps = [a["test_selected_H"] - a["clean_H"] for a in entry.audits]
            epochs = sorted({a["test_selected_epoch"] for a in entry.audits})
            text, first = ", ".join(str(e) for e in epochs), float(epochs[0])
            row.cells[ds] = Cell.of(stats.t_interval(gaps))
            row.cells[f"{ds}:epoch"] = Cell(text_override=text, sort_value=first)
            rules.update(a["rule"] for a in entry.audits if a["rule"])

    rows = measured_rows(agg, kind, provs, fill)
    columns = [
        column
        for ds in datasets_for(agg, kind)
        if any(ds in row.cells for row in rows)
        for column in (
            Column(ds, "H gain", ds),
            Column(f"{ds}:epoch", "epoch", ds, descriptive=True),
        )
    ]
    title, params = "Test-set selection inflation (not a result)", {"rules": sorted(rules)}
    table = Table(f"{kind}-selection-audit", "audit", title, columns, rows, params=params)
    return table if rows else None
