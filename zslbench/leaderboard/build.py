"""Records + curated reported numbers -> every leaderboard file, in memory.

:func:`build` returns the complete output as :class:`Artefact` objects (path relative to the
output directory, bytes), so that writing it and checking it against a committed copy
(:mod:`zslbench.leaderboard.check`) use exactly the same rendering. Nothing here reads a clock:
the only dates in the output are the records' own ``finished_at``.

Layout of the output directory::

    README.md                 index: what was measured, on what, how, how it compares
    real.md, index.html       real benchmarks: measured rows (if any) + the paper's reported rows
    synthetic.md, synthetic.html   embedded synthetic stand-ins only, titled as such
    {real,synthetic}.csv, *-train-time.csv, *-per-class.csv
    figures/*.png, figures/*.svg
    manifest.json             what was rendered; figure entries carry their data hash
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from zslbench.leaderboard import render
from zslbench.leaderboard.collect import (
    aggregate,
    dataset_label,
    dataset_order,
    dedupe,
    load_runs,
    method_order,
)
from zslbench.leaderboard.figures import FigureSpec, figure_specs, render_figure
from zslbench.leaderboard.manifest import GENERATOR, MANIFEST
from zslbench.leaderboard.reported import EMPTY, load_reported
from zslbench.leaderboard.tables import (
    Row,
    Table,
    ablation_table,
    per_class_tables,
    reported_per_class_tables,
    setting_tables,
    time_table,
)

KINDS = ("real", "synthetic")
PAGE_MD = {"real": "real.md", "synthetic": "synthetic.md"}
PAGE_HTML = {"real": "index.html", "synthetic": "synthetic.html"}


@dataclass(frozen=True)
class Artefact:
    """One output file. Figures carry the hash of the data they plot (see ``figures``)."""

    path: str
    data: bytes
    data_sha256: str | None = None

    @property
    def is_figure(self) -> bool:
        return self.data_sha256 is not None


@dataclass
class Facts:
    """What a page says about its runs, all derived from the records."""

    records: int = 0
    superseded: int = 0
    methods: list[str] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)  # distinct N per cell
    date_first: str = ""
    date_last: str = ""
    devices: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    nonstandard: int = 0
    command: str = ""

    def seeds_text(self) -> str:
        if not self.seeds:
            return "–"
        return str(self.seeds[0]) if len(self.seeds) == 1 else f"{self.seeds[0]}–{self.seeds[-1]}"

    def dates_text(self) -> str:
        if not self.date_first:
            return "–"
        return self.date_first if self.date_first == self.date_last else f"{self.date_first} to {self.date_last}"


@dataclass
class Page:
    """Everything one page (Markdown and HTML alike) shows."""

    kind: str
    title: str
    facts: Facts
    tables: list[Table]
    reported_tables: list[Table]
    figures: list[FigureSpec]
    provenance_rows: list[Row]
    references: dict[str, str]
    reported_link: str = ""
    records_link: str = ""
    #: CSV file suffix ("" / "-train-time" / "-per-class") -> text.
    csv: dict[str, str] = field(default_factory=dict)

    @property
    def has_measured(self) -> bool:
        return self.facts.records > 0


@dataclass
class Site:
    artefacts: list[Artefact]
    pages: dict[str, Page]
    figure_specs: list[FigureSpec]
    runs: int
    superseded: int
    #: (path, reason) of every JSON file under the results dir that is not a valid, intact record.
    refused: list[tuple[str, str]] = field(default_factory=list)


def _facts(kept: pd.DataFrame, superseded: pd.DataFrame, agg: pd.DataFrame, kind: str, results_link: str) -> Facts:
    runs = kept[kept["kind"] == kind] if not kept.empty else kept
    old = superseded[superseded["kind"] == kind] if not superseded.empty else superseded
    sub = agg[agg["kind"] == kind] if not agg.empty else agg
    if runs.empty:
        return Facts(superseded=len(old))
    methods = sorted(set(runs["method"]), key=method_order)
    datasets = sorted(set(runs["dataset"]), key=dataset_order)
    days = sorted(d[:10] for d in runs["finished_at"] if d)
    seeds = sorted(set(int(n) for n in sub["n"]))
    command = (f"zslbench run --method {','.join(methods)} --dataset {','.join(datasets)} "
               f"--seeds {seeds[-1]} --results-dir {results_link}")
    return Facts(records=len(runs), superseded=len(old), methods=methods,
                 datasets=[dataset_label(d, kind) for d in datasets], seeds=seeds,
                 date_first=days[0] if days else "", date_last=days[-1] if days else "",
                 devices=sorted(set(runs["device_name"])), versions=sorted(set(runs["version"])),
                 commits=sorted(set(runs["commit"])), nonstandard=int((~runs["standard"].astype(bool)).sum()),
                 command=command)


def _rel(target: Path, base: Path) -> str:
    return Path(os.path.relpath(Path(target).resolve(), Path(base).resolve())).as_posix()


def build(results_dir: Path, out_dir: Path, reported_path: Path | None, *, draw: bool = True) -> Site:
    """Render everything. With ``draw=False`` figures are specified (and hashed) but not drawn."""
    out_dir = Path(out_dir)
    runs, refused = load_runs(results_dir, link_base=out_dir)
    kept, superseded = dedupe(runs)
    agg = aggregate(kept)
    reported = load_reported(reported_path) if reported_path else EMPTY
    # For the reproduce command: relative to the output's parent (the repository root when
    # --out is ./leaderboards), never to the current directory, so the bytes do not depend on it.
    results_link = _rel(results_dir, out_dir.parent)

    pages: dict[str, Page] = {}
    all_specs: list[FigureSpec] = []
    for kind in KINDS:
        rep = reported if kind == "real" else None
        setting = setting_tables(agg, kind, rep)
        tables = list(setting)
        ablation = ablation_table(agg, reported) if kind == "real" else None
        if ablation is not None:
            tables.append(ablation)
        tables.append(time_table(agg, kind, rep))
        measured_pc = per_class_tables(agg, kind)
        reported_pc = reported_per_class_tables(reported) if kind == "real" else []
        specs = figure_specs(agg, kind)
        all_specs += specs
        used_refs: set[str] = set()
        for table in tables + reported_pc:
            for row in table.rows:
                if row.source == "reported" and row.prov:
                    used_refs.update(row.prov.refs)
        title = ("zslbench leaderboard: real GZSL benchmarks" if kind == "real" else
                 "zslbench leaderboard: SYNTHETIC stand-ins (not the benchmarks)")
        pages[kind] = Page(
            kind=kind, title=title, facts=_facts(kept, superseded, agg, kind, results_link),
            tables=tables + measured_pc, reported_tables=reported_pc, figures=specs,
            provenance_rows=setting[0].rows,
            references={k: reported.references.get(k, k) for k in sorted(used_refs)},
            reported_link=_rel(reported.path, out_dir) if (kind == "real" and reported.path) else "",
            records_link=_rel(results_dir, out_dir))
        pages[kind].csv = {
            "": render.main_csv(kind, agg, setting, ablation),
            "-train-time": render.time_csv(kind, next(t for t in tables if t.id.endswith("-time"))),
            "-per-class": render.per_class_csv(kind, measured_pc, reported_pc)}

    from zslbench.leaderboard import html as html_mod
    from zslbench.leaderboard import pages as pages_mod

    texts: dict[str, str] = {"README.md": pages_mod.index_markdown(pages)}
    for kind, page in pages.items():
        texts[PAGE_MD[kind]] = pages_mod.page_markdown(page)
        texts[PAGE_HTML[kind]] = html_mod.page_html(page)
        for suffix, text in page.csv.items():
            texts[f"{kind}{suffix}.csv"] = text
    artefacts = [Artefact(path, text.encode("utf-8")) for path, text in sorted(texts.items())]
    for spec in all_specs:
        if draw:
            for path, data in sorted(render_figure(spec).items()):
                artefacts.append(Artefact(path, data, spec.data_sha256))
        else:
            artefacts += [Artefact(path, b"", spec.data_sha256) for path in spec.files]
    artefacts.append(Artefact(MANIFEST, manifest_bytes(artefacts, len(kept), len(superseded))))
    return Site(artefacts=artefacts, pages=pages, figure_specs=all_specs, runs=len(kept),
                superseded=len(superseded), refused=refused)


def manifest_bytes(artefacts: list[Artefact], runs: int, superseded: int, extra: set[str] = frozenset()) -> bytes:
    """The list of rendered files: text files with their sha256, figures with their data hash.

    ``generator`` marks the manifest (and so every file it lists) as written by zslbench
    leaderboard: a later render replaces or deletes only those files. ``extra`` lists files a
    render may still leave behind (written while it runs, see ``check.write``).
    """
    files: dict[str, dict[str, Any]] = {path: {} for path in extra if path != MANIFEST}
    for a in artefacts:
        if a.path != MANIFEST:
            files[a.path] = ({"data_sha256": a.data_sha256} if a.is_figure
                             else {"sha256": hashlib.sha256(a.data).hexdigest()})
    doc = {"generator": GENERATOR, "schema": 2,
           "about": ("Rendered by `zslbench leaderboard` from result records; do not edit. It replaces or "
                     "deletes only the files listed here. Text files are compared byte for byte by --check; "
                     "figures by the hash of the data they plot, which is also embedded in each PNG/SVG."),
           "records": runs, "superseded_records": superseded,
           "files": dict(sorted(files.items()))}
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode("utf-8")
