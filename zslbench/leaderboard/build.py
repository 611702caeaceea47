"""Records + curated reported numbers -> every leaderboard file, in memory.

:func:`build` returns the complete output as :class:`Artefact` objects (path relative to the
output directory, bytes), so that writing it and checking it against a committed copy
(:mod:`zslbench.leaderboard.check`) use exactly the same rendering. Nothing here reads a clock:
the only dates in the output are the records' own ``finished_at``.

Layout of the output directory::

    README.md                 index: what was measured, on what, how, how it compares
    real.md, index.html       real benchmarks: measured rows (if any) + the paper's reported rows
    synthetic.md, synthetic.html   embedded synthetic stand-ins only, titled as such
    custom.md, custom.html    the user's own datasets (only when there are such runs)
    {kind}.csv, {kind}-train-time.csv, {kind}-per-class.csv
    figures/*.png, figures/*.svg
    manifest.json             what was rendered (and so may be replaced); figures with their data hash
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
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
    value_sort_key,
    value_text,
)
from zslbench.leaderboard.figures import FigureSpec, embedded_hash, figure_specs, render_figure
from zslbench.leaderboard.manifest import GENERATOR, MANIFEST, owned_files
from zslbench.leaderboard.reported import EMPTY, load_reported
from zslbench.leaderboard.tables import (
    Row,
    Table,
    ablation_table,
    per_class_tables,
    reported_per_class_tables,
    setting_tables,
    sweep_groups,
    sweep_tables,
    time_table,
)

#: Page files per dataset kind: Markdown, HTML. Real and synthetic pages always exist (the
#: committed board links them); a custom page only when there are runs on custom datasets.
PAGES = {"real": ("real.md", "index.html"), "synthetic": ("synthetic.md", "synthetic.html"),
         "custom": ("custom.md", "custom.html")}
TITLES = {"real": "zslbench leaderboard: real GZSL benchmarks",
          "synthetic": "zslbench leaderboard: SYNTHETIC stand-ins (not the benchmarks)",
          "custom": "zslbench leaderboard: CUSTOM datasets (your own data, not the benchmarks)"}


@dataclass(frozen=True)
class Artefact:
    """One output file. Figures carry the hash of the data they plot (see ``figures``)."""

    path: str
    data: bytes
    data_sha256: str | None = None

    @property
    def is_figure(self) -> bool:
        return self.data_sha256 is not None


@dataclass(frozen=True)
class Paths:
    """Where the records and the board are, as every page says it (one sentence, one place).

    Links are relative to the output directory; command arguments are relative to the project
    root (the git work tree holding the output, else the results dir's parent), so that the bytes
    never depend on the current directory.
    """

    records_link: str
    results_arg: str
    out_arg: str
    reported_link: str = ""

    @property
    def render_command(self) -> str:
        return f"zslbench leaderboard --results-dir {self.results_arg} --out {self.out_arg}"


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
    oversubscribed: int = 0
    load_unknown: int = 0
    commands: list[str] = field(default_factory=list)

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
    paths: Paths
    #: The kinds that have a page in this output, for the links between pages.
    kinds: tuple[str, ...] = ()
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


def project_root(out_dir: Path, results_dir: Path) -> Path:
    """The git work tree that holds ``out_dir``, else the results dir's parent."""
    for folder in (out_dir.resolve(), *out_dir.resolve().parents):
        if (folder / ".git").exists():
            return folder
    return results_dir.resolve().parent


def _rel(target: Path, base: Path) -> str:
    return Path(os.path.relpath(Path(target).resolve(), Path(base).resolve())).as_posix()


def _arg(path: Path, root: Path) -> str:
    return shlex.quote(_rel(path, root))


def reproduce_commands(runs: pd.DataFrame, results_arg: str, ranks: dict[str, int]) -> list[str]:
    """The commands that produce exactly these runs: ``zslbench run --config FILE`` for runs from a
    config file, else one ``zslbench run`` per group of methods sharing datasets, seeds and options
    (never a method × dataset pair that was not run)."""
    commands = [f"zslbench run --config {shlex.quote(f)}" for f in sorted(set(runs["config_file"]) - {""})]
    cells: dict[tuple[Any, ...], dict[str, Any]] = {}
    for e in runs[runs["config_file"] == ""].itertuples(index=False):
        opts = ((f"--base-seed {e.base_seed}",) if e.base_seed else ()) + tuple(
            f"--set {shlex.quote(f'{k}={value_text(v)}')}" for k, v in sorted(e.overrides_map.items()))
        opts += (() if e.standard else ("--allow-nonstandard-split",)) + (
            ("--device cuda",) if e.device_type == "cuda" else ())
        slot = cells.setdefault((e.method, e.dataset, opts, e.sweep_params), {"seeds": 0, "sweep": {}})
        slot["seeds"] = max(slot["seeds"], int(e.repetition) + 1)
        for param, value in e.sweep_map.items():
            slot["sweep"].setdefault(param, {})[json.dumps(value, sort_keys=True)] = value
    units: dict[tuple[Any, ...], dict[str, set[str]]] = {}
    for (method, dataset, opts, _), slot in cells.items():
        sweep = tuple(f"--sweep {shlex.quote(p + '=' + ','.join(value_text(v) for v in sorted(vals.values(), key=value_sort_key)))}"
                      for p, vals in sorted(slot["sweep"].items()))
        units.setdefault((opts + sweep, slot["seeds"]), {}).setdefault(method, set()).add(dataset)
    for (opts, seeds), methods in sorted(units.items()):
        by_datasets: dict[tuple[str, ...], list[str]] = {}
        for method, datasets in methods.items():
            by_datasets.setdefault(tuple(sorted(datasets, key=dataset_order)), []).append(method)
        for datasets, names in sorted(by_datasets.items(), key=lambda kv: min(ranks[m] for m in kv[1])):
            commands.append(" ".join([f"zslbench run --method {','.join(sorted(names, key=ranks.get))} "
                                      f"--dataset {','.join(datasets)} --seeds {seeds}", *opts,
                                      f"--results-dir {results_arg}"]))
    return commands


def _facts(kept: pd.DataFrame, superseded: pd.DataFrame, agg: pd.DataFrame, kind: str, results_arg: str) -> Facts:
    runs = kept[kept["kind"] == kind] if not kept.empty else kept
    old = superseded[superseded["kind"] == kind] if not superseded.empty else superseded
    sub = agg[agg["kind"] == kind] if not agg.empty else agg
    if runs.empty:
        return Facts(superseded=len(old))
    ranks = dict(zip(agg["method"], agg["method_rank"], strict=True))
    days = sorted(d[:10] for d in runs["finished_at"] if d)
    return Facts(records=len(runs), superseded=len(old), methods=sorted(set(runs["method"]), key=ranks.get),
                 datasets=[dataset_label(d, kind) for d in sorted(set(runs["dataset"]), key=dataset_order)],
                 seeds=sorted(set(int(n) for n in sub["n"])),
                 date_first=days[0] if days else "", date_last=days[-1] if days else "",
                 devices=sorted(set(runs["device_name"])), versions=sorted(set(runs["version"])),
                 commits=sorted(set(runs["commit"])), nonstandard=int((~runs["standard"].astype(bool)).sum()),
                 oversubscribed=int(runs["oversubscribed"].astype(bool).sum()),
                 load_unknown=int((~runs["load_known"].astype(bool)).sum()),
                 commands=reproduce_commands(runs, results_arg, ranks))


def build(results_dir: Path, out_dir: Path, reported_path: Path | None, *, draw: bool = True) -> Site:
    """Render everything. With ``draw=False`` figures are specified (and hashed) but not drawn."""
    out_dir, results_dir = Path(out_dir), Path(results_dir)
    reported = load_reported(reported_path) if reported_path else EMPTY
    runs, refused = load_runs(results_dir, link_base=out_dir)
    kept, superseded = dedupe(runs)
    agg = aggregate(kept, reported.method_order())
    root = project_root(out_dir, results_dir)
    kinds = tuple(k for k in PAGES if k != "custom" or (not kept.empty and (kept["kind"] == "custom").any()))

    pages: dict[str, Page] = {}
    all_specs: list[FigureSpec] = []
    for kind in kinds:
        rep = reported if kind == "real" else None
        of_kind = kept[kept["kind"] == kind] if not kept.empty else kept
        # The records of a page live under one folder (leaderboards/records/synthetic, ...): name it.
        folder = (Path(os.path.commonpath([str((out_dir / link).resolve().parent) for link in of_kind["link"]]))
                  if not of_kind.empty else results_dir)
        paths = Paths(records_link=_rel(results_dir, out_dir), results_arg=_arg(results_dir, root),
                      out_arg=_arg(out_dir, root),
                      reported_link=_rel(reported.path, out_dir) if (rep and reported.path) else "")
        setting = setting_tables(agg, kind, rep)
        tables = list(setting)
        ablation = ablation_table(agg, reported) if kind == "real" else None
        if ablation is not None:
            tables.append(ablation)
        time = time_table(agg, kind, rep)
        sweeps = sweep_groups(agg, kind)
        swept = sweep_tables(agg, kind)
        tables += [time, *swept]
        measured_pc = per_class_tables(agg, kind)
        reported_pc = reported_per_class_tables(reported) if kind == "real" else []
        specs = figure_specs(agg, kind, sweeps)
        all_specs += specs
        used_refs = {ref for table in tables + reported_pc for row in table.rows
                     if row.source == "reported" and row.prov for ref in row.prov.refs}
        pages[kind] = Page(
            kind=kind, title=TITLES[kind],
            facts=_facts(kept, superseded, agg, kind, _arg(folder, root)),
            tables=tables + measured_pc, reported_tables=reported_pc, figures=specs,
            provenance_rows=setting[0].rows + [r for t in swept for r in t.rows],
            references={k: reported.references.get(k, k) for k in sorted(used_refs)}, paths=paths, kinds=kinds)
        pages[kind].csv = {
            "": render.main_csv(kind, agg, setting, ablation, swept),
            "-train-time": render.time_csv(kind, agg, time),
            "-per-class": render.per_class_csv(kind, measured_pc, reported_pc)}

    from zslbench.leaderboard import html as html_mod
    from zslbench.leaderboard import pages as pages_mod

    texts: dict[str, str] = {"README.md": pages_mod.index_markdown(pages, refused)}
    for kind, page in pages.items():
        md_name, html_name = PAGES[kind]
        texts[md_name] = pages_mod.page_markdown(page)
        texts[html_name] = html_mod.page_html(page)
        for suffix, text in page.csv.items():
            texts[f"{kind}{suffix}.csv"] = text
    artefacts = [Artefact(path, text.encode("utf-8")) for path, text in sorted(texts.items())]
    owned = owned_files(out_dir / MANIFEST) or set()
    for spec in all_specs:
        kept_files = _current_figure(out_dir, spec, owned) if draw else None
        if kept_files is not None:
            artefacts += [Artefact(path, data, spec.data_sha256) for path, data in kept_files.items()]
        elif draw:
            for path, data in sorted(render_figure(spec).items()):
                artefacts.append(Artefact(path, data, spec.data_sha256))
        else:
            artefacts += [Artefact(path, b"", spec.data_sha256) for path in spec.files]
    artefacts.append(Artefact(MANIFEST, manifest_bytes(artefacts, len(kept), len(superseded))))
    return Site(artefacts=artefacts, pages=pages, figure_specs=all_specs, runs=len(kept),
                superseded=len(superseded), refused=refused)


def _current_figure(out_dir: Path, spec: FigureSpec, owned: set[str]) -> dict[str, bytes] | None:
    """The figure's files as the board already holds them, when this board drew them and they plot
    the same data (the test ``--check`` applies): a re-render redraws only figures whose data changed."""
    found = {}
    for path in spec.files:
        target = out_dir / path
        if path not in owned or not target.is_file():
            return None
        data = target.read_bytes()
        if embedded_hash(path, data) != spec.data_sha256:
            return None
        found[path] = data
    return found


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
