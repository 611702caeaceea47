"""CSV files of a page, for analysis: one line per (row, dataset), full precision.

Every line is derived by one rule from the aggregated table
(:func:`zslbench.leaderboard.collect.aggregate`), or, for a reported number, from the page's table
that quotes it: each column that holds one value (a text, a number, a flag, a list of texts) under
its own name (a few renamed, :data:`RENAMED`), and each interval spread as ``{name}_mean``,
``_std``, ``_n``, ``_ci_low``, ``_ci_high``; a metric added to the table is a column here too. Each
tested value adds its bold flag (``best_{name}``), its Holm-adjusted p-value against the column's
best (``p_vs_best_{name}``) and the test's name (``test_{name}``), as the page's tables marked it.
The per-class file's accuracy is spread and marked the same way, under the name ``accuracy``.

Numbers are rounded to 6 decimals (p-values to 4 significant digits) so that the bytes do not
depend on the last bit of a float sum or a library's numerics. Every CSV passes :func:`to_csv`,
which neutralises a text that a spreadsheet would run as a formula.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from itertools import product
from typing import Any

import pandas as pd

from zslbench import stats
from zslbench.leaderboard.collect import TESTED_METRICS, dataset_label, measured
from zslbench.leaderboard.model import Page
from zslbench.leaderboard.tables import Cell, Column, Provenance, Row, Table

#: Aggregated columns under another name in the CSV: what a reader of the file looks for (the
#: headline AUSUC, per class as Chao et al. define it, says so beside the per-image variant).
RENAMED = {
    "label": "row",
    "standard": "split_standard",
    "data_fp": "data_fingerprint",
    "versions": "zslbench_versions",
    "commits": "git_commits",
    "links": "records",
    "AUSUC": "AUSUC_per_class",
}
#: Aggregated columns left out: the row's identity within the board (the row label says it).
LEFT_OUT = {"config_id", "method_rank", "row_key", "overrides"}
#: The columns of an interval (or a cell), each with the attribute it shows.
SPREAD = {"mean": "mean", "std": "std", "n": "n", "ci_low": "low", "ci_high": "high"}
#: The first columns of every CSV, in this order; the others follow as the lines give them.
FIRST = ("kind", "source", "table", "row", "method", "paper_name", "dataset")
#: A training time's fields (``collect._times``), each a column ``train_{field}``: the median,
#: fastest and slowest seconds, the runs timed (``n``: quiet ones where there are), those on a
#: busy machine and those without a load report, whether only busy ones were timed, and all runs.
TIMES = ("median", "min", "max", "n", "busy", "unknown", "busy_only", "runs")
#: Leading characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def num(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (bool, str)):
        return str(value).lower() if isinstance(value, bool) else value
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(value):
        return ""
    value = round(value, 6)
    return repr(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def cell_text(value: Any) -> str:
    """A CSV cell: a name from a record (a method, a dataset, a class) that a spreadsheet would run
    as a formula (``=HYPERLINK(...)``) gets a leading ``'``, so it is shown as the text it is; a
    number (``-0.5``) is left as it is."""
    text = "" if value is None else str(value)
    try:
        float(text)
    except ValueError:
        return "'" + text if text.startswith(FORMULA_START) else text
    return text


def to_csv(lines: list[dict[str, Any]], first: tuple[str, ...] = FIRST) -> str:
    """The lines under one header: ``first``, then every other column in the order the lines
    first name it; a column a line lacks is empty."""
    header = list(dict.fromkeys([*first, *(k for line in lines for k in line)]))
    frame = pd.DataFrame(lines, columns=header, dtype=object).fillna("").map(cell_text)
    return frame.to_csv(index=False, header=[cell_text(h) for h in header], lineterminator="\n")


def csv_columns(agg: pd.DataFrame) -> list[str]:
    """The aggregated columns a CSV shows: those whose every value fits one line (an interval, a
    list of texts, a text, a number, a flag); the rest (per-class lists, curves, values by seed)
    have CSV files or pages of their own."""
    shown = [k for k in agg.columns if k not in LEFT_OUT]
    return [k for k in shown if len(agg) and all(map(_one_line, agg[k]))]


def _one_line(value: Any) -> bool:
    """An interval, a list of texts, or one value (not a dict, nor a list of anything else)."""
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, str) for v in value)
    return not isinstance(value, dict)


def _flat(name: str, value: Any) -> dict[str, str]:
    """A one-line value as columns: an interval spread, texts joined by ``;``, a value as it is."""
    if isinstance(value, stats.Interval):
        return _spread(name, value)
    return {name: ";".join(value) if isinstance(value, (list, tuple)) else num(value)}


def _spread(name: str, x: Any) -> dict[str, str]:
    """An interval or a cell as ``{name}_mean``, ``_std``, ``_n``, ``_ci_low`` and ``_ci_high``."""
    return {f"{name}_{column}": num(getattr(x, attr)) for column, attr in SPREAD.items()}


def _marks(name: str, cell: Cell | None) -> dict[str, str]:
    """A tested value's bold flag, p-value against its column's best and test, as marked (a value
    not tested, a reported one, is never bold)."""
    x = cell or Cell()
    p = "" if x.p is None or not math.isfinite(x.p) else f"{x.p:.4g}"
    return {f"best_{name}": num(x.best), f"p_vs_best_{name}": p, f"test_{name}": x.test}


def _who(kind: str, row: Any, dataset: str) -> dict[str, str]:
    """Which page, row (aggregated, or of a table), method and dataset a line is of."""
    return {"kind": kind, "row": row.label, "method": row.method, "dataset": dataset}


def _citation(row: Row) -> dict[str, str]:
    """A reported row's devices and citation."""
    prov = row.prov or Provenance("reported")
    return {"devices": ", ".join(prov.devices), "citation": prov.citation}


def _marked_cells(tables: list[Table]) -> dict[tuple[str, str, str], Cell]:
    """(full row label, dataset label, metric) -> the cell as marked in the page's tables."""
    out: dict[tuple[str, str, str], Cell] = {}
    for table, row, c, cell in _cells(tables, lambda row, c: row.source == "measured"):
        ds, metric = (c.group, c.title) if c.group else (table.dataset, c.key)
        # the main tables first: a default configuration is also a sweep's point
        out.setdefault((row.prov.label if row.prov else row.label, ds, metric), cell)
    return out


def main_csv(page: Page, agg: pd.DataFrame) -> str:
    """Tidy: one line per (row, dataset). Measured lines (sweep runs included, with their values)
    come from ``agg``; reported lines from the tables. Never a line of both."""
    marks, columns = _marked_cells(page.tables + page.sweep_tables), csv_columns(agg)

    def measured_line(e: Any) -> dict[str, str]:
        ds = dataset_label(e.dataset, page.kind)
        line = {"source": "measured", "table": "sweep" if e.sweep else "main"}
        for key in columns:
            line |= _flat(RENAMED.get(key, key), getattr(e, key))
        line |= {"dataset": ds, "comparable": num(bool(e.standard and e.compared))}
        for m in TESTED_METRICS:
            line |= _marks(RENAMED.get(m, m), marks.get((e.label, ds, m)))
        return line

    # Every page's CSV has the same columns: those of the board's whole table.
    header = [*measured_line(next(agg.itertuples(index=False)))] if not agg.empty else []
    lines = [measured_line(e) for e in agg[agg["kind"] == page.kind].itertuples(index=False)]
    return to_csv(lines + _reported_lines(page), (*FIRST, *header, "devices", "citation"))


def _reported_lines(page: Page) -> list[dict[str, Any]]:
    """The paper's numbers in the page's tables, one line per (table, row, dataset) it gives a
    number for, never tested."""
    fixed = {"source": "reported", "comparable": "true"}
    fixed |= {k: v for m in TESTED_METRICS for k, v in _marks(RENAMED.get(m, m), None).items()}
    lines: dict[tuple[str, str, str], dict[str, Any]] = {}
    for table, row, c, cell in _cells(page.tables, lambda row, c: row.source == "reported"):
        part = "ablation" if table.kind.startswith("ablation") else "main"
        about = {"table": part, "paper_name": row.name, **fixed, **_citation(row)}
        line = lines.setdefault((part, row.label, c.group), _who(page.kind, row, c.group) | about)
        line[f"{RENAMED.get(c.title, c.title)}_mean"] = num(cell.mean)
    return list(lines.values())


def _cells(
    tables: Iterable[Table | None], keep: Callable[[Row, Column], bool]
) -> Iterator[tuple[Table, Row, Column, Cell]]:
    """Each cell with a value in the rows and columns of ``tables`` that ``keep`` takes, in order."""
    for table in (t for t in tables if t):
        for row, column in product(table.rows, table.columns):
            if keep(row, column) and not (cell := table.cell(row, column)).missing:
                yield table, row, column, cell


def time_csv(page: Page, agg: pd.DataFrame) -> str:
    """Median training times per device model (busy runs left out where quiet ones exist, and
    counted), and the reported minutes."""
    marked = _cells(page.time_tables, lambda row, c: True)
    best = {(t.params["device"], row.label, c.key) for t, row, c, x in marked if x.best}
    lines = []
    for e in measured(agg, page.kind).itertuples(index=False):
        ds = dataset_label(e.dataset, page.kind)
        for device, t in e.times.items():
            line = _who(page.kind, e, ds) | {"source": "measured", "device": device}
            line |= {f"train_{k}": num(v) for k, v in t.items()}
            line |= {"best": num((device, e.label, ds) in best), "records": ";".join(e.links)}
            lines.append(line)
    for _, row, c, cell in _cells([page.reported_time], lambda row, c: not c.descriptive):
        devices, citation = _citation(row).values()
        line = _who(page.kind, row, c.key) | {"source": "reported", "device": devices}
        lines.append(line | {"reported_min": num(cell.mean), "best": "false", "citation": citation})
    # Measured and reported columns alike on every page, whichever lines it has.
    first = ("kind", "source", "row", "method", "dataset", "device", *(f"train_{k}" for k in TIMES))
    return to_csv(lines, (*first, "reported_min", "best", "records", "citation"))


def per_class_csv(page: Page) -> str:
    """One line per (class, row) of the page's per-class tables, measured and reported."""
    lines = []
    tables = page.per_class_tables + page.reported_per_class
    for table, row, c, cell in _cells(tables, lambda row, c: c.key.startswith("m:")):
        share, n_test = (row.cells.get(k) or Cell() for k in ("share", "n_test"))
        line = {"kind": page.kind, "source": row.source, "dataset": table.dataset}
        line |= {"class": row.label, "share_of_unseen_pct": num(share.mean)}
        line |= {"n_test": "" if n_test.missing else n_test.text(), "row": c.title}
        line |= _spread("accuracy", cell) | _marks("accuracy", cell)
        lines.append(line | {"citation": _citation(row)["citation"]})
    return to_csv(lines, ("kind", "source", "dataset", "class"))


def audit_csv(page: Page, agg: pd.DataFrame) -> str:
    """Every selection audit, one line per record (seed): never beside the clean numbers."""
    lines = [
        _who(page.kind, e, dataset_label(e.dataset, page.kind))
        | {"records": ";".join(e.links), **{k: num(v) for k, v in a.items()}}
        | {"inflation_H": num(a["test_selected_H"] - a["clean_H"])}
        for e in measured(agg, page.kind).itertuples(index=False)
        for a in e.audits
    ]
    return to_csv(lines, ("kind", "row", "method", "dataset", "seed"))


def page_csvs(page: Page, agg: pd.DataFrame) -> dict[str, str]:
    """File suffix ("" / "-train-time" / "-per-class" / "-selection-audit") -> CSV text."""
    out = {"": main_csv(page, agg), "-train-time": time_csv(page, agg)}
    out["-per-class"] = per_class_csv(page)
    if page.audit is not None:
        out["-selection-audit"] = audit_csv(page, agg)
    return out
