"""Leaderboard tables as plain data, built once and then written as Markdown, CSV and HTML.

Keeping the table model independent of the output format is what makes the three formats agree:
the same rows, the same order, the same best-value marks.

Rules the builders follow:

* Measured rows come from aggregated records (:mod:`zslbench.leaderboard.collect`); reported rows
  come from the curated file (:mod:`zslbench.leaderboard.reported`). A row is one or the other,
  never a blend, and carries its :class:`Provenance`.
* The best value of a column is marked among *comparable* rows only: measured rows on a standard
  split and reported rows. Values are compared as displayed (1 decimal for accuracies), so two
  cells that print the same are both marked.
* Rows on a non-standard split stay in the table, labelled, but are never marked best.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from zslbench.leaderboard.collect import (
    GZSL_METRICS,
    SWEEP_METRICS,
    ZSL_METRICS,
    dataset_label,
    dataset_order,
    measured,
    per_class,
    value_sort_key,
)
from zslbench.leaderboard.reported import Reported, ReportedRow

METRIC_TITLES = {"A_T": "A_T", "A_U": "A_U", "A_S": "A_S", "H": "H", "AUSUC": "AUSUC"}
MISSING = "–"


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def time_decimals(seconds: float) -> int:
    """Enough digits to tell runs apart without pretending sub-millisecond precision."""
    return 2 if seconds < 10 else (1 if seconds < 1000 else 0)


@dataclass
class Cell:
    """One value: ``mean ± std`` over ``n`` seeds (measured) or a single quoted number (reported)."""

    mean: float | None = None
    std: float | None = None
    n: int | None = None
    decimals: int = 1
    unit: str = ""
    #: Free text instead of a number (a device name, "5 min" as the paper prints it).
    text_override: str | None = None
    #: Value used for sorting and ranking, in the column's common unit (defaults to ``mean``).
    sort_value: float | None = None
    best: bool = False

    def __post_init__(self) -> None:
        self.mean, self.std = _finite(self.mean), _finite(self.std)
        if self.sort_value is None:
            self.sort_value = self.mean

    @property
    def missing(self) -> bool:
        return self.text_override is None and self.mean is None

    @property
    def rank_value(self) -> float | None:
        if self.sort_value is None:
            return None
        return round(self.sort_value, self.decimals)

    def text(self) -> str:
        if self.text_override is not None:
            return self.text_override
        if self.mean is None:
            return MISSING
        body = f"{self.mean:.{self.decimals}f}"
        if self.std is not None:
            body += f" ± {self.std:.{self.decimals}f}"
        return body + self.unit


@dataclass
class Provenance:
    """Where a row's numbers come from; every row has one."""

    source: str  # "measured" | "reported"
    standard: bool | None = None
    split_reason: str = ""
    versions: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    dirty: bool = False
    date_first: str = ""
    date_last: str = ""
    devices: list[str] = field(default_factory=list)
    #: (dataset label, [record links]) for measured rows, and the seed of each record.
    records: list[tuple[str, list[str]]] = field(default_factory=list)
    seed_of: dict[str, int] = field(default_factory=dict)
    anchor: str = ""
    #: The configuration's full label (a sweep row shows only its values).
    label: str = ""
    citation: str = ""
    refs: list[str] = field(default_factory=list)

    @property
    def comparable(self) -> bool:
        return self.source == "reported" or bool(self.standard)

    def split_text(self) -> str:
        if self.source == "reported":
            return "paper's split"
        return "standard split" if self.standard else "NON-STANDARD split (not comparable)"

    def dates(self) -> str:
        if self.date_first == self.date_last:
            return self.date_first or "unknown date"
        return f"{self.date_first} to {self.date_last}"

    def commit_text(self) -> str:
        short = [c[:10] if c != "unknown" else c for c in self.commits]
        return ", ".join(short) + (" (dirty tree)" if self.dirty else "")

    def summary(self) -> str:
        """One line: version, commit, date, device, split (measured) or the citation (reported)."""
        if self.source == "reported":
            return self.citation
        return (f"zslbench {', '.join(self.versions)} · commit {self.commit_text()} · {self.dates()} · "
                f"{', '.join(self.devices)} · {self.split_text()}")


@dataclass
class Column:
    key: str
    title: str
    group: str = ""
    higher_better: bool = True
    #: Ranked columns take part in best-value marking; descriptive ones (device, share) do not.
    ranked: bool = True
    comparable: bool = True
    #: Text columns (a device name) read better left-aligned.
    align: str = "right"


@dataclass
class Row:
    label: str
    name: str
    source: str
    cells: dict[str, Cell]
    prov: Provenance | None = None
    method: str = ""
    #: A warning shown with the row (runs on an oversubscribed machine left out of its times).
    note: str = ""

    @property
    def comparable(self) -> bool:
        return self.prov.comparable if self.prov else True


@dataclass
class Table:
    id: str
    title: str
    caption: str
    columns: list[Column]
    rows: list[Row]
    row_header: str = "Method"
    #: "column": best row per column; "row": best column per row (per-class tables).
    best_axis: str = "column"
    show_source: bool = True
    #: The dataset label of a single-dataset table (per-class tables).
    dataset: str = ""

    def cell(self, row: Row, column: Column) -> Cell:
        return row.cells.get(column.key) or Cell()

    def groups(self) -> list[tuple[str, int]]:
        """Consecutive column groups as (title, span), for a two-level header."""
        out: list[tuple[str, int]] = []
        for column in self.columns:
            if out and out[-1][0] == column.group:
                out[-1] = (column.group, out[-1][1] + 1)
            else:
                out.append((column.group, 1))
        return out


def mark_best(table: Table) -> Table:
    """Set ``Cell.best`` on the best comparable value(s) of each column (or row)."""
    for row in table.rows:
        for cell in row.cells.values():
            cell.best = False
    if table.best_axis == "column":
        for column in table.columns:
            if not column.ranked:
                continue
            cells = [table.cell(r, column) for r in table.rows if r.comparable]
            _mark(cells, column.higher_better)
    else:
        ranked = [c for c in table.columns if c.ranked and c.comparable]
        for row in table.rows:
            _mark([table.cell(row, c) for c in ranked], all(c.higher_better for c in ranked))
    return table


def _mark(cells: list[Cell], higher_better: bool) -> None:
    values = [c.rank_value for c in cells if c.rank_value is not None]
    if not values:
        return
    best = max(values) if higher_better else min(values)
    for cell in cells:
        if cell.rank_value is not None and cell.rank_value == best:
            cell.best = True


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


# --- building rows ----------------------------------------------------------------------------

def _measured_row(entry: Any, label: str | None = None) -> Row:
    prov = Provenance(source="measured", standard=bool(entry.standard), split_reason=entry.split_reason,
                      anchor=f"prov-{slug(entry.label)}", label=entry.label)
    return Row(label=label or entry.label, name=entry.paper_name or entry.method, source="measured",
               cells={}, prov=prov, method=entry.method)


def measured_rows(agg: pd.DataFrame, kind: str, metrics: tuple[str, ...]) -> list[Row]:
    """One row per row key of ``kind`` (sweep runs excluded), cells keyed ``{dataset label}:{metric}``."""
    rows: dict[Any, Row] = {}
    for entry in measured(agg, kind).itertuples(index=False):
        row = rows.setdefault(entry.row_key, _measured_row(entry))
        ds = dataset_label(entry.dataset, kind)
        for metric in metrics:
            row.cells[f"{ds}:{metric}"] = _metric_cell(entry, metric)
        _extend_provenance(row.prov, entry, ds)
    return list(rows.values())


def _metric_cell(entry: Any, metric: str) -> Cell:
    return Cell(getattr(entry, f"{metric}_mean"), getattr(entry, f"{metric}_std"),
                int(getattr(entry, f"{metric}_n")))


def _extend_provenance(prov: Provenance, entry: Any, ds: str) -> None:
    prov.versions = sorted(set(prov.versions) | set(entry.versions))
    prov.commits = sorted(set(prov.commits) | set(entry.commits))
    prov.dirty = prov.dirty or bool(entry.dirty)
    prov.devices = sorted(set(prov.devices) | set(entry.devices))
    firsts = [d for d in (prov.date_first, entry.date_first) if d]
    lasts = [d for d in (prov.date_last, entry.date_last) if d]
    prov.date_first = min(firsts) if firsts else ""
    prov.date_last = max(lasts) if lasts else ""
    if entry.split_reason and entry.split_reason not in prov.split_reason:
        prov.split_reason = "; ".join(x for x in (prov.split_reason, entry.split_reason) if x)
    prov.records.append((ds, list(entry.links)))
    prov.seed_of.update(entry.seed_of)


def reported_rows(rows: list[ReportedRow], metrics: tuple[str, ...]) -> list[Row]:
    out = []
    for rep in rows:
        cells = {f"{ds}:{m}": Cell(values.get(m)) for ds, values in rep.values.items() for m in metrics}
        prov = Provenance(source="reported", citation=rep.citation, refs=list(rep.refs),
                          devices=[rep.device] if rep.device else [])
        out.append(Row(label=rep.method, name=rep.method, source="reported", cells=cells, prov=prov,
                       method=rep.zslbench_method or ""))
    return out


def paired(reported: list[Row], measured_rows: list[Row]) -> list[Row]:
    """The paper's rows in its order, each followed by the measured rows of the same zslbench
    method; measured rows of methods the paper's table lacks come last. Never merged."""
    out: list[Row] = []
    used: set[int] = set()
    for rep in reported:
        out.append(rep)
        for i, row in enumerate(measured_rows):
            if rep.method and row.method == rep.method and i not in used:
                out.append(row)
                used.add(i)
    return out + [row for i, row in enumerate(measured_rows) if i not in used]


def datasets_for(agg: pd.DataFrame, kind: str, reported: Reported | None) -> list[str]:
    """Dataset labels, in the paper's order: measured ones plus (real only) reported ones."""
    names: dict[str, str] = {}
    if not agg.empty:
        for name in agg.loc[agg["kind"] == kind, "dataset"]:
            names[dataset_label(name, kind)] = name
    if kind == "real" and reported is not None:
        for row in reported.rows:
            for ds in row.values:
                names.setdefault(ds, ds)
    return sorted(names, key=lambda label: dataset_order(names[label]))


def metric_columns(datasets: list[str], metrics: tuple[str, ...]) -> list[Column]:
    return [Column(key=f"{ds}:{m}", title=METRIC_TITLES[m], group=ds) for ds in datasets for m in metrics]


# --- the tables -------------------------------------------------------------------------------

def setting_tables(agg: pd.DataFrame, kind: str, reported: Reported | None) -> list[Table]:
    """The GZSL and ZSL tables (methods × datasets). On the real page each of the paper's rows is
    followed by the measured rows of the same method."""
    datasets = datasets_for(agg, kind, reported)
    main_rep = reported.rows_for("main") if (kind == "real" and reported) else []
    info = reported.table_info("main") if reported else {}
    ref = (f" Reported rows: {info.get('paper_table', 'the paper')} of Ye et al. (ICPR 2022), each followed "
           "by our measured rows of the same method." if main_rep else "")
    sweeps = " Runs of hyperparameter sweeps are in the sweep tables." if not measured(
        agg, kind, sweeps=True).empty else ""
    tables = []
    for tid, title, metrics, what in (
            ("gzsl", "Generalized ZSL", GZSL_METRICS,
             "A_U / A_S: per-class top-1 accuracy (%) on unseen / seen test classes at the calibrated "
             "operating point; H: their harmonic mean; AUSUC: area under the seen–unseen curve (%, "
             "per-class accuracies, as Chao et al.; the per-image variant is in the CSV)."),
            ("zsl", "Zero-shot learning (ZSL)", ZSL_METRICS,
             "A_T: per-class top-1 accuracy (%) on unseen test images, unseen classes only.")):
        rows = paired(reported_rows(main_rep, metrics), measured_rows(agg, kind, metrics))
        caption = (f"{what} Cells: mean ± sample std over seeds, n = number of seeds. "
                   f"Bold: best comparable value of the column.{ref}{sweeps}")
        tables.append(mark_best(Table(id=f"{kind}-{tid}", title=title, caption=caption,
                                      columns=metric_columns(datasets, metrics), rows=rows)))
    return tables


def ablation_table(agg: pd.DataFrame, reported: Reported) -> Table | None:
    """The paper's model-structure ablation, each reported row next to the measured runs of it."""
    rep_rows = reported.rows_for("ablation")
    if not rep_rows:
        return None
    metrics = ("A_T", "A_U", "A_S", "H")
    datasets = datasets_for(agg, "real", reported)
    rows = [r for r in paired(reported_rows(rep_rows, metrics), measured_rows(agg, "real", metrics))
            if r.source == "reported" or any(rep.zslbench_method == r.method for rep in rep_rows)]
    info = reported.table_info("ablation")
    caption = ("The paper's model-structure ablation (its rows: reported) with our measured runs of the "
               "same compositions directly below each. A_T in the ZSL setting; A_U, A_S, H in GZSL. "
               f"Reported rows: {info.get('paper_table', 'ablation table')} of Ye et al. (ICPR 2022).")
    return mark_best(Table(id="real-ablation", title="Ablation: model structure", caption=caption,
                           columns=metric_columns(datasets, metrics), rows=rows))


TIME_CAPTION = (
    "Training time: the record's `train` timing (everything before evaluation), the MEDIAN over the "
    "seeds, on the device named. Runs taken on an oversubscribed machine (1-minute load average above "
    "its cores at the start or end of the run) are left out of the medians, the best marks and the "
    "H-vs-time figure: their wall times measure the other work too. Rows marked † had such runs; a "
    "cell with none left shows –. Runs whose record has no load report count as unknown and are kept. ")


def time_table(agg: pd.DataFrame, kind: str, reported: Reported | None) -> Table:
    """Median ``train`` seconds per method × dataset with the device; the paper's minutes beside them."""
    datasets = datasets_for(agg, kind, reported if kind == "real" else None)
    rows: dict[Any, Row] = {}
    over: dict[Any, list[int]] = {}
    for entry in measured(agg, kind).itertuples(index=False):
        row = rows.setdefault(entry.row_key, _measured_row(entry))
        ds = dataset_label(entry.dataset, kind)
        median = _finite(entry.train_median)
        row.cells[ds] = Cell(median, None, int(entry.train_n), unit=" s",
                             decimals=time_decimals(median) if median is not None else 1)
        counts = over.setdefault(entry.row_key, [0, 0])
        counts[0] += int(entry.train_oversubscribed)
        counts[1] += int(entry.n)
        _extend_provenance(row.prov, entry, ds)
    out = list(rows.values())
    for key, row in rows.items():
        row.cells["device"] = Cell(text_override=", ".join(row.prov.devices))
        bad, total = over[key]
        if bad:
            row.note = f"† {bad} of {total} runs on an oversubscribed machine, left out of the times"
    rep_rows: list[Row] = []
    if kind == "real" and reported is not None:
        for rep in reported.rows_for("train_time"):
            cells: dict[str, Cell] = {}
            for ds, values in rep.values.items():
                minutes = values.get("train_min")
                cells[ds] = (Cell() if minutes is None else
                             Cell(text_override=f"{minutes:g} min", sort_value=minutes * 60.0, decimals=1))
            cells["device"] = Cell(text_override=rep.device or "")
            rep_rows.append(Row(label=rep.method, name=rep.method, source="reported", cells=cells,
                                prov=Provenance(source="reported", citation=rep.citation, refs=list(rep.refs),
                                                devices=[rep.device] if rep.device else []),
                                method=rep.zslbench_method or ""))
    columns = [Column(key=ds, title=ds, higher_better=False) for ds in datasets]
    columns.append(Column(key="device", title="Device", ranked=False, align="left"))
    caption = (TIME_CAPTION
               + ("Reported rows are the paper's averages in minutes, as printed (its training-time table), "
                  "each followed by our runs of the same method. " if rep_rows else "")
               + "Bold: fastest comparable. Times on different devices are not directly comparable.")
    return mark_best(Table(id=f"{kind}-time", title="Training time (median)", caption=caption,
                           columns=columns, rows=paired(rep_rows, out)))


def sweep_groups(agg: pd.DataFrame, kind: str) -> list[tuple[str, pd.DataFrame]]:
    """The sweeps of a page: one group per (method, swept parameters, other overrides, split,
    device), as ``(title, its aggregated rows)``."""
    sub = measured(agg, kind, sweeps=True)
    if sub.empty:
        return []
    keys = ["method_rank", "method", "sweep_params", "overrides", "standard", "device_type"]
    out = []
    for key, group in sub.groupby(keys, sort=True):
        _, method, params, overrides, standard, device = key
        title = f"{method} over {params}" + (f" [{overrides}]" if overrides else "")
        if not standard:
            title += " · non-standard split"
        if sub["device_type"].nunique() > 1:
            title += f" · {device}"
        out.append((title, group))
    return out


def sweep_tables(agg: pd.DataFrame, kind: str) -> list[Table]:
    """One table per sweep: rows are the swept values, columns the metrics per dataset."""
    tables = []
    for title, group in sweep_groups(agg, kind):
        datasets = sorted({dataset_label(d, kind) for d in group["dataset"]},
                          key=lambda label: dataset_order(label.lower()))
        rows: dict[str, Row] = {}
        values: dict[str, dict[str, Any]] = {}
        for entry in group.itertuples(index=False):
            row = rows.setdefault(entry.sweep, _measured_row(entry, label=entry.sweep))
            values[entry.sweep] = entry.sweep_map
            ds = dataset_label(entry.dataset, kind)
            for metric in SWEEP_METRICS:
                row.cells[f"{ds}:{metric}"] = _metric_cell(entry, metric)
            _extend_provenance(row.prov, entry, ds)
        order = sorted(rows, key=lambda k: [(p, value_sort_key(v)) for p, v in sorted(values[k].items())])
        caption = (f"Sweep of {title}: one configuration per value, the other hyperparameters as the "
                   "method sets them. Cells: mean ± sample std over seeds (n). Bold: best value of the "
                   "column. The figure below plots the same numbers.")
        tables.append(mark_best(Table(
            id=f"{kind}-sweep-{slug(title)}", title=f"Sweep: {title}", caption=caption,
            columns=metric_columns(datasets, SWEEP_METRICS), rows=[rows[k] for k in order],
            row_header="Value", show_source=False)))
    return tables


def per_class_tables(agg: pd.DataFrame, kind: str) -> list[Table]:
    """Per dataset: unseen classes (most frequent first) × methods, accuracy mean ± std."""
    sub = measured(agg, kind)
    tables = []
    datasets = sorted(set(sub["dataset"]) if not sub.empty else set(), key=dataset_order)
    for name in datasets:
        ds = dataset_label(name, kind)
        groups = [g for g in sub.itertuples(index=False) if g.dataset == name and per_class(g.records)]
        if not groups:
            continue
        columns = [Column(key="share", title="share of unseen images", ranked=False),
                   Column(key="n_test", title="test images", ranked=False)]
        classes: dict[str, dict[str, Any]] = {}
        class_cells: dict[str, dict[str, Cell]] = {}
        for g in groups:  # already in method order
            key = f"m:{g.label}"
            columns.append(Column(key=key, title=g.label, comparable=bool(g.standard)))
            for entry in per_class(g.records):
                cname = str(entry["name"])
                classes.setdefault(cname, entry)
                class_cells.setdefault(cname, {})[key] = Cell(entry["mean"], entry["std"], entry["n"])
        rows = []
        for cname, entry in sorted(classes.items(), key=lambda kv: (-_share(kv[1]), kv[0])):
            cells = class_cells[cname]
            share = _finite(entry["share"])
            cells["share"] = Cell(None if share is None else 100 * share, unit=" %", decimals=2)
            cells["n_test"] = Cell(text_override=str(entry["n_test"]) if entry["n_test"] is not None
                                   else MISSING, sort_value=_finite(entry["n_test"]))
            rows.append(Row(label=cname, name=cname, source="measured", cells=cells))
        caption = (f"Unseen classes of {ds}, most frequent first. 'share of unseen images' is the class's "
                   "share among the unseen classes' images (the paper's 'sample frequency'). Accuracy: "
                   "per-class top-1 (%) in the GZSL setting at the calibrated operating point, mean ± std "
                   "over seeds. Bold: best method for the class.")
        tables.append(mark_best(Table(id=f"{kind}-perclass-{slug(name)}", title=f"Per-class unseen accuracy: {ds}",
                                      caption=caption, columns=columns, rows=rows, row_header="Class",
                                      best_axis="row", show_source=False, dataset=ds)))
    return tables


def _share(entry: dict[str, Any]) -> float:
    share = _finite(entry.get("share"))
    return share if share is not None else -1.0


def reported_per_class_tables(reported: Reported) -> list[Table]:
    """The paper's per-class table, transposed like ours (classes as rows)."""
    by_dataset: dict[str, list[ReportedRow]] = {}
    for row in reported.rows_for("per_class"):
        by_dataset.setdefault(row.dataset or "?", []).append(row)
    tables = []
    for ds, rows in sorted(by_dataset.items(), key=lambda kv: dataset_order(kv[0])):
        columns = [Column(key="share", title="share of unseen images", ranked=False)]
        class_cells: dict[str, dict[str, Cell]] = {}
        shares: dict[str, float | None] = {}
        for rep in rows:
            key = f"m:{rep.method}"
            columns.append(Column(key=key, title=rep.method))
            for cls in rep.classes:
                class_cells.setdefault(cls["name"], {})[key] = Cell(cls["accuracy"])
                shares.setdefault(cls["name"], cls["share_of_unseen_pct"])
        out_rows = []
        for cname in sorted(class_cells, key=lambda c: (-(shares.get(c) or -1.0), c)):
            cells = class_cells[cname]
            cells["share"] = Cell(shares.get(cname), unit=" %", decimals=2)
            out_rows.append(Row(label=cname, name=cname, source="reported", cells=cells,
                                prov=Provenance(source="reported", citation=rows[0].citation,
                                                refs=list(rows[0].refs))))
        caption = (f"Reported by {rows[0].citation}. Classes most frequent first; share as printed in "
                   "the paper. Bold: best method for the class.")
        tables.append(mark_best(Table(id=f"real-perclass-reported-{slug(ds)}",
                                      title=f"Per-class unseen accuracy: {ds} (reported)", caption=caption,
                                      columns=columns, rows=out_rows, row_header="Class", best_axis="row",
                                      show_source=False, dataset=ds)))
    return tables
