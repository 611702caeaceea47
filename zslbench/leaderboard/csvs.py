"""CSV files of a page, for analysis: one line per (row, dataset), full precision.

Numbers are rounded to 6 decimals (p-values to 4 significant digits) so that the bytes do not
depend on the last bit of a float sum or a library's numerics. Each tested metric has its bold
flag (``best_*``), its Holm-adjusted p-value against the column's best and the test's name.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import pandas as pd

from zslbench.leaderboard.collect import (
    EXTRA_METRICS,
    METRICS,
    TESTED_METRICS,
    dataset_label,
    measured,
)
from zslbench.leaderboard.model import Page
from zslbench.leaderboard.tables import Cell, Column, Row, Table

#: CSV column stem of each metric: the headline AUSUC (per class, Chao et al.) and the per-image
#: variant say which they are.
CSV_METRIC = {m: m for m in ("A_T", "A_U", "A_S", "H", "AUSUC_per_image")} | {
    "AUSUC": "AUSUC_per_class"
}
#: The columns of a mean over seeds, in order.
SPREAD = ("mean", "std", "n", "ci_low", "ci_high")
PROVENANCE = "zslbench_versions git_commits date_first date_last devices records citation".split()
MAIN_HEADER = (
    "kind source table row method paper_name dataset comparable split_standard data_fingerprint schedule sweep config_files n".split()
    + [f"{CSV_METRIC[m]}_{s}" for m in (*METRICS, *EXTRA_METRICS) for s in SPREAD]
    + [f"{x}_{CSV_METRIC[m]}" for m in TESTED_METRICS for x in ("best", "p_vs_best", "test")]
    + PROVENANCE
)
TIME_HEADER = (
    "kind source row method dataset device runs train_s_median train_s_min "
    "train_s_max train_runs_timed train_runs_busy busy_only train_runs_load_unknown "
    "reported_min best records citation"
).split()
PER_CLASS_HEADER = (
    "kind source dataset class share_of_unseen_pct n_test row accuracy_mean "
    "accuracy_std n ci_low ci_high best p_vs_best test citation"
).split()
AUDIT_HEADER = (
    "kind row method dataset seed clean_H test_selected_H inflation_H "
    "test_selected_epoch rule records"
).split()


def num(value: Any) -> str:
    if value is None:
        return ""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(value):
        return ""
    value = round(value, 6)
    return repr(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def _spread(value: Any) -> tuple[Any, ...]:
    """The :data:`SPREAD` columns of an interval or a cell: mean, std, n, 95% interval."""
    return (num(value.mean), num(value.std), value.n, num(value.low), num(value.high))


def p_text(value: float | None) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.4g}"


def flag(value: bool) -> str:
    return str(bool(value)).lower()


def to_csv(header: list[str], lines: list[dict[str, Any]]) -> str:
    """The lines under ``header``; a column a line lacks, or holds None, is empty."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, header, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(lines)
    return buf.getvalue()


def _marked_cells(tables: list[Table]) -> dict[tuple[str, str, str], Cell]:
    """(full row label, dataset label, metric) -> the cell as marked in the page's tables."""
    out = {}
    for table in tables:
        for row in table.rows:
            if row.source != "measured" or not row.prov:
                continue
            for key, cell in row.cells.items():
                ds, _, metric = key.rpartition(":") if ":" in key else (table.dataset, "", key)
                out[(row.prov.label or row.label, ds, metric)] = cell
    return out


def _entry_fields(kind: str, e: Any) -> dict[str, Any]:
    """What every measured line of an aggregated row says: its page kind, row, method, dataset and
    records."""
    return {
        "kind": kind,
        "row": e.label,
        "method": e.method,
        "dataset": dataset_label(e.dataset, kind),
        "records": ";".join(e.links),
    }


def _cited(row: Row) -> dict[str, str]:
    """A reported row's devices and citation (empty without provenance)."""
    return {
        "devices": ", ".join(row.prov.devices) if row.prov else "",
        "citation": row.prov.citation if row.prov else "",
    }


def main_csv(page: Page, agg: pd.DataFrame) -> str:
    """Tidy: one line per (row, dataset). Measured lines (sweep runs included, with their values)
    come from ``agg``; reported lines from the tables. Never a line of both."""
    marks = _marked_cells(page.tables + page.sweep_tables)
    rows = (agg[agg["kind"] == page.kind] if not agg.empty else agg).itertuples(index=False)
    lines = [_measured_line(page.kind, e, marks) for e in rows]
    return to_csv(MAIN_HEADER, lines + _reported_lines(page))


def _measured_line(kind: str, e: Any, marks: dict[tuple[str, str, str], Cell]) -> dict[str, Any]:
    line = {
        **_entry_fields(kind, e),
        "source": "measured",
        "table": "sweep" if e.sweep else "main",
        "paper_name": e.paper_name,
        "comparable": flag(bool(e.standard) and bool(e.compared)),
        "split_standard": flag(e.standard),
        "data_fingerprint": e.data_fp,
        "schedule": e.schedule,
        "sweep": e.sweep,
        "config_files": ";".join(e.config_files),
        "n": e.n,
        "zslbench_versions": ";".join(e.versions),
        "git_commits": ";".join(e.commits),
        "date_first": e.date_first,
        "date_last": e.date_last,
        "devices": ";".join(e.devices),
    }
    ds = line["dataset"]
    for m in (*METRICS, *EXTRA_METRICS):
        line |= {
            f"{CSV_METRIC[m]}_{s}": v for s, v in zip(SPREAD, _spread(getattr(e, m)), strict=True)
        }
    for m in TESTED_METRICS:
        cell = marks.get((e.label, ds, m))
        line[f"best_{CSV_METRIC[m]}"] = flag(cell is not None and cell.best)
        line[f"p_vs_best_{CSV_METRIC[m]}"] = p_text(cell.p) if cell else ""
        line[f"test_{CSV_METRIC[m]}"] = cell.test if cell else ""
    return line


def _reported_lines(page: Page) -> list[dict[str, Any]]:
    emitted: dict[tuple[str, str, str], dict[str, Any]] = {}
    for table in page.tables:
        tname = "ablation" if table.kind.startswith("ablation") else "main"
        for row, column in (
            (r, c) for r in table.rows if r.source == "reported" for c in table.columns
        ):
            ds, metric = column.key.split(":")
            line = emitted.setdefault(
                (tname, row.label, ds),
                {
                    "kind": page.kind,
                    "source": "reported",
                    "table": tname,
                    "row": row.label,
                    "method": row.method,
                    "paper_name": row.name,
                    "dataset": ds,
                    "comparable": "true",
                    **{f"best_{CSV_METRIC[m]}": "false" for m in TESTED_METRICS},
                    **_cited(row),
                },
            )
            line[f"{CSV_METRIC[metric]}_mean"] = num(table.cell(row, column).mean)
    return list(emitted.values())


def time_csv(page: Page, agg: pd.DataFrame) -> str:
    """Median training times per device model (busy runs left out where quiet ones exist, and
    counted), and the reported minutes."""
    kind = page.kind
    best = {
        (t.params["device"], r.prov.label, key): c.best
        for t in page.time_tables
        for r in t.rows
        if r.prov
        for key, c in r.cells.items()
    }
    lines: list[dict[str, Any]] = []
    for e in measured(agg, kind).itertuples(index=False):
        ds = dataset_label(e.dataset, kind)
        lines += [
            {
                **_entry_fields(kind, e),
                "source": "measured",
                "device": device,
                "runs": t["runs"],
                "train_s_median": num(t["median"]),
                "train_s_min": num(t["min"]),
                "train_s_max": num(t["max"]),
                "train_runs_timed": t["n"],
                "train_runs_busy": t["busy"],
                "busy_only": flag(t["busy_only"]),
                "train_runs_load_unknown": t["unknown"],
                "best": flag(bool(best.get((device, e.label, ds)))),
            }
            for device, t in e.times.items()
        ]
    return to_csv(TIME_HEADER, lines + _reported_time_lines(page))


def _reported_time_lines(page: Page) -> list[dict[str, Any]]:
    table = page.reported_time
    if table is None:
        return []
    return [
        {
            "kind": page.kind,
            "source": "reported",
            "row": row.label,
            "method": row.method,
            "dataset": column.key,
            "device": _cited(row)["devices"],
            "reported_min": num((cell.sort_value or 0.0) / 60.0),
            "best": "false",
            "citation": _cited(row)["citation"],
        }
        for row in table.rows
        for column in table.columns
        if not column.descriptive
        if not (cell := table.cell(row, column)).missing
    ]


def per_class_csv(page: Page) -> str:
    lines = []
    for source, group in (
        ("measured", page.per_class_tables),
        ("reported", page.reported_per_class),
    ):
        for table in group:
            for row in table.rows:
                lines += [
                    _per_class_line(page.kind, source, table, row, column)
                    for column in table.columns
                    if column.key.startswith("m:") and not table.cell(row, column).missing
                ]
    return to_csv(PER_CLASS_HEADER, lines)


def _per_class_line(
    kind: str, source: str, table: Table, row: Row, column: Column
) -> dict[str, Any]:
    share, n_test, cell = row.cells.get("share"), row.cells.get("n_test"), table.cell(row, column)
    return {
        "kind": kind,
        "source": source,
        "dataset": table.dataset,
        "class": row.label,
        "share_of_unseen_pct": num(share.mean if share else None),
        "n_test": n_test.text() if n_test and not n_test.missing else "",
        "row": column.title,
        **dict(zip(("accuracy_mean", "accuracy_std", *SPREAD[2:]), _spread(cell), strict=True)),
        "best": flag(cell.best),
        "p_vs_best": p_text(cell.p),
        "test": cell.test,
        "citation": row.prov.citation if (row.prov and source == "reported") else "",
    }


def audit_csv(page: Page, agg: pd.DataFrame) -> str:
    """Every selection audit, one line per record (seed): never beside the clean numbers."""
    lines = [
        {
            **_entry_fields(page.kind, e),
            "seed": a["seed"],
            "clean_H": num(a["clean_H"]),
            "test_selected_H": num(a["test_selected_H"]),
            "inflation_H": num(a["test_selected_H"] - a["clean_H"]),
            "test_selected_epoch": a["test_selected_epoch"],
            "rule": a["rule"],
        }
        for e in measured(agg, page.kind).itertuples(index=False)
        for a in e.audits
    ]
    return to_csv(AUDIT_HEADER, lines)


def page_csvs(page: Page, agg: pd.DataFrame) -> dict[str, str]:
    """File suffix ("" / "-train-time" / "-per-class" / "-selection-audit") -> CSV text."""
    out = {
        "": main_csv(page, agg),
        "-train-time": time_csv(page, agg),
        "-per-class": per_class_csv(page),
    }
    if page.audit is not None:
        out["-selection-audit"] = audit_csv(page, agg)
    return out
