"""Markdown tables and CSV files from the table model (:mod:`zslbench.leaderboard.tables`).

Markdown is for reading on a code host: bold marks the best comparable value, ``<sub>n=3</sub>``
shows the number of seeds, and every row ends with its provenance. CSV is for analysis: one line
per (row, dataset), full precision (rounded to 6 decimals so the bytes do not depend on the last
bit of a float sum), and a ``best_*`` flag column for each marked metric.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any
from urllib.parse import quote

from zslbench.leaderboard.collect import EXTRA_METRICS, METRICS, dataset_label, measured
from zslbench.leaderboard.tables import Row, Table

# --- Markdown ---------------------------------------------------------------------------------

def md_escape(text: str) -> str:
    out = str(text)
    for ch in ("\\", "|", "*", "_", "`", "[", "]", "<", ">"):
        out = out.replace(ch, "\\" + ch)
    return out


def md_link(text: str, target: str) -> str:
    return f"[{md_escape(text)}]({quote(target, safe='/#:.-_~')})"


def md_cell(table: Table, row: Row, key: str) -> str:
    column = next(c for c in table.columns if c.key == key)
    cell = table.cell(row, column)
    text = md_escape(cell.text())
    if cell.best:
        text = f"**{text}**"
    if cell.n is not None and not cell.missing and column.ranked:
        text += f" <sub>n={cell.n}</sub>"
    return text


def row_title(row: Row) -> str:
    mark = " †" if row.note else ""
    if row.source == "measured":
        extra = f" — {md_escape(row.name)}" if row.name and row.name != row.method else ""
        return f"`{row.label}`{extra}{mark}"
    return md_escape(row.label) + mark


def source_badge(row: Row) -> str:
    if row.source == "reported":
        return "*reported*"
    if row.prov and not row.prov.comparable:
        return "**measured** · non-standard split, not comparable"
    return "**measured**"


def prov_md(row: Row) -> str:
    if row.prov is None:
        return ""
    if row.source == "reported":
        return md_escape(row.prov.citation)
    note = f"{md_escape(row.note)} · " if row.note else ""
    return f"{note}{md_escape(row.prov.summary())} · [records](#{row.prov.anchor})"


def markdown_table(table: Table) -> str:
    lines = [f"### {table.title}", "", table.caption, ""]
    if not table.rows:
        lines += ["*(no rows)*", ""]
        return "\n".join(lines)
    header = [table.row_header]
    if table.show_source:
        header.append("Source")
    header += [f"{c.group} {c.title}".strip() if c.group else c.title for c in table.columns]
    if table.show_source:
        header.append("Provenance")
    lines.append("| " + " | ".join(md_escape(h) if i else h for i, h in enumerate(header)) + " |")
    aligns = [":---"] + ([":---"] if table.show_source else [])
    aligns += [":---" if c.align == "left" else "---:" for c in table.columns]
    aligns += [":---"] if table.show_source else []
    lines.append("| " + " | ".join(aligns) + " |")
    for row in table.rows:
        cells = [row_title(row) if table.show_source else
                 (f"[{md_escape(row.label)}](#{row.prov.anchor})" if row.prov and row.prov.anchor else md_escape(row.label))]
        if table.show_source:
            cells.append(source_badge(row))
        cells += [md_cell(table, row, c.key) for c in table.columns]
        if table.show_source:
            cells.append(prov_md(row))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


PROVENANCE_TEXT = ("Every measured number is the mean (training times: the median) over the record files "
                   "linked here, one JSON file per run, the seed in the link text.")


def provenance_md(rows: list[Row]) -> str:
    """Per measured row: one line per dataset with N, links to each record, and the environment."""
    measured = [r for r in rows if r.source == "measured" and r.prov]
    if not measured:
        return ""
    lines = ["## Provenance of measured rows", "", PROVENANCE_TEXT, ""]
    for row in measured:
        prov = row.prov
        assert prov is not None
        lines += [f"<a id=\"{prov.anchor}\"></a>", f"#### `{prov.label or row.label}`", "",
                  f"{md_escape(prov.summary())}" + (f" — {md_escape(prov.split_reason)}" if prov.split_reason else ""),
                  "", "| Dataset | N | Records |", "| :--- | ---: | :--- |"]
        for ds, links in prov.records:
            refs = " ".join(md_link(str(prov.seed_of.get(link, "record")), link) for link in links)
            lines.append(f"| {md_escape(ds)} | {len(links)} | {refs} |")
        lines.append("")
    return "\n".join(lines)


def figures_md(specs: list[Any]) -> str:
    if not specs:
        return ""
    lines = ["## Figures", ""]
    for spec in specs:
        png, svg = spec.files
        lines += [f"### {md_escape(spec.title)}", "", f"![{md_escape(spec.title)}]({quote(png)})", "",
                  f"{spec.caption} ([SVG]({quote(svg)}))", ""]
    return "\n".join(lines)


# --- CSV ----------------------------------------------------------------------------------------

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


def to_csv(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else v for v in row])
    return buf.getvalue()


#: CSV column stem of each metric: the headline AUSUC (per class, Chao et al.) and the per-image
#: variant say which they are.
CSV_METRIC = {"A_T": "A_T", "A_U": "A_U", "A_S": "A_S", "H": "H", "AUSUC": "AUSUC_per_class",
              "AUSUC_per_image": "AUSUC_per_image"}
TIME_COLUMNS = ["train_s_median", "train_s_min", "train_s_max", "train_runs_timed", "train_runs_oversubscribed",
                "train_runs_load_unknown"]
MAIN_HEADER = (["kind", "source", "table", "row", "method", "paper_name", "dataset", "comparable",
                "split_standard", "sweep", "config_files", "n"]
               + [f"{CSV_METRIC[m]}_{s}" for m in (*METRICS, *EXTRA_METRICS) for s in ("mean", "std", "n")]
               + [f"best_{CSV_METRIC[m]}" for m in METRICS]
               + TIME_COLUMNS + ["zslbench_versions", "git_commits", "date_first", "date_last", "devices",
                                 "records", "citation"])


def _best_flags(tables: list[Table]) -> set[tuple[str, str, str]]:
    return {(row.source, row.label, key) for table in tables for row in table.rows
            for key, cell in row.cells.items() if cell.best}


def _time_fields(e: Any) -> dict[str, Any]:
    return {"train_s_median": num(e.train_median), "train_s_min": num(e.train_min),
            "train_s_max": num(e.train_max), "train_runs_timed": e.train_n,
            "train_runs_oversubscribed": e.train_oversubscribed, "train_runs_load_unknown": e.train_load_unknown}


def main_csv(kind: str, agg: Any, setting: list[Table], ablation: Table | None, sweeps: list[Table]) -> str:
    """Tidy: one line per (row, dataset). Measured lines (sweep runs included, with their values)
    come from ``agg``; reported lines from the tables. Never a line of both."""
    best = _best_flags(setting)
    lines: list[dict[str, Any]] = []
    for e in (agg[agg["kind"] == kind] if not agg.empty else agg).itertuples(index=False):
        ds = dataset_label(e.dataset, kind)
        line = {"kind": kind, "source": "measured", "table": "sweep" if e.sweep else "main", "row": e.label,
                "method": e.method, "paper_name": e.paper_name, "dataset": ds,
                "comparable": str(bool(e.standard)).lower(), "split_standard": str(bool(e.standard)).lower(),
                "sweep": e.sweep, "config_files": ";".join(e.config_files), "n": e.n,
                "zslbench_versions": ";".join(e.versions), "git_commits": ";".join(e.commits),
                "date_first": e.date_first, "date_last": e.date_last, "devices": ";".join(e.devices),
                "records": ";".join(e.links), **_time_fields(e)}
        for m in (*METRICS, *EXTRA_METRICS):
            stem = CSV_METRIC[m]
            line.update({f"{stem}_mean": num(getattr(e, f"{m}_mean")), f"{stem}_std": num(getattr(e, f"{m}_std")),
                         f"{stem}_n": getattr(e, f"{m}_n")})
        for m in METRICS:
            line[f"best_{CSV_METRIC[m]}"] = str(("measured", e.label, f"{ds}:{m}") in best).lower()
        lines.append(line)
    emitted: dict[tuple[str, str, str], dict[str, Any]] = {}
    for tname, table in [("main", t) for t in setting] + ([("ablation", ablation)] if ablation else []):
        for row in (r for r in table.rows if r.source == "reported"):
            for column in table.columns:
                ds, metric = column.key.split(":")
                line = emitted.setdefault((tname, row.label, ds), {
                    "kind": kind, "source": "reported", "table": tname, "row": row.label, "method": row.method,
                    "paper_name": row.name, "dataset": ds, "comparable": "true",
                    **{f"best_{CSV_METRIC[m]}": "false" for m in METRICS},
                    "devices": ", ".join(row.prov.devices) if row.prov else "",
                    "citation": row.prov.citation if row.prov else ""})
                cell = table.cell(row, column)
                line[f"{CSV_METRIC[metric]}_mean"] = num(cell.mean)
                if cell.best:
                    line[f"best_{CSV_METRIC[metric]}"] = "true"
    return to_csv(MAIN_HEADER, [[line.get(h, "") for h in MAIN_HEADER] for line in lines + list(emitted.values())])


TIME_HEADER = ["kind", "source", "row", "method", "dataset", "runs", *TIME_COLUMNS, "reported_min", "best",
               "device", "records", "citation"]


def time_csv(kind: str, agg: Any, table: Table) -> str:
    """Median training times (runs on an oversubscribed machine left out, and counted), and the
    paper's reported minutes."""
    best = _best_flags([table])
    lines: list[dict[str, Any]] = []
    for e in measured(agg, kind).itertuples(index=False):
        ds = dataset_label(e.dataset, kind)
        lines.append({"kind": kind, "source": "measured", "row": e.label, "method": e.method, "dataset": ds,
                      "runs": e.n, **_time_fields(e), "best": str(("measured", e.label, ds) in best).lower(),
                      "device": ";".join(e.devices), "records": ";".join(e.links)})
    for row in (r for r in table.rows if r.source == "reported"):
        for column in (c for c in table.columns if c.ranked):
            cell = table.cell(row, column)
            if not cell.missing:
                lines.append({"kind": kind, "source": "reported", "row": row.label, "method": row.method,
                              "dataset": column.key, "reported_min": num((cell.sort_value or 0.0) / 60.0),
                              "best": str(cell.best).lower(), "device": ", ".join(row.prov.devices) if row.prov else "",
                              "citation": row.prov.citation if row.prov else ""})
    return to_csv(TIME_HEADER, [[line.get(h, "") for h in TIME_HEADER] for line in lines])


PER_CLASS_HEADER = ["kind", "source", "dataset", "class", "share_of_unseen_pct", "n_test", "row",
                    "accuracy_mean", "accuracy_std", "n", "best", "citation"]


def per_class_csv(kind: str, tables: list[Table], reported_tables: list[Table]) -> str:
    rows = []
    for source, group in (("measured", tables), ("reported", reported_tables)):
        for table in group:
            ds = table.dataset
            for row in table.rows:
                share = row.cells.get("share")
                n_test = row.cells.get("n_test")
                for column in table.columns:
                    if not column.key.startswith("m:"):
                        continue
                    cell = table.cell(row, column)
                    if cell.missing:
                        continue
                    rows.append([kind, source, ds, row.label, num(share.mean if share else None),
                                 n_test.text() if n_test and not n_test.missing else "", column.title,
                                 num(cell.mean), num(cell.std), "" if cell.n is None else cell.n,
                                 str(cell.best).lower(),
                                 row.prov.citation if (row.prov and source == "reported") else ""])
    return to_csv(PER_CLASS_HEADER, rows)
