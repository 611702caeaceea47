"""Markdown pages and CSV files from the table model (:mod:`zslbench.leaderboard.tables`).

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

from zslbench.leaderboard.collect import METRICS
from zslbench.leaderboard.tables import Row, Table

SYNTHETIC_BANNER = ("> **SYNTHETIC STAND-INS, NOT THE BENCHMARKS.** Every number on this page was measured on "
                    "data generated in-process (`toy`, `synth-*`) with the shapes of the real datasets. It "
                    "says how the methods behave on that generated data, nothing about CUB, SUN, AWA1, AWA2 "
                    "or APY, and must never be compared with numbers from papers.")


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
    if row.source == "measured":
        extra = f" — {md_escape(row.name)}" if row.name and row.name != row.method else ""
        return f"`{row.label}`{extra}"
    return md_escape(row.label)


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
    return f"{md_escape(row.prov.summary())} · [records](#{row.prov.anchor})"


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
        cells = [row_title(row) if table.show_source else md_escape(row.label)]
        if table.show_source:
            cells.append(source_badge(row))
        cells += [md_cell(table, row, c.key) for c in table.columns]
        if table.show_source:
            cells.append(prov_md(row))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


def provenance_md(rows: list[Row]) -> str:
    """Per measured row: one line per dataset with N, links to each record, and the environment."""
    measured = [r for r in rows if r.source == "measured" and r.prov]
    if not measured:
        return ""
    lines = ["## Provenance of measured rows", "",
             "Every measured number above is the mean over the records linked here (one JSON file per "
             "run, seed in the link text).", ""]
    for row in measured:
        prov = row.prov
        assert prov is not None
        lines += [f"<a id=\"{prov.anchor}\"></a>", f"#### `{row.label}`", "",
                  f"{md_escape(prov.summary())}" + (f" — {md_escape(prov.split_reason)}" if prov.split_reason else ""),
                  "", "| Dataset | N | Records |", "| :--- | ---: | :--- |"]
        for ds, links in prov.records:
            refs = " ".join(md_link(_seed_text(link), link) for link in links)
            lines.append(f"| {md_escape(ds)} | {len(links)} | {refs} |")
        lines.append("")
    return "\n".join(lines)


def _seed_text(link: str) -> str:
    stem = link.rsplit("/", 1)[-1].removesuffix(".json")
    return stem.rsplit("__", 1)[-1] if "__" in stem else stem


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


MAIN_HEADER = (["kind", "source", "table", "row", "method", "paper_name", "dataset", "comparable",
                "split_standard", "n"]
               + [f"{m}_{s}" for m in METRICS for s in ("mean", "std", "n")]
               + [f"best_{m}" for m in METRICS]
               + ["train_s_mean", "train_s_std", "zslbench_versions", "git_commits", "date_first",
                  "date_last", "devices", "records", "citation"])


def main_csv(kind: str, agg: Any, setting: list[Table], ablation: Table | None) -> str:
    """Tidy: one line per (row, dataset). Measured lines come from ``agg``; reported from the tables."""
    rows: list[list[Any]] = []
    best: dict[tuple[str, str, str], bool] = {}
    for table in setting:
        for row in table.rows:
            for key, cell in row.cells.items():
                if cell.best:
                    best[(row.source, row.label, key)] = True
    sub = agg[agg["kind"] == kind] if not agg.empty else agg
    for e in sub.itertuples(index=False):
        ds = e.dataset if kind == "synthetic" else e.dataset.upper()
        line = [kind, "measured", "main", e.label, e.method, e.paper_name, ds,
                str(bool(e.standard)).lower(), str(bool(e.standard)).lower(), e.n]
        for m in METRICS:
            line += [num(getattr(e, f"{m}_mean")), num(getattr(e, f"{m}_std")), getattr(e, f"{m}_n")]
        line += [str(best.get(("measured", e.label, f"{ds}:{m}"), False)).lower() for m in METRICS]
        line += [num(e.train_mean), num(e.train_std), ";".join(e.versions), ";".join(e.commits),
                 e.date_first, e.date_last, ";".join(e.devices), ";".join(e.links), ""]
        rows.append(line)
    reported_tables = [("main", t) for t in setting] + ([("ablation", ablation)] if ablation else [])
    emitted: dict[tuple[str, str, str], list[Any]] = {}
    for tname, table in reported_tables:
        for row in table.rows:
            if row.source != "reported":
                continue
            for column in table.columns:
                ds, metric = column.key.split(":")
                key = (tname, row.label, ds)
                line = emitted.get(key)
                if line is None:
                    line = [kind, "reported", tname, row.label, row.method, row.name, ds, "true", "", ""]
                    line += [""] * (3 * len(METRICS)) + ["false"] * len(METRICS)
                    line += ["", "", "", "", "", "", ", ".join(row.prov.devices) if row.prov else "", "",
                             row.prov.citation if row.prov else ""]
                    emitted[key] = line
                cell = table.cell(row, column)
                i = METRICS.index(metric)
                line[10 + 3 * i] = num(cell.mean)
                if cell.best:
                    line[10 + 3 * len(METRICS) + i] = "true"
    rows += [emitted[k] for k in emitted]
    return to_csv(MAIN_HEADER, rows)


TIME_HEADER = ["kind", "source", "row", "method", "dataset", "n", "train_s_mean", "train_s_std",
               "reported_min", "best", "device", "records", "citation"]


def time_csv(kind: str, table: Table) -> str:
    rows = []
    for row in table.rows:
        for column in table.columns:
            if not column.ranked:
                continue
            cell = table.cell(row, column)
            if cell.missing:
                continue
            links = next((links for ds, links in (row.prov.records if row.prov else []) if ds == column.key), [])
            device = ", ".join(row.prov.devices) if row.prov else ""
            if row.source == "measured":
                rows.append([kind, "measured", row.label, row.method, column.key, cell.n, num(cell.mean),
                             num(cell.std), "", str(cell.best).lower(), device, ";".join(links), ""])
            else:
                rows.append([kind, "reported", row.label, row.method, column.key, "", "", "",
                             num((cell.sort_value or 0.0) / 60.0), str(cell.best).lower(), device, "",
                             row.prov.citation if row.prov else ""])
    return to_csv(TIME_HEADER, rows)


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
